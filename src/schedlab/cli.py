"""The ``schedlab`` command: a thin layer that parses options and calls the library.

Every user error ends as one line on stderr — ``error: <where>: <what>`` — with
exit code 2 and no traceback. Inputs are validated before any work (a trace
by its own reader, before anything counts its jobs), output paths when the
options are parsed (:func:`schedlab.cliutil.output_file`, ``output_dir``), and
a command's outputs land together or not at all
(:func:`schedlab.atomic.all_or_nothing`), each file atomically. Sweeps are the
exception by design: their store keeps every finished run, so they resume.

Commands import what they run inside their bodies: ``schedlab --help`` and
every command start without numpy, pandas, matplotlib or the simulator, which
load only for the command that needs them; the other packages' sub-apps (the
domains', the services') are mounted only for the whole help and their own
commands (:func:`full_app`). ``tests/cli/test_startup.py`` keeps it so.
"""

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from schedlab.cli_params import (
    FLAG_CONTEXT,
    SchedulerParamsCommand,
    flag_error,
    merge_params,
    parse_flags,
)
from schedlab.cliutil import (
    fmt,
    output_dir,
    output_file,
    parse_key_values,
    summary_table,
)
from schedlab.errors import InputError, InvariantError
from schedlab.run_fields import default as run_default
from schedlab.run_fields import describe, option_name
from schedlab.workload.cli import app as trace_app

try:  # recent typer vendors click; older releases depend on it
    from typer._click.exceptions import ClickException as _ClickException
except ImportError:  # pragma: no cover
    from click import ClickException as _ClickException  # type: ignore[no-redef]

_SETTINGS: dict[str, Any] = {
    "name": "schedlab",
    "help": "Simulate and compare decentralized, federated and data-aware cluster schedulers.",
    "no_args_is_help": True,
    "add_completion": False,
    "pretty_exceptions_enable": False,
}
# This module's own commands. The whole command (`app`, :func:`full_app`) adds the other packages' sub-apps —
# the domains' and the services' — whose modules load only when a process needs them: `schedlab simulate` builds
# this one alone, `schedlab --help` and their commands the whole (about 0.05 s apart).
core_app = typer.Typer(**_SETTINGS)
core_app.add_typer(trace_app, name="trace")  # the workload package's commands (schedlab.workload.cli)

# Piped output gets a fixed, roomy width so tables are never cut to 80 columns.
out = Console(width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True)


