"""The cluster file: one YAML document describing a real Megha cluster.

It names every component and where it listens, the broker, the secret, the
Megha parameters, and the workers — grouped by the machine (worker host) that
runs them, each host belonging to one LM. From it every process derives the
same data center (:class:`~schedlab.cluster.model.Cluster`: worker ids,
machine constraints, capacities) and the same Megha layout (partitions), as a
simulation derives them from a config file; so a GM on one host and an LM on
another agree on what ``(partition, position)`` means without talking.

Choices where the paper is silent:

* **Worker ids** follow the file order (LM by LM, host by host, group by
  group). Each LM's workers are split into one partition per GM, in that order,
  into near-equal consecutive blocks (partition ``j`` of every LM is GM ``j``'s
  internal partition, Megha paper IV-A) unless the LM lists ``partitions``
  (the sizes).
* **Slot or multi-resource mode** follows ``resources``: ``[slots]`` (one task
  per worker, the default) or resource names with a ``capacity`` per worker
  group.
* **Constraints** of a worker group are constraint indices (0–20, Sharma et
  al.'s catalogue; see :mod:`schedlab.cluster.bitsets`).
* The **secret** authenticates peers (the faults-and-security work); the
  file holds it, or ``SCHEDLAB_CLUSTER_SECRET`` overrides it. The broker URL
  may likewise come from ``SCHEDLAB_AMQP_URL`` (several, comma-separated).
* **Brokers**: ``broker: URL`` (one RabbitMQ node) or ``brokers: [URL, …]``
  (the members of one RabbitMQ cluster: every component connects to one that
  answers and moves to another when it goes, :class:`~.net.AmqpLink`).
  ``queue_type`` says what the durable queues are: ``auto`` (the default)
  makes them quorum queues with three brokers or more — replicated, so the
  loss of one member loses nothing — and classic ones otherwise; ``quorum``
  and ``classic`` force one (a benchmark compares both on one cluster).
  Every process of a cluster must agree: RabbitMQ refuses to declare an
  existing queue with another type. On a testbed (``cluster init --netns
  --broker-nodes 3``) the ``testbed`` section's ``brokers`` gives each node's
  host, and ``brokers:`` their URLs.

Errors name the file, line and field (``cluster.yaml:12: lms[0].port: …``)
and exit with code 2, like the simulator's config loader.
"""

from __future__ import annotations

import itertools
import os
import secrets
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from schedlab.atomic import atomic_write
from schedlab.cluster.bitsets import NUM_CONSTRAINTS
from schedlab.cluster.model import Cluster, Topology
from schedlab.errors import InputError
from schedlab.experiments.spec import parse_yaml_mapping, spec_error
from schedlab.services.assembly import parse_params
from schedlab.services.testbed import addresses as tba

DEFAULT_AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"


def amqp_url_default() -> str:
    return os.environ.get("SCHEDLAB_AMQP_URL", DEFAULT_AMQP_URL)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Listen(_Model):
    """Where a process listens: host, port, and the testbed host (network namespace) it runs in."""

    host: str = "127.0.0.1"
    port: int = Field(ge=1, le=65535)
    # the network namespace this component runs in (a host of the testbed, :mod:`~.testbed`); None: this machine's
    netns: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


class Endpoint(Listen):
    id: int = Field(ge=0)


