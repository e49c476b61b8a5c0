"""Invariants on random small workloads and data centers, for every foundation scheduler.

No worker is ever over-allocated (the worker pool raises, and every scheduler's
run is re-checked from its task table alone, :func:`tests.helpers.assert_no_over_allocation`), every task finishes exactly once and every job completes, a
task never runs on a worker lacking its constraints, and a run is a pure
function of its inputs and seed.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab import simulate
from schedlab.cluster import Cluster
from schedlab.workload.trace import TraceJob
from tests.helpers import assert_no_over_allocation

SCHEDULERS = ["ideal", "centralized"]


@st.composite
def scenario(draw):
    n_workers = draw(st.integers(1, 6))
    machine = draw(st.lists(st.integers(0, 7), min_size=n_workers, max_size=n_workers))
    multi = draw(st.booleans())
    t = 0.0
    trace = []
    for _ in range(draw(st.integers(1, 6))):
        t += draw(st.sampled_from([0.0, 0.0, 0.3, 1.0, 2.5]))
        n = draw(st.integers(1, 5))
        durs = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.7]), min_size=n, max_size=n))
        # constraints drawn from the workers' own sets (and their subsets) so most tasks can run
        masks = [draw(st.sampled_from(machine)) & draw(st.integers(0, 7)) for _ in range(n)]
        reqs = [(float(draw(st.integers(1, 4))), float(draw(st.integers(1, 8)))) for _ in range(n)] if multi else None
        trace.append(TraceJob(t, sum(durs) / n, durs, masks=masks, requests=reqs))
    cluster = Cluster.multi_resource(machine, (4.0, 8.0)) if multi else Cluster.slots(machine)
    return cluster, trace, draw(st.sampled_from(SCHEDULERS)), draw(st.sampled_from(["min-constraints", "random"]))


def _run(cluster, trace, scheduler, choice, seed):
    jobs = [TraceJob(j.arrival, j.mean_duration, list(j.durations), masks=j.masks, requests=j.requests) for j in trace]
    return simulate(scheduler, jobs, cluster=cluster, seed=seed, constraints=False, params={"worker_choice": choice})


def _assert_every_task_once(r, trace, cluster):
    """Nothing left unfinished, one run per task of exactly its duration, components summing to allocation time."""
    t = r.tasks
    c = r.summary["counters"]
    assert c["tasks_unfinished"] == 0 and c["jobs_incomplete"] == 0
    assert r.summary["tasks"] + c["tasks_dropped_unsatisfiable"] == sum(len(j.durations) for j in trace)
    # exactly one run per task, of exactly its duration, never before its arrival
    assert (t.starts == 1).all()
    assert ((t.end - t.start - t.duration).abs() < 1e-9).all()
    assert (t.start >= t.arrival - 1e-12).all()
    comps = t[["framework_queuing", "processing", "worker_queuing", "communication"]].sum(axis=1)
    assert ((comps - t.allocation_time).abs() < 1e-9).all()
    # re-check capacity from the task table alone (slots and multi-resource), not trusting the pool
    assert_no_over_allocation(t, cluster, r.extra["requests"], r.extra["preempted_runs"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario(), st.integers(0, 3))
def test_no_over_allocation_every_task_once_deterministic(sc, seed):
    cluster, trace, scheduler, choice = sc
    r = _run(cluster, trace, scheduler, choice, seed)
    t = r.tasks
    _assert_every_task_once(r, trace, cluster)
    masks = cluster.machine_masks
    # constraints respected
    task_masks = [m for j in trace for m, _ in zip(j.masks, j.durations, strict=True) if any(m & ~w == 0 for w in masks)]
    assert all(m & ~masks[w] == 0 for m, w in zip(task_masks, t.worker, strict=True))
    # determinism
    again = _run(cluster, trace, scheduler, choice, seed)
    pd.testing.assert_frame_equal(t, again.tasks)
    pd.testing.assert_frame_equal(r.jobs, again.jobs)


@st.composite
def megha_scenario(draw):
    gms, lms, size = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    n = gms * lms * size
    machine = draw(st.lists(st.integers(0, 7), min_size=n, max_size=n))
    multi = draw(st.booleans())
    params = {
        "gms": gms,
        "lms": lms,
        "worker_choice": draw(st.sampled_from(["min-constraints", "random"])),
        "heartbeat": draw(st.sampled_from([0.5, 1.0, 3.0])),
        "updates": draw(st.sampled_from(["delta", "snapshot"])),
        "piggyback": draw(st.booleans()),
    }
    mode = draw(st.sampled_from(["plain", "plain", "authors", "fair"]))
    if mode == "authors" and not multi:
        params["compat"] = "authors"
        params["piggyback"] = False
    elif mode == "fair":
        params["shares"] = [0.5, 0.5]
        params["queue_gms"] = [1, gms]
    t = 0.0
    trace = []
    for _ in range(draw(st.integers(1, 7))):
        t += draw(st.sampled_from([0.0, 0.3, 1.0, 2.5]))
        k = draw(st.integers(1, 6))
        durs = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 6.0]), min_size=k, max_size=k))
        masks = [draw(st.sampled_from(machine)) & draw(st.integers(0, 7)) for _ in range(k)]
        reqs = [(float(draw(st.integers(1, 4))), float(draw(st.integers(1, 8)))) for _ in range(k)] if multi else None
        trace.append(TraceJob(t, sum(durs) / k, durs, masks=masks, requests=reqs))
    cluster = Cluster.multi_resource(machine, (4.0, 8.0)) if multi else Cluster.slots(machine)
    return cluster, trace, params


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(megha_scenario(), st.integers(0, 2))
def test_megha_never_over_allocates_finishes_everything_and_is_deterministic(sc, seed):
    cluster, trace, params = sc

    def run():
        jobs = [TraceJob(j.arrival, j.mean_duration, list(j.durations), masks=j.masks, requests=j.requests) for j in trace]
        return simulate("megha", jobs, cluster=cluster, seed=seed, constraints=False, params=params)

    r = run()
    t = r.tasks
    c = r.summary["counters"]
    assert c["tasks_unfinished"] == 0 and c["jobs_incomplete"] == 0 and c["stalled"] == 0
    assert c["gm_holdings_at_end"] == 0 or params.get("compat") == "authors"
    assert r.summary["tasks"] + c["tasks_dropped_unsatisfiable"] == sum(len(j.durations) for j in trace)
    assert ((t.end - t.start - t.duration).abs() < 1e-9).all()
    assert (t.starts >= 1).all()
    if "shares" not in params:
        assert (t.starts == 1).all() and c.get("preemptions", 0) == 0
    comps = t[["framework_queuing", "processing", "worker_queuing", "communication"]].sum(axis=1)
    assert ((comps - t.allocation_time).abs() < 1e-9).all()
    assert c["launched"] == len(t) + c.get("preemptions", 0)
    masks = cluster.machine_masks
    assert all(m & ~masks[w] == 0 for m, w in zip(t.constraints, t.worker, strict=True))
    # capacity from the task table alone, the killed runs of preempted tasks included
    assert_no_over_allocation(t, cluster, r.extra["requests"], r.extra["preempted_runs"])
    assert len(r.extra["preempted_runs"]) == c.get("preemptions", 0)
    again = run()
    pd.testing.assert_frame_equal(t, again.tasks)
    pd.testing.assert_frame_equal(r.jobs, again.jobs)


@st.composite
def baseline_scenario(draw):
    """A small slot-mode data center, a workload with short and long jobs, and one baseline with random parameters."""
    n = draw(st.integers(1, 6))
    machine = draw(st.lists(st.integers(0, 7), min_size=n, max_size=n))
    scheduler = draw(st.sampled_from(["pigeon", "pigeonc", "sparrow", "hawk", "eagle"]))
    params: dict = {}
    if scheduler in ("pigeon", "pigeonc"):
        params["masters"] = draw(st.integers(1, min(3, n)))
        params["distributors"] = draw(st.integers(1, 3))
        params["fqw"] = draw(st.integers(1, 3))
        params["cutoff"] = 2.0
        params["worker_choice"] = draw(st.sampled_from(["min-constraints", "random"]))
        if scheduler == "pigeon":
            params["reserve"] = draw(st.sampled_from([0.0, 0.3, 0.6]))
        else:
            params["compat"] = draw(st.sampled_from(["none", "authors"]))
    else:
        params["probe_ratio"] = draw(st.sampled_from([1.0, 1.5, 2.0]))
        params["cancel"] = draw(st.booleans())
        params["schedulers"] = draw(st.integers(1, 2))
        if scheduler == "sparrow":
            params["share"] = draw(st.booleans())
        else:
            params["cutoff"] = 2.0
            params["reserve"] = draw(st.sampled_from([0.0, 0.3, 0.6]))
            params["min_probes"] = draw(st.integers(0, 4))
        if scheduler == "hawk":
            params["steal_attempts"] = draw(st.integers(0, 3))
        if scheduler == "eagle":
            params["sbp"] = draw(st.booleans())
            params["srpt"] = draw(st.booleans())
            params["sss"] = draw(st.booleans())
            params["sss_rounds"] = draw(st.integers(0, 2))
            params["srpt_cap"] = draw(st.sampled_from([0.0, 1.0, 5.0]))
    t = 0.0
    trace = []
    for _ in range(draw(st.integers(1, 7))):
        t += draw(st.sampled_from([0.0, 0.0, 0.3, 1.0, 2.5]))
        k = draw(st.integers(1, 6))
        durs = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 6.0]), min_size=k, max_size=k))
        masks = [draw(st.sampled_from(machine)) & draw(st.integers(0, 7)) for _ in range(k)]
        trace.append(TraceJob(t, sum(durs) / k, durs, masks=masks))
    return Cluster.slots(machine), trace, scheduler, params


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(baseline_scenario(), st.integers(0, 2))
def test_baselines_never_over_allocate_finish_every_task_once_and_are_deterministic(sc, seed):
    cluster, trace, scheduler, params = sc

    def run():
        jobs = [TraceJob(j.arrival, j.mean_duration, list(j.durations), masks=j.masks) for j in trace]
        return simulate(scheduler, jobs, cluster=cluster, seed=seed, constraints=False, params=params)

    r = run()  # the worker pool raises on any over-allocation or constraint violation
    t = r.tasks
    c = r.summary["counters"]
    _assert_every_task_once(r, trace, cluster)
    assert (t[["framework_queuing", "processing", "worker_queuing", "communication"]] >= -1e-9).all().all()
    masks = cluster.machine_masks
    assert all(m & ~masks[w] == 0 for m, w in zip(t.constraints, t.worker, strict=True))
    # the scheduler learns of each completion after it happens; JRT is measured then
    done = r.jobs.completion.to_numpy()
    last_end = t.groupby("job").end.max().reindex(r.jobs.job).to_numpy()
    assert (done >= last_end - 1e-12).all()
    if scheduler in ("sparrow", "hawk"):  # every probe ends once: bound, answered with a no-op, or cancelled
        assert c["probes"] + c.get("long_probes", 0) == len(t) + c["noop_replies"] + c["probes_cancelled"]
    again = run()
    pd.testing.assert_frame_equal(t, again.tasks)
    pd.testing.assert_frame_equal(r.jobs, again.jobs)
