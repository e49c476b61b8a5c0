"""``schedlab grid …``: computing grids under bursty load (thin: parses options, calls schedlab.grid).

* ``simulate`` — one run; ``--json`` prints the summary (``mean_queue_time``,
  ``queue_time_buckets``, ``utilization``, and ``perf_gap`` with ``--with-ideal``).
* ``sweep`` — schedulers × duplications × delays × seeds × workloads, the ideal
  alongside, on the one sweep runner (``--jobs``, ``--backend ray``) into a
  results store in ``--out`` (resumable) and its ``results.csv``; ``--plot``
  draws the paper's figures.
* ``plot`` — Figures 2–6 from a sweep's results.

Option errors end as one line, ``error: --option: problem``, exit code 2.
Commands import the simulation inside their bodies, so the rest of the
command line starts without it.
"""

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from schedlab.cliutil import output_dir, output_file
from schedlab.errors import InputError

app = typer.Typer(
    help="Computing grids under bursty load: backfilling sites, decentralized site selection, duplication-validation.",
    no_args_is_help=True,
)

_OPTION = {
    "sites": "--sites",
    "processors": "--processors",
    "policy": "--policy",
    "scheduler": "--scheduler",
    "duplications": "--duplications",
    "delay": "--delay",
    "penalty": "--penalty",
    "query_interval": "--query-interval",
    "tie_break": "--tie-break",
    "local_jobs": "--local-jobs",
    "local_load": "--local-load",
    "global_jobs": "--global-jobs",
    "jobs": "--local-jobs/--global-jobs",
    "arrivals": "--arrivals",
    "size": "--size",
    "runtime": "--runtime",
    "estimate_factor": "--estimate-factor",
    "seed": "--seed",
    "local_swf": "--local-swf",
    "mmpp": "--arrivals",
    "mmpp.mean": "--arrivals",
    "mmpp.scv": "--arrivals",
    "mmpp.idc": "--arrivals",
    "mmpp.high_state_fraction": "--arrivals",
}


def _config(**kw: Any):
    """A GridConfig whose validation errors name the command-line option."""
    from schedlab.grid import workload as gw
    from schedlab.grid.simulation import GridConfig

    # Job-model options left unset take the workload module's defaults.
    for name, default in (("size", gw.DEFAULT_SIZE), ("runtime", gw.DEFAULT_RUNTIME), ("estimate_factor", gw.DEFAULT_ESTIMATE_FACTOR)):
        if kw.get(name) is None:
            kw[name] = default
    try:
        return GridConfig(**kw)
    except InputError as e:
        if e.where in _OPTION:
            raise InputError(_OPTION[e.where], e.problem) from None
        raise


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "-" if x != x else f"{x:.4g}"
    return str(x)


# Shared options -------------------------------------------------------------------------------
Sites = Annotated[int, typer.Option("--sites", help="Number of sites.")]
Processors = Annotated[int, typer.Option("--processors", help="Processors per site.")]
Policy = Annotated[str, typer.Option("--policy", help="Site queue policy: conservative, easy or fcfs.")]
Delay = Annotated[float, typer.Option("--delay", help="Remote submission delay, seconds.")]
Penalty = Annotated[float, typer.Option("--penalty", help="Invalidation penalty per duplicate, seconds.")]
QueryInterval = Annotated[float, typer.Option("--query-interval", help="Seconds between load queries (0: query at each arrival).")]
TieBreak = Annotated[str, typer.Option("--tie-break", help="Ties in ranking: first (site order) or random.")]
LocalJobs = Annotated[int, typer.Option("--local-jobs", help="Local jobs per site.")]
LocalLoad = Annotated[float, typer.Option("--local-load", help="Load of each site's local jobs.")]
GlobalJobs = Annotated[int, typer.Option("--global-jobs", help="Global jobs.")]
# Defaults live in schedlab.grid.workload (not imported here, to keep the CLI quick to start);
# a test checks that these help texts name them.
Size = Annotated[
    str | None,
    typer.Option("--size", help="Job sizes: pow2:A,B or an integer distribution (uniform:A,B, geom:MEAN, …).", show_default="pow2:1,32"),
]
Runtime = Annotated[
    str | None,
    typer.Option("--runtime", help="Actual runtimes: exp:MEAN, lognormal:MU,SIGMA, uniform:A,B, …", show_default="lognormal:2.4742,1.5"),
]
EstimateFactor = Annotated[
    float | None,
    typer.Option("--estimate-factor", help="f of the f-model: estimate = runtime × U(1, 1+f).", show_default="3.0"),
]
LocalSwf = Annotated[list[str] | None, typer.Option("--local-swf", help="SWF trace of local jobs: one file dealt to the sites, or one per site (repeat).")]
GlobalSwf = Annotated[str | None, typer.Option("--global-swf", help="SWF trace of global jobs (replaces --arrivals and the job model).")]


