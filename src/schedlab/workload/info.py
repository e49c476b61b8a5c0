"""``schedlab trace info``: a trace's size, durations, load and per-constraint load, as one report dict.

Load figures need a data-center size: ``workers`` (machine-constraint supply is
then the expected count, ``workers × frequency``, from sharma_constraints.json)
or a ``config`` (exact supply from its workers). Task constraints are drawn
exactly as in a simulation (constraint seed 42 by default), so the
per-constraint load is the one the schedulers face (constraint-aware paper,
Figures 2–4).

``trace`` may also be an iterable of jobs (a generated workload, the first N
jobs of a trace), taken as they are: no conventions are applied to them.

A trace that carries more than durations (a columnar trace: requests,
constraints, users, priorities) also gets their statistics: per resource the
requests' distribution and how many tasks state one; how many tasks are
constrained, by how many constraints, with which operators and on which
attributes (the ten most used); the number of users and the busiest ones;
tasks per priority.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from schedlab.cluster.bitsets import NUM_CONSTRAINTS, ConstraintBitsets
from schedlab.cluster.config import load_config
from schedlab.cluster.generate import machine_constraint_percent
from schedlab.cluster.machines import ConstraintCatalog, Machines, Predicate, read_machines
from schedlab.errors import InputError
from schedlab.workload.constraints import PAPER_CONSTRAINT_SEED, TaskConstraintSampler
from schedlab.workload.stats import (
    WorkloadArrays,
    distribution,
    load_summary,
    per_constraint_load,
    per_second_load,
    workload_summary,
)
from schedlab.workload.trace import (
    Constraint,
    TraceConventions,
    TraceJob,
    read_trace,
    request_resources,
)


def trace_report(
    trace: str | os.PathLike | Iterable[TraceJob],
    *,
    label: str | None = None,
    workers: int | None = None,
    config: str | None = None,
    constraints: bool = True,
    constraint_seed: int = PAPER_CONSTRAINT_SEED,
    conventions: TraceConventions | None = None,
    plot: str | os.PathLike | None = None,
    machines: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """The trace's report; with ``plot``, also a PNG of its load over time, requests and constraints; with
    ``machines`` (a machines file), the trace's own constraints against those machines."""
    extras = _Extras()
    if isinstance(trace, str | os.PathLike):
        extras.resources = request_resources(trace)
        w = WorkloadArrays.from_jobs(extras.tap(read_trace(trace, conventions)))
        label = label or str(trace)
    else:
        w = WorkloadArrays.from_jobs(extras.tap(trace))
    if len(w.task_duration) == 0:
        raise InputError(label or "trace", "the trace has no jobs")
    report: dict[str, Any] = {"trace": label or "custom", "workload": workload_summary(w)}
    report.update(extras.summary(len(w.task_duration)))
    if plot is not None:
        plot_trace(w, extras, report, plot)
    if machines is not None:
        if config is not None:
            raise InputError("--machines", "give a config or a machines file, not both")
        m = read_machines(machines)
        if workers is not None and workers != m.n:
            raise InputError("--workers", f"{workers} workers requested but the machines file {machines} has {m.n}")
        workers = m.n
        report["machines"] = machines_report(m, extras.constraint_sets, extras.task_set, w)
        constraints = False  # the trace's own constraints replace the synthesised ones
    supply = None
    if config is not None:
        cl = load_config(config)
        if workers is not None and workers != cl.n:
            raise InputError("--workers", f"{workers} workers requested but config {config} has {cl.n}")
        workers = cl.n
        supply = [sum(1 for m in cl.machine_masks if m >> c & 1) for c in range(NUM_CONSTRAINTS)]
    if workers is None:
        return report
    if workers < 1:
        raise InputError("--workers", f"must be >= 1, got {workers}")
    report["workers"] = workers
    report["load"] = load_summary(per_second_load(w.task_start, w.task_duration, workers))
    if constraints:
        if supply is None:
            supply = [workers * p / 100.0 for p in machine_constraint_percent()]
        masks = np.asarray(TaskConstraintSampler(constraint_seed).sample(len(w.task_duration)), dtype=np.int64)
        report["per_constraint_load"] = per_constraint_load(w.task_start, w.task_duration, masks, supply)
    return report


