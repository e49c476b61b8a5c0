"""``schedlab reproduce NAME``: run a built-in spec (``specs/NAME.yaml``) and write the report of its paper figures.

Each built-in spec's ``description`` says which figures and tables it
regenerates, what stands in for what the papers used and we do not have (the
Yahoo, google_19, alibaba and cloudera traces), and the papers' own numbers
to read the report against. ``--quick`` applies the spec's ``quick`` section:
the first few jobs of each workload on small data centers with one seed, to
check the whole path in seconds (CI), not to draw conclusions.

Before anything runs, every scheduler the spec names must be available here
(a spec may name one from a plugin package that is not installed); otherwise
one line says which.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from schedlab.errors import InputError
from schedlab.experiments.spec import LoadedSpec, parse_spec
from schedlab.schedulers import registry

# A built-in spec whose paper claims are checked from its runs: the analysis (module:function(root, out_dir))
# and where its summary goes for a full run (a quick run or another --out puts it in the results folder).
ANALYSES = {
    "megha-worker-choice": ("schedlab.experiments.worker_choice:write_analysis", "reports/worker-choice"),
    "megha-choice-departures": ("schedlab.experiments.worker_choice:write_departures_analysis", "reports/worker-choice"),
    "megha-authors-tail": ("schedlab.experiments.authors_tail:write_analysis", "reports/megha"),
    "megha-vs-sparrow": ("schedlab.experiments.megha_paper:write_vs_sparrow", "reports/experiments/megha-vs-sparrow"),
    "megha-cluster-size": ("schedlab.experiments.megha_paper:write_cluster_size", "reports/experiments/megha-cluster-size"),
    "megha-gm-lm": ("schedlab.experiments.megha_paper:write_gm_lm", "reports/experiments/megha-gm-lm"),
    "megha-costs": ("schedlab.experiments.megha_paper:write_costs", "reports/experiments/megha-costs"),
    "megha-updates-ablation": ("schedlab.experiments.megha_updates_ablation:write_analysis", "reports/megha-updates-ablation"),
    # one analysis of both profiles' stores (siblings under results/), whichever of the two ran last
    "megha-vs-pigeonc": ("schedlab.experiments.megha_vs_pigeonc:write_analysis", "reports/megha-vs-pigeonc"),
    "megha-vs-pigeonc-authors": ("schedlab.experiments.megha_vs_pigeonc:write_analysis_from_authors", "reports/megha-vs-pigeonc"),
}


def builtin_specs() -> dict[str, str]:
    """Name → first line of the description, for every built-in spec."""

    out = {}
    for p in sorted(_spec_dir().iterdir(), key=lambda p: p.name.removesuffix(".yaml")):
        if p.name.endswith(".yaml"):
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
            out[p.name.removesuffix(".yaml")] = str(data.get("description", "")).strip().splitlines()[0]
    return out


def _spec_dir() -> Any:
    return resources.files("schedlab.experiments") / "specs"


def load_builtin(name: str, *, quick: bool = False) -> LoadedSpec:
    """A built-in spec by name (with its quick section applied if asked)."""
    names = builtin_specs()
    if name not in names:
        raise InputError("reproduce", f"no built-in spec {name!r} (available: {', '.join(names)})")
    p = _spec_dir() / f"{name}.yaml"
    ls = parse_spec(p.read_text(encoding="utf-8"), f"{name}.yaml", quick=quick)
    if quick:
        ls.spec.name = f"{ls.spec.name}-quick"
        ls.spec.description = f"**Quick run** (`--quick`): the first jobs only, small data centers, one seed — a check of the whole path, not a result.\n\n{ls.spec.description}"
    return ls


def check_schedulers(ls: LoadedSpec, what: str) -> None:
    """One clear line when the spec names a scheduler this installation does not have."""

    have = registry.available()
    missing = [s.name for s in ls.spec.schedulers if s.name not in have]
    if missing:
        raise InputError(
            what,
            f"needs scheduler{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in dict.fromkeys(missing))}, "
            f"not available here (available: {', '.join(have)})",
        )


def reproduce(
    name: str,
    out: str | os.PathLike | None = None,
    *,
    quick: bool = False,
    jobs: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: Callable[[Any], None] | None = None,
    paper_traces: str | os.PathLike | None = None,
    seeds: int | None = None,
) -> tuple[Any, Any]:
    """Sweep the built-in spec ``name`` into ``out`` (default ``results/NAME[-quick]``) and write its report.

    ``paper_traces``: a folder of the Megha paper's samples (``trace megha-samples``) to run instead of the
    stand-ins (:func:`~schedlab.experiments.megha_workloads.with_paper_traces`; default output
    ``results/NAME[-quick]-paper``, its analysis beside it). ``seeds``: only the spec's first that many seeds (run
    ids do not depend on it, so a later run with more seeds adds only the missing runs). Returns
    ``(SweepResult, Report)``; the report is written even when some runs failed.
    """
    # listing the specs needs neither pandas nor matplotlib
    from schedlab.experiments.report import write_report
    from schedlab.experiments.runner import run_sweep

    ls = load_builtin(name, quick=quick)
    if paper_traces is not None:
        from schedlab.experiments.megha_workloads import with_paper_traces

        ls = with_paper_traces(ls, paper_traces, quick=quick)
    if seeds is not None:
        ls.spec.seeds = ls.spec.seed_list[:seeds]
    check_schedulers(ls, f"reproduce {name}")
    root = Path(out) if out is not None else Path("results") / ls.spec.name
    result = run_sweep(ls, root, jobs=jobs, backend=backend, address=address, progress=progress)
    report = write_report(root) if result.ran or result.skipped else None
    analysis = ANALYSES.get(name)
    if analysis is not None and (result.ran or result.skipped):
        module, _, fn = analysis[0].partition(":")
        dest = Path(analysis[1]) if out is None and not quick and paper_traces is None else root / "analysis"
        getattr(importlib.import_module(module), fn)(root, dest)
    return result, report