class WorkerGroup(_Model):
    count: int = Field(1, ge=1, le=1_000_000)
    capacity: list[float] | None = None
    constraints: list[int] = Field(default_factory=list)

    @field_validator("constraints")
    @classmethod
    def _constraints(cls, v: list[int]) -> list[int]:
        bad = [c for c in v if not 0 <= c < NUM_CONSTRAINTS]
        if bad:
            raise ValueError(f"constraint indices are 0..{NUM_CONSTRAINTS - 1}, got {bad[0]}")
        return v

    @field_validator("capacity")
    @classmethod
    def _capacity(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and any(not x > 0 for x in v):
            raise ValueError("capacities must be > 0")
        return v

    @property
    def mask(self) -> int:
        m = 0
        for c in self.constraints:
            m |= 1 << c
        return m


class WorkerHostSpec(Endpoint):
    workers: list[WorkerGroup] = Field(min_length=1)

    @property
    def size(self) -> int:
        return sum(g.count for g in self.workers)


class LMSpec(Endpoint):
    hosts: list[WorkerHostSpec] = Field(min_length=1)
    partitions: list[int] | None = None
    # where GMs reach this LM, if not at host:port (a proxy or another network; worker hosts use host:port)
    gm_url: str | None = Field(None, pattern=r"^https?://[^/\s]+$")
    # a standby on a host of its own: cluster up starts it there; it takes over when the active LM dies, and GMs and
    # worker hosts fail over between the two addresses (fenced by tokens, not by the port: :mod:`~.lm_node`)
    standby: Listen | None = None

    @property
    def urls(self) -> list[str]:
        """Where this LM may serve: its address, then its standby's (either may hold the active process)."""
        return [self.url] + ([self.standby.url] if self.standby is not None else [])


class TestbedBroker(_Model):
    host: str
    port: int = Field(5672, ge=1, le=65535)
    netns: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class TestbedSpec(_Model):
    """An emulated multi-host testbed on this machine (:mod:`~.testbed`): its subnet, bridge and broker hosts.

    ``broker`` is one RabbitMQ node's host; ``brokers`` (a list, as the cluster's own ``brokers:``) the hosts of a
    RabbitMQ cluster, one node each."""

    subnet: str
    broker: TestbedBroker | None = None
    brokers: list[TestbedBroker] | None = Field(None, min_length=1, max_length=tba.MAX_BROKER_NODES)

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, v: str) -> str:
        from schedlab.services.testbed.addresses import check_subnet

        check_subnet(v)
        return v

    @model_validator(mode="after")
    def _one_form(self) -> TestbedSpec:
        if (self.broker is None) == (self.brokers is None):
            raise ValueError("testbed: give broker (one node's host) or brokers (a list of hosts), one of the two")
        return self

    @property
    def broker_hosts(self) -> list[TestbedBroker]:
        """Every broker node's host, in order (one for ``broker``)."""
        return self.brokers if self.brokers is not None else [self.broker] if self.broker is not None else []


