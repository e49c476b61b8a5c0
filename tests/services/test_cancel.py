"""schedlab job cancel on a real cluster (processes): queued tasks never launch, running ones are killed on their
hosts, the job is cancelled exactly once — also with its GM killed between the submission and the cancel — and
every other job's tasks run exactly once. Each task's command appends a line to a file of its own when it starts
and when it ends, so what ran, and when, is read from the files."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from schedlab.cli import main
from schedlab.services import supervise
from schedlab.services.clusterfile import load_cluster
from schedlab.services.execution import TaskSpec
from schedlab.services.jobs import submit_detached
from schedlab.services.ledger import job_state
from schedlab.workload.trace import TraceJob

from .helpers import write_cluster


def _spec(folder: Path, names: list[str]):
    def spec(k: int, i: int, d: float) -> TaskSpec:
        f = folder / f"{names[k]}.{i}"
        return TaskSpec(kind="command", argv=[f"echo start >> {f}; sleep {d}; echo end >> {f}"], shell=True)

    return spec


def _runs(folder: Path, name: str) -> dict[int, list[str]]:
    return {int(p.name.split(".")[1]): p.read_text().split() for p in folder.glob(f"{name}.*")}


def _jobs(path, capsys) -> dict[int, dict]:
    capsys.readouterr()
    assert main(["jobs", "--cluster", str(path), "--json"]) == 0
    return {r["job"]: r for r in json.loads(capsys.readouterr().out)}


def _wait_state(path, capsys, job: int, state: str, seconds: float) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        row = _jobs(path, capsys)[job]
        if row["state"] == state or time.monotonic() > deadline:
            return row
        time.sleep(0.3)


def test_a_cancelled_job_in_the_ledger() -> None:
    sub = {"job": 7, "tasks": 3, "gm": 0, "time": 1.0}
    row = job_state(sub, {"kind": "cancelled", "time": 5.0, "dropped": 2}, None, True, {0: {"status": "cancelled"}})
    assert (row["state"], row["dropped"], row["killed"], row["ended"]) == ("cancelled", 2, 1, 5.0)
    assert job_state(sub, None, {"running": 1, "completed": 0}, True, cancel={"time": 2.0})["state"] == "cancelling"
    assert job_state(sub, None, None, False, cancel={"time": 2.0})["state"] == "unknown"


def _submit(loaded, folder: Path) -> list[int]:
    # job a: 4 tasks of 20 s on 2 workers (2 run, 2 wait); job b: 2 tasks of 1 s, waiting behind a
    jobs = [TraceJob(0.0, 20.0, [20.0] * 4), TraceJob(0.1, 1.0, [1.0, 1.0])]
    ids, _prep = asyncio.run(submit_detached(loaded, jobs, constraints=False, spec=_spec(folder, ["a", "b"])))
    return ids


@contextlib.contextmanager
def running_cluster(tmp_path: Path, workers: int = 2) -> Iterator[tuple[Path, Any]]:
    """A 1 GM x 1 LM cluster of processes, up for the block and down after it (also on failure)."""
    path = write_cluster(tmp_path, gms=1, lms=1, workers=workers, heartbeat=0.2)
    loaded = load_cluster(path)
    asyncio.run(supervise.up(loaded, path, timeout=60))
    try:
        yield path, loaded
    finally:
        asyncio.run(supervise.down(loaded, path))


def _wait_started(folder: Path, n: int, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while len(_runs(folder, "a")) < n and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(_runs(folder, "a")) == n


def test_cancel_running_and_queued_tasks(tmp_path, capsys) -> None:
    with running_cluster(tmp_path) as (path, loaded):
        a, b = _submit(loaded, tmp_path)
        _wait_started(tmp_path, 2)
        assert _jobs(path, capsys)[a]["state"] == "running"
        capsys.readouterr()
        assert main(["job", "cancel", str(a), "--cluster", str(path)]) == 0
        out = capsys.readouterr().out
        acked = time.monotonic()
        assert out.startswith(f"job {a} cancelled: 2 queued tasks never launched"), out
        started = {k: list(v) for k, v in _runs(tmp_path, "a").items()}
        row = _wait_state(path, capsys, b, "done", 15)
        assert row["completed"] == 2, row
        rows = _jobs(path, capsys)
        assert (rows[a]["state"], rows[a]["dropped"], rows[a]["killed"]) == ("cancelled", 2, 2), rows[a]
        time.sleep(max(0.0, acked + 2 - time.monotonic()))
        assert _runs(tmp_path, "a") == started == {0: ["start"], 1: ["start"]}  # killed, never ended; 2 and 3 never ran
        assert _runs(tmp_path, "b") == {0: ["start", "end"], 1: ["start", "end"]}  # once each
        # again, a done job, an unknown one: one line each
        assert main(["job", "cancel", str(a), "--cluster", str(path)]) == 0
        assert capsys.readouterr().out.startswith(f"job {a} was already cancelled")
        assert main(["job", "cancel", str(b), "--cluster", str(path)]) == 3
        assert capsys.readouterr().out.strip() == f"job {b} had already ended: nothing cancelled (schedlab job status {b} says how)"
        assert main(["job", "cancel", "12345", "--cluster", str(path)]) == 1
        assert capsys.readouterr().err.strip() == f"no job 12345 in the ledger of cluster {loaded.name}"
        assert main(["job", "status", str(a), "--cluster", str(path)]) == 0
        assert json.loads(capsys.readouterr().out)["state"] == "cancelled"


def test_cancel_with_the_gm_killed_between_submit_and_cancel(tmp_path, capsys) -> None:
    with running_cluster(tmp_path) as (path, loaded):
        a, b = _submit(loaded, tmp_path)
        _wait_started(tmp_path, 2)
        supervise.kill(path, "gm", 0)
        time.sleep(0.3)
        capsys.readouterr()
        assert main(["job", "cancel", str(a), "--cluster", str(path), "--wait", "0"]) == 0
        assert "cancellation requested" in capsys.readouterr().out
        acked = {k: list(v) for k, v in _runs(tmp_path, "a").items()}
        asyncio.run(supervise.restart(loaded, path, "gm", 0, timeout=30))
        row = _wait_state(path, capsys, a, "cancelled", 20)
        assert (row["state"], row["dropped"]) == ("cancelled", 2), row
        row = _wait_state(path, capsys, b, "done", 15)
        assert row["completed"] == 2, row
        assert _runs(tmp_path, "a") == acked == {0: ["start"], 1: ["start"]}  # killed after the restart; 2 and 3 never ran
        assert _runs(tmp_path, "b") == {0: ["start", "end"], 1: ["start", "end"]}
        assert main(["job", "cancel", str(a), "--cluster", str(path)]) == 0
        assert capsys.readouterr().out.startswith(f"job {a} was already cancelled")


def test_jobs_lists_attached_submits_and_cancels_one(tmp_path, capsys) -> None:
    """An attached submit's jobs are in `schedlab jobs` while it runs; one cancelled from elsewhere is cancelled once
    in the ledger and in the submitting client's summary."""
    import threading

    from schedlab.services.client import replay
    from schedlab.services.remote import RemoteCluster

    path = write_cluster(tmp_path, gms=1, lms=1, workers=2, heartbeat=0.2)
    loaded = load_cluster(path)
    trace = [TraceJob(0.0, 20.0, [20.0, 20.0]), TraceJob(0.1, 1.0, [1.0])]  # both of the first run; the second waits
    seen: dict[str, object] = {}

    def elsewhere() -> None:  # another terminal: schedlab jobs, then job cancel
        deadline = time.monotonic() + 15
        jobs: dict[int, dict] = {}
        while time.monotonic() < deadline:
            time.sleep(0.5)
            jobs = _jobs(path, capsys)
            if len(jobs) == 2 and any(j["state"] == "running" and j["tasks"] == 2 for j in jobs.values()):
                break
        seen["jobs"] = jobs
        long = next((j["job"] for j in jobs.values() if j["tasks"] == 2), 0)
        seen["cancel"] = main(["job", "cancel", str(long), "--cluster", str(path)])

    async def attached() -> dict:
        async with RemoteCluster(loaded) as rc:
            return (await replay(rc, trace, constraints=False, timeout=40)).summary

    asyncio.run(supervise.up(loaded, path, timeout=60))
    try:
        other = threading.Thread(target=elsewhere)
        other.start()
        summary = asyncio.run(attached())
        other.join(30)
        jobs = seen["jobs"]
        assert isinstance(jobs, dict) and len(jobs) == 2 and all(j["attached"] for j in jobs.values()), jobs
        assert seen["cancel"] == 0
        rows = _jobs(path, capsys)
        assert sorted(r["state"] for r in rows.values()) == ["cancelled", "done"], rows
        rt = summary["runtime"]
        assert (rt["jobs_cancelled"], rt["tasks_cancelled"], rt["outcomes_failed"]) == (1, 2, 0), rt
        assert summary["counters"]["tasks_unfinished"] == 0
    finally:
        asyncio.run(supervise.down(loaded, path))


