"""Trace input speed: the ``.tr`` and columnar readers, and the raw-trace converters against their targets.

* Readers: each bundled trace (the Google sub-trace, 312,558 tasks; syn_1000,
  2 M tasks) is converted to a columnar file, then both files are read to the
  end (validation included, no simulation): tasks/s and the columnar/``.tr``
  ratio, median of ``--repeat`` reads after a warm-up (imports excluded).
* Converter (``--rows N``, default 2,000,000; the issue's memory check uses
  10,000,000): a Google 2011 ``task_events`` table of N rows is generated in
  the schema (jobs of 1–20 tasks, each SUBMIT, SCHEDULE and FINISH; 4 gzipped
  shards), then ``schedlab trace convert --format google2011`` runs in a fresh
  process: input rows/s against the 500,000 rows/s target, and its peak RSS
  (run at two sizes, ``--rows`` and a fifth of it, to show memory does not
  grow with the input); rows per CPU-second beside it tell a wait (for I/O,
  for a core) from slow work.
* The same for Google 2019 (``--only google2019``): ``instance_events`` as
  BigQuery's JSON lines (each task SUBMIT, QUEUE, ENABLE, SCHEDULE, FINISH;
  one job in ten constrained; 2 shards) and one ``collection_events`` row
  per job. Its lines are about 3.5 times as long as 2011's CSV rows; the
  issue's 500,000 rows/s target is the same. Its peak grows between the two
  sizes while the generated trace's tasks in flight ramp up (about 300,000 at
  steady state, reached after some 3 M rows): it is flat from there on.
* The same for ``--format alibaba2018``: a ``batch_instance`` table of N rows
  in the Alibaba 2018 schema (stages of 1-200 instances, DAG and ``task_``
  names, one instance in ten failed once and rerun, a few failed or still
  running; rows of concurrent stages interleaved; 4 gzipped shards) and its
  ``batch_task`` table (one row per stage, about N / 40 more rows).

    python benchmarks/bench_trace_io.py [--repeat 3] [--only google|syn_1000|google2011|google2019|alibaba2018] [--rows N]
"""

from __future__ import annotations

import argparse
import gzip
import heapq
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from schedlab.workload.columnar import read_columnar
from schedlab.workload.convert import convert
from schedlab.workload.trace import read_raw, resolve_trace

TRACES = ("google", "syn_1000")
CONVERTERS = ("google2011", "google2019", "alibaba2018")
TARGET_ROWS_PER_S = 500_000

