"""Faults on the testbed's network while it runs: cuts (both ways or one way), loss, extra delay.

What ``schedlab chaos`` injects beside its kills. Each fault names groups of
hosts by role (``gm``, ``lm``, ``host``, ``broker``: every broker node) or
single hosts (``gm0``, ``lm1``, ``h7``, ``broker1``):

* ``partition A-B`` — every packet between a host of A and a host of B
  dropped, both ways (the ``faults`` chain of each side's namespace);
* ``oneway A>B`` — packets from A to B dropped, B to A intact (TCP
  connections from A to B cannot open; B's replies to A's earlier
  connections arrive but A's acknowledgements do not);
* ``loss P`` — a fraction P of the packets between any two hosts dropped
  (``numgen random``), on top of the links' own loss;
* ``delay D`` — D seconds added one way to every link's delay
  (``network.json``, read by the relay, :mod:`.relay`).

:meth:`NetworkFaults.heal` empties every ``faults`` chain and removes the
extra delay. Rules act on new and established connections alike: a cut is a
black hole, not a refusal, as across a real partition.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from schedlab.errors import InputError
from schedlab.services.testbed.netns import Host, Testbed
from schedlab.services.testbed.network import parse_loss, parse_time, role_of
from schedlab.services.testbed.relay import OVERRIDES_FILE

GROUPS = ("gm", "lm", "host", "broker")
PARTITIONS = ("gm-lm", "lm-host", "host-broker", "gm-broker", "lm-broker")


class NetworkFaults:
    def __init__(self, testbed: Testbed) -> None:
        self.tb = testbed

    def group(self, name: str, what: str) -> list[Host]:
        """The hosts a name stands for: a role (gm, lm, host, broker) or one host (gm0, h3)."""
        if name in GROUPS:
            return [h for h in self.tb.hosts if role_of(h.name) == name]
        if name in self.tb.by_name:
            return [self.tb.by_name[name]]
        raise InputError(what, f"unknown group or host {name!r} (gm, lm, host, broker, or a host such as gm0, lm1, h3, broker1)")

    def _drop(self, rules: dict[str, list[str]]) -> None:
        for h in self.tb.hosts:
            if rules.get(h.name):
                self._nft(h, f"add rule ip schedlab faults ip daddr {{ {', '.join(rules[h.name])} }} drop\n")

    def _nft(self, h: Host, text: str) -> None:
        r = subprocess.run([*self.tb.prefix(h), "nft", "-f", "-"], input=text, capture_output=True, text=True)
        if r.returncode != 0:
            raise InputError("testbed faults", f"nft in {h.netns}: {(r.stderr.strip().splitlines() or ['failed'])[0]}")

    def oneway(self, spec: str) -> list[str]:
        """``A>B``: what A sends to B is dropped. Returns the hosts cut off (senders)."""
        a, sep, b = spec.partition(">")
        if not sep:
            raise InputError("--partition-oneway", f"expected A>B such as lm>host or gm0>lm1, got {spec!r}")
        src, dst = self.group(a.strip(), "--partition-oneway"), self.group(b.strip(), "--partition-oneway")
        rules: dict[str, list[str]] = {}
        for h in src:
            rules[h.name] = [o.address for o in dst if o is not h]
        self._drop(rules)
        return [h.name for h in src]

    def partition(self, kind: str) -> list[str]:
        """``A-B``: nothing passes between A and B, either way."""
        a, sep, b = kind.partition("-")
        if not sep:
            raise InputError("--partition", f"expected A-B such as {', '.join(PARTITIONS)}, got {kind!r}")
        ga, gb = self.group(a, "--partition"), self.group(b, "--partition")
        rules: dict[str, list[str]] = {}
        for src, dst in ((ga, gb), (gb, ga)):
            for h in src:
                rules.setdefault(h.name, []).extend(o.address for o in dst if o is not h)
        self._drop(rules)
        return sorted(rules)

    def loss(self, p: float | str) -> None:
        frac = parse_loss(p, "--loss") if isinstance(p, str) else float(p)
        n = round(frac * 1_000_000)
        for h in self.tb.hosts:
            self._nft(h, f"add rule ip schedlab faults ip daddr {self.tb.subnet} numgen random mod 1000000 < {n} drop\n")

    def delay(self, d: float | str) -> None:
        seconds = parse_time(d, "--delay") if isinstance(d, str) else float(d)
        extra = {f"{a.name}>{b.name}": seconds for a in self.tb.hosts for b in self.tb.hosts if a is not b}
        path = Path(self.tb.run_dir) / OVERRIDES_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"delay": extra}))
        tmp.replace(path)

    def heal(self) -> None:
        for h in self.tb.hosts:
            self._nft(h, "flush chain ip schedlab faults\n")
        (Path(self.tb.run_dir) / OVERRIDES_FILE).unlink(missing_ok=True)
