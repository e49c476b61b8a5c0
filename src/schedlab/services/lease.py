"""LM active/standby: a lease in RabbitMQ to learn at once that the active LM died, its port as the fence.

Megha paper, Section IV (last paragraph): "high availability of the LMs can
be implemented using an active-standby configuration". Here:

* **The lease** is an exclusive, auto-deleted queue ``<cluster>.lm.<i>.lease``
  that the active LM declares on a connection of its own. RabbitMQ deletes it
  the moment that connection closes — at once when the process dies (the
  kernel closes its sockets), after the connection's heartbeat timeout when
  the host vanishes — and the standby, which tries to declare it every
  :data:`POLL` seconds, gets it then. No clock, no timeout of ours decides
  that an LM is dead.
* **The fence** is the LM's port: the standby serves as LM *i* only once it
  has bound LM *i*'s host:port, which the kernel refuses while another process
  listens there. A lease lost for another reason (a broker restart) can hand
  it to the standby while the active still runs: the standby then cannot bind,
  gives the lease back and waits again, and the active takes it again. So at
  most one process ever acts as LM *i*, and the standby must run where LM
  *i*'s address points (the same host, or behind a floating address).
* **A standby elsewhere** (its own host and address: ``standby:`` in the
  cluster file) has no port to fence it. There the lease decides who serves,
  and the fencing tokens below fence the rest: a holder that finds its lease
  held by another process steps down (:func:`keep` with ``on_taken``), and
  so does one that reads a newer token in what GMs and worker hosts send it;
  worker hosts refuse an older process's launches (:mod:`~.lm_node`).
* **On a RabbitMQ cluster** (several brokers) the lease queue stays what it
  is — exclusive queues cannot be quorum queues, and live on the member the
  holder's connection reached. If that member dies, the holder's lease
  connection drops and the queue goes with it: the standby (connected to
  another member, or moving to one) may get the lease while the active LM
  still runs. That is the broker-restart case above: the port fence keeps the
  standby out, it gives the lease back, and the active LM's :func:`keep`
  takes it again on another member. The lease only ever tells the standby
  *when to try*; the fence decides, and the fence is not in the broker. So
  the lease survives the loss of its member without being replicated (a
  single-active-consumer quorum queue would replicate it, but tells a consumer
  nothing when it becomes the active one). A **lease connection** tries the
  brokers in order, from the one after the member it last used.
* **Fencing tokens** count the messages of a durable queue — a quorum queue
  on a cluster: a confirmed publish there is on a majority of members, so the
  count a new process reads after its own confirmed publish includes every
  earlier token, whichever member dies.
* **The state** is not mirrored (the paper has both LMs receive every update;
  with requests from several GMs that is a replicated log, since an LM's
  accept/reject decisions depend on the order it sees requests in). The worker
  hosts hold the truth of what runs; the new LM process rebuilds from them
  (:class:`~.recovery.LMTakeover`), in milliseconds.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Any

import aio_pika
from aiormq.exceptions import ChannelLockedResource

log = logging.getLogger("schedlab.services.lease")

POLL = 0.2  # seconds between a standby's tries
# the lease connection's AMQP heartbeat (seconds): RabbitMQ drops a connection after two missed beats, so a holder
# whose host vanished or whose process froze loses the lease within about 6 s (the broker's default, 60 s, would
# keep a standby elsewhere waiting a minute); a live holder whose lease dropped takes it again (keep)
LEASE_HEARTBEAT = 3
RENEW_EVERY = 50  # failed tries on one connection before it is replaced (see Lease.try_acquire)


def lease_queue(cluster: str, lm: int) -> str:
    return f"{cluster}.lm.{lm}.lease"


def tokens_queue(lease: str) -> str:
    """The durable queue that counts a lease's fencing tokens (:meth:`Lease.token`)."""
    return f"{lease}.tokens"


