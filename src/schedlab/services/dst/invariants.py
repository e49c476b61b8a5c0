"""What must hold after every simulated run, whatever the faults — the chaos campaigns' checks, and more.

Each invariant is a name and a one-line reason per violation:

* ``exactly_once`` — from the client's view (:class:`~..records.RunRecords`,
  the same judge as ``schedlab submit``): no task started twice without a
  preemption, finished twice (two runs) or reported twice — with one
  exception, which only an observer of every process can grant
  (:func:`trapped_end`): a run that ended on a worker host cut off from its
  LM and the broker, declared lost before its end could leave the host, and
  run again. No process but that host knew of the end; an LM that waited for
  it would wait for ever for a host that is gone, so Megha relaunches after
  the lease (paper IV) — at least once, for that run. Such reruns are counted
  (``trapped_end_reruns``), not violations, and so is the second end such a
  rerun records once the trapped one gets out; a rerun of a run whose end had
  reached the broker before the loss is one (the system could have known);
* ``completed`` — every task finished and was reported by the end of the run
  (liveness: faults stop, so everything must complete);
* ``placement`` — no task ran on a worker lacking its constraints, and no
  worker host ever refused a launch (an LM that launches onto a busy worker,
  or one without the task's constraints, has the wrong truth);
* ``views_converge`` — once the faults are over and the work is done, every
  GM's view of every partition equals its LM's truth, and no GM believes it
  holds a worker;
* ``jobs_acknowledged`` — no GM holds a job open and no submission queue holds
  a message (a job left unacknowledged would come back to a restarted GM);
* ``no_handler_errors`` — no handler of any process raised (a bug the
  services would log and outlive);
* ``all_serving`` — every GM, LM and worker host serves at the end;
* ``runaway`` — the run did not exceed its event budget (a livelock).
"""

from __future__ import annotations

from typing import Any

from schedlab.services.dst.world import Observation
from schedlab.services.records import FINISHED, LOST, PREEMPTED, STARTED
from schedlab.services.tasks import global_id

INVARIANTS = ("exactly_once", "completed", "placement", "views_converge", "jobs_acknowledged", "no_handler_errors",
              "all_serving", "runaway")


def check(obs: Observation) -> dict[str, list[str]]:
    """Every violated invariant of a run, with its reasons (empty: the run is correct)."""
    out: dict[str, list[str]] = {}

    def bad(name: str, why: str) -> None:
        out.setdefault(name, []).append(why)

    if obs.runaway:
        bad("runaway", f"over the event budget at t={obs.sim_time:.1f} s ({obs.events} events)")
    rec = obs.records
    if rec is None:
        bad("completed", "the client never started")
        return out
    c = rec.counters
    trapped = trapped_reruns(obs)
    # a trapped run's end, out when its host is heard again, is that task's second end (found by the simulation,
    # seed 2200623): allowed with the rerun
    allowed = {"duplicate_starts": len(trapped), "duplicate_finishes": sum(1 for local in rec.finished_twice if local in trapped)}
    for key in ("duplicate_starts", "duplicate_finishes", "duplicate_reports"):
        n = c.get(key, 0) - allowed.get(key, 0)
        if n:
            bad("exactly_once", f"{key} = {n}")
    if rec.recorder.num_tasks < obs.tasks:
        bad("completed", f"only {rec.recorder.num_tasks} of {obs.tasks} tasks submitted")
    elif rec.tasks_done < obs.tasks:
        missing = [t for t in range(rec.recorder.num_tasks) if not rec.recorder.is_reported(t)][:8]
        bad("completed", f"{obs.tasks - rec.tasks_done} of {obs.tasks} tasks not done at t={obs.sim_time:.1f} s (e.g. {missing})")
    _placement(obs, bad)
    _views(obs, bad)
    _jobs(obs, bad)
    errors = sum(rt.handler_errors for rt in obs.runtimes)
    if errors:
        bad("no_handler_errors", f"{errors} handler error(s)")
    mem = obs.mem
    for role, n in (("gm", mem.plan.num_gms), ("lm", mem.plan.num_lms), ("worker", len(mem.plan.hosts))):
        for ident in range(n):
            if not mem.serving(role, ident):
                bad("all_serving", f"{role} {ident} is not serving at the end")
    return out


def trapped_end_reruns(obs: Observation) -> int:
    """How many of the run's second starts follow a run whose end was trapped on its host (see the module)."""
    return len(trapped_reruns(obs))


