"""The embedded cluster: the simulator's GM and LM classes in real time, with the in-process transport."""

from __future__ import annotations

import asyncio

import pytest

from schedlab import simulate
from schedlab.cluster import Cluster
from schedlab.errors import InputError
from schedlab.services.client import replay
from schedlab.services.embedded import EmbeddedMegha
from schedlab.workload.trace import TraceJob
from tests.services.helpers import assert_valid_schedule


def job(t, durations, masks=None):
    return TraceJob(t, sum(durations) / len(durations), list(durations), masks=masks)


def run_real(trace, cluster, params, seed=0, **kw):
    async def main():
        async with EmbeddedMegha(cluster, params, seed=seed) as c:
            return await replay(c, trace, seed=seed, constraints=False, timeout=30, **kw)

    return asyncio.run(main())


def sequential_trace(n=24, gap=0.08, constraint_bits=0):
    out = []
    for i in range(n):
        k = 1 + i % 3
        masks = [((i + j) % 4) & constraint_bits for j in range(k)] if constraint_bits else None
        out.append(job(gap * i, [0.03 * (1 + (i * 7 + j) % 3) for j in range(k)], masks))
    return out


@pytest.mark.parametrize("choice", ["random", "min-constraints"])
def test_same_decisions_as_the_simulator_one_gm_one_lm(choice):
    # One GM and one LM with arrivals spaced wider than the tasks: the real runtime sees the
    # same sequence of events as the simulator, so the same code must take the same decisions.
    masks = [0b11, 0b01, 0b10, 0, 0b01, 0, 0b11, 0b10, 0, 0, 0b01, 0]
    cl = Cluster.slots(masks)
    trace = sequential_trace(constraint_bits=0b11)
    params = {"gms": 1, "lms": 1, "worker_choice": choice}
    sim = simulate("megha", trace, cluster=cl, params=params, seed=7, constraints=False)
    real = run_real(trace, cl, params, seed=7)
    assert real.tasks.worker.tolist() == sim.tasks.worker.tolist()
    assert_valid_schedule(real, cl)
    c = real.summary["counters"]
    assert c["requests"] == sim.summary["counters"]["requests"] and c["inconsistencies"] == 0


def test_federated_cluster_under_load_runs_every_task_once():
    # 3 GMs x 2 LMs racing on 12 workers with bursts above capacity: inconsistencies,
    # repartitions and queuing happen for real; the invariants must hold regardless.
    masks = [0, 0b1, 0, 0b11, 0, 0b10] * 2
    cl = Cluster.slots(masks)
    trace = [job(0.02 * i, [0.02 + 0.01 * (j % 3) for j in range(5)], [(i + j) % 3 for j in range(5)]) for i in range(40)]
    r = run_real(trace, cl, {"gms": 3, "lms": 2, "heartbeat": 0.05})
    assert_valid_schedule(r, cl)
    s = r.summary
    assert s["tasks"] == 200 and s["jrt_delay"]["count"] == 40
    assert s["counters"]["gm_holdings_at_end"] == 0
    assert s["counters"]["repartitions"] > 0
    comps = s["allocation_components"]
    total = sum(comps[k]["mean"] for k in comps)
    assert total == pytest.approx(s["allocation_time"]["mean"], rel=1e-6)


def test_multi_resource_packing_is_never_over_allocated():
    cl = Cluster.multi_resource([0] * 4, [4.0, 4096.0])
    trace = [job(0.01 * i, [0.03] * 4) for i in range(30)]
    r = run_real(trace, cl, {"gms": 2, "lms": 2, "heartbeat": 0.05}, requests="choice:1x256@0.5,2x1024@0.5")
    assert_valid_schedule(r, cl)
    assert r.summary["utilization"]["mean"] > 0


def test_summary_has_the_simulators_schema():
    cl = Cluster.slots([0] * 4)
    trace = sequential_trace(n=5)
    real = run_real(trace, cl, {"gms": 1, "lms": 1})
    sim = simulate("megha", trace, cluster=cl, params={"gms": 1, "lms": 1}, constraints=False)
    assert set(sim.summary) <= set(real.summary)
    assert set(sim.summary["counters"]) <= set(real.summary["counters"])
    assert list(real.tasks.columns) == list(sim.tasks.columns)
    assert list(real.jobs.columns) == list(sim.jobs.columns)
    assert real.summary["runtime"]["kind"] == "real"


def test_simulated_costs_are_refused():
    cl = Cluster.slots([0] * 4)
    with pytest.raises(InputError, match="processing costs"):
        EmbeddedMegha(cl, {"message_cost": 1e-4})


def test_cpu_tasks_burn_what_they_ask_for():
    cl = Cluster.slots([0] * 2)
    trace = [job(0.0, [0.1, 0.1]), job(0.05, [0.1])]
    r = run_real(trace, cl, {"gms": 1, "lms": 1}, task="cpu")
    assert_valid_schedule(r, cl)
    outcomes = r.extra["outcomes"]
    assert sorted(outcomes) == [0, 1, 2] and all(o["status"] == "ok" and o["cpu_seconds"] >= 0.09 for o in outcomes.values())
    assert r.summary["runtime"]["task"] == "cpu"


def fair_trace():
    # user 0 fills the 4 workers with long tasks; user 1 (half the data center) arrives with two
    # short tasks, then user 0 again — the Megha paper's Algorithm 2 on the smallest case
    return [job(0.0, [1.0] * 4), job(0.05, [0.2, 0.2]), job(0.1, [0.2])]


FAIR = {"gms": 2, "lms": 1, "heartbeat": 0.2, "shares": [0.5, 0.5], "queue_gms": [1, 2], "worker_choice": "min-constraints"}


def test_fair_sharing_preempts_as_the_simulator_does():
    cl = Cluster.slots([0] * 4)
    sim = simulate("megha", fair_trace(), cluster=cl, params=FAIR, constraints=False)
    real = run_real(fair_trace(), cl, FAIR)
    assert_valid_schedule(real, cl)
    c = real.summary["counters"]
    assert c["preemptions"] == c["preemption_attempts"] == 2 == sim.summary["counters"]["preemptions"]
    assert c["preemptions_too_late"] == 0 and c.get("duplicate_starts", 0) == 0
    # the same victims (user 0's newest tasks), restarted once; every task finished once
    assert real.tasks.starts.tolist() == sim.tasks.starts.tolist()
    assert real.jobs.user.tolist() == sim.jobs.user.tolist() == [0, 1, 0]
    t = real.tasks.set_index("task")
    # user 1 waited for a fair-sharing round of its GM (every 0.2 s from the GM's start, a little before the
    # replay's), not for user 0's tasks to end (1 s)
    assert 0.1 <= t.loc[4, "start"] < 0.6 and 0.1 <= t.loc[5, "start"] < 0.6
    assert r_done(real) == 3


def r_done(result):
    return int(result.jobs.jrt_delay.notna().sum())


def test_queue_gms_needs_the_number_of_gms_and_names_gms_that_exist():
    from schedlab.errors import InputError
    from schedlab.services.assembly import parse_params

    fair = {"shares": [0.5, 0.5], "lms": 1}
    with pytest.raises(InputError, match="param queue_gms: needs gms"):
        parse_params({**fair, "queue_gms": [1, 1]})
    with pytest.raises(InputError, match=r"param queue_gms: GMs are numbered 1..2"):
        parse_params({**fair, "gms": 2, "queue_gms": [1, 3]})
    assert list(parse_params({**fair, "gms": 2, "queue_gms": [2, 1]}).queue_gms) == [2, 1]
