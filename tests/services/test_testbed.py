"""The emulated multi-host testbed: namespaces, links, the relay's delay, faults on the network, and clean removal.

The tests that make namespaces need root, ``ip``, ``nft`` and Debian's
``rabbitmq-server`` (the testbed's broker runs on a host of its own); without
them they skip with the reason, except under CI, where they must run.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.services import supervise
from schedlab.services.chaos import run_chaos
from schedlab.services.client import replay
from schedlab.services.clusterfile import load_cluster, parse_cluster, render_cluster
from schedlab.services.remote import RemoteCluster, fetch_statuses
from schedlab.services.testbed import addresses, lifecycle
from schedlab.services.testbed.netns import Testbed as HostsOf
from schedlab.services.testbed.netns import list_netns, require_privileges
from schedlab.services.testbed.network import Network
from schedlab.workload.trace import TraceJob
from tests.services.helpers import assert_valid_schedule
from tests.services.test_cluster import job


def _testbed_problem() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "nft", "tc"):
        if shutil.which(tool) is None:
            return f"`{tool}` is missing (apt-get install iproute2 nftables)"
    if not os.path.exists("/usr/lib/rabbitmq/bin/rabbitmq-server"):
        return "Debian's rabbitmq-server is missing (the testbed's broker)"
    r = subprocess.run(["ip", "netns", "add", "sl-probe"], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "delete", "sl-probe"], capture_output=True)
    if r.returncode != 0:
        return f"cannot make a network namespace: {r.stderr.strip()}"
    return None


@pytest.fixture(scope="module")
def can_netns() -> None:
    problem = _testbed_problem()
    if problem is not None:
        msg = f"the testbed {problem}"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


# -- the cluster file (no root needed) ---------------------------------------------------------


def test_init_netns_gives_each_component_a_host_in_the_benchmarking_range():
    text = render_cluster(name="demo", gms=2, lms=2, workers=32, hosts_per_lm=2, netns=True)
    loaded = parse_cluster(text)
    spec = loaded.spec
    net = ipaddress.ip_network(spec.testbed.subnet)
    assert net.subnet_of(ipaddress.ip_network("198.18.0.0/15"))
    eps = [ep for _w, ep in spec.endpoints()]
    assert len(eps) == 2 + 2 + 4
    assert len({ep.host for ep in eps} | {spec.testbed.broker.host}) == len(eps) + 1
    assert len({ep.netns for ep in eps} | {spec.testbed.broker.netns}) == len(eps) + 1
    assert all(ipaddress.ip_address(ep.host) in net for ep in eps)
    assert loaded.broker == f"amqp://guest:guest@{spec.testbed.broker.host}:5672/"


def test_init_netns_with_three_broker_nodes_gives_each_its_own_host_and_a_bad_count_is_one_line(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    assert main(["cluster", "init", str(path), "--netns", "--broker-nodes", "3", "--gms", "1", "--lms", "1", "--workers", "2"]) == 0
    loaded = load_cluster(path)
    hosts = loaded.spec.testbed.broker_hosts
    assert len(hosts) == 3 and loaded.quorum
    assert loaded.brokers == [f"amqp://guest:guest@{b.host}:5672/" for b in hosts]
    tb = HostsOf(loaded, tmp_path)
    assert [h.name for h in tb.hosts[:3]] == ["broker0", "broker1", "broker2"] and len({h.address for h in tb.hosts}) == len(tb.hosts)
    assert tb.link(tb.by_name["broker0"], tb.by_name["broker2"]).delay == 0.0005  # the default, between broker nodes too
    for args, message in ((["--broker-nodes", "3"], "--broker-nodes: is for a testbed (--netns)"),
                          (["--netns", "--broker-nodes", "9"], "--broker-nodes: must be 1..8, got 9")):
        capsys.readouterr()
        assert main(["cluster", "init", str(tmp_path / "x.yaml"), *args]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("change", "message"), [
    (("subnet: 198.18.", "subnet: 10.0."), "outside the benchmarking range"),
    (("  default: {delay: 0.5ms}", "  default: {delay: fast}"), "network.default.delay: a time such as 25ms"),
    (("  default: {delay: 0.5ms}", "  gm0-lm9x: {loss: 1%}"), "unknown host name"),
    (("  default: {delay: 0.5ms}", "  default: {loss: 120%}"), "between 0 and 100 %"),
    (("  broker: {host", "  brokers: []\n  broker: {host"), "testbed.brokers"),
    (("  broker: {host", "  # broker: {host"), "give broker (one node's host) or brokers"),
])
def test_a_bad_testbed_section_is_one_line_naming_the_field(change, message):
    text = render_cluster(name="demo", gms=1, lms=1, workers=4, netns=True).replace(*change)
    with pytest.raises(InputError) as e:
        parse_cluster(text, "demo.yaml")
    assert message in str(e.value) and "demo.yaml" in str(e.value)


def test_netns_without_a_testbed_and_two_components_on_one_host_are_refused():
    plain = render_cluster(name="demo", gms=1, lms=1, workers=4)
    with pytest.raises(InputError, match="add a testbed section"):
        parse_cluster(plain.replace("port: 7100}", "port: 7100, netns: sl-x}"), "c.yaml")
    text = render_cluster(name="demo", gms=2, lms=1, workers=4, netns=True)
    spec = parse_cluster(text).spec
    a, b = spec.gms[0], spec.gms[1]
    with pytest.raises(InputError, match="share the namespace"):
        parse_cluster(text.replace(f"netns: {b.netns}", f"netns: {a.netns}"), "c.yaml")


def test_link_properties_take_the_most_specific_entry():
    net = Network({"default": {"delay": "0.5ms", "loss": "1%"}, "gm-lm": {"delay": "25ms", "jitter": "2ms"},
                   "broker": {"delay": "2ms"}, "lm1-gm0": {"loss": 0.1}})
    assert net.link("gm0", "lm0").delay == 0.025 and net.link("lm0", "gm1").jitter == 0.002
    assert net.link("gm0", "lm1").loss == 0.1 and net.link("gm1", "lm1").loss == 0.01
    assert net.link("h3", "broker").delay == 0.002 and net.link("h3", "lm0").delay == 0.0005


def test_the_hosts_rules_redirect_to_the_relay_and_drop_each_destinations_loss(tmp_path):
    text = render_cluster(name="rules", gms=1, lms=1, workers=4, netns=True).replace("  default: {delay: 0.5ms}", "  lm-host: {loss: 2%}")
    loaded = parse_cluster(text)
    tb = HostsOf(loaded, tmp_path)
    lm, host, gm = tb.by_name["lm0"], tb.by_name["h0"], tb.by_name["gm0"]
    rules = tb.nft_rules(lm)
    assert "redirect to :15353" in rules and f"ip daddr != {tb.subnet} return" in rules
    assert f"ip daddr {host.address} numgen random mod 1000000 < 20000 drop" in rules
    assert gm.address not in rules.split("chain links")[1]
    assert len(tb.veth_names()) == len({*tb.veth_names()}) and all(len(n) <= 15 for n in [*tb.veth_names(), tb.bridge])


def test_without_root_the_testbed_says_so_in_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(InputError, match="needs root"):
        require_privileges()


def test_subnets_fit_the_hosts_and_stay_in_the_range():
    assert addresses.allocate_subnet("a", 123).prefixlen == 24
    big = addresses.allocate_subnet("a", 600)
    assert big.prefixlen == 22 and big.subnet_of(addresses.BENCH)


# -- a running testbed ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def testbed(can_netns, tmp_path_factory):
    """A 2 GM x 2 LM x 4-host testbed cluster (10 ms one way between GMs and LMs), each LM with a standby on a host
    of its own, up for the module's tests."""
    d = tmp_path_factory.mktemp("testbed")
    name = f"tb{secrets.token_hex(3)}"
    text = render_cluster(name=name, gms=2, lms=2, workers=12, hosts_per_lm=2, heartbeat=0.2, netns=True, lm_standby=True)
    text = text.replace("  default: {delay: 0.5ms}", "  default: {delay: 0.2ms}\n  gm-lm: {delay: 10ms}")
    path = d / "cluster.yaml"
    path.write_text(text)
    loaded = load_cluster(path)
    try:
        asyncio.run(supervise.up(loaded, path, timeout=90))
        yield loaded, path
    finally:
        asyncio.run(supervise.down(loaded, path))
        assert not [n for n in list_netns() if n.startswith(f"sl-{name}-")]