# -- helpers -------------------------------------------------------------------------------------
class _Progress:
    """A progress bar on stderr (jobs submitted of the trace's, simulated time, tasks done, events/s, ETA),
    shown only on a terminal and once a run has lasted half a second."""

    def __init__(self, total_jobs: int | None, enabled: bool) -> None:
        self.total = total_jobs
        self.enabled = enabled and err.is_terminal
        self.t0 = time.perf_counter()
        self.bar = None
        self.task = None
        self._last = (self.t0, 0)
        self.rate = 0.0

    def __call__(self, now: float, events: int, jobs: int, tasks_done: int = 0) -> None:
        if not self.enabled:
            return
        t = time.perf_counter()
        if self.bar is None:
            if t - self.t0 < 0.5:
                return
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("simulating"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("jobs  sim t={task.fields[now]:,.0f}s  {task.fields[tasks]:,} tasks done  {task.fields[rate]:,.0f} events/s"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("run", total=self.total, now=now, tasks=tasks_done, rate=0.0)
        t_last, ev_last = self._last
        if t - t_last >= 1.0:  # events/s over the last second or so, not since the start
            self.rate = (events - ev_last) / (t - t_last)
            self._last = (t, events)
        self.bar.update(self.task, completed=jobs, now=now, tasks=tasks_done, rate=self.rate)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


# -- simulate -------------------------------------------------------------------------------------
def _run_option(field: str, *decls: str, **kw: Any) -> Any:
    """A typer option for a RunConfig field: its flag and its description as help (the default is the field's)."""
    return typer.Option(*(decls or (option_name(field),)), help=describe(field), **kw)


_D = run_default


@core_app.command(cls=SchedulerParamsCommand, context_settings=FLAG_CONTEXT)
def simulate(
    ctx: typer.Context,
    scheduler: Annotated[str, _run_option("scheduler", "--scheduler", "-s")] = _D("scheduler"),
    trace: Annotated[str, _run_option("trace", "--trace", "-t")] = _D("trace"),
    workers: Annotated[int | None, _run_option("workers", "--workers", "-w")] = _D("workers"),
    seed: Annotated[int, _run_option("seed")] = _D("seed"),
    config: Annotated[str | None, _run_option("config")] = _D("config"),
    data_center_from: Annotated[str | None, _run_option("data_center_from", "--data-center-from")] = _D("data_center_from"),
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="Scheduler parameter KEY=VALUE (repeatable; each also has a flag of its own, listed below).")] = None,
    constraints: Annotated[bool, _run_option("constraints", "--constraints/--no-constraints")] = _D("constraints"),
    constraint_seed: Annotated[int, _run_option("constraint_seed")] = _D("constraint_seed"),
    machine_model: Annotated[str, _run_option("machine_model")] = _D("machine_model"),
    resource_mode: Annotated[str, _run_option("resource_mode", "--resource-mode", "--resources")] = _D("resource_mode"),
    requests: Annotated[str, _run_option("requests")] = _D("requests"),
    latency: Annotated[float, _run_option("latency")] = _D("latency"),
    latency_spread: Annotated[float, _run_option("latency_spread")] = _D("latency_spread"),
    latency_per_task: Annotated[float, _run_option("latency_per_task")] = _D("latency_per_task"),
    msg_cost: Annotated[list[str] | None, typer.Option("--msg-cost", help="Processing cost at the receiver for a message type, TYPE=SECONDS (repeatable).")] = None,
    costs_file: Annotated[Path | None, typer.Option("--costs", help="Megha's processing costs from a cost profile (YAML: per step a constant or "
                                                    "{p50, p90}, and one_way_delay, which becomes --latency, --latency-spread and --latency-per-task "
                                                    "unless --latency is given); "
                                                    "--param values win over it.")] = None,
    exact_durations: Annotated[bool, _run_option("exact_durations")] = _D("exact_durations"),
    summary_json: Annotated[Path | None, typer.Option("--summary-json", help="Write the summary JSON here.", callback=output_file)] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Write tasks, jobs, utilization tables and summary.json into this folder.", callback=output_dir)] = None,
    table_format: Annotated[str, typer.Option("--format", help="Table format for --out: parquet, csv or both.")] = "parquet",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No table, no progress bar.")] = False,
) -> None:
    """Run one scheduler on one workload and print a summary."""
    from schedlab import engine
    from schedlab.datafiles import BUNDLED_JOBS
    from schedlab.workload.trace import count_jobs

    formats = {"parquet": ("parquet",), "csv": ("csv",), "both": ("parquet", "csv")}.get(table_format)
    if formats is None:
        raise InputError("--format", f"unknown format {table_format!r} (choose from parquet, csv, both)")
    costs: dict[str, float] = {}
    for item in msg_cost or []:
        name, sep, val = item.partition("=")
        try:
            costs[name] = float(val)
        except ValueError:
            sep = ""
        if not sep or not name or costs[name] < 0:
            raise InputError("--msg-cost", f"expected TYPE=SECONDS with SECONDS >= 0, got {item!r}")
    settings = {
        "scheduler": scheduler,
        "trace": trace,
        "workers": workers,
        "seed": seed,
        "config": config,
        "data_center_from": data_center_from,
        "constraints": constraints,
        "constraint_seed": constraint_seed,
        "machine_model": machine_model,
        "resource_mode": resource_mode,
        "requests": requests,
        "latency": latency,
        "latency_spread": latency_spread,
        "latency_per_task": latency_per_task,
        "processing_costs": costs,
        "exact_durations": exact_durations,
    }
    # the simulation stack loads only when a run is asked for
    from schedlab.run_config import RunConfig
    from schedlab.schedulers import registry

    flags = parse_flags(scheduler, ctx.args)
    try:
        params = merge_params(parse_key_values(param), flags)
        registry.parse_params(registry.get(scheduler), params)
    except InputError as e:
        raise flag_error(e, flags) from None
    if costs_file is not None:
        from schedlab.schedulers.megha.costs import load_costs

        if scheduler != "megha":
            raise InputError("--costs", f"a cost profile sets Megha's processing costs; {scheduler} has none (use -s megha)")
        profile = load_costs(costs_file)
        params = {**profile.params(), **params}
        given = ctx.get_parameter_source("latency")  # typer's click: DEFAULT unless --latency was on the command line
        if profile.latency() is not None and (given is None or given.name in ("DEFAULT", "DEFAULT_MAP")):
            settings["latency"] = profile.latency()
            spread = ctx.get_parameter_source("latency_spread")
            if spread is None or spread.name in ("DEFAULT", "DEFAULT_MAP"):
                settings["latency_spread"] = profile.latency_spread()
            per_task = ctx.get_parameter_source("latency_per_task")
            if per_task is None or per_task.name in ("DEFAULT", "DEFAULT_MAP"):
                settings["latency_per_task"] = profile.latency_per_task()
    cfg = RunConfig.build(**settings, params=params)
    total = BUNDLED_JOBS.get(cfg.trace)
    if total is None and not quiet and err.is_terminal:  # the bar's total: only where a bar is drawn
        total = count_jobs(cfg.trace)
    progress = _Progress(total, not quiet)
    try:
        result = engine.simulate(cfg, progress=progress)
    finally:
        progress.close()
    s = result.summary
    if not quiet:
        out.print(summary_table(s))
        c = s["counters"]
        out.print(
            f"jobs {s['jobs']}  tasks {s['tasks']}  utilization mean {fmt(s['utilization']['mean'])}  "
            f"dropped tasks {c['tasks_dropped_unsatisfiable']}  unfinished {c['tasks_unfinished']}  "
            f"messages {c['messages']}  events {s['events']}  wall {s['wall_seconds']:.2f}s"
        )
    from schedlab.atomic import all_or_nothing
    from schedlab.metrics.export import write_json

    with all_or_nothing():  # every output, or none
        if out_dir is not None:
            result.save(out_dir, formats)
        if summary_json is not None:
            write_json(summary_json, s)
    # after the outputs: a failure to write them stays one line
    _say_dropped(result, {
        "constraints": "the trace's own constraints on these machines" if cfg.data_center_from is not None
        else "--no-constraints draws none" if cfg.constraints else "the trace's constraints",
        "request": "--requests sets the requests; the data center sets the capacities",
    })  # fmt: skip


