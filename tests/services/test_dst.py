"""The services' own code under deterministic simulation with injected faults (``schedlab dst``).

The search runs the very GM, LM and worker-host nodes of a real cluster on the
kernel; these tests check that it is deterministic, that it passes on today's
code, and that it finds each of the races the services' campaigns once found
by luck when that race is put back.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import subprocess
import sys

import pytest

from schedlab.cli import main
from schedlab.services.dst import Schedule, Setup, parse_schedule, run, schedule_for, shrink
from schedlab.services.dst.faults import KINDS

SETUP = Setup()


def first_failure(limit: int) -> tuple[int, dict]:
    """The first seed in 0..limit-1 whose schedule violates an invariant (in this process: monkeypatches hold)."""
    from schedlab.services.dst.world import quiet_logs

    quiet_logs()
    for seed in range(limit):
        v = run(schedule_for(seed, SETUP), SETUP)
        if not v.ok:
            return seed, v.violations
    return -1, {}


def test_two_thousand_schedules_hold_every_invariant(capsys):
    """CI's budget: 2,000 seeded schedules (about 80 s on this 2-core machine), every invariant checked after each."""
    rc = main(["dst", "--seeds", "2000", "--processes", "2", "--json", "--no-shrink"])
    out = capsys.readouterr().out
    summary = json.loads(out)
    assert rc == 0, out
    assert summary["seeds"] == 2000 and summary["failing_seeds"] == [] and not any(summary["violations"].values())


def test_a_schedule_replays_bit_for_bit_whatever_the_hash_seed():
    s = schedule_for(31, SETUP)
    a, b = run(s, SETUP), run(s, SETUP)
    assert (a.events, a.sim_time, a.violations) == (b.events, b.sim_time, b.violations)
    code = ("from schedlab.services.dst import Setup, run, schedule_for; s = Setup(); v = run(schedule_for(31, s), s); "
            "print(v.events, v.sim_time)")
    outs = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": h}, capture_output=True, text=True,
                           check=True).stdout for h in ("1", "2")}
    assert outs == {f"{a.events} {a.sim_time}\n"}


def _fence_removed(monkeypatch):
    from schedlab.services import lm_node

    monkeypatch.setattr(lm_node.LMNode, "screen", lambda self, src, msg, meta, signed_at: None)


def _ack_before_output(monkeypatch):
    # with an LM's records batched as when the race was found (today ends' records leave before their GM hears
    # of them, which narrows what acknowledging early can lose to a few microseconds)
    from schedlab.services import acks, lm_node

    monkeypatch.setattr(acks.Acknowledger, "handled", lambda self, message: self.ack_upto(message))
    build = lm_node.LMNode.build

    def build_batching(self):
        build(self)
        self.relay.flush_records = None

    monkeypatch.setattr(lm_node.LMNode, "build", build_batching)


def _restart_on_every_answer(monkeypatch):
    from schedlab.services import gm_node, transport

    def restart_at(self, src, dst, seq):
        self.links[(src, dst)] = [seq[0], seq[1], {}, None, set()]

    build = gm_node.GMNode.build

    def build_always_restarting(self):
        build(self)
        self.router.restarting = lambda: True

    monkeypatch.setattr(transport.InOrder, "restart_at", restart_at)
    monkeypatch.setattr(gm_node.GMNode, "build", build_always_restarting)


def _host_state_before_ends(monkeypatch):
    # as the code was when the race was found: no launch ids to tell an earlier run's end from the current one's
    # (today they catch what the race lets through: alone, it costs a run again, not a duplicate)
    from schedlab.services import host_node, lm_node

    monkeypatch.setattr(host_node.HostNode, "after_request", lambda self, frames: None)
    monkeypatch.setattr(lm_node.LMNode, "_vouch", lambda self, tid, launch: True)


# (the race put back, the invariant it breaks, seeds within which dst finds it — the first failing seed is
# 17, 13, 2 and 147 today; the budget leaves room for changes to the drawn schedules)
RACES = [
    pytest.param(_fence_removed, "exactly_once", 400, id="first-send-time fence removed"),
    pytest.param(_ack_before_output, "completed", 400, id="acknowledgement before output"),
    pytest.param(_restart_on_every_answer, "completed", 400, id="InOrder restart on a second answer"),
    # since takeovers no longer count lost what the hosts reported ended (Recovered.found), the race shows as
    # tasks never done: the GM waits for an end the race let the new LM process drop
    pytest.param(_host_state_before_ends, "completed", 800, id="HostState before ends are confirmed"),
]