def trapped_reruns(obs: Observation) -> set[int]:
    """The tasks (local ids) whose second start follows a run whose end was trapped on its host."""
    rec = obs.records
    if rec is None:
        return set()
    return {local for local, events in rec.started_twice if trapped_end(global_id(rec.run, local), events, obs.ends_published)}


def trapped_end(tid: int, events: list[Any], published: dict[tuple[int, int], float]) -> bool:
    """Whether task ``tid``'s second start (``events``: its records, in the order applied) follows a run that had
    ended, was then declared lost (a ``lost`` event after its ``finished``), and whose end reached the broker only
    after that loss (``published``: when each run's end first did)."""
    ended: tuple[int, float] | None = None  # (worker, end) of the run that finished
    lost_after_end: float | None = None
    started = False
    for kind, _local, stamp, value in events:
        if kind == STARTED:
            if started:  # the second start
                if ended is None or lost_after_end is None:
                    return False
                return published.get((tid, ended[0]), float("inf")) > lost_after_end
            started = True
        elif kind == FINISHED and started and isinstance(value, dict):
            ended = (int(value.get("worker", -1)), stamp)
        elif kind == LOST and ended is not None and stamp >= ended[1]:
            lost_after_end = stamp
        elif kind in (LOST, PREEMPTED) and ended is None:
            started = False  # the run ended there: a start after it is a relaunch, not a second start
    return False


def _placement(obs: Observation, bad: Any) -> None:
    rec = obs.records
    assert rec is not None
    masks = obs.mem.plan.cluster.machine_masks
    workers = rec.recorder.column("worker")
    need = rec.tasks.mask
    for t in range(min(len(workers), len(need))):
        w = int(workers[t])
        if w >= 0 and need[t] & ~masks[w]:
            bad("placement", f"task {t} ran on worker {w} without constraints {need[t] & ~masks[w]:#x}")
    refused = 0
    for node in _all_nodes(obs):
        host = getattr(node, "host", None)
        if host is not None and hasattr(host, "refused_launches"):
            refused += host.refused_launches
    if refused:
        bad("placement", f"worker hosts refused {refused} launch(es) (an LM launched onto a worker it believed free)")


def _all_nodes(obs: Observation) -> list[Any]:
    mem = obs.mem
    return list(mem.nodes.values()) + [n for _p, n in mem.standbys.values()] + list(mem.retired)


def _views(obs: Observation, bad: Any) -> None:
    mem = obs.mem
    if obs.finished_at is None or not mem.plan.cluster.slot_mode:
        return
    lay = mem.plan.layout
    lms = {}
    for i in range(lay.num_lms):
        node = mem.nodes.get(("lm", i))
        if node is None or not mem.serving("lm", i):
            return  # judged by all_serving
        lms[i] = node.component
        if node.component.running:
            bad("views_converge", f"LM {i} still runs {len(node.component.running)} task(s) after the work is done")
    for g in range(lay.num_gms):
        node = mem.nodes.get(("gm", g))
        if node is None or not mem.serving("gm", g):
            return
        gm = node.component
        held = sum(r.bit_count() for r in gm.reserved)
        if held:
            bad("views_converge", f"GM {g} believes it holds {held} worker(s)")
        for p in range(lay.num_partitions):
            truth = lms[lay.lm_of[p]].avail[p]
            if gm.avail[p] != truth:
                diff = gm.avail[p] ^ truth
                bad("views_converge", f"GM {g}'s view of partition {p} differs from LM {lay.lm_of[p]}'s truth at "
                                      f"{diff.bit_count()} worker(s) (view {gm.avail[p]:#x}, truth {truth:#x})")


def _jobs(obs: Observation, bad: Any) -> None:
    mem = obs.mem
    if obs.finished_at is None:
        return
    for g in range(mem.plan.num_gms):
        node = mem.nodes.get(("gm", g))
        if node is None or not mem.serving("gm", g):
            continue
        jobs = getattr(node, "jobs", None)
        if jobs is not None and jobs.open:
            bad("jobs_acknowledged", f"GM {g} holds {len(jobs.open)} job(s) open: {sorted(jobs.open)[:4]}")
        for kind, what in (("submit", "submission queue"), ("done", "completion log")):
            q = mem.broker.queues.get(mem.queue((kind, g)))
            if q is not None:
                unacked = sum(len(c.unacked) for c in q.consumers)
                if q.ready or unacked:
                    bad("jobs_acknowledged", f"{what} of GM {g}: {len(q.ready)} waiting, {unacked} unacknowledged")
