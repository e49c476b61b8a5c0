"""Experiments: YAML specs, sweeps on a local pool or on Ray, a resumable results store, comparisons, reports.

Modules:

* :mod:`~schedlab.experiments.spec` — the YAML spec and its validation;
* :mod:`~schedlab.experiments.matrix` — expansion into runs, run ids (config hashes);
* :mod:`~schedlab.experiments.runner` — :func:`run_sweep` on the ``local`` pool or ``ray``;
* :mod:`~schedlab.sweeps.store` — the results folder, :func:`load_results`;
* :mod:`~schedlab.experiments.compare` — metric tables with ratios to a baseline;
* :mod:`~schedlab.experiments.plots` and :mod:`~schedlab.experiments.report` —
  the papers' figures and the Markdown/HTML report;
* :mod:`~schedlab.experiments.reproduce` — the built-in specs (``specs/*.yaml``);
* :mod:`~schedlab.experiments.catalogue` — every module's reproductions behind
  ``schedlab reproduce`` (the specs, and each module's own figures and tables).

From a notebook::

    from schedlab.experiments import load_spec, run_sweep, load_results, compare, write_report
    res = run_sweep("exp.yaml", "results/exp", jobs=2)
    df = load_results("results/exp")          # one row per run, flattened summary
    table = compare("results/exp", ["jrt_delay.p99"], baseline="megha_random")
    write_report("results/exp")
"""

from __future__ import annotations

from schedlab.lazy import lazy_exports

# Names resolve lazily so that `schedlab --help` does not import pandas or matplotlib.
_EXPORTS = {
    "ExperimentSpec": "spec",
    "LoadedSpec": "spec",
    "load_spec": "spec",
    "parse_spec": "spec",
    "Run": "matrix",
    "expand": "matrix",
    "execute_run": "runner",
    "run_sweep": "runner",
    "run_domain_sweep": "domain_sweep",
    "load_results": "results",
    "compare": "compare",
    "compare_frame": "compare",
    "Report": "report",
    "write_report": "report",
    "builtin_specs": "reproduce",
    "reproduce": "reproduce",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
