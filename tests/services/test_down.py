"""``cluster down`` stops what belongs to the cluster however it was started: a component restarted by hand
with ``schedlab serve`` (the README's way after a crash; ``cluster up`` sees it running too), and the run queue
of a client killed in the middle of its replay (which would otherwise expire 10 minutes after)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.services import supervise
from schedlab.services.clusterfile import load_cluster

from .helpers import write_cluster
from .test_cluster import queues_of


@contextlib.contextmanager
def _cluster_and_a_process(tmp_path: Path) -> Iterator[tuple[Path, Any, list[subprocess.Popen]]]:
    """A 1x1 cluster up; the test starts its own process into the list. Afterwards the process is killed if it
    still runs, the cluster brought down, and no queue of it may be left."""
    path = write_cluster(tmp_path, gms=1, lms=1, workers=2)
    loaded = load_cluster(path)
    asyncio.run(supervise.up(loaded, path, timeout=60))
    procs: list[subprocess.Popen] = []
    try:
        yield path, loaded, procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=10)
        asyncio.run(supervise.down(loaded, path))
    assert queues_of(loaded.name) == []


def _start(procs: list[subprocess.Popen], *args: str) -> subprocess.Popen:
    """``schedlab ARGS`` as a person would start it in a terminal: not in a session of its own, nothing written for it."""
    p = subprocess.Popen([sys.executable, "-m", "schedlab", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL)
    procs.append(p)
    return p


def test_down_stops_a_component_restarted_by_hand(broker, tmp_path, capsys) -> None:
    with _cluster_and_a_process(tmp_path) as (path, loaded, procs):
        old = supervise.kill(path, "gm", 0)  # a crash
        deadline = time.monotonic() + 10
        while supervise.running_pids(path).get("gm-0") == old and time.monotonic() < deadline:
            time.sleep(0.05)
        by_hand = _start(procs, "serve", "gm", "--cluster", str(path), "--id", "0")
        deadline = time.monotonic() + 60
        while supervise.running_pids(path).get("gm-0") != by_hand.pid:
            assert by_hand.poll() is None, "schedlab serve gm exited"
            assert time.monotonic() < deadline, "schedlab serve gm did not register in the run folder within 60 s"
            time.sleep(0.1)
        with pytest.raises(InputError, match="cluster already running"):
            asyncio.run(supervise.up(loaded, path, timeout=60))
        capsys.readouterr()
        assert main(["cluster", "down", str(path)]) == 0
        assert "stopped 3 processes" in capsys.readouterr().err  # the GM by hand, the LM and the worker host
        assert by_hand.wait(timeout=15) is not None
        assert supervise.running_pids(path) == {}


def _run_queues(name: str) -> dict[str, str]:
    out = subprocess.run(["rabbitmqctl", "list_queues", "-q", "--formatter", "json", "name", "arguments"], capture_output=True,
                         text=True, timeout=30)
    return {q["name"]: json.dumps(q["arguments"]) for q in json.loads(out.stdout or "[]") if q["name"].startswith(name + ".run.")}


def test_down_deletes_the_run_queue_of_a_killed_client(broker, tmp_path, capsys) -> None:
    with _cluster_and_a_process(tmp_path) as (path, loaded, procs):
        client = _start(procs, "submit", "--cluster", str(path), "--command", "sleep 60", "-q")
        deadline = time.monotonic() + 60
        while True:  # its job in the ledger: the client has its run queue and named it there
            capsys.readouterr()
            assert main(["jobs", "--cluster", str(path), "--json"]) == 0
            if json.loads(capsys.readouterr().out):
                break
            assert client.poll() is None and time.monotonic() < deadline, "the attached submit's job was not listed within 60 s"
            time.sleep(0.3)
        client.kill()
        client.wait(timeout=10)
        queues = _run_queues(loaded.name)
        assert len(queues) == 1 and all('"x-expires"' in args for args in queues.values()), queues  # it would go in 10 min
        capsys.readouterr()
        assert main(["cluster", "down", str(path)]) == 0
