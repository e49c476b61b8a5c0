"""The event kernel, the simulated Runtime and named RNG streams."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlab.sim import Component, Kernel, NetworkModel, RngStreams, SimRuntime


def test_events_run_in_time_order_and_ties_in_insertion_order():
    k = Kernel()
    seen = []
    k.call_at(2.0, seen.append, "c")
    k.call_at(1.0, seen.append, "a")
    k.call_at(1.0, seen.append, "b")  # same time: after "a", which was scheduled first
    k.call_at(0.5, lambda: k.call_later(0.5, seen.append, "a2"))  # lands at 1.0, scheduled last
    k.run()
    assert seen == ["a", "b", "a2", "c"]
    assert k.now == 2.0
    assert k.events == 5


@given(st.lists(st.tuples(st.integers(0, 20), st.booleans()), max_size=60))
def test_order_is_sorted_by_time_then_schedule_order(items):
    """Events scheduled with a handle (call_at) or posted: one order, by time then scheduling."""
    k = Kernel()
    seen = []
    for i, (t, posted) in enumerate(items):
        (k.post if posted else k.call_at)(float(t), seen.append, (t, i))
    k.run()
    assert seen == sorted(seen)
    assert k.events == len(items)


def test_cancel_and_until():
    k = Kernel()
    seen = []
    ev = k.call_at(1.0, seen.append, 1)
    k.call_at(2.0, seen.append, 2)
    k.call_at(3.0, seen.append, 3)
    k.cancel(ev)
    k.cancel(ev)  # twice is harmless
    assert k.run(until=2.0) == 1
    assert seen == [2] and k.now == 2.0
    k.run()
    assert seen == [2, 3]


def test_cannot_schedule_in_the_past():
    k = Kernel()
    k.call_at(5.0, lambda: None)
    k.run()
    with pytest.raises(ValueError):
        k.call_at(1.0, lambda: None)
    with pytest.raises(ValueError):
        k.call_later(-1.0, lambda: None)
    with pytest.raises(ValueError, match="before now"):
        k.post(1.0, lambda: None)


def test_progress_callback_is_called_periodically():
    k = Kernel()
    for i in range(100):
        k.call_at(float(i), lambda: None)
    calls = []
    k.run(progress=lambda now, ev: calls.append(ev), progress_every=10)
    assert calls[:3] == [10, 20, 30] and calls[-1] == 100


class Ping:
    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n


class Echo(Component):
    def __init__(self, address, rt, peer=None):
        super().__init__(address, rt)
        self.peer = peer
        self.got: list[tuple[float, int]] = []

    def handlers(self):
        return {Ping: self.on_ping}

    def on_ping(self, msg: Ping) -> None:
        self.got.append((self.rt.now(), msg.n))
        if self.peer is not None and msg.n > 0:
            self.rt.send(self.peer, Ping(msg.n - 1))


def test_messages_take_the_network_latency_and_are_counted():
    rt = SimRuntime(seed=0, network=NetworkModel(latency=0.5))
    a = Echo("a", rt, peer="b")
    b = Echo("b", rt, peer="a")
    rt.send("b", Ping(3))
    rt.kernel.run()
    assert b.got == [(0.5, 3), (1.5, 1)]
    assert a.got == [(1.0, 2), (2.0, 0)]
    assert rt.message_counts() == {"Ping": 4}


def test_a_latency_spread_draws_each_messages_latency_around_the_median_and_keeps_each_receivers_order():
    def arrivals(seed):
        rt = SimRuntime(seed=seed, network=NetworkModel(latency=0.002, latency_spread=0.8))
        b = Echo("b", rt)
        for n in range(2000):
            rt.kernel.call_at(n * 0.01, rt.send, "b", Ping(n))
        rt.kernel.run()
        return b.got

    got = arrivals(1)
    assert [n for _t, n in got] == list(range(2000))  # in the order sent, whatever each one's draw
    delays = sorted(t - n * 0.01 for t, n in got)
    assert 0.0017 < delays[1000] < 0.0023  # the median is the latency
    assert delays[1800] > 0.004  # and the tail is long: lognormal, sigma 0.8 (p90 = 2.8 x the median)
    assert arrivals(1) == got and arrivals(2) != got  # a seed gives the same draws


def test_without_a_spread_every_message_takes_exactly_the_latency():
    rt = SimRuntime(seed=0, network=NetworkModel(latency=0.25, latency_spread=0.0))
    b = Echo("b", rt)
    for n in range(5):
        rt.kernel.call_at(float(n), rt.send, "b", Ping(n))
    rt.kernel.run()
    assert b.got == [(n + 0.25, n) for n in range(5)]
    with pytest.raises(ValueError, match="spread"):
        NetworkModel(latency=0.1, latency_spread=-1.0)


@dataclass
class Load:
    n: int
    tasks: int

    def tasks_carried(self) -> int:
        return self.tasks


class Loaded(Component):
    def __init__(self, address, rt):
        super().__init__(address, rt)
        self.got: list[tuple[float, int]] = []

    def handlers(self):
        return {Load: lambda m: self.got.append((self.rt.now(), m.n)), Ping: lambda m: self.got.append((self.rt.now(), -m.n))}


def test_a_message_carrying_tasks_takes_longer_by_each_and_never_overtakes_an_earlier_one():
    rt = SimRuntime(seed=0, network=NetworkModel(latency=0.001, latency_per_task=0.0005))
    b = Loaded("b", rt)
    rt.send("b", Load(0, 10))  # 1 ms + 10 x 0.5 ms
    rt.send("b", Ping(1))  # carries none: 1 ms, but after the load sent before it
    rt.kernel.call_at(0.01, rt.send, "b", Load(2, 2))
    rt.kernel.run()
    assert b.got == [(pytest.approx(0.006), 0), (pytest.approx(0.006), -1), (pytest.approx(0.012), 2)]
    with pytest.raises(ValueError, match="per task"):
        NetworkModel(latency=0.1, latency_per_task=-1.0)


class Logged(Component):
    """Logs (its address, time, message number) to a log shared with others."""

    def __init__(self, address, rt, log):
        super().__init__(address, rt)
        self.log = log

    def handlers(self):
        return {Ping: self.on_ping}

    def on_ping(self, msg: Ping) -> None:
        self.log.append((self.address, self.rt.now(), msg.n))
        if self.address == "a":  # a reply lands at the instant of later deliveries
            self.rt.send("c", Ping(-msg.n))


@given(st.lists(st.tuples(st.sampled_from(["each", "one"]), st.sampled_from([0.0, 0.25, 0.5])), min_size=1, max_size=12))
def test_send_each_is_one_send_after_another(plan):
    """Deliveries to several addresses at once: the order, times and counts of separate sends."""

    def run(fused: bool):
        rt = SimRuntime(seed=0, network=NetworkModel(latency=0.5))
        log: list = []
        for name in "abc":
            Logged(name, rt, log)
        for i, (how, at) in enumerate(plan):
            def go(i=i, how=how):
                if how == "one":
                    rt.send("c", Ping(i))
                elif fused:
                    rt.send_each(("a", "b"), Ping(i))
                else:
                    rt.send("a", Ping(i))
                    rt.send("b", Ping(i))
            rt.kernel.call_at(at, go)
        rt.kernel.run()
        return log, rt.kernel.events, rt.message_counts()

    assert run(True) == run(False)


def test_send_each_to_an_unknown_address():
    rt = SimRuntime()
    Echo("a", rt)
    with pytest.raises(KeyError, match="no component"):
        rt.send_each(("a", "nowhere"), Ping(1))


def test_processing_cost_serialises_the_receiver():
    rt = SimRuntime(seed=0, network=NetworkModel(latency=0.1, processing={"Ping": 1.0}))
    b = Echo("b", rt)
    for i in range(3):
        rt.send("b", Ping(i))  # all arrive at 0.1; handled one after another
    rt.kernel.run()
    assert b.got == [(pytest.approx(1.1), 0), (pytest.approx(2.1), 1), (pytest.approx(3.1), 2)]


def test_unknown_address_and_message_type():
    rt = SimRuntime()
    Echo("a", rt)
    with pytest.raises(KeyError, match="no component"):
        rt.send("nowhere", Ping(1))
    with pytest.raises(KeyError, match="no handler"):
        rt.send("a", object())
    with pytest.raises(ValueError):
        Echo("a", rt)
    with pytest.raises(ValueError):
        NetworkModel(latency=-1)


def test_named_streams_are_deterministic_and_independent():
    a1 = RngStreams(7)
    a2 = RngStreams(7)
    a2.rng("other").random()  # creating another stream first must not matter
    x = [a1.rng("gm:1").random() for _ in range(5)]
    y = [a2.rng("gm:1").random() for _ in range(5)]
    assert x == y
    assert x != [RngStreams(8).rng("gm:1").random() for _ in range(5)]
    assert x != [RngStreams(7).rng("gm:2").random() for _ in range(5)]
    assert (a1.np_rng("w").random(3) == RngStreams(7).np_rng("w").random(3)).all()
    with pytest.raises(ValueError):
        RngStreams(-1)


@pytest.mark.parametrize("posted", [False, True])
def test_a_failing_event_leaves_the_events_after_it_pending_in_order(posted):
    k = Kernel()
    seen = []
    schedule = k.post if posted else k.call_at

    def boom():
        k.call_later(0.0, seen.append, "scheduled by the failing event")
        raise RuntimeError("handler failed")

    k.call_at(1.0, seen.append, "a")
    schedule(1.0, boom)
    schedule(1.0, seen.append, "b")
    k.call_at(2.0, seen.append, "c")
    with pytest.raises(RuntimeError):
        k.run()
    assert seen == ["a"] and k.events == 1 and k.pending() == 3
    k.run()
    assert seen == ["a", "b", "scheduled by the failing event", "c"]


def test_progress_is_reported_for_the_last_events_too():
    k = Kernel()
    for i in range(25):
        k.call_at(float(i // 2), lambda: None)  # two events a time
    calls = []
    k.run(progress=lambda now, ev: calls.append(ev), progress_every=10)
    assert calls == [10, 20, 25]
