"""In-order delivery on the LM -> GM link, whose messages come by two channels (RabbitMQ and HTTP replies)."""

from __future__ import annotations

from collections import defaultdict

from schedlab.services.simruntime import SimTimer
from schedlab.services.transport import InOrder
from schedlab.sim.kernel import Kernel


def in_order(gap: float = 2.0):
    """An InOrder on the simulated clock: a test advances time with ``kernel.run(until=...)``."""
    kernel = Kernel()
    counters = defaultdict(int)
    io = InOrder(counters, lambda d, fn, *a: SimTimer(kernel.call_later(d, fn, *a)), gap_timeout=gap)
    return kernel, io, counters


def test_early_messages_wait_for_the_gap_to_close_and_a_restart_starts_afresh():
    kernel, io, counters = in_order(0.05)
    got = []
    deliver = lambda x: (lambda: got.append(x))  # noqa: E731
    io.accept("lm:0", "gm:0", (1, 1), deliver("a"))
    io.accept("lm:0", "gm:0", (1, 3), deliver("c"))  # overtook b
    io.accept("lm:0", "gm:0", None, deliver("unsequenced"))
    assert got == ["a", "unsequenced"]
    io.accept("lm:0", "gm:0", (1, 2), deliver("b"))
    assert got == ["a", "unsequenced", "b", "c"]
    io.accept("lm:0", "gm:0", (2, 1), deliver("restarted LM"))
    assert got[-1] == "restarted LM"
    # a link's first message to arrive may have overtaken the link's number 1: it waits for it
    io.accept("lm:1", "gm:0", (7, 2), deliver("second"))
    assert got[-1] == "restarted LM"
    io.accept("lm:1", "gm:0", (7, 1), deliver("first"))
    assert got[-2:] == ["first", "second"]
    assert counters["gaps_skipped"] == 0


def test_a_lost_message_holds_the_link_only_for_the_gap_timeout():
    kernel, io, counters = in_order(0.05)
    gaps = []
    io.on_gap = lambda src, dst: gaps.append((src, dst))  # a GM asks that LM for its whole state
    got = []
    io.accept("lm:0", "gm:0", (1, 1), lambda: got.append(1))
    io.accept("lm:0", "gm:0", (1, 3), lambda: got.append(3))
    io.accept("lm:0", "gm:0", (1, 4), lambda: got.append(4))
    assert got == [1] and gaps == []
    kernel.run(until=kernel.now + 0.15)
    assert got == [1, 3, 4] and gaps == [("lm:0", "gm:0")]
    io.accept("lm:0", "gm:0", (1, 2), lambda: got.append(2))  # the lost one, late: still delivered...
    assert got == [1, 3, 4, 2]
    assert gaps == [("lm:0", "gm:0")] * 2  # ... and the GM asks for the LM's whole state again, which comes after it
    io.accept("lm:0", "gm:0", (2, 1), lambda: got.append("restarted"))  # a sender's restart is no lost message
    assert got[-1] == "restarted" and len(gaps) == 2
    assert counters["gaps_skipped"] == 1 and counters["late_after_gap"] == 1


def test_a_message_delivered_twice_is_applied_once():
    kernel, io, counters = in_order(0.05)
    got = []
    for n in (1, 2, 2, 1, 3):  # the broker redelivers what was not acknowledged when a link dropped
        io.accept("lm:0", "gm:0", (5, n), lambda n=n: got.append(n))
    assert got == [1, 2, 3] and counters["duplicates_dropped"] == 2


def test_an_answer_to_a_question_asked_again_drops_nothing_sent_to_this_receiver():
    """A running GM asks an LM for its state again after a gap timed out; the answer (number 6) comes by
    HTTP before messages numbered 4 and 5, still in the broker (a launch rejected, a task finished): they
    are delivered, not dropped as if they had been sent to a predecessor."""
    kernel, io, counters = in_order(0.05)
    io.on_gap = lambda src, dst: None
    got = []
    io.restart_at("lm:0", "gm:0", (1, 1))  # the GM's first question at its start: the link begins at 1
    io.accept("lm:0", "gm:0", (1, 1), lambda: got.append("first answer"))
    io.accept("lm:0", "gm:0", (1, 3), lambda: got.append(3))  # 2 is late: the gap times out
    kernel.run(until=kernel.now + 0.15)
    assert got == ["first answer", 3]
    io.restart_at("lm:0", "gm:0", (1, 6))  # the answer to the question asked again
    io.accept("lm:0", "gm:0", (1, 6), lambda: got.append("second answer"))
    for n in (4, 5, 2):
        io.accept("lm:0", "gm:0", (1, n), lambda n=n: got.append(n))
    assert got == ["first answer", 3, 4, 5, "second answer", 2]
    assert counters["duplicates_dropped"] == 0 and counters["late_after_gap"] == 1


def test_a_first_answer_restarts_the_link_and_drops_what_the_predecessor_was_sent():
    kernel, io, counters = in_order(0.05)
    got = []
    io.restart_at("lm:0", "gm:0", (1, 40))  # a restarted GM: the LM had numbered 39 messages for its predecessor
    io.accept("lm:0", "gm:0", (1, 40), lambda: got.append("answer"))
    io.accept("lm:0", "gm:0", (1, 38), lambda: got.append(38))  # still in the GM's durable queue
    io.accept("lm:0", "gm:0", (1, 41), lambda: got.append(41))
    io.restart_at("lm:0", "gm:0", (2, 7))  # the LM was taken over by its standby: a new incarnation
    io.accept("lm:0", "gm:0", (2, 7), lambda: got.append("standby's answer"))
    assert got == ["answer", 41, "standby's answer"] and counters["duplicates_dropped"] == 1


def test_from_an_earlier_process_a_rejection_is_delivered_without_its_state():
    # a standby elsewhere took over while a GM's request was on its way to the old LM process: the old one's
    # rejection still says the request was not acted on (the GM requests the task again); its state is old news
    kernel, io, counters = in_order(0.05)
    got = []
    io.accept("lm:0", "gm:0", (2, 1), lambda: got.append("news of the new process"))
    io.accept("lm:0", "gm:0", (1, 9), lambda: got.append("rejection with state"), deliver_fact=lambda: got.append("rejection"))
    io.accept("lm:0", "gm:0", (1, 10), lambda: got.append("state update"), superseded=True)
    assert got == ["news of the new process", "rejection"]
    assert counters["facts_of_earlier_process"] == 1 and counters["states_of_earlier_process_dropped"] == 1


def test_nothing_is_acknowledged_while_the_ordered_link_holds_a_message_back():
    # acknowledgements are cumulative: one for a later message would cover the one held behind a gap, and a GM
    # killed before delivering it would lose it for good (dst seed 309328)
    from schedlab.services.acks import Acknowledger

    kernel, io, _counters = in_order(0.05)
    acked = []
    acks = Acknowledger(acked.append, lambda fn: fn(), lambda d, fn, *a: kernel.call_later(d, fn, *a))
    acks.every = 0.01
    acks.holding = io.holding
    got = []
    io.accept("lm:0", "gm:0", (1, 1), lambda: got.append(1))
    acks.handled("m1")
    io.accept("lm:0", "gm:0", (1, 3), lambda: got.append(3))  # #2 not here yet: held
    acks.handled("m3")
    kernel.run(until=kernel.now + 0.03)
    assert got == [1] and acked == []
    io.accept("lm:0", "gm:0", (1, 2), lambda: got.append(2))  # the gap closes: both delivered, then acknowledged
    kernel.run(until=kernel.now + 0.03)
    assert got == [1, 2, 3] and acked == ["m3"]