@app.command()
def simulate(
    scheduler: Annotated[str, typer.Option("--scheduler", "-s", help="rand, qlen, util, est_qt, act_qt, hybrid1 or hybrid2.")] = "qlen",
    duplications: Annotated[int, typer.Option("--duplications", "-d", help="Copies beyond the first (0 .. sites-1).")] = 0,
    arrivals: Annotated[str, typer.Option("--arrivals", "-a", help="non-bursty, weak, strong, poisson:MEAN or mmpp:MEAN,SCV,IDC[,P].")] = "strong",
    delay: Delay = 1.0,
    penalty: Penalty = 1.0,
    query_interval: QueryInterval = 0.0,
    tie_break: TieBreak = "first",
    sites: Sites = 8,
    processors: Processors = 64,
    policy: Policy = "conservative",
    local_jobs: LocalJobs = 100_000,
    local_load: LocalLoad = 0.6,
    global_jobs: GlobalJobs = 100_000,
    size: Size = None,
    runtime: Runtime = None,
    estimate_factor: EstimateFactor = None,
    local_swf: LocalSwf = None,
    global_swf: GlobalSwf = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the workload and of the schedulers' random choices.")] = 0,
    with_ideal: Annotated[bool, typer.Option("--with-ideal", help="Also run the ideal (Act.QT, zero delay, no duplication) and report perf_gap.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    summary_json: Annotated[Path | None, typer.Option("--summary-json", help="Write the summary JSON here.", callback=output_file)] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Write jobs.csv (global jobs) and summary.json into this folder.", callback=output_dir)] = None,
) -> None:
    """Run one scheduler on one grid workload and print the paper's metrics."""
    from schedlab.grid.simulation import build_workload, simulate_grid, simulate_with_ideal
    from schedlab.metrics.export import write_json, write_table

    config = _config(
        sites=sites,
        processors=processors,
        policy=policy,
        scheduler=scheduler,
        duplications=duplications,
        delay=delay,
        penalty=penalty,
        query_interval=query_interval,
        tie_break=tie_break,
        local_jobs=local_jobs,
        local_load=local_load,
        global_jobs=global_jobs,
        arrivals=arrivals,
        size=size,
        runtime=runtime,
        estimate_factor=estimate_factor,
        local_swf=tuple(local_swf or ()),
        global_swf=global_swf,
        seed=seed,
    )
    try:
        workload = build_workload(config)
    except InputError as e:
        if e.where in _OPTION:
            raise InputError(_OPTION[e.where], e.problem) from None
        raise
    if with_ideal:
        result, _ideal = simulate_with_ideal(config, workload)
    else:
        result = simulate_grid(config, workload)
    s = result.summary
    from schedlab.atomic import all_or_nothing

    with all_or_nothing():  # every output, or none
        if out_dir is not None:
            write_table(out_dir / "jobs.csv", result.jobs_frame(), "csv")
            write_json(out_dir / "summary.json", s)
        if summary_json is not None:
            write_json(summary_json, s)
    if as_json:
        from schedlab.metrics.export import json_ready

        print(json.dumps(json_ready(s), indent=2))
        return
    _print_summary(s)


