"""The broker link's publisher on the real RabbitMQ (needs the broker): windows of publishes in flight, in order,
fenced publishes and ``when_published`` barriers between them (services/net.py, issue 48). That a fenced publish
leaves only after its predecessors' confirms is checked in the simulated broker (test_memnet.py), where time is
observable."""

from __future__ import annotations

import asyncio
import secrets

from schedlab.services.net import PUBLISH_WINDOW, AmqpLink


async def _until(cond, timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def test_publishes_leave_in_windows_in_order_with_fences_and_barriers_between_them(broker: str) -> None:
    records, gm = f"t{secrets.token_hex(4)}.records", f"t{secrets.token_hex(4)}.gm"
    n = 3 * PUBLISH_WINDOW + 17  # several windows' worth, queued at once

    async def body() -> tuple[list[int], list[int], list[int], int]:
        link, consumer = AmqpLink(broker), AmqpLink(broker)
        await link.connect()
        await consumer.connect()
        got: dict[str, list[int]] = {records: [], gm: []}
        barriers: list[int] = []
        try:
            await consumer.consume(records, lambda b: got[records].append(int(b)))
            await consumer.consume(gm, lambda b: got[gm].append(int(b)))
            for i in range(n):
                link.publish(records, str(i).encode(), True)
            link.when_published(lambda: barriers.append(link.published))
            link.publish(gm, b"-1", True, fence=True)  # proof of every record before it
            for i in range(n, n + 5):
                link.publish(gm, str(i).encode(), True)
                link.publish(records, str(i).encode(), True)
            link.when_published(lambda: barriers.append(link.published))
            await _until(lambda: len(got[records]) == n + 5 and len(got[gm]) == 6, 30, "every message")
            await _until(lambda: len(barriers) == 2, 10, "the barriers")
            return got[records], got[gm], barriers, link.publish_errors
        finally:
            await consumer.delete_queues([records, gm])
            await consumer.close()
            await link.close()

    recs, ends, barriers, errors = asyncio.run(body())
    assert recs == list(range(n + 5)) and ends == [-1, *range(n, n + 5)]  # in order, each once
    assert barriers == [n, n + 11]  # each barrier ran once everything before it was confirmed, and no later
    assert errors == 0
