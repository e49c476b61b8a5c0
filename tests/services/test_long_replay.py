"""Long replays a person can follow: an estimate first, a timeout by default, and SIGTERM (or Ctrl-C) ends the
replay with the summary of what was submitted — what completed and what did not."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.services.cli import _timeout
from schedlab.services.client import ReplayProgress, estimate_wall
from schedlab.workload.trace import TraceJob


def test_the_estimate_and_the_timeout_option() -> None:
    jobs = [TraceJob(10.0, 1.0, [1.0]), TraceJob(20.0, 3.0, [5.0, 1.0]), TraceJob(22.0, 1.0, [1.0])]
    assert estimate_wall(jobs, 2.0) == (25.0 - 10.0) / 2 and estimate_wall([], 1.0) is None
    assert ReplayProgress(1, 3, 1, 0, None, elapsed=5.0, estimate=7.5).eta == 2.5
    assert [_timeout(x) for x in ("auto", "90", "0")] == ["auto", 90.0, None]
    with pytest.raises(InputError, match="--timeout: expected seconds, auto or 0, got 'soon'"):
        _timeout("soon")


def test_sigterm_prints_the_partial_summary(tmp_path, capsys) -> None:
    path, trace, out = tmp_path / "c.yaml", tmp_path / "t.tr", tmp_path / "s.json"
    assert main(["cluster", "init", str(path), "--workers", "8", "--heartbeat", "0.2"]) == 0
    capsys.readouterr()
    trace.write_text("".join(f"{2.0 * i:.2f} 2 1 1 1\n" for i in range(15)))  # 28 s of arrivals: stopped long before
    cmd = [sys.executable, "-m", "schedlab", "submit", "--cluster", str(path), "--embedded", "--trace", str(trace), "--summary-json", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not out.exists() and p.poll() is None and time.monotonic() < deadline:
        assert p.stderr is not None
        line = p.stderr.readline()  # the estimate comes once the replay has started
        if line.startswith("replaying 15 jobs: about 29 s of wall time"):
            break
    time.sleep(2.5)
    p.send_signal(signal.SIGTERM)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 130, stderr
    assert "stopped after" in stderr and "of 15 jobs submitted" in stderr and "Traceback" not in stderr, stderr
    assert "allocation_time" in stdout or "allocation" in stdout
    s = json.loads(out.read_text())
    rt = s["runtime"]
    assert rt["stopped"] and 0 < rt["jobs_submitted"] < 15 and rt["jobs_total"] == 15
    assert rt["estimate_seconds"] == 29.0 and rt["timeout"] == 2 * 29.0 + 60  # --timeout auto
    assert s["jobs"] == rt["jobs_submitted"]


def test_a_replay_on_a_terminal_shows_its_progress_bar(tmp_path, capsys) -> None:
    """On a terminal (a pseudo-terminal here) the replay draws its bar: jobs submitted of all, tasks done, the
    allocation p50 so far and the ETA; piped, it prints only the estimate (the test above)."""
    import os
    import pty
    import select

    path, trace = tmp_path / "c.yaml", tmp_path / "t.tr"
    assert main(["cluster", "init", str(path), "--workers", "8", "--heartbeat", "0.2"]) == 0
    capsys.readouterr()
    trace.write_text("".join(f"{0.5 * i:.2f} 2 1 0.2 0.2\n" for i in range(8)))  # 4 s of arrivals
    pid, fd = pty.fork()
    if pid == 0:  # the child: schedlab on the pseudo-terminal (stdout and stderr)
        os.execv(sys.executable, [sys.executable, "-m", "schedlab", "submit", "--cluster", str(path), "--embedded",
                                  "--trace", str(trace)])
    seen = b""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        ready, _w, _x = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # the child closed the terminal: it ended
            break
        if not chunk:
            break
        seen += chunk
    _pid, status = os.waitpid(pid, 0)
    text = seen.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text[-2000:]
    assert "replaying 8 jobs: about" in text, text[-2000:]
    assert "replaying" in text and "tasks done" in text and "allocation p50" in text and "ETA" in text, text[-2000:]
    assert "/8" in text  # jobs submitted of all (MofN)