def _in_netns(netns: str, code: str) -> str:
    return subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=60).stdout


def test_a_gm_reaches_an_lm_through_the_links_delay(testbed):
    loaded, _path = testbed
    gm, lm = loaded.spec.gms[0], loaded.spec.lms[0]
    code = (f"import socket, time\nts = []\nfor _ in range(5):\n    s = socket.create_connection(('{lm.host}', {lm.port}))\n"
            f"    t = time.perf_counter(); s.sendall(b'GET /v1/health HTTP/1.0\\r\\n\\r\\n'); s.recv(1)\n"
            f"    ts.append(time.perf_counter() - t); s.close()\nprint(sorted(ts)[2])")
    rtt = float(_in_netns(gm.netns, code))
    assert 0.020 <= rtt < 0.2, rtt  # 10 ms each way, through the relay


def test_a_replay_on_the_testbed_runs_every_task_exactly_once(testbed):
    loaded, _path = testbed
    trace = [job(0.05 * i, [0.05, 0.1, 0.05], [0, 0, 0]) for i in range(30)]

    async def body():
        async with RemoteCluster(loaded) as rc:
            return await replay(rc, trace, constraints=False, timeout=90)

    result = asyncio.run(body())
    assert_valid_schedule(result, loaded.cluster)
    assert result.summary["tasks"] == 90
    # a GM's launch request crosses a 10 ms link both ways
    assert result.summary["allocation_time"]["p50"] >= 0.02


