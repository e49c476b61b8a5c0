"""Constraint-aware Megha against PigeonC: the paper's numbers, Findings 1–5 and its stated claims, checked from the runs.

Constraint-aware paper ("Constraint-Aware Federated Scheduling for Data Center
Workloads", Thiyyakat et al., IoT 2023), Sections 6–8 and Table 2. The runs are
those of two built-in specs: ``megha-vs-pigeonc`` (both schedulers as the paper
describes them) and ``megha-vs-pigeonc-authors`` (as the authors' simulators
behave, ``compat: authors``), each on syn_250/500/1000, the Google sub-trace and
``yahoo-like``, the stand-in for the Yahoo trace we do not have. One analysis
reads both stores (siblings under ``results/``; a profile whose store is absent
is left out and said so) and writes ``claims.json`` (every number) and
``claims.md`` (tables and verdicts), and each store's report (``schedlab
report``: Table 1, Figures 2/4, 6–10 and the inconsistencies over time) into
``faithful/`` and ``authors/`` beside them, whichever spec ran last.

Every value is the mean over the store's seeds, as the paper reports "the
average values of the delays reported in the three runs"; maxima are over
seeds. A job is short as in the summary (trace mean task duration below
:data:`~schedlab.defaults.SHORT_JOB_CUTOFF`, 90.5811 s). Where the paper's
words are not numbers, the thresholds are stated in the claim:

* "an order of magnitude" is a ratio of at least 10; "3 to 6 orders of
  magnitude" is log10(p99 / p50) in [3, 6];
* "Megha's delays below 1.5 × 10⁴ s" is the largest JRT delay of any Megha run;
* "higher utilization" is a larger mean utilization (seeds and both choices
  averaged, as the paper's Figure 9);
* Findings 4 and 5 compare p99s under the two choices on the highest-load
  workload (``yahoo-like`` for Yahoo): the better choice's p99 must be lower;
* a factor claim (short-job p99 5.61× on Yahoo, 5.3× on Google) "holds" when
  the measured factor is within a factor of 2 of the paper's, "direction only"
  when Megha is better by another factor, "no" otherwise.

Figure 5's conflicts per second: the paper counts, from the workload alone,
tasks per second that would contend for the same workers; we report what the
scheduler met instead — Megha's inconsistencies (requests an LM rejected) per
second per GM, from the runs' ``inconsistencies`` tables (PigeonC's masters know
their groups exactly and have none).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from schedlab.atomic import all_or_nothing, atomic_write
from schedlab.metrics.export import pipe_table, write_json

__all__ = ["PAPER_P50", "analyse", "write_analysis", "write_analysis_from_authors"]

FAITHFUL_STORE = "megha-vs-pigeonc"
AUTHORS_STORE = "megha-vs-pigeonc-authors"
PROFILES = {"faithful": "paper-faithful (`megha-vs-pigeonc`)", "authors": "authors' simulators (`megha-vs-pigeonc-authors`)"}
CHOICES = ("random", "min-constraints")
HIGHEST_LOAD = "yahoo-like"  # stands in for the Yahoo trace
ORDER = 10.0
ORDERS = (3.0, 6.0)
MEGHA_MAX = 1.5e4
FACTOR_BAND = 2.0
# The paper's medians (Section 6), s; "yahoo-like" stands in for Yahoo.
PAPER_P50: dict[tuple[str, str], dict[str, float]] = {
    ("pigeonc", "random"): {"syn_250": 1.003, "syn_500": 507.74, "syn_1000": 1416.88, "google": 0.0015, HIGHEST_LOAD: 1281.3},
    ("pigeonc", "min-constraints"): {"syn_250": 1.002, "syn_500": 520.60, "syn_1000": 1449.3, "google": 0.0015, HIGHEST_LOAD: 1161.86},
    ("megha", "random"): {"syn_250": 0.0015, "syn_500": 0.0015, "syn_1000": 0.67, "google": 0.0015, HIGHEST_LOAD: 0.0015},
    ("megha", "min-constraints"): {"syn_250": 0.0015, "syn_500": 0.0015, "syn_1000": 0.33, "google": 0.0015, HIGHEST_LOAD: 0.0015},
}
PAPER_SHORT_P99_FACTOR = {HIGHEST_LOAD: 5.61, "google": 5.3}
METRICS = ("jrt_delay.p50", "jrt_delay.mean", "jrt_delay.p99", "jrt_delay.max", "jrt_delay_short.p99", "jrt_delay_short.count",
           "jrt_delay_long.p99", "utilization.mean", "counters.inconsistencies", "wall_seconds")


def _cells(df: Any) -> dict[tuple[str, str, str], dict[str, float]]:
    """(workload, scheduler family, choice) -> means over seeds of :data:`METRICS` (``max``: over seeds)."""
    out: dict[tuple[str, str, str], dict[str, float]] = {}
    if df.empty:
        return out
    for (wl, label), g in df.groupby(["workload", "scheduler"], sort=False):
        fam, _, choice = str(label).partition("_")
        row = {m: float(g[m].mean()) for m in METRICS if m in g.columns}
        row["seeds"] = len(g)
        if "jrt_delay.max" in g.columns:
            row["jrt_delay.max"] = float(g["jrt_delay.max"].max())
        out[(str(wl), fam, choice)] = row
    return out


def _s(x: float) -> str:
    if x != x:
        return "–"
    if x == 0:
        return "0"
    if abs(x) < 1:
        return f"{x * 1e3:.3g} ms"
    return f"{x:.4g} s" if abs(x) < 1e4 else f"{x:.3g} s"


def _yes(v: bool) -> str:
    return "yes" if v else "no"


def _claims(cells: dict[tuple[str, str, str], dict[str, float]], where: str) -> list[dict[str, str]]:
    wls = list(dict.fromkeys(k[0] for k in cells))
    got = lambda wl, fam, ch, m: cells.get((wl, fam, ch), {}).get(m, math.nan)  # noqa: E731
    claims: list[dict[str, str]] = []

    def add(claim: str, paper: str, measured: str, holds: str) -> None:
        claims.append({"profile": where, "claim": claim, "paper": paper, "measured": measured, "holds": holds})

    # Finding 1: medians an order of magnitude apart; Megha's delays below 1.5e4 s
    for wl in wls:
        for ch in CHOICES:
            m, p = got(wl, "megha", ch, "jrt_delay.p50"), got(wl, "pigeonc", ch, "jrt_delay.p50")
            if m == m and p == p:
                r = p / m if m > 0 else math.inf
                add(f"Finding 1: Megha's median JRT delay at least {ORDER:g}x below PigeonC's ({wl}, {ch})",
                    f"PigeonC {_s(PAPER_P50[('pigeonc', ch)].get(wl, math.nan))}, Megha {_s(PAPER_P50[('megha', ch)].get(wl, math.nan))}",
                    f"PigeonC {_s(p)}, Megha {_s(m)} ({r:.3g}x)", _yes(r >= ORDER))
    mx = [(got(wl, "megha", ch, "jrt_delay.max"), wl, ch) for wl in wls for ch in CHOICES]
    mx = [t for t in mx if t[0] == t[0]]
    if mx:
        top = max(mx)
        add("Finding 1: Megha's JRT delays below 1.5 x 10^4 s (largest of any Megha run)", "< 1.5e4 s",
            f"{_s(top[0])} ({top[1]}, {top[2]})", _yes(top[0] < MEGHA_MAX))
    px = [(got(wl, "pigeonc", ch, "jrt_delay.max"), wl, ch) for wl in wls for ch in CHOICES]
    px = [t for t in px if t[0] == t[0]]
    if px:
        top = max(px)
        add("Finding 1: PigeonC's delays reach the order of 10^6 s (largest, >= 10^5.5 s)", "ms to ~1e6 s",
            f"{_s(top[0])} ({top[1]}, {top[2]})", _yes(top[0] >= 10**5.5))
    # Finding 2: p99 3-6 orders above the median; medians within 700 ms (Megha) and ~3000 s (PigeonC)
    for fam in ("megha", "pigeonc"):
        spans = []
        for wl in wls:
            for ch in CHOICES:
                p50, p99 = got(wl, fam, ch, "jrt_delay.p50"), got(wl, fam, ch, "jrt_delay.p99")
                if p50 == p50 and p99 == p99 and p50 > 0:
                    spans.append((math.log10(p99 / p50) if p99 > 0 else -math.inf, wl, ch))
        if spans:
            inside = [s for s in spans if ORDERS[0] <= s[0] <= ORDERS[1]]
            add(f"Finding 2: {fam}'s p99 3 to 6 orders of magnitude above its median, consistently",
                "3-6 orders", f"{len(inside)} of {len(spans)} cells; orders "
                + ", ".join(f"{wl}/{ch[:3]} {o:.1f}" for o, wl, ch in spans), _yes(len(inside) == len(spans)))
        meds = [(got(wl, fam, ch, "jrt_delay.p50"), wl, ch) for wl in wls for ch in CHOICES]
        meds = [t for t in meds if t[0] == t[0]]
        if meds:
            top = max(meds)
            limit, paper_limit = (0.7, "700 ms") if fam == "megha" else (4500.0, "~3000 s (read as <= 4500 s)")
            add(f"Finding 2: {fam}'s median within {paper_limit} (largest median)", f"<= {paper_limit}",
                f"{_s(top[0])} ({top[1]}, {top[2]})", _yes(top[0] <= limit))
    # Finding 3: higher utilization for Megha on every workload
    for wl in wls:
        mu = [got(wl, "megha", ch, "utilization.mean") for ch in CHOICES]
        pu = [got(wl, "pigeonc", ch, "utilization.mean") for ch in CHOICES]
        mu, pu = [x for x in mu if x == x], [x for x in pu if x == x]
        if mu and pu:
            m, p = sum(mu) / len(mu), sum(pu) / len(pu)
            add(f"Finding 3: Megha's mean utilization above PigeonC's ({wl})", "Figure 9: PigeonC / Megha < 1",
                f"Megha {m:.4f}, PigeonC {p:.4f} (PigeonC / Megha {p / m:.4f})", _yes(m > p))
    # Findings 4 and 5: the choices on the highest load
    for fam, better, worse, paper in (("megha", "random", "min-constraints", "Finding 4: Yahoo p99 1.29x lower with Random"),
                                      ("pigeonc", "min-constraints", "random", "Finding 5: Yahoo p99 1.1x lower with Min. Constraints")):
        b, w = got(HIGHEST_LOAD, fam, better, "jrt_delay.p99"), got(HIGHEST_LOAD, fam, worse, "jrt_delay.p99")
        if b == b and w == w:
            add(f"{paper.split(':')[0]}: {fam} p99 lower with {better} on the highest load ({HIGHEST_LOAD})", paper,
                f"{better} {_s(b)}, {worse} {_s(w)} ({worse} / {better} = {w / b:.3g}x)", _yes(b < w))
    # Conclusions: Megha p99 at least 10x below PigeonC's
    for wl in wls:
        for ch in CHOICES:
            m, p = got(wl, "megha", ch, "jrt_delay.p99"), got(wl, "pigeonc", ch, "jrt_delay.p99")
            if m == m and p == p:
                r = p / m if m > 0 else math.inf
                add(f"Conclusions: Megha's p99 at least {ORDER:g}x below PigeonC's ({wl}, {ch})", ">= 10x",
                    f"PigeonC {_s(p)}, Megha {_s(m)} ({r:.3g}x)", _yes(r >= ORDER))
    # Section 6: short jobs' p99
    for wl, factor in PAPER_SHORT_P99_FACTOR.items():
        for ch in CHOICES:
            m, p = got(wl, "megha", ch, "jrt_delay_short.p99"), got(wl, "pigeonc", ch, "jrt_delay_short.p99")
            n = got(wl, "megha", ch, "jrt_delay_short.count")
            if m == m and p == p:
                r = p / m if m > 0 else math.inf
                verdict = "yes" if factor / FACTOR_BAND <= r <= factor * FACTOR_BAND else "direction only" if r > 1 else "no"
                add(f"Section 6: Megha's short-job p99 {factor:g}x below PigeonC's ({wl}, {ch}; {n:.0f} short jobs)",
                    f"{factor:g}x", f"PigeonC {_s(p)}, Megha {_s(m)} ({r:.3g}x)", verdict)
            elif wl in {k[0] for k in cells}:
                add(f"Section 6: Megha's short-job p99 {factor:g}x below PigeonC's ({wl}, {ch})", f"{factor:g}x",
                    "no short jobs completed", "not measurable")
    return claims


def _count(x: float) -> str:
    return "–" if x != x else f"{x:,.0f}"


def _medians(cells: dict[tuple[str, str, str], dict[str, float]]) -> list[list[str]]:
    rows = []
    for (wl, fam, ch), r in cells.items():
        paper = PAPER_P50.get((fam, ch), {}).get(wl, math.nan)
        rows.append([wl, f"{fam}_{ch}", f"{r['seeds']:.0f}", _s(paper), _s(r["jrt_delay.p50"]), _s(r["jrt_delay.mean"]),
                     _s(r["jrt_delay.p99"]), _s(r["jrt_delay.max"]), _s(r.get("jrt_delay_short.p99", math.nan)),
                     _s(r.get("jrt_delay_long.p99", math.nan)), f"{r['utilization.mean']:.4f}",
                     _count(r.get("counters.inconsistencies", math.nan)), f"{r.get('wall_seconds', math.nan):.0f}"])
    return rows


def conflicts(root: str | os.PathLike) -> list[dict[str, Any]]:
    """Figure 5, as the scheduler meets it: per Megha run's workload and choice, inconsistencies per second per GM
    (mean over the seconds of the run's span and the GMs, and the busiest GM-second), lowest seed."""
    import pandas as pd

    from schedlab.experiments.results import load_results
    from schedlab.sweeps.store import Store

    df = load_results(root)
    if df.empty:
        return []
    store = Store(root)
    out = []
    for (wl, label), g in df[df["scheduler_name"] == "megha"].groupby(["workload", "scheduler"], sort=False):
        run = g.sort_values("seed").iloc[0]
        t = store.table(run["id"], "inconsistencies")
        if t is None:
            continue
        u = store.table(run["id"], "utilization", ["time"])
        span = max(len(u), 1) if u is not None else max(int(t["time"].max() - t["time"].min()) + 1, 1) if len(t) else 1
        gms = int(t["gm"].max()) + 1 if len(t) else 1
        total = float(t["inconsistencies"].sum()) if len(t) else 0.0
        busiest = pd.Series(t["inconsistencies"]).max() if len(t) else 0
        out.append({"workload": wl, "variant": label, "seed": int(run["seed"]), "inconsistencies": total,
                    "per_second_per_gm": total / span / gms, "seconds_with_any": int(t["time"].nunique()) if len(t) else 0,
                    "busiest_gm_second": int(busiest)})
    return out


def analyse(faithful: str | os.PathLike, authors: str | os.PathLike) -> dict[str, Any]:
    """Cells, claims and Figure 5's table of each profile whose store exists."""
    from schedlab.experiments.results import load_results

    doc: dict[str, Any] = {"profiles": {}, "claims": [], "missing": []}
    for prof, path in (("faithful", Path(faithful)), ("authors", Path(authors))):
        if not (path / "experiment.json").is_file():
            doc["missing"].append(f"{PROFILES[prof]}: no results at {path}")
            continue
        df = load_results(path)
        cells = _cells(df)
        doc["profiles"][prof] = {"store": str(path), "unfinished": df.attrs.get("unfinished", 0),
                                 "cells": [{"workload": k[0], "scheduler": k[1], "choice": k[2], **v} for k, v in cells.items()],
                                 "conflicts": conflicts(path)}
        doc["claims"] += _claims(cells, prof)
    return doc


def markdown(doc: dict[str, Any]) -> str:
    lines = ["# Constraint-aware Megha vs PigeonC: the paper's numbers, findings and claims, checked", "",
             "Computed from the runs of `schedlab reproduce megha-vs-pigeonc` and `schedlab reproduce megha-vs-pigeonc-authors` "
             "(`schedlab.experiments.megha_vs_pigeonc`; thresholds in its docstring). Means over seeds; max over seeds. "
             "`yahoo-like` stands in for the Yahoo trace.", ""]
    for m in doc["missing"]:
        lines.append(f"- not included: {m}")
    if doc["missing"]:
        lines.append("")
    lines += ["## Claims", "", pipe_table(["profile", "claim", "paper", "measured", "holds?"],
                                          ([c["profile"], c["claim"], c["paper"], c["measured"], c["holds"]] for c in doc["claims"])), ""]
    for prof, p in doc["profiles"].items():
        cells = {(c["workload"], c["scheduler"], c["choice"]): c for c in p["cells"]}
        lines += [f"## JRT delay, utilization and inconsistencies — {PROFILES[prof]}", "",
                  f"Unfinished runs: {p['unfinished']}. `paper p50`: the paper's median (Section 6).", "",
                  pipe_table(["workload", "variant", "seeds", "paper p50", "p50", "mean", "p99", "max", "short p99", "long p99",
                              "util. mean", "inconsistencies", "wall s"], _medians(cells)), ""]
        if p["conflicts"]:
            lines += ["Figure 5 as the scheduler meets it — Megha's inconsistencies per second per GM (lowest seed):", "",
                      pipe_table(["workload", "variant", "seed", "inconsistencies", "per second per GM", "seconds with any",
                                  "busiest GM-second"],
                                 ([c["workload"], c["variant"], c["seed"], f"{c['inconsistencies']:.0f}", f"{c['per_second_per_gm']:.3g}",
                                   c["seconds_with_any"], c["busiest_gm_second"]] for c in p["conflicts"])), ""]
    return "\n".join(lines)


def write_analysis(root: str | os.PathLike, out_dir: str | os.PathLike, *, authors: str | os.PathLike | None = None) -> Path:
    """``claims.json``, ``claims.md`` and each profile's report (``faithful/``, ``authors/``) in ``out_dir``, from the
    paper-faithful store ``root`` and the authors' store (default: its sibling ``megha-vs-pigeonc-authors…``),
    from the stores alone (the same whether runs ran now or were resumed)."""
    from schedlab.experiments.report import write_report

    root = Path(root)
    if authors is None:
        authors = root.parent / (AUTHORS_STORE + root.name.removeprefix(FAITHFUL_STORE))
    doc = analyse(root, authors)
    out = Path(out_dir)
    for prof, p in doc["profiles"].items():
        write_report(p["store"], out / prof)
    with all_or_nothing():
        write_json(out / "claims.json", doc)
        path = atomic_write(out / "claims.md", lambda tmp: Path(tmp).write_text(markdown(doc), encoding="utf-8"))
    return path


def write_analysis_from_authors(root: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """:func:`write_analysis` when the authors' spec ran last: ``root`` is its store, the paper-faithful one its sibling."""
    root = Path(root)
    return write_analysis(root.parent / (FAITHFUL_STORE + root.name.removeprefix(AUTHORS_STORE)), out_dir, authors=root)
