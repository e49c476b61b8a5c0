"""Running a task for real on a worker machine: a sleep, the Megha paper's synthetic CPU task, or a command.

* ``sleep`` — waits ``duration`` wall seconds on a loop timer (measures the
  scheduler, not the machine); ``cpu_seconds`` is 0.
* ``cpu`` — the paper's synthetic task (Section VI-F): a task asking for
  ``cpus`` CPUs for ``duration`` seconds completes only once it has consumed
  ``cpus · duration`` CPU-seconds ("0.5 CPU cores for 2 seconds … after
  consuming 1 CPU-core-second"). It runs ``ceil(cpus)`` burner processes that
  share that work equally (1.5 CPUs: two burners of ``0.75 · duration`` each),
  each consuming CPU no faster than its share of ``cpus`` (it sleeps when
  ahead) and then waiting out the rest of ``duration``, so an unloaded task
  takes ``duration``; when co-located tasks want more than the machine's cores
  they get less and their wall time stretches — the interference the paper
  measures as execution delay. Processes rather than threads, so the burners
  really run in parallel and can be killed. A burner is a tiny
  ``python -I -S -c`` loop on ``time.process_time`` that imports nothing (not
  schedlab), so it starts in milliseconds; its interpreter start-up counts
  towards its work.
* ``command`` — ``argv`` run without a shell unless the job asks for one
  (``shell: true``, then ``argv`` is the one command string), with ``env``
  added to the worker's environment, in ``cwd``; its exit code and the last
  4 KiB of stdout and stderr are kept (output is streamed, never held whole).

Every process is started in a session (and process group) of its own, and
reaped here with ``os.wait4``, which is also how ``cpu_seconds`` is measured:
the kernel's user + system time of the task's processes and of the
descendants they waited for. Background processes a command leaves behind
die with it: when a task's process exits, the rest of its process group is
killed (as a batch system ends a job), so nothing outlives the task, steals
the next task's CPU or holds its output pipes open. A process that leaves the
group on purpose (``setsid``) escapes this, and its CPU time is not counted.

A process is only reaped after its group has been killed, so its pid (the
group's id) cannot have been reused when we signal it. Exits are learnt from a
pidfd on the event loop (Linux 5.3+), else from a thread blocked in
``waitid(WNOWAIT)`` — the same two ways asyncio watches its own children,
whose child watchers we cannot use as they reap the child and drop its
``rusage``.

:func:`start_task` returns a :class:`RunningTask` at once; ``kill()`` ends it
(every process group it started) with status ``killed``, and cancelling a
``wait()`` does the same — the awaiting code owns the task, and a worker that
cancels the coroutine running a task (a preemption) must not leave it running;
shield the ``wait()`` to give up waiting without killing. ``timeout`` applies
to every kind: a task still running after ``timeout`` seconds is killed with
status ``timeout``. Failures of the task itself — a missing executable, a
non-zero exit, a timeout — are its outcome, never an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TAIL_BYTES = 4096
MAX_ARGV_BYTES = 64 * 1024
# After a task's process exits and its group is killed, how long its output pipes may take to
# reach end-of-file: only a process that escaped the group can hold them open longer.
DRAIN_SECONDS = 1.0
# How long a cancelled task's clean-up waits for its killed processes to be reaped.
REAP_SECONDS = 5.0

Status = Literal["ok", "failed", "timeout", "killed", "error"]

# Burn t CPU-seconds of process time (interpreter start-up included) at no more than r CPUs, so that
# unhindered it takes t/r seconds: the task's duration. It burns in quanta and sleeps while ahead
# of r; once its work is done it waits out the rest of the duration.
_BURN = (
    "import sys,time\nt=float(sys.argv[1]);r=float(sys.argv[2]);p=time.process_time;m=time.monotonic;s=time.sleep\n"
    "t0=m();D=t/r;q=min(0.002,t/4)\n"
    "while 1:\n u=p();e=m()-t0\n if u>=t:\n  if e>=D:break\n  s(D-e);continue\n"
    " a=u-r*e\n if a>q:s(min(0.05,a/r))\n"
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
    retries: int = Field(0, ge=0, le=100)  # a command that fails runs again, up to this many more times (same worker)

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
            if self.argv is not None or self.shell or self.env is not None or self.cwd is not None or self.retries:
                raise ValueError(f"a {self.kind} task takes no argv, shell, env, cwd or retries")
        return self


@dataclass
class TaskOutcome:
    """How a task ended.

    ``exit_code`` is the command's (or a failed burner's) exit code, negative
    for a signal (-9 after a kill or a timeout), None for a sleep or a command
    that could not start. ``cpu_seconds`` is measured (see the module
    docstring); None when it could not be (the process was reaped elsewhere).
    ``error`` is one line saying why the task could not run.
    """

    status: Status
    exit_code: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    cpu_seconds: float | None = 0.0
    wall_seconds: float = 0.0
    error: str | None = None


class _Tail(asyncio.Protocol):
    """Reads a pipe to its end, keeping only the last ``TAIL_BYTES``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.buf = bytearray()
        self.closed = loop.create_future()
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) > TAIL_BYTES:
            del self.buf[:-TAIL_BYTES]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def text(self) -> str:
        buf = bytes(self.buf)
        if len(buf) == TAIL_BYTES:
            # cut where a character starts: skip the continuation bytes (10xxxxxx) of one cut in two
            skip = 0
            while skip < 3 and skip < len(buf) and buf[skip] & 0xC0 == 0x80:
                skip += 1
            buf = buf[skip:]
        return buf.decode("utf-8", errors="replace")