def test_an_lms_host_cut_off_from_everything_its_standby_elsewhere_serves_and_the_old_steps_down_when_healed(testbed):
    """The host of the process serving LM 0 is cut from every other host: its lease goes with its heartbeat, the
    standby on another host takes over, GMs and worker hosts fail over to its address. Healed, the old process
    learns it was replaced and steps down, a standby again in its namespace. Every task completes once."""
    loaded, path = testbed
    tb = HostsOf(loaded, supervise.run_dir(path))
    trace = [job(0.1 * i, [1.0, 0.3], [0, 0]) for i in range(150)]  # 15 s of arrivals

    async def body():
        from schedlab.services.testbed.faults import NetworkFaults

        urls = loaded.spec.lms[0].urls
        pids = [await supervise.serving_pid(u) for u in urls]
        old = next(pid for pid in pids if pid is not None)
        where = ("lm0", "lm0s")[pids.index(old)]
        faults = NetworkFaults(tb)
        async with RemoteCluster(loaded) as rc:
            run = asyncio.create_task(replay(rc, trace, constraints=False, timeout=120))
            await asyncio.sleep(1.0)
            for other in ("gm", "host", "broker", "lm"):
                faults.partition(f"{where}-{other}")
            try:
                deadline = time.monotonic() + 40
                while not any(p not in (None, old) for p in [await supervise.serving_pid(u, timeout=0.5) for u in urls]):
                    assert time.monotonic() < deadline, "no standby took over LM 0"
                    await asyncio.sleep(0.2)
            finally:
                faults.heal()
            result = await run
        return old, result, {(st["role"], st["id"]): st for st in await fetch_statuses(loaded)}

    old, result, statuses = asyncio.run(body())
    assert_valid_schedule(result, loaded.cluster)
    assert result.summary["tasks"] == 300
    assert statuses["lm", 0]["standby_took_over"] is True
    deadline = time.monotonic() + 20
    while not any("steps down" in f.read_text(errors="replace") for f in supervise.run_dir(path).glob("lm-0*.log")):
        assert time.monotonic() < deadline, "the old LM 0 process did not step down once healed"
        time.sleep(0.2)
    assert old in supervise.running_pids(path).values()  # a standby again, same pid


def test_chaos_on_the_testbed_partitions_loses_and_delays_and_skews_without_losing_a_task(testbed, capsys, tmp_path):
    """Every network fault, and clocks off beyond the signatures' window (45 s ahead) and within it (20 s behind):
    each once failed here (a refused answer taken for a refused request: tasks run twice; broker messages with a
    stale time dropped, and a GM's report stamped before its end: tasks never reported)."""
    loaded, path = testbed
    trace = tmp_path / "t.tr"
    trace.write_text("".join(f"{0.2 * i:.2f} 4 0.175 0.1 0.2 0.1 0.3\n" for i in range(200)))  # 40 s of arrivals
    summary = tmp_path / "chaos.json"
    rc = main(["chaos", "--cluster", str(path), "--trace", str(trace), "--partition", "gm-lm", "--partition-oneway", "lm>host",
               "--loss", "5%", "--delay", "30ms", "--clock-skew", "gm0:45", "--clock-skew", "gm1:-20", "--kill", "lm", "--every", "1", "--heal-after", "1",
               "--restart-after", "0.5", "--seed", "3", "--no-constraints", "--timeout", "120", "--summary-json", str(summary)])
    out = capsys.readouterr().out
    assert rc == 0, out
    s = json.loads(summary.read_text())
    assert s["chaos"]["ok"] and s["counters"]["tasks_unfinished"] == 0
    kinds = {f["kind"] for f in s["chaos"]["faults"]}
    assert kinds == {"partition", "oneway", "loss", "delay", "clock-skew"}, s["chaos"]["faults"]
    assert s["chaos"]["kills"] and s["tasks"] == 800
    assert {tuple(f["hosts"]) for f in s["chaos"]["faults"] if f["kind"] == "clock-skew"} == {("gm 0",), ("gm 1",)}
    # nothing of a fault outlives the campaign
    tb = HostsOf(loaded, supervise.run_dir(path))
    for h in tb.hosts:
        chain = subprocess.run([*tb.prefix(h), "nft", "list", "chain", "ip", "schedlab", "faults"], capture_output=True, text=True).stdout
        assert "drop" not in chain
    assert not list(supervise.run_dir(path).glob("*.clock")) and not (supervise.run_dir(path) / "network.json").exists()


