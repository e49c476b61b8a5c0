"""Fixtures for the services' tests: the RabbitMQ broker, free ports, small cluster files.

Tests that need the broker read its URL from ``SCHEDLAB_AMQP_URL`` (default
the local broker). Without a broker they skip with the reason, except in CI
(``CI`` set), where a missing broker is a failure: those tests must run there.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

import pytest

from schedlab.services.clusterfile import DEFAULT_AMQP_URL, render_cluster


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


def consecutive_free_ports(n: int) -> int:
    """A base port with ``n`` free consecutive ports after it (outside the ephemeral range)."""
    from schedlab.services.supervise import free_port_range

    return free_port_range(n)


def write_cluster(tmp_path: Path, *, gms: int = 2, lms: int = 2, workers: int = 12, hosts_per_lm: int = 1, heartbeat: float = 0.2,
                  resources: list[str] | None = None, capacity: list[float] | None = None, url: str | None = None,
                  host_constraints: list[list[int]] | None = None) -> Path:
    """A cluster file on free ports with a unique name; ``host_constraints[k]`` gives worker host k's workers constraints."""
    n = gms + lms + lms * hosts_per_lm
    text = render_cluster(name=f"t{secrets.token_hex(4)}", gms=gms, lms=lms, workers=workers, hosts_per_lm=hosts_per_lm,
                          base_port=consecutive_free_ports(n), broker=url or broker_url(), heartbeat=heartbeat,
                          resources=resources, capacity=capacity)
    for cons in host_constraints or []:
        text = text.replace("constraints: []", f"constraints: {cons}".replace("[", "<").replace("]", ">"), 1)
    text = text.replace("<", "[").replace(">", "]")
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path
