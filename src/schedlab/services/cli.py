"""``schedlab cluster init|up|status|down``, ``schedlab serve`` and ``schedlab submit``: Megha for real.

A thin layer over :mod:`schedlab.services`: it parses options, calls the
library and prints. User errors are one line and exit 2 (via
:func:`schedlab.cli.main`), including a broker that cannot be reached. Commands import the services they
run inside their bodies, so the rest of the command line starts without
aiohttp, aio-pika or the simulator.
"""

import json
import sys
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.console import Console
from rich.table import Table

from schedlab.cliutil import output_dir, output_file, seconds
from schedlab.errors import InputError

cluster_app = typer.Typer(
    help="Start, watch and stop a real Megha cluster (GMs, LMs and workers as processes; HTTP + RabbitMQ).",
    no_args_is_help=True,
)
broker_app = typer.Typer(
    help="A local RabbitMQ cluster of its own (Debian's rabbitmq-server): for tests, CI and trying quorum queues.",
    no_args_is_help=True,
)
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)


def _load(path: Path, client: bool = True) -> Any:
    """The cluster file; ``client``: the command is a client of the cluster (its broker libraries kept quiet)."""
    from schedlab.services.clusterfile import load_cluster

    loaded = load_cluster(path)
    if client:
        from schedlab.services.net import quiet_client_logs

        quiet_client_logs()
    return loaded


