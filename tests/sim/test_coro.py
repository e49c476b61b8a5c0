"""Coroutines on the discrete-event kernel: the same ``async def`` code as under asyncio, in simulated time."""

from __future__ import annotations

import pytest

from schedlab.sim.coro import SimEvent, SimFuture, SimTask, sleep, wait_event
from schedlab.sim.kernel import Kernel


def test_sleeps_and_events_advance_simulated_time_in_order():
    k = Kernel()
    log = []
    ev = SimEvent()

    async def waiter(name, timeout):
        got = await wait_event(k, ev, timeout)
        log.append((name, k.now, got))

    async def setter():
        await sleep(k, 2.0)
        ev.set()
        log.append(("set", k.now, True))

    SimTask(k, waiter("short", 1.0))
    SimTask(k, waiter("long", 5.0))
    SimTask(k, setter())
    k.run()
    assert log == [("short", 1.0, False), ("set", 2.0, True), ("long", 2.0, True)]
    assert ev._waiters == []  # the timed-out waiter left no trace


def test_a_future_resolves_a_task_in_a_new_event_and_results_and_errors_reach_it():
    k = Kernel()
    fut = SimFuture()
    seen = []

    async def main():
        seen.append(await fut)
        try:
            await failing
        except ValueError as e:
            seen.append(str(e))
        return "done"

    failing = SimFuture()
    t = SimTask(k, main())
    k.run()
    assert seen == [] and not t.done()
    fut.set_result(41)
    assert seen == []  # never inside the stack of whoever resolved it
    k.run()
    failing.set_exception(ValueError("boom"))
    k.run()
    assert seen == [41, "boom"] and t.finished.result() == "done"
    with pytest.raises(RuntimeError):
        fut.set_result(1)
    fut.resolve(2)  # resolve is a no-op once done
    assert fut.result() == 41


def test_cancel_stops_a_task_where_it_waits_even_from_inside_itself():
    k = Kernel()
    log = []

    async def forever():
        while True:
            await sleep(k, 1.0)
            log.append(k.now)

    t = SimTask(k, forever())
    k.run(until=2.5)
    t.cancel()
    k.run(until=10.0)
    assert log == [1.0, 2.0] and t.done()

    holder = []

    async def suicide():
        holder[0].cancel()  # a process that crashes itself in its own step
        log.append("after cancel")
        await sleep(k, 1.0)
        log.append("never")

    holder.append(SimTask(k, suicide()))
    k.run()
    assert log[-1] == "after cancel"


def test_awaiting_anything_but_a_simulated_future_is_an_error():
    k = Kernel()
    errors = []

    class Foreign:
        def __await__(self):
            yield "not a SimFuture"

    async def bad():
        await Foreign()

    SimTask(k, bad(), errors.append)
    k.run()
    assert len(errors) == 1 and "only the runtime's futures" in str(errors[0])