def test_cancel_racing_completion_ends_each_job_once(tmp_path, capsys) -> None:
    """Cancels sent as jobs' last tasks end: each job ends once — done (exit 3: it had ended) or cancelled (exit 0) —
    with one end record in the ledger, and what job cancel said is what the ledger says."""
    from schedlab.services.clusterfile import require_secret
    from schedlab.services.ledger import job_ledger

    path = write_cluster(tmp_path, gms=1, lms=1, workers=4, heartbeat=0.2)
    loaded = load_cluster(path)
    asyncio.run(supervise.up(loaded, path, timeout=60))
    try:
        jobs = [TraceJob(0.0, 0.6 + 0.3 * k, [0.6 + 0.3 * k]) for k in range(4)]  # ends 0.6 s apart, cancels race them
        ids, _prep = asyncio.run(submit_detached(loaded, jobs, constraints=False, spec=_spec(tmp_path, ["r0", "r1", "r2", "r3"])))
        said = {}
        for j in ids:
            capsys.readouterr()
            said[j] = main(["job", "cancel", str(j), "--cluster", str(path)])
        rows = _jobs(path, capsys)

        async def ends() -> list[dict]:
            stream = job_ledger(loaded.broker, loaded.name, require_secret(loaded), "client")
            await stream.connect()
            try:
                return [r for r in await stream.read() if r.get("kind") in ("ended", "cancelled")]
            finally:
                await stream.close()

        records = asyncio.run(ends())
        assert sorted(r["job"] for r in records) == sorted(ids), records  # one end each
        for j in ids:
            assert (rows[j]["state"], said[j]) in (("done", 3), ("cancelled", 0)), (rows[j], said[j])
    finally:
        asyncio.run(supervise.down(loaded, path))
