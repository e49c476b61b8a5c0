"""Where a 5 GM x 5 LM cluster of processes spends its CPU per task (issue 48's groundwork).

Starts the cluster of ``bench_services.py``'s throughput runs (1,000 workers on 5 worker hosts), replays
4 s of sleep-0 tasks in jobs of PER_JOB offered at RATE tasks/s, and prints placements/s, CPU ms per task
per role (from /proc), messages per task by type and the transport's counters per task (from the nodes'
status). With ``prof``, py-spy samples GM 0, LM 0 and worker host 0 for 8 s at 200 Hz and writes their
collapsed stacks (py-spy's raw format) into a temporary folder it names (``pip install py-spy``). With
``piggyback``, the LMs answer each accepted launch request with the GM's pending state update (Megha's
``piggyback``, the paper's IV-A) — one of issue 48's levers.

    python benchmarks/profile_services.py [PER_JOB] [RATE] [prof] [piggyback]      # about a minute
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_services import cluster_file, cpu_seconds, figures, trace  # noqa: E402
from schedlab.services import supervise  # noqa: E402
from schedlab.services.client import replay  # noqa: E402
from schedlab.services.clusterfile import load_cluster  # noqa: E402
from schedlab.services.remote import RemoteCluster, fetch_statuses  # noqa: E402


async def main(per_job: int, rate: float, profile: bool, piggyback: bool = False) -> None:
    folder = Path(tempfile.mkdtemp(prefix="schedlab-profile-"))
    path = cluster_file(folder, 5, 5, 1000)
    if piggyback:
        path.write_text(path.read_text().replace("  heartbeat: 1.0", "  piggyback: true\n  heartbeat: 1.0", 1))
    loaded = load_cluster(path)
    try:
        procs = await supervise.up(loaded, path, timeout=120)
        pids = {f"{p.role}{p.id}": p.pid for p in procs}
        spies = []
        if profile:
            for name in ("gm0", "lm0", "worker0"):
                spies.append(subprocess.Popen([shutil.which("py-spy") or "py-spy", "record", "-p", str(pids[name]), "-d", "8", "-r", "200",
                                               "-f", "raw", "-o", str(folder / f"{name}.txt"), "--nonblocking"],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        everyone = [*pids.values(), os.getpid()]
        before = {k: cpu_seconds([v]) for k, v in pids.items()}
        before_all = cpu_seconds(everyone)
        async with RemoteCluster(loaded) as rc:
            r = await replay(rc, trace(int(rate * 4 / per_job), per_job, rate, 0.0), constraints=False, timeout=300)
            messages = rc.message_counts()
            statuses = await fetch_statuses(loaded)
        f = figures(r)
        n = max(1, f["tasks"])
        f["cpu_ms_per_task"] = (cpu_seconds(everyone) - before_all) * 1e3 / n
        roles: dict[str, float] = {}
        for k, v in pids.items():
            role = k.rstrip("0123456789")
            roles[role] = roles.get(role, 0.0) + (cpu_seconds([v]) - before[k]) * 1e3 / n
        transport: dict[str, float] = {}
        for st in statuses:
            for k, v in (st.get("transport") or {}).items():
                transport[f"{st['role']}.{k}"] = transport.get(f"{st['role']}.{k}", 0) + v
        print({k: round(float(v), 3) for k, v in f.items()})
        print("CPU ms per task by role (the client is the rest):", {k: round(v, 3) for k, v in roles.items()})
        print("messages per task:", {k: round(v / n, 2) for k, v in sorted(messages.items()) if v})
        print("transport per task:", {k: round(v / n, 3) for k, v in sorted(transport.items()) if v})
        for s in spies:
            s.wait()
        if profile:
            print(f"py-spy stacks in {folder}")
    finally:
        await supervise.down(loaded, path)
        if not profile:  # with prof, the stacks stay for the reader (the folder is named above)
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    a = [x for x in sys.argv[1:] if x != "piggyback"]
    asyncio.run(main(int(a[0]) if a else 10, float(a[1]) if len(a) > 1 else 3000.0, len(a) > 2 and a[2] == "prof",
                     "piggyback" in sys.argv[1:]))
