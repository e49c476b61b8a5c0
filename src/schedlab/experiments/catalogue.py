"""Every paper figure and table the project reproduces, in every module: what ``schedlab reproduce`` lists and runs.

Two kinds of entry:

* **spec** — a built-in experiment spec (``specs/NAME.yaml``) of the
  data-center engine: a resumable sweep into a results folder, then its report
  (:mod:`schedlab.experiments.reproduce`);
* **function** — a module's own reproduction: the Megha prototype beside the
  simulator (:mod:`schedlab.services.prototype`, whose ``reproduce`` takes the
  catalogue's options itself: the services sit above this layer), Megha's JRT delay in both
  profiles (:mod:`schedlab.experiments.megha_jrt_delay`), its overhead figures
  in one table (:mod:`schedlab.experiments.megha_overheads`), the baselines'
  papers (:mod:`schedlab.experiments.baselines`), DynDL's worked example,
  Figures 5–9 and MILP gaps (:mod:`schedlab.locality.experiments`), CRED's
  report (:mod:`schedlab.edge.reproduce`; Figure 4 alone: :mod:`schedlab.edge.figures`) and the grid paper's Table I and
  Figures 2–6 (:mod:`schedlab.grid.reproduce`).

Each function entry takes the same options — an output path (its default is
the folder or file under ``reports/`` that the repository's report reads),
``quick`` (a seconds-long check of the whole path, not a result), the results
store its runs are kept in (:mod:`schedlab.sweeps.store`, default
``results/<store>[-quick]``, shared by the entries of one module, so rerunning
an entry, or a sibling that needs the same runs, only runs what is missing), the
number of processes and the backend (:mod:`schedlab.sweeps.runner`), and a
callback for progress lines — and returns the report file it wrote. Modules are
imported only when their entry runs.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import InputError

Say = Callable[[str], None]


@dataclass(frozen=True)
class Options:
    """What every function entry is run with."""

    quick: bool = False
    jobs: int | None = None
    backend: str = "local"
    address: str | None = None
    store: Path | None = None  # where the runs are kept; None keeps nothing
    embedded: bool = False  # megha-prototype only: the real cluster in this process, no broker
    netns: bool = False  # megha-prototype only: the real cluster on the emulated multi-host testbed, at the paper's scale
    say: Say = field(default=lambda _line: None)


@dataclass(frozen=True)
class Reproduction:
    """One entry of the catalogue."""

    name: str
    domain: str
    paper: str
    what: str
    out: str = ""  # default output; empty for specs (their sweep picks results/NAME)
    target: str = ""  # "module:function" taking (out, options); empty for specs
    parallel: bool = False  # does --jobs (runs at once) apply?
    store: str = ""  # the results store its runs are kept in (results/STORE); empty: it keeps none

    @property
    def is_spec(self) -> bool:
        return not self.target

    def default_out(self, quick: bool) -> Path:
        """Where a run goes without ``--out``: the report's place, or ``results/NAME-quick`` for a quick check."""
        if not quick:
            return Path(self.out)
        folder = Path("results") / f"{self.name}-quick"
        return folder / Path(self.out).name if Path(self.out).suffix else folder

    def default_store(self, quick: bool) -> Path | None:
        """Where the runs go without ``--results``: ``results/STORE`` (``-quick`` for a quick check), or None."""
        if not self.store:
            return None
        return Path("results") / (f"{self.store}-quick" if quick else self.store)

    def run(self, out: str | os.PathLike | None, options: Options) -> Path:
        """Run a function entry into ``out`` (default: :meth:`default_out`) and return the report file."""
        module, _, attr = self.target.partition(":")
        fn = getattr(importlib.import_module(module), attr)
        return fn(Path(out) if out is not None else self.default_out(options.quick), options)


# The papers, as the reports name them.
_MEGHA = "Megha"
_AWARE = "Constraint-aware Megha vs PigeonC"
_DYNDL = "DynDL"
_GRID = "Bursty grid scheduling"

