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

    python benchmarks/megha_paper_experiments.py [--only fig6|fig8|fig9|fairness]
"""

from __future__ import annotations

import argparse

from schedlab import simulate
from schedlab.schedulers.megha import MEGHA_PAPER_COSTS
from schedlab.sim.rng import RngStreams
from schedlab.workload.synthetic import generate_jobs

BASE = {"updates": "snapshot", "heartbeat": 10.0, **MEGHA_PAPER_COSTS}


def workload(jobs: int, interarrival: float, tasks: str, duration: str, seed: int = 1) -> list:
    return list(generate_jobs(jobs, f"poisson:{interarrival}", tasks, duration, RngStreams(seed).np_rng("workload")))


def run(trace, workers: int, **params) -> dict:
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


def row(label: str, m: dict) -> None:
    print(
        f"{label:34s} alloc p50 {m['p50'] * 1e3:8.2f} ms  p99 {m['p99'] * 1e3:9.2f} ms  mean {m['mean'] * 1e3:8.2f} ms  "
        f"[fq {m['fq'] * 1e3:.2f} proc {m['proc'] * 1e3:.3f} comm {m['comm'] * 1e3:.2f} ms]  util {m['util']:.3f}  "
        f"rep {m['repartitions']} incons {m['inconsistencies']}  ({m['wall']:.1f} s)",
        flush=True,
    )


def fig6() -> None:
    print("Fig. 6 — centralized (1 GM, 1 LM) vs decentralized (10 GMs, 10 LMs)")
    trace = workload(3000, 0.0005, "geom:10", "exp:4")  # ~20,000 tasks/s for 1.5 s
    for workers in (10000, 20000):
        for gms, lms in ((1, 1), (10, 10)):
            row(f"  {workers} workers, {gms} GM x {lms} LM", run(trace, workers, gms=gms, lms=lms))


def fig8() -> None:
    print("Fig. 8 — 10 GMs x 10 LMs, growing data center (steady load over ~10 heartbeats)")
    trace = workload(2000, 0.05, "geom:10", "exp:4")
    for workers in (1000, 5000, 10000, 30000, 50000):
        row(f"  {workers} workers", run(trace, workers, gms=10, lms=10))


def fig9() -> None:
    print("Fig. 9 — LM and GM counts, 30,000 workers")
    trace = workload(3000, 0.0005, "geom:10", "exp:4")
    for gms, lms in ((1, 10), (5, 10), (10, 10), (20, 10), (10, 1), (10, 5), (10, 20)):
        row(f"  {gms} GMs x {lms} LMs", run(trace, 30000, gms=gms, lms=lms))


def fairness() -> None:
    print("Figs. 10-11 — fair sharing, 4 queues (10/25/15/50 %), 3 GMs, 3 LMs")
    trace = workload(1500, 0.05, "geom:8", "exp:30")
    shares = {"shares": [0.1, 0.25, 0.15, 0.5], "queue_gms": [1, 2, 2, 3]}
    for workers in (200, 500, 1500):
        m = run(trace, workers, gms=3, lms=3, **shares)
        row(f"  {workers} workers", m)
        per_user = m["jobs"].groupby("user").jrt_delay.mean().round(2).to_dict()
        print(f"    preemption attempts {m['preemption_attempts']}, preemptions {m['preemptions']}; mean JRT delay by queue {per_user}")


EXPERIMENTS = {"fig6": fig6, "fig8": fig8, "fig9": fig9, "fairness": fairness}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=list(EXPERIMENTS))
    args = ap.parse_args()
    for name, fn in EXPERIMENTS.items():
        if args.only in (None, name):
            fn()


if __name__ == "__main__":
    main()
