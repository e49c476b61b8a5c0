"""Running a task for real on a worker machine: a sleep, the Megha paper's synthetic CPU task, or a command.

* ``sleep`` — waits ``duration`` wall seconds (measures the scheduler, not the
  machine).
* ``cpu`` — the paper's synthetic task (Section VI-F): a task asking for
  ``cpus`` CPUs for ``duration`` seconds completes only once it has consumed
  ``cpus · duration`` CPU-seconds ("0.5 CPU cores for 2 seconds … after
  consuming 1 CPU-core-second"). It runs ``ceil(cpus)`` burner processes that
  share that work equally, each consuming CPU no faster than its share of
  ``cpus`` (it sleeps when ahead), so an unloaded task takes ``duration``; when
  co-located tasks want more than the machine's cores they get less and their
  wall time stretches — the interference the paper measures as execution
  delay. A burner is a tiny ``python -S`` loop on ``time.process_time``
  (it imports nothing, so it starts in milliseconds) that prints the CPU time
  it used.
* ``command`` — ``argv`` run without a shell unless the job asks for one
  (``shell: true``, then ``argv`` is the one command string), in its own
  process group with an optional ``timeout``; its exit code and the last
  4 KiB of stdout and stderr are kept (output is streamed, never held whole).
  Its CPU time is not measured (the event loop reaps the child, so its
  ``rusage`` is not ours to read): ``cpu_seconds`` is None.

:func:`start_task` returns a :class:`RunningTask` at once; ``kill()`` ends it
(its whole process group) with status ``killed``. Failures of the task itself
— a missing executable, a non-zero exit, a timeout — are its outcome, never an
exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TAIL_BYTES = 4096
MAX_ARGV_BYTES = 64 * 1024

# Burn t CPU-seconds (beyond the interpreter's start-up) at no more than r CPUs, so that unhindered
# it takes t/r seconds: the task's duration. It burns in quanta and sleeps while ahead of r; once its
# work is done it waits out the rest of the duration. It prints the CPU time it burnt.
_BURN = (
    "import sys,time\nt=float(sys.argv[1]);r=float(sys.argv[2]);p=time.process_time;m=time.monotonic;s=time.sleep\n"
    "c=p();t0=m();D=t/r;q=min(0.002,t/4)\n"
    "while 1:\n u=p()-c;e=m()-t0\n if u>=t:\n  if e>=D:break\n  s(D-e);continue\n"
    " a=u-r*e\n if a>q:s(min(0.05,a/r))\n"
    "print(p()-c)"
)


class TaskSpec(BaseModel):
    """What a task runs (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["sleep", "cpu", "command"] = "sleep"
    duration: float = Field(0.0, ge=0, allow_inf_nan=False)
    cpus: float = Field(1.0, gt=0, le=1024, allow_inf_nan=False)
    argv: list[str] | None = None
    shell: bool = False
    timeout: float | None = Field(None, gt=0, allow_inf_nan=False)
    env: dict[str, str] | None = None
    cwd: str | None = None

    @model_validator(mode="after")
    def _check(self) -> TaskSpec:
        if self.kind == "command":
            if not self.argv:
                raise ValueError("a command task needs argv")
            if sum(len(a.encode()) for a in self.argv) > MAX_ARGV_BYTES:
                raise ValueError(f"argv is over {MAX_ARGV_BYTES} bytes")
            if self.shell and len(self.argv) != 1:
                raise ValueError("with shell: true, argv is one command string")
        else:
            if self.argv is not None or self.shell or self.env is not None or self.cwd is not None:
                raise ValueError(f"a {self.kind} task takes no argv, shell, env or cwd")
        return self


@dataclass
class TaskOutcome:
    status: Literal["ok", "failed", "timeout", "killed", "error"]
    exit_code: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    cpu_seconds: float | None = 0.0
    wall_seconds: float = 0.0
    error: str | None = None


class _Tail:
    """The last ``TAIL_BYTES`` of a stream."""

    def __init__(self) -> None:
        self.buf = bytearray()

    async def read(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            self.buf += chunk
            if len(self.buf) > TAIL_BYTES:
                del self.buf[: len(self.buf) - TAIL_BYTES]

    def text(self) -> str:
        return self.buf.decode("utf-8", errors="replace")


class RunningTask:
    """A task being run; ``await wait()`` for its outcome, ``kill()`` to stop it."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec
        self.procs: list[asyncio.subprocess.Process] = []
        self.killed = False
        self._wake = asyncio.Event()
        self._t0 = time.monotonic()
        self._future = asyncio.ensure_future(self._run())

    async def wait(self) -> TaskOutcome:
        return await asyncio.shield(self._future)

    def kill(self) -> None:
        self.killed = True
        self._wake.set()
        for p in self.procs:
            if p.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(p.pid, signal.SIGKILL)

    async def _run(self) -> TaskOutcome:
        spec = self.spec
        try:
            if spec.kind == "sleep":
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), spec.duration)
                out = TaskOutcome("killed" if self.killed else "ok")
            elif spec.kind == "cpu":
                out = await self._cpu()
            else:
                out = await self._command()
        except asyncio.CancelledError:
            self.kill()
            raise
        out.wall_seconds = time.monotonic() - self._t0
        return out

    async def _spawn(self, *args: str, shell: bool = False) -> asyncio.subprocess.Process:
        spec = self.spec
        env = None if spec.env is None else {**os.environ, **spec.env}
        pipes = {"stdout": asyncio.subprocess.PIPE, "stderr": asyncio.subprocess.PIPE, "stdin": asyncio.subprocess.DEVNULL}
        if shell:
            proc = await asyncio.create_subprocess_shell(args[0], start_new_session=True, env=env, cwd=spec.cwd, **pipes)
        else:
            proc = await asyncio.create_subprocess_exec(*args, start_new_session=True, env=env, cwd=spec.cwd, **pipes)
        self.procs.append(proc)
        if self.killed:
            self.kill()
        return proc

    async def _cpu(self) -> TaskOutcome:
        spec = self.spec
        n = max(1, math.ceil(spec.cpus - 1e-9))
        each = spec.duration * spec.cpus / n
        rate = min(1.0, spec.cpus / n)
        procs = [await self._spawn(sys.executable, "-S", "-c", _BURN, repr(each), repr(rate)) for _ in range(n)]
        results = await asyncio.gather(*(p.communicate() for p in procs))
        if self.killed:
            return TaskOutcome("killed")
        cpu = 0.0
        for (stdout, _stderr), p in zip(results, procs, strict=True):
            if p.returncode != 0:
                return TaskOutcome("error", p.returncode, error="CPU burner failed")
            with contextlib.suppress(ValueError):
                cpu += float(stdout.decode().strip() or 0)
        return TaskOutcome("ok", 0, cpu_seconds=cpu)

    async def _command(self) -> TaskOutcome:
        spec = self.spec
        argv = spec.argv or []
        try:
            proc = await self._spawn(*argv, shell=spec.shell)
        except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
            return TaskOutcome("error", error=f"cannot run {argv[0]!r}: {e.strerror or e}", cpu_seconds=None)
        except OSError as e:
            return TaskOutcome("error", error=f"cannot run {argv[0]!r}: {e}", cpu_seconds=None)
        out, err = _Tail(), _Tail()
        io = asyncio.gather(out.read(proc.stdout), err.read(proc.stderr), proc.wait())
        timed_out = False
        try:
            await asyncio.wait_for(asyncio.shield(io), spec.timeout)
        except TimeoutError:
            timed_out = True
            self.kill()
            await io
        code = proc.returncode
        if self.killed and not timed_out:
            status = "killed"
        elif timed_out:
            status = "timeout"
        else:
            status = "ok" if code == 0 else "failed"
        return TaskOutcome(status, code, out.text(), err.text(), None)


def start_task(spec: TaskSpec) -> RunningTask:
    """Start running ``spec`` now (inside a running event loop)."""
    return RunningTask(spec)


async def run_task(spec: TaskSpec) -> TaskOutcome:
    return await start_task(spec).wait()