@dataclass
class _Child:
    """A process of a task: the leader of its own process group."""

    pid: int
    popen: subprocess.Popen
    out: _Tail | None
    err: _Tail
    reaped: bool = False
    exit_code: int | None = None
    cpu: float | None = None


async def _exited(pid: int) -> None:
    """Return once child ``pid`` has exited, leaving it unreaped (its zombie keeps its pid and group id)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not fut.done():
            fut.set_result(None)

    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = -1
    if fd >= 0:
        loop.add_reader(fd, wake)
        try:
            await fut
        finally:
            loop.remove_reader(fd)
            os.close(fd)
        return

    def block() -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            loop.call_soon_threadsafe(wake)

    threading.Thread(target=block, name=f"schedlab-wait-{pid}", daemon=True).start()
    await fut


def _kill_group(pid: int) -> None:
    """SIGKILL process group ``pid`` and its (unreaped, so still ours) leader, which may have left it."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class RunningTask:
    """A task being run; ``await wait()`` for its outcome, ``kill()`` to stop it.

    Create it with :func:`start_task` inside a running event loop.
    """

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec
        self._children: list[_Child] = []
        self._reason: Literal["killed", "timeout"] | None = None  # why we ended it, first reason wins
        self._done = False
        self._wake = asyncio.Event()
        self._t0 = time.monotonic()
        self._future = asyncio.ensure_future(self._run())

    @property
    def pids(self) -> list[int]:
        """The processes started so far; each is the leader of its own process group."""
        return [c.pid for c in self._children]

    def done(self) -> bool:
        """True once the task has ended and its outcome is ready."""
        return self._future.done()

    async def wait(self) -> TaskOutcome:
        """The task's outcome, once it has ended; cancelling this call kills the task."""
        try:
            return await asyncio.shield(self._future)
        except asyncio.CancelledError:
            self.kill()
            raise

    def kill(self) -> None:
        """End the task now, with status ``killed`` (no effect once it has ended)."""
        self._end("killed")

    def _end(self, reason: Literal["killed", "timeout"]) -> None:
        if self._done:
            return
        if self._reason is None:
            self._reason = reason
        self._wake.set()
        for c in self._children:
            if not c.reaped:
                _kill_group(c.pid)

    async def _run(self) -> TaskOutcome:
        spec = self.spec
        loop = asyncio.get_running_loop()
        timer = None if spec.timeout is None else loop.call_later(spec.timeout, self._end, "timeout")
        try:
            if spec.kind == "sleep":
                out = await self._sleep()
            elif spec.kind == "cpu":
                out = await self._cpu()
            else:
                out = await self._command()
        except asyncio.CancelledError:
            # the loop is shutting down (or someone cancelled the task itself): leave no process behind
            self.kill()
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._reap_all(), REAP_SECONDS)
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self._done = True
        out.wall_seconds = time.monotonic() - self._t0
        return out

    # -- kinds ------------------------------------------------------------------------------------
    async def _sleep(self) -> TaskOutcome:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), self.spec.duration)
        return TaskOutcome(self._reason or "ok", cpu_seconds=0.0)

    async def _cpu(self) -> TaskOutcome:
        spec = self.spec
        n = max(1, math.ceil(spec.cpus - 1e-9))  # 1.0000000001 CPUs is one burner, not two
        each = spec.duration * spec.cpus / n
        rate = min(1.0, spec.cpus / n)
        argv = [sys.executable, "-I", "-S", "-c", _BURN, repr(each), repr(rate)]
        try:
            for _ in range(n):
                if self._reason is not None:
                    break
                await self._spawn(argv, shell=False, stdout=False)
        except (OSError, ValueError) as e:
            self.kill()
            await self._reap_all()
            self._reason = None
            return TaskOutcome("error", cpu_seconds=self._cpu_sum(), error=_one_line(f"cannot start a CPU burner: {e}"))
        await asyncio.gather(*(self._finish(c) for c in self._children))
        cpu = self._cpu_sum()
        if self._reason is not None:
            return TaskOutcome(self._reason, cpu_seconds=cpu)
        for c in self._children:
            if c.exit_code != 0:
                return TaskOutcome("error", c.exit_code, "", c.err.text(), cpu, error=f"a CPU burner failed (exit code {c.exit_code})")
        return TaskOutcome("ok", 0, cpu_seconds=cpu)

    async def _command(self) -> TaskOutcome:
        spec = self.spec
        argv = spec.argv or []
        if self._reason is not None:  # killed (or timed out) before it could start
            return TaskOutcome(self._reason, cpu_seconds=0.0)
        try:
            c = await self._spawn(argv, shell=spec.shell, stdout=True)
        except (OSError, ValueError) as e:
            return TaskOutcome("error", error=_one_line(f"cannot run {argv[0]!r}: {_why(e, argv[0])}"), cpu_seconds=0.0)
        await self._finish(c)
        assert c.out is not None
        out = TaskOutcome(self._reason or "ok", c.exit_code, c.out.text(), c.err.text(), c.cpu)
        if self._reason is None and c.exit_code is None:
            out.status, out.error = "error", "its exit status was lost (reaped by another child watcher)"
        elif self._reason is None and c.exit_code != 0:
            out.status = "failed"
        return out

    # -- processes --------------------------------------------------------------------------------
    async def _spawn(self, argv: list[str], shell: bool, stdout: bool) -> _Child:
        """Start one process in a session of its own, its stderr (and stdout) read into tails."""
        spec = self.spec
        env = None if spec.env is None else {**os.environ, **spec.env}
        # Popen returns once the child has exec'd (or raises why it could not), so the new
        # session exists before anyone can signal it; asyncio's own subprocess start blocks alike.
        popen = subprocess.Popen(
            argv[0] if shell else argv,
            shell=shell,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=spec.cwd,
            start_new_session=True,
        )
        loop = asyncio.get_running_loop()
        out = _Tail(loop) if stdout else None
        child = _Child(popen.pid, popen, out, _Tail(loop))
        self._children.append(child)  # before any await: kill() must see it
        if self._reason is not None:
            _kill_group(child.pid)
        try:
            if out is not None:
                assert popen.stdout is not None
                await loop.connect_read_pipe(lambda: out, popen.stdout)
            assert popen.stderr is not None
            await loop.connect_read_pipe(lambda: child.err, popen.stderr)
        except BaseException:
            _kill_group(child.pid)
            raise
        return child

    async def _finish(self, c: _Child) -> None:
        """Wait for ``c`` to exit, kill what it left in its group, reap it, read its output to the end."""
        await _exited(c.pid)
        self._reap(c)
        tails = [t for t in (c.out, c.err) if t is not None]
        await asyncio.wait([t.closed for t in tails], timeout=DRAIN_SECONDS)
        for t in tails:
            t.close()

    def _reap(self, c: _Child) -> None:
        if c.reaped:
            return
        _kill_group(c.pid)  # its leftovers; the unreaped leader still holds the group id
        try:
            _pid, status, ru = os.wait4(c.pid, 0)
        except ChildProcessError:  # reaped by someone else (a process-wide child watcher)
            c.reaped = True
            c.popen.returncode = -1
            return
        c.reaped = True
        c.exit_code = os.waitstatus_to_exitcode(status)
        c.cpu = ru.ru_utime + ru.ru_stime
        c.popen.returncode = c.exit_code  # so Popen never tries to reap a pid that may be reused

    async def _reap_all(self) -> None:
        async def one(c: _Child) -> None:
            if not c.reaped:
                await _exited(c.pid)
                self._reap(c)
            for t in (c.out, c.err):
                if t is not None:
                    t.close()

        await asyncio.gather(*(one(c) for c in self._children))

    def _cpu_sum(self) -> float | None:
        cpus = [c.cpu for c in self._children]
        return None if any(x is None for x in cpus) else float(sum(x for x in cpus if x is not None))


def _why(e: Exception, program: str) -> str:
    """Why a process could not start; names the file at fault when it is not the program (a bad ``cwd``)."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror}: {e.filename!r}" if e.filename and e.filename != program else e.strerror
    return str(e)


def start_task(spec: TaskSpec) -> RunningTask:
    """Start running ``spec`` now (inside a running event loop)."""
    return RunningTask(spec)


async def run_task(spec: TaskSpec) -> TaskOutcome:
    """Run ``spec`` to its end; cancelling this call kills the task."""
    return await start_task(spec).wait()
