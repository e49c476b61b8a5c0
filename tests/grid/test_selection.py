"""Site selection (Section II and III-A): rankings, hybrids, duplication-validation and penalty."""

from __future__ import annotations

import random

import pytest

from schedlab.grid.selection import GlobalJob, GlobalScheduler, choose_sites
from schedlab.grid.site import ConservativeSite, Entry
from schedlab.sim.kernel import Kernel
from schedlab.sim.runtime import NetworkModel, SimRuntime

LOADS = [3.0, 0.0, 2.0, 0.0, 5.0, 1.0, 4.0, 2.0]


def test_ranked_schedulers_take_the_top_sites():
    rng = random.Random(1)
    assert choose_sites("qlen", LOADS, 1, rng, "first") == [1]
    assert choose_sites("qlen", LOADS, 3, rng, "first") == [1, 3, 5]
    assert choose_sites("util", LOADS, 2, rng, "first") == [1, 3]
    # Random tie-breaking picks among the tied best.
    assert {choose_sites("qlen", LOADS, 1, random.Random(s), "random")[0] for s in range(50)} == {1, 3}


@pytest.mark.parametrize("copies", range(1, 9))
def test_rand_picks_distinct_sites(copies):
    chosen = choose_sites("rand", None, copies, random.Random(copies), sites=8)
    assert len(chosen) == len(set(chosen)) == copies


def test_hybrids():
    rng = random.Random(5)
    # With no duplication both hybrids are Qlen; Hybrid-2 with one duplication is Qlen's top two.
    assert choose_sites("hybrid1", LOADS, 1, rng, "first") == [1]
    assert choose_sites("hybrid2", LOADS, 1, rng, "first") == [1]
    assert choose_sites("hybrid2", LOADS, 2, rng, "first") == [1, 3]
    for seed in range(30):
        h1 = choose_sites("hybrid1", LOADS, 4, random.Random(seed), "first")
        assert h1[0] == 1 and len(set(h1)) == 4
        h2 = choose_sites("hybrid2", LOADS, 4, random.Random(seed), "first")
        assert h2[:2] == [1, 3] and len(set(h2)) == 4
    # The random copies really are random.
    assert len({tuple(choose_sites("hybrid1", LOADS, 3, random.Random(s), "first")) for s in range(30)}) > 5
    # Flooding: every scheduler ends up on all sites.
    for name in ("rand", "qlen", "hybrid1", "hybrid2"):
        assert sorted(choose_sites(name, LOADS, 8, random.Random(0), "first", sites=8)) == list(range(8))


def _grid(n_sites=3, processors=4, **kw):
    kernel = Kernel()
    rt = SimRuntime(seed=0, network=NetworkModel(latency=0.0), kernel=kernel)
    sites = [ConservativeSite(i, processors, kernel) for i in range(n_sites)]
    sched = GlobalScheduler("g", rt, sites, **kw)
    return kernel, sites, sched


def test_first_copy_to_start_wins_and_pays_the_penalty():
    kernel, sites, sched = _grid(scheduler="rand", duplications=2, delay=1.0, penalty=1.0)
    # Sites 0 and 1 are full until t=50 and t=20; site 2 is free.
    kernel.call_at(0.0, sites[0].submit, Entry(4, 50.0, 50.0, 0))
    kernel.call_at(0.0, sites[1].submit, Entry(4, 20.0, 20.0, 1))
    job = GlobalJob(0, 0.0, 4, 10.0, 8.0)
    kernel.call_at(0.0, sched.on_arrival, job)
    kernel.run()
    assert sorted(job.sites) == [0, 1, 2]
    # Submitted at t=1 (delay), starts at once on site 2, then pays 2 × 1 s of invalidations.
    assert job.site == 2
    assert job.start == pytest.approx(1.0 + 2.0)
    assert sched.invalidations == 2 and sched.copies_submitted == 3
    # The losing copies left their queues; the winner held 4 processors for 8 + 2 s.
    assert all(not s.queue for s in sites)
    assert sites[2].busy_area == pytest.approx(4 * 10.0)