class ClusterSpec(_Model):
    name: str = Field("schedlab", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    broker: str | None = None
    brokers: list[str] | None = Field(None, min_length=1)
    queue_type: str = Field("auto", pattern=r"^(auto|quorum|classic)$")
    secret: str | None = Field(None, min_length=16)
    seed: int = Field(0, ge=0)
    worker_lease: float = Field(2.0, gt=0, le=3600)  # seconds without news from a worker host before its LM declares it down
    lm_standby: bool = False  # cluster up starts a standby process beside each LM (same host: it takes over its port)
    megha: dict[str, Any] = Field(default_factory=dict)
    resources: list[str] = Field(default_factory=lambda: ["slots"], min_length=1)
    gms: list[Endpoint] = Field(min_length=1)
    lms: list[LMSpec] = Field(min_length=1)
    testbed: TestbedSpec | None = None
    network: dict[str, Any] | None = None  # link properties between the testbed's hosts (:mod:`~.testbed.network`)

    @model_validator(mode="after")
    def _check(self) -> ClusterSpec:
        if self.broker is not None and self.brokers is not None:
            raise ValueError("give broker (one URL) or brokers (a list), not both")
        for url in self.brokers or [self.broker or DEFAULT_AMQP_URL]:
            if not url.startswith(("amqp://", "amqps://")):
                raise ValueError(f"a broker URL starts with amqp:// or amqps://, got {url!r}")
        if self.testbed is not None:
            from schedlab.services.testbed.addresses import check_layout

            check_layout(self)
        elif any(ep.netns for _w, ep in self.endpoints()):
            raise ValueError("netns: is for a testbed's hosts: add a testbed section (schedlab cluster init --netns writes one)")
        if self.network is not None:
            if self.testbed is None:
                raise ValueError("network: link properties need a testbed (schedlab cluster init --netns)")
            from schedlab.services.testbed.network import Network

            Network(self.network)
        for kind, items in (("gms", self.gms), ("lms", self.lms)):
            ids = [x.id for x in items]
            if ids != list(range(len(items))):
                raise ValueError(f"{kind} must be numbered 0..{len(items) - 1} in order, got {ids}")
        host_ids = [h.id for lm in self.lms for h in lm.hosts]
        if len(set(host_ids)) != len(host_ids):
            raise ValueError("worker host ids must be unique")
        seen: dict[tuple[str, int], str] = {}
        for what, ep in self.endpoints():
            key = (ep.host, ep.port)
            if key in seen:
                raise ValueError(f"{what} and {seen[key]} both listen on {ep.host}:{ep.port}")
            seen[key] = what
        slot = self.resources == ["slots"]
        G = len(self.gms)
        for i, lm in enumerate(self.lms):
            for h in lm.hosts:
                for g in h.workers:
                    if slot and g.capacity is not None:
                        raise ValueError(f"lms[{i}]: slot mode (resources [slots]) takes no worker capacity")
                    if not slot and (g.capacity is None or len(g.capacity) != len(self.resources)):
                        raise ValueError(f"lms[{i}]: every worker group needs a capacity for each of {self.resources}")
            n = sum(h.size for h in lm.hosts)
            if lm.partitions is not None:
                if len(lm.partitions) != G or sum(lm.partitions) != n or min(lm.partitions) < 1:
                    raise ValueError(f"lms[{i}].partitions: {G} positive sizes summing to the LM's {n} workers")
            elif n < G:
                raise ValueError(f"lms[{i}] has {n} workers: each of the {G} GMs needs a partition of at least one")
        if self.megha.get("gms") not in (None, G) or self.megha.get("lms") not in (None, len(self.lms)):
            raise ValueError("megha.gms / megha.lms must match the gms and lms listed")
        return self

    def has_standby(self, lm: int) -> bool:
        """Whether ``cluster up`` starts a standby for LM ``lm`` (on its host, or at its own ``standby:`` address)."""
        return self.lm_standby or self.lms[lm].standby is not None

    def endpoints(self) -> list[tuple[str, Listen]]:
        out: list[tuple[str, Listen]] = [(f"gm {g.id}", g) for g in self.gms]
        out += [(f"lm {lm.id}", lm) for lm in self.lms]
        out += [(f"lm {lm.id} standby", lm.standby) for lm in self.lms if lm.standby is not None]
        out += [(f"worker host {h.id}", h) for lm in self.lms for h in lm.hosts]
        return out

    def hosts(self) -> list[tuple[int, WorkerHostSpec]]:
        """Every worker host with its LM."""
        return [(lm.id, h) for lm in self.lms for h in lm.hosts]


class LoadedCluster:
    """A validated cluster file and what every process derives from it."""

    def __init__(self, spec: ClusterSpec, source: str) -> None:
        self.spec = spec
        self.source = source
        masks: list[int] = []
        caps: list[list[float]] = []
        self.host_of_worker: list[int] = []
        self.workers_of_host: dict[int, range] = {}
        parts: list[tuple[tuple[int, ...], ...]] = []
        G = len(spec.gms)
        for lm in spec.lms:
            first = len(masks)
            for h in lm.hosts:
                start = len(masks)
                for grp in h.workers:
                    masks.extend([grp.mask] * grp.count)
                    if grp.capacity is not None:
                        caps.extend([list(grp.capacity)] * grp.count)
                self.workers_of_host[h.id] = range(start, len(masks))
                self.host_of_worker.extend([h.id] * (len(masks) - start))
            n = len(masks) - first
            sizes = lm.partitions or [n // G + (1 if j < n % G else 0) for j in range(G)]
            blocks, at = [], first
            for size in sizes:
                blocks.append(tuple(range(at, at + size)))
                at += size
            parts.append(tuple(blocks))
        topo = Topology(tuple(parts))
        if spec.resources == ["slots"]:
            cl = Cluster(masks, None, ("slots",), topo, f"cluster:{spec.name}", {"layout": "megha"})
        else:
            cl = Cluster(masks, np.array(caps, dtype=float), tuple(spec.resources), topo, f"cluster:{spec.name}", {"layout": "megha"})
        self.cluster = cl
        self.hosts = {h.id: (lm_id, h) for lm_id, h in spec.hosts()}

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def brokers(self) -> list[str]:
        """The broker URLs, in the order components try them (``SCHEDLAB_AMQP_URL``, comma-separated, overrides)."""
        env = [u.strip() for u in os.environ.get("SCHEDLAB_AMQP_URL", "").split(",") if u.strip()]
        return env or self.spec.brokers or [self.spec.broker or DEFAULT_AMQP_URL]

    @property
    def broker(self) -> str:
        """The first broker (what one-broker tools act on: shown by ``cluster up``, restarted by ``chaos``)."""
        return self.brokers[0]

    @property
    def quorum(self) -> bool:
        """Whether durable queues are quorum queues (see the module)."""
        qt = self.spec.queue_type
        return qt == "quorum" or (qt == "auto" and len(self.brokers) >= 3)

    @property
    def secret(self) -> str | None:
        return os.environ.get("SCHEDLAB_CLUSTER_SECRET") or self.spec.secret

    def megha_params(self) -> dict[str, Any]:
        return {**self.spec.megha, "gms": len(self.spec.gms), "lms": len(self.spec.lms)}


def require_secret(loaded: LoadedCluster) -> str:
    """The cluster's secret: every component authenticates every peer with it (:mod:`~.auth`)."""
    secret = loaded.secret
    if not secret:
        raise InputError(f"{loaded.source}: secret", "missing: the services authenticate every message with it "
                                                     "(schedlab cluster init writes one; or set SCHEDLAB_CLUSTER_SECRET)")
    if len(secret) < 16:
        raise InputError("SCHEDLAB_CLUSTER_SECRET", "must be at least 16 characters")
    return secret


def parse_cluster(text: str, source: str = "<cluster>") -> LoadedCluster:
    node, data = parse_yaml_mapping(text, source, "a cluster file is a YAML mapping (name, broker, gms, lms, …)")
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        msg = "unknown field" if err["type"] == "extra_forbidden" else str(err["msg"]).removeprefix("Value error, ")
        raise spec_error(source, node, tuple(err["loc"]), msg) from None
    loaded = LoadedCluster(spec, source)
    try:
        parse_params(loaded.megha_params())
    except InputError as e:
        field = (e.where or "").removeprefix("param ").removeprefix("params")
        raise InputError(f"{source}: megha{'.' + field if field else ''}", e.problem.removeprefix("Value error, ")) from None
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err.get("loc", ()))
        raise InputError(f"{source}: megha{'.' + field if field else ''}", str(err["msg"]).removeprefix("Value error, ")) from None
    except ValueError as e:
        raise InputError(f"{source}: megha", str(e).splitlines()[-1].strip()) from None
    return loaded


def run_dir(cluster_file: str | os.PathLike) -> Path:
    """The folder beside a cluster file where ``cluster up`` keeps its processes' pid files, logs and state."""
    p = Path(cluster_file)
    return p.with_name(p.stem + ".run")


def load_cluster(path: str | os.PathLike) -> LoadedCluster:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "no such cluster file (create one with `schedlab cluster init`)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(str(path), f"cannot read cluster file: {e}") from None
    return parse_cluster(text, str(path))


def render_cluster(
    *,
    name: str = "schedlab",
    gms: int = 2,
    lms: int = 2,
    hosts_per_lm: int = 1,
    workers: int = 32,
    slots: int | None = None,
    resources: list[str] | None = None,
    capacity: list[float] | None = None,
    host: str = "127.0.0.1",
    base_port: int = 7100,
    broker: str | None = None,
    heartbeat: float = 1.0,
    secret: str | None = None,
    from_cluster: Cluster | None = None,
    seed: int = 0,
    lm_standby: bool = False,
    netns: bool = False,
    broker_nodes: int = 1,
) -> str:
    """A commented cluster file: ``workers`` workers spread over ``lms`` LMs and their hosts.

    Slot mode by default; ``resources`` and ``capacity`` give multi-resource
    workers. ``slots`` (slot mode) is accepted as a synonym of ``workers``.
    ``from_cluster`` (a papers' config, :func:`schedlab.cluster.config.load_config`)
    gives the LMs, partitions and every worker's machine constraints instead.
    ``broker_nodes`` (with ``netns``): the testbed's broker is a RabbitMQ cluster of that many nodes, each on a host
    of its own.
    """
    layout: list[list[list[int]]] | None = None
    if from_cluster is not None:
        topo = from_cluster.topology
        if topo is None or from_cluster.extra.get("layout") != "megha":
            raise InputError("--from-config", "needs a Megha config (LMs and partitions), not a Pigeon one")
        layout = [[list(part) for part in lm] for lm in topo.partitions]
        lms, gms, workers = topo.num_clusters, topo.num_partitions, from_cluster.n
    if slots is not None:
        workers = slots
    for what, v, low in (("--gms", gms, 1), ("--lms", lms, 1), ("--hosts-per-lm", hosts_per_lm, 1), ("--workers", workers, 1)):
        if v < low:
            raise InputError(what, f"must be >= {low}, got {v}")
    if workers < gms * lms:
        raise InputError("--workers", f"{workers} workers cannot give each of {lms} LMs a partition for each of {gms} GMs")
    if workers < lms * hosts_per_lm:
        raise InputError("--hosts-per-lm", f"{workers} workers cannot fill {lms * hosts_per_lm} hosts")
    multi = resources is not None and resources != ["slots"]
    if multi and (capacity is None or len(capacity) != len(resources or [])):
        raise InputError("--capacity", "give one capacity per resource")
    last_port = base_port + gms + lms * (2 if lm_standby else 1) + lms * hosts_per_lm
    if not base_port >= 1 or last_port > 65535:
        raise InputError("--base-port", f"ports {base_port}..{last_port} are out of range")
    secret = secret or secrets.token_hex(16)
    addr: Any = None
    subnet: Any = None
    if broker_nodes != 1 and not netns:
        raise InputError("--broker-nodes", "is for a testbed (--netns); on this machine's loopback start them with "
                                           "`schedlab broker up --nodes N` and give their URLs to --broker")
    if not 1 <= broker_nodes <= tba.MAX_BROKER_NODES:
        raise InputError("--broker-nodes", f"must be 1..{tba.MAX_BROKER_NODES}, got {broker_nodes}")
    broker_hosts: list[str] = []
    if netns:  # every component on a host of its own (:mod:`~.testbed`), each broker node too; one port for all
        try:
            subnet = tba.allocate_subnet(name, broker_nodes + gms + lms * (2 if lm_standby else 1) + lms * hosts_per_lm)
        except ValueError as e:
            raise InputError("--netns", str(e)) from None
        seq = itertools.count()
        addr = lambda: str(tba.component_address(subnet, next(seq)))  # noqa: E731 - GMs, LMs, hosts in order
        broker_hosts = [str(tba.broker_address(subnet, k)) for k in range(broker_nodes)]
        broker = ",".join(f"amqp://guest:guest@{a}:5672/" for a in broker_hosts)
    out = [
        "# schedlab cluster file: one Megha cluster (schedlab cluster up FILE starts it on this machine;",
        "# schedlab serve gm|lm|worker --cluster FILE --id N starts one component, for several hosts).",
        f"name: {name}                  # names the cluster's RabbitMQ queues ({name}.gm.0, {name}.lm.0, ...)",
        _broker_line(broker or DEFAULT_AMQP_URL),
        f"secret: {secret}   # shared by every component; SCHEDLAB_CLUSTER_SECRET overrides",
        f"seed: {seed}                        # seeds the GMs' random worker choice",
        "worker_lease: 2.0                # seconds of silence before an LM declares a worker host down and relaunches its tasks",
        (f"lm_standby: {'true' if lm_standby and not netns else 'false'}                # true: cluster up starts a standby beside each LM, which takes over if it dies"
         if not (netns and lm_standby) else "lm_standby: false               # each LM's standby: is a host of its own (below)"),
        "megha:                         # Megha's parameters (schedlab schedulers lists them)",
        f"  heartbeat: {heartbeat}             # seconds between LM state updates to the GMs",
        "  worker_choice: random",
        "  # shares: [0.5, 0.3, 0.2]       # global fair sharing: each user queue's share of the data center",
        "  # queue_gms: [1, 2, 2]          # the GM serving each queue (default: queue u to GM u mod GMs + 1)",
        f"resources: [{', '.join(resources or []) if multi else 'slots'}]" + ("" if multi else "            # one task per worker; or e.g. [cores, memory_mb] with capacities"),
        "gms:                           # Global Masters: HTTP for their own health and status",
    ]
    if addr is not None:
        out[-1:-1] = [
            "testbed:                       # an emulated host per component (network namespaces on this machine): root needed",
            f"  subnet: {subnet}         # in the benchmarking range 198.18.0.0/15; .1 is this machine's bridge",
            *_testbed_broker_lines(name, broker_hosts),
            "network:                       # one-way delay, jitter, loss, bandwidth per link (gm-lm, lm-host, broker, gm0-lm1, ...)",
            "  default: {delay: 0.5ms}",
            "  # gm-lm: {delay: 25ms, jitter: 2ms}",
            "  # lm-host: {delay: 1ms, loss: 0.1%, bandwidth: 1gbit}",
        ]
    port = base_port
    for g in range(gms):
        if addr is not None:
            out.append(f"  - {{id: {g}, host: {addr()}, port: {base_port}, netns: {tba.netns_name(name, f'gm{g}')}}}")
            continue
        out.append(f"  - {{id: {g}, host: {host}, port: {port}}}")
        port += 1
    out.append("lms:                           # Local Masters: HTTP for launch requests; each with its worker hosts")
    host_id = 0
    cap = f", capacity: [{', '.join(f'{c:g}' for c in capacity or [])}]" if multi else ""
    for i in range(lms):
        lm_workers = workers // lms + (1 if i < workers % lms else 0) if layout is None else sum(len(p) for p in layout[i])
        out.append(f"  - id: {i}")
        if addr is not None:
            out += [f"    host: {addr()}", f"    port: {base_port}", f"    netns: {tba.netns_name(name, f'lm{i}')}"]
            if lm_standby:  # on a testbed the standby is a host of its own: fenced by tokens, not by the LM's port
                out.append(f"    standby: {{host: {addr()}, port: {base_port}, netns: {tba.netns_name(name, f'lm{i}s')}}}"
                           "   # a host of its own: takes over if the LM dies")
        else:
            out.append(f"    host: {host}")
            out.append(f"    port: {port}")
            port += 1
        if layout is not None:
            out.append(f"    partitions: [{', '.join(str(len(p)) for p in layout[i])}]   # workers of each GM's partition, in order")
        out.append("    hosts:                     # machines running this LM's workers (HTTP: task launches)")
        ids = [w for part in layout[i] for w in part] if layout is not None else None
        at = 0
        for k in range(hosts_per_lm):
            n = lm_workers // hosts_per_lm + (1 if k < lm_workers % hosts_per_lm else 0)
            out.append(f"      - id: {host_id}")
            if addr is not None:
                out += [f"        host: {addr()}", f"        port: {base_port}", f"        netns: {tba.netns_name(name, f'h{host_id}')}"]
            else:
                out.append(f"        host: {host}")
                out.append(f"        port: {port}")
            if ids is None:
                out.append(f"        workers: [{{count: {n}{cap}, constraints: []}}]   # constraints: indices 0..20")
            else:
                out.append("        workers:                # runs of workers with the same machine constraints")
                assert from_cluster is not None
                masks = [from_cluster.machine_masks[w] for w in ids[at : at + n]]
                for mask, run in itertools.groupby(masks):
                    cons = [c for c in range(NUM_CONSTRAINTS) if mask >> c & 1]
                    out.append(f"          - {{count: {len(list(run))}{cap}, constraints: {cons}}}")
                at += n
            port += 1
            host_id += 1
    return "\n".join(out) + "\n"


def _testbed_broker_lines(name: str, hosts: list[str]) -> list[str]:
    """The testbed section's broker host (``broker:``), or one host per node of a RabbitMQ cluster (``brokers:``)."""
    if len(hosts) == 1:
        return [f"  broker: {{host: {hosts[0]}, port: 5672, netns: {tba.netns_name(name, 'broker')}}}"]
    return ["  brokers:                     # a RabbitMQ cluster: one node per host (quorum queues with 3 or more)",
            *(f"    - {{host: {h}, port: 5672, netns: {tba.netns_name(name, tba.broker_host_name(k, len(hosts)))}}}"
              for k, h in enumerate(hosts))]


def _broker_line(broker: str) -> str:
    """``broker: URL``, or for several comma-separated URLs (a RabbitMQ cluster) ``brokers: [URL, …]``."""
    urls = [u.strip() for u in broker.split(",") if u.strip()]
    if len(urls) > 1:
        return f"brokers: [{', '.join(urls)}]   # a RabbitMQ cluster: quorum queues with 3 or more (queue_type: auto|quorum|classic)"
    return f"broker: {urls[0]}   # RabbitMQ: state updates, completions, job submission (or brokers: [URL, ...], a RabbitMQ cluster)"


def write_cluster_file(path: str | os.PathLike, text: str, force: bool = False) -> None:
    """Write a cluster file atomically; refuse to replace one unless ``force``."""
    p = Path(path)
    if p.is_dir():
        raise InputError(str(path), "is a directory")
    if p.exists() and not force:
        raise InputError(str(path), "exists (use --force to replace it)")
    parse_cluster(text, str(path))  # what we write must load
    atomic_write(p, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