def _say_dropped(result: Any, fixes: dict[str, str]) -> None:
    """One line on stderr when the run dropped tasks as unsatisfiable (even with --quiet: nothing is dropped silently)."""
    from schedlab.dropped import drop_line

    line = drop_line(result.extra["dropped"], result.summary["counters"]["trace_tasks"], fixes)
    if line is not None:
        err.print(line, highlight=False, soft_wrap=True)


@core_app.command("schedulers")
def list_schedulers() -> None:
    """List the schedulers that can be run, with their parameters."""
    from schedlab.schedulers import registry

    t = Table("scheduler", "parameters (defaults)", "what it is")
    for name in registry.available():
        cls = registry.get(name)
        params = ", ".join(f"{k}={f.default}" for k, f in cls.Params.model_fields.items())
        t.add_row(name, params, cls.summary)
    out.print(t)


# -- experiments ---------------------------------------------------------------------------------
class _SweepDisplay:
    """Runs done of total, failures and ETA on stderr: a live bar on a terminal, else one line per run."""

    def __init__(self, label: str = "sweep") -> None:
        self.label = label
        self.live = err.is_terminal
        self.bar: Any = None
        self.task: Any = None

    def __call__(self, state: Any) -> None:
        if state.last is None:
            err.print(f"{self.label}: {state.total} runs, {state.skipped} already finished, {state.todo} to run")
            if self.live and state.todo:
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                )

                self.bar = Progress(
                    TextColumn(self.label),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.fields[failed]}  ETA {task.fields[eta]}  {task.fields[last]}"),
                    TimeElapsedColumn(),
                    console=err,
                    transient=True,
                )
                self.bar.start()
                self.task = self.bar.add_task("runs", total=state.total, completed=state.skipped, failed="", eta="?", last="")
            return
        eta = "-" if state.eta is None else _duration(state.eta)
        failed = f"{state.failed} failed" if state.failed else ""
        if self.bar is not None:
            self.bar.update(self.task, completed=state.finished, failed=failed, eta=eta, last=state.last.describe())
            if state.last_error:
                self.bar.console.print(f"failed: {state.last.describe()}: {state.last_error.splitlines()[0]}")
        else:
            what = f"failed: {state.last_error.splitlines()[0]}" if state.last_error else "done"
            err.print(f"[{state.finished}/{state.total}] {state.last.describe()} {what}; ETA {eta}", highlight=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _sweep_summary(res: Any) -> int:
    from schedlab.sweeps.runner import describe_failures

    err.print(
        f"{len(res.ran)} run(s) done, {len(res.skipped)} already finished"
        + (f", {len(res.redone)} interrupted run(s) redone" if res.redone else "")
        + (f", {len(res.failed)} failed" if res.failed else "")
        + f" in {_duration(res.seconds)}; results in {res.root}",
        highlight=False,
    )
    for line in describe_failures(res):
        print(f"error: {line}", file=sys.stderr)
    return 1 if res.failed else 0


@core_app.command("sweep")
def sweep_cmd(
    spec: Annotated[Path, typer.Argument(help="Experiment spec (YAML).")],
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Runs at once (default: the CPUs; Ray: the cluster's CPUs).")] = None,
    backend: Annotated[str, typer.Option("--backend", help="local (process pool) or ray.")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster address (default: start a local Ray).")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Results folder (default results/<spec name>).", callback=output_dir)] = None,
) -> None:
    """Run every run of an experiment spec not already in its results folder (resumable).

    A data-center spec, or a spec with ``domain: grid``, ``locality`` or ``edge``
    (its results.csv, summary.csv and report.md go to the results folder too).
    """
    from schedlab.experiments.domain_sweep import is_domain_spec, run_domain_sweep
    from schedlab.experiments.runner import run_sweep

    run = run_domain_sweep if is_domain_spec(spec) else run_sweep
    display = _SweepDisplay()
    try:
        res = run(spec, out_dir, jobs=jobs, backend=backend, address=address, progress=display)
    finally:
        display.close()
    rc = _sweep_summary(res)
    if rc:
        raise typer.Exit(rc)


@core_app.command("compare")
def compare_cmd(
    results: Annotated[Path, typer.Argument(help="Results folder of a sweep.")],
    baseline: Annotated[str | None, typer.Option("--baseline", "-b", help="Scheduler label to divide by (default: the spec's).")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", "-m", help="Metric, e.g. jrt_delay.p99 (repeatable; default: the spec's).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (every statistic) instead of a table.")] = False,
) -> None:
    """Each metric per scheduler and workload: mean ±std over seeds, ×ratio to the baseline."""
    from schedlab.experiments.compare import compare, to_json, wide

    table = compare(results, metric, baseline)
    if as_json:
        print(json.dumps(to_json(table), indent=2))
        return
    w = wide(table)
    t = Table(title=f"{table.attrs['experiment'].get('name')} — mean ±std over seeds, ×ratio to {table.attrs['baseline']}", title_justify="left")
    for c in w.columns:  # metric names on two lines (family, statistic)
        key = c in ("workload", "data_center", "scheduler")
        t.add_column(c.replace(".", "\n", 1), no_wrap=key, justify="left" if key else "right")
    for row in w.itertuples(index=False):
        t.add_row(*(str(v) for v in row))
    (out if sys.stdout.isatty() else Console(width=250)).print(t)
    if table.attrs.get("unfinished"):
        err.print(f"note: {table.attrs['unfinished']} of {table.attrs['total']} runs not finished (rerun `schedlab sweep`)")


@core_app.command("report")
def report_cmd(
    results: Annotated[Path, typer.Argument(help="Results folder of a sweep.")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Report folder (default RESULTS/report).", callback=output_dir)] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", "-b", help="Scheduler label for ratios and normalization.")] = None,
) -> None:
    """Write a Markdown and an HTML report with PNG plots (the papers' figures) for a results folder.

    A domain spec's folder gets its report.md, tables and a plot per metric again (into --out if given).
    """
    from schedlab.experiments.domain_sweep import (
        is_domain_results,
        load_domain,
        write_domain_report,
    )
    from schedlab.experiments.report import write_report

    if is_domain_results(results):
        ls, points = load_domain(results)
        path = write_domain_report(ls, points, results, out_dir)
        err.print(f"wrote {path}", highlight=False)
        return

    rep = write_report(results, out_dir, baseline=baseline)
    err.print(f"wrote {rep.markdown}, {rep.html.name} and {len(rep.images)} plot(s)", highlight=False)


@core_app.command("dashboard")
def dashboard_cmd(
    results: Annotated[list[Path] | None, typer.Option("--results", "-r", help="A results folder (sweep or reproduce); repeat for more.")] = None,
    summary: Annotated[list[Path] | None, typer.Option("--summary", help="A run's summary.json (or the folder simulate --out wrote); repeat for more.")] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on; other than loopback, every request needs the token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="Port (0: any free one).", min=0, max=65535)] = 8765,
    token: Annotated[str | None, typer.Option("--token", help="Token requests must carry (default: $SCHEDLAB_DASHBOARD_TOKEN; generated off loopback).")] = None,
    cluster: Annotated[Path | None, typer.Option("--cluster", "-c", help="A running cluster's file: its live view at /live.")] = None,
    every: Annotated[float, typer.Option("--every", help="With --cluster: seconds between two reads of every node.", min=0.1)] = 1.0,
) -> None:
    """Serve the web dashboard: the live view of a running cluster, and an interactive explorer of runs
    (CDFs, percentiles with ratios, utilization)."""
    import logging

    from schedlab.dashboard.explorer import Catalog
    from schedlab.dashboard.live import LiveMonitor
    from schedlab.dashboard.server import resolve_token, serve
    from schedlab.services.clusterfile import load_cluster

    monitor = LiveMonitor(load_cluster(cluster), every) if cluster is not None else None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)
    catalog = Catalog(results or [], summary or [])
    err.print(f"{len(catalog.runs)} run(s) from {len(results or [])} results folder(s) and {len(summary or [])} summary file(s)", highlight=False)
    url_token = resolve_token(host, token)

    def announce(url: str) -> None:
        print(f"dashboard at {url}", flush=True)

    serve(catalog, host, port, url_token, announce, monitor)


