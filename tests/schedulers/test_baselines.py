"""Pigeon, PigeonC, Sparrow, Hawk and Eagle: each one's defining mechanism on a tiny hand-built data center.

Timelines are worked out by hand with the network delay ND = 0.5 ms per message.
Constraint masks are used to force where probes and tasks can go, so that the
cases do not depend on random draws; where a mechanism is about randomness
(master choice, stealing from a random victim) the test runs several seeds.
"""

from __future__ import annotations

import json

import pytest

from schedlab import simulate
from schedlab.cli import main
from schedlab.cluster import Cluster
from schedlab.errors import InputError
from schedlab.workload.trace import TraceJob

ND = 0.0005


def job(t, durations, masks=None, mean=None):
    return TraceJob(t, mean if mean is not None else sum(durations) / len(durations), list(durations), masks=masks)


def run(scheduler, trace, masks, seed=0, **params):
    return simulate(scheduler, trace, cluster=Cluster.slots(masks), constraints=False, params=params, seed=seed)


def starts(r):
    return r.tasks.set_index("task").start


# -- unloaded delays ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scheduler", "hops"), [("pigeon", 3), ("pigeonc", 3), ("sparrow", 4), ("hawk", 4), ("eagle", 4)]
)
def test_unloaded_jrt_delay_is_the_message_hops(scheduler, hops):
    r = run(scheduler, [job(0.0, [1.0, 2.0])], [0] * 8)
    assert r.jobs.jrt_delay.iloc[0] == pytest.approx(hops * ND)
    t = r.tasks
    assert (t.framework_queuing == 0).all() and (t.worker_queuing == 0).all()
    assert t.communication.tolist() == pytest.approx([(hops - 1) * ND] * 2)


# -- Pigeon ------------------------------------------------------------------------------------------
def test_pigeon_reserves_workers_for_short_tasks():
    # One master, 4 workers, half reserved (w0, w1: the lowest ids). Long = mean >= 5 s.
    long_job = job(0.0, [10.0, 10.0, 10.0])
    short_job = job(1.0, [1.0])
    r = run("pigeon", [long_job, short_job], [0] * 4, masters=1, reserve=0.5, cutoff=5.0)
    t = r.tasks.set_index("task")
    # the long tasks take the two general workers; the third waits although w0, w1 are free
    assert sorted(t.worker[[0, 1]]) == [2, 3]
    assert t.start[2] == pytest.approx(10.0 + 4 * ND)  # after a general worker frees (+ report, + launch)
    assert t.worker[2] in (2, 3) and t.framework_queuing[2] == pytest.approx(10.0 + 2 * ND)
    # the short task finds the general workers busy and runs at once on a reserved one
    assert t.worker[3] in (0, 1) and t.start[3] == pytest.approx(1.0 + 2 * ND)
    assert r.summary["counters"]["reserved_launches"] == 1


def test_pigeon_weighted_fair_queuing_serves_fqw_short_tasks_per_long_one():
    # One worker. A long task holds it until t=10; then one long and five short tasks wait.
    trace = [job(0.0, [10.0]), job(1.0, [6.0])] + [job(1.1 + 0.1 * i, [1.0]) for i in range(5)]
    r = run("pigeon", trace, [0], masters=1, reserve=0.0, cutoff=5.0, fqw=2)
    order = starts(r).sort_values().index.tolist()
    # tasks: 0 = first long, 1 = waiting long, 2..6 = shorts in arrival order
    assert order == [0, 2, 3, 1, 4, 5, 6]
    assert r.summary["counters"]["wfq_long_turns"] == 1


def test_pigeonc_authors_wfq_serves_fqw_plus_one_short_tasks():
    trace = [job(0.0, [10.0]), job(1.0, [6.0])] + [job(1.1 + 0.1 * i, [1.0]) for i in range(5)]
    r = run("pigeonc", trace, [0], masters=1, cutoff=5.0, fqw=2, compat="authors")
    assert starts(r).sort_values().index.tolist() == [0, 2, 3, 4, 1, 5, 6]


