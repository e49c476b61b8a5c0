"""Link properties of the testbed: one-way delay, jitter, loss and bandwidth per pair of hosts.

A cluster file's ``network`` section gives them by kind of link, most
specific first::

    network:
      default: {delay: 0.5ms}            # every pair of hosts
      gm-lm: {delay: 25ms, jitter: 2ms}  # a GM and an LM (either way)
      lm-host: {delay: 1ms}              # an LM and one of the worker hosts
      broker: {delay: 2ms}               # anything and the broker's host
      gm0-lm1: {loss: 1%}                # one pair of hosts, by name

Names of hosts: ``gm<i>``, ``lm<i>``, ``lm<i>s`` (LM *i*'s standby),
``h<i>`` (worker host *i*) and ``broker`` (``broker<k>``: node *k* of a
broker of several RabbitMQ nodes); kinds of link: ``gm-lm``,
``lm-host``, ``gm-broker``, ``lm-broker``, ``host-broker``, ``broker`` (any
host and a broker node, the links between broker nodes included) and ``default``. A pair takes each property from the
most specific entry that sets it (pair, then kind, then ``broker`` for links
to the broker, then ``default``).

Units: delays and jitter as ``25ms``, ``0.5ms``, ``1s`` or a number of
seconds; loss as ``1%`` or a fraction; bandwidth as tc's rates (``100mbit``,
``1gbit``). Each applies to each direction of the link: delay one way, loss
to the packets, bandwidth to the bytes (an HTB class per destination on the
sender's link to the bridge).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ROLES = {"gm": "gm", "lm": "lm", "h": "host", "broker": "broker"}
KINDS = ("default", "gm-lm", "lm-host", "gm-broker", "lm-broker", "host-broker", "broker")
_HOST = re.compile(r"^(gm|lm|h)(\d+)(s?)$|^broker\d*$")  # broker<k>: node k of a broker of several
_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(us|ms|s)?\s*$")
_RATE = re.compile(r"^[0-9]+(\.[0-9]+)?(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps)$")


@dataclass(frozen=True)
class LinkProps:
    delay: float = 0.0  # seconds, one way
    jitter: float = 0.0  # seconds (standard deviation of the extra delay)
    loss: float = 0.0  # fraction of packets dropped, each direction
    bandwidth: str | None = None  # tc rate of a host's egress

    @property
    def relayed(self) -> bool:
        return self.delay > 0 or self.jitter > 0


def role_of(host: str) -> str:
    m = _HOST.match(host)
    if m is None:
        raise ValueError(f"unknown host name {host!r} (gm<i>, lm<i>, lm<i>s, h<i>, broker or broker<k>)")
    return "broker" if host.startswith("broker") else ROLES[m.group(1)]


def parse_time(v: Any, what: str) -> float:
    if isinstance(v, bool):
        raise ValueError(f"{what}: a time such as 25ms, got {v!r}")
    if isinstance(v, int | float):
        x = float(v)
    else:
        m = _TIME.match(str(v))
        if m is None:
            raise ValueError(f"{what}: a time such as 25ms or 0.5ms, got {v!r}")
        x = float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0}[m.group(2)]
    if not 0 <= x <= 60:
        raise ValueError(f"{what}: between 0 and 60 s, got {v!r}")
    return x


def parse_loss(v: Any, what: str) -> float:
    s = str(v).strip()
    try:
        x = float(s[:-1]) / 100 if s.endswith("%") else float(s)
    except ValueError:
        raise ValueError(f"{what}: a fraction or a percentage such as 1%, got {v!r}") from None
    if not 0 <= x <= 1:
        raise ValueError(f"{what}: between 0 and 100 %, got {v!r}")
    return x


def parse_props(data: Any, what: str) -> dict[str, Any]:
    """One entry of ``network``: the properties it sets."""
    if not isinstance(data, dict):
        raise ValueError(f"{what}: a mapping such as {{delay: 25ms, jitter: 2ms}}")
    out: dict[str, Any] = {}
    for k, v in data.items():
        if k in ("delay", "jitter"):
            out[k] = parse_time(v, f"{what}.{k}")
        elif k == "loss":
            out[k] = parse_loss(v, f"{what}.{k}")
        elif k == "bandwidth":
            if not _RATE.match(str(v)):
                raise ValueError(f"{what}.bandwidth: a rate such as 100mbit or 1gbit, got {v!r}")
            out[k] = str(v)
        else:
            raise ValueError(f"{what}: unknown property {k!r} (delay, jitter, loss, bandwidth)")
    return out


class Network:
    """The ``network`` section, validated: :meth:`link` gives a pair's properties."""

    def __init__(self, section: dict[str, Any] | None) -> None:
        self.entries: dict[str, dict[str, Any]] = {}
        for key, props in (section or {}).items():
            key = str(key)
            if key not in KINDS:
                parts = key.split("-")
                if len(parts) != 2:
                    raise ValueError(f"network.{key}: a kind of link ({', '.join(KINDS)}) or a pair of hosts such as gm0-lm1")
                for p in parts:
                    try:
                        role_of(p)
                    except ValueError as e:
                        raise ValueError(f"network.{key}: {e}") from None
                key = "-".join(sorted(parts))
            self.entries[key] = parse_props(props, f"network.{key}")

    def link(self, a: str, b: str) -> LinkProps:
        """The properties of the link between hosts ``a`` and ``b`` (the same both ways)."""
        ra, rb = role_of(a), role_of(b)
        chain = ["-".join(sorted((a, b)))]
        kind = "-".join(sorted((ra, rb), key=("gm", "lm", "host", "broker").index))
        chain.append(kind)
        if "broker" in (ra, rb):
            chain.append("broker")
        chain.append("default")
        props: dict[str, Any] = {}
        for key in reversed(chain):
            props.update(self.entries.get(key, {}))
        return LinkProps(**props)
