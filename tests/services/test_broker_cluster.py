"""A three-node RabbitMQ cluster of our own (:mod:`schedlab.services.brokercluster`): up, down, and the services on it.

The module's fixture starts the cluster once (about 20 s here) on ports of its
own (AMQP 5691-5693, distribution 25691-25693) and stops it, removing its
folder, even when a test fails. Without what it needs — Debian's
rabbitmq-server, root (nodes run as the ``rabbitmq`` user), free ports — the
tests skip with the reason, except in CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pwd
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schedlab.errors import InputError
from schedlab.services import net, supervise
from schedlab.services.brokercluster import COORDINATOR_MEMBER, BrokerCluster, down, port_free
from schedlab.services.chaos import run_chaos
from schedlab.services.client import replay
from schedlab.services.clusterfile import load_cluster
from schedlab.services.lease import Lease
from schedlab.services.net import AmqpLink
from schedlab.services.rabbitnode import SERVER
from schedlab.services.remote import RemoteCluster, fetch_statuses
from schedlab.workload.trace import TraceJob
from tests.services.helpers import assert_valid_schedule, consecutive_free_ports, write_cluster

BASE_PORT = 5691
DIST_BASE = 25691


def _missing() -> str | None:
    if not Path(SERVER).exists() or shutil.which("runuser") is None:
        return f"{SERVER} (Debian's rabbitmq-server) or runuser is missing"
    try:
        pwd.getpwnam("rabbitmq")
    except KeyError:
        return "no rabbitmq user"
    if os.geteuid() != 0:
        return "the nodes run as the rabbitmq user: needs root"
    taken = [p for k in range(3) for p in (BASE_PORT + k, DIST_BASE + k) if not port_free("127.0.0.1", p)]
    if taken:
        return f"ports {taken} are in use"
    return None


def _skip_or_fail(msg: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="module")
def brokers() -> Iterator[BrokerCluster]:
    problem = _missing()
    if problem is not None:
        _skip_or_fail(f"a local three-node RabbitMQ cluster cannot start: {problem}")
    top = Path(tempfile.mkdtemp(prefix="schedlab-brokers-"))  # pytest's folders are closed to the rabbitmq user
    top.chmod(0o755)
    cluster = BrokerCluster.plan(top / "cluster", 3, base_port=BASE_PORT, dist_base=DIST_BASE)
    try:
        asyncio.run(cluster.up())
        yield cluster
    finally:
        cluster.down()
        shutil.rmtree(top, ignore_errors=True)


def test_three_nodes_joined(brokers: BrokerCluster) -> None:
    status = brokers.nodes[2].ctl("cluster_status", "--formatter", "json")
    assert status.returncode == 0, status.stderr
    import json

    running = json.loads(status.stdout)["running_nodes"]
    assert sorted(running) == sorted(n.node for n in brokers.nodes)
    assert brokers.urls == [f"amqp://guest:guest@127.0.0.1:{BASE_PORT + k}/" for k in range(3)]


def test_up_refuses_taken_ports_and_down_is_idempotent(brokers: BrokerCluster, tmp_path: Path) -> None:
    again = BrokerCluster.plan(tmp_path / "again", 3, base_port=BASE_PORT, dist_base=DIST_BASE)
    with pytest.raises(InputError, match="already in use"):
        asyncio.run(again.up())
    assert not (tmp_path / "again").exists()
    assert down(tmp_path / "nothing") == 0
    with pytest.raises(InputError, match="cannot reach it"):  # pytest's folders are mode 0700
        asyncio.run(BrokerCluster.plan(tmp_path / "shut", 3, base_port=BASE_PORT + 10, dist_base=DIST_BASE + 10).up())


async def _until(pred, timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not pred():
        assert asyncio.get_running_loop().time() < deadline, f"not within {timeout} s: {what}"
        await asyncio.sleep(0.02)


def test_chaos_kills_broker_nodes_with_and_without_their_data_and_every_task_completes_once(
        brokers: BrokerCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # services on a three-node cluster (quorum queues), a replay at about half capacity; one campaign kills a
    # node (SIGKILL) and starts it again with its data, the other wipes its data first (a new member)
    monkeypatch.delenv("SCHEDLAB_AMQP_URL", raising=False)
    path = write_cluster(tmp_path, gms=2, lms=2, workers=8, hosts_per_lm=1, heartbeat=0.5, url=",".join(brokers.urls))
    loaded = load_cluster(path)
    assert loaded.quorum and loaded.brokers == brokers.urls
    trace = [TraceJob(0.25 * i, 1.0, [1.0]) for i in range(40)]  # 4 tasks/s of 1 s on 8 workers

    async def body() -> list:
        reports = []
        try:
            await supervise.up(loaded, path, timeout=60)
            for wipe, seed in ((False, 0), (True, 1)):
                reports.append(await run_chaos(loaded, path, trace, roles=["broker-node"], every=2.5, restart_after=0.5, seed=seed,
                                               brokers=brokers, wipe=wipe, constraints=False, timeout=90))
            statuses = await fetch_statuses(loaded)
        finally:
            await supervise.down(loaded, path)
        return [reports, statuses]

    reports, statuses = asyncio.run(body())
    for report in reports:
        assert report.ok, (report.lost, report.duplicated)
        assert report.kills and all(k.role == "broker-node" and k.healthy_after is not None for k in report.kills)
        assert_valid_schedule(report.result, loaded.cluster)
    assert sum(st.get("broker_failovers", 0) for st in statuses) >= 1, "no service was on a killed node"
    for k, n in enumerate(brokers.nodes):
        assert n.vm_pid() is not None, f"member {k} is not running after the campaigns"
        # the job ledger is a stream: the member that lost its data is in the stream coordinator's Raft cluster again
        # (else the next losses leave the coordinator without a majority, and a stream whose leader dies leaderless)
        r = n.ctl("eval", COORDINATOR_MEMBER)
        assert r.stdout.strip() == "true", f"member {k} runs no stream coordinator member: {r.stdout} {r.stderr}"


def test_two_nodes_down_publishers_hold_the_client_is_told_in_one_line_and_every_task_completes_once_when_one_returns(
        brokers: BrokerCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # two of three members SIGKILLed mid-replay (no quorum): the quorum queues confirm nothing, publishers hold their
    # messages, the client says so in one line; one member back: every task exactly once. The client's own member is
    # kept up (its link stays where it is: the line comes from its held submissions, not from a failover)
    monkeypatch.delenv("SCHEDLAB_AMQP_URL", raising=False)
    monkeypatch.setattr(net, "UNCONFIRMED_WARNING", 2.0)  # said after 5 s in service; 2 s keeps the test short
    path = write_cluster(tmp_path, gms=2, lms=2, workers=8, hosts_per_lm=1, heartbeat=0.5, url=",".join(brokers.urls))
    loaded = load_cluster(path)
    trace = [TraceJob(0.25 * i, 1.0, [1.0]) for i in range(24)]  # 6 s of arrivals at half capacity
    told: list[str] = []

    def no_quorum_lines() -> list[str]:
        told[:] = [r.getMessage() for r in caplog.records if r.name == "schedlab.services.net" and "no quorum" in r.getMessage()]
        return told

    async def body() -> tuple[Any, float, float, float]:
        down: list[int] = []
        await supervise.up(loaded, path, timeout=60)
        try:
            async with RemoteCluster(loaded) as rc:
                assert rc.amqp is not None
                down = [i for i, u in enumerate(brokers.urls) if u != rc.amqp.url]
                run = asyncio.create_task(replay(rc, trace, constraints=False))  # bounded below, from the member's return
                await asyncio.sleep(1.5)
                for i in down:
                    await asyncio.to_thread(brokers.kill, i)
                killed = time.monotonic()
                await _until(lambda: bool(no_quorum_lines()), 15, "the client saying the broker cluster has no quorum")
                said = time.monotonic() - killed
                assert not run.done(), "the replay ended while two of three members were down"
                await brokers.restart(down[0], timeout=60)  # with its data: it rejoins by itself (8-40 s here)
                down.pop(0)
                back = time.monotonic() - killed
                try:
                    result = await asyncio.wait_for(run, 30)
                except TimeoutError:
                    raise AssertionError(f"the replay not done 30 s after a member was back ({back:.0f} s after the kills)") from None
                return result, said, back, time.monotonic() - killed
        finally:  # the later tests want every member (also after a failure here): started while the services stop
            errors = [e for e in await asyncio.gather(supervise.down(loaded, path), *(brokers.restart(i, timeout=60) for i in down),
                                                      return_exceptions=True) if isinstance(e, BaseException)]
            if errors:
                raise errors[0]

    with caplog.at_level(logging.WARNING, logger="schedlab.services.net"):
        result, said, back, took = asyncio.run(body())
    c = result.summary["counters"]
    timing = f"told {said:.1f} s, member back {back:.1f} s, replay done {took:.1f} s after the kills"
    assert c["tasks_unfinished"] == 0, timing
    assert sum(int(c.get(k, 0)) for k in ("duplicate_starts", "duplicate_finishes", "duplicate_reports")) == 0, timing
    assert_valid_schedule(result, loaded.cluster)
    assert len(told) == 1, told  # said once, in one line, naming the members that are down
    assert "2 of 3 brokers down" in told[0] and "nothing is lost" in told[0] and "\n" not in told[0]
    assert said < 10.0, f"told after {said:.1f} s"
    for n in brokers.nodes:
        assert n.vm_pid() is not None


def test_a_link_moves_to_another_node_when_its_node_dies_and_its_quorum_queue_loses_nothing(brokers: BrokerCluster) -> None:
    # last in the module: it leaves the member it killed down (starting it again would cost 10 s)
    queue = f"t{secrets.token_hex(4)}.q"

    async def body() -> tuple[str, str, int, list[int | None]]:
        link = AmqpLink(brokers.urls, quorum=True)
        await link.connect()
        other: AmqpLink | None = None
        lease = Lease(brokers.urls, f"{queue}.lease", quorum=True)
        got: list[int] = []
        try:
            await link.consume(queue, lambda b: got.append(int(b)))
            for i in range(50):
                link.publish(queue, str(i).encode(), True)
            await _until(lambda: set(got) == set(range(50)), 10, "the first 50 messages")
            tokens = [await lease.token()]
            before = link.url  # the queue's leader: it was declared there
            other = AmqpLink([u for u in brokers.urls if u != before], quorum=True)  # a link on a member that stays up
            await other.connect()
            await asyncio.to_thread(brokers.kill, brokers.urls.index(before))
            # its first publish to the queue right after the leader died: RabbitMQ nacks it on that channel until the
            # dead member is back (it never is, here) — unless the publisher takes a fresh channel (net.py)
            other.publish(queue, b"100", True)
            for i in range(50, 100):  # published while the link moves: held, then sent to the new node
                link.publish(queue, str(i).encode(), True)
            await _until(lambda: set(got) == set(range(101)), 20, "every message after the node died")
            for _ in range(50):  # None while its connection is found lost: an LM asks again, as here
                token = await lease.token()
                if token is not None:
                    break
                await asyncio.sleep(0.1)
            tokens.append(token)  # counted on the quorum queue: every earlier token is still there
            return before, link.url, link.failovers, tokens
        finally:
            await link.delete_queues([queue, "tokens"])
            with contextlib.suppress(Exception):
                ch = await link.connection.channel()
                await ch.queue_delete(f"{queue}.lease.tokens")
            await lease.release()
            await link.close()
            if other is not None:
                await other.close()

    before, after, failovers, tokens = asyncio.run(body())  # the killed member stays down: the fixture's teardown ends it
    assert after != before and failovers == 1
    assert tokens[0] == 1 and tokens[1] is not None and tokens[1] >= 2


def test_cluster_file_takes_a_list_of_brokers_and_says_what_is_wrong_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from schedlab.cli import main
    from schedlab.services.clusterfile import parse_cluster, render_cluster

    monkeypatch.delenv("SCHEDLAB_AMQP_URL", raising=False)
    urls = [f"amqp://guest:guest@127.0.0.1:{BASE_PORT + k}/" for k in range(3)]
    three = parse_cluster(render_cluster(broker=",".join(urls)))
    assert three.brokers == urls and three.broker == urls[0] and three.quorum
    one = parse_cluster(render_cluster(broker=urls[0]))
    assert one.brokers == urls[:1] and not one.quorum
    assert not parse_cluster(render_cluster(broker=",".join(urls)) + "queue_type: classic\n").quorum
    monkeypatch.setenv("SCHEDLAB_AMQP_URL", ",".join(urls[:2]))
    assert one.brokers == urls[:2]
    monkeypatch.delenv("SCHEDLAB_AMQP_URL")
    bad = tmp_path / "bad.yaml"
    bad.write_text(render_cluster(broker=urls[0]).replace("broker:", f"brokers: [{urls[1]}]\nbroker:", 1))
    assert main(["cluster", "status", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "give broker (one URL) or brokers (a list), not both" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(["broker", "up", "--nodes", "0", "--dir", str(tmp_path / "b")]) == 2
    assert "--nodes: must be 1..9" in capsys.readouterr().err
    assert main(["broker", "down", "--dir", str(tmp_path / "none")]) == 0
    assert "nothing to stop" in capsys.readouterr().out


def test_status_names_each_broker_node_and_says_which_are_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from schedlab.cli import main

    monkeypatch.delenv("SCHEDLAB_AMQP_URL", raising=False)
    port = consecutive_free_ports(3)  # nothing listens there: every node is down (and so is every component)
    urls = [f"amqp://guest:guest@127.0.0.1:{port + k}/" for k in range(3)]
    path = write_cluster(tmp_path, gms=1, lms=1, workers=2, url=",".join(urls))
    assert main(["cluster", "status", str(path)]) == 1
    out = capsys.readouterr().out
    for k in range(3):
        assert f"broker node 127.0.0.1:{port + k} (amqp://guest:***@127.0.0.1:{port + k}/): down" in out, out
