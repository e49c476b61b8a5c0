"""``schedlab reproduce megha-twin``: the simulator as a twin of a real Megha cluster, its costs measured there.

The calibrated-twin issue's loop, closed once: start a real cluster of processes
on this machine (every GM, LM and worker host its own process, HTTP + RabbitMQ),
measure its processing costs with ``schedlab calibrate`` (:mod:`~.calibrate`),
then run workloads of different job sizes and loads both for real and through
the simulator with the measured profile and one-way delay, on the same data
center, and report how well the simulation predicts the real cluster: the
allocation-time p50 and p90 (target: within 25 %) and each of the four
allocation-time components' share of the mean (target: within 10 points).

Choices where the issue is silent:

* **the data center**: ``gms`` GMs × ``lms`` LMs over ``workers`` slot workers
  without constraints (the same partitions for both: the cluster file is
  written from the simulator's topology), one worker host per LM;
* **the workloads**: sleep tasks (a real task holds its worker for exactly its
  duration, as a simulated one: no CPU interference between tasks, which the
  prototype reproduction measures instead), arriving at a steady rate well
  below saturation — single tasks, jobs of 10, and jobs of 50;
* **the calibration** at 100 tasks/s, amid the workloads' loads: the
  messages' transit grows with load (the senders' event loops queue them),
  so a profile measured at one load predicts others less well;
* **the network**: each simulated message's delay drawn from the measured
  transit's lognormal (median and p90: ``--latency-spread``), in order per
  receiver — with the median alone on every message the simulated p90 was
  22–55 % below the real one; each simulated job's submission delay (client
  to GM through the broker) drawn from its own measured lognormal;
* **the comparison**: p50 and p90 relative errors, ``(simulated − real) / real``,
  of the tasks of ``sim_seeds`` simulated runs pooled (a distribution over
  seeds, so over the phases of heartbeats and arrivals) against the median of
  ``repeats`` real runs of each workload (interleaved); shares as percentages
  of the sum of the four components' means, marked alike on both sides (the
  services mark their processing from when an input reached the process:
  ``MeghaShared.handling_since``). The real
  runs' own spread — how far each lies from their median — is reported beside
  it: on this 2-core machine one real run's p90 differed from another's by up
  to 40× (442 ms against 10.7 ms for jobs of 50: tasks waiting for their GM's
  view of the other GM's workers), so it is the floor any prediction meets.

* **on the testbed** (``schedlab reproduce megha-twin-testbed``): the same,
  with every component and the broker on an emulated host of its own (a network
  namespace, :mod:`~.testbed`) and every link through the testbed's relay with
  its default one-way delay (0.5 ms): the calibration then measures a transit
  that includes a real link's delay, and the prediction must carry it. The
  hosts still share this machine's two cores.

The real side is a measurement: it varies from run to run and with whatever
else the machine does; the report says when it was taken.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from schedlab import simulate
from schedlab.cluster.model import Cluster, split_federated
from schedlab.experiments.catalogue import Options
from schedlab.experiments.plots import cdf
from schedlab.metrics.export import write_json
from schedlab.metrics.recorder import COMPONENTS
from schedlab.schedulers.megha.costs import Quantiles
from schedlab.services import supervise
from schedlab.services.calibrate import calibrate, step_histograms, write_profile
from schedlab.services.client import replay
from schedlab.services.clusterfile import amqp_url_default, parse_cluster, render_cluster
from schedlab.services.remote import RemoteCluster, fetch_statuses
from schedlab.services.stepcosts import STEPS, quantile, subtract
from schedlab.services.supervise import check_broker, free_port_range
from schedlab.workload.trace import TraceJob

P_TARGET = 0.25  # allocation-time p50 and p90 within 25 %
SHARE_TARGET = 10.0  # each component's share within 10 points


@dataclass(frozen=True)
class Workload:
    """Jobs of ``per_job`` sleep tasks of ``duration`` s, arriving so that ``rate`` tasks/s are offered."""

    name: str
    jobs: int
    per_job: int
    rate: float
    duration: float

    def trace(self) -> list[TraceJob]:
        gap = self.per_job / self.rate
        return [TraceJob(round(i * gap, 6), self.duration, [self.duration] * self.per_job) for i in range(self.jobs)]


@dataclass(frozen=True)
class Setup:
    gms: int = 2
    lms: int = 2
    workers: int = 64
    heartbeat: float = 1.0
    seed: int = 1
    calibration_jobs: int = 200
    calibration_rate: float = 100.0
    repeats: int = 3  # real runs of each workload
    sim_seeds: int = 5  # simulated runs of each workload (seeds seed, seed + 1, …): the prediction is their pool
    netns: bool = False  # every component and the broker on an emulated host of its own (the testbed)
    workloads: tuple[Workload, ...] = (
        Workload("single tasks, 40/s", 400, 1, 40.0, 0.2),
        Workload("jobs of 10, 100 tasks/s", 100, 10, 100.0, 0.2),
        Workload("jobs of 50, 100 tasks/s", 24, 50, 100.0, 0.2),
    )


QUICK = Setup(workers=32, calibration_jobs=80, calibration_rate=50.0, repeats=1, sim_seeds=3,
              workloads=(Workload("single tasks, 20/s", 60, 1, 20.0, 0.2), Workload("jobs of 10, 50 tasks/s", 20, 10, 50.0, 0.2)))


def data_center(setup: Setup) -> Cluster:
    return Cluster.slots([0] * setup.workers).with_topology(split_federated(setup.workers, setup.lms, setup.gms))


def params(setup: Setup) -> dict[str, Any]:
    return {"gms": setup.gms, "lms": setup.lms, "heartbeat": setup.heartbeat, "worker_choice": "random"}


def shares(summary: dict[str, Any], added: dict[str, float] | None = None) -> dict[str, float]:
    """Each allocation-time component's share of their means' sum, in percent (``added``: seconds added to a
    component's mean first)."""
    comp = summary["allocation_components"]
    means = {k: float(comp[k]["mean"] or 0.0) + (added or {}).get(k, 0.0) for k in COMPONENTS}
    total = sum(means.values())
    return {k: 100.0 * v / total if total > 0 else 0.0 for k, v in means.items()}


async def _real(setup: Setup, folder: Path) -> tuple[Any, dict[str, Any], list[list[Any]]]:
    """Start the cluster, calibrate it, replay every workload ``repeats`` times; its profile, what calibration
    measured (with ``steps_by_workload``: each workload's own step costs over its real runs, per step p50 and p90 per
    item), the runs (per workload)."""
    megha = data_center(setup)
    megha.extra["layout"] = "megha"
    tmp = tempfile.TemporaryDirectory(prefix="megha-twin-")
    path = Path(tmp.name) / "cluster.yaml"
    if setup.netns:  # the testbed's hosts, its broker among them (started by supervise.up)
        text = render_cluster(name=f"twin{int(time.time() * 1000) % 10**7}", heartbeat=setup.heartbeat, seed=setup.seed,
                              from_cluster=megha, netns=True)
    else:
        text = render_cluster(name=f"twin{int(time.time() * 1000) % 10**9}", base_port=free_port_range(setup.gms + 2 * setup.lms),
                              broker=amqp_url_default(), heartbeat=setup.heartbeat, seed=setup.seed, from_cluster=megha)
    path.write_text(text)
    loaded = parse_cluster(path.read_text(), str(path))
    if not setup.netns:
        await check_broker(loaded)
    try:
        await supervise.up(loaded, path, timeout=120)
        profile, measured = await calibrate(path, jobs=setup.calibration_jobs, rate=setup.calibration_rate, seed=setup.seed)
        write_profile(profile, folder / "costs.yaml")
        runs: list[list[Any]] = [[] for _ in setup.workloads]
        seen: list[dict[str, dict[int, int]]] = [{} for _ in setup.workloads]  # each workload's step histograms
        async with RemoteCluster(loaded) as rc:
            for _ in range(setup.repeats):  # interleaved: a slow spell of the machine hits every workload alike
                for k, w in enumerate(setup.workloads):
                    before = step_histograms(await fetch_statuses(loaded))
                    runs[k].append(await replay(rc, w.trace(), constraints=False, timeout=120, trace_label=w.name))
                    for step, hist in subtract(step_histograms(await fetch_statuses(loaded)), before).items():
                        acc = seen[k].setdefault(step, {})
                        for b, n in hist.items():
                            acc[b] = acc.get(b, 0) + n
        measured["steps_by_workload"] = {w.name: {s: {"inputs": sum(h.values()), "p50": quantile(h, 0.5), "p90": quantile(h, 0.9)}
                                                  for s, h in seen[k].items() if s in STEPS}
                                         for k, w in enumerate(setup.workloads)}
        return profile, measured, runs
    finally:
        await supervise.down(loaded, path)
        tmp.cleanup()


def run(out: str | Path | None = None, *, quick: bool = False, netns: bool = False) -> Path:
    """Calibrate a real cluster, run the workloads for real and simulated; write the report; return its path.
    ``netns``: the cluster on the emulated testbed (root needed)."""
    setup = replace(QUICK if quick else Setup(), netns=netns)
    name = "megha-twin-testbed" if netns else "megha-twin"
    folder = Path(out) if out is not None else Path("results") / (f"{name}-quick" if quick else name)
    if netns:
        from schedlab.services.testbed.netns import require_privileges

        require_privileges()
    folder.mkdir(parents=True, exist_ok=True)
    profile, measured, reals = asyncio.run(_real(setup, folder))
    own = {w.name: predictions(setup, w, p) for w in setup.workloads
           if (p := own_profile(profile, measured.get("steps_by_workload", {}).get(w.name, {}))) is not None}
    return write_report(folder, setup, profile, measured, reals, [predictions(setup, w, profile) for w in setup.workloads], own)


def own_profile(profile: Any, steps: dict[str, dict[str, float]]) -> Any:
    """``profile`` with a workload's own measured step costs (``steps_by_workload``), or None if one is missing: the
    check of whether a share's miss is the steps' cost per item, which falls as inputs grow (a fixed part per input
    spread over more items) where the calibration's mix of job sizes gives one distribution for all."""
    if not all(s in steps and steps[s]["p50"] > 0 for s in STEPS):
        return None
    return profile.model_copy(update={"steps": {s: Quantiles(p50=steps[s]["p50"], p90=max(steps[s]["p50"], steps[s]["p90"])) for s in STEPS}})


def predict(setup: Setup, w: Workload, profile: Any, seed: int | None = None) -> Any:
    """The simulated run of workload ``w`` with the calibrated profile: its steps' costs, and each message's delay
    drawn from the measured transit (median and spread)."""
    return simulate("megha", w.trace(), cluster=data_center(setup), params={**params(setup), **profile.params()},
                    seed=setup.seed if seed is None else seed, constraints=False, latency=profile.latency(),
                    latency_spread=profile.latency_spread(), latency_per_task=profile.latency_per_task(), trace_label=w.name)


def predictions(setup: Setup, w: Workload, profile: Any) -> list[Any]:
    """:func:`predict` with ``sim_seeds`` seeds: the same workload at other phases of the heartbeats and other
    draws of every delay. A workload whose tasks sometimes wait a heartbeat for a view (jobs larger than a GM's
    partitions) is bimodal from run to run, real or simulated; one seeded run predicts one mode."""
    return [predict(setup, w, profile, setup.seed + k) for k in range(setup.sim_seeds)]


def submission_draws(sim: Any, profile: Any, seed: int) -> np.ndarray:
    """Each simulated task's submission delay (client to GM through the broker, which the simulator lacks): one draw
    per job from the profile's lognormal (its median alone if it is a constant), the same for the job's tasks."""
    placed = sim.tasks.loc[sim.tasks.allocation_time.notna(), "job"].to_numpy()
    jobs, index, sizes = np.unique(placed, return_inverse=True, return_counts=True)
    q = profile.submission_delay
    if q is None or isinstance(q, float) or q.sigma == 0:
        return np.full(len(placed), profile.submission())
    # a job's message grows with its tasks (the profile's per_task, where calibrate fitted one)
    draws = np.random.default_rng(seed).lognormal(0.0, q.sigma, len(jobs)) * (q.p50 + q.per_task * sizes)
    return draws[index]


def _own_steps_section(profile: Any, step_rows: list[str]) -> str:
    if not step_rows:
        return ""
    return f"""
### Each workload's own step costs (its real runs), and the shares simulated with them

An input has work that does not grow with its items, so its cost per item falls as inputs grow; the calibrated
profile fits that over the calibration's mix of jobs of 1–20 tasks (above). The check: each workload's own cost per
item over its real runs (µs, p50 / p90, the input's whole cost divided by its items), and the worst share gap
simulated with the calibrated profile and with the workload's own per-item costs instead (no part per input).

| workload | gm_match | lm_verify | worst share gap, calibrated (points) | with its own steps (points) |
| --- | ---: | ---: | ---: | ---: |
{chr(10).join(step_rows)}
"""


def _err(sim: float, real: float) -> float:
    return (sim - real) / real if real > 0 else float("inf")


def write_report(folder: Path, setup: Setup, profile: Any, measured: dict[str, Any], reals: list[list[Any]],
                 sims: list[list[Any]], own: dict[str, list[Any]] | None = None) -> Path:
    """The report of ``reals`` (per workload, its real runs) against ``sims`` (per workload, its seeded simulated
    runs, :func:`predictions`); ``own``: per workload, the same simulated with its own measured steps
    (:func:`own_profile`), a check of the steps' model; returns its path."""
    rows, share_rows, verdicts, step_rows = [], [], [], []
    by_workload = measured.get("steps_by_workload", {})
    panels: dict[str, dict[str, Any]] = {}
    for w, runs, seeded in zip(setup.workloads, reals, sims, strict=True):
        real = {q: float(np.median([r.summary["allocation_time"][q] for r in runs])) for q in ("p50", "p90")}
        # how far the real runs lie from their own median: the floor of any prediction's error
        noise = {q: max(abs(_err(r.summary["allocation_time"][q], real[q])) for r in runs) for q in ("p50", "p90")}
        # the client-to-GM path through the broker, which the simulator lacks: each simulated task waits it before
        # its GM sees it, which the real GM's accounting counts as framework queuing (arrival to its first mark)
        subs = [submission_draws(sim, profile, setup.seed + k) for k, sim in enumerate(seeded)]
        each = [sim.tasks.allocation_time.dropna().to_numpy() + sub for sim, sub in zip(seeded, subs, strict=True)]
        shifted = np.concatenate(each)  # the prediction: every seed's tasks, pooled
        sa = {"p50": float(np.percentile(shifted, 50)), "p90": float(np.percentile(shifted, 90))}
        p90s = [float(np.percentile(a, 90)) for a in each]
        e50, e90 = _err(sa["p50"], real["p50"]), _err(sa["p90"], real["p90"])
        rs = {k: float(np.median([shares(r.summary)[k] for r in runs])) for k in COMPONENTS}
        per_seed = [shares(sim.summary, {"framework_queuing": float(sub.mean()) if len(sub) else 0.0}) for sim, sub in zip(seeded, subs, strict=True)]
        ss = {k: float(np.mean([s[k] for s in per_seed])) for k in COMPONENTS}
        worst = max(abs(ss[k] - rs[k]) for k in COMPONENTS)
        ok_p = abs(e50) <= P_TARGET and abs(e90) <= P_TARGET
        within_noise = abs(e50) <= max(P_TARGET, noise["p50"]) and abs(e90) <= max(P_TARGET, noise["p90"])
        ok_s = worst <= SHARE_TARGET
        verdicts.append((w.name, ok_p, ok_s, within_noise))
        rows.append(f"| {w.name} | {runs[0].summary['tasks']} | {real['p50'] * 1e3:.2f} | {sa['p50'] * 1e3:.2f} | {e50:+.0%} | "
                    f"{noise['p50']:.0%} | {real['p90'] * 1e3:.2f} | {sa['p90'] * 1e3:.2f} | {e90:+.0%} | {noise['p90']:.0%} | "
                    f"{min(p90s) * 1e3:.2f}–{max(p90s) * 1e3:.2f} | "
                    f"{'yes' if ok_p else 'within the real runs’ spread' if within_noise else 'no'} |")
        share_rows.append(f"| {w.name} | " + " | ".join(f"{rs[k]:.1f} / {ss[k]:.1f}" for k in COMPONENTS)
                          + f" | {worst:.1f} | {'yes' if ok_s else 'no'} |")
        mine = by_workload.get(w.name)
        if mine and own and w.name in own:
            ow = own[w.name]
            subs_o = [submission_draws(sim, profile, setup.seed + k) for k, sim in enumerate(ow)]
            so = [shares(sim.summary, {"framework_queuing": float(sub.mean()) if len(sub) else 0.0}) for sim, sub in zip(ow, subs_o, strict=True)]
            worst_own = max(abs(float(np.mean([s[k] for s in so])) - rs[k]) for k in COMPONENTS)
            step_rows.append(f"| {w.name} | " + " | ".join(
                f"{mine[s]['p50'] * 1e6:.1f} / {mine[s]['p90'] * 1e6:.1f}" if s in mine else "–" for s in ("gm_match", "lm_verify"))
                + f" | {worst:.1f} | {worst_own:.1f} |")
        panels[w.name] = {**{f"real cluster, run {k + 1}": r.tasks.allocation_time.dropna().to_numpy() for k, r in enumerate(runs)},
                          f"simulated (calibrated, {len(seeded)} seeds)": shifted}
        slug = w.name.split(",")[0].replace(" ", "_")
        for k, r in enumerate(runs):
            write_json(folder / f"summary_real_{slug}{'' if k == 0 else f'_run{k + 1}'}.json", r.summary)
        for k, sim in enumerate(seeded):
            write_json(folder / f"summary_sim_{slug}{'' if k == 0 else f'_seed{setup.seed + k}'}.json", sim.summary)
    fig = cdf(panels, "allocation time (s)", title="Megha for real and its calibrated twin")
    fig.savefig(folder / "allocation_cdf.png", dpi=110, bbox_inches="tight")
    steps = "\n".join(f"| {s} | {measured['inputs'].get(s, 0)} | {profile.quantiles(s).per_input * 1e6:.1f} | "
                      f"{profile.quantiles(s).p50 * 1e6:.2f} | {profile.quantiles(s).p90 * 1e6:.2f} |" for s in profile.steps)
    d = profile.one_way_delay
    met_p = sum(1 for _n, ok, _s, _w in verdicts if ok)
    met_s = sum(1 for _n, _p, ok, _w in verdicts if ok)
    noisy = sum(1 for _n, ok, _s, within in verdicts if within and not ok)
    where = ("the emulated testbed: every GM, LM and worker host, and the broker, on a host of its own (a network "
             "namespace), each link through the testbed's relay with 0.5 ms one way; the hosts share this machine's cores"
             if setup.netns else "this machine")
    name = "megha-twin-testbed" if setup.netns else "megha-twin"
    text = f"""# Megha's calibrated twin: the simulator with costs measured on the real cluster

Regenerate with `schedlab reproduce {name}` (about {3 if setup.netns else 2} minutes; `--quick`: about {1 if setup.netns else 0.5:g} min). Taken {time.strftime('%Y-%m-%d %H:%M')}
on this machine; setup `{json.dumps(asdict(setup))}`. The real runs are measurements: they vary from run to run.

A real cluster of {setup.gms} GMs × {setup.lms} LMs over {setup.workers} workers (every GM, LM and worker host its own
process, HTTP + RabbitMQ, {where}), calibrated with `schedlab calibrate` ({setup.calibration_jobs} jobs at
{setup.calibration_rate:g} tasks/s). The measured profile ([costs.yaml](costs.yaml)): a step of items fitted as a
part per input and one per item (an input of n items costs `per input + n × per item` at the median, the whole
drawn from a lognormal with the fit's spread); a message as it is; each delay fitted against the tasks its message
carries (the p50 and p90 of a message carrying none, and what each task adds):

| step | inputs | per input (µs) | per item p50 (µs) | per item p90 (µs) |
| --- | ---: | ---: | ---: | ---: |
{steps}
| one-way delay (the messages' transit, sender's signature to receiver's handler) | | +{d.per_task * 1e6:.1f} a task carried | {d.p50 * 1e6:.1f} | {d.p90 * 1e6:.1f} |
| submission delay (client to GM through the broker) | | +{profile.submission_delay.per_task * 1e6:.1f} a task of the job | {profile.submission_delay.p50 * 1e6:.1f} | {profile.submission_delay.p90 * 1e6:.1f} |

Each workload then ran for real ({setup.repeats} times, interleaved) and through the simulator with that profile
({setup.sim_seeds} seeds, their tasks pooled: `simulate --costs`, the steps' costs, and each message's delay drawn
from the measured transit's lognormal, in order per receiver) on the same partitions, with the same arrivals and
durations; each simulated job has a submission delay drawn from the measured one added (the simulator's jobs arrive
at their GM; a real job crosses the broker first, which the real GM counts as framework queuing, as it counts
everything before its handling of the job begins), and so has the simulated framework queuing.

## Allocation time (ms): the real runs' median, simulated, error (target: p50 and p90 within {P_TARGET:.0%})

"Real spread" is how far the farthest real run lies from the real runs' median: the machine's own noise, which no
prediction can beat. "Sim p90 over seeds" is the lowest and highest p90 of the simulated seeds on their own.

| workload | tasks | real p50 | sim p50 | error | real spread | real p90 | sim p90 | error | real spread | sim p90 over seeds | within target? |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
{chr(10).join(rows)}

## Components' shares of the mean allocation time, % (real / simulated; target: within {SHARE_TARGET:g} points)

Both sides mark the same spans: a GM's framework queuing until its handling of the input that places a task begins
(for a new job, when its message reached the process), its processing until the request leaves; the request's
flight is communication until the LM's handling begins, the LM's processing until its answers leave; the launch's
flight communication again. The simulator marks them with its charged costs, the services with their clocks. The
simulated shares are the mean over its seeds.

| workload | {' | '.join(COMPONENTS)} | worst gap (points) | within target? |
| --- | {' | '.join('---:' for _ in COMPONENTS)} | ---: | --- |
{chr(10).join(share_rows)}
{_own_steps_section(profile, step_rows)}
![allocation-time CDFs, real and simulated](allocation_cdf.png)

**Verdict**: allocation-time quantiles within target on {met_p} of {len(verdicts)} workloads (and within the real runs'
own spread on {noisy} more); components' shares on {met_s} of {len(verdicts)}.
"""
    (folder / "report.md").write_text(text)
    return folder / "report.md"


def reproduce(out: Path, options: Options) -> Path:
    """``schedlab reproduce megha-twin``: :func:`run` with the catalogue's options."""
    return run(out, quick=options.quick)


def reproduce_testbed(out: Path, options: Options) -> Path:
    """``schedlab reproduce megha-twin-testbed``: :func:`run` on the emulated testbed."""
    return run(out, quick=options.quick, netns=True)