class Lease:
    """One process's hold on (or wait for) a lease queue."""

    def __init__(self, url: str | list[str], name: str, quorum: bool = False) -> None:
        self.urls = [url] if isinstance(url, str) else list(url)
        self.name = name
        self.quorum = quorum
        self._at = 0  # the broker of the latest connection
        self.connection: Any = None
        self.channel: Any = None
        self.taken = False  # the latest try failed because another process holds the lease (not: the broker away)
        self._failed = 0

    @property
    def held(self) -> bool:
        return self.channel is not None and not self.channel.is_closed and self.connection is not None and not self.connection.is_closed

    async def try_acquire(self) -> bool:
        try:
            if self.connection is None or self.connection.is_closed:
                # its own, plain connection: when it drops, the lease must be lost, not restored behind our back
                self.connection = await self._connect()
            channel = await self.connection.channel()
            await channel.declare_queue(self.name, exclusive=True, auto_delete=True)
        except Exception as e:  # held by another connection (RESOURCE_LOCKED), or the broker is away
            self.taken = isinstance(e, ChannelLockedResource)
            # each refused try leaves a closed channel's remains on the connection (about 3 KB, measured: a
            # standby polling for minutes grew by megabytes); a fresh connection now and then keeps it flat
            self._failed += 1
            if self._failed % RENEW_EVERY == 0:
                await self.release()
            return False
        self.channel = channel
        self.taken = False
        return True

    async def token(self) -> int | None:
        """A fencing token: one more than every token taken before under this lease's name (None while the
        broker cannot be reached). The count of a durable queue that gets one persistent message per token —
        the broker keeps it across restarts, and only the process that just took LM *i*'s port takes one."""
        try:
            if self.connection is None or self.connection.is_closed:
                self.connection = await self._connect()
            channel = await self.connection.channel(publisher_confirms=True)
            try:
                name = tokens_queue(self.name)
                args = {"x-queue-type": "quorum"} if self.quorum else None
                await channel.declare_queue(name, durable=True, arguments=args)
                await channel.default_exchange.publish(aio_pika.Message(b"", delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
                                                       routing_key=name)
                queue = await channel.declare_queue(name, durable=True, arguments=args)
                count = queue.declaration_result.message_count
            finally:
                with contextlib.suppress(Exception):
                    await channel.close()
        except Exception:  # the broker is away: asked again
            return None
        return int(count)

    async def _connect(self) -> Any:
        """A plain connection to the first broker that answers, from the one after the latest (see the module)."""
        from schedlab.services.net import quiet_amqp_logs

        error: Exception | None = None
        n = len(self.urls)
        start = self._at + 1 if n > 1 else 0
        for k in range(n):
            at = (start + k) % n
            try:
                with quiet_amqp_logs():
                    connection = await aio_pika.connect(self.urls[at], timeout=3.0 if n == 1 else 1.0, heartbeat=LEASE_HEARTBEAT)
            except Exception as e:
                error = e
                continue
            self._at = at
            # aio-pika's is_closed stays False when the broker drops a plain connection: forget it here instead
            connection.close_callbacks.add(lambda *_a, c=connection: self._dropped(c))
            return connection
        assert error is not None
        raise error

    def _dropped(self, connection: Any) -> None:
        """``connection`` closed (its broker went, or we released it): the next try connects afresh."""
        if self.connection is connection:
            self.connection, self.channel = None, None

    async def release(self) -> None:
        connection, self.connection, self.channel = self.connection, None, None
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()



async def keep(lease: Any, rt: Any, stop: Any, on_taken: Callable[[], None] | None = None) -> None:
    """The active LM's side: take the lease again whenever it was lost (a broker restart), until ``stop`` is set.

    ``rt`` is the LM's runtime (:class:`~.runtime.ServiceRuntime`), ``stop`` one of its events. With
    ``on_taken`` (an LM whose standby serves at another address: no port fences it) the lease is checked
    every :data:`POLL` seconds, and found held by another process it calls ``on_taken`` — this process
    steps down — and returns.
    """
    while not stop.is_set():
        if not lease.held and not await lease.try_acquire():
            if on_taken is not None and lease.taken:
                on_taken()
                return
            await lease.release()
        await rt.wait(stop, POLL if on_taken is not None else 1.0)


def bind(host: str, port: int) -> socket.socket | None:
    """A listening socket on host:port, or None while another process listens there (the fence)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a dead process's TIME_WAIT, not a live listener
    try:
        sock.bind((host, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        return None
    sock.setblocking(False)
    return sock


async def wait_to_serve(lease: Any, bind: Callable[[], bool], rt: Any) -> Any:
    """A standby's wait: until it holds ``lease`` *and* ``bind()`` took the LM's port; returns the lease."""
    while True:
        if await lease.try_acquire():
            if bind():
                return lease
            log.warning("lease %s free but the LM's port is still served by another process: waiting", getattr(lease, "name", ""))
            await lease.release()
        await rt.sleep(POLL)