@core_app.command("reproduce")
def reproduce_cmd(
    name: Annotated[str | None, typer.Argument(help="What to reproduce (see --list).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A seconds-long check of the whole path (few jobs, small sizes, one seed), for CI: not a result.")] = False,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Output (default: the report's place under reports/; results/NAME[-quick] for specs and quick runs).")] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Runs at once.")] = None,
    backend: Annotated[str, typer.Option("--backend", help="local or ray (where runs go; not for entries that run one after another).")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster address (with --backend ray).")] = None,
    results: Annotated[Path | None, typer.Option("--results", help="Module entries: the results store their runs are kept in (default results/STORE[-quick], see --list); a rerun runs only what is missing.")] = None,
    list_specs: Annotated[bool, typer.Option("--list", help="List every figure and table that can be reproduced, in every module.")] = False,
    embedded: Annotated[bool, typer.Option("--embedded", help="megha-prototype: run the real cluster in this process (no broker).")] = False,
    netns: Annotated[bool, typer.Option("--netns", help="megha-prototype: the paper's 126 hosts (3 GMs, 3 LMs, 120 worker hosts, the broker), each a network namespace (root).")] = False,
    paper_traces: Annotated[Path | None, typer.Option("--paper-traces", help="Megha specs: run on the paper's samples in this folder (made by `trace megha-samples`) instead of the stand-ins.")] = None,
    seeds: Annotated[int | None, typer.Option("--seeds", min=1, help="Specs: only the spec's first N seeds (a CPU budget); a later run with more runs only what is missing.")] = None,
) -> None:
    """Regenerate a paper's figures or tables — from any module — and write their report."""
    from schedlab.cliutil import check_output_dir, check_output_file
    from schedlab.experiments.catalogue import Options, catalogue, find

    if list_specs:
        t = Table("name", "module", "what it reproduces", "written to", "runs kept in")
        for e in catalogue():
            kept = f"results/{e.name}" if e.is_spec else (f"results/{e.store}" if e.store else "")
            t.add_row(e.name, e.domain, f"{e.paper}: {e.what}", e.out or f"results/{e.name}/report.md", kept)
        out.print(t)
        return
    if name is None:
        raise InputError("reproduce", "give a name (see `schedlab reproduce --list`)")
    entry = find(name)
    if embedded and name != "megha-prototype":
        raise InputError("--embedded", "applies to megha-prototype only")
    if netns and name != "megha-prototype":
        raise InputError("--netns", "applies to megha-prototype only")
    if netns and embedded:
        raise InputError("--netns", "puts every component on a host of its own: not with --embedded")
    if entry.is_spec and results is not None:
        raise InputError("--results", f"{name} is a spec: its runs are kept in --out")
    if paper_traces is not None and not entry.is_spec:
        raise InputError("--paper-traces", f"{name} is not a spec: it runs no traces")
    if seeds is not None and not entry.is_spec:
        raise InputError("--seeds", f"{name} is not a spec: its seeds are its own")
    if not entry.is_spec:
        if (jobs is not None or backend != "local" or address is not None) and not entry.parallel:
            raise InputError(f"reproduce {name}", "runs its experiments one after another: --jobs, --backend and --address do not apply")
        if results is not None and not entry.store:
            raise InputError("--results", f"{name} keeps no runs")
        from schedlab.sweeps.runner import check_backend

        check_backend(backend, jobs, address)
        target = out_dir if out_dir is not None else entry.default_out(quick)
        (check_output_file if Path(entry.out).suffix else check_output_dir)(target, "--out")
        store = results if results is not None else entry.default_store(quick)
        if store is not None:
            check_output_dir(store, "--results")
        say = lambda line: err.print(line, highlight=False)  # noqa: E731
        report = entry.run(target, Options(quick=quick, jobs=jobs, backend=backend, address=address, store=store, embedded=embedded, netns=netns, say=say))
        err.print(f"report: {report}", highlight=False)
        return
    from schedlab.experiments.reproduce import reproduce

    check_output_dir(out_dir, "--out")
    display = _SweepDisplay(f"reproduce {name}")
    try:
        res, rep = reproduce(name, out_dir, quick=quick, jobs=jobs, backend=backend, address=address, progress=display, paper_traces=paper_traces,
                             seeds=seeds)
    finally:
        display.close()
    rc = _sweep_summary(res)
    if rep is not None:
        err.print(f"report: {rep.markdown} ({rep.html.name}, {len(rep.images)} plot(s))", highlight=False)
    if rc:
        raise typer.Exit(rc)


# -- entry point ---------------------------------------------------------------------------------
_FULL: list[typer.Typer] = []


def full_app() -> typer.Typer:
    """The whole command: this module's commands and the other packages' sub-apps, in the order ``--help`` lists them."""
    if _FULL:
        return _FULL[0]
    from schedlab.edge.cli import app as edge_app
    from schedlab.grid.cli import app as grid_app
    from schedlab.locality.cli import app as locality_app
    from schedlab.services.cli import (
        broker_app,
        calibrate_cmd,
        chaos_cmd,
        cluster_app,
        serve_cmd,
        submit_cmd,
    )
    from schedlab.services.dst_cli import dst_cmd
    from schedlab.services.jobs_cli import job_app, jobs_cmd

    whole = typer.Typer(**_SETTINGS)
    for name, cmd in (("serve", serve_cmd), ("submit", submit_cmd), ("chaos", chaos_cmd), ("calibrate", calibrate_cmd), ("jobs", jobs_cmd),
                      ("dst", dst_cmd)):
        whole.command(name)(cmd)
    whole.registered_commands += core_app.registered_commands
    whole.registered_groups += core_app.registered_groups
    for name, sub in (("edge", edge_app), ("locality", locality_app), ("grid", grid_app), ("cluster", cluster_app), ("broker", broker_app),
                      ("job", job_app)):
        whole.add_typer(sub, name=name)
    _FULL.append(whole)
    return whole


def _core_names() -> set[str]:
    commands = {c.name or typer.main.get_command_name(c.callback.__name__) for c in core_app.registered_commands if c.callback}
    return commands | {g.name for g in core_app.registered_groups if g.name}


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole command, built on first use (tests drive it with typer's CliRunner)
        return full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user errors become one line on stderr and exit code 2."""
    args = sys.argv[1:] if argv is None else argv
    # a command of this module, named first, needs none of the sub-apps (nor their imports) to run or show its help
    which = core_app if args and args[0] in _core_names() else full_app()
    try:
        rc = typer.main.get_command(which).main(args=argv, prog_name="schedlab", standalone_mode=False)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except typer.Abort:
        print("error: interrupted", file=sys.stderr)
        return 130
    except _ClickException as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `schedlab`: the help text was printed
            return 0
        print(f"error: {e.format_message()}", file=sys.stderr)
        return 2
    except InvariantError as e:
        print(f"internal error (scheduler invariant broken, please report): {e}", file=sys.stderr)
        return 3
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
