"""Every message of a cluster authenticated with the cluster's shared secret: HMAC-SHA256, fresh, used once.

Each HTTP request, each HTTP response and each broker message carries four
values — HTTP as headers, a broker message as one line before its body
(``schedlab-auth/1 <sender> <time> <nonce> <signature>``: encoding them as an
AMQP header table cost more than the HMAC itself)::

    X-Schedlab-Sender     who sends it ("gm:0", "lm:1", "host:2", "client")
    X-Schedlab-Time       when (Unix seconds, the sender's clock)
    X-Schedlab-Nonce      16 random bytes, hex
    X-Schedlab-Signature  HMAC-SHA256(key, "schedlab/1\\n" sender "\\n" time "\\n" nonce "\\n" body), hex

with ``key = SHA-256(secret)`` (the cluster file's ``secret`` or
``SCHEDLAB_CLUSTER_SECRET``). A receiver refuses, before it parses anything:

* ``unauthenticated`` — a header missing or malformed;
* ``forged`` — the signature does not match (compared in constant time): wrong
  secret, or sender, time, nonce or body changed on the way;
* ``stale`` — the time is more than :data:`MAX_SKEW` seconds from the
  receiver's clock (hosts of a cluster keep their clocks synchronised, as the
  run records already assume);
* ``replayed`` — the nonce was already seen within the freshness window (so a
  captured message cannot be sent again: after the window it is stale).

Broker messages that RabbitMQ *redelivers* (a consumer died before
acknowledging them) carry their original headers: they are checked for the
signature only, not for freshness or reuse — the broker, reached with the
cluster's own credentials, is trusted to redeliver, and the handlers are
idempotent. What a connection to the broker alone cannot do is forge a
message: it lacks the secret. For the same reason a broker message whose only
fault is its time (its sender's clock off by more than the window) is taken
and counted as ``skewed`` rather than dropped (:mod:`~.net`): dropping a
durable message would lose what it carried. Over HTTP a stale request is
refused (401) and its sender, told so, places the work again; a stale *answer*
leaves the request in doubt (the peer may have acted on it), settled as a lost
answer is (:mod:`~.links`).

The body is signed as bytes, so a message is authenticated before it is
decoded: a stranger's input costs one HMAC, never a JSON parse.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

SENDER, TIME, NONCE, SIGNATURE = "X-Schedlab-Sender", "X-Schedlab-Time", "X-Schedlab-Nonce", "X-Schedlab-Signature"
HEADERS = (SENDER, TIME, NONCE, SIGNATURE)
MAX_SKEW = 30.0  # seconds a message's time may differ from the receiver's clock
FRAME = b"schedlab-auth/1 "  # a broker message: this, the four values, a newline, then the body
_DOMAIN = b"schedlab/1\n"


def skew_text(sent: float, now: float) -> str:
    """When a message was signed, told from the receiver's clock: "sent 120 s ago" or "sent 5 s in the future"."""
    d = now - sent
    return f"sent {d:.1f} s ago" if d >= 0 else f"sent {-d:.1f} s in the future"