def test_down_after_a_crashed_up_removes_everything(can_netns, tmp_path):
    name = f"tc{secrets.token_hex(3)}"
    path = tmp_path / "c.yaml"
    path.write_text(render_cluster(name=name, gms=1, lms=1, workers=2, netns=True))
    loaded = load_cluster(path)
    tb = HostsOf(loaded, supervise.run_dir(path))
    tb.create()  # as an `up` killed before it started anything
    with pytest.raises(InputError, match="exists already"):
        asyncio.run(supervise.up(loaded, path, timeout=30))
    assert main(["cluster", "down", str(path)]) == 0
    assert not [n for n in list_netns() if n.startswith(f"sl-{name}-")]
    assert subprocess.run(["ip", "link", "show", "dev", tb.bridge], capture_output=True).returncode != 0
    assert main(["cluster", "down", str(path)]) == 0  # again: nothing to do, no error


def test_a_testbed_broker_of_three_nodes_loses_one_mid_replay_and_every_task_completes_once(can_netns, tmp_path):
    """Three RabbitMQ nodes, each on its own host, clustered (quorum queues); the node most services are on is
    SIGKILLed mid-replay and started again (it rejoins with its data): nothing lost, nothing twice, nothing left."""
    name = f"tq{secrets.token_hex(3)}"
    path = tmp_path / "c.yaml"
    path.write_text(render_cluster(name=name, gms=1, lms=1, workers=4, heartbeat=0.5, netns=True, broker_nodes=3))
    loaded = load_cluster(path)
    assert loaded.quorum and len(loaded.brokers) == 3
    trace = [TraceJob(0.25 * i, 0.5, [0.5]) for i in range(24)]  # 6 s of arrivals, 2 tasks/s of 0.5 s on 4 workers

    async def body():
        try:
            await supervise.up(loaded, path, timeout=90)
            nodes_up = await supervise.broker_nodes_up(loaded)
            # each service starts at a random node: the one most of them are on dies (RabbitMQ lists each connection's
            # node by the address it was accepted on)
            brokers = lifecycle.broker_cluster(loaded, supervise.run_dir(path))
            listed = brokers.nodes[0].ctl("list_connections", "host", "--no-table-headers", "--silent", timeout=60)
            assert listed.returncode == 0, listed.stderr
            busiest = max(range(3), key=lambda k: listed.stdout.split().count(brokers.nodes[k].host))
            report = await run_chaos(loaded, path, trace, roles=["broker-node"], every=2.0, restart_after=0.5,
                                     broker_nodes=[busiest], constraints=False, timeout=60)
            return nodes_up, report, await fetch_statuses(loaded)
        finally:
            await supervise.down(loaded, path)

    nodes_up, report, statuses = asyncio.run(asyncio.wait_for(body(), 200))
    assert [n for n, _u, up in nodes_up if up] == [f"rabbit@{b.host}" for b in loaded.spec.testbed.broker_hosts]
    assert report.ok, (report.lost, report.duplicated)
    assert report.kills and all(k.role == "broker-node" and k.healthy_after is not None for k in report.kills)
    assert_valid_schedule(report.result, loaded.cluster)
    assert report.result.summary["tasks"] == 24
    assert sum(st.get("broker_failovers", 0) for st in statuses) >= 1, "no service moved off the killed node"
    assert not [n for n in list_netns() if n.startswith(f"sl-{name}-")]
    assert not lifecycle.broker_dir(supervise.run_dir(path)).exists()


def _processes_under(folder: str) -> list[int]:
    """Processes whose command line names ``folder`` (a broker node's launcher and Erlang VM name their data folder)."""
    out = []
    for proc in os.listdir("/proc"):
        try:
            with open(f"/proc/{proc}/cmdline", "rb") as f:
                if folder.encode() in f.read():
                    out.append(int(proc))
        except (OSError, ValueError):
            continue
    return out


