"""``schedlab.testing``: every registered scheduler meets the contract, a plugin runs everywhere, broken ones are caught.

The plugin guide's example (``examples/fifo_plugin``) is installed the way pip
leaves a package — a module and its ``.dist-info`` with the entry point — on a
folder put on ``PYTHONPATH``, then run by ``simulate``, ``sweep`` and
``check_scheduler`` in fresh processes without touching schedlab's code. Each
kind of broken scheduler (over-allocation, constraints ignored, a global
random stream, the wall clock, completions never learned, counters that are
not ints) must be refused with a line naming the check.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from schedlab.schedulers import registry
from schedlab.testing import ContractViolation, FakeRuntime, check_scheduler

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fifo_plugin"
sys.path.insert(0, str(EXAMPLE))
import schedlab_fifo  # noqa: E402  (the example is not a package of this project)


@pytest.mark.parametrize("name", registry.available())
def test_every_registered_scheduler_meets_the_contract(name):
    report = check_scheduler(name)
    assert "slots" in report.modes and report.tasks > 0
    assert report.checks == ["placed once", "no over-allocation", "constraints respected", "deterministic", "counters", "sans-IO"]


def test_the_plugin_guides_example_meets_the_contract():
    report = check_scheduler(schedlab_fifo.FirstFitScheduler)
    assert report.modes == ["slots"] and report.unsupported == [
        "multi-resource: first-fit runs one task per worker slot: it supports slot mode only"]


@pytest.fixture
def installed_plugin(tmp_path):
    """The example as pip installs it: the module and a dist-info naming its entry point, on PYTHONPATH."""
    site = tmp_path / "site"
    info = site / "schedlab_fifo-0.1.dist-info"
    info.mkdir(parents=True)
    shutil.copy(EXAMPLE / "schedlab_fifo.py", site)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: schedlab-fifo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[schedlab.schedulers]\nfirst-fit = schedlab_fifo:FirstFitScheduler\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def run(args, env, cwd):
    return subprocess.run([sys.executable, "-m", "schedlab", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_plugin_installed_by_entry_point_runs_in_simulate_sweep_and_check_scheduler(installed_plugin, tmp_path):
    trace = tmp_path / "t.tr"
    trace.write_text("0 2 1.5 1 2\n0.5 1 3 3\n1 3 1 1 1 1\n")
    r = run(["simulate", "-s", "first-fit", "-t", str(trace), "-w", "20", "--no-constraints", "-q", "--summary-json", str(tmp_path / "s.json")],
            installed_plugin, tmp_path)
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["scheduler"] == "first-fit" and summary["tasks"] == 6 and summary["jrt_delay"]["count"] == 3
    spec = tmp_path / "exp.yaml"
    spec.write_text(f"name: ff\nworkloads: [{{trace: {json.dumps(str(trace))}}}]\ndata_centers: [{{workers: 20}}]\n"
                    "schedulers: [{name: first-fit}, {name: ideal}]\nseeds: [0]\n")
    r = run(["sweep", str(spec), "--out", str(tmp_path / "res")], installed_plugin, tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(list((tmp_path / "res" / "runs").glob("*/summary.json"))) == 2
    code = "from schedlab.testing import check_scheduler; print(check_scheduler('first-fit').modes)"
    r = subprocess.run([sys.executable, "-c", code], env=installed_plugin, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "['slots']", r.stderr
    r = run(["simulate", "-s", "first-fit", "-t", str(trace), "-w", "20", "--param", "x=1"], installed_plugin, tmp_path)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: param x: unknown parameter for scheduler 'first-fit' (its parameters: none)"]


# -- broken schedulers: each is caught, with the check named ------------------------------------------------------
def broken(name, dispatch=None, finished=None, counters=None):
    master_cls = type(f"{name}Master", (schedlab_fifo.Master,), {k: v for k, v in
                                                                   (("dispatch", dispatch), ("finished", finished)) if v})
    attrs = {"name": name}
    if counters is not None:
        attrs["counters"] = lambda self: counters

    def init(self, ctx, params):
        schedlab_fifo.Scheduler.__init__(self, ctx, params)
        self.master = master_cls(ctx)

    attrs["__init__"] = init
    return type(name, (schedlab_fifo.FirstFitScheduler,), attrs)


def _launch(self, tid, w):
    self.rt.send(schedlab_fifo.POOL_ADDRESS, schedlab_fifo.LaunchTask(tid, w, reply_to=self.address))


def overallocating(self):
    masks, need = self.ctx.cluster.machine_masks, self.ctx.tasks.mask
    for tid in self.waiting:  # the first eligible worker, idle or not
        _launch(self, tid, next(w for w in range(len(masks)) if not need[tid] & ~masks[w]))
    self.waiting.clear()


def ignoring_constraints(self):
    while self.waiting and self.idle:
        _launch(self, self.waiting.popleft(), self.idle.pop(0))


def global_random(self):
    random.shuffle(self.idle)  # the module's stream: seeded from the OS, not from the run
    schedlab_fifo.Master.dispatch(self)


def wall_clock(self):
    self.last_dispatch = time.monotonic()
    schedlab_fifo.Master.dispatch(self)


def forgetting(self, m):
    self.idle.append(m.worker)
    self.dispatch()


@pytest.mark.parametrize(("sched", "says"), [
    (broken("Overallocating", dispatch=overallocating), "over-allocation: task"),
    (broken("Unconstrained", dispatch=ignoring_constraints), "constraints: task"),
    (broken("Shuffling", dispatch=global_random), "deterministic: seed 0 (slots) ran differently the second time"),
    (broken("Clocked", dispatch=wall_clock), "sans-IO: tests.test_testing_kit called time.monotonic()"),
    (broken("Forgetful", finished=forgetting), "placed once: the scheduler learned 0 of"),
    (broken("Counting", counters={"placed": 1.5}), "counters: counters() must be a flat dict of str to int"),
], ids=["over-allocation", "constraints", "determinism", "wall-clock", "completions", "counters"])
def test_each_broken_rule_is_caught_and_named(sched, says):
    with pytest.raises(ContractViolation) as e:
        check_scheduler(sched)
    assert says in str(e.value)


def test_not_a_scheduler_is_refused():
    with pytest.raises(ContractViolation, match="is not a schedlab Scheduler class"):
        check_scheduler(dict)  # type: ignore[arg-type]


def test_the_fake_runtime_fires_timers_in_time_order_and_skips_cancelled_ones():
    rt, fired = FakeRuntime(), []
    rt.call_later(2.0, fired.append, "b")
    cancelled = rt.call_later(1.0, fired.append, "x")
    rt.call_later(1.0, fired.append, "a")
    rt.cancel(cancelled)
    rt.pump()
    assert fired == ["a", "b"] and rt.now() == 2.0
