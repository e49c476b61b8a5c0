"""Running tasks for real: sleep, the synthetic CPU task, commands — outcomes, tails, timeouts, kills.

Timings are only bounded generously (the CI machine has two cores and may be
busy). "Gone" means not running: a grandchild re-parented to a PID 1 that
does not reap may linger as a zombie, which is not ours to reap.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from schedlab.services.execution import TAIL_BYTES, TaskSpec, run_task, start_task


def run(spec: TaskSpec):
    return asyncio.run(run_task(spec))


def _gone(pid: int) -> bool:
    """Not running: no such process, or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _not_our_child(pid: int) -> bool:
    """Reaped: not a child (zombie or not) of this process any more."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _eventually_gone(*pids: int) -> bool:
    for _ in range(100):
        if all(_gone(p) for p in pids):
            return True
        asyncio.run(asyncio.sleep(0.02))
    return False


async def _read_pid(pidfile: Path) -> int:
    for _ in range(250):
        if pidfile.exists() and pidfile.read_text().strip():
            return int(pidfile.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError("the command never wrote its child's pid")


def test_sleep():
    o = run(TaskSpec(kind="sleep", duration=0.2))
    assert o.status == "ok" and o.cpu_seconds == 0 and 0.2 <= o.wall_seconds < 2.2


def test_cpu_task_consumes_the_cpu_it_asks_for():
    o = run(TaskSpec(kind="cpu", duration=0.3))
    assert o.status == "ok" and o.exit_code == 0 and o.cpu_seconds >= 0.9 * 0.3 and o.wall_seconds >= 0.29
    o = run(TaskSpec(kind="cpu", duration=0.2, cpus=1.5))  # 0.3 CPU-seconds over two burners
    assert o.status == "ok" and o.cpu_seconds >= 0.9 * 0.3
    # half a CPU for 0.4 s: 0.2 CPU-seconds, not consumed faster than half a CPU
    o = run(TaskSpec(kind="cpu", duration=0.4, cpus=0.5))
    assert o.status == "ok" and 0.18 <= o.cpu_seconds < 0.35 and o.wall_seconds >= 0.38


def test_cpu_task_kill_and_timeout_leave_no_burner():
    async def main(how):
        t = start_task(TaskSpec(kind="cpu", duration=30, cpus=2, timeout=0.3 if how == "timeout" else None))
        await asyncio.sleep(0.3)
        if how == "kill":
            t.kill()
        return await asyncio.wait_for(t.wait(), 10), t.pids

    for how in ("kill", "timeout"):
        o, pids = asyncio.run(main(how))
        assert o.status == ("killed" if how == "kill" else "timeout") and o.wall_seconds < 10
        assert len(pids) == 2 and all(_not_our_child(p) for p in pids) and _eventually_gone(*pids)


def test_command_outcomes():
    prog = "import sys; print('hi'); print('oops', file=sys.stderr); sys.exit(3)"
    o = run(TaskSpec(kind="command", argv=[sys.executable, "-c", prog]))
    assert (o.status, o.exit_code, o.stdout_tail, o.stderr_tail, o.error) == ("failed", 3, "hi\n", "oops\n", None)
    o = run(TaskSpec(kind="command", argv=["echo", "a;b"]))  # no shell unless asked
    assert (o.status, o.exit_code, o.stdout_tail) == ("ok", 0, "a;b\n")
    o = run(TaskSpec(kind="command", argv=["echo a; echo b"], shell=True))
    assert (o.status, o.stdout_tail) == ("ok", "a\nb\n")
    o = run(TaskSpec(kind="command", argv=["sh", "-c", 'echo "$X" && pwd'], env={"X": "y"}, cwd="/"))
    assert o.stdout_tail == "y\n/\n"


def test_command_cpu_time_is_measured():
    prog = "import time\nwhile time.process_time() < 0.2: pass"
    o = run(TaskSpec(kind="command", argv=[sys.executable, "-c", prog]))
    assert o.status == "ok" and 0.18 <= o.cpu_seconds < 5
    # through a shell that waits for it: the shell's waited-for child counts
    o = run(TaskSpec(kind="command", argv=[f"'{sys.executable}' -c '{prog}'; true"], shell=True))
    assert o.status == "ok" and o.cpu_seconds >= 0.18


def test_cannot_start_is_an_error_outcome(tmp_path):
    o = run(TaskSpec(kind="command", argv=["/no/such/program", "x"]))
    assert (o.status, o.exit_code) == ("error", None)
    assert "No such file" in o.error and "/no/such/program" in o.error and "\n" not in o.error
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\necho hi\n")  # not executable
    o = run(TaskSpec(kind="command", argv=[str(script)]))
    assert o.status == "error" and "Permission denied" in o.error
    o = run(TaskSpec(kind="command", argv=["true"], cwd=str(tmp_path / "missing")))
    assert o.status == "error" and "missing" in o.error


def test_output_is_tailed():
    o = run(TaskSpec(kind="command", argv=[sys.executable, "-c", "print('x' * 100000 + 'END')"]))
    assert len(o.stdout_tail) == TAIL_BYTES and o.stdout_tail.endswith("xEND\n")
    # a tail cut inside a multi-byte character starts at the next whole one
    o = run(TaskSpec(kind="command", argv=[sys.executable, "-c", "import sys; sys.stderr.write('é' * 5000 + 'a')"]))
    assert o.stderr_tail == "é" * (TAIL_BYTES // 2 - 1) + "a"


@pytest.mark.parametrize("how", ["timeout", "kill", "cancel"])
def test_timeout_kill_and_cancel_end_the_whole_process_group(tmp_path, how):
    # the command starts a grandchild; both must be gone afterwards
    pidfile = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {pidfile}; wait"

    async def main():
        t = start_task(TaskSpec(kind="command", argv=[script], shell=True, timeout=0.5 if how == "timeout" else None))
        child = await _read_pid(pidfile)
        if how == "kill":
            t.kill()
        elif how == "cancel":  # a worker cancelling the coroutine that waits for its task (a preemption)
            waiter = asyncio.ensure_future(t.wait())
            await asyncio.sleep(0.05)
            waiter.cancel()
        o = await asyncio.wait_for(asyncio.shield(t.wait()), 10)
        return o, t.pids[0], child

    o, pid, child = asyncio.run(main())
    assert o.status == ("timeout" if how == "timeout" else "killed") and o.exit_code == -9
    assert _not_our_child(pid) and _eventually_gone(pid, child)


def test_what_a_command_leaves_behind_dies_with_it(tmp_path):
    # the shell exits at once, its background child holding stdout: the task ends, and so does the child
    pidfile = tmp_path / "child.pid"
    o = run(TaskSpec(kind="command", argv=[f"sleep 30 & echo $! > {pidfile}; echo started"], shell=True))
    assert (o.status, o.stdout_tail) == ("ok", "started\n") and o.wall_seconds < 5
    assert _eventually_gone(int(pidfile.read_text()))


def test_kill_before_and_after_the_end():
    async def main():
        t = start_task(TaskSpec(kind="command", argv=["sleep", "30"]))
        t.kill()  # before the process even started
        first = await t.wait()
        t = start_task(TaskSpec(kind="sleep", duration=30))
        await asyncio.sleep(0)
        t.kill()
        second = await t.wait()
        t = start_task(TaskSpec(kind="command", argv=["true"]))
        third = await t.wait()
        t.kill()  # after the end: nothing to do, the outcome stands
        return first, second, third, t.done()

    first, second, third, done = asyncio.run(main())
    assert (first.status, second.status, third.status, done) == ("killed", "killed", "ok", True)


def test_run_task_cancelled_kills(tmp_path):
    pidfile = tmp_path / "pid"

    async def main():
        job = asyncio.ensure_future(run_task(TaskSpec(kind="command", argv=[f"echo $$ > {pidfile}; exec sleep 30"], shell=True)))
        pid = await _read_pid(pidfile)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        return pid

    pid = asyncio.run(main())  # asyncio.run waits for the task's clean-up: the child is reaped
    assert _not_our_child(pid) and _eventually_gone(pid)


@pytest.mark.parametrize(
    "kw",
    [
        {"kind": "command"},
        {"kind": "command", "argv": []},
        {"kind": "sleep", "argv": ["true"]},
        {"kind": "cpu", "argv": ["true"]},
        {"kind": "cpu", "shell": True},
        {"kind": "command", "argv": ["a", "b"], "shell": True},
        {"kind": "cpu", "cpus": 0},
        {"kind": "sleep", "duration": -1},
        {"kind": "sleep", "duration": float("nan")},
        {"kind": "command", "argv": ["true"], "timeout": 0},
        {"kind": "command", "argv": ["x" * 70000]},
        {"kind": "command", "argv": ["x" * 40000, "y" * 40000]},
        {"kind": "gpu"},
        {"kind": "sleep", "colour": "red"},
    ],
)
def test_bad_specs(kw):
    with pytest.raises(ValidationError):
        TaskSpec(**kw)


def test_spec_is_frozen():
    spec = TaskSpec(kind="command", argv=["true"])
    with pytest.raises(ValidationError):
        spec.shell = True  # type: ignore[misc]