def test_pigeonc_long_task_takes_a_worker_no_queued_short_task_can_use():
    # w0 has constraint 0, w1 none. Short job B holds both; then a long task (no constraint) and a
    # short task needing constraint 0 wait. w1 frees first: the short task cannot use it, so the
    # long task takes it although it is the short class's turn.
    b = job(0.0, [5.0, 3.0], masks=[0b1, 0])
    trace = [b, job(1.0, [20.0], masks=[0]), job(1.1, [1.0], masks=[0b1])]
    r = run("pigeonc", trace, [0b1, 0], masters=1, cutoff=10.0, fqw=20)
    t = r.tasks.set_index("task")
    assert t.worker[2] == 1 and t.start[2] == pytest.approx(3.0 + 4 * ND)
    assert t.worker[3] == 0 and t.start[3] == pytest.approx(5.0 + 4 * ND)


def _share_to_master_a(r):
    # workers 0-2 form master A, 3-5 master B; tasks run where their master sent them
    return float((r.tasks.worker < 3).mean())


def test_pigeonc_master_choice_follows_constraint_supply():
    # Task needs constraints {0, 1}. Master A (w0-w2): one worker satisfies it; master B (w3-w5): two.
    masks = [0b0111, 0b0001, 0b0001, 0b1011, 0b0011, 0b0000]
    trace = [job(0.001 * i, [0.0], masks=[0b011]) for i in range(1500)]
    r = run("pigeonc", trace, masks, masters=2, seed=3)
    assert _share_to_master_a(r) == pytest.approx(1 / 3, abs=0.05)
    # a constraint only a worker of master B has: always master B
    r = run("pigeonc", [job(0.001 * i, [0.0], masks=[0b1000]) for i in range(50)], masks, masters=2)
    assert (r.tasks.worker == 3).all()


def test_pigeonc_authors_weights_count_workers_whose_sets_are_subsets_of_keys():
    # The authors' keys: A = {0,1,2} with count 3 (w1, w2 are subsets), B = {0,1,3} with count 3 (w4 = {0,1}
    # and w5 = {} are subsets). A task needing {0,1} weighs 3 at both — half to A, where one worker fits.
    masks = [0b0111, 0b0001, 0b0001, 0b1011, 0b0011, 0b0000]
    trace = [job(0.001 * i, [0.0], masks=[0b011]) for i in range(1500)]
    r = run("pigeonc", trace, masks, masters=2, seed=3, compat="authors")
    assert _share_to_master_a(r) == pytest.approx(1 / 2, abs=0.05)


