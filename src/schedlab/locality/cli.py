"""``schedlab locality``: solve, compare, sweep, gap and generate for DynDL instances (thin: parse, call, print).

An instance is a JSON file (format in :mod:`schedlab.locality.instances`), the
bundled name ``table2``, or — when no file is given — generated with the
paper's generator from ``--tasks --servers --cores --alpha --beta --theta
--replicas --seed``.
"""

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from schedlab.cliutil import output_dir, output_file, parse_key_values
from schedlab.errors import InputError

app = typer.Typer(
    help="DynDL data-locality scheduling with dynamic transfer costs (Jin et al. 2018): solve, compare, sweep.",
    no_args_is_help=True,
)
out = Console()
err = Console(stderr=True)

InstanceArg = Annotated[str | None, typer.Argument(help="Instance JSON file or 'table2'; omit to generate one with the options below.")]
TasksOpt = Annotated[int, typer.Option("--tasks", help="|T| for a generated instance.")]
ServersOpt = Annotated[int, typer.Option("--servers", help="|S| for a generated instance.")]
CoresOpt = Annotated[int, typer.Option("--cores", help="core_num (cores per server) for a generated instance.")]
AlphaOpt = Annotated[float, typer.Option("--alpha", help="Load skewness factor alpha.")]
BetaOpt = Annotated[float, typer.Option("--beta", help="Range of initial loads beta.")]
ThetaOpt = Annotated[float, typer.Option("--theta", help="Network factor theta: g(n) = 1 + theta * min(n, core_num).")]
ReplicasOpt = Annotated[int, typer.Option("--replicas", help="Replicas per task (distinct servers).")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the generated instance and of the online algorithms' random choices.")]
ParamOpt = Annotated[list[str] | None, typer.Option("--param", "-p", help="Algorithm parameter KEY=VALUE (repeatable), e.g. delay_threshold=1.")]
ResultsOpt = Annotated[
    Path | None,
    typer.Option(
        "--results",
        help="Results store to keep each point's runs in (and resume from: a rerun runs only what it does not hold); default: keep nothing.",
        callback=output_dir,
    ),
]


def _instance(path: str | None, tasks: int, servers: int, cores: int, alpha: float, beta: float, theta: float, replicas: int, seed: int):
    from schedlab.locality.instances import generate, load_instance

    if seed < 0:
        raise InputError("--seed", f"must be >= 0, got {seed}")
    if path is not None:
        return load_instance(path)
    return generate(tasks=tasks, servers=servers, core_num=cores, alpha=alpha, beta=beta, theta=theta, replicas=replicas, seed=seed)


def _fmt(x: float) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


@app.command()
def solve(
    instance: InstanceArg = None,
    algorithm: Annotated[str, typer.Option("--algorithm", "-a", help="Algorithm (see `schedlab locality algorithms`).")] = "dyndloff",
    param: ParamOpt = None,
    tasks: TasksOpt = 100,
    servers: ServersOpt = 50,
    cores: CoresOpt = 40,
    alpha: AlphaOpt = 0.0,
    beta: BetaOpt = 100.0,
    theta: ThetaOpt = 1.0,
    replicas: ReplicasOpt = 3,
    seed: SeedOpt = 0,
    out_path: Annotated[Path | None, typer.Option("--out", "-o", help="Write the result (with the assignment) as JSON here.", callback=output_file)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    show: Annotated[bool, typer.Option("--show-assignment", help="Print every task's core (small instances).")] = False,
) -> None:
    """Run one algorithm on one instance; the evaluator re-checks its makespan."""
    from schedlab.locality.algorithms import ALGORITHMS, label, run_algorithm
    from schedlab.locality.model import evaluate

    params = ALGORITHMS.parse_params(algorithm, parse_key_values(param))
    inst = _instance(instance, tasks, servers, cores, alpha, beta, theta, replicas, seed)
    r = run_algorithm(algorithm, inst, seed, params)
    ev = evaluate(inst, r.assignment)
    doc = {
        "instance": inst.name,
        **r.summary(),
        "evaluated_makespan": ev.makespan,
        "details": r.details,
        "assignment": [
            {
                "task": inst.task_name(t),
                "server": inst.server_name(int(inst.core_server[p])),
                "core": inst.core_name(int(p)),
                "local": bool(ev.task_local[t]),
                "cost": float(ev.task_cost[t]),
            }
            for t, p in enumerate(r.assignment.task_core)
        ],
    }
    if out_path is not None:
        from schedlab.metrics.export import write_json

        write_json(out_path, doc)
    if as_json:
        print(json.dumps({k: v for k, v in doc.items() if k != "assignment" or show}, indent=2, default=float))
        return
    t = Table(title=f"{label(algorithm)} on {inst.name}", title_justify="left", show_header=False)
    t.add_row("makespan", _fmt(r.makespan))
    t.add_row("makespan (evaluator)", _fmt(ev.makespan))
    t.add_row("remote tasks", f"{r.remote_tasks} of {inst.n_tasks}")
    t.add_row("seconds", f"{r.seconds:.4f}")
    for k, v in r.details.items():
        if not isinstance(v, list | dict):
            t.add_row(k.replace("_", " "), _fmt(v))
    out.print(t)
    if show:
        a = Table("task", "core", "local", "cost")
        for row in doc["assignment"]:
            a.add_row(row["task"], row["core"], "yes" if row["local"] else "no", _fmt(row["cost"]))
        out.print(a)


# The worked example's online rows depend on which remote task a free core takes; the paper's walk-through
# takes the first (Example 1: Hadoop 3.5), our default draws one at random (seed 0: Hadoop 3.0).
TABLE2_PICK = ("Online algorithms take a random remote task (remote_pick=random, the run's seed); the paper's Example 1 "
               "takes the first one: `schedlab locality solve table2 -a hadoop -p remote_pick=first` gives its 3.5.")


@app.command()
def compare(
    instance: InstanceArg = None,
    algorithms: Annotated[str | None, typer.Option("--algorithms", "-a", help="Comma-separated algorithms (default: the paper's eight; add milp for small instances).")] = None,
    tasks: TasksOpt = 100,
    servers: ServersOpt = 50,
    cores: CoresOpt = 40,
    alpha: AlphaOpt = 0.0,
    beta: BetaOpt = 100.0,
    theta: ThetaOpt = 1.0,
    replicas: ReplicasOpt = 3,
    seed: SeedOpt = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print per algorithm makespan, remote_tasks and seconds as JSON.")] = False,
) -> None:
    """Run several algorithms on the same instance and compare makespan, remote tasks and running time."""
    from schedlab.locality.algorithms import label, parse_algorithms, run_algorithm

    names = parse_algorithms(algorithms)
    inst = _instance(instance, tasks, servers, cores, alpha, beta, theta, replicas, seed)
    results = {n: run_algorithm(n, inst, seed) for n in names}
    if as_json:
        doc = {
            "instance": inst.name,
            "tasks": inst.n_tasks,
            "servers": inst.n_servers,
            "cores": inst.n_cores,
            "algorithms": {n: {"makespan": r.makespan, "remote_tasks": r.remote_tasks, "seconds": r.seconds} for n, r in results.items()},
        }
        print(json.dumps(doc, indent=2))
        return
    t = Table(title=f"{inst.name}: {inst.n_tasks} tasks, {inst.n_servers} servers, {inst.n_cores} cores", title_justify="left",
              caption=TABLE2_PICK if inst.name == "table2" else None, caption_justify="left")
    for col in ("algorithm", "makespan", "remote tasks", "seconds"):
        t.add_column(col, justify="left" if col == "algorithm" else "right")
    for n, r in results.items():
        t.add_row(label(n), f"{r.makespan:.4g}", str(r.remote_tasks), f"{r.seconds:.4f}")
    out.print(t)


@app.command()
def sweep(
    figure: Annotated[str, typer.Option("--figure", "-f", help="Figure to reproduce: 5, 6, 7, 8, 9 or all.")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for figN.csv/.json/.png/.md (and summary.md).", callback=output_dir)],
    seeds: Annotated[int, typer.Option("--seeds", help="Instances per point (Figure 9 timing panels use one).")] = 3,
    quick: Annotated[bool, typer.Option("--quick", help="Small instances and one seed: seconds, for smoke tests.")] = False,
    results: ResultsOpt = None,
) -> None:
    """Reproduce the trends of the paper's Figures 5-9 (CSV, JSON, PNG and a Markdown summary).

    The points run one after another (Figure 9 measures running times); with
    ``--results`` they are kept there, and a rerun only runs the missing ones.
    """
    from schedlab.locality.experiments import FIGURES, reproduce_figures

    if figure == "all":
        figs = list(FIGURES)
    else:
        try:
            figs = [int(figure)]
        except ValueError:
            raise InputError("--figure", f"expected 5, 6, 7, 8, 9 or all, got {figure!r}") from None
        if figs[0] not in FIGURES:
            raise InputError("--figure", f"unknown figure {figs[0]} (choose from 5, 6, 7, 8, 9 or all)")
    reproduce_figures(out_dir, tuple(figs), seeds=seeds, quick=quick, store=results, progress=lambda line: err.print(line, highlight=False))


@app.command()
def gap(
    instances: Annotated[int, typer.Option("--instances", "-n", help="Random small instances to solve exactly.")] = 30,
    seed: SeedOpt = 0,
    time_limit: Annotated[float, typer.Option("--time-limit", help="MILP time limit per instance, seconds.")] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (with every instance).")] = False,
    out_path: Annotated[Path | None, typer.Option("--out", "-o", help="Also write the JSON (with every instance) here.", callback=output_file)] = None,
    results: ResultsOpt = None,
) -> None:
    """Optimality gaps against the exact MILP on small random instances (kept in --results, if given, and resumed from there)."""
    from schedlab.locality.algorithms import label
    from schedlab.locality.experiments import milp_gaps

    if time_limit <= 0:
        raise InputError("--time-limit", f"must be > 0, got {time_limit}")
    if seed < 0:
        raise InputError("--seed", f"must be >= 0, got {seed}")
    res = milp_gaps(instances, seed, time_limit=time_limit, store=results)
    if out_path is not None:
        from schedlab.metrics.export import write_json

        write_json(out_path, res)
    if as_json:
        print(json.dumps(res, indent=2))
        return
    t = Table("algorithm", "mean gap %", "max gap %", "optimal", title=f"gap to the MILP optimum on {instances} small instances (seed {seed})", title_justify="left")
    for a, g in res["gaps"].items():
        t.add_row(label(a), f"{g['mean_gap_percent']:.2f}", f"{g['max_gap_percent']:.2f}", f"{g['optimal']}/{g['instances']}")
    out.print(t)


@app.command()
def generate(
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Instance JSON file to write.", callback=output_file)],
    tasks: TasksOpt = 100,
    servers: ServersOpt = 50,
    cores: CoresOpt = 40,
    alpha: AlphaOpt = 0.0,
    beta: BetaOpt = 100.0,
    theta: ThetaOpt = 1.0,
    replicas: ReplicasOpt = 3,
    seed: SeedOpt = 0,
) -> None:
    """Write an instance from the paper's generator (Section 6.1.1) as JSON."""
    from schedlab.locality.instances import instance_to_dict
    from schedlab.metrics.export import write_json

    inst = _instance(None, tasks, servers, cores, alpha, beta, theta, replicas, seed)
    write_json(out_path, instance_to_dict(inst))
    err.print(f"wrote {inst.n_tasks} tasks on {inst.n_servers} servers x {cores} cores to {out_path}")


@app.command("algorithms")
def list_algorithms() -> None:
    """List the algorithms with their parameters."""
    from schedlab.locality.algorithms import ALGORITHMS

    t = Table("name", "paper", "kind", "parameters (defaults)", "what it is")
    shared: dict[tuple, list[str]] = {}  # one row per parameter, listing the algorithms that take it
    for algo in ALGORITHMS.entries():
        t.add_row(algo.name, algo.label, algo.kind, ", ".join(f"{q.name}={q.default}" for q in algo.parameters()), algo.summary)
        for q in algo.parameters():
            shared.setdefault((q.name, q.type, str(q.default), q.description), []).append(algo.name)
    out.print(t)
    pt = Table(title="parameters (set with --param KEY=VALUE)", title_justify="left")
    pt.add_column("parameter", no_wrap=True, min_width=max((len(key[0]) for key in shared), default=9))
    for col in ("type", "default", "algorithms", "meaning"):
        pt.add_column(col)
    for (name, typ, default, description), names in shared.items():
        pt.add_row(name, typ, default, ", ".join(names), description)
    out.print(pt)
