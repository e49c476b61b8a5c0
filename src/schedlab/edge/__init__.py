"""CRED: edge-cloud right-sizing with execution deadlines and data locality.

Implements the course project report "Placement and Scheduling Data Intensive
Jobs in Edge-Cloud System" (CS 528, IIT Guwahati), after Xu, Alamro, Lan and
Subramaniam, "CRED: Cloud Right-Sizing with Execution Deadlines and Data
Locality", IEEE TPDS 28(12), 2017. Jobs arrive at t = 0; job
j needs each chunk of C_j processed once (a unit-time task) by its deadline d_j;
nodes store at most B chunks and run S VMs; chunks are placed (replicas allowed)
before execution and never moved; at most one VM of a node reads a given chunk
in a slot. Minimise the number of active nodes.

Modules, bottom up:

* :mod:`~schedlab.edge.instance` — the instance model and JSON format, deadline classes and F_{c,i};
* :mod:`~schedlab.edge.generate` — random instances with overlapping chunk sets;
* :mod:`~schedlab.edge.solution` — a full solution: placement + slot-by-slot schedule (JSON too);
* :mod:`~schedlab.edge.verify` — checks any solution rule by rule;
* :mod:`~schedlab.edge.plan` — per-node interval capacity shared by the algorithms, and the
  exact conversion into a slot schedule (McNaughton wrap-around + EDF matching);
* :mod:`~schedlab.edge.cred` — CRED-S and CRED-M (and CRED-S per deadline, without reuse);
* :mod:`~schedlab.edge.baselines` — first-fit;
* :mod:`~schedlab.edge.bounds` — lower bounds; :mod:`~schedlab.edge.milp` — the exact optimum;
* :mod:`~schedlab.edge.compare` — run by name, verify, compare; :mod:`~schedlab.edge.figures` — Figure 4;
* :mod:`~schedlab.edge.defaults` — the default instance and Figure 4 sweep (in the regime where CRED pays);
* :mod:`~schedlab.edge.reproduce` — the report in ``reports/edge`` (``schedlab reproduce cred``);
* :mod:`~schedlab.edge.cli` — ``schedlab edge generate|solve|verify|compare|figure4``.

Readings taken where the report is unclear (details in each module):

1. *Slots.* Slot t is [t, t+1); a task in slot t meets deadline d iff t < d.
2. *Demand.* F_{c,i} = number of class-i jobs needing chunk c ("required time
   slots" of c for d↑_i); a job's tasks may run on any nodes in parallel; spare
   slots before an earlier deadline may serve later classes.
3. *One VM per chunk per slot on a node* caps what one node gives a chunk before
   d at d slots (the report's min(required, deadline)); more needs replicas.
4. *Active node* = stores a chunk and runs a task; N caps the nodes a solution
   may use (a schedule needing more is reported infeasible, not truncated).
5. *CRED-S* follows the report's prose where its pseudocode is garbled; *CRED-M*
   reuses (1) chunks already placed, for the current and all later deadlines,
   (2) spare storage and slots of active nodes, then (3) opens nodes by CRED-S.
6. *Placement timing.* Solutions carry ``placed_at`` / ``removed_at`` per copy so
   that "placed before execution, never moved" is a checked rule.
"""

from __future__ import annotations

from schedlab.lazy import lazy_exports

# Exports are loaded on first use: `schedlab edge …` and `import schedlab.cli` must not pay for
# scipy (the MILP) or pandas when they are not needed. The functions `verify` and `compare` are
# not re-exported: they share their modules' names, which the import system binds on the package.
_EXPORTS = {
    "ALGORITHMS": "compare",
    "EdgeRun": "compare",
    "run_algorithm": "compare",
    "cred_m": "cred",
    "cred_s": "cred",
    "cred_s_per_deadline": "cred",
    "first_fit": "baselines",
    "generate_instance": "generate",
    "EdgeInstance": "instance",
    "load_instance": "instance",
    "lower_bound": "bounds",
    "lower_bounds": "bounds",
    "solve_milp": "milp",
    "Solution": "solution",
    "load_solution": "solution",
    "Verdict": "verify",
}
__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
