"""The in-memory network and broker: the behaviour the services' protocol depends on, and the faults."""

from __future__ import annotations

import random

from schedlab.services.memnet import (
    BROKER,
    KernelClock,
    MemBroker,
    MemHttp,
    MemLease,
    MemLink,
    MemNet,
    MemProcess,
)
from schedlab.services.simruntime import SimServiceRuntime
from schedlab.services.transport import Unreachable
from schedlab.sim.coro import SimTask
from schedlab.sim.kernel import Kernel


class _NoTransport:
    def bind(self, address, runtime):
        pass

    def send(self, dst, msg):
        raise AssertionError("not used")


def world(latency=0.001):
    k = Kernel()
    net = MemNet(KernelClock(k), latency, random.Random(1))
    return k, net, MemBroker(net)


def proc(k, name, host=None):
    return MemProcess(name, host or name, SimServiceRuntime(_NoTransport(), k, 0, name=name))


def spawn(p, coro):
    return SimTask(p.rt.kernel, coro)


def test_unacknowledged_messages_come_back_marked_redelivered_when_their_consumer_dies():
    k, net, broker = world()
    a, b, c = proc(k, "a"), proc(k, "b"), proc(k, "c")
    pub, sub1, sub2 = MemLink(broker, a), MemLink(broker, b), MemLink(broker, c)
    got1, got2 = [], []
    spawn(a, pub.connect())
    spawn(b, sub1.connect())
    k.run(until=0.01)
    spawn(b, sub1.consume_held("q", lambda f, red, h: got1.append((f, red)), None))
    k.run(until=0.02)
    for n in range(3):
        pub.publish("q", n, persistent=True)
    k.run(until=0.05)
    assert [f for f, _r in got1] == [0, 1, 2] and not any(r for _f, r in got1)
    net.crash(b)  # never acknowledged
    spawn(c, sub2.connect())
    k.run(until=0.06)
    spawn(c, sub2.consume_held("q", lambda f, red, h: got2.append((f, red)), None))
    k.run(until=0.1)
    assert got2 == [(0, True), (1, True), (2, True)]


def test_a_broker_restart_keeps_persistent_messages_of_durable_queues_and_links_reconnect_and_resend():
    k, net, broker = world()
    a, b = proc(k, "a"), proc(k, "b")
    pub, sub = MemLink(broker, a), MemLink(broker, b)
    got = []
    spawn(a, pub.connect())
    spawn(b, sub.connect())
    k.run(until=0.01)
    spawn(b, sub.consume("q", got.append, None))
    k.run(until=0.02)
    broker.stop()
    pub.publish("q", "kept", persistent=True)  # no connection: held by the publisher
    confirmed = []
    pub.when_published(lambda: confirmed.append(k.now))
    k.run(until=1.0)
    broker.start()
    k.run(until=20.0)  # both links reconnect (every 5 s) and restore their consumers
    assert got == ["kept"] and confirmed and pub.reconnects == 1 and sub.reconnects == 1
    # a transient message still queued when the broker goes down is lost
    net.cut("b", BROKER)  # b cannot consume: the message waits in the queue
    pub.publish("q", "transient", persistent=False)
    k.run(until=21.0)
    broker.stop()
    broker.start()
    net.heal("b", BROKER)
    k.run(until=40.0)
    assert got == ["kept"] and broker.counters["lost_transient"] == 1


def test_a_lease_is_exclusive_and_lost_with_its_holders_process():
    k, net, broker = world()
    a, b = proc(k, "a", "lm:0"), proc(k, "b", "lm:0")
    la, lb = MemLease(broker, a, "lease"), MemLease(broker, b, "lease")
    results = []

    async def take(lease):
        results.append(await lease.try_acquire())

    spawn(a, take(la))
    k.run(until=0.1)
    spawn(b, take(lb))
    k.run(until=0.2)
    assert results == [True, False] and la.held and not lb.held
    net.crash(a)
    spawn(b, take(lb))
    k.run(until=0.3)
    assert results[-1] is True and lb.held


def test_http_reaches_whoever_holds_the_address_and_a_cut_link_times_out():
    k, net, _broker = world()
    net.host_of_url["mem://lm/0"] = "lm:0"
    client = proc(k, "gm:0")
    server = proc(k, "lm:0")

    class Node:
        serving = True

        def handle(self, frames, signed_at):
            return 200, [f"ok {frames[0]}"]

        class router:  # noqa: N801 - what memnet reads of a node
            class wire:  # noqa: N801
                unpack = staticmethod(lambda p: p)

    http = MemHttp(net, client)
    answers = []

    async def ask(x):
        try:
            answers.append(await http.post("mem://lm/0", [x], 0.5))
        except Unreachable as e:
            answers.append(f"unreachable: {e}")

    spawn(client, ask("refused"))
    k.run(until=0.1)
    assert answers[-1].startswith("unreachable: connection refused")
    assert net.bind("mem://lm/0", server, Node())
    assert not net.bind("mem://lm/0", proc(k, "standby", "lm:0"), Node())  # the fence: one process serves there
    spawn(client, ask("a"))
    k.run(until=0.2)
    assert answers[-1] == (200, ["ok a"])
    net.cut("gm:0", "lm:0", oneway=True)
    spawn(client, ask("b"))
    k.run(until=1.0)
    assert answers[-1].startswith("unreachable: no answer within 0.5 s")