class AuthError(Exception):
    """A refused message: ``reason`` is one of unauthenticated, forged, stale, replayed."""

    def __init__(self, reason: str, detail: str, sender: str | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.sender = sender


def derive_key(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def metrics_token(secret: str) -> str:
    """The bearer token of every node's ``/metrics``: HMAC-SHA256(key, "schedlab-metrics/1"), hex.

    Derived, not the secret itself: a scraper holding it can read metrics and
    nothing else (it cannot sign a message)."""
    return hmac.new(derive_key(secret), b"schedlab-metrics/1", hashlib.sha256).hexdigest()


def _mac(key: bytes, sender: str, stamp: str, nonce: str, body: bytes) -> str:
    msg = b"".join((_DOMAIN, sender.encode(), b"\n", stamp.encode(), b"\n", nonce.encode(), b"\n", body))
    return hmac.digest(key, msg, "sha256").hex()  # OpenSSL's one-shot HMAC (hmac.new builds a Python object)


class Signer:
    """Signs what one sender sends."""

    def __init__(self, secret: str, sender: str, clock: Callable[[], float] = time.time) -> None:
        self.key = derive_key(secret)
        self.sender = sender
        self.clock = clock

    def headers(self, body: bytes) -> dict[str, str]:
        stamp = f"{self.clock():.3f}"
        nonce = os.urandom(16).hex()
        return {SENDER: self.sender, TIME: stamp, NONCE: nonce, SIGNATURE: _mac(self.key, self.sender, stamp, nonce, body)}


    def frame(self, body: bytes) -> bytes:
        """``body`` behind one line of credentials (broker messages: cheaper than AMQP header tables)."""
        h = self.headers(body)
        return b"".join((FRAME, " ".join((h[SENDER], h[TIME], h[NONCE], h[SIGNATURE])).encode(), b"\n", body))


class Verifier:
    """Checks what one receiver receives; remembers the nonces of the freshness window."""

    def __init__(self, secret: str, clock: Callable[[], float] = time.time, max_skew: float = MAX_SKEW) -> None:
        self.key = derive_key(secret)
        self.clock = clock
        self.max_skew = max_skew
        self._seen: OrderedDict[str, float] = OrderedDict()  # nonce -> its message's time, oldest first

    def verify(self, headers: Mapping[str, object], body: bytes, fresh: bool = True) -> str:
        """The authenticated sender of ``body``, or :class:`AuthError`. ``fresh=False``: signature only (a redelivery)."""
        values = []
        for name in HEADERS:
            v = _get(headers, name)
            if not isinstance(v, str) or not v or len(v) > 256:
                raise AuthError("unauthenticated", f"no valid {name} header")
            values.append(v)
        sender, stamp, nonce, signature = values
        try:
            t = float(stamp)
        except ValueError:
            raise AuthError("unauthenticated", f"{TIME} is not a number", sender) from None
        if not hmac.compare_digest(_mac(self.key, sender, stamp, nonce, body), signature):
            raise AuthError("forged", f"signature does not match (claimed sender {sender!r})", sender)
        if not fresh:
            return sender
        now = self.clock()
        if abs(now - t) > self.max_skew:
            raise AuthError("stale", f"{skew_text(t, now)} (allowed ±{self.max_skew:g} s)", sender)
        self._forget_before(now - 2 * self.max_skew)
        if nonce in self._seen:
            raise AuthError("replayed", f"nonce already used by {sender}", sender)
        self._seen[nonce] = t
        return sender

    def unframe(self, data: bytes, fresh: bool = True) -> tuple[str, bytes]:
        """``(sender, body)`` of a :meth:`Signer.frame`, or :class:`AuthError`."""
        if not data.startswith(FRAME):
            raise AuthError("unauthenticated", "no credentials line")
        end = data.find(b"\n", 0, 1024)
        fields = data[len(FRAME) : end].split(b" ") if end > 0 else []
        if len(fields) != 4:
            raise AuthError("unauthenticated", "malformed credentials line")
        try:
            headers = dict(zip(HEADERS, (f.decode("ascii") for f in fields), strict=True))
        except UnicodeDecodeError:
            raise AuthError("unauthenticated", "malformed credentials line") from None
        body = data[end + 1 :]
        return self.verify(headers, body, fresh), body

    def _forget_before(self, limit: float) -> None:
        seen = self._seen
        while seen:
            nonce, t = next(iter(seen.items()))
            if t >= limit and len(seen) < 1_000_000:
                break
            seen.popitem(last=False)


def _get(headers: Mapping[str, object], name: str) -> object:
    v = headers.get(name)
    if v is None:
        v = headers.get(name.lower())
    if isinstance(v, bytes):
        try:
            return v.decode("ascii")
        except UnicodeDecodeError:
            return None
    return v
