"""When a service acknowledges what it consumed from the broker: once its output is safely in the broker.

A service handles a message from its queue and, in doing so, sends messages
and run records of its own. If it acknowledged the message at once and died
before that output reached the broker, the output would be lost for good —
the broker would not deliver the message again (found by the chaos campaigns:
an LM killed inside its 20 ms records batch lost the record of a task's end).
So :class:`Acknowledger` acknowledges handled messages in batches, and only
once everything their handling produced has been handed to the publisher and
confirmed by the broker: the service's records publisher calls ``at_flush(fn)``
at its next flush, and ``when_published(fn)`` runs ``fn`` once the broker has
confirmed what was published before. A service killed in between gets the
messages again from the broker — its input is never lost, its output may be
sent twice (the receivers take a message twice without harm).

Delivery tags are per channel and acknowledgements cumulative ("multiple"),
so one acknowledgement of the latest message handled covers every earlier
one of the channel: handlers run in delivery order. A message received but
not yet delivered — one the ordered LM→GM link holds back until a gap closes
(:class:`~.transport.InOrder`) — is not handled yet: while ``holding()`` says
some are held, nothing is acknowledged (an acknowledgement would cover them,
and a service killed meanwhile would lose them; found by the deterministic
simulation, seed 309328: a GM lost an end held behind a lost HTTP reply).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ACK_EVERY = 0.005  # seconds: without a records publisher, handled messages are acknowledged together this often


class AcksAfterOutput:
    """A broker link whose consumed messages an :class:`Acknowledger` acknowledges (``at_flush`` is its)."""

    acks: Acknowledger

    @property
    def at_flush(self) -> Callable[[Callable[[], None]], None] | None:
        return self.acks.at_flush

    @at_flush.setter
    def at_flush(self, fn: Callable[[Callable[[], None]], None] | None) -> None:
        self.acks.at_flush = fn

    @property
    def holding(self) -> Callable[[], bool] | None:
        return self.acks.holding

    @holding.setter
    def holding(self, fn: Callable[[], bool] | None) -> None:
        self.acks.holding = fn


class Acknowledger:
    """Acknowledges one channel's handled messages once their output is in the broker.

    ``ack_upto(message)`` acknowledges ``message`` and every earlier one of its
    channel; ``when_published(fn)`` calls ``fn`` once everything published so
    far is confirmed; ``call_later(delay, fn)`` is a timer. ``at_flush`` — set
    by a service with a records publisher — runs ``fn`` at the publisher's next
    flush.
    """

    def __init__(self, ack_upto: Callable[[Any], None], when_published: Callable[[Callable[[], None]], None],
                 call_later: Callable[..., Any]) -> None:
        self.ack_upto = ack_upto
        self.when_published = when_published
        self.call_later = call_later
        self.at_flush: Callable[[Callable[[], None]], None] | None = None
        self.every = ACK_EVERY  # without a records publisher: how long handled messages wait to be acknowledged together
        self.holding: Callable[[], bool] | None = None  # messages received are held back, not yet delivered: wait
        self._last: Any = None  # the latest message handled and not yet acknowledged

    def handled(self, message: Any) -> None:
        if self._last is None:
            if self.at_flush is not None:
                self.at_flush(self._ack_when_published)
            else:
                self.call_later(self.every, self._ack_handled)
        self._last = message

    def _ack_when_published(self) -> None:
        """Everything handled so far has put its output in the publish queue: acknowledge it once that is
        confirmed (a service killed before then gets the messages again — its output may be lost, not its input)."""
        if self._held():
            return
        last, self._last = self._last, None
        if last is not None:
            self.when_published(lambda: self.ack_upto(last))

    def _ack_handled(self) -> None:
        if self._held():
            return
        last, self._last = self._last, None
        if last is not None:
            self.ack_upto(last)

    def flush(self) -> None:
        """Acknowledge now what was handled and waits (a link closing: its output is published already)."""
        if self.holding is not None and self.holding():
            return
        last, self._last = self._last, None
        if last is not None:
            self.ack_upto(last)

    def _held(self) -> bool:
        """Some message received is held back: try again later (what is held is delivered within the link's gap
        timeout, or dropped as a duplicate)."""
        if self.holding is None or not self.holding():
            return False
        self.call_later(self.every, self._ack_handled if self.at_flush is None else self._retry)
        return True

    def _retry(self) -> None:
        if self.at_flush is not None:
            self.at_flush(self._ack_when_published)
