"""``schedlab trace``: inspect, generate, sample and convert job traces — the workload package's commands.

A thin layer over :mod:`schedlab.workload` (``info``, ``synthetic``,
``sample``, ``convert``) mounted by the main command (:mod:`schedlab.cli`) as
its ``trace`` sub-app. As everywhere in the CLI, a user error is one line
(``error: <where>: <what>``, exit 2) and every command imports what it runs
inside its body, so ``schedlab --help`` starts without numpy or pandas.
"""

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from schedlab.cliutil import fmt, output_dir, output_file
from schedlab.errors import InputError

app = typer.Typer(help="Inspect and generate job traces.", no_args_is_help=True)

# Piped output gets a fixed, roomy width so tables are never cut to 80 columns.
out = Console(width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True)


@app.command("info")
def trace_info(
    path: Annotated[str, typer.Argument(help="Trace file or bundled name (google, syn_250, …).")],
    workers: Annotated[int | None, typer.Option("--workers", "-w", help="Data-center size for load figures.")] = None,
    config: Annotated[str | None, typer.Option("--config", help="Config whose workers give per-constraint supply.")] = None,
    machines: Annotated[str | None, typer.Option("--machines", help="Machines file (trace machines): the trace's own constraints against those machines (tasks none can run, per-constraint load).")] = None,
    constraints: Annotated[bool, typer.Option("--constraints/--no-constraints", help="Synthesize task constraints and report per-constraint load.")] = True,
    constraint_seed: Annotated[int, typer.Option("--constraint-seed")] = 42,
    exact_durations: Annotated[bool, typer.Option("--exact-durations", help="No truncation or dephasing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Also draw the load over time, duration and request CDFs, tasks per job and constraints (PNG).", callback=output_file)] = None,
) -> None:
    """Jobs, tasks, durations (and a columnar trace's requests, constraints, users); with --workers or --config, per-second load (median, mean, p99) and per-constraint load."""
    from schedlab.workload.info import trace_report
    from schedlab.workload.trace import TraceConventions

    report = trace_report(
        path,
        workers=workers,
        config=config,
        constraints=constraints,
        constraint_seed=constraint_seed,
        conventions=TraceConventions.exact() if exact_durations else None,
        plot=plot,
        machines=machines,
    )
    if as_json:
        print(json.dumps(report, indent=2))
        return
    w = report["workload"]
    t = Table(title=f"trace {path}", title_justify="left", show_header=False)
    t.add_row("jobs", str(w["jobs"]))
    t.add_row("tasks", str(w["tasks"]))
    t.add_row("short / long jobs", f"{w['short_jobs']} / {w['long_jobs']} (mean task duration < {w['short_cutoff']} s)")
    t.add_row("arrival span (s)", fmt(w["arrival_span"]))
    for key in ("task_duration", "tasks_per_job"):
        d = w[key]
        t.add_row(key.replace("_", " "), "  ".join(f"{k} {fmt(v)}" for k, v in d.items()))
    if "requests" in report:
        rq = report["requests"]
        for r, d in rq["per_resource"].items():
            t.add_row(f"request {r}", "  ".join(f"{k} {fmt(v)}" for k, v in d.items()))
        t.add_row("tasks with a request", f"{rq['tasks_stated']} (without: {rq['tasks_unstated']})")
    if "constraints" in report:
        cs = report["constraints"]
        t.add_row("constrained tasks", f"{cs['tasks_constrained']} (per task: mean {fmt(cs['per_constrained_task']['mean'])}, max {fmt(cs['per_constrained_task']['max'])})")
        t.add_row("constraint operators", "  ".join(f"{k} {v}" for k, v in cs["operators"].items()))
        t.add_row("top attributes", "  ".join(f"{k} {v}" for k, v in cs["top_attributes"].items()))
    if "users" in report:
        us = report["users"]
        t.add_row("users", f"{us['users']} (most tasks: " + ", ".join(f"{k} {v}" for k, v in us["top_by_tasks"].items()) + ")")
    if "priorities" in report:
        t.add_row("tasks per priority", "  ".join(f"{k}: {v}" for k, v in report["priorities"].items()))
    if "load" in report:
        ld = report["load"]
        t.add_row(f"load vs {report['workers']} workers", f"median {fmt(ld['median'])}  mean {fmt(ld['mean'])}  p99 {fmt(ld['p99'])}")
    if "machines" in report:
        mr = report["machines"]
        t.add_row("machines", f"{mr['machines']} ({mr['constraints']} distinct constraints in the trace)")
        t.add_row("tasks no machine can run", f"{mr['tasks_unsatisfiable']} of {mr['tasks_constrained']} constrained" + (
            " (most: " + "; ".join(f"{k}: {v}" for k, v in mr["top_unsatisfiable"].items()) + ")" if mr["top_unsatisfiable"] else ""))
    out.print(t)
    if "machines" in report and report["machines"]["top_constraints"]:
        mc = Table("constraint", "machines", "tasks", "mean load", "p99 load", title="the trace's commonest constraints on its machines", title_justify="left")
        for row in report["machines"]["top_constraints"]:
            mc.add_row(row["constraint"], str(row["machines"]), str(row["tasks"]), fmt(row.get("mean", 0.0)), fmt(row.get("p99", 0.0)))
        out.print(mc)
    if "per_constraint_load" in report:
        pc = Table("constraint", "workers", "tasks", "mean", "p50", "p95", "p99", title="per-constraint load", title_justify="left")
        for row in report["per_constraint_load"]:
            pc.add_row(*(fmt(row[k]) for k in ("constraint", "workers", "tasks", "mean", "p50", "p95", "p99")))
        out.print(pc)


