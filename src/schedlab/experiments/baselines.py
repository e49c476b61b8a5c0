"""The baselines' numbers: PigeonC vs the constraint-aware paper, Sparrow vs Megha, and where Pigeon/Hawk/Eagle sit.

``schedlab reproduce baselines`` makes three tables from simulation runs:

A. **PigeonC** (constraint-aware paper, Section 6, Figures 6–10, Table 2) on
   syn_250 / syn_500 / syn_1000 (the papers' 10,000 workers: ``reference-pigeon``
   for PigeonC, the same workers as ``reference`` for Megha) and the Google
   sub-trace (20,000 workers generated from the same constraint frequencies), in
   the paper-faithful profile (random and min-constraints worker choice) and the
   authors' profile (``compat=authors``, where worker choice is always
   min-constraints, so one run serves both columns). Beside each: the paper's
   median (:data:`PAPER_PIGEONC_MEDIAN`), and Megha in the same profile and
   worker choice, to check the paper's claims — Megha's p99 JRT delay at least
   10× below PigeonC's, Megha's mean utilization at least PigeonC's.
B. **Sparrow vs Megha** (Megha paper, Figures 3–4) without constraints on the
   Google sub-trace, 20,000 and 12,000 workers (its bursts fill the data center):
   allocation-time percentiles for ideal, Sparrow, Megha and Megha with the Megha
   paper's processing costs (``MEGHA_PAPER_COSTS``).
C. **Placement** of ideal, Megha, Pigeon, PigeonC, Sparrow, Hawk and Eagle on the
   runs of A (constraints on; the papers give no number for Pigeon, Hawk, Eagle;
   section C runs A's runs too). On Google, Hawk and Eagle use the settings their
   simulator's README gives for that trace (cutoff 1129.532 s, 17 % short
   partition: :data:`GOOGLE_HYBRID`).

``sections`` picks the tables ("A,B,C"), ``seeds`` the seeds (1..N).
``quick=True`` runs syn_250 only in A and C (B always runs the Google
sub-trace; a few minutes in all). Every JRT delay and allocation time is in
seconds; statistics are means over the seeds.

Each run is a :class:`~schedlab.sweeps.points.Point` (``_execute`` on the
scheduler, trace, seed, scheduler parameters and ``simulate()`` keyword
arguments: its id covers every input), run by the one runner
(:func:`~schedlab.sweeps.runner.run_points`: ``jobs`` processes locally,
or Ray) into the results store ``store`` (one folder per run, saved as each run
finishes): an interrupted or repeated reproduction resumes from the store, and
runs already finished there are not run again (``store=None`` keeps nothing).
The JSON file ``out`` is only written, never read back as a cache: it holds
the summary figures of this call's runs, sorted by their report key ``id``
(e.g. ``A|syn_250|pigeonc|none|random|1``); the tables go to the Markdown file
beside it (same name, ``.md``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import schedlab
from schedlab.atomic import atomic_write
from schedlab.schedulers.megha import MEGHA_PAPER_COSTS
from schedlab.sweeps.points import Point, null_to_nan
from schedlab.sweeps.runner import SweepProgress, run_points

__all__ = ["DEFAULT_OUT", "GOOGLE_HYBRID", "PAPER_PIGEONC_MEDIAN", "PARTS", "WORKLOADS", "reproduce"]

DEFAULT_OUT = "reports/baselines/reproduction.json"

PARTS = {
    "A": "Constraint-aware paper Section 6 (Figures 6–10, Table 2): PigeonC's median/p99 JRT delay and utilization on "
    "syn_250/500/1000 and Google, random vs min-constraints, paper-faithful and authors' profile, beside the paper's "
    "median and Megha (claims: Megha's p99 ≥ 10× below PigeonC's, Megha's utilization ≥ PigeonC's)",
    "B": "Megha paper Figures 3–4: allocation-time percentiles of ideal, Sparrow, Megha and Megha with the paper's "
    "processing costs, no constraints, Google sub-trace on 20,000 and 12,000 workers",
    "C": "Placement (JRT delay median/mean/p99 against ideal and Megha, utilization) of ideal, Megha, Pigeon, PigeonC, "
    "Sparrow, Hawk and Eagle with constraints on the workloads of A (no paper numbers for Pigeon, Hawk, Eagle)",
}

PAPER_PIGEONC_MEDIAN = {  # constraint-aware paper, Section 6: (random, min-constraints)
    "syn_250": (1.003, 1.002),
    "syn_500": (507.74, 520.60),
    "syn_1000": (1416.88, 1449.3),
    "google": (0.0015, 0.0015),
}
GOOGLE_HYBRID = {"cutoff": 1129.532, "reserve": 0.17}
WORKLOADS = ["syn_250", "syn_500", "syn_1000", "google"]


def _where(trace: str, family: str) -> dict[str, Any]:
    if trace == "google":
        return {"workers": 20000}
    return {"config": "reference-pigeon" if family == "pigeon" else "reference"}


_TARGET = f"{__name__}:_execute"


def _point(key: str, scheduler: str, trace: str, seed: int, kw: dict[str, Any], params: dict[str, Any]) -> Point:
    """The run ``key|seed`` (its report id, a label): ``_execute`` on every input of the run."""
    inputs = {"scheduler": scheduler, "trace": trace, "seed": seed, "params": params, "kw": kw}
    return Point(_TARGET, inputs, {"run": f"{key}|{seed}"})


def _plan(sections: set[str], workloads: list[str], seeds: list[int]) -> list[Point]:
    """Every run: a point labelled with its report id (``label["run"]``)."""
    runs: list[Point] = []

    def add(key: str, scheduler: str, trace: str, kw: dict, params: dict) -> None:
        for seed in seeds:
            runs.append(_point(key, scheduler, trace, seed, kw, params))

    if "A" in sections or "C" in sections:
        for tr in workloads:
            for choice in ("random", "min-constraints"):
                add(f"A|{tr}|pigeonc|none|{choice}", "pigeonc", tr, _where(tr, "pigeon"), {"worker_choice": choice})
                add(f"A|{tr}|megha|none|{choice}", "megha", tr, _where(tr, "megha"), {"worker_choice": choice})
                add(f"A|{tr}|megha|authors|{choice}", "megha", tr, _where(tr, "megha"), {"worker_choice": choice, "compat": "authors"})
            add(f"A|{tr}|pigeonc|authors|min-constraints", "pigeonc", tr, _where(tr, "pigeon"), {"compat": "authors"})
    if "B" in sections:
        # Imported here: the Megha package pulls in numpy (~0.5 s), which listing this module's PARTS does not need.

        for w in (20000, 12000):
            kw = {"workers": w, "constraints": False}
            add(f"B|{w}|ideal", "ideal", "google", kw, {})
            add(f"B|{w}|sparrow", "sparrow", "google", kw, {})
            add(f"B|{w}|megha", "megha", "google", kw, {})
            add(f"B|{w}|megha-costs", "megha", "google", kw, dict(MEGHA_PAPER_COSTS))
    if "C" in sections:
        for tr in workloads:
            where = _where(tr, "megha")
            add(f"C|{tr}|ideal", "ideal", tr, where, {})
            add(f"C|{tr}|pigeon", "pigeon", tr, _where(tr, "pigeon"), {})
            add(f"C|{tr}|sparrow", "sparrow", tr, where, {})
            hybrid = GOOGLE_HYBRID if tr == "google" else {}
            add(f"C|{tr}|hawk", "hawk", tr, where, dict(hybrid))
            add(f"C|{tr}|eagle", "eagle", tr, where, dict(hybrid))
    return runs


def _execute(*, scheduler: str, trace: str, seed: int, params: dict[str, Any], kw: dict[str, Any]) -> dict[str, Any]:
    """One run (a point, in any process): ``simulate(scheduler, trace, seed=seed, params=params, **kw)``'s figures."""
    t0 = time.perf_counter()
    r = schedlab.simulate(scheduler, trace, seed=seed, params=params, **kw)
    s = r.summary
    c = s["counters"]
    return {
        "jrt_delay": s["jrt_delay"],
        "allocation_time": s["allocation_time"],
        "components_p99": {k: v["p99"] for k, v in s["allocation_components"].items()},
        "utilization": s["utilization"]["mean"],
        "unfinished": c["tasks_unfinished"],
        "jobs_incomplete": c["jobs_incomplete"],
        "wall": s["wall_seconds"],
        "total": time.perf_counter() - t0,
    }


