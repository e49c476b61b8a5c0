"""Fixtures of the dashboard tests: a small results store, and a real `schedlab dashboard` process serving it.

The server is a subprocess on a free port (``--port 0``; its URL read from its
first line), stopped and waited for at the end. Browser tests drive Debian's
Chromium (``apt-get install chromium``) through Playwright; without either they
skip with the reason, except in CI (``CI`` set), where that is a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from schedlab.experiments.runner import run_sweep
from tests.experiments.helpers import write_spec
from tests.services.conftest import broker  # noqa: F401  (the broker fixture: skip with reason, failure in CI)

SPEC = """\
name: dash
workloads:
  - name: gen
    generate: {jobs: 15, arrivals: "poisson:0.3", tasks_per_job: "geom:6", duration: "exp:3", seed: 1}
data_centers:
  - workers: 30
schedulers:
  - name: megha
    params: {gms: 2, lms: 2}
  - name: centralized
  - name: sparrow
seeds: [0]
baseline: centralized
"""
CHROMIUM = os.environ.get("SCHEDLAB_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("dash")
    return run_sweep(write_spec(tmp, SPEC), tmp / "res", jobs=1).root


class Dashboard:
    def __init__(self, proc: subprocess.Popen, url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def get(self, path: str) -> tuple[int, dict]:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(self.url.rstrip("/") + path, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                return e.code, json.loads(body)
            except ValueError:
                return e.code, {"text": body.decode()}


def start_dashboard(args: list[str], log: Path, timeout: float = 20.0) -> Dashboard:
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "schedlab", "dashboard", "--port", "0", *args], stdout=subprocess.PIPE, stderr=err)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line = b""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(b"dashboard at ") or not line:
            break
    if not line.startswith(b"dashboard at "):
        stop(proc)
        raise AssertionError(f"dashboard did not start: {log.read_text()}")
    return Dashboard(proc, line.split()[-1].decode(), log)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture
def dashboard_of(tmp_path: Path) -> Iterator:
    started: list[Dashboard] = []

    def start(*args: str) -> Dashboard:
        d = start_dashboard(list(args), tmp_path / f"dashboard-{len(started)}.log")
        started.append(d)
        return d

    yield start
    for d in started:
        stop(d.proc)


@contextlib.contextmanager
def browser_page(chromium: str, width: int = 1400, height: int = 900) -> Iterator[tuple]:
    """Headless Chromium through Playwright: ``(browser, page, errors)``, the page's script errors collected."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield browser, page, errors
        finally:
            browser.close()


@pytest.fixture(scope="session")
def chromium() -> str:
    problem = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problem = "Playwright is not installed (pip install playwright)"
    if problem is None and not (os.path.isfile(CHROMIUM) or shutil.which(CHROMIUM)):
        problem = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set SCHEDLAB_CHROMIUM)"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    return CHROMIUM