# Seeds beyond CI's 2,000 where the long search once found a race (each fixed; reports/services/README.md):
# 104129, 105420 and 108345 a task run twice after an LM takeover's HTTP answer overtook ends in the broker;
# 110246 a lost run's kill that reached the task's next run; 111692 a record lost on its way to the client
# (consumed without acknowledgement) in a broker restart; 114073 a loss's record lost with its GM, the task
# already requested again; 101389 and 102222 what that fix's first form broke (a request held back, its task not
# placed meanwhile, requested a second time by a redelivered job's resolution); 107658 a doubt settled for a
# task never stamped (a handler error); 3614 a task whose earlier run's end (dropped: that run was lost) a host
# reported at an LM takeover, taken for the end of its current run, which had never started; 307230 what that
# fix's first form broke (a task held again from an LM's state has no request stamp at the GM: still protected);
# 309328 an LM's relayed end acknowledged by its GM while the ordered link held it behind a gap, lost when the GM
# was killed before delivering it; 314505 a restarted GM's request stamp wiped by an LM's late answer, so a loss
# notice of the task's earlier run ended the current one; 915019 a launch that failed for a task whose job the GM had
# let go: matching it raised, and the rest of the batch was never requested again; 916441 a restarted GM asked an
# LM about a redelivered job's task before its predecessor's request, slow on the wire, had arrived there ("neither"):
# the task requested elsewhere, then the old request launched it; 1021700 a restarted GM held a task again from an
# LM's state without a stamp, so a loss notice of an earlier run on the same worker (handed back before the crash, left
# in the GM's queue) ended the current run; its request again went to the LM that ran it, which took it for a retry;
# 1808007 (third session's campaign, standbys elsewhere) an earlier request to an LM whose answers were cut, reported
# unsent after the LM took over, unplaced the task's new request to the same worker there: the task was requested a
# third time, on the other LM, and ran twice; 2006893 (the same campaign, one fault: a slow LM-host link) a beacon sent
# before a launch reached the host, delayed on the wire, brought the host back from "down" running nothing: the
# worker the launch had taken was launched onto again, and refused it; 2205242 a rejoining host's kill of a lost run,
# posted with launches the host refused as too late, was refused with them: the run went on, on a worker the LM
# counted free, and the next launch there was refused; fourth session: 2209162 and 2200736 an end the old LM process
# relayed, slow on its way to the GM, overtaken by the new process's takeover (the host answered too late to be
# found): counted lost and run again — a GM now reads its queue before it counts takeover losses; 2421959 an end the
# new process found in its queue and sent to verify, its takeover saying nothing of it: the GM counted it lost — the
# takeover now counts it found; 2200623 a trapped run's end, out late, recorded as the task's second end (allowed with
# the rerun); 2206647 an old GM process's request, slow on the wire, ran after the GM restarted: the delta showed its
# worker taken, and the end (the GM's own, left out of its deltas) never freed it in the new process's view; 3739733
# (fifth session) a request in doubt at a takeover whose host answered too late, found nowhere by the new process and
# run again while the old one's relayed end sat behind the GM's slow broker link — a GM now reads its queue first
LONG_SEARCH_FINDS = [3543, 3614, 15588, 16958, 19126, 101389, 102222, 104129, 105420, 107658, 108345, 110246, 111692, 114073,
                     307230, 309328, 314505, 915019, 916441, 1021700, 1808007, 2006893, 2205242, 2200623, 2200736, 2206647,
                     2209162, 2421959, 3739733]


@pytest.mark.parametrize("seed", LONG_SEARCH_FINDS)
def test_what_the_long_search_found_stays_fixed(seed):
    v = run(schedule_for(seed, SETUP), SETUP)
    assert v.ok, v.violations