CHILD = r"""
import json, resource, sys, time
from schedlab.workload.convert import convert
t0, c0 = time.perf_counter(), time.process_time()
r = convert(sys.argv[3], [sys.argv[1]], sys.argv[2])
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"rows": r.rows_read, "tasks": r.tasks, "wall": wall, "cpu": cpu, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _task_shards(rows: int, paths: list[Path], seed: int, started: Callable[[int, int, int], list[str]], finished: Callable[[int, int, int], str],
                 new_job: Callable[[int, int], None] | None = None) -> int:  # fmt: skip
    """About ``rows`` event lines over the shards ``paths`` (gzipped): jobs of 1-20 tasks arriving every 0-20 ms
    from 600 s, each task's ``started(t, job, task)`` lines at its arrival and its ``finished(t, job, task)``
    line 1-600 s later, in time order; every task finishes. Returns the lines written."""
    rng = random.Random(seed)
    t, job, written = 600_000_000, 1, 0
    running: list[tuple[int, int, int]] = []  # (finish µs, job, task)
    for s, path in enumerate(paths):
        lines: list[str] = []
        with gzip.open(path, "wt", compresslevel=1) as f:
            k = 0
            while k < rows // len(paths):
                t += rng.randint(0, 20_000)
                while running and running[0][0] <= t:
                    lines.append(finished(*heapq.heappop(running)))
                    k += 1
                if new_job is not None:
                    new_job(t, job)
                for i in range(rng.randint(1, 20)):
                    start = started(t, job, i)
                    lines += start
                    heapq.heappush(running, (t + 1000 + rng.randint(1, 600) * 1_000_000, job, i))
                    k += len(start)
                job += 1
                if len(lines) > 100_000:
                    f.write("\n".join(lines) + "\n")
                    written += len(lines)
                    lines = []
            if s == len(paths) - 1:
                while running:
                    lines.append(finished(*heapq.heappop(running)))
            f.write("\n".join(lines) + "\n")
            written += len(lines)
    return written


def generate_task_events(rows: int, folder: Path, shards: int = 4, seed: int = 1) -> int:
    """A task_events table of about ``rows`` rows in the Google 2011 schema (SUBMIT, SCHEDULE, FINISH per task)."""
    (folder / "task_events").mkdir(parents=True)

    def row(t: int, job: int, i: int, machine: str, event: int) -> str:
        return f"{t},,{job},{i},{machine},{event},u{job % 50},1,{job % 12},0.0625,0.03125,0.0001,0"

    paths = [folder / "task_events" / f"part-{s:05d}-of-{shards:05d}.csv.gz" for s in range(shards)]
    return _task_shards(rows, paths, seed, lambda t, j, i: [row(t, j, i, "", 0), row(t + 1000, j, i, str(i % 997), 1)], lambda t, j, i: row(t, j, i, str(i % 997), 4))


def generate_instance_events(rows: int, folder: Path, shards: int = 2, seed: int = 1) -> int:
    """Google 2019 ``instance_events`` (about ``rows`` rows: SUBMIT, QUEUE, ENABLE, SCHEDULE, FINISH per task) and
    ``collection_events`` shards as BigQuery's JSON lines (INT64 as strings)."""
    folder.mkdir(parents=True)
    collections: list[str] = []

    def event(t: int, typ: int, job: int, i: int, machine: int | None = None) -> str:
        cid = 10**11 + job
        r: dict = {"time": str(t), "type": str(typ), "collection_id": str(cid), "scheduling_class": str(cid % 4), "collection_type": "0",
                   "priority": str(cid % 12 * 25), "alloc_collection_id": "0", "instance_index": str(i)}  # fmt: skip
        if machine is not None:
            r["machine_id"] = str(machine)
        r["alloc_instance_index"] = "-1"
        r["resource_request"] = {"cpus": 0.0625, "memory": 0.03125}
        r["constraint"] = [{"name": "5d4cc8eb4d8d", "value": "2", "relation": "0"}] if cid % 10 == 0 else []
        return json.dumps(r, separators=(",", ":"))

    def new_job(t: int, job: int) -> None:
        collections.append(json.dumps({"time": str(t), "type": "0", "collection_id": str(10**11 + job), "collection_type": "0", "priority": "100",
                                       "user": f"u{job % 50}", "collection_name": f"n{job}"}))  # fmt: skip

    def started(t: int, job: int, i: int) -> list[str]:
        return [event(t, 0, job, i), event(t, 1, job, i), event(t + 500, 2, job, i), event(t + 1000, 3, job, i, 7000 + i)]

    paths = [folder / f"instance_events-{s:012d}.json.gz" for s in range(shards)]
    written = _task_shards(rows, paths, seed, started, lambda t, j, i: event(t, 6, j, i, 7000 + i), new_job)
    with gzip.open(folder / "collection_events-000000000000.json.gz", "wt", compresslevel=1) as f:
        f.write("\n".join(collections) + "\n")
    return written + len(collections)


