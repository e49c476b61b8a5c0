"""The testbed's addresses and names: a subnet of 198.18.0.0/15, one address and one namespace per host.

Choices (the issue asks for the benchmarking range only):

* A cluster's subnet is a ``/24`` of 198.18.0.0/15 drawn from a hash of its
  name (512 of them; a bigger prefix when the hosts do not fit), so two
  clusters with different names rarely collide and ``cluster up`` refuses
  one whose bridge or namespaces exist already.
* ``.1`` is the bridge's address on this machine (the root namespace: the
  client, ``cluster status`` and health checks reach every host through
  it); ``.2`` the broker's host (``.2`` to ``.9`` the hosts of a broker of
  several RabbitMQ nodes); components from ``.10``, GMs, then LMs, then
  worker hosts, in the file's order.
* Namespaces are named ``sl-<cluster>-<host>`` with host names ``gm<i>``,
  ``lm<i>``, ``h<i>`` and ``broker`` (``broker<k>`` for node *k* of a broker
  of several nodes; the names :mod:`.network` uses); an
  LM's standby runs in its LM's namespace (same host: it takes over the
  LM's address and port).
* Interface names (15 characters at most) come from a hash of the cluster
  name: bridge ``slb<8 hex>``, veths ``sl<5 hex>v<index>`` on the bridge's
  side and ``eth0`` inside each namespace.
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import Any

BENCH = ipaddress.IPv4Network("198.18.0.0/15")
FIRST_COMPONENT = 10  # host part of the first component's address
FIRST_BROKER = 2  # host part of the (first) broker node's address
MAX_BROKER_NODES = FIRST_COMPONENT - FIRST_BROKER  # the broker nodes' addresses lie below the components'


def check_subnet(text: str) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.IPv4Network(text, strict=True)
    except ValueError as e:
        raise ValueError(f"testbed.subnet: {e}") from None
    if not net.subnet_of(BENCH):
        raise ValueError(f"testbed.subnet: {text} is outside the benchmarking range {BENCH} (the testbed uses no other addresses)")
    if net.prefixlen > 28:
        raise ValueError(f"testbed.subnet: /{net.prefixlen} is too small (at most /28)")
    return net


def digest(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()


def allocate_subnet(name: str, hosts: int) -> ipaddress.IPv4Network:
    """The subnet a cluster named ``name`` with ``hosts`` hosts (the broker's included) gets."""
    need = hosts + FIRST_COMPONENT + 1
    prefix = 24
    while (1 << (32 - prefix)) < need:
        prefix -= 1
    if prefix < BENCH.prefixlen:
        raise ValueError(f"{hosts} hosts do not fit in {BENCH}")
    subnets = list(BENCH.subnets(new_prefix=prefix))
    return subnets[int(digest(name), 16) % len(subnets)]


def bridge_address(net: ipaddress.IPv4Network) -> ipaddress.IPv4Address:
    return net.network_address + 1


def broker_address(net: ipaddress.IPv4Network, node: int = 0) -> ipaddress.IPv4Address:
    """The host address of broker node ``node`` (0-based)."""
    return net.network_address + FIRST_BROKER + node


def broker_host_name(node: int, nodes: int) -> str:
    """``broker`` for a broker of one node, ``broker<k>`` for node ``k`` of several."""
    return "broker" if nodes == 1 else f"broker{node}"


def component_address(net: ipaddress.IPv4Network, index: int) -> ipaddress.IPv4Address:
    return net.network_address + FIRST_COMPONENT + index


def netns_name(cluster: str, host: str) -> str:
    return f"sl-{cluster}-{host}"


def bridge_name(cluster: str) -> str:
    return f"slb{digest(cluster)[:8]}"


def veth_name(cluster: str, index: int) -> str:
    return f"sl{digest(cluster)[:5]}v{index}"


def check_layout(spec: Any) -> None:
    """A testbed cluster's rules: every component on a host of its own, in the subnet, each broker node apart."""
    net = check_subnet(spec.testbed.subnet)
    reserved = {net.network_address, net.broadcast_address, bridge_address(net)}
    seen: dict[str, str] = {}
    addresses: dict[str, str] = {}
    brokers = spec.testbed.broker_hosts
    where = ["testbed.broker"] if spec.testbed.brokers is None else [f"testbed.brokers[{k}]" for k in range(len(brokers))]
    named = [(w, b.host, b.netns) for w, b in zip(where, brokers, strict=True)]
    for what, host, netns in named + [(w, ep.host, ep.netns) for w, ep in spec.endpoints()]:
        if netns is None:
            raise ValueError(f"{what}: every component of a testbed cluster needs a netns (its host)")
        try:
            addr = ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"{what}: host {host!r} is not an address (a testbed host has an IPv4 address in {net})") from None
        if addr not in net or addr in reserved:
            raise ValueError(f"{what}: {host} is not a host address of the testbed's subnet {net} (.1 is the bridge's)")
        if netns in seen:
            raise ValueError(f"{what} and {seen[netns]} share the namespace {netns}: one host per component")
        if host in addresses:
            raise ValueError(f"{what} and {addresses[host]} share the address {host}: one address per host")
        seen[netns] = what
        addresses[host] = what
