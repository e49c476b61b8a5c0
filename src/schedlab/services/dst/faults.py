"""Fault schedules: what goes wrong, where and when, drawn from a seed or written out to be replayed.

A schedule is a list of :class:`Fault`\\ s, each ``kind:target@start+duration``
in its text form (``crash:lm1@2.10+0.80``, ``cut:gm0-lm1@3.00+2.50``), so a
failing schedule prints as one line that replays it bit for bit.

Kinds and their targets (``gm0``, ``lm1``, ``host3``, ``broker``):

=============  =============================  ================================================
kind           target                         what happens for ``duration`` seconds
=============  =============================  ================================================
``crash``      ``gm<g>``, ``lm<i>``,           the process is SIGKILLed; restarted after the
               ``host<h>``                     duration with only what it made durable (an LM
                                               with a standby: the standby takes over at once,
                                               and a new standby starts after the duration)
``broker``     ``broker``                      the broker is down; back after the duration
``cut``        ``A-B`` (two hosts)             packets between A and B dropped both ways
                                               (HTTP lost; broker connections stall)
``oneway``     ``A>B``                         packets from A to B dropped, B to A intact
``loss``       ``A-B:P``                       each HTTP message on the link lost with
                                               probability P
``delay``      ``A-B:D``                       D more seconds each way, with jitter of D
``pause``      ``gm<g>``, ``lm<i>``,           the process freezes (a long GC, CPU starvation,
               ``host<h>``                     SIGSTOP): nothing of it runs, what reaches it
                                               waits; it goes on after the duration, late
=============  =============================  ================================================

Choices: 1 to :data:`MAX_FAULTS` faults a schedule, starting within
:data:`FAULT_WINDOW` seconds of the workload's start and over by then plus
their durations (at most :data:`MAX_DURATION`); faults may overlap. Links are
drawn among those the protocol uses: GM–LM, LM–worker host, any–broker.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from schedlab.errors import InputError

KINDS = ("crash", "broker", "cut", "oneway", "loss", "delay")  # drawn by default (CI's schedules)
ALL_KINDS = (*KINDS, "pause")  # pause is drawn when asked for (--faults): added to the default, it would change every seed
MAX_FAULTS = 6
FAULT_WINDOW = 10.0  # seconds after the start within which faults begin
MAX_DURATION = 6.0


@dataclass(frozen=True)
class Fault:
    kind: str
    target: str
    start: float
    duration: float
    value: float = 0.0  # loss probability, or extra delay

    def text(self) -> str:
        val = f":{self.value:g}" if self.kind in ("loss", "delay") else ""
        return f"{self.kind}:{self.target}{val}@{self.start:.3f}+{self.duration:.3f}"

    @property
    def end(self) -> float:
        return self.start + self.duration

    def hosts(self) -> tuple[str, str]:
        """The two hosts of a link fault (network host names: ``gm:0``, ``lm:1``, ``host:3``, ``broker``)."""
        a, b = re.split(r"[->]", self.target, maxsplit=1)
        return host_name(a), host_name(b)


def host_name(short: str) -> str:
    """``gm0`` -> ``gm:0``, ``host3`` -> ``host:3``, ``broker`` -> ``broker``."""
    m = re.fullmatch(r"(gm|lm|host)(\d+)", short)
    if m is None:
        if short == "broker":
            return short
        raise InputError("--schedule", f"unknown host {short!r} (gm<N>, lm<N>, host<N> or broker)")
    return f"{m[1]}:{m[2]}"


_FAULT = re.compile(r"(?P<kind>[a-z]+):(?P<target>[a-z0-9>\-]+)(?::(?P<value>[0-9.eE+-]+))?@(?P<start>[0-9.]+)\+(?P<dur>[0-9.]+)")


def parse_schedule(text: str) -> list[Fault]:
    """Faults from their text form, comma-separated (an empty text: no fault)."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        m = _FAULT.fullmatch(part)
        if m is None or m["kind"] not in ALL_KINDS:
            raise InputError("--schedule", f"{part!r} is not kind:target@start+duration (kinds: {', '.join(ALL_KINDS)})")
        f = Fault(m["kind"], m["target"], float(m["start"]), float(m["dur"]), float(m["value"] or 0.0))
        if f.kind in ("cut", "oneway", "loss", "delay"):
            f.hosts()  # checks the names
        out.append(f)
    return out


def schedule_text(faults: list[Fault]) -> str:
    return ",".join(f.text() for f in faults)


def draw_schedule(rng: random.Random, gms: int, lms: int, hosts_of_lm: dict[int, list[int]], kinds: tuple[str, ...] = KINDS,
                  start: float = 0.5) -> list[Fault]:
    """A random schedule for a cluster of this shape (see the module)."""
    faults = []
    for _ in range(rng.randint(1, MAX_FAULTS)):
        kind = rng.choice(kinds)
        t = round(start + rng.random() * FAULT_WINDOW, 3)
        dur = round(0.05 + rng.random() * MAX_DURATION, 3)
        value = 0.0
        if kind in ("crash", "pause"):
            role = rng.choice(("gm", "lm", "host"))
            n = {"gm": gms, "lm": lms, "host": sum(len(h) for h in hosts_of_lm.values())}[role]
            target = f"{role}{rng.randrange(n)}"
            dur = round(0.05 + rng.random() * (3.0 if kind == "crash" else 5.0), 3)
        elif kind == "broker":
            target = "broker"
            dur = round(0.2 + rng.random() * 3.0, 3)
        else:
            link = rng.choice(("gm-lm", "lm-host", "broker"))
            if link == "gm-lm":
                a, b = f"gm{rng.randrange(gms)}", f"lm{rng.randrange(lms)}"
            elif link == "lm-host":
                i = rng.randrange(lms)
                a, b = f"lm{i}", f"host{rng.choice(hosts_of_lm[i])}"
            else:
                a = rng.choice([f"gm{rng.randrange(gms)}", f"lm{rng.randrange(lms)}",
                                f"host{rng.choice([h for hs in hosts_of_lm.values() for h in hs])}"])
                b = "broker"
            if kind == "oneway":
                if rng.random() < 0.5:
                    a, b = b, a
                target = f"{a}>{b}"
            else:
                target = f"{a}-{b}"
            if kind == "loss":
                value = round(0.1 + rng.random() * 0.8, 2)
            elif kind == "delay":
                value = round(rng.choice((0.05, 0.5, 2.0, 4.0)) * (0.5 + rng.random()), 3)
        faults.append(Fault(kind, target, t, dur, value))
    return sorted(faults, key=lambda f: (f.start, f.kind, f.target))
