"""The Megha paper's multi-resource experiments (Section VI, Figures 6 and 8–11), at a scale that runs in minutes.

Workers have 64 cores and 16 GB (Section V-B); tasks request cores and memory
from the default request table (``schedlab.workload.requests``); the original
design's full-snapshot updates every 10 s (Section V) and per-operation
processing costs of the order of the paper's Python prototype
(``MEGHA_PAPER_COSTS``, our estimates — the paper gives none) are used, since
these figures are about scheduling overheads. The paper's workload samples
(google_19, alibaba, cloudera) are not public in usable form, so a synthetic
stream stands in: Poisson job arrivals, geometric task counts, exponential
durations (sizes below). What the paper reports, and what to look for:

* Fig. 6 — centralized (1 GM, 1 LM) vs decentralized at 10k and 20k workers:
  the centralized configuration has much higher allocation times;
* Fig. 8 — 10 GMs × 10 LMs, growing data center: allocation time grows with the
  number of workers (more state per update to process);
* Fig. 9 — LM/GM counts at a fixed size: more GMs cut framework queuing; more
  LMs make updates smaller;
* Figs. 10–11 — fair sharing with 4 queues (10 %, 25 %, 15 %, 50 %; queue 1 on
  GM 1, queues 2–3 on GM 2, queue 4 on GM 3) on small data centers (200, 500,
  1,500 workers): allocation time, repartitions, preemption attempts and
  preemptions all grow as the data center shrinks.

    schedlab reproduce megha-overheads   # writes reports/megha/paper_experiments.txt

``quick`` shrinks every workload tenfold and keeps the smallest data centers:
a check of the whole path, not a result. The built-in specs ``megha-cluster-size``,
``megha-gm-lm`` and ``megha-fairness`` run the same figures as resumable sweeps
with reports and plots; this module is the quick single-seed table.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from schedlab.atomic import atomic_write
from schedlab.engine import simulate
from schedlab.schedulers.megha import MEGHA_PAPER_COSTS
from schedlab.sim.rng import RngStreams
from schedlab.workload.synthetic import generate_jobs

DEFAULT_OUT = "reports/megha/paper_experiments.txt"
BASE = {"updates": "snapshot", "heartbeat": 10.0, **MEGHA_PAPER_COSTS}
PARTS = {
    "fig6": "Fig. 6: centralized (1 GM, 1 LM) vs decentralized (10 GMs, 10 LMs) at 10,000 and 20,000 workers",
    "fig8": "Fig. 8: 10 GMs x 10 LMs on a growing data center",
    "fig9": "Fig. 9: GM and LM counts on 30,000 workers",
    "fairness": "Figs. 10-11: fair sharing with 4 queues on 200, 500 and 1,500 workers",
}


def _workload(jobs: int, interarrival: float, tasks: str, duration: str, seed: int = 1) -> list:
    return list(generate_jobs(jobs, f"poisson:{interarrival}", tasks, duration, RngStreams(seed).np_rng("workload")))


def _run(trace: list, workers: int, **params: Any) -> dict[str, Any]:
    r = simulate("megha", trace, workers=workers, seed=1, resource_mode="multi", params={**BASE, **params})
    s = r.summary
    a = s["allocation_time"]
    c = s["allocation_components"]
    return {
        "p50": a["p50"],
        "p99": a["p99"],
        "mean": a["mean"],
        "fq": c["framework_queuing"]["mean"],
        "proc": c["processing"]["mean"],
        "comm": c["communication"]["mean"],
        "util": s["utilization"]["mean"],
        **{k: s["counters"].get(k, 0) for k in ("repartitions", "preemption_attempts", "preemptions", "inconsistencies")},
        "wall": s["wall_seconds"],
        "jobs": r.jobs,
    }


def _row(label: str, m: dict[str, Any]) -> str:
    return (
        f"{label:34s} alloc p50 {m['p50'] * 1e3:8.2f} ms  p99 {m['p99'] * 1e3:9.2f} ms  mean {m['mean'] * 1e3:8.2f} ms  "
        f"[fq {m['fq'] * 1e3:.2f} proc {m['proc'] * 1e3:.3f} comm {m['comm'] * 1e3:.2f} ms]  util {m['util']:.3f}  "
        f"rep {m['repartitions']} incons {m['inconsistencies']}  ({m['wall']:.1f} s)"
    )


def _fig6(say: Callable[[str], None], k: int) -> None:
    say("Fig. 6 — centralized (1 GM, 1 LM) vs decentralized (10 GMs, 10 LMs)")
    trace = _workload(3000 // k, 0.0005, "geom:10", "exp:4")  # ~20,000 tasks/s for 1.5 s
    for workers in (10000, 20000)[: 1 if k > 1 else 2]:
        for gms, lms in ((1, 1), (10, 10)):
            say(_row(f"  {workers} workers, {gms} GM x {lms} LM", _run(trace, workers, gms=gms, lms=lms)))


def _fig8(say: Callable[[str], None], k: int) -> None:
    say("Fig. 8 — 10 GMs x 10 LMs, growing data center (steady load over ~10 heartbeats)")
    trace = _workload(2000 // k, 0.05, "geom:10", "exp:4")
    for workers in (1000, 5000, 10000, 30000, 50000)[: 2 if k > 1 else 5]:
        say(_row(f"  {workers} workers", _run(trace, workers, gms=10, lms=10)))


def _fig9(say: Callable[[str], None], k: int) -> None:
    say("Fig. 9 — LM and GM counts, 30,000 workers")
    trace = _workload(3000 // k, 0.0005, "geom:10", "exp:4")
    for gms, lms in ((1, 10), (5, 10), (10, 10), (20, 10), (10, 1), (10, 5), (10, 20))[: 2 if k > 1 else 7]:
        say(_row(f"  {gms} GMs x {lms} LMs", _run(trace, 30000, gms=gms, lms=lms)))


def _fairness(say: Callable[[str], None], k: int) -> None:
    say("Figs. 10-11 — fair sharing, 4 queues (10/25/15/50 %), 3 GMs, 3 LMs")
    trace = _workload(1500 // k, 0.05, "geom:8", "exp:30")
    shares = {"shares": [0.1, 0.25, 0.15, 0.5], "queue_gms": [1, 2, 2, 3]}
    for workers in (200, 500, 1500)[: 1 if k > 1 else 3]:
        m = _run(trace, workers, gms=3, lms=3, **shares)
        say(_row(f"  {workers} workers", m))
        per_user = m["jobs"].groupby("user").jrt_delay.mean().round(2).to_dict()
        say(f"    preemption attempts {m['preemption_attempts']}, preemptions {m['preemptions']}; mean JRT delay by queue {per_user}")


_EXPERIMENTS = {"fig6": _fig6, "fig8": _fig8, "fig9": _fig9, "fairness": _fairness}


def reproduce(
    out: str | os.PathLike,
    *,
    quick: bool = False,
    only: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Run the experiments (all, or ``only`` one of :data:`PARTS`), write their table to ``out`` and return it."""
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        if progress is not None:
            progress(line)

    for name, fn in _EXPERIMENTS.items():
        if only in (None, name):
            fn(say, 10 if quick else 1)
    path = Path(out)
    atomic_write(path, lambda tmp: Path(tmp).write_text("\n".join(lines) + "\n", encoding="utf-8"))
    return path