def test_invalidation_frees_reservations_for_others():
    kernel, sites, sched = _grid(n_sites=2, scheduler="rand", duplications=1, delay=0.0, penalty=0.0)
    kernel.call_at(0.0, sites[0].submit, Entry(4, 10.0, 10.0, 0))  # site 0 busy until 10
    job = GlobalJob(0, 0.0, 4, 100.0, 100.0)
    kernel.call_at(0.0, sched.on_arrival, job)  # copy on site 0 reserved at 10; on site 1 starts now
    late = Entry(4, 5.0, 5.0, 1)
    kernel.call_at(0.5, sites[0].submit, late)  # the copy was invalidated at t=0: room at 10
    kernel.run()
    assert job.site == 1 and job.start == 0.0
    assert late.start == 10.0


def test_delay_makes_a_burst_herd_on_one_site():
    # Ten jobs arrive within the delay: Qlen sees the same (stale) queue lengths and sends all to
    # one site; with no delay it sees each submission and spreads them.
    def run(delay):
        kernel, sites, sched = _grid(n_sites=4, processors=1, scheduler="qlen", delay=delay)
        jobs = [GlobalJob(i, 0.01 * i, 1, 10.0, 10.0) for i in range(10)]
        for j in jobs:
            kernel.call_at(j.arrival, sched.on_arrival, j)
        kernel.run()
        return sorted({j.site for j in jobs})

    assert run(1.0) == [0]
    assert run(0.0) == [0, 1, 2, 3]


def test_periodic_queries_use_the_latest_refresh():
    kernel, sites, sched = _grid(n_sites=2, processors=1, scheduler="qlen", delay=0.0, query_interval=100.0)
    sched.start(3)
    jobs = [GlobalJob(i, 1.0 + i, 1, 50.0, 50.0) for i in range(3)]
    for j in jobs:
        kernel.call_at(j.arrival, sched.on_arrival, j)
    kernel.run()
    # The only refresh before t=100 saw empty queues: every job goes to the first site.
    assert [j.site for j in jobs] == [0, 0, 0]
    assert sched.queries >= 1


def test_scheduler_is_a_sans_io_component():
    # Arrivals can also come as messages through the runtime, as a networked runtime would deliver them.
    from schedlab.grid.selection import GlobalJobArrival

    kernel, sites, sched = _grid(n_sites=2, scheduler="qlen", delay=0.5)
    job = GlobalJob(0, 0.0, 2, 5.0, 5.0)
    sched.rt.send("g", GlobalJobArrival(job))
    kernel.run()
    assert job.site == 0 and job.start == 0.5
    assert sched.rt.message_counts() == {"GlobalJobArrival": 1}


def test_the_grid_schedulers_are_a_registry_with_validated_parameters():
    from dataclasses import replace

    from schedlab.errors import InputError
    from schedlab.grid.selection import LABELS
    from schedlab.grid.simulation import SCHEDULERS, GridConfig, simulate_grid

    assert SCHEDULERS.names() == ("rand", "qlen", "util", "est_qt", "act_qt", "hybrid1", "hybrid2")
    assert LABELS["hybrid2"] == "Hybrid-2" and LABELS["est_qt"] == "Est.QT"
    assert [p.name for p in SCHEDULERS.get("qlen").parameters()] == ["duplications", "delay", "penalty", "query_interval", "tie_break"]
    base = GridConfig(local_jobs=200, global_jobs=200)
    via_registry = SCHEDULERS.run("hybrid1", base, seed=3, params={"duplications": 2, "delay": 0})
    direct = simulate_grid(replace(base, scheduler="hybrid1", seed=3, duplications=2, delay=0.0))
    assert via_registry.summary["mean_queue_time"] == direct.summary["mean_queue_time"]
    with pytest.raises(InputError, match="param delay: Input should be greater than or equal to 0"):
        SCHEDULERS.run("qlen", base, params={"delay": -1})
    with pytest.raises(InputError, match="param speed: unknown parameter"):
        SCHEDULERS.run("qlen", base, params={"speed": 2})
