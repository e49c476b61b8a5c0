"""Fixtures for the services' tests: the RabbitMQ broker (helpers such as cluster files are in helpers.py).

Tests that need the broker read its URL from ``SCHEDLAB_AMQP_URL`` (default
the local broker). Without a broker they skip with the reason, except in CI
(``CI`` set), where a missing broker is a failure: those tests must run there.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from schedlab.services.clusterfile import DEFAULT_AMQP_URL


def broker_url() -> str:
    return os.environ.get("SCHEDLAB_AMQP_URL", DEFAULT_AMQP_URL)


def _broker_problem(url: str) -> str | None:
    async def probe() -> str | None:
        from schedlab.services.net import AmqpLink, BrokerUnreachable

        link = AmqpLink(url)
        try:
            await link.connect(3.0)
        except BrokerUnreachable as e:
            return e.reason
        await link.close()
        return None

    return asyncio.run(probe())


_PROBLEM: list[str | None] = []


@pytest.fixture(scope="session")
def broker() -> str:
    url = broker_url()
    if not _PROBLEM:
        _PROBLEM.append(_broker_problem(url))
    problem = _PROBLEM[0]
    if problem is not None:
        msg = f"RabbitMQ at {url} is not reachable ({problem}); start it with `rabbitmq-server -detached` or set SCHEDLAB_AMQP_URL"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return url