@app.command("generate")
def trace_generate(
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Trace file to write (.gz to compress).", callback=output_file)],
    jobs: Annotated[int, typer.Option("--jobs", "-n", help="Number of jobs.")] = 2000,
    arrivals: Annotated[str, typer.Option("--arrivals", help="constant:INTERVAL, poisson:MEAN or mmpp:MEAN,SCV,IDC (seconds).")] = "constant:1",
    tasks_per_job: Annotated[str, typer.Option("--tasks-per-job", help="Task-count distribution, e.g. const:250, geom:20, uniform:1,100; heavy-tailed: pareto:1.5,10, lognormal:3,1.")] = "const:250",
    duration: Annotated[str, typer.Option("--duration", help="Task-duration distribution, e.g. const:1, exp:10, lognormal:0,1.")] = "const:1",
    seed: Annotated[int, typer.Option("--seed")] = 0,
    start: Annotated[float, typer.Option("--start", help="Arrival time of the first job.")] = 1.0,
    job_duration_spread: Annotated[float | None, typer.Option(
        "--job-duration-spread", help="Draw one duration per job from --duration; each task takes it times U(1-S, 1+S) "
        "(jobs of alike tasks, as in the Yahoo and Google traces). Default: every task drawn on its own.")] = None,
) -> None:
    """Write a synthetic trace (syn_N-like by default: one job/s of 250 one-second tasks)."""
    from schedlab.sim.rng import RngStreams
    from schedlab.workload.synthetic import generate_jobs
    from schedlab.workload.trace import write_trace

    if seed < 0:
        raise InputError("--seed", f"must be >= 0, got {seed}")
    rng = RngStreams(seed).np_rng("workload")
    n = write_trace(out_path, generate_jobs(jobs, arrivals, tasks_per_job, duration, rng, start, job_duration_spread))
    err.print(f"wrote {n} jobs to {out_path}")


