"""An LM's standby at an address of its own (``standby:`` in the cluster file): no port fences the two processes.

Real processes on loopback, each standby on a port of its own — the same
protocol as on separate hosts (the testbed's version, with namespaces, is in
``test_testbed.py``). Each test stops everything in a finally.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from pathlib import Path

from schedlab.services import supervise
from schedlab.services.client import replay
from schedlab.services.clusterfile import load_cluster
from schedlab.services.remote import RemoteCluster, fetch_statuses
from schedlab.services.supervise import free_port_range, run_dir
from schedlab.workload.trace import TraceJob
from tests.services.helpers import assert_valid_schedule, write_cluster


def job(t, durations):
    return TraceJob(t, sum(durations) / len(durations), list(durations))


def with_standbys_elsewhere(path: Path, lms: int) -> None:
    """Give each LM of the file a ``standby:`` on a free port of its own."""
    base = free_port_range(lms)
    text = path.read_text()

    def add(m: re.Match) -> str:
        return m[0] + f"    standby: {{host: 127.0.0.1, port: {base + int(m[2])}}}\n"

    text, n = re.subn(r"(  - id: (\d+)\n    host: [^\n]+\n    port: \d+\n)", add, text)
    assert n == lms, text
    path.write_text(text)


async def serving(loaded, lm: int, other_than: int | None = None, within: float = 1.0) -> int:
    """The pid serving LM ``lm`` at either of its addresses (one other than ``other_than``), waited for."""
    deadline = time.monotonic() + within
    while True:
        for url in loaded.spec.lms[lm].urls:
            pid = await supervise.serving_pid(url, timeout=0.5)
            if pid is not None and pid != other_than:
                return pid
        assert time.monotonic() < deadline, f"nothing but {other_than} serves LM {lm} after {within} s"
        await asyncio.sleep(0.1)


def test_a_standby_elsewhere_takes_over_a_killed_lm_and_a_frozen_lm_steps_down_when_thawed(broker, tmp_path):
    # LM 0's process is SIGKILLed: its standby, at its own address, gets the lease and serves; GMs and worker
    # hosts fail over to that address. LM 1's process is frozen (SIGSTOP) past its lease's heartbeat: its
    # standby takes over while it cannot know; thawed, the old process finds its lease held by another and
    # steps down — it starts again, same pid, as a standby. Every task completes once.
    path = write_cluster(tmp_path, gms=2, lms=2, workers=16, hosts_per_lm=2, heartbeat=0.2)
    with_standbys_elsewhere(path, 2)
    loaded = load_cluster(path)
    assert all(lm.standby is not None for lm in loaded.spec.lms)
    trace = [job(0.1 * i, [2.0] * 2 if i % 5 == 0 else [0.5] * 2) for i in range(200)]
    seen: dict[str, dict] = {}

    async def body():
        await supervise.up(loaded, path, timeout=60)
        try:
            live = supervise.running_pids(path)
            assert {"lm-0", "lm-0-standby", "lm-1", "lm-1-standby"} <= set(live), live
            async with RemoteCluster(loaded) as rc:
                run = asyncio.create_task(replay(rc, trace, constraints=False, timeout=150))
                await asyncio.sleep(1.5)
                killed = await serving(loaded, 0)
                os.kill(killed, signal.SIGKILL)
                await serving(loaded, 0, other_than=killed, within=30)
                supervise.spawn_standby(path, 0)
                frozen = await serving(loaded, 1)
                os.kill(frozen, signal.SIGSTOP)
                try:
                    await serving(loaded, 1, other_than=frozen, within=40)  # the lease goes with the heartbeat (~6 s)
                finally:
                    os.kill(frozen, signal.SIGCONT)
                result = await run
            statuses = {(st["role"], st["id"]): st for st in await fetch_statuses(loaded)}
            return result, statuses, frozen
        finally:
            seen["logs"] = {f.name: f.read_text(errors="replace") for f in run_dir(path).glob("lm-*.log")}
            seen["pids"] = supervise.running_pids(path)
            await supervise.down(loaded, path)

    result, statuses, frozen = asyncio.run(body())
    assert_valid_schedule(result, loaded.cluster)
    assert result.summary["tasks"] == 400
    for i in (0, 1):
        assert statuses["lm", i]["standby_took_over"] is True, statuses["lm", i]
    # the frozen process stepped down once thawed, and waits again as a standby under the same pid
    assert frozen in seen["pids"].values(), (frozen, seen["pids"])
    assert any("steps down" in text for text in seen["logs"].values()), "the thawed LM did not step down"
    assert supervise.running_pids(path) == {}
    for g in (0, 1):
        assert statuses["gm", g]["jobs_open"] == 0