def test_pigeon_spreads_a_job_evenly_over_masters():
    r = run("pigeon", [job(0.0, [1.0] * 9)], [0] * 9, masters=3, reserve=0.0)
    per_master = (r.tasks.worker // 3).value_counts().sort_index().tolist()
    assert per_master == [3, 3, 3]


# -- Sparrow -----------------------------------------------------------------------------------------
def test_sparrow_late_binding_and_proactive_cancellation():
    # Two workers; job A (2 tasks) sends 4 probes: two per worker. Each worker binds a task with its
    # first probe; A is then fully launched, so its other two probes are cancelled and dropped without a
    # round trip when the workers free up at t = 5 + 3 ND. Job B (1 task) probed both workers at t=1.
    trace = [job(0.0, [5.0, 5.0]), job(1.0, [1.0])]
    r = run("sparrow", trace, [0, 0])
    c = r.summary["counters"]
    assert c["probes"] == 6 and c["probes_cancelled"] == 2
    assert c["noop_replies"] == 1  # B's surplus probe was already asking when B's task was launched
    assert c["get_task_requests"] == 3 + 1
    t = r.tasks.set_index("task")
    assert t.start[2] == pytest.approx(5.0 + 3 * ND + 2 * ND)
    assert t.worker_queuing[2] == pytest.approx(t.start[2] - 1.0 - 3 * ND)
    assert t.communication[2] == pytest.approx(3 * ND)
    # every probe ends exactly once: bound to a task, answered with a no-op, or cancelled
    assert c["probes"] == len(t) + c["noop_replies"] + c["probes_cancelled"]

    # Without proactive cancellation A's surplus probes cost a get-task round trip each.
    r = run("sparrow", trace, [0, 0], cancel=False)
    c = r.summary["counters"]
    assert c["probes_cancelled"] == 0 and c["noop_replies"] == 3
    assert starts(r)[2] == pytest.approx(5.0 + 3 * ND + 4 * ND)


def test_sparrow_probes_only_workers_that_satisfy_the_constraints():
    masks = [0b1, 0, 0, 0b1, 0]
    trace = [job(0.0, [1.0] * 3, masks=[0b1] * 3)]
    r = run("sparrow", trace, masks)
    assert set(r.tasks.worker) <= {0, 3}
    assert r.summary["counters"]["probes"] == 6


def test_sparrow_shares_probes_across_a_jobs_tasks():
    # Sparrow paper, 4.3: task 0 may run on A, B, C; task 1 on C, D, E. A and B are busy for 10 s.
    # If task 0's two probes land on A and B, a free worker probed for task 1 that can run task 0
    # (C) gets it under sharing; without sharing task 0 waits for A or B. (When nobody probed C,
    # task 0 waits either way.)
    a, b, c, d, e = 0b101, 0b101, 0b011, 0b010, 0b010
    trace = [job(0.0, [10.0, 10.0], masks=[0b100, 0b100]), job(1.0, [1.0, 1.0], masks=[0b001, 0b010])]
    helped = 0
    for seed in range(12):
        shared = run("sparrow", trace, [a, b, c, d, e], seed=seed)
        alone = run("sparrow", trace, [a, b, c, d, e], seed=seed, share=False)
        s, n = shared.jobs.jrt_delay.iloc[1], alone.jobs.jrt_delay.iloc[1]
        assert s <= n + 1e-9
        if n > 5.0 and s < 0.01:
            helped += 1
            assert shared.tasks.worker.iloc[2] == 2  # task 0 ran on C, probed for task 1
    assert helped >= 2


# -- Hawk --------------------------------------------------------------------------------------------
def test_hawk_steals_short_probes_stuck_behind_a_long_task():
    # w0 is the short partition; w1, w2 general. The long task L (constraint 0) can only go to w1
    # (LWL), the short task X (constraint 1) only to w2. S (constraint 2: w1 or w2) sends one probe:
    # when it lands behind L on w1, w2 steals it as soon as X ends and S runs at ~t=2, not t=50.
    masks = [0, 0b101, 0b110]
    trace = [job(0.0, [50.0], masks=[0b001]), job(0.0, [2.0], masks=[0b010]), job(1.0, [1.0], masks=[0b100])]
    params = dict(cutoff=10.0, reserve=0.34, probe_ratio=1.0, min_probes=0)
    with_steal, without, steals = [], [], 0
    for seed in range(8):
        r = run("hawk", trace, masks, seed=seed, **params)
        assert r.tasks.worker.tolist()[:2] == [1, 2]
        with_steal.append(r.jobs.jrt_delay.iloc[2])
        steals += r.summary["counters"]["steals"]
        without.append(run("hawk", trace, masks, seed=seed, steal_attempts=0, **params).jobs.jrt_delay.iloc[2])
    assert max(with_steal) < 1.5
    assert steals >= 1
    assert max(without) > 40


def test_hawk_long_jobs_never_use_the_short_partition():
    r = run("hawk", [job(0.0, [100.0] * 6), job(1.0, [1.0] * 3)], [0] * 4, cutoff=50.0, reserve=0.25)
    t = r.tasks
    assert (t.worker[:6] != 0).all()  # w0 is reserved for short jobs
    assert r.summary["counters"]["long_jobs"] == 1


# -- Eagle -------------------------------------------------------------------------------------------
def test_eagle_sticky_batch_probing_keeps_a_jobs_probes_serving_it():
    # w2 runs job X (constraint 1) until t=10. Job A (3 tasks) probes w0, w1, w2; job B (constraint 2:
    # w0, w1 only) probes w0 and w1 right after. When A's first two tasks end, SBP keeps A's probes on
    # w0/w1 and A's third task runs there; without SBP w0/w1 serve B and A's last task waits for w2.
    masks = [0b101, 0b101, 0b011]
    trace = [
        job(0.0, [10.0], masks=[0b010]),
        job(0.1, [1.0] * 3, masks=[0b001] * 3),
        job(0.2, [1.0, 1.0], masks=[0b100] * 2),
    ]
    params = dict(cutoff=1e6, probe_ratio=1.0, min_probes=0, srpt=False)
    sticky = run("eagle", trace, masks, **params)
    plain = run("eagle", trace, masks, sbp=False, **params)
    assert sticky.jobs.jrt_delay.iloc[1] < 1.1
    assert plain.jobs.jrt_delay.iloc[1] > 9.0
    c = sticky.summary["counters"]
    assert c["sticky_requeues"] >= 1 and c["probes_cancelled"] >= 1
    t = sticky.tasks.set_index("task")
    assert t.worker[[1, 2, 3]].tolist().count(2) == 0  # A never waited for w2


def test_eagle_succinct_state_sharing_sends_short_probes_away_from_long_work():
    # w0 is the short partition; a long job holds w1..w3 for 100 s. The short job's probes that reach
    # them are rejected with the long-work vector, and re-sent where there is no long work (w0).
    trace = [job(0.0, [100.0] * 3), job(1.0, [1.0, 1.0])]
    params = dict(cutoff=5.0, reserve=0.25, min_probes=0, sbp=False)
    r = run("eagle", trace, [0] * 4, **params)
    c = r.summary["counters"]
    assert c["probes_rejected"] == 3 and c["probes_resent"] == 3
    t = r.tasks.set_index("task")
    assert (t.worker[[3, 4]] == 0).all()
    assert r.jobs.jrt_delay.iloc[1] < 1.1
    # without SSS the short job's second task queues behind a long task
    r = run("eagle", trace, [0] * 4, sss=False, **params)
    assert r.summary["counters"]["probes_rejected"] == 0
    assert r.jobs.jrt_delay.iloc[1] > 90


def test_eagle_srpt_serves_the_job_with_least_remaining_work_first():
    # One worker, busy until t=5. Job A (4 tasks) probes it before job B (1 task): SRPT runs B first.
    trace = [job(0.0, [5.0]), job(1.0, [1.0] * 4), job(1.5, [1.0])]
    params = dict(cutoff=1e6, probe_ratio=1.0, min_probes=0, sbp=False)
    order = starts(run("eagle", trace, [0], **params)).sort_values().index.tolist()
    assert order.index(5) < order.index(1)
    order = starts(run("eagle", trace, [0], srpt=False, **params)).sort_values().index.tolist()
    assert order == [0, 1, 2, 3, 4, 5]


# -- bad parameters ----------------------------------------------------------------------------------
def test_bad_baseline_parameters_are_input_errors():
    for name in ("pigeon", "pigeonc", "sparrow", "hawk", "eagle"):
        with pytest.raises(InputError, match="slot mode"):
            simulate(name, [job(0.0, [1.0])], cluster=Cluster.multi_resource([0, 0]), constraints=False)
    with pytest.raises(InputError, match="param masters"):
        simulate("pigeonc", [job(0.0, [1.0])], config="reference-pigeon", params={"masters": 7})
    with pytest.raises(InputError, match="param probe_ratio"):
        run("sparrow", [job(0.0, [1.0])], [0], probe_ratio=0.5)
    with pytest.raises(InputError, match="param compat"):
        run("pigeon", [job(0.0, [1.0])], [0], compat="authors")
    with pytest.raises(InputError, match="topology"):
        run("pigeonc", [job(0.0, [1.0])], [0, 0], masters=3)


# -- command line ------------------------------------------------------------------------------------
def test_cli_distributors_masters_and_compat(tmp_path, tiny_trace, capsys):
    out = tmp_path / "s.json"
    rc = main(["simulate", "-s", "pigeonc", "-t", str(tiny_trace), "-w", "30", "--distributors", "2", "--masters", "3",
               "--worker-choice", "random", "--compat", "authors", "-q", "--summary-json", str(out)])
    assert rc == 0
    s = json.loads(out.read_text())
    assert s["counters"]["masters"] == 3 and s["counters"]["distributors"] == 2
    assert s["config"]["params"]["compat"] == "authors"
    assert main(["simulate", "-s", "pigeonc", "-t", str(tiny_trace), "--config", "reference-pigeon", "--masters", "7", "-q"]) == 2
    assert "param masters" in capsys.readouterr().err
