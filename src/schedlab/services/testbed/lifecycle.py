"""A testbed's life: its hosts made, its broker and relay started (``cluster up``), and all of it removed (``down``).

Order at the start: namespaces and links (:mod:`.netns`), then the relay
(every host's redirected connections need it), then the broker's RabbitMQ
nodes, each on its host (about 10 s; several are started together and then
joined into one cluster, :class:`~schedlab.services.brokercluster.BrokerCluster`);
the components come after, started by :mod:`~schedlab.services.supervise`
inside their namespaces. At the end the components are stopped first (their
pid files), then everything left in the namespaces (the broker nodes' Erlang
VMs and ``epmd``), the relay, the links and the namespaces; the broker's data
folder (under ``/var/tmp/schedlab-brokers``, which the ``rabbitmq`` user can
reach wherever the cluster file lies; one sub-folder per node) goes too, so
the cluster's queues go with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.services.brokercluster import BrokerCluster
from schedlab.services.rabbitnode import RabbitNode
from schedlab.services.testbed.addresses import digest
from schedlab.services.testbed.netns import Testbed, require_privileges
from schedlab.services.testbed.relay import READY_FILE

RELAY_START_TIMEOUT = 15.0
DIST_PORT = 25672  # every broker node's Erlang distribution port: each has a host, and so the port, to itself


BROKERS_HOME = Path("/var/tmp/schedlab-brokers")


def broker_dir(run_dir: Path) -> Path:
    """The broker's data folder: outside the run folder, which may lie where the ``rabbitmq`` user cannot reach
    (a private temporary folder), at a place derived from it (so ``down`` finds it without state)."""
    return BROKERS_HOME / digest(str(Path(run_dir).resolve()))[:16]


def broker_cluster(loaded: Any, run_dir: Path) -> BrokerCluster:
    """The testbed's broker: one RabbitMQ node per broker host, named ``rabbit@<its address>`` (a long name: the
    nodes reach each other by address, across the bridge), data in ``broker_dir(run_dir)/node<k>``."""
    d = broker_dir(run_dir)
    nodes = [RabbitNode("rabbit", b.host, b.port, DIST_PORT, d / f"node{k + 1}", netns=b.netns, node_host=b.host)
             for k, b in enumerate(loaded.spec.testbed.broker_hosts)]
    return BrokerCluster(d, nodes)


def start_relay(run_dir: Path) -> int:
    """The relay process (pid in ``relay.proc``, not a ``.pid`` file: it is stopped after the components)."""
    (run_dir / READY_FILE).unlink(missing_ok=True)
    with open(run_dir / "relay.log", "ab") as log:
        child = subprocess.Popen([sys.executable, "-m", "schedlab.services.testbed.relay", str(run_dir)], stdout=log,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    (run_dir / "relay.proc").write_text(f"{child.pid}\n")
    deadline = time.monotonic() + RELAY_START_TIMEOUT
    while not (run_dir / READY_FILE).exists():
        if child.poll() is not None or time.monotonic() > deadline:
            tail = (run_dir / "relay.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise InputError("testbed relay", f"did not start: {' | '.join(tail) or 'no output'}")
        time.sleep(0.05)
    return child.pid


async def start(loaded: Any, run_dir: Path) -> Testbed:
    """Make the testbed's hosts and links, start its relay and its broker's nodes (joined); undone on failure."""
    tb = Testbed(loaded, run_dir)
    tb.create()
    try:
        start_relay(run_dir)
        brokers = broker_cluster(loaded, run_dir)
        shutil.rmtree(brokers.dir, ignore_errors=True)  # a crashed earlier up's data (its nodes died with its namespaces)
        BROKERS_HOME.mkdir(mode=0o755, exist_ok=True)
        await brokers.up()
    except BaseException:
        stop(loaded, run_dir)
        raise
    return tb


def stop(loaded: Any, run_dir: Path) -> list[str]:
    """Remove everything of the testbed (idempotent); returns the namespaces and bridge removed."""
    require_privileges()
    tb = Testbed(loaded, run_dir)
    removed = tb.remove()  # kills every process in the namespaces, the broker's included
    pid_file = run_dir / "relay.proc"
    if pid_file.exists():
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
        pid_file.unlink(missing_ok=True)
    shutil.rmtree(broker_dir(run_dir), ignore_errors=True)
    with contextlib.suppress(OSError):  # the shared home too, once empty (another testbed's nodes keep it: not empty)
        BROKERS_HOME.rmdir()
    for name in (READY_FILE, "network.json"):
        (run_dir / name).unlink(missing_ok=True)
    return removed