_FUNCTIONS = (
    Reproduction("megha-prototype", "services", _MEGHA, "Fig. 12: a real local cluster beside the simulator (allocation time, execution delay)",
                 "reports/services/megha-prototype", "schedlab.services.prototype:reproduce"),
    Reproduction("megha-twin", "services", _MEGHA, "Figs. 7, 12: the simulator calibrated on a real cluster's measured costs, predicting its allocation times",
                 "reports/twin", "schedlab.services.twin:reproduce"),
    Reproduction("megha-twin-testbed", "services", _MEGHA, "the calibrated twin with every component on an emulated host of its own (network namespaces, 0.5 ms links)",
                 "reports/twin/testbed", "schedlab.services.twin:reproduce_testbed"),
    Reproduction("megha-jrt-delay", "data center", _AWARE, "Section 6: Megha's JRT delay on syn_250/500/1000 and Google, random vs min-constraints, both profiles",
                 "reports/megha/reproduction.json", "schedlab.experiments.catalogue:_megha_jrt_delay", parallel=True, store="megha-jrt-delay"),
    Reproduction("megha-overheads", "data center", _MEGHA, "Figs. 6, 8-11 at a scale of minutes: allocation time against GM/LM counts and data-center size, fair sharing",
                 "reports/megha/paper_experiments.txt", "schedlab.experiments.catalogue:_megha_overheads"),
    Reproduction("megha-demand", "data center", _MEGHA, "Fig. 5: worker slots each workload of the Megha specs requires over time",
                 "reports/experiments/megha-demand", "schedlab.experiments.catalogue:_megha_demand"),
    Reproduction("baselines", "data center", "Pigeon, Sparrow, Eagle, Hawk", "the baselines' papers' comparisons (sections A, B, C of reports/baselines)",
                 "reports/baselines/reproduction.json", "schedlab.experiments.catalogue:_baselines", parallel=True, store="baselines"),
    Reproduction("dyndl-table2", "locality", _DYNDL, "Table 2 / Figs. 2-3: the worked example's makespans for every algorithm and the MILP optimum",
                 "reports/locality/table2.json", "schedlab.experiments.catalogue:_dyndl_table2"),
    *(
        Reproduction(f"dyndl-fig{f}", "locality", _DYNDL, what, "reports/locality", f"schedlab.experiments.catalogue:_dyndl_fig{f}", store="dyndl")
        for f, what in (
            (5, "Fig. 5: makespan and remote tasks against beta"),
            (6, "Fig. 6: makespan and remote tasks against the load skew alpha"),
            (7, "Fig. 7: makespan and remote tasks against the network factor theta"),
            (8, "Fig. 8: makespan and remote tasks against the number of tasks (HTA under a time limit)"),
            (9, "Fig. 9: running time of the offline algorithms and of DynDLOff's two phases"),
        )
    ),
    Reproduction("dyndl", "locality", _DYNDL, "Figs. 5-9 together, with summary.md", "reports/locality", "schedlab.experiments.catalogue:_dyndl_all", store="dyndl"),
    Reproduction("dyndl-sensitivity", "locality", _DYNDL, "sensitivity studies: Fig. 6 by W and online clock; DynDLOff vs the offline algorithms by beta and LIST/LTFPA reading",
                 "reports/locality", "schedlab.experiments.catalogue:_dyndl_sensitivity", parallel=True, store="dyndl"),
    Reproduction("dyndl-milp-gap", "locality", _DYNDL, "optimality gaps of every algorithm against the exact MILP on small instances",
                 "reports/locality/milp_gap.json", "schedlab.experiments.catalogue:_dyndl_gap", store="dyndl"),
    Reproduction("cred", "edge", "CRED", "Fig. 4 (also at a size the MILP solves), optimality gaps, the regime map where CRED pays, speed; with summary.md",
                 "reports/edge", "schedlab.experiments.catalogue:_cred_all", parallel=True, store="cred"),
    Reproduction("cred-fig4", "edge", "CRED", "Fig. 4: active nodes against the deadline spread and the share of early-deadline jobs",
                 "reports/edge/figure4", "schedlab.experiments.catalogue:_cred_fig4", parallel=True, store="cred"),
    Reproduction("grid", "grid", _GRID, "Table I and Figs. 2-6 together, with REPORT.md", "reports/grid", "schedlab.experiments.catalogue:_grid_all", parallel=True, store="grid"),
    Reproduction("grid-table1", "grid", _GRID, "Table I: Rand and Qlen without duplication under non-bursty, weak and strong bursty arrivals",
                 "reports/grid", "schedlab.experiments.catalogue:_grid_table1", parallel=True, store="grid"),
    Reproduction("grid-fig2", "grid", _GRID, "Fig. 2: Rand, Qlen, Util, Est.QT at delay 0 and 1 s under strong bursty arrivals",
                 "reports/grid", "schedlab.experiments.catalogue:_grid_fig2", parallel=True, store="grid"),
    Reproduction("grid-figs3-6", "grid", _GRID, "Figs. 3-6: Rand, Qlen, Hybrid-1, Hybrid-2 with 0-7 duplications under each arrival pattern",
                 "reports/grid", "schedlab.experiments.catalogue:_grid_figs", parallel=True, store="grid"),
    Reproduction("grid-full", "grid", _GRID, "at the paper's full scale: Table I (the tails) and Fig. 5 (weak bursty, 0-3 duplications: Hybrid-2's edge)",
                 "reports/grid/full", "schedlab.experiments.catalogue:_grid_full", parallel=True, store="grid"),
)


def catalogue() -> list[Reproduction]:
    """Every reproduction: the built-in specs first (data center), then the modules' own."""
    from schedlab.experiments.reproduce import builtin_specs

    specs = [Reproduction(name, "data center", _AWARE if "constraint-aware" in what else _MEGHA, what) for name, what in builtin_specs().items()]
    return [*specs, *_FUNCTIONS]