def generate_alibaba2018(rows: int, folder: Path, shards: int = 4, seed: int = 1) -> int:
    """batch_instance (about ``rows`` rows) and batch_task tables in the Alibaba 2018 schema."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    per_shard = rows // shards
    job, instance, t, written = 1, 1, 1000, 0
    statuses = ["Terminated"] * 94 + ["Failed"] * 3 + ["Running", "Cancelled", "Interrupted"]
    with open(folder / "batch_task.csv", "w") as tasks:
        for s in range(shards):
            with gzip.open(folder / f"batch_instance-{s + 1}.csv.gz", "wt", compresslevel=1) as f:
                k = 0
                while k < per_shard:
                    window: list[str] = []  # the rows of a few concurrent stages, interleaved
                    while len(window) < 5_000:
                        t += rng.randint(0, 3)
                        for stage in range(rng.randint(1, 4)):
                            name = rng.choice(["M1", f"R{stage + 2}_1", f"J{stage + 3}_1_2"]) if rng.random() < 0.8 else f"task_{rng.getrandbits(160):040x}"
                            n = min(200, int(rng.expovariate(1 / 40)) + 1)
                            tasks.write(f"{name},{n},j_{job},{rng.randint(1, 12)},Terminated,{t},{t + 900},{rng.choice((50, 100, 200))},{rng.choice((0.2, 0.39, 0.59))}\n")
                            for _ in range(n):
                                s0 = t + rng.randint(0, 30)
                                runs = 2 if rng.random() < 0.1 else 1
                                if runs == 2:
                                    window.append(f"ins_{instance},{name},j_{job},1,Failed,{s0},{s0 + 5},m_{rng.randint(1, 4000)},1,2,50.0,80.0,0.31,0.42")
                                    s0 += 6
                                status = rng.choice(statuses)
                                end = s0 + rng.randint(1, 600) if status != "Running" else 0
                                window.append(f"ins_{instance},{name},j_{job},1,{status},{s0},{end},m_{rng.randint(1, 4000)},{runs},{runs},50.0,80.0,0.31,0.42")
                                instance += 1
                        job += 1
                    rng.shuffle(window)
                    f.write("\n".join(window) + "\n")
                    k += len(window)
                    written += len(window)
    return written


def bench_converter(fmt: str, rows: int) -> None:
    generate = {"google2011": generate_task_events, "google2019": generate_instance_events, "alibaba2018": generate_alibaba2018}[fmt]
    for n in (rows // 5, rows):
        with tempfile.TemporaryDirectory() as d:
            generate(n, Path(d) / "trace")
            out = subprocess.run([sys.executable, "-c", CHILD, str(Path(d) / "trace"), str(Path(d) / "out.parquet"), fmt], check=True, capture_output=True, text=True)
            r = json.loads(out.stdout)
        rate = r["rows"] / r["wall"]
        target = f"target {TARGET_ROWS_PER_S:,}: {'met' if rate >= TARGET_ROWS_PER_S else 'MISSED'} (x{rate / TARGET_ROWS_PER_S:.2f})  "
        print(
            f"{fmt:11s} {r['rows']:>11,} rows -> {r['tasks']:>10,} tasks  {r['wall']:6.2f} s  {rate:>10,.0f} rows/s  {target}peak {r['peak_mb']:,.0f} MB  "
            f"{r['rows'] / r['cpu']:,.0f} rows/CPU-s",
            flush=True,
        )


def timed(fn) -> tuple[float, int]:
    t0 = time.perf_counter()
    tasks = sum(j.num_tasks for j in fn())
    return time.perf_counter() - t0, tasks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=(*TRACES, *CONVERTERS))
    ap.add_argument("--rows", type=int, default=2_000_000)
    args = ap.parse_args()
    for fmt in CONVERTERS:
        if args.only in (None, fmt):
            bench_converter(fmt, args.rows)
    if args.only in CONVERTERS:
        return
    with tempfile.TemporaryDirectory() as d:
        for name in TRACES:
            if args.only and name != args.only:
                continue
            tr = resolve_trace(name)[1]
            pq = Path(d) / f"{name}.parquet"
            t0 = time.perf_counter()
            report = convert("tr", [tr], pq)
            conv = time.perf_counter() - t0
            results = {}
            for label, fn in (("tr", lambda tr=tr: read_raw(tr)), ("columnar", lambda pq=pq: read_columnar(pq))):
                timed(fn)
                runs = [timed(fn) for _ in range(args.repeat)]
                results[label] = statistics.median(t for t, _ in runs)
            tasks = report.tasks
            print(
                f"{name:9s} {tasks:>9,} tasks  convert {conv:6.2f} s ({tasks / conv:>10,.0f} tasks/s)  "
                f"read .tr {results['tr']:5.2f} s ({tasks / results['tr']:>10,.0f}/s)  "
                f"columnar {results['columnar']:5.2f} s ({tasks / results['columnar']:>10,.0f}/s)  "
                f"x{results['tr'] / results['columnar']:.2f}  size {tr.stat().st_size / 1e6:.1f} MB -> {pq.stat().st_size / 1e6:.1f} MB",
                flush=True,
            )


if __name__ == "__main__":
    main()
