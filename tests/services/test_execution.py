"""Running tasks for real: sleep, the synthetic CPU task, commands — outcomes, tails, timeouts, kills."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
from pydantic import ValidationError

from schedlab.services.execution import TAIL_BYTES, TaskSpec, run_task, start_task


def run(spec):
    return asyncio.run(run_task(spec))


def test_sleep_and_cpu():
    o = run(TaskSpec(kind="sleep", duration=0.1))
    assert o.status == "ok" and 0.1 <= o.wall_seconds < 2.1
    o = run(TaskSpec(kind="cpu", duration=0.2, cpus=1.5))  # 0.3 CPU-seconds over two burners
    assert o.status == "ok" and o.cpu_seconds >= 0.27
    # half a CPU for 0.4 s: 0.2 CPU-seconds, not consumed faster than half a CPU
    o = run(TaskSpec(kind="cpu", duration=0.4, cpus=0.5))
    assert o.status == "ok" and 0.18 <= o.cpu_seconds < 0.3 and o.wall_seconds >= 0.38


def test_command_outcomes():
    o = run(TaskSpec(kind="command", argv=[sys.executable, "-c", "import sys; print('hi'); print('oops', file=sys.stderr); sys.exit(3)"]))
    assert (o.status, o.exit_code, o.stdout_tail, o.stderr_tail) == ("failed", 3, "hi\n", "oops\n")
    o = run(TaskSpec(kind="command", argv=["echo", "a;b"]))  # no shell unless asked
    assert (o.status, o.stdout_tail) == ("ok", "a;b\n")
    o = run(TaskSpec(kind="command", argv=["echo a; echo b"], shell=True))
    assert o.stdout_tail == "a\nb\n"
    o = run(TaskSpec(kind="command", argv=["/no/such/program"]))
    assert o.status == "error" and "No such file" in o.error and "\n" not in o.error


def test_output_is_tailed():
    o = run(TaskSpec(kind="command", argv=[sys.executable, "-c", "print('x' * 100000 + 'END')"]))
    assert len(o.stdout_tail) == TAIL_BYTES and o.stdout_tail.endswith("END\n")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("how", ["timeout", "kill"])
def test_timeout_and_kill_end_the_whole_process_group(tmp_path, how):
    # the command starts a grandchild; both must be gone afterwards
    pidfile = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {pidfile}; wait"

    async def main():
        t = start_task(TaskSpec(kind="command", argv=[script], shell=True, timeout=0.5 if how == "timeout" else None))
        if how == "kill":
            for _ in range(100):
                if pidfile.exists() and pidfile.read_text().strip():
                    break
                await asyncio.sleep(0.02)
            t.kill()
        return await asyncio.wait_for(t.wait(), 10), t.procs[0].pid

    o, pid = asyncio.run(main())
    assert o.status == ("timeout" if how == "timeout" else "killed")
    child = int(pidfile.read_text())
    for _ in range(100):
        if _gone(pid) and _gone(child):
            break
        asyncio.run(asyncio.sleep(0.02))
    assert _gone(pid) and _gone(child)


@pytest.mark.parametrize(
    "kw",
    [
        {"kind": "command"},
        {"kind": "command", "argv": []},
        {"kind": "sleep", "argv": ["true"]},
        {"kind": "command", "argv": ["a", "b"], "shell": True},
        {"kind": "cpu", "cpus": 0},
        {"kind": "sleep", "duration": -1},
        {"kind": "command", "argv": ["x" * 70000]},
        {"kind": "gpu"},
        {"kind": "sleep", "colour": "red"},
    ],
)
def test_bad_specs(kw):
    with pytest.raises(ValidationError):
        TaskSpec(**kw)