def machines_report(m: Machines, sets: dict[tuple[Constraint, ...], int], task_set: list[int], w: WorkloadArrays, top: int = 10) -> dict[str, Any]:
    """The trace's own constraints against machines ``m``: tasks no machine can run, and for the constraints
    most tasks carry, the machines satisfying each and its load (tasks needing it over those machines)."""
    catalog = ConstraintCatalog(p for s in sets for p in s)
    index = ConstraintBitsets(range(m.n), catalog.machine_masks(m.attributes))
    ts = np.asarray(task_set, dtype=np.int64)
    per_set = np.bincount(ts, minlength=len(sets))
    runnable = np.array([index.eligible(catalog.mask(s)) != 0 for s in sets])
    unsat = Counter({s: int(per_set[k]) for s, k in sets.items() if not runnable[k]})
    tasks_with: Counter[Predicate] = Counter()
    for s, k in sets.items():
        for p in s:
            tasks_with[p] += int(per_set[k])
    rows = []
    for p, n in tasks_with.most_common(top):
        sel = np.isin(ts, [k for s, k in sets.items() if p in s])
        supply = index.eligible(catalog.mask([p])).bit_count()
        row: dict[str, Any] = {"constraint": " ".join(p).strip(), "machines": supply, "tasks": n}
        if supply:
            load = per_second_load(w.task_start[sel], w.task_duration[sel], supply)
            row.update(mean=float(load.mean()), p99=float(np.percentile(load, 99)))
        rows.append(row)
    return {
        "machines": m.n,
        "constraints": len(catalog),
        "tasks_constrained": int(len(ts) - per_set[0]),
        "tasks_unsatisfiable": int(sum(unsat.values())),
        "top_unsatisfiable": {" & ".join(" ".join(p).strip() for p in s): n for s, n in unsat.most_common(5)},
        "top_constraints": rows,
    }


