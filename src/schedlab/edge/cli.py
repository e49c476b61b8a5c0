"""``schedlab edge``: generate CRED instances, solve and verify them, compare algorithms, draw Figure 4.

A thin layer over :mod:`schedlab.edge`: it parses options, calls the library and
prints. User errors are :class:`~schedlab.errors.InputError` (one line, exit 2,
via :func:`schedlab.cli.main`); files are written atomically and only once a
run has succeeded. ``solve`` and ``verify`` exit with 1 when the schedule
breaks a rule (for an algorithm, that can only be needing more than N nodes; any
other violation is a bug and exits 3).
"""

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from schedlab.cliutil import output_dir, output_file
from schedlab.edge.defaults import GENERATE
from schedlab.edge.defaults import SweepSpec as _SweepSpec
from schedlab.errors import InputError, InvariantError

app = typer.Typer(
    help="Edge-cloud right-sizing with execution deadlines and data locality (CRED): place chunks, schedule slots, minimise active nodes.",
    no_args_is_help=True,
)
out = Console()
err = Console(stderr=True)
_FIG4 = _SweepSpec()


def _fmt(x: object) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


@app.command()
def generate(
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Instance file to write (JSON).", callback=output_file)],
    jobs: Annotated[int, typer.Option("--jobs", "-n", help="Number of jobs J.")] = GENERATE.jobs,
    chunks: Annotated[int, typer.Option("--chunks", help="Number of distinct chunks |C|.")] = GENERATE.chunks,
    chunks_per_job: Annotated[str, typer.Option("--chunks-per-job", help="Chunk-set size distribution, e.g. uniform:5,15 or const:5.")] = GENERATE.chunks_per_job,
    popularity: Annotated[float, typer.Option("--popularity", help="Zipf exponent of chunk popularity (0 = uniform; higher = more overlap).")] = GENERATE.popularity,
    deadlines: Annotated[str, typer.Option("--deadlines", help="Distinct deadlines, comma-separated (time slots).")] = GENERATE.deadlines,
    mix: Annotated[str | None, typer.Option("--mix", help="Relative share of jobs per deadline, e.g. 2,1,1 (default equal).")] = None,
    nodes: Annotated[int | None, typer.Option("--nodes", help="N, nodes available (default: one per task, i.e. ample).")] = None,
    chunks_per_node: Annotated[int, typer.Option("--chunks-per-node", "-B", help="B, chunks a node can store.")] = GENERATE.chunks_per_node,
    vms_per_node: Annotated[int, typer.Option("--vms-per-node", "-S", help="S, VMs per node.")] = GENERATE.vms_per_node,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """Write a random instance: overlapping chunk sets, a few deadline classes, N, B, S."""
    from schedlab.edge.generate import generate_instance

    inst = generate_instance(
        jobs=jobs,
        chunks=chunks,
        chunks_per_job=chunks_per_job,
        popularity=popularity,
        deadlines=deadlines,
        mix=mix,
        nodes=nodes,
        chunks_per_node=chunks_per_node,
        vms_per_node=vms_per_node,
        seed=seed,
    )
    inst.save(out_path)
    d = inst.describe()
    err.print(f"wrote {d['jobs']} jobs, {d['chunks']} chunks, {d['tasks']} tasks, deadlines {d['deadlines']} to {out_path}")


def _check_run(run) -> None:
    kinds = run.verdict.kinds()
    if kinds - {"node_out_of_range"}:
        raise InvariantError(f"{run.algorithm} broke a rule: {run.verdict.summary()}")


@app.command()
def solve(
    instance: Annotated[Path, typer.Argument(help="Instance file (JSON).")],
    algorithm: Annotated[str, typer.Option("--algorithm", "-a", help="cred-m, cred-s, cred-s-per-deadline, first-fit or milp.")] = "cred-m",
    out_path: Annotated[Path | None, typer.Option("--out", "-o", help="Write the full solution (placement and slot schedule) here.", callback=output_file)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a line of text.")] = False,
    milp_time_limit: Annotated[float, typer.Option("--milp-time-limit", help="Seconds for the milp algorithm.")] = 30.0,
) -> None:
    """Solve an instance with one algorithm and verify the schedule."""
    from schedlab.edge.bounds import lower_bound
    from schedlab.edge.compare import parse_algorithms, run_algorithm
    from schedlab.edge.instance import load_instance

    parse_algorithms([algorithm], "--algorithm")
    params = None
    if algorithm == "milp":  # --milp-time-limit is the milp algorithm's time_limit parameter
        if not milp_time_limit > 0:
            raise InputError("--milp-time-limit", f"must be > 0, got {milp_time_limit}")
        params = {"time_limit": milp_time_limit}
    inst = load_instance(instance)
    run = run_algorithm(algorithm, inst, params=params)
    _check_run(run)
    row = {"algorithm": algorithm, **run.row(), "lower_bound": lower_bound(inst), "nodes": inst.nodes}
    if out_path is not None:
        run.solution.save(out_path)
    if as_json:
        print(json.dumps(row, indent=2))
    else:
        print(
            f"{algorithm}: {row['active_nodes']} active nodes (lower bound {row['lower_bound']}, N = {inst.nodes}), "
            f"{'feasible' if run.feasible else 'INFEASIBLE'}, {run.seconds:.3f} s + verify {run.verify_seconds:.3f} s"
        )
    if not run.feasible:
        err.print(f"infeasible: {run.verdict.summary()}")
        raise typer.Exit(1)


@app.command()
def verify(
    instance: Annotated[Path, typer.Argument(help="Instance file (JSON).")],
    solution: Annotated[Path, typer.Argument(help="Solution file (JSON, as written by `edge solve --out`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Check a solution against every rule; exit 1 if any is broken."""
    from schedlab.edge.instance import load_instance
    from schedlab.edge.solution import load_solution
    from schedlab.edge.verify import verify as check

    inst = load_instance(instance)
    sol = load_solution(solution)
    verdict = check(inst, sol)
    if as_json:
        print(json.dumps(verdict.to_dict(), indent=2))
    else:
        print(verdict.summary())
        for v in verdict.violations:
            print(f"  {v}")
    if not verdict.ok:
        raise typer.Exit(1)


@app.command()
def compare(
    instance: Annotated[Path, typer.Argument(help="Instance file (JSON).")],
    algorithms: Annotated[str, typer.Option("--algorithms", help="Comma-separated algorithms.")] = "cred-m,cred-s,cred-s-per-deadline,first-fit",
    optimum: Annotated[str, typer.Option("--optimum", help="MILP optimum: auto (small instances), always or never.")] = "auto",
    max_variables: Annotated[int, typer.Option("--max-variables", help="'Small' for --optimum auto: MILP variables at most this.")] = 4000,
    milp_time_limit: Annotated[float, typer.Option("--milp-time-limit", help="Seconds for the MILP.")] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON: per algorithm active_nodes, feasible, seconds; lower_bound; optimum.")] = False,
    out_path: Annotated[Path | None, typer.Option("--out", "-o", help="Also write the JSON result here.", callback=output_file)] = None,
) -> None:
    """Run several algorithms on one instance, verify each, and set them against the lower bound and optimum."""
    from schedlab.edge.compare import compare as run_compare
    from schedlab.edge.compare import parse_algorithms
    from schedlab.edge.instance import load_instance

    names = parse_algorithms(algorithms)
    if max_variables < 1:
        raise InputError("--max-variables", f"must be >= 1, got {max_variables}")
    if not milp_time_limit > 0:
        raise InputError("--milp-time-limit", f"must be > 0, got {milp_time_limit}")
    inst = load_instance(instance)
    result = run_compare(inst, names, optimum=optimum, max_variables=max_variables, milp_time_limit=milp_time_limit)
    if out_path is not None:
        from schedlab.metrics.export import write_json

        write_json(out_path, result)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    d = result["instance"]
    t = Table(
        title=f"{instance.name}: {d['jobs']} jobs, {d['chunks']} chunks, {d['tasks']} tasks, deadlines {d['deadlines']}, "
        f"N={d['nodes']} B={d['chunks_per_node']} S={d['vms_per_node']}",
        title_justify="left",
    )
    for col in ("algorithm", "active nodes", "feasible", "seconds"):
        t.add_column(col, justify="left" if col == "algorithm" else "right")
    for name, row in result["algorithms"].items():
        t.add_row(name, str(row["active_nodes"]), "yes" if row["feasible"] else "NO", f"{row['seconds']:.3f}")
    t.add_row("lower bound", str(result["lower_bound"]), "", "")
    t.add_row("optimum (MILP)", _fmt(result["optimum"]), "", f"{result.get('optimum_seconds', 0):.3f}" if "optimum_seconds" in result else "")
    out.print(t)
    if result["optimum"] is None:
        print(f"optimum: {result['optimum_status']}")


@app.command("figure4")
def figure4(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for spread/mix .csv and .png and figure4.json.", callback=output_dir)],
    seeds: Annotated[int, typer.Option("--seeds", help="Instances per point.")] = _FIG4.seeds,
    jobs: Annotated[int, typer.Option("--jobs", "-n")] = _FIG4.jobs,
    chunks: Annotated[int, typer.Option("--chunks")] = _FIG4.chunks,
    chunks_per_job: Annotated[str, typer.Option("--chunks-per-job")] = _FIG4.chunks_per_job,
    popularity: Annotated[float, typer.Option("--popularity")] = _FIG4.popularity,
    chunks_per_node: Annotated[int, typer.Option("--chunks-per-node", "-B")] = _FIG4.chunks_per_node,
    vms_per_node: Annotated[int, typer.Option("--vms-per-node", "-S")] = _FIG4.vms_per_node,
    d1: Annotated[int, typer.Option("--d1", help="The earlier deadline.")] = _FIG4.d1,
    d2: Annotated[int, typer.Option("--d2", help="The later deadline of the mix sweep.")] = _FIG4.d2,
    spreads: Annotated[str, typer.Option("--spreads", help="d2 - d1 values of the spread sweep.")] = ",".join(map(str, _FIG4.spreads)),
    fractions: Annotated[str, typer.Option("--fractions", help="Shares of d1-jobs of the mix sweep.")] = ",".join(f"{f:g}" for f in _FIG4.fractions),
    algorithms: Annotated[str, typer.Option("--algorithms")] = ",".join(_FIG4.algorithms),
    optimum_time_limit: Annotated[
        float | None, typer.Option("--optimum-time-limit", help="Also solve each instance's MILP optimum, this many seconds each (small instances only).")
    ] = None,
    processes: Annotated[int, typer.Option("--processes", "-j", help="Instances solved at once (--jobs is the instances' job count).")] = 1,
    backend: Annotated[str, typer.Option("--backend", help="local (this process or a process pool) or ray.")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster address (with --backend ray; default: start a local Ray).")] = None,
    results: Annotated[
        Path | None,
        typer.Option("--results", help="Results store to keep each instance's result in (and resume from: a rerun runs only what it does not hold); default: keep nothing.", callback=output_dir),
    ] = None,
) -> None:
    """Draw the report's Figure 4: active nodes vs the spread d2 - d1, and vs the share of d1-type jobs."""
    from schedlab.cliutil import usable_jobs
    from schedlab.edge.compare import parse_algorithms
    from schedlab.edge.figures import SweepSpec
    from schedlab.edge.figures import figure4 as run_figure4
    from schedlab.edge.generate import parse_float_list, parse_int_list
    from schedlab.sweeps.runner import check_backend

    names = parse_algorithms(algorithms)
    if "milp" in names:
        raise InputError("--algorithms", "milp is not available in sweeps")
    if processes < 1:
        raise InputError("--processes", f"must be >= 1, got {processes}")
    if backend != "ray":
        usable_jobs(processes, "--processes")  # at most 4 per CPU
    check_backend(backend, processes, address)
    spec = SweepSpec(
        jobs=jobs,
        chunks=chunks,
        chunks_per_job=chunks_per_job,
        popularity=popularity,
        chunks_per_node=chunks_per_node,
        vms_per_node=vms_per_node,
        d1=d1,
        d2=d2,
        spreads=tuple(parse_int_list(spreads, "--spreads")),
        fractions=tuple(parse_float_list(fractions, "--fractions")),
        seeds=seeds,
        algorithms=tuple(names),
        optimum_time_limit=optimum_time_limit,
    )
    summary = run_figure4(spec, out_dir, store=results, jobs=processes, backend=backend, address=address)
    for sweep in ("spread", "mix"):
        t = Table(title=f"{sweep}: mean active nodes", title_justify="left")
        t.add_column("x")
        names_all = list(summary[sweep])
        for name in names_all:
            t.add_column(name, justify="right")
        xs = list(next(iter(summary[sweep].values())))
        for x in xs:
            t.add_row(x, *("-" if summary[sweep][n][x] is None else f"{summary[sweep][n][x]:.1f}" for n in names_all))
        out.print(t)
    err.print(f"wrote {', '.join(summary['files'])} and figure4.json to {out_dir}")