def test_down_after_an_up_crashed_while_its_three_broker_nodes_started_removes_them(can_netns, tmp_path):
    name = f"tk{secrets.token_hex(3)}"
    path = tmp_path / "c.yaml"
    path.write_text(render_cluster(name=name, gms=1, lms=1, workers=2, netns=True, broker_nodes=3))
    loaded = load_cluster(path)
    run = supervise.run_dir(path)
    brokers = lifecycle.broker_cluster(loaded, run)
    try:
        HostsOf(loaded, run).create()
        for n in brokers.nodes:  # as an `up` killed while its nodes were starting, before they were joined
            n.start()
        deadline = time.monotonic() + 20  # a launcher names its folder once it has exec'd (ip netns exec, runuser)
        while len(_processes_under(str(brokers.dir))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_processes_under(str(brokers.dir))) >= 3
        assert main(["cluster", "down", str(path)]) == 0
        assert not [n for n in list_netns() if n.startswith(f"sl-{name}-")]
        assert not brokers.dir.exists() and _processes_under(str(brokers.dir)) == []
    finally:
        main(["cluster", "down", str(path)])  # also when an assertion failed: nothing left behind


def test_a_links_bandwidth_is_an_htb_class_for_that_destination(tmp_path):
    text = render_cluster(name="bw", gms=1, lms=1, workers=4, netns=True).replace("  default: {delay: 0.5ms}", "  gm-lm: {bandwidth: 100mbit}")
    tb = HostsOf(parse_cluster(text), tmp_path)
    gm, lm, host = tb.by_name["gm0"], tb.by_name["lm0"], tb.by_name["h0"]
    rules = tb.tc_rules(gm)
    assert rules[0] == "qdisc add dev eth0 root handle 1: htb default 0"  # other destinations unshaped
    assert any("htb rate 100mbit" in r for r in rules) and any(f"match ip dst {lm.address}/32" in r for r in rules)
    assert not any(host.address in r for r in rules) and tb.tc_rules(host) == []


_RECEIVE = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], 5999)); s.listen(1)
print("ready", flush=True)
c, _ = s.accept(); n = 0; first = None
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    first = first or time.monotonic(); n += len(b)
print(n, time.monotonic() - first, flush=True)
"""
_SEND = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], 5999), timeout=10); chunk = b"x" * (1 << 16); end = time.monotonic() + 1.5
while time.monotonic() < end:
    c.sendall(chunk)
c.close()
"""


def _throughput(tb: HostsOf, src, dst) -> float:
    """Bits per second of one TCP stream from ``src``'s namespace to ``dst``'s for 1.5 s."""
    rx = subprocess.Popen([*tb.prefix(dst), sys.executable, "-c", _RECEIVE, dst.address], stdout=subprocess.PIPE, text=True)
    try:
        assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
        subprocess.run([*tb.prefix(src), sys.executable, "-c", _SEND, dst.address], check=True, timeout=30)
        out, _err = rx.communicate(timeout=30)
    finally:
        rx.kill()
    n, seconds = out.split()
    return int(n) * 8 / float(seconds)


def test_a_limited_link_carries_its_bandwidth_and_an_unlimited_one_more(tmp_path, can_netns):
    """A live measurement of the HTB class: GM -> LM limited to 20 Mbit/s, GM -> worker host not limited."""
    text = render_cluster(name="bwlive", gms=1, lms=1, workers=4, netns=True).replace("  default: {delay: 0.5ms}", "  gm-lm: {bandwidth: 20mbit}")
    run_dir = tmp_path / "run"
    tb = HostsOf(parse_cluster(text), run_dir)
    tb.create()
    relay = None
    try:
        relay = lifecycle.start_relay(run_dir)  # every stream between hosts goes through it (the links' delays)
        gm, lm, host = tb.by_name["gm0"], tb.by_name["lm0"], tb.by_name["h0"]
        limited, free = _throughput(tb, gm, lm), _throughput(tb, gm, host)
        print(f"limited {limited / 1e6:.1f} Mbit/s, unlimited {free / 1e6:.1f} Mbit/s")
    finally:
        if relay is not None:
            os.kill(relay, signal.SIGTERM)
        left = tb.remove()
    assert 0.5 * 20e6 <= limited <= 1.3 * 20e6, f"{limited / 1e6:.1f} Mbit/s on a 20 Mbit/s link"
    assert free > 3 * limited, f"unlimited {free / 1e6:.1f} Mbit/s, limited {limited / 1e6:.1f} Mbit/s"
    assert not [n for n in list_netns() if n.startswith("sl-bwlive-")], left