def _print_summary(s: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from schedlab.grid.selection import LABELS

    t = Table(
        title=f"{LABELS.get(s['scheduler'], s['scheduler'])} +{s['duplications']} dup, delay {s['delay']:g} s, "
        f"arrivals {s['arrivals']}, {s['policy']} sites, seed {s['seed']}",
        title_justify="left",
        show_header=False,
    )
    t.add_row("global jobs", str(s["global_jobs"]))
    t.add_row("mean queue time (s)", _fmt(s["mean_queue_time"]))
    if "perf_gap" in s:
        t.add_row("ideal mean queue time (s)", _fmt(s["ideal_mean_queue_time"]))
        t.add_row("performance gap (%)", _fmt(s["perf_gap"]))
    t.add_row("queue time shares", "  ".join(f"{k} {100 * v:.1f}%" for k, v in s["queue_time_buckets"].items()))
    q = s["queue_time"]
    t.add_row("queue time p50/p90/p99/max", " / ".join(_fmt(q[k]) for k in ("p50", "p90", "p99", "max")))
    t.add_row("local jobs, mean queue time (s)", f"{s['local_jobs']}, {_fmt(s['local_queue_time']['mean'])}")
    t.add_row("utilization (mean, per site)", f"{s['utilization']['mean']:.3f}  " + " ".join(f"{u:.2f}" for u in s["utilization"]["per_site"]))
    c = s["counters"]
    t.add_row("copies / invalidations", f"{c['copies_submitted']} / {c['invalidations']}")
    t.add_row("simulation", f"{s['simulation_seconds']:.2f} s, {_fmt(s['jobs_per_second'])} jobs/s, {c['events']} events")
    Console(width=None if sys.stdout.isatty() else 140).print(t)  # piped: never cut to 80 columns


@app.command()
def sweep(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Results folder: results.csv, and the store of its runs (resumable).", callback=output_dir)],
    arrivals: Annotated[str, typer.Option("--arrivals", "-a", help="Workloads separated by commas or semicolons: non-bursty, weak, strong, poisson:MEAN, mmpp:MEAN,SCV,IDC[,P] (separate an mmpp spec from the next with ';').")] = "strong",
    schedulers: Annotated[str, typer.Option("--schedulers", "-s", help="Comma-separated schedulers.")] = "rand,qlen,hybrid1,hybrid2",
    duplications: Annotated[str, typer.Option("--duplications", "-d", help="Duplications, e.g. 0-7 or 0,1,2.")] = "0-7",
    delays: Annotated[str, typer.Option("--delays", help="Remote submission delays, e.g. 0,1.")] = "1",
    seeds: Annotated[str, typer.Option("--seeds", help="Seeds, e.g. 0-2.")] = "0",
    jobs: Annotated[int, typer.Option("--jobs", "-j", "--workers", "-w", help="Runs at once (processes, or Ray tasks).")] = 1,
    backend: Annotated[str, typer.Option("--backend", help="local or ray.")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster address (with --backend ray).")] = None,
    penalty: Penalty = 1.0,
    query_interval: QueryInterval = 0.0,
    tie_break: TieBreak = "first",
    sites: Sites = 8,
    processors: Processors = 64,
    policy: Policy = "conservative",
    local_jobs: LocalJobs = 100_000,
    local_load: LocalLoad = 0.6,
    global_jobs: GlobalJobs = 100_000,
    size: Size = None,
    runtime: Runtime = None,
    estimate_factor: EstimateFactor = None,
    plot: Annotated[bool, typer.Option("--plot", help="Also draw gap and composition plots (PNG) into the folder.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Run a sweep with the ideal alongside; print mean queue time and performance gap per run."""
    from schedlab.grid.experiments import parse_float_list, parse_int_list, plan, run_sweep
    from schedlab.grid.selection import check_scheduler
    from schedlab.grid.workload import parse_arrivals
    from schedlab.sweeps.runner import check_backend

    arrival_list = _split_arrivals(arrivals)
    for a in arrival_list:
        try:
            parse_arrivals(a)
        except InputError as e:
            raise InputError("--arrivals", f"{a!r}: {e.problem}") from None
    scheduler_list = [check_scheduler(s.strip(), "--schedulers") for s in schedulers.split(",") if s.strip()]
    if not scheduler_list:
        raise InputError("--schedulers", "no scheduler given")
    dup_list = parse_int_list(duplications, "--duplications")
    delay_list = parse_float_list(delays, "--delays")
    seed_list = parse_int_list(seeds, "--seeds")
    check_backend(backend, jobs, address)  # at least 1, and no more processes than the cores can use
    base = _config(
        sites=sites,
        processors=processors,
        policy=policy,
        penalty=penalty,
        query_interval=query_interval,
        tie_break=tie_break,
        local_jobs=local_jobs,
        local_load=local_load,
        global_jobs=global_jobs,
        arrivals=arrival_list[0],
        size=size,
        runtime=runtime,
        estimate_factor=estimate_factor,
    )
    for d in dup_list:
        if not 0 <= d < sites:
            raise InputError("--duplications", f"must be in 0..{sites - 1} with {sites} sites, got {d}")
    for delay in delay_list:
        if not delay >= 0:
            raise InputError("--delays", f"must be >= 0, got {delay}")
    runs = plan(base, arrivals=arrival_list, schedulers=scheduler_list, duplications=dup_list, delays=delay_list, seeds=seed_list)

    def progress(done: int, total: int, row: dict[str, Any]) -> None:
        if not quiet:
            print(
                f"[{done}/{total}] {row['arrivals']} {row['scheduler']} +{row['duplications']} delay {row['delay']:g} "
                f"seed {row['seed']}: mean queue time {row['mean_queue_time']:.2f} s ({row['simulation_seconds']:.1f} s)",
                file=sys.stderr,
                flush=True,
            )

    df = run_sweep(runs, out_dir, store=out_dir, jobs=jobs, backend=backend, address=address, progress=progress)
    _print_sweep(df)
    if plot:
        _plot_all(df, out_dir, delay_list)


def _split_arrivals(spec: str) -> list[str]:
    """``"strong,weak"``, ``"mmpp:10,20,55;poisson:4"`` → workload specs (an mmpp spec keeps its commas)."""
    out: list[str] = []
    for part in spec.split(";"):
        part = part.strip()
        if part.startswith("mmpp:"):
            out.append(part)
        else:
            out += [p.strip() for p in part.split(",") if p.strip()]
    if not out:
        raise InputError("--arrivals", "no workload given")
    return out


def _print_sweep(df: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    from schedlab.grid.selection import LABELS

    t = Table("arrivals", "scheduler", "dup", "delay", "seed", "mean qt (s)", "<10s", "10-100s", ">=100s", "gap (%)")
    for r in df.to_dict("records"):
        t.add_row(
            str(r["arrivals"]),
            LABELS.get(r["scheduler"], r["scheduler"]),
            str(r["duplications"]),
            f"{r['delay']:g}",
            str(r["seed"]),
            f"{r['mean_queue_time']:.2f}",
            *(f"{100 * r[k]:.1f}%" for k in ("<10s", "10-100s", ">=100s")),
            _fmt(r["perf_gap"]),
        )
    Console(width=None if sys.stdout.isatty() else 140).print(t)  # piped: never cut to 80 columns


def _plot_all(df: Any, out_dir: Path, delays: list[float]) -> None:
    from schedlab.grid.experiments import IDEAL
    from schedlab.grid.plots import plot_composition, plot_gap_vs_delay, plot_gap_vs_duplications

    body = df[df["scheduler"] != IDEAL]
    for i, arr in enumerate(dict.fromkeys(body["arrivals"])):
        tag = f"{i}-{_slug(arr)}"
        sub = body[body["arrivals"] == arr]
        if sub["duplications"].nunique() > 1:
            for delay in sorted(sub["delay"].unique()):
                plot_gap_vs_duplications(df, out_dir / f"gap_vs_duplications_{tag}_delay{delay:g}.png", arrivals=arr, delay=delay)
            plot_composition(df[df["delay"] == delays[-1]], out_dir / f"composition_{tag}.png", arrivals=arr)
        if sub["delay"].nunique() > 1:
            plot_gap_vs_delay(df, out_dir / f"gap_vs_delay_{tag}.png", arrivals=arr)


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s)


@app.command()
def plot(
    results: Annotated[str, typer.Argument(help="A sweep's folder or its results.csv.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="PNG file to write.", callback=output_file)],
    kind: Annotated[str, typer.Option("--kind", "-k", help="gap (Figures 3, 5, 6), composition (Figure 4) or delay (Figure 2).")] = "gap",
    arrivals: Annotated[str | None, typer.Option("--arrivals", "-a", help="Workload to plot, when the results hold several.")] = None,
    delay: Annotated[float | None, typer.Option("--delay", help="Only rows with this delay (gap plots).")] = None,
) -> None:
    """Draw one of the paper's figures from sweep results."""
    from schedlab.grid.plots import (
        load_results,
        plot_composition,
        plot_gap_vs_delay,
        plot_gap_vs_duplications,
    )

    df = load_results(results)
    if kind == "gap":
        path = plot_gap_vs_duplications(df, out, arrivals=arrivals, delay=delay)
    elif kind == "composition":
        path = plot_composition(df, out, arrivals=arrivals)
    elif kind == "delay":
        path = plot_gap_vs_delay(df, out, arrivals=arrivals)
    else:
        raise InputError("--kind", f"unknown plot {kind!r} (choose from gap, composition, delay)")
    print(f"wrote {path}", file=sys.stderr)