class _Extras:
    """What a trace carries beyond durations, gathered as its jobs stream past."""

    def __init__(self) -> None:
        self.resources: tuple[str, ...] = ()
        self.requests: list[tuple[float, ...]] = []
        self.first_request: list[float] = []  # per task, in trace order: its first resource's request (NaN: none)
        self.stated_jobs = 0
        self.constraint_counts: list[int] = []
        self.constraint_sets: dict[tuple[Constraint, ...], int] = {(): 0}  # each distinct set -> its number
        self.task_set: list[int] = []  # per task, in trace order: its set's number
        self.operators: Counter[str] = Counter()
        self.attributes: Counter[str] = Counter()
        self.users: Counter[str] = Counter()
        self.priorities: Counter[int] = Counter()

    def tap(self, jobs: Iterable[TraceJob]) -> Iterator[TraceJob]:
        for j in jobs:
            n = j.num_tasks
            if j.requests is not None:
                self.stated_jobs += 1
                self.requests.extend(r for r in j.requests if r is not None)
                self.first_request.extend(np.nan if r is None else r[0] for r in j.requests)
            else:
                self.first_request.extend([np.nan] * n)
            if j.constraints is not None:
                sets = self.constraint_sets
                for cons in j.constraints:
                    self.constraint_counts.append(len(cons))
                    self.task_set.append(sets.setdefault(cons, len(sets)))
                    for attribute, op, _value in cons:
                        self.operators[op] += 1
                        self.attributes[attribute] += 1
            else:
                self.constraint_counts.extend([0] * n)
                self.task_set.extend([0] * n)
            if j.user is not None:
                self.users[j.user] += n
            if j.priority is not None:
                self.priorities[j.priority] += n
            yield j

    def summary(self, tasks: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.resources or self.requests:
            names = list(self.resources) or [f"r{k}" for k in range(len(self.requests[0]))]
            arr = np.asarray(self.requests, dtype=float).reshape(-1, len(names))
            out["requests"] = {
                "tasks_stated": len(self.requests),
                "tasks_unstated": tasks - len(self.requests),
                "per_resource": {r: distribution(arr[:, k]) for k, r in enumerate(names)},
            }
        constrained = sum(1 for c in self.constraint_counts if c)
        if constrained:
            out["constraints"] = {
                "tasks_constrained": constrained,
                "per_constrained_task": distribution(np.asarray([c for c in self.constraint_counts if c], dtype=float)),
                "operators": dict(self.operators.most_common()),
                "top_attributes": dict(self.attributes.most_common(10)),
            }
        if self.users:
            out["users"] = {"users": len(self.users), "top_by_tasks": dict(self.users.most_common(5))}
        if self.priorities:
            out["priorities"] = {str(k): v for k, v in sorted(self.priorities.items())}
        return out


def _weighted_integral_at(points: np.ndarray, starts: np.ndarray, durations: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """F(t) = Σ_i w_i · clamp(t − a_i, 0, d_i) at each t of ``points``."""
    out = np.zeros(len(points))
    for ends, sign in ((starts, 1.0), (starts + durations, -1.0)):
        order = np.argsort(ends, kind="stable")
        e, wt = ends[order], weights[order]
        cw = np.concatenate(([0.0], np.cumsum(wt)))
        cwe = np.concatenate(([0.0], np.cumsum(wt * e)))
        k = np.searchsorted(e, points, side="left")
        out += sign * (cw[k] * points - cwe[k])
    return out


def plot_trace(w: WorkloadArrays, extras: _Extras, report: dict[str, Any], path: str | os.PathLike, bins: int = 300) -> None:
    """Four panels: tasks running (and the first resource requested) over time; task durations and, for a
    trace with requests, each resource's request as CDFs; tasks per job; constraint attributes or priorities."""
    from matplotlib.figure import Figure

    from schedlab.atomic import atomic_write

    fig = Figure(figsize=(12, 8), layout="constrained")
    (ax_load, ax_cdf), (ax_jobs, ax_bar) = fig.subplots(2, 2)
    starts, durs = w.task_start, w.task_duration
    lo, hi = float(starts.min()), float((starts + durs).max())
    edges = np.linspace(lo, max(hi, lo + 1.0), bins + 1)
    width = edges[1] - edges[0]
    ones = np.ones(len(starts))
    running = np.diff(_weighted_integral_at(edges, starts, durs, ones)) / width
    mid = (edges[:-1] + edges[1:]) / 2
    ax_load.plot(mid, running, label="tasks running (mean per bin)")
    req = np.asarray(extras.first_request, dtype=float)
    if "requests" in report and len(req) == len(starts):
        name = next(iter(report["requests"]["per_resource"]))
        stated = ~np.isnan(req)
        ax2 = ax_load.twinx()
        ax2.plot(mid, np.diff(_weighted_integral_at(edges, starts[stated], durs[stated], req[stated])) / width, color="tab:orange", label=f"{name} requested")
        ax2.set_ylabel(f"{name} requested by running tasks")
        ax2.legend(loc="upper right", fontsize="small")
    ax_load.set(title="load over time", xlabel="time (s)", ylabel="tasks running")
    ax_load.legend(loc="upper left", fontsize="small")
    series = [("task duration (s)", durs)]
    if "requests" in report:
        arr = np.asarray(extras.requests, dtype=float)
        series += [(f"request {r}", arr[:, k]) for k, r in enumerate(report["requests"]["per_resource"])]
    for label, x in series:
        x = np.sort(x[x > 0]) if (x > 0).any() else np.sort(x)
        ax_cdf.plot(x, np.arange(1, len(x) + 1) / len(x), label=label)
    ax_cdf.set(title="CDFs", xscale="log", ylabel="fraction of tasks")
    ax_cdf.legend(fontsize="small")
    ax_jobs.hist(w.job_tasks, bins=np.unique(np.geomspace(1, max(2, int(w.job_tasks.max()) + 1), 30).astype(int)))
    ax_jobs.set(title="tasks per job", xscale="log", yscale="log", xlabel="tasks", ylabel="jobs")
    if "constraints" in report:
        top = report["constraints"]["top_attributes"]
        ax_bar.barh(list(top)[::-1], list(top.values())[::-1])
        ax_bar.set(title=f"constraint attributes ({report['constraints']['tasks_constrained']:,} constrained tasks)", xlabel="constraints")
    elif "priorities" in report:
        pr = report["priorities"]
        ax_bar.bar(list(pr), list(pr.values()))
        ax_bar.set(title="tasks per priority", xlabel="priority", ylabel="tasks")
    else:
        ax_bar.set_axis_off()
        ax_bar.text(0.5, 0.5, "no constraints or priorities in this trace", ha="center", va="center")
    fig.suptitle(f"trace {report['trace']}: {report['workload']['jobs']:,} jobs, {report['workload']['tasks']:,} tasks")
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=100))