def _pick(metric: str, stat: str) -> Callable[[dict], float]:
    """One statistic of one metric of a run's record."""
    return lambda r: r[metric][stat]


def _mean(results: dict[str, dict], key: str, seeds: list[int], f: Callable[[dict], float]) -> float:
    vals = [f(results[f"{key}|{s}"]) for s in seeds if f"{key}|{s}" in results]
    return sum(vals) / len(vals) if vals else float("nan")


def _fmt(x: float) -> str:
    if x != x:
        return "-"
    if x == 0:
        return "0"
    if abs(x) >= 1000 or abs(x) < 0.001:
        return f"{x:.3g}"
    return f"{x:.4g}"


def _table_a(res: dict[str, dict], workloads: list[str], seeds: list[int]) -> list[str]:
    out = [
        "A. PigeonC vs the constraint-aware paper, and the paper's claims against Megha (JRT delay, s; utilization = mean)",
        "",
        "| trace | profile | worker choice | PigeonC median | paper median | PigeonC p99 | Megha median | Megha p99 | p99 ratio PigeonC/Megha | ≥10× | PigeonC util | Megha util | Megha ≥ |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for tr in workloads:
        for profile in ("none", "authors"):
            for i, choice in enumerate(("random", "min-constraints")):
                pk = f"A|{tr}|pigeonc|{profile}|{choice if profile == 'none' else 'min-constraints'}"
                mk = f"A|{tr}|megha|{profile}|{choice}"
                p50 = _mean(res, pk, seeds, lambda r: r["jrt_delay"]["p50"])
                p99 = _mean(res, pk, seeds, lambda r: r["jrt_delay"]["p99"])
                m50 = _mean(res, mk, seeds, lambda r: r["jrt_delay"]["p50"])
                m99 = _mean(res, mk, seeds, lambda r: r["jrt_delay"]["p99"])
                pu = _mean(res, pk, seeds, lambda r: r["utilization"])
                mu = _mean(res, mk, seeds, lambda r: r["utilization"])
                ratio = p99 / m99 if m99 > 0 else float("inf")
                prof = "default" if profile == "none" else "authors"
                out.append(
                    f"| {tr} | {prof} | {choice} | {_fmt(p50)} | {_fmt(PAPER_PIGEONC_MEDIAN[tr][i])} | {_fmt(p99)} | {_fmt(m50)} | {_fmt(m99)} "
                    f"| {_fmt(ratio)} | {'yes' if ratio >= 10 else 'NO'} | {pu:.4f} | {mu:.4f} | {'yes' if mu >= pu - 1e-4 else 'NO'} |"
                )
    out += ["", "(authors' PigeonC picks min-constraints whatever the choice: one run fills both of its rows)"]
    return out


def _table_b(res: dict[str, dict], seeds: list[int]) -> list[str]:
    out = [
        "B. Sparrow vs Megha, no constraints, Google sub-trace (allocation time, s)",
        "",
        "| workers | scheduler | p50 | p90 | p99 | p99.99 | max | worker-queuing p99 | JRT delay p99 | util |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w in (20000, 12000):
        for name in ("ideal", "sparrow", "megha", "megha-costs"):
            k = f"B|{w}|{name}"
            a = [_mean(res, k, seeds, _pick("allocation_time", q)) for q in ("p50", "p90", "p99", "p9999", "max")]
            wq = _mean(res, k, seeds, lambda r: r["components_p99"]["worker_queuing"])
            j99 = _mean(res, k, seeds, lambda r: r["jrt_delay"]["p99"])
            u = _mean(res, k, seeds, lambda r: r["utilization"])
            label = "megha (paper costs)" if name == "megha-costs" else name
            out.append(f"| {w} | {label} | " + " | ".join(_fmt(x) for x in a) + f" | {_fmt(wq)} | {_fmt(j99)} | {u:.4f} |")
        sp = [_mean(res, f"B|{w}|sparrow", seeds, _pick("allocation_time", q)) for q in ("p50", "p99", "p9999")]
        mg = [_mean(res, f"B|{w}|megha", seeds, _pick("allocation_time", q)) for q in ("p50", "p99", "p9999")]
        if all(x == x for x in sp + mg) and mg[1] > 0:
            out.append(
                f"| {w} | Sparrow/Megha | {_fmt(sp[0] / mg[0])} | | {_fmt(sp[1] / mg[1])} | {_fmt(sp[2] / mg[2])} | | | | |"
            )
    return out


def _table_c(res: dict[str, dict], workloads: list[str], seeds: list[int]) -> list[str]:
    out = [
        "C. Placement relative to ideal and Megha (constraints on; JRT delay, s)",
        "",
        "| trace | scheduler | median | mean | p99 | p99 − ideal p99 | p99 / Megha p99 | util |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [
        ("ideal", "C|{}|ideal"),
        ("megha (random)", "A|{}|megha|none|random"),
        ("pigeonc (min)", "A|{}|pigeonc|none|min-constraints"),
        ("pigeon", "C|{}|pigeon"),
        ("sparrow", "C|{}|sparrow"),
        ("hawk", "C|{}|hawk"),
        ("eagle", "C|{}|eagle"),
    ]
    for tr in workloads:
        i99 = _mean(res, f"C|{tr}|ideal", seeds, lambda r: r["jrt_delay"]["p99"])
        m99 = _mean(res, f"A|{tr}|megha|none|random", seeds, lambda r: r["jrt_delay"]["p99"])
        for label, pat in rows:
            k = pat.format(tr)
            d = [_mean(res, k, seeds, _pick("jrt_delay", q)) for q in ("p50", "mean", "p99")]
            u = _mean(res, k, seeds, lambda r: r["utilization"])
            ri = d[2] - i99
            rm = d[2] / m99 if m99 > 0 else float("nan")
            out.append(f"| {tr} | {label} | {_fmt(d[0])} | {_fmt(d[1])} | {_fmt(d[2])} | {_fmt(ri)} | {_fmt(rm)} | {u:.4f} |")
    return out


def reproduce(
    out: str | os.PathLike,
    *,
    quick: bool = False,
    jobs: int = 2,
    backend: str = "local",
    address: str | None = None,
    store: str | os.PathLike | None = None,
    progress: Callable[[str], None] | None = None,
    seeds: int = 1,
    sections: str = "A,B,C",
) -> Path:
    """Run the runs of ``sections`` not yet in ``store``, write them to ``out`` (JSON) and the tables beside it (``.md``).

    The runs go through :func:`~schedlab.sweeps.runner.run_points`
    (``jobs`` processes, ``backend`` ``"local"`` or ``"ray"`` at ``address``)
    and are kept in the results store ``store`` as each finishes, so an
    interrupted call resumes where it stopped (None: nothing is kept, every run
    runs). ``out`` is not read: it is written once, at the end. ``seeds`` runs
    seeds 1..N; ``sections`` is a comma-separated subset of A, B, C.
    ``progress`` gets one line per finished run, then the tables one line at a
    time (None: silent). Returns ``out``.
    """
    out = Path(out)
    say = progress or (lambda _line: None)
    wanted = set(sections.split(","))
    workloads = ["syn_250"] if quick else WORKLOADS
    seed_list = list(range(1, seeds + 1))
    points = _plan(wanted, workloads, seed_list)
    points.sort(key=lambda p: (p.inputs["trace"] != "syn_1000", p.inputs["trace"] != "google"))  # longest first

    def tick(state: SweepProgress) -> None:
        if state.last is None:  # the sweep's start
            say(f"{state.todo} runs to do ({state.skipped} already in {store})")
            return
        rid = state.last.labels()["run"]
        res = state.last_summary
        if res is None:
            say(f"  {rid}: failed: {(state.last_error or '').splitlines()[0]}")
            return
        flag = "" if res["unfinished"] == 0 else f"  ({res['unfinished']} tasks unfinished!)"
        say(f"  {rid}: p50 {_fmt(res['jrt_delay']['p50'])} p99 {_fmt(res['jrt_delay']['p99'])} wall {res['wall']:.1f}s{flag}")

    if store is None:
        say(f"{len(points)} runs to do (no store: nothing is kept)")
    description = "; ".join(f"{k}. {PARTS[k]}" for k in sorted(wanted) if k in PARTS)
    got = run_points(points, store, name="baselines", description=description, jobs=jobs, backend=backend, address=address, progress=tick)
    results = {p.label["run"]: {"id": p.label["run"], **null_to_nan(r)} for p, r in zip(points, got, strict=True)}
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = json.dumps({"runs": sorted(results.values(), key=lambda r: r["id"])}, indent=1)
    atomic_write(out, lambda tmp: Path(tmp).write_text(doc))
    lines: list[str] = []
    if "A" in wanted:
        lines += _table_a(results, workloads, seed_list) + [""]
    if "B" in wanted:
        lines += _table_b(results, seed_list) + [""]
    if "C" in wanted:
        lines += _table_c(results, workloads, seed_list) + [""]
    unfinished = sum(r["unfinished"] for r in results.values())
    lines.append(f"{len(results)} runs; tasks unfinished over all runs: {unfinished}")
    for line in lines:
        say(line)
    md = "\n".join(lines) + "\n"
    atomic_write(out.with_suffix(".md"), lambda tmp: Path(tmp).write_text(md, encoding="utf-8"))
    return out