@app.command("sample")
def trace_sample(
    trace: Annotated[str, typer.Argument(help="Trace file or bundled name (google, syn_250, …), .tr or columnar.")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Sample to write (.parquet for a columnar trace, else .tr).", callback=output_file)],
    jobs: Annotated[int | None, typer.Option("--jobs", help="Draw this many whole jobs.")] = None,
    tasks: Annotated[int | None, typer.Option("--tasks", help="Draw whole jobs until at least this many tasks.")] = None,
    window: Annotated[str | None, typer.Option("--window", help="Only jobs arriving in [START, END) seconds: START,END.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random draw.")] = 0,
    first: Annotated[bool, typer.Option("--first", help="Take jobs in arrival order instead of at random.")] = False,
    rebase: Annotated[bool, typer.Option("--rebase", help="Shift arrivals so the first sampled job arrives at 0.")] = False,
) -> None:
    """Cut a sample of whole jobs from a trace (random or first N jobs or tasks, within a time window), keeping every field."""
    from schedlab.workload.sample import sample_trace

    win = None
    if window is not None:
        parts = window.split(",")
        try:
            if len(parts) != 2:
                raise ValueError
            win = (float(parts[0]), float(parts[1]))
        except ValueError:
            raise InputError("--window", f"expected START,END in seconds, got {window!r}") from None
    r = sample_trace(trace, out_path, jobs=jobs, tasks=tasks, window=win, seed=seed, first=first, rebase=rebase)
    span = f", arrivals {r.first_arrival:g}-{r.last_arrival:g} s" if r.first_arrival is not None and r.last_arrival is not None else ""
    err.print(f"wrote {r.jobs} of {r.jobs_read} jobs ({r.tasks} tasks{span}) to {out_path}")


def _format_options(items: list[str] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError("--format-option", f"expected NAME=NUMBER, got {item!r}") from None
    return out


@app.command("convert")
def trace_convert(
    inputs: Annotated[list[Path], typer.Argument(help="Input trace file(s), read in order as one trace; for a raw trace, its root folder, table folders or shards.")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Output: .parquet for a columnar trace (requests, constraints, users), else the Sparrow .tr format (.gz to compress).", callback=output_file)],
    fmt: Annotated[str, typer.Option("--format", "-f", help="Input format: google2011 or google2019 (raw Google 2011 / ClusterData 2019 tables), alibaba2018 (raw Alibaba 2018 batch_task and batch_instance tables), swim (a SWIM MapReduce workload: see --format-option), swf (Parallel Workloads Archive), tr, columnar, or auto (tr/columnar by suffix).")] = "auto",
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Raw traces: count and skip malformed rows instead of stopping at the first.")] = False,
    scale_requests: Annotated[bool, typer.Option("--scale-requests/--normalised-requests", help="Raw traces: scale normalised requests to the default 64-core, 16 GB worker (cores, memory_mb), or keep them normalised (cpus, memory).")] = True,
    format_option: Annotated[list[str] | None, typer.Option("--format-option", help="A raw format's own option, NAME=VALUE (repeatable; e.g. swim's block_mb=64).")] = None,
    work_dir: Annotated[Path | None, typer.Option("--work-dir", help="Raw traces (google2011, google2019, alibaba2018): keep spills and checkpoints here; rerun with the same folder to resume after a failure.")] = None,
    checkpoint_every: Annotated[float, typer.Option("--checkpoint-every", help="With --work-dir: seconds at least between two checkpoints (each writes the converter's whole state).")] = 60.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the conversion report as JSON.")] = False,
) -> None:
    """Convert a trace: raw production traces and .tr traces to the columnar (Parquet) format, or back to .tr; reports what was left out and why."""
    from schedlab.workload.convert import convert

    progress = None
    bar: Any = None
    if err.is_terminal:
        from rich.progress import Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("converting: {task.completed:,.0f} rows"), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=err, transient=True)
        task = bar.add_task("convert", total=None, rate="")
        t0 = time.perf_counter()

        def progress(n: int) -> None:
            done = bar.tasks[0].completed + n
            bar.update(task, completed=done, rate=f"{done / max(time.perf_counter() - t0, 1e-9):,.0f} rows/s")

        bar.start()
    try:
        report = convert(fmt, inputs, out_path, skip_bad=skip_bad, scale_requests=scale_requests, progress=progress, options=_format_options(format_option), work_dir=work_dir,
                         checkpoint_every_s=checkpoint_every)
    finally:
        if bar is not None:
            bar.stop()
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    dropped = "; not kept by the .tr format: " + ", ".join(f"{k} of {v} job(s)" for k, v in report.dropped.items()) if report.dropped else ""
    err.print(f"wrote {report.jobs} jobs ({report.tasks} tasks) to {out_path}{dropped}")
    for title, table in (("tasks left out", report.tasks_dropped), ("malformed rows skipped", report.bad_rows)):
        if table:
            err.print(f"{title}: " + "; ".join(f"{k}: {v:,}" for k, v in table.items()))


@app.command("megha-samples")
def trace_megha_samples(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for the samples (google_19.parquet, alibaba.parquet, cloudera.parquet) and their conversions.", callback=output_dir)],
    google2019: Annotated[list[Path] | None, typer.Option("--google2019", help="Raw ClusterData 2019 trace (root folder or table shards), for google_19.")] = None,
    alibaba2018: Annotated[list[Path] | None, typer.Option("--alibaba2018", help="Raw Alibaba cluster-trace-v2018 (folder or batch_task / batch_instance files), for alibaba.")] = None,
    swim: Annotated[Path | None, typer.Option("--swim", help="A SWIM Cloudera workload file, for cloudera.")] = None,
    start: Annotated[float, typer.Option("--start", help="Cut each sample from this trace time on (seconds).")] = 0.0,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Count and skip malformed rows.")] = False,
) -> None:
    """The Megha paper's workloads (google_19: 4,550 tasks, alibaba: 8,000, cloudera: 10,173) from the raw traces you have; then `reproduce NAME --paper-traces OUT`."""
    from schedlab.experiments.megha_workloads import build_samples

    raw: dict[str, list[str | os.PathLike]] = {}
    for name, given in (("google_19", google2019), ("alibaba", alibaba2018), ("cloudera", [swim] if swim else None)):
        if given:
            raw[name] = list(given)
    for s in build_samples(raw, out_dir, start=start, skip_bad=skip_bad):
        err.print(f"{s.name}: {s.jobs} jobs, {s.tasks} tasks (of {s.tasks_converted} converted from {s.source}) -> {out_dir / (s.name + '.parquet')}")


@app.command("machines")
def trace_machines(
    inputs: Annotated[list[Path], typer.Argument(help="The raw trace: its root folder, table folders or machine table shards.")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="The machines file to write (.parquet), for simulate --data-center-from.", callback=output_file)],
    fmt: Annotated[str, typer.Option("--format", "-f", help="Raw trace format with machine tables (google2011, google2019, alibaba2018).")] = "google2011",
    at: Annotated[float, typer.Option("--at", help="Trace time in seconds of the snapshot (0: the machines the trace starts with).")] = 0.0,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Count and skip malformed rows instead of stopping at the first.")] = False,
    scale_requests: Annotated[bool, typer.Option("--scale-requests/--normalised-requests", help="Capacities in cores and MB (the largest machine = 64 cores, 16 GB, as trace convert scales requests), or normalised.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Write a raw trace's machines (capacities and attributes at one instant) as the data center of simulate --data-center-from."""
    from schedlab.workload.convert import convert_machines

    report = convert_machines(fmt, inputs, out_path, at=at, skip_bad=skip_bad, scale_requests=scale_requests)
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    err.print(f"wrote {report.machines} machines ({report.attributes} attribute names) to {out_path}")
    if report.bad_rows:
        err.print("malformed rows skipped: " + "; ".join(f"{k}: {v:,}" for k, v in report.bad_rows.items()))