@pytest.mark.parametrize(("race", "invariant", "budget"), RACES)
def test_dst_finds_each_race_when_it_is_put_back(monkeypatch, race, invariant, budget):
    race(monkeypatch)
    seed, violations = first_failure(budget)
    assert seed >= 0, f"no schedule of the first {budget} found the race"
    assert invariant in violations, violations


def test_a_failing_schedule_shrinks_to_fewer_faults_that_still_fail(monkeypatch, capsys):
    _fence_removed(monkeypatch)
    seed, _violations = first_failure(400)
    failing = run(schedule_for(seed, SETUP), SETUP)
    small = shrink(failing, SETUP)
    assert not small.ok and set(small.violations) & set(failing.violations)
    assert (len(small.schedule.faults), small.schedule.jobs) <= (len(failing.schedule.faults), failing.schedule.jobs)
    assert len(small.schedule.faults) < len(failing.schedule.faults) or small.schedule.jobs < failing.schedule.jobs
    again = run(Schedule(seed, tuple(parse_schedule(",".join(f.text() for f in small.schedule.faults))), small.schedule.jobs,
                         small.schedule.standby), SETUP)
    assert again.violations == small.violations  # its printed form replays it
    # and so does the command printed for it (the workload drawn for all the jobs, then cut)
    capsys.readouterr()
    assert main([*shlex.split(small.schedule.command(SETUP))[1:], "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["violations"] == small.violations


# seeds of `--faults crash,broker,cut,oneway,loss,delay,pause` the search found (each fixed): 200336 (no pause in
# its schedule) an LM's answer "completed" before the end's record was in the broker, the LM then killed;
# 201043 a redelivered job's resolution requesting again a task whose loss was accepted meanwhile; 415101 as 309328;
# 409161 a beacon waiting in a frozen LM's socket, read by the LM's next process after the frozen one was killed
# (the simulated network's fault: a killed process's sockets die with it); 417684 an end to verify that a
# restarted GM could not judge yet, dropped, and the task run again; 964086 (no pause in its schedule) a late beacon
# of a worker host's process replaced since, read as a second restart: the task just launched on the new process
# counted lost, the launch on its way ran it there, and its GM requested it again elsewhere; 1701901 (third session's
# campaign) a worker host frozen past its lease, its run declared lost and the task launched on another host, then
# the LM restarted: the new process heard both hosts report the task running, and the lost run's launch, reported
# second, replaced the current one's — whose end it then dropped; the task never completed; 3111623 (fourth session's
# campaign) the same freeze, but the relaunched run had completed before the LM restarted: the new process adopted
# the frozen run alone, and its end was the task's second (a host now notices its own stall and stops its runs of
# before it when a new LM process asks)
WITH_PAUSES = ("crash", "broker", "cut", "oneway", "loss", "delay", "pause")


@pytest.mark.parametrize("seed", [200336, 201043, 409161, 415101, 417684, 964086, 1701901, 3111623])
def test_what_the_search_with_pauses_found_stays_fixed(seed):
    v = run(schedule_for(seed, SETUP, WITH_PAUSES), SETUP)
    assert v.ok, v.violations


# seeds with every LM's standby on a host of its own (`--standby-elsewhere`) where the search found the first
# cross-host fence wanting (reports/services/README.md): 1999, 2539 and 3744 a GM's request accepted by the old
# process after the new one started, its rejection dropped, or its doubt recorded against a newer request;
# 5846, 5868, 10062 and 11760 (with pauses) a process frozen or a broker restarted between taking the lease and
# acting; 11960 (with pauses; also without standbys) a launch sent on after its task was vacated; 2500756 (with
# pauses; fails on its first fault alone, a slow LM-broker link) the simulated TCP pipe let a publish overtake three
# sent before it (timer times rounded out of order): the broker's cumulative confirmation named an earlier one, and
# LM 1 held every later publish (its relayed ends among them) behind it for ever; 2511417 (with pauses) a restarted
# GM resolving a job heard "neither done nor here" from an LM process that had sent it the task's end to verify: the
# answer overtook the end, and the task ran again (the GM now reads its queue before running again a task no LM knows);
# 3010388 (with pauses) a standby taking over waited for ever for its drain's marker, taken by the old LM process,
# back from a cut one poll before it stepped down (a marker is now sent again)
ELSEWHERE_FINDS = [(1999, False), (2539, False), (3744, False), (5846, True), (5868, True), (10062, True), (11760, True),
                   (11960, True), (2500756, True), (2511417, True), (3010388, True)]


@pytest.mark.parametrize(("seed", "pauses"), ELSEWHERE_FINDS)
def test_what_the_search_with_standbys_elsewhere_found_stays_fixed(seed, pauses):
    s = schedule_for(seed, SETUP, WITH_PAUSES if pauses else KINDS)
    v = run(Schedule(seed, s.faults, SETUP.jobs, True, True), SETUP)
    assert v.ok, v.violations


# seed 1510989 of `--faults ...,pause` (this session's campaign), shrunk: worker host 0 cut from the broker (3.95 s),
# its task ends (5.8645 s), and 4.5 ms later it is cut from its LM too; the LM declares it down (7.41 s) and the
# task runs again on host 1. The first run's end reached the broker only when the cut healed (9.44 s).
TRAPPED = "pause:lm0@0.538+3.535,cut:host0-broker@3.953+5.491,cut:lm0-host0@5.869+2.396,crash:gm1@7.845+2.418,crash:lm0@8.271+1.782"


def test_a_run_whose_end_was_trapped_on_a_cut_off_host_may_run_again_and_is_counted():
    """No process but the host knew the run had ended: the relaunch after the lease is Megha's (paper IV), at least
    once for that run. The invariants allow it only when the end reached the broker after the loss, and count it."""
    v = run(Schedule(1510989, tuple(parse_schedule(TRAPPED)), 6, False), SETUP)
    assert v.ok and v.trapped == 1, v.violations


def test_a_rerun_whose_end_had_left_its_host_before_the_loss_is_a_violation():
    """The judge's other side: the same records, with the end in the broker before the loss (the system could have
    known: 104129's kind), are a second start; so are two starts with no loss between them."""
    from schedlab.services.dst.invariants import trapped_end
    from schedlab.services.records import FINISHED, LOST, STARTED

    events = [(STARTED, 10, 4.07, 2), (FINISHED, 10, 5.86, {"status": "ok", "worker": 2, "started_at": 4.07}),
              (LOST, 10, 7.41, 2), (STARTED, 10, 7.43, 6)]
    assert trapped_end(10, events, {(10, 2): 9.44})  # reached the broker after the loss
    assert trapped_end(10, events, {})  # never left its host
    assert not trapped_end(10, events, {(10, 2): 6.0})  # in the broker before the loss
    assert not trapped_end(10, [events[0], events[1], events[3]], {})  # run again with no loss declared
    assert not trapped_end(10, [events[0], (LOST, 10, 5.0, 2), events[1], events[3]], {})  # lost before it ended: not this case


def test_a_standby_elsewhere_that_wins_the_lease_after_a_broker_restart_serves_and_the_old_process_steps_down():
    """No port keeps the standby out: after a broker restart it gets the lease first when the LM is frozen then
    (a long GC); it takes a newer token and serves, and the process it replaced, thawed, finds its lease held and
    steps down — a standby again. Every task completes once."""
    from schedlab.services.dst.invariants import check
    from schedlab.services.dst.search import plan_of
    from schedlab.services.dst.world import World, draw_jobs

    stepped = 0
    for seed in range(4):
        jobs = draw_jobs(random.Random(f"{seed}:workload"), SETUP)
        faults = parse_schedule("broker:broker@3+1,pause:lm0@2.9+1.5,pause:lm1@6+0.5,broker:broker@6.1+0.3")
        obs = World(seed, faults, SETUP, plan_of(SETUP), True, jobs, elsewhere=True).run()
        assert not check(obs), (seed, check(obs))
        stepped += obs.mem.counters()["lm_stepped_down"]
    assert stepped >= 4, f"{stepped} step-downs in 4 runs: the case is not exercised"


# seed 72 of `--faults pause`: an LM frozen twice for 2-3 s, worker hosts and a GM frozen too
FROZEN = ("pause:host3@1.115+0.299,pause:lm1@4.967+2.291,pause:host1@4.986+2.181,pause:gm0@7.888+0.523,"
          "pause:host0@8.786+4.079,pause:lm1@8.911+3.417")


def test_processes_frozen_for_seconds_lose_nothing_and_a_frozen_lm_declares_no_host_down():
    """A frozen LM woke, found no beacon heard "for 3.7 s" (they waited in its sockets) and declared its hosts down:
    their runs relaunched onto workers still busy, the launches refused. Silence over the LM's own stall no longer
    counts; frozen worker hosts are still declared down, and their late runs stopped."""
    v = run(Schedule(72, tuple(parse_schedule(FROZEN)), SETUP.jobs, False), SETUP)
    assert v.ok, v.violations


def test_a_pause_is_a_fault_kind_drawn_only_when_named():
    drawn = {f.kind for seed in range(200) for f in schedule_for(seed, SETUP).faults}
    assert "pause" not in drawn  # CI's 2,000 schedules stay what they were
    paused = {f.kind for seed in range(50) for f in schedule_for(seed, SETUP, ("pause",)).faults}
    assert paused == {"pause"}


@pytest.mark.parametrize("standby", [False, True])
def test_a_gm_then_a_worker_host_then_its_lm_killed_leaves_no_client_waiting(standby):
    """The lead of the issue: a GM killed and restarted, 11 s later a worker host, 5 s later its LM."""
    faults = parse_schedule("crash:gm0@2+1,crash:host0@13+1,crash:lm0@18+1")
    for seed in range(6):
        v = run(Schedule(seed, tuple(faults), SETUP.jobs, standby), SETUP)
        assert v.ok, (seed, v.violations)


def test_bad_options_are_one_line_and_exit_2(capsys):
    assert main(["dst", "--faults", "meteor"]) == 2
    assert "--faults: unknown fault kind 'meteor'" in capsys.readouterr().err
    assert main(["dst", "--schedule", "crash:gm0@1+1"]) == 2
    assert "--schedule: replays one schedule: give its --seed too" in capsys.readouterr().err
    assert main(["dst", "--seed", "1", "--schedule", "crash:gm0"]) == 2
    assert "is not kind:target@start+duration" in capsys.readouterr().err
    assert main(["dst", "--first-jobs", "3"]) == 2
    assert "--first-jobs: cuts one replayed schedule: give its --seed too" in capsys.readouterr().err
    assert main(["dst", "--seed", "1", "--first-jobs", "80"]) == 2
    assert "--first-jobs: must be 1..50 (--jobs), got 80" in capsys.readouterr().err
    assert main(["dst", "--seed", "1", "--no-standby", "--standby-elsewhere"]) == 2
    assert "--standby-elsewhere: needs standbys" in capsys.readouterr().err


def test_one_seed_prints_its_verdict_and_a_failing_one_exits_1(monkeypatch, capsys):
    assert main(["dst", "--seed", "3"]) == 0
    assert "every invariant holds" in capsys.readouterr().out
    _fence_removed(monkeypatch)
    seed, _v = first_failure(400)
    assert main(["dst", "--seed", str(seed), "--json"]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["ok"] is False and verdict["violations"]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_stopped_search_keeps_the_verdict_of_what_ran(workers):
    """Ctrl-C or SIGTERM (the CLI raises KeyboardInterrupt from ``progress``) ends a search with the seeds that ran."""
    from schedlab.services.dst.search import search

    seen = []

    def progress(v):
        seen.append(v.schedule.seed)
        if len(seen) == 3:
            raise KeyboardInterrupt

    summary = search(range(0, 400), SETUP, workers=workers, progress=progress)
    assert summary.interrupted and summary.seeds == 3 and seen == [0, 1, 2]
    assert summary.json()["interrupted"] is True and not summary.failing


@pytest.mark.parametrize("processes", ["2", "1"])
def test_sigterm_prints_the_partial_verdict_and_exits_130(tmp_path, processes):
    """The schedule running when the signal comes ends first: raised inside it, the interrupt was caught by the
    simulated processes' coroutines and that schedule judged failing (seed 2215318 in a campaign, one process)."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "schedlab", "dst", "--seeds", "5000", "-j", processes, "--json", "--no-shrink"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    summary = json.loads(out)
    assert summary["interrupted"] is True and 0 <= summary["seeds"] < 5000
    assert summary["failing_seeds"] == []
    assert f"interrupted after {summary['seeds']} of 5000 schedules" in err


def test_a_launch_a_worker_host_refuses_is_handed_back_and_its_task_still_runs_once(monkeypatch):
    """Defence in depth for a wrong truth: hosts refuse the first launch of every fifth task as if its worker were
    busy. Each refusal reaches the task's LM like an end (status ``refused``), which hands the task back; its GM
    requests it again. The ``placement`` invariant flags every refusal — and nothing else fails: every task
    completes, exactly once."""
    from schedlab.services.worker import WorkerHost

    start = WorkerHost._start
    refused: set[int] = set()

    def refusing(self, tid, worker, reply_to, batch):
        if batch and tid % 5 == 0 and tid not in refused:
            refused.add(tid)
            self._refuse(tid, worker, "busy (injected)", reply_to, batch)
            return
        start(self, tid, worker, reply_to, batch)

    monkeypatch.setattr(WorkerHost, "_start", refusing)
    v = run(Schedule(7, (), SETUP.jobs, False), SETUP)
    assert len(refused) > 10, len(refused)
    assert set(v.violations) == {"placement"}, v.violations
    assert f"refused {len(refused)} launch" in v.violations["placement"][0]


# crafted, not drawn (the workloads' 0.2-2 s tasks rarely outlive a lease and a restart): a worker host cut off from
# its LM past the lease, its 8-second run counted lost and requested again — queued behind a rejection, or running on
# another LM — then the LM killed; the cut healed before its new process asked the host, which handed the old run
# over. The queued copy ran beside it and its end was dropped (never completed); the running one's end and the old
# run's were both recorded. Now a GM takes a waiting copy out of its queue, and names stale the runs of tasks it placed
# elsewhere or completed since (StaleRuns): the LM stops them.
@pytest.mark.parametrize(("schedule", "jobs"), [("cut:lm1-host2@1.0+3.0,crash:lm1@4.5+1.0", 12),
                                                ("cut:lm0-host0@1.0+3.0,crash:lm0@4.5+1.0", 2),
                                                ("cut:lm0-host1@0.8+3.5,crash:lm0@4.6+0.6", 4)])
def test_a_run_handed_over_after_its_host_was_cut_past_its_lease_runs_once(schedule, jobs):
    from dataclasses import replace

    from schedlab.services.dst.invariants import check
    from schedlab.services.dst.search import plan_of
    from schedlab.services.dst.world import World, draw_jobs, quiet_logs

    quiet_logs()
    long = [replace(j, durations=[8.0] * len(j.durations)) for j in draw_jobs(random.Random("1:workload"), SETUP)[:jobs]]
    obs = World(1, parse_schedule(schedule), SETUP, plan_of(SETUP), False, long).run()
    assert not check(obs)
    gms = [n for (role, _i), n in obs.mem.nodes.items() if role == "gm"]
    named = sum(n.recovery.stale_runs for n in gms)
    withdrawn = sum(n.recovery.copies_withdrawn for n in gms)
    assert (named, withdrawn) == ((0, 1) if jobs == 12 else (1, 0))


# the same handover, the stale run ending before the GM's StaleRuns reached the LM (its HTTP link to the GM slow): the
# LM vouched for the adopted run's end, recorded as the task's second end. An LM process now lets the ends of runs it
# adopted at its start go to their GM to judge (VerifyEnds), which knows where it placed the task since
def test_an_adopted_run_that_ends_before_it_is_named_stale_is_judged_by_its_gm():
    from dataclasses import replace

    from schedlab.services.dst.invariants import check
    from schedlab.services.dst.search import plan_of
    from schedlab.services.dst.world import World, draw_jobs, quiet_logs

    quiet_logs()
    long = [replace(j, durations=[8.0] * len(j.durations)) for j in draw_jobs(random.Random("1:workload"), SETUP)[:2]]
    schedule = "cut:lm0-host0@1.0+3.0,crash:lm0@4.5+1.0,delay:gm0-lm0:4.0@5.0+6.0"
    obs = World(1, parse_schedule(schedule), SETUP, plan_of(SETUP), False, long).run()
    assert not check(obs)
    assert obs.mem.nodes[("lm", 0)].relay.adopted_verified >= 1