@cluster_app.command("init")
def init_cmd(
    path: Annotated[Path, typer.Argument(help="Cluster file to write (YAML).", callback=output_file)],
    gms: Annotated[int, typer.Option("--gms", help="Global Masters.")] = 2,
    lms: Annotated[int, typer.Option("--lms", help="Local Masters (one cluster of workers each).")] = 2,
    workers: Annotated[int, typer.Option("--workers", "-w", help="Workers in all (slot mode: one task each).")] = 32,
    slots: Annotated[int | None, typer.Option("--slots", help="Same as --workers, in slot mode.")] = None,
    hosts_per_lm: Annotated[int, typer.Option("--hosts-per-lm", help="Worker-host processes per LM.")] = 1,
    resources: Annotated[str | None, typer.Option("--resources", help="Multi-resource workers, e.g. cores,memory_mb (with --capacity).")] = None,
    capacity: Annotated[str | None, typer.Option("--capacity", help="Each worker's capacity, e.g. 4,4096.")] = None,
    host: Annotated[str, typer.Option("--host", help="Address every component listens on.")] = "127.0.0.1",
    base_port: Annotated[int, typer.Option("--base-port", help="First HTTP port; one port per component after it.")] = 7100,
    broker: Annotated[str | None, typer.Option("--broker", help="RabbitMQ URL, or several comma-separated (the nodes of a RabbitMQ cluster; default $SCHEDLAB_AMQP_URL or the local broker).")] = None,
    heartbeat: Annotated[float, typer.Option("--heartbeat", help="Seconds between LM state updates.")] = 1.0,
    name: Annotated[str, typer.Option("--name", help="Cluster name (prefix of its queues).")] = "schedlab",
    from_config: Annotated[str | None, typer.Option("--from-config", help="A papers' Megha config (*_config_*.json or 'reference'): its LMs, partitions and machine constraints.")] = None,
    lm_standby: Annotated[bool, typer.Option("--lm-standby", help="cluster up starts a standby process beside each LM (takes over if it dies).")] = False,
    netns: Annotated[bool, typer.Option("--netns", help="Each component on an emulated host of its own (a network namespace, 198.18.0.0/15; the broker too): cluster up needs root.")] = False,
    broker_nodes: Annotated[int, typer.Option("--broker-nodes", help="With --netns: the broker is a RabbitMQ cluster of N nodes, each on a host of its own (3: quorum queues).")] = 1,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Write a commented cluster file; with no options, a small cluster for one laptop.

    Example: schedlab cluster init demo.yaml --gms 2 --lms 2 --workers 32
    """
    from schedlab.services.clusterfile import amqp_url_default, render_cluster, write_cluster_file

    res = cap = None
    if resources is not None:
        res = [r.strip() for r in resources.split(",") if r.strip()]
        try:
            cap = [float(x) for x in (capacity or "").split(",") if x.strip()]
        except ValueError:
            raise InputError("--capacity", f"expected numbers, got {capacity!r}") from None
    elif capacity is not None:
        raise InputError("--capacity", "needs --resources")
    if netns and (host != "127.0.0.1" or broker is not None):
        raise InputError("--netns", "gives every component and the broker an address of the testbed: not with --host or --broker")
    source = None
    if from_config is not None:
        from schedlab.cluster.config import load_config

        source = load_config(from_config)
    text = render_cluster(name=name, gms=gms, lms=lms, hosts_per_lm=hosts_per_lm, workers=workers, slots=slots, resources=res, capacity=cap,
                          host=host, base_port=base_port, broker=broker or amqp_url_default(), heartbeat=heartbeat, from_cluster=source,
                          lm_standby=lm_standby, netns=netns, broker_nodes=broker_nodes)
    write_cluster_file(path, text, force=force)
    err.print(f"wrote {path}: start it with `schedlab cluster up {path}`", highlight=False)


@cluster_app.command("up")
def up_cmd(
    path: Annotated[Path, typer.Argument(help="Cluster file.")],
    foreground: Annotated[bool, typer.Option("--foreground", help="Stay attached; Ctrl-C stops the cluster.")] = False,
    embedded: Annotated[bool, typer.Option("--embedded", help="Every component in one process: no sockets between them (clients still use the broker).")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for every component to be healthy.")] = 60.0,
) -> None:
    """Start every component as its own process on this machine and wait until all are healthy.

    Example: schedlab cluster up demo.yaml && schedlab submit --cluster demo.yaml --trace google --max-jobs 50
    """
    import asyncio

    from schedlab.services import supervise

    loaded = _load(path)
    procs = asyncio.run(supervise.up(loaded, path, timeout, embedded=embedded))
    t = Table("component", "listens on", "pid", "log", title=f"cluster {loaded.name} is up ({len(procs)} processes)", title_justify="left")
    for p in procs:
        t.add_row(f"{p.role} {p.id}", p.url, str(p.pid), str(p.log))
    out.print(t)
    out.print(f"broker {', '.join(supervise.safe_url(u) for u in loaded.brokers)}: queues {loaded.name}.gm.N, .lm.N, .submit.N", highlight=False)
    if foreground:
        import signal
        import time

        stop = False

        def _stop(*_a: Any) -> None:
            nonlocal stop
            stop = True

        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        while not stop:
            time.sleep(0.2)
        stopped = asyncio.run(supervise.down(loaded, path))
        err.print(f"stopped {len(stopped)} processes", highlight=False)


@cluster_app.command("metrics")
def metrics_cmd(
    path: Annotated[Path, typer.Argument(help="Cluster file.")],
    token_only: Annotated[bool, typer.Option("--token", help="Print only the bearer token.")] = False,
) -> None:
    """Print a Prometheus scrape configuration for every node's /metrics (with the bearer token derived from the secret).

    Example: schedlab cluster metrics demo.yaml >> prometheus.yml   (keep it private: the token reads metrics)
    """
    from schedlab.services.auth import metrics_token
    from schedlab.services.clusterfile import require_secret

    loaded = _load(path)
    token = metrics_token(require_secret(loaded))
    if token_only:
        print(token)
        return
    spec = loaded.spec
    urls = [g.url for g in spec.gms] + [u for lm in spec.lms for u in lm.urls] + [loaded.hosts[h][1].url for h in sorted(loaded.hosts)]
    targets = [u.split("://", 1)[1] for u in urls]
    print("scrape_configs:")
    print(f"  - job_name: schedlab-{loaded.name}")
    print("    authorization:")
    print("      type: Bearer")
    print(f"      credentials: {token}")
    print("    static_configs:")
    print(f"      - targets: [{', '.join(repr(t) for t in targets)}]")


@cluster_app.command("status")
def status_cmd(
    path: Annotated[Path, typer.Argument(help="Cluster file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print every node's status as JSON.")] = False,
) -> None:
    """Per GM, LM and worker host: up, uptime, queue lengths, running tasks, lent workers, last heartbeat, refused input.

    Example: schedlab cluster status demo.yaml
    """
    import asyncio

    from schedlab.services.remote import fetch_statuses

    loaded = _load(path)
    statuses = asyncio.run(fetch_statuses(loaded))
    if as_json:
        print(json.dumps(statuses, indent=2))
    else:
        # uptime beside the heartbeat age: a process older than the cluster (one left running from an earlier
        # start) shows as such, and a heartbeat age can be read against how long its node has been up
        t = Table("node", "up", "uptime", "waiting", "running", "lent", "heartbeat age", "inconsistencies", "refused", "errors",
                  title=f"cluster {loaded.name}", title_justify="left")
        for st in statuses:
            name = f"{st['role']} {st['id']}"
            if "error" in st:
                t.add_row(name, "[red]down[/red]", "", "", "", "", "", "", "", st["error"][:60])
                continue
            age = st.get("last_heartbeat_age")
            t.add_row(
                name,
                "up" + (f" (pid {st['pid']})" if st["role"] == "lm" and loaded.spec.has_standby(st["id"]) else ""),
                "" if st.get("uptime") is None else _duration(float(st["uptime"])),
                str(st.get("waiting", "")),
                str(st.get("running", "")),
                str(st.get("lent_workers", "")),
                "" if age is None else f"{age:.1f}s",
                str(st.get("inconsistencies", "")),
                str(st.get("refused_total", 0)),
                str(st.get("handler_errors", 0)),
            )
        out.print(t)
        if len(loaded.brokers) > 1 or loaded.spec.testbed is not None:
            from schedlab.services.supervise import broker_nodes_up, safe_url

            for name, url, up in asyncio.run(broker_nodes_up(loaded)):
                out.print(f"broker node {name} ({safe_url(url)}): {'up' if up else '[red]down[/red]'}", highlight=False)
        if any(loaded.spec.has_standby(lm.id) for lm in loaded.spec.lms):
            from schedlab.services.supervise import running_pids

            serving = {st.get("pid") for st in statuses if st["role"] == "lm"}
            waiting = sorted(f"{n} (pid {pid})" for n, pid in running_pids(path).items() if n.startswith("lm-") and pid not in serving)
            out.print(f"LM standbys waiting: {', '.join(waiting) or 'none'}", highlight=False)
    if any("error" in st for st in statuses):
        raise typer.Exit(1)


@broker_app.command("up")
def broker_up_cmd(
    dir: Annotated[Path, typer.Option("--dir", help="Folder for the nodes' data (made; must be empty).")],
    nodes: Annotated[int, typer.Option("--nodes", help="Members of the cluster.")] = 3,
    base_port: Annotated[int, typer.Option("--base-port", help="AMQP port of the first node; one more per node.")] = 5681,
    dist_base: Annotated[int, typer.Option("--dist-base", help="Erlang distribution port of the first node; one more per node.")] = 25681,
    host: Annotated[str, typer.Option("--host", help="Address the nodes' AMQP listeners bind.")] = "127.0.0.1",
) -> None:
    """Start a RabbitMQ cluster of NODES nodes (joined with join_cluster) and print each node's AMQP URL.

    Example: schedlab broker up --nodes 3 --dir /tmp/brokers   (then: brokers: [the URLs] in the cluster file)
    """
    import asyncio

    from schedlab.services.brokercluster import BrokerCluster

    cluster = BrokerCluster.plan(dir.resolve(), nodes, host, base_port, dist_base)
    asyncio.run(cluster.up())
    for url in cluster.urls:
        out.print(url, highlight=False)


@broker_app.command("down")
def broker_down_cmd(dir: Annotated[Path, typer.Option("--dir", help="The folder given to broker up.")]) -> None:
    """Stop the RabbitMQ cluster started with `broker up --dir DIR` and remove DIR (nothing to do: says so)."""
    from schedlab.services.brokercluster import down

    n = down(dir.resolve())
    out.print(f"stopped {n} broker nodes, removed {dir}" if n else f"no broker cluster in {dir}: nothing to stop", highlight=False)


@cluster_app.command("down")
def down_cmd(path: Annotated[Path, typer.Argument(help="Cluster file.")]) -> None:
    """Stop every component started by `cluster up` and delete the cluster's queues.

    Example: schedlab cluster down demo.yaml
    """
    import asyncio

    from schedlab.services import supervise

    loaded = _load(path)
    removed: list[str] = []
    stopped = asyncio.run(supervise.down(loaded, path, removed=removed))
    err.print(f"stopped {len(stopped)} processes" if stopped else "nothing was running", highlight=False)
    if removed:
        err.print(f"removed the testbed: {len(removed) - 1} namespaces and bridge {removed[-1]}", highlight=False)


def serve_cmd(
    role: Annotated[str, typer.Argument(help="gm, lm, worker (a worker host), or all (every component in this process).")],
    cluster: Annotated[Path, typer.Option("--cluster", "-c", help="Cluster file.")],
    ident: Annotated[int, typer.Option("--id", help="Which one (its id in the cluster file; 0 with 'all').")] = 0,
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning or error.")] = "info",
    standby: Annotated[bool, typer.Option("--standby", help="An LM: wait until the active LM of this id is gone, then take over (same host).")] = False,
    standby_host: Annotated[bool, typer.Option("--standby-host", help="An LM with a standby elsewhere: serve at its standby: address "
                                                                      "(lms[N].standby in the cluster file).")] = False,
) -> None:
    """Run one component of a cluster in the foreground (for multi-host deployments).

    Example: schedlab serve lm --cluster demo.yaml --id 0
    """
    import asyncio
    import logging

    from schedlab.services.node import serve
    from schedlab.services.supervise import check_broker, register, unregister

    level = getattr(logging, log_level.upper(), None)
    if not isinstance(level, int):
        raise InputError("--log-level", f"unknown level {log_level!r}")
    logging.basicConfig(level=level, format=f"%(asctime)s {role}-{ident} %(levelname)s %(name)s: %(message)s")
    loaded = _load(cluster, client=False)
    if role not in ("gm", "lm", "worker", "all"):
        raise InputError("role", f"unknown role {role!r} (choose from gm, lm, worker, all)")
    if (standby or standby_host) and role != "lm":
        raise InputError("--standby-host" if standby_host else "--standby", f"only an LM has a standby, not {role}")

    registered: list[Path | None] = []

    def ready(node: Any) -> None:
        logging.getLogger("schedlab").info("%s %d ready on %s", node.role, node.id, node.endpoint.url)
        if not registered:  # once serving (with role all: at the first node), so that cluster down stops it too
            registered.append(register(cluster, role, ident))

    async def main() -> None:
        await check_broker(loaded, timeout=30.0)  # patient: a busy machine starting many processes is slow to connect
        await serve(loaded, role, ident, ready=ready, standby=standby, standby_host=standby_host)

    try:
        asyncio.run(main())
    finally:
        unregister(registered[0] if registered else None)


def submit_cmd(
    cluster: Annotated[Path, typer.Option("--cluster", "-c", help="Cluster file.")],
    trace: Annotated[str | None, typer.Option("--trace", "-t", help="Replay a trace: google, syn_250, … or a file.")] = None,
    command: Annotated[str | None, typer.Option("--command", help="Run one ad-hoc job: this command (split like a shell would, run without one).")] = None,
    shell: Annotated[bool, typer.Option("--shell", help="With --command: run it through /bin/sh.")] = False,
    cpus: Annotated[float, typer.Option("--cpus", help="CPUs each task holds (multi-resource request, and the cpu task's burn).")] = 1.0,
    constraint: Annotated[list[int] | None, typer.Option("--constraint", help="With --command: a machine constraint the task needs (0..20, repeatable).")] = None,
    max_jobs: Annotated[int | None, typer.Option("--max-jobs", help="Replay only the first N jobs.")] = None,
    speedup: Annotated[float, typer.Option("--speedup", help="Replay K times faster (arrivals and durations divided by K).")] = 1.0,
    task: Annotated[str, typer.Option("--task", help="What each trace task runs: sleep (its duration) or cpu (burns it).")] = "sleep",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the request draws (multi-resource).")] = 0,
    constraints: Annotated[str, typer.Option("--constraints", help="Task constraints: paper (drawn as the papers do), none, or auto: paper only if some worker of the cluster declares a machine constraint.")] = "auto",
    no_constraints: Annotated[bool, typer.Option("--no-constraints", help="Same as --constraints none.")] = False,
    embedded: Annotated[bool, typer.Option("--embedded", help="Run the cluster of the file inside this process (no broker, no other process).")] = False,
    timeout: Annotated[str, typer.Option("--timeout", help="Give up waiting for completions after this many seconds; auto: twice the replay's estimated wall time plus a minute; 0: never.")] = "auto",
    summary_json: Annotated[Path | None, typer.Option("--summary-json", help="Write the summary JSON (the same schema as `schedlab simulate`).", callback=output_file)] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Write tasks, jobs, utilization tables and summary.json here.", callback=output_dir)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No table.")] = False,
    retries: Annotated[int, typer.Option("--retries", help="With --command: run it again on its worker if it fails, up to N more times (the outcome says how many attempts).")] = 0,
    detach: Annotated[bool, typer.Option("--detach", help="Submit every job now (trace arrival times are not waited for), print their ids one per line and return; follow them with `schedlab jobs`.")] = False,
) -> None:
    """Replay a trace against a live cluster (or run one ad-hoc command) and print the summary.

    Example: schedlab submit --cluster demo.yaml --trace google --max-jobs 40 --speedup 20000 --summary-json real.json
    """
    import asyncio

    from schedlab.cliutil import summary_table

    if (trace is None) == (command is None):
        raise InputError("submit", "give either --trace or --command")
    # options first: nothing starts or connects before they are known to be good
    if not speedup > 0:
        raise InputError("--speedup", f"must be > 0, got {speedup}")
    if max_jobs is not None and max_jobs < 1:
        raise InputError("--max-jobs", f"must be >= 1, got {max_jobs}")
    if task not in ("sleep", "cpu"):
        raise InputError("--task", f"unknown task kind {task!r} (choose from sleep, cpu)")
    if not cpus > 0:
        raise InputError("--cpus", f"must be > 0, got {cpus}")
    wait = _timeout(timeout)
    if not 0 <= retries <= 100:
        raise InputError("--retries", f"must be 0..100, got {retries}")
    if retries and command is None:
        raise InputError("--retries", "needs --command (a trace's tasks sleep: they do not fail)")
    from schedlab.services.client import draws_constraints

    loaded = _load(cluster)  # a bad file is one line before anything starts
    draw = draws_constraints(loaded.cluster, "none" if no_constraints else constraints)
    if detach:
        if embedded:
            raise InputError("--detach", "needs a running cluster (not --embedded: it ends with this process)")
        ids = asyncio.run(_detached(loaded, trace, command, shell, cpus, constraint or [], max_jobs, draw, seed, retries))
        for jid in ids:
            print(jid)
        return
    if command is not None:
        o = asyncio.run(_adhoc(cluster, command, shell, cpus, constraint or [], embedded, None if wait == "auto" else cast(float | None, wait),
                               retries))
        attempts = f"  attempts {o['attempts']}" if "attempts" in o else ""
        print(f"status {o.get('status')}  exit {o.get('exit_code')}{attempts}  worker {o['worker']}  "
              f"allocation {o['allocation_time'] * 1e3:.1f} ms  ran {o.get('wall_seconds', float('nan')):.2f} s")
        for key in ("stdout_tail", "stderr_tail"):
            if o.get(key):
                print(f"--- {key.split('_')[0]} ---\n{o[key].rstrip()}")
        if o.get("error"):
            print(f"error: {o['error']}", file=sys.stderr)
        if o.get("status") != "ok":
            raise typer.Exit(1)
        return
    assert trace is not None  # exactly one of --trace and --command, and --command has returned
    bar = ReplayBar(speedup, enabled=not quiet)
    try:
        result = asyncio.run(_replay(cluster, trace, max_jobs, speedup, task, cpus, seed, draw, embedded, wait, bar))
    finally:
        bar.close()
    s = result.summary
    if not quiet:
        out.print(summary_table(s))
        c = s["counters"]
        out.print(f"jobs {s['jobs']}  tasks {s['tasks']}  unfinished {c['tasks_unfinished']}  inconsistencies {c.get('inconsistencies', 0)}  "
                  f"repartitions {c.get('repartitions', 0)}  transport {s['runtime']['transport']}  wall {s['wall_seconds']:.2f}s", highlight=False)
    rt = s["runtime"]
    if rt.get("jobs_cancelled"):  # schedlab job cancel, from elsewhere, while this replay waited
        err.print(f"{rt['jobs_cancelled']} job{'s' if rt['jobs_cancelled'] != 1 else ''} cancelled ({rt['tasks_cancelled']} tasks ended "
                  "cancelled: never launched, or killed)", highlight=False)
    if rt["stopped"]:
        err.print(f"stopped after {s['wall_seconds']:.1f} s: {rt['jobs_submitted']} of {rt['jobs_total']} "
                  f"jobs submitted, {s['tasks'] - s['counters']['tasks_unfinished']} of their {s['tasks']} tasks completed, "
                  f"{s['counters']['tasks_unfinished']} unfinished (the summary above is of what was submitted)", highlight=False)
    from schedlab.atomic import all_or_nothing
    from schedlab.metrics.export import write_json

    with all_or_nothing():  # every output, or none
        if out_dir is not None:
            result.save(out_dir)
        if summary_json is not None:
            write_json(summary_json, s)
    _say_dropped(result, draw, constraints != "paper" and not no_constraints)  # after the outputs: a failure to write them stays one line
    if rt["stopped"]:
        raise typer.Exit(130)
    if s["counters"]["tasks_unfinished"]:
        err.print(f"{s['counters']['tasks_unfinished']} task(s) did not finish"
                  + (f" within --timeout {rt['timeout']:.0f} s" if rt.get("timeout") else ""), highlight=False)
        raise typer.Exit(1)


def _say_dropped(result: Any, drew: bool, auto: bool) -> None:
    """One line on stderr when the replay dropped tasks as unsatisfiable (even with --quiet)."""
    from schedlab.dropped import drop_line

    why = "drawn with the papers' statistics"
    if drew and auto:
        why += ", as the cluster's workers declare machine constraints"
    fixes = {"constraints": (f"{why}; --constraints none draws none" if drew else "the trace's own constraints"),
             "request": "the cluster file's capacities are smaller than these requests"}
    line = drop_line(result.extra["dropped"], result.summary["counters"]["trace_tasks"], fixes)
    if line is not None:
        err.print(line, highlight=False)


def chaos_cmd(
    cluster: Annotated[Path, typer.Option("--cluster", "-c", help="Cluster file of a running cluster (schedlab cluster up).")],
    trace: Annotated[str, typer.Option("--trace", "-t", help="Trace to replay meanwhile: google, syn_250, … or a file.")],
    kill: Annotated[str | None, typer.Option("--kill", help="Roles to kill, comma-separated: worker, gm, lm, broker, broker-node (default: worker, or none with network faults).")] = None,
    partition: Annotated[list[str] | None, typer.Option("--partition", help="Testbed: cut both ways between two groups: gm-lm, lm-host, host-broker, gm-broker (repeatable).")] = None,
    partition_oneway: Annotated[list[str] | None, typer.Option("--partition-oneway", help="Testbed: drop what A sends to B, e.g. lm>host or gm0>lm1 (repeatable).")] = None,
    loss: Annotated[str | None, typer.Option("--loss", help="Testbed: drop this fraction of packets between hosts, e.g. 5%.")] = None,
    delay: Annotated[str | None, typer.Option("--delay", help="Testbed: add this one-way delay to every link, e.g. 50ms.")] = None,
    clock_skew: Annotated[list[str] | None, typer.Option("--clock-skew", help="Set a component's wall clock off: gm0:40 (s), or a role: gm:-40 (repeatable).")] = None,
    heal_after: Annotated[str, typer.Option("--heal-after", help="How long each network fault or skew lasts.", callback=seconds)] = "5",
    every: Annotated[str, typer.Option("--every", help="Time between kills: 5, 5s, 500ms, 2m.", callback=seconds)] = "5",
    restart_after: Annotated[str, typer.Option("--restart-after", help="How long a killed component stays down (1, 1s, 500ms).", callback=seconds)] = "1",
    max_jobs: Annotated[int | None, typer.Option("--max-jobs", help="Replay only the first N jobs.")] = None,
    speedup: Annotated[float, typer.Option("--speedup", help="Replay K times faster.")] = 1.0,
    seed: Annotated[int, typer.Option("--seed", help="Which components die, and the request draws.")] = 0,
    constraints: Annotated[bool, typer.Option("--constraints/--no-constraints", help="Synthesise task constraints as the papers do.")] = True,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Give up waiting for completions after this many seconds.")] = None,
    summary_json: Annotated[Path | None, typer.Option("--summary-json", help="Write the run's summary JSON, with the campaign under 'chaos'.", callback=output_file)] = None,
    brokers_dir: Annotated[Path | None, typer.Option("--brokers-dir", help="--kill broker-node: the folder given to schedlab broker up (not needed for a testbed's own broker nodes).")] = None,
    wipe: Annotated[bool, typer.Option("--wipe", help="--kill broker-node: remove the node's data before it restarts (a lost disk).")] = False,
) -> None:
    """Replay a trace on a running cluster while killing and restarting its components; exit 1 if a task was lost or duplicated.

    Example: schedlab chaos --cluster demo.yaml --trace google --max-jobs 200 --speedup 20 --kill worker,gm,lm --every 5s
    """
    import asyncio

    from schedlab.services.chaos import check_roles, parse_fault, run_chaos

    faults = [parse_fault("partition", p) for p in partition or []] + [parse_fault("oneway", p) for p in partition_oneway or []]
    faults += [parse_fault(k, v) for k, v in (("loss", loss), ("delay", delay)) if v is not None]
    faults += [parse_fault("clock-skew", c) for c in clock_skew or []]
    roles = check_roles([r.strip() for r in (kill if kill is not None else "" if faults else "worker").split(",") if r.strip()], bool(faults))
    # typer parses the options as their annotation says (text); their callback (seconds) made them seconds
    every_s, restart_s = cast(float, every), cast(float, restart_after)
    if not every_s > 0:
        raise InputError("--every", f"must be > 0, got {every_s}")
    if restart_s < 0:
        raise InputError("--restart-after", f"must be >= 0, got {restart_s}")
    if not speedup > 0:
        raise InputError("--speedup", f"must be > 0, got {speedup}")
    loaded = _load(cluster)
    brokers = None
    if brokers_dir is not None:
        from schedlab.services.brokercluster import load

        brokers = load(brokers_dir.resolve())
        if brokers is None:
            raise InputError("--brokers-dir", f"no broker cluster in {brokers_dir} (schedlab broker up --dir {brokers_dir})")
    report = asyncio.run(run_chaos(loaded, cluster, trace, roles=roles, every=every_s, restart_after=restart_s, seed=seed,
                                   faults=faults, heal_after=cast(float, heal_after), brokers=brokers, wipe=wipe,
                                   max_jobs=max_jobs, speedup=speedup, constraints=constraints, timeout=timeout))
    t = Table("killed", "at (s)", "healthy after (s)", "scheduling resumed after (s)", "lost runs", "re-queued after (s, max)",
              "restarted after (s, max)", "recovery", title="chaos", title_justify="left")
    for k in report.kills:
        t.add_row(f"{k.role} {k.id}", f"{k.killed_at:.1f}", "-" if k.healthy_after is None else f"{k.healthy_after:.1f}",
                  "-" if k.resumed_after is None else f"{k.resumed_after:.2f}", str(k.lost_runs),
                  f"{max(k.detection):.2f}" if k.detection else "-", f"{max(k.relaunch):.2f}" if k.relaunch else "-", _gm_recovery(k.recovery))
    out.print(t)
    if report.faults:
        ft = Table("fault", "at (s)", "healed after (s)", "hosts", "refused meanwhile", "next completion after heal (s)", title="network and clock faults",
                   title_justify="left")
        for f in report.faults:
            ft.add_row(f"{f.kind} {f.target}", f"{f.at:.1f}", f"{f.healed_after or 0:.1f}", str(len(f.hosts)) if len(f.hosts) > 2 else ", ".join(f.hosts),
                       ", ".join(f"{k} {v}" for k, v in f.refused.items()) or "-", "-" if f.resumed_after is None else f"{f.resumed_after:.2f}")
        out.print(ft)
    s = report.result.summary
    verdict = "every task completed exactly once" if report.ok else f"{report.lost} task(s) lost, {report.duplicated} duplicated"
    out.print(f"tasks {s['tasks']}  kills {len(report.kills)}  faults {len(report.faults)}  lost runs {s['counters'].get('lost_runs', 0)}  {verdict}", highlight=False)
    if summary_json is not None:
        from schedlab.metrics.export import write_json

        s = dict(s, chaos={"kills": [vars(k) for k in report.kills], "faults": [vars(f) for f in report.faults], "lost": report.lost,
                           "duplicated": report.duplicated, "ok": report.ok})
        write_json(summary_json, s)
    if not report.ok:
        raise typer.Exit(1)


def _gm_recovery(r: dict) -> str:
    if r and r.get("rebuilt_in") is not None:
        return (f"{'standby took over' if r['standby_took_over'] else 'restarted'}; state from the hosts in {r['rebuilt_in']:.2f} s: "
                f"{r['tasks_adopted_from_hosts']} running, {r['ends_sent_to_verify']} ends verified by GMs")
    if not r or r.get("recovered_in") is None:
        return "-"
    return (f"view in {r['recovered_in']:.2f} s; {r['jobs_resolved']} job(s) back: {r['tasks_found_running']} running, "
            f"{r['tasks_found_completed']} completed, {r['tasks_requested_again']} requested again")


async def _detached(loaded: Any, trace: str | None, command: str | None, shell: bool, cpus: float, constraint: list[int],
                    max_jobs: int | None, draw: bool, seed: int, retries: int = 0) -> list[int]:
    """``submit --detach``: the trace's jobs, or the command as a one-task job, submitted now (:mod:`~.jobs`)."""
    import itertools

    from schedlab.services.execution import TaskSpec
    from schedlab.services.jobs import submit_detached
    from schedlab.workload.trace import TraceJob, read_trace

    if command is not None:
        argv = _argv(command, shell)
        mask = sum(1 << c for c in set(constraint))
        spec = TaskSpec(kind="command", argv=argv, shell=shell, cpus=cpus, retries=retries)
        cl = loaded.cluster
        request: list[tuple[float, ...] | None] | None = None if cl.slot_mode else [tuple([cpus] + [0.0] * (len(cl.resources) - 1))]
        ids, _prep = await submit_detached(loaded, [TraceJob(0.0, 0.0, [0.0], masks=[mask], requests=request)], constraints=False,
                                           spec=lambda _j, _t, _d: spec)
        return ids
    assert trace is not None
    jobs = list(itertools.islice(read_trace(trace), max_jobs))
    ids, prep = await submit_detached(loaded, jobs, constraints=draw, seed=seed)
    from schedlab.dropped import drop_line

    line = drop_line(prep.drops, prep.trace_tasks, {"constraints": "--constraints none draws none"} if draw else {})
    if line is not None:
        err.print(line, highlight=False)
    return ids


def _argv(command: str, shell: bool) -> list[str]:
    import shlex

    try:
        argv = [command] if shell else shlex.split(command)
    except ValueError as e:
        raise InputError("--command", str(e)) from None
    if not argv:
        raise InputError("--command", "is empty")
    return argv


def _timeout(text: str) -> float | str | None:
    """``--timeout``: seconds, ``auto`` or 0 (never: None)."""
    if text == "auto":
        return "auto"
    try:
        v = float(text)
    except ValueError:
        raise InputError("--timeout", f"expected seconds, auto or 0, got {text!r}") from None
    if not v >= 0:
        raise InputError("--timeout", f"must be >= 0, got {text}")
    return v or None


class ReplayBar:
    """What a person sees of a replay: its estimate first (one line), then a progress bar on a terminal
    (jobs submitted, tasks done, allocation p50 over the last minute, ETA in wall time)."""

    def __init__(self, speedup: float, enabled: bool) -> None:
        self.speedup = speedup
        self.enabled = enabled
        self.said = False
        self.bar: Any = None
        self.task: Any = None

    def __call__(self, p: Any) -> None:
        if not self.enabled:
            return
        if not self.said:
            self.said = True
            if p.estimate is not None:
                err.print(f"replaying {p.jobs_total:,} jobs: about {_duration(p.estimate)} of wall time at --speedup {self.speedup:g} "
                          "(plus queueing); Ctrl-C stops and prints what completed", highlight=False)
            if err.is_terminal:
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

                self.bar = Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("jobs  {task.fields[tasks]} tasks done  allocation p50 {task.fields[p50]}  ETA {task.fields[eta]}"),
                                    console=err, transient=True)
                self.task = self.bar.add_task("replay", total=p.jobs_total, tasks="0", p50="-", eta="-")
                self.bar.start()
        if self.bar is not None:
            self.bar.update(self.task, completed=p.jobs_submitted, tasks=f"{p.tasks_done:,}/{p.tasks_submitted:,}",
                            p50="-" if p.allocation_p50 is None else f"{p.allocation_p50 * 1e3:.1f} ms",
                            eta="-" if p.eta is None else _duration(p.eta))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600} h {s % 3600 // 60:02d} min" if s >= 3600 else f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


async def _replay(path: Path, trace: str, max_jobs: int | None, speedup: float, task: str, cpus: float, seed: int, constraints: bool,
                  embedded: bool, timeout: float | str | None, progress: Any = None) -> Any:
    """The replay, stopped (with its partial result) on SIGINT or SIGTERM."""
    import asyncio
    import signal

    from schedlab.services.client import Client

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with Client(path, embedded=embedded) as c:
            return await c.replay(trace, max_jobs=max_jobs, speedup=speedup, task=task, cpus=cpus, seed=seed, constraints=constraints,
                                  timeout=timeout, progress=progress, stop=stop)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _adhoc(path: Path, command: str, shell: bool, cpus: float, constraint: list[int], embedded: bool, timeout: float | None,
                 retries: int = 0) -> dict:
    from schedlab.services.client import Client

    argv = _argv(command, shell)
    bad = [c for c in constraint if not 0 <= c <= 20]
    if bad:
        raise InputError("--constraint", f"constraint indices are 0..20, got {bad[0]}")
    async with Client(path, embedded=embedded) as c:
        return await c.run(argv, cpus=cpus, constraints=constraint, shell=shell, timeout=timeout, retries=retries)


def calibrate_cmd(
    cluster: Annotated[Path, typer.Option("--cluster", "-c", help="Cluster file of a running cluster.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the cost profile (YAML; simulate --costs reads it).")],
    trace: Annotated[str | None, typer.Option("--trace", "-t", help="Calibrate on this trace instead of the generated workload.")] = None,
    max_jobs: Annotated[int | None, typer.Option("--max-jobs", help="With --trace: its first N jobs.")] = None,
    speedup: Annotated[float, typer.Option("--speedup", help="With --trace: replay it K times faster.")] = 1.0,
    jobs: Annotated[int, typer.Option("--jobs", help="Jobs of the generated workload (1-20 tasks of 50-200 ms each).")] = 600,
    rate: Annotated[float, typer.Option("--rate", help="Tasks/s the generated workload offers (keep it below saturation).")] = 300.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the generated workload.")] = 0,
) -> None:
    """Measure a running cluster's processing costs and write them as a cost profile.

    Runs a calibration workload on the cluster (by default 600 jobs at 300 tasks/s: about 25 s), takes what its
    GMs and LMs measured of each step the simulator charges (gm_match, lm_verify, update_per_worker, message:
    median and 90th percentile per item) and the network's one-way delay, and writes them to --out.
    Example: schedlab calibrate -c cluster.yaml -o costs.yaml && schedlab simulate --scheduler megha --costs costs.yaml
    """
    import asyncio

    from schedlab.services.calibrate import calibrate, write_profile

    _load(cluster)
    profile, measured = asyncio.run(calibrate(cluster, trace, max_jobs, speedup, jobs, rate, seed))
    write_profile(profile, out)
    table = Table(title="measured cost profile")
    for col in ("step", "inputs", "p50", "p90"):
        table.add_column(col, justify="left" if col == "step" else "right")
    for step, q in profile.steps.items():
        p50, p90 = (q.p50, q.p90) if not isinstance(q, float) else (q, q)
        table.add_row(step, str(measured["inputs"].get(step, 0)), f"{p50 * 1e6:.1f} µs", f"{p90 * 1e6:.1f} µs")
    d = profile.one_way_delay
    if d is not None and not isinstance(d, float):
        table.add_row("one-way delay", "", f"{d.p50 * 1e6:.1f} µs", f"{d.p90 * 1e6:.1f} µs")
    sub = profile.submission_delay
    if sub is not None and not isinstance(sub, float):
        table.add_row("submission delay", "", f"{sub.p50 * 1e6:.1f} µs", f"{sub.p90 * 1e6:.1f} µs")
    Console().print(table)
    print(f"cost profile written to {out}")
