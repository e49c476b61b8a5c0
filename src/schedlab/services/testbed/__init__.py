"""An emulated multi-host testbed on one machine: each component of a cluster file on a host of its own.

Each host is a Linux network namespace with one address on a bridge of the
machine (a veth pair each), taken from the benchmarking range
198.18.0.0/15 only; no namespace has a default route, so nothing leaves the
machine. The broker runs on a host of its own (a RabbitMQ node started in its
namespace, :mod:`~schedlab.services.rabbitnode`), or on several: a RabbitMQ
cluster of one node per host (``cluster init --netns --broker-nodes 3``,
:mod:`.lifecycle`). Between the hosts:

* **delay and jitter** through a userspace relay (:mod:`.relay`): this
  kernel has no ``netem``; every TCP connection from one host to another is
  redirected (nftables, inside the sender's namespace) to the relay, which
  holds each chunk for the link's one-way delay, order kept;
* **loss and partitions** as nftables rules in the sending host's namespace
  (``numgen random`` for a fraction of packets, a plain drop for a cut),
  :mod:`.netns` and :mod:`.faults`;
* **bandwidth** as an HTB class per destination on the sender's veth.

Modules: :mod:`.addresses` (the subnet, host names and the layout rules),
:mod:`.network` (the cluster file's link properties), :mod:`.netns`
(namespaces, bridge, veths, rules: made and removed), :mod:`.relay`,
:mod:`.faults` (what ``schedlab chaos`` changes at run time).
"""