def find(name: str) -> Reproduction:
    """The entry called ``name``; an unknown name is one clear line listing the others."""
    entries = catalogue()
    for e in entries:
        if e.name == name:
            return e
    raise InputError("reproduce", f"no reproduction {name!r} (available: {', '.join(e.name for e in entries)})")


# -- the function entries: each adapts one module's reproduction to (out, options) -> report file ---------
def _megha_jrt_delay(out: Path, o: Options) -> Path:
    from schedlab.experiments.megha_jrt_delay import reproduce

    return reproduce(out, quick=o.quick, jobs=o.jobs or 2, backend=o.backend, address=o.address, store=o.store, progress=o.say)


def _megha_overheads(out: Path, o: Options) -> Path:
    from schedlab.experiments.megha_overheads import reproduce

    return reproduce(out, quick=o.quick, progress=o.say)


def _megha_demand(out: Path, o: Options) -> Path:
    from schedlab.experiments.megha_demand import write_demand

    return write_demand(out, quick=o.quick)


def _baselines(out: Path, o: Options) -> Path:
    from schedlab.experiments.baselines import reproduce

    return reproduce(out, quick=o.quick, jobs=o.jobs or 2, backend=o.backend, address=o.address, store=o.store, progress=o.say)


def _dyndl_table2(out: Path, o: Options) -> Path:
    from schedlab.locality.experiments import worked_example
    from schedlab.metrics.export import write_json

    doc = worked_example()
    write_json(out, doc)
    for row in doc["algorithms"].values():
        o.say(f"{row['label']}: makespan {row['makespan']:g}, remote tasks {row['remote_tasks']}")
    return out


def _dyndl(figures: tuple[int, ...]) -> Callable[[Path, Options], Path]:
    def run(out: Path, o: Options) -> Path:
        from schedlab.locality.experiments import reproduce_figures

        return reproduce_figures(out, figures, seeds=5, quick=o.quick, store=o.store, progress=o.say)

    return run


_dyndl_fig5, _dyndl_fig6, _dyndl_fig7, _dyndl_fig8, _dyndl_fig9 = (_dyndl((f,)) for f in (5, 6, 7, 8, 9))
_dyndl_all = _dyndl((5, 6, 7, 8, 9))


def _dyndl_sensitivity(out: Path, o: Options) -> Path:
    from schedlab.locality.sensitivity import reproduce

    return reproduce(out, quick=o.quick, store=o.store, jobs=o.jobs or 2, progress=o.say)


def _dyndl_gap(out: Path, o: Options) -> Path:
    from schedlab.locality.experiments import milp_gaps
    from schedlab.metrics.export import write_json

    res = milp_gaps(5 if o.quick else 100, 0, store=o.store)
    write_json(out, res)
    for a, g in res["gaps"].items():
        o.say(f"{a}: mean gap {g['mean_gap_percent']:.2f} %, max {g['max_gap_percent']:.2f} %, optimal {g['optimal']}/{g['instances']}")
    return out


def _cred_fig4(out: Path, o: Options) -> Path:
    from schedlab.edge.figures import SweepSpec, figure4

    spec = SweepSpec(seeds=1, jobs=20, chunks=40) if o.quick else SweepSpec()
    summary = figure4(spec, out, store=o.store, jobs=o.jobs or 2, backend=o.backend, address=o.address)
    o.say(f"wrote {', '.join(summary['files'])} and figure4.json to {out}")
    return out / "figure4.json"


def _cred_all(out: Path, o: Options) -> Path:
    from schedlab.edge.reproduce import reproduce

    return reproduce(out, quick=o.quick, store=o.store, jobs=o.jobs or 2, backend=o.backend, address=o.address, progress=o.say)


def _grid(only: tuple[str, ...] | None) -> Callable[[Path, Options], Path]:
    def run(out: Path, o: Options) -> Path:
        from schedlab.grid.reproduce import QUICK, reproduce

        kw: dict[str, Any] = dict(QUICK) if o.quick else {}
        return reproduce(out, jobs=o.jobs or 2, backend=o.backend, address=o.address, store=o.store, only=only, progress=o.say, **kw)

    return run


_grid_all = _grid(None)
_grid_table1 = _grid(("table1",))
_grid_fig2 = _grid(("fig2",))
_grid_figs = _grid(("figs",))


def _grid_full(out: Path, o: Options) -> Path:
    """Table I and Figure 5 at the paper's size (100,000 jobs per stream): the two discrepancies the 0.1 scale
    left open — thinner tails, and Hybrid-2's edge under weak bursts — re-examined where the paper ran them."""
    from schedlab.grid.reproduce import QUICK, reproduce

    kw: dict[str, Any] = dict(QUICK) if o.quick else {"scale": 1.0}
    return reproduce(out, jobs=o.jobs or 2, backend=o.backend, address=o.address, store=o.store, only=("table1", "figs"),
                     progress=o.say, figs=("fig5",), duplications=(0, 1, 2, 3), title="schedlab reproduce grid-full", **kw)
