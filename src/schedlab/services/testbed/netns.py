"""Making and removing a testbed: namespaces, the bridge, veth pairs, addresses and each host's rules.

``cluster up`` of a cluster file with a ``testbed`` section calls
:meth:`Testbed.create` before anything starts, and ``cluster down`` calls
:meth:`Testbed.remove`, which works from the cluster file alone (every name
derives from it) and also sweeps namespaces of the cluster left by an earlier
file, so it is idempotent and clears what a crashed ``up`` made.

What each host's namespace holds (``nft list ruleset`` inside it shows it):

* ``lo`` and ``eth0`` (its veth, on the bridge) with its address; no default
  route: only the subnet is reachable;
* table ``ip schedlab``: chain ``relay`` (nat, output) redirects every new
  TCP connection to another host of the subnet to the relay's port on its own
  loopback (the relay's own connections carry mark ``0x5e1`` and pass);
  chain ``links`` (filter, output) drops the fraction of packets each
  destination's ``loss`` asks for (``numgen random``); chain ``faults``,
  empty until ``schedlab chaos`` cuts links (:mod:`.faults`);
* an HTB qdisc on ``eth0`` with a class per destination whose link has a
  ``bandwidth``, when any has.

Processes of a namespace (``ip netns pids``) are killed before it goes: a
namespace's deletion does not stop them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.services.testbed.addresses import (
    bridge_address,
    bridge_name,
    broker_host_name,
    veth_name,
)
from schedlab.services.testbed.network import LinkProps, Network

RELAY_PORT = 15353  # the relay's port on every host's loopback
RELAY_MARK = 0x5E1  # the relay's own connections: not redirected again
STATE_FILE = "testbed.json"


@dataclass(frozen=True)
class Host:
    name: str  # gm0, lm1, h3, broker or broker0.. (:mod:`.network`'s names)
    netns: str
    address: str
    veth: str  # the veth's end on the bridge (eth0 inside the namespace)


def _run(args: list[str], stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise InputError("testbed", f"{' '.join(args[:4])}: {msg[0] if msg else f'exit {r.returncode}'}")
    return r


def require_privileges() -> None:
    """Root and the tools a testbed needs, or one line saying what is missing."""
    if os.geteuid() != 0:
        raise InputError("testbed", "needs root (network namespaces, a bridge, veths and nftables rules): run as root")
    for tool, package in (("ip", "iproute2"), ("nft", "nftables"), ("tc", "iproute2")):
        if shutil.which(tool) is None:
            raise InputError("testbed", f"`{tool}` is missing: install Debian's {package}")


def list_netns() -> set[str]:
    r = _run(["ip", "netns", "list"], check=False)
    return {line.split()[0] for line in r.stdout.splitlines() if line.strip()}


def link_exists(name: str) -> bool:
    return _run(["ip", "link", "show", "dev", name], check=False).returncode == 0


class Testbed:
    """The hosts of one testbed cluster and how to make and remove them."""

    def __init__(self, loaded: Any, run_dir: Path) -> None:
        spec = loaded.spec
        tb = spec.testbed
        if tb is None:
            raise InputError(loaded.source, "has no testbed section (schedlab cluster init --netns writes one)")
        self.cluster = loaded.name
        self.run_dir = run_dir
        self.subnet = ipaddress.IPv4Network(tb.subnet)
        self.bridge = bridge_name(self.cluster)
        self.bridge_address = str(bridge_address(self.subnet))
        brokers = tb.broker_hosts
        named = [(broker_host_name(k, len(brokers)), b.netns, b.host) for k, b in enumerate(brokers)]
        named += [(f"gm{g.id}", g.netns, g.host) for g in spec.gms]
        named += [(f"lm{lm.id}", lm.netns, lm.host) for lm in spec.lms]
        named += [(f"lm{lm.id}s", lm.standby.netns, lm.standby.host) for lm in spec.lms if lm.standby is not None]
        named += [(f"h{h.id}", h.netns, h.host) for _lm, h in spec.hosts()]
        self.hosts = [Host(n, ns, addr, veth_name(self.cluster, i)) for i, (n, ns, addr) in enumerate(named)]
        self.by_name = {h.name: h for h in self.hosts}
        self.network = Network(spec.network)
        self.network_section = spec.network or {}

    def veth_names(self) -> list[str]:
        return [h.veth for h in self.hosts]

    def host_of(self, role: str, ident: int) -> Host:
        return self.by_name[{"gm": "gm", "lm": "lm", "worker": "h"}[role] + str(ident)]

    def prefix(self, host: Host) -> list[str]:
        """What runs a command inside ``host``'s namespace."""
        return ["ip", "netns", "exec", host.netns]

    def link(self, a: Host, b: Host) -> LinkProps:
        return self.network.link(a.name, b.name)

    # -- making --------------------------------------------------------------------------------
    def exists(self) -> list[str]:
        """What of this testbed is there already (namespaces, bridge)."""
        mine = {h.netns for h in self.hosts}
        out = sorted(list_netns() & mine)
        if link_exists(self.bridge):
            out.append(self.bridge)
        return out

    def create(self) -> None:
        """Namespaces, bridge, veths, addresses and rules; on any failure, everything made is removed."""
        require_privileges()
        there = self.exists()
        if there:
            raise InputError("testbed", f"{there[0]} exists already ({len(there)} of this testbed's namespaces and links): "
                                        "run `schedlab cluster down` first")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.write_state()
        try:
            self._create()
        except BaseException:
            self.remove()
            raise

    def _create(self) -> None:
        plen = self.subnet.prefixlen
        root = [f"link add {self.bridge} type bridge", f"addr add {self.bridge_address}/{plen} dev {self.bridge}",
                f"link set {self.bridge} up"]
        root += [f"netns add {h.netns}" for h in self.hosts]
        for h in self.hosts:
            root += [f"link add {h.veth} type veth peer name eth0 netns {h.netns}", f"link set {h.veth} master {self.bridge} up"]
        _run(["ip", "-batch", "-"], "\n".join(root) + "\n")
        # no forwarding off the bridge, whatever the machine's ip_forward says
        for h in self.hosts:
            _run(["ip", "-n", h.netns, "-batch", "-"],
                 f"link set lo up\naddr add {h.address}/{plen} dev eth0\nlink set eth0 up\n")
            _run([*self.prefix(h), "nft", "-f", "-"], self.nft_rules(h))
            tc = self.tc_rules(h)
            if tc:
                _run([*self.prefix(h), "tc", "-batch", "-"], "\n".join(tc) + "\n")

    def nft_rules(self, h: Host) -> str:
        """The host's table: redirect to the relay, loss per destination, and an empty chain for faults."""
        loss = []
        for other in self.hosts:
            p = self.link(h, other).loss if other is not h else 0.0
            if p > 0:
                loss.append(f"    ip daddr {other.address} numgen random mod 1000000 < {round(p * 1_000_000)} drop")
        return "\n".join([
            "table ip schedlab {",
            "  chain relay {",
            "    type nat hook output priority -100; policy accept;",
            f"    meta mark {RELAY_MARK:#x} return",
            f"    ip daddr != {self.subnet} return",
            f"    ip daddr {{ {h.address}, {self.bridge_address} }} return",
            f"    meta l4proto tcp redirect to :{RELAY_PORT}",
            "  }",
            "  chain faults {",
            "  }",
            "  chain links {",
            "    type filter hook output priority 0; policy accept;",
            "    jump faults",
            *loss,
            "  }",
            "}",
        ]) + "\n"

    def tc_rules(self, h: Host) -> list[str]:
        limited = [(o, self.link(h, o).bandwidth) for o in self.hosts if o is not h and self.link(h, o).bandwidth]
        if not limited:
            return []
        # unclassified traffic (default 0) goes unshaped; one class per limited destination
        out = ["qdisc add dev eth0 root handle 1: htb default 0"]
        for k, (o, rate) in enumerate(limited, start=10):
            out += [f"class add dev eth0 parent 1: classid 1:{k:x} htb rate {rate}",
                    f"filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst {o.address}/32 flowid 1:{k:x}"]
        return out

    def write_state(self) -> None:
        """What the relay and ``schedlab chaos`` read: the hosts and the link properties."""
        state = {"cluster": self.cluster, "subnet": str(self.subnet), "relay_port": RELAY_PORT, "relay_mark": RELAY_MARK,
                 "hosts": [asdict(h) for h in self.hosts], "network": self.network_section}
        tmp = self.run_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=1))
        tmp.replace(self.run_dir / STATE_FILE)

    # -- removing ------------------------------------------------------------------------------
    def remove(self) -> list[str]:
        """Kill every process in the testbed's namespaces; remove namespaces, veths and bridge. Idempotent."""
        prefix = f"sl-{self.cluster}-"
        spaces = sorted({h.netns for h in self.hosts} | {n for n in list_netns() if n.startswith(prefix)})
        present = list_netns()
        spaces = [ns for ns in spaces if ns in present]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self._pids(spaces)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + (3.0 if sig == signal.SIGTERM else 5.0)
            while pids and self._pids(spaces) and time.monotonic() < deadline:
                time.sleep(0.05)
        # the veths first (each takes its peer in the namespace with it), then the bridge, then the namespaces
        cmds = [f"link delete {h.veth}" for h in self.hosts if link_exists(h.veth)]
        bridge = link_exists(self.bridge)
        if bridge:
            cmds.append(f"link delete {self.bridge}")
        cmds += [f"netns delete {ns}" for ns in spaces]
        if cmds:
            _run(["ip", "-force", "-batch", "-"], "\n".join(cmds) + "\n", check=False)
        removed = spaces + ([self.bridge] if bridge else [])
        (self.run_dir / STATE_FILE).unlink(missing_ok=True)
        return removed

    @staticmethod
    def _pids(spaces: list[str]) -> list[int]:
        out: list[int] = []
        for ns in spaces:
            r = _run(["ip", "netns", "pids", ns], check=False)
            out += [int(x) for x in r.stdout.split() if x.isdigit()]
        return out
