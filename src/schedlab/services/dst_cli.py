"""``schedlab dst``: search fault schedules of a simulated Megha cluster (the services' own code) for violations.

Beside the package, not in it: importing ``schedlab.services.dst`` loads the whole services stack, and every
``schedlab`` command imports this module to build its help.
"""

import json
import signal
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from schedlab.errors import InputError

out = Console()
err = Console(stderr=True)


def dst_cmd(
    seeds: Annotated[int, typer.Option("--seeds", "-n", help="How many seeded schedules to run.")] = 200,
    start: Annotated[int, typer.Option("--start", help="The first seed (schedules start .. start+seeds-1).")] = 0,
    seed: Annotated[int | None, typer.Option("--seed", help="Run this one seed only (with --schedule: that schedule).")] = None,
    schedule: Annotated[str | None, typer.Option("--schedule", help="With --seed: these faults instead of the seed's own, "
                                                                      "e.g. 'crash:lm1@2.1+0.8,cut:gm0-lm1@3+2.5'.")] = None,
    faults: Annotated[str, typer.Option("--faults", help="Fault kinds drawn, comma-separated: crash, broker, cut, oneway, loss, "
                                                         "delay (the default), pause (a process frozen for seconds: drawn only "
                                                         "when named).")] =
        "crash,broker,cut,oneway,loss,delay",
    jobs: Annotated[int, typer.Option("--jobs", help="Jobs of the workload (1 to 4 tasks each).")] = 50,
    first_jobs: Annotated[int | None, typer.Option("--first-jobs", help="With --seed: run only the workload's first N jobs "
                                                                        "(a shrunk schedule prints it).")] = None,
    standby: Annotated[bool | None, typer.Option("--standby/--no-standby", help="LM standbys (default: drawn per seed).")] = None,
    elsewhere: Annotated[bool | None, typer.Option("--standby-elsewhere/--standby-here",
                                                   help="Each standby on a host of its own (fenced by tokens; implies --standby) "
                                                        "or on its LM's host (fenced by the port) (default: drawn per seed).")] = None,
    workers_per_host: Annotated[int, typer.Option("--workers-per-host", help="Workers of each of the 4 worker hosts.")] = 4,
    processes: Annotated[int, typer.Option("--processes", "-j", help="Processes to run schedules in (0: one per core).")] = 0,
    shrink: Annotated[bool, typer.Option("--shrink/--no-shrink", help="Shrink the first failing schedule to a minimal one.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="With --seed: the services' warnings as they happen.")] = False,
) -> None:
    """Run N seeded fault schedules of a 2 GM x 2 LM x 4-host Megha cluster under deterministic simulation; exit 1 on a violation.

    Every GM, LM and worker host is the code a real process runs; messages are delayed, lost, cut and redelivered,
    processes crash and restart with what they made durable, the broker restarts. After each schedule the chaos
    campaigns' invariants are checked; a failing schedule is printed with the command that replays it bit for bit.
    Example: schedlab dst --seeds 2000 --json
    """
    import logging

    from schedlab.services.dst.faults import ALL_KINDS, parse_schedule, schedule_text
    from schedlab.services.dst.search import Schedule, default_workers, run, schedule_for, search
    from schedlab.services.dst.search import shrink as shrink_verdict
    from schedlab.services.dst.world import Setup

    kinds = tuple(k.strip() for k in faults.split(",") if k.strip())
    bad = [k for k in kinds if k not in ALL_KINDS]
    if bad or not kinds:
        raise InputError("--faults", f"unknown fault kind {bad[0] if bad else '(none)'!r} (choose from {', '.join(ALL_KINDS)})")
    if seeds < 1:
        raise InputError("--seeds", f"must be >= 1, got {seeds}")
    if not 1 <= jobs <= 10_000:
        raise InputError("--jobs", f"must be 1..10000, got {jobs}")
    if not 3 <= workers_per_host <= 256:
        raise InputError("--workers-per-host", f"must be 3..256, got {workers_per_host}")
    if schedule is not None and seed is None:
        raise InputError("--schedule", "replays one schedule: give its --seed too")
    setup = Setup(jobs=jobs, workers_per_host=workers_per_host)
    if first_jobs is not None and seed is None:
        raise InputError("--first-jobs", "cuts one replayed schedule: give its --seed too")
    if first_jobs is not None and not 1 <= first_jobs <= jobs:
        raise InputError("--first-jobs", f"must be 1..{jobs} (--jobs), got {first_jobs}")
    if standby is False and elsewhere:
        raise InputError("--standby-elsewhere", "needs standbys (drop --no-standby)")
    forced = (standby, elsewhere)  # what the command fixes instead of drawing it per seed (None: drawn)

    if seed is not None:  # one schedule, replayed
        s = schedule_for(seed, setup, kinds)
        s = Schedule(seed, tuple(parse_schedule(schedule)) if schedule is not None else s.faults, first_jobs or jobs, s.standby,
                     s.elsewhere)
        s = s.with_standbys(*forced)
        if verbose:
            logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        else:
            logging.getLogger("schedlab.services").setLevel(logging.CRITICAL)
        v = run(s, setup)
        if as_json:
            out.print_json(json.dumps({"seed": seed, "schedule": schedule_text(list(s.faults)), "standby": s.standby, "elsewhere": s.elsewhere, "ok": v.ok,
                                       "violations": v.violations, "sim_time": round(v.sim_time, 3), "events": v.events}))
        else:
            _print_verdict(v, setup)
        if not v.ok:
            raise typer.Exit(1)
        return

    workers = processes or default_workers()
    stop = {"asked": False}

    def on_signal(_sig: int, _frame: Any) -> None:
        # the search stops after the schedule it is running (tick): raised inside it, the interrupt was caught by the
        # simulated processes' coroutines and judged as that schedule's failure (found in a campaign: seed 2215318)
        stop["asked"] = True

    old = signal.signal(signal.SIGTERM, on_signal)
    old_int = signal.signal(signal.SIGINT, on_signal)  # Ctrl-C the same way
    progress = Progress(TextColumn("dst"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[bad]} failing"),
                        TimeRemainingColumn(), console=err, disable=as_json or not err.is_terminal, transient=True)
    try:
        with progress:
            bar = progress.add_task("dst", total=seeds, bad=0)
            failing = 0

            def tick(v: Any) -> None:
                nonlocal failing
                failing += not v.ok
                progress.update(bar, advance=1, bad=failing)
                if stop["asked"]:
                    raise KeyboardInterrupt

            seeds_iter = range(start, start + seeds)
            summary = search(seeds_iter, setup, kinds, workers, tick) if forced == (None, None) else _search_forced(
                seeds_iter, setup, kinds, forced, tick)
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
    if summary.interrupted:
        err.print(f"interrupted after {summary.seeds} of {seeds} schedules: the verdict below is over those", highlight=False)
    if as_json:
        out.print_json(json.dumps(summary.json()))
    else:
        t = Table("invariant", "schedules violating it", title=f"{summary.seeds} schedules in {summary.seconds:.1f} s "
                  f"({summary.seeds / max(summary.seconds, 1e-9):.0f}/s, {workers} process(es))", title_justify="left")
        for name, n in summary.violations.items():
            t.add_row(name, str(n))
        out.print(t)
        if summary.trapped_end_reruns:
            out.print(f"allowed: a run ended on a host cut off from everything, declared lost before its end could leave, "
                      f"run again — seeds {', '.join(map(str, summary.trapped_end_reruns[:10]))}", highlight=False)
    if summary.failing:
        first = summary.failing[0]
        err.print(f"{len(summary.failing)} failing schedule(s): seeds {', '.join(str(v.schedule.seed) for v in summary.failing[:20])}",
                  highlight=False)
        err.print(f"replay the first: {first.schedule.command(setup)}", highlight=False, markup=False)
        if shrink and not summary.interrupted:  # a stop asked for is not the time for a long shrink
            small = shrink_verdict(first, setup)
            err.print(f"shrunk to {len(small.schedule.faults)} fault(s), {small.schedule.jobs} job(s): {small.schedule.command(setup)}",
                      highlight=False, markup=False)
            err.print("  " + "; ".join(f"{k}: {r[0]}" for k, r in small.violations.items()), highlight=False, markup=False)
        raise typer.Exit(1)
    if summary.interrupted:
        raise typer.Exit(130)


def _search_forced(seeds: Any, setup: Any, kinds: tuple[str, ...], forced: tuple[bool | None, bool | None], tick: Any) -> Any:
    """A search with standbys forced on or off, here or elsewhere (one process: the pool draws each seed's own)."""
    import time

    from schedlab.services.dst.search import Summary, run, schedule_for
    from schedlab.services.dst.world import quiet_logs

    quiet_logs()
    summary = Summary()
    t0 = time.perf_counter()
    try:
        for sd in seeds:
            v = run(schedule_for(sd, setup, kinds).with_standbys(*forced), setup)
            summary.add(v)
            tick(v)
    except KeyboardInterrupt:
        summary.interrupted = True
    summary.seconds = time.perf_counter() - t0
    return summary


def _print_verdict(v: Any, setup: Any) -> None:
    from schedlab.services.dst.faults import schedule_text

    s = v.schedule
    out.print(f"seed {s.seed}: {len(s.faults)} fault(s) ({schedule_text(list(s.faults)) or 'none'}), "
              f"{('standbys elsewhere' if s.elsewhere else 'standbys') if s.standby else 'no standbys'}, {s.jobs} jobs; {v.sim_time:.1f} s simulated, {v.events} events",
              highlight=False, markup=False)
    if v.ok:
        out.print("every invariant holds", highlight=False)
        return
    for name, reasons in v.violations.items():
        out.print(f"{name}: {reasons[0]}" + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""), highlight=False,
                  markup=False)
