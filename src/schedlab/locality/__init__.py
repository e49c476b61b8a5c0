"""DynDL: data-locality-aware task scheduling with dynamic data-transfer costs (Jin et al., Appl. Sci. 2018, 8, 2216).

Modules, by paper section:

* :mod:`~schedlab.locality.model` — the model of Section 3 (servers, cores,
  replica sets, remote-cost functions ``g_s(n)``, assignments) and the
  evaluator that recomputes any assignment's costs, loads and makespan;
* :mod:`~schedlab.locality.instances` — Table 2, the generator of Section
  6.1.1 and the JSON instance format;
* :mod:`~schedlab.locality.dyndloff` — DynDLOff (Section 5: Phase I cost-reducing
  paths, Phase II deadline binary search with Theorem 1's bounds and max-min);
* :mod:`~schedlab.locality.online` — the event-driven online run with DynDLOn
  (Algorithm 1), Hadoop's default, DELAY and LTFPA (Sections 4 and 6.1.1);
* :mod:`~schedlab.locality.baselines` — LIST, HTA and BAR (Section 6.1.1);
* :mod:`~schedlab.locality.milp` — the exact MILP for optimality gaps;
* :mod:`~schedlab.locality.algorithms` — the registry and :func:`run_algorithm`;
* :mod:`~schedlab.locality.experiments` — Figures 5-9 and MILP gaps;
* :mod:`~schedlab.locality.sensitivity` — what the claims that do not reproduce depend on (Fig. 6 by
  W and clock; DynDLOff against the offline algorithms by beta and reading);
* :mod:`~schedlab.locality.cli` — ``schedlab locality solve|compare|sweep|gap|generate``.

Quick use::

    from schedlab.locality import generate, run_algorithm, evaluate
    inst = generate(tasks=100, servers=50, core_num=40, beta=10_000, seed=1)
    r = run_algorithm("dyndloff", inst)
    assert evaluate(inst, r.assignment).makespan == r.makespan
"""

from __future__ import annotations

from schedlab.lazy import lazy_exports

# Names resolve lazily so that `schedlab --help` (which imports the locality CLI) stays free of numpy.
_EXPORTS = {
    "ALGORITHMS": "algorithms",
    "PAPER_ALGORITHMS": "algorithms",
    "run_algorithm": "algorithms",
    "generate": "instances",
    "instance_from_dict": "instances",
    "instance_to_dict": "instances",
    "load_instance": "instances",
    "table2_instance": "instances",
    "Assignment": "model",
    "CallableCost": "model",
    "CostFunction": "model",
    "Evaluation": "model",
    "LinearCost": "model",
    "LocalityInstance": "model",
    "LocalitySchedule": "model",
    "TableCost": "model",
    "evaluate": "model",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
