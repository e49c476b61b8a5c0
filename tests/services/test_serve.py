"""A component restarted by hand with ``schedlab serve`` (the README's way after a crash) belongs to the cluster:
``cluster down`` stops it and deletes the queues, ``cluster up`` sees the cluster running."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.services import supervise
from schedlab.services.clusterfile import load_cluster

from .helpers import write_cluster
from .test_cluster import queues_of


def test_down_stops_a_component_restarted_by_hand(broker, tmp_path, capsys) -> None:
    path = write_cluster(tmp_path, gms=1, lms=1, workers=2)
    loaded = load_cluster(path)
    asyncio.run(supervise.up(loaded, path, timeout=60))
    by_hand: subprocess.Popen | None = None
    try:
        old = supervise.kill(path, "gm", 0)  # a crash
        deadline = time.monotonic() + 10
        while supervise.running_pids(path).get("gm-0") == old and time.monotonic() < deadline:
            time.sleep(0.05)
        # started as a person would in a terminal: not in a session of its own, nothing written for it
        by_hand = subprocess.Popen([sys.executable, "-m", "schedlab", "serve", "gm", "--cluster", str(path), "--id", "0"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
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
    finally:
        if by_hand is not None and by_hand.poll() is None:
            by_hand.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                by_hand.wait(timeout=10)
        asyncio.run(supervise.down(loaded, path))
    assert queues_of(loaded.name) == []
