"""``schedlab calibrate``: a live Megha cluster's processing costs, measured, written as the simulator's cost profile.

The calibrated-twin issue's measuring side. The cluster's GMs and LMs measure
the steps the simulator charges (:mod:`~.stepcosts`); this runs a calibration
workload on the cluster, takes every GM's and LM's histograms before and after
(their difference is the workload's), measures the network's one-way delay, and
writes a :class:`~schedlab.schedulers.megha.costs.CostProfile` —
``schedlab simulate --costs`` reads it.

Choices where the issue is silent:

* **the workload**: by default 600 jobs of 1–20 sleep tasks of 50–200 ms
  (drawn with ``--seed``), offered at about half of what a small cluster
  sustains here (``--rate`` tasks/s, 300), so that steps are measured below
  saturation; or any trace (``--trace``, ``--max-jobs``, ``--speedup``);
* **each step** as the median and 90th percentile of its per-item cost over the
  workload's inputs (the profile's lognormal takes two quantiles);
* **the one-way delay** as the median and 90th percentile of the workload's
  messages' **transit** (every node measures it: from the sender's signature
  to the receiver's handler, :mod:`~.stepcosts`) — the simulator's one-way
  delay stands for a message's whole way between two services' handlers.
  Tried first and left as a fallback (no transit measured): half the round
  trip of a request to the nodes' ``/v1/health`` (125 µs here, against a
  transit p50 of 1.1 ms at 20–80 tasks/s: an idle GET skips the sender's
  queue, the signing and a body's handling — with it the twin's allocation
  times were 58–64 % below the real ones, with the transit 14–30 %); before
  that, half the time to open a TCP connection (49 µs);
* **the submission delay**: a job goes from its client to its GM through the
  broker (a confirmed persistent publish, then a delivery), a path the
  simulator does not have (its jobs arrive at their GM); measured by the GMs
  on the workload's own jobs (``submission`` in :mod:`~.stepcosts`: the client's
  signature to the GM's handler, so the GM's consumer and its queue while busy
  are in it), and kept in the profile for the twin (:mod:`~.twin`), which adds
  it to the simulated allocation times. Tried first and left as a fallback
  (GMs that measure no submission): 20 messages one at a time on a queue of
  its own — an idle broker's path, 0.9 ms p50 here against 1.8-1.9 ms for the
  workload's jobs, which left the twin's p50 18-30 % low.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

import yaml

from schedlab.atomic import atomic_write
from schedlab.errors import InputError
from schedlab.schedulers.megha.costs import STEPS, Z90, CostProfile, Quantiles, Step
from schedlab.services.stepcosts import (
    SUBMISSION,
    TRANSIT,
    affine,
    merge,
    merge_fits,
    quantile,
    subtract,
)
from schedlab.workload.trace import TraceJob

DEFAULT_JOBS = 600
DEFAULT_RATE = 300.0  # tasks/s offered
REQUESTS = 20  # round trips timed per endpoint, messages through the broker


def calibration_workload(jobs: int, rate: float, seed: int) -> list[TraceJob]:
    """``jobs`` jobs of 1–20 sleep tasks of 50–200 ms, arriving so that ``rate`` tasks/s are offered on average."""
    rng = random.Random(f"{seed}:calibrate")
    out = []
    t = 0.0
    for _ in range(jobs):
        n = rng.randint(1, 20)
        durations = [round(rng.uniform(0.05, 0.2), 3) for _ in range(n)]
        out.append(TraceJob(round(t, 4), max(durations), durations))
        t += n / rate
    return out


def step_histograms(statuses: list[dict[str, Any]]) -> dict[str, dict[int, int]]:
    """Every node's step-cost histograms (``/v1/status``) added up; a node that did not answer is one error line."""
    down = [f"{s['role']} {s['id']}" for s in statuses if "error" in s]
    if down:
        raise InputError("--cluster", f"{', '.join(down)} did not answer: calibrate a cluster whose every node serves")
    return merge(s.get("step_costs", {}) for s in statuses)


def _quantiles(samples: list[float]) -> Quantiles:
    samples = sorted(samples)
    return Quantiles(p50=statistics.median(samples), p90=samples[min(len(samples) - 1, int(0.9 * len(samples)))])


async def one_way_delay(urls: list[str], requests: int = REQUESTS) -> Quantiles:
    """Half the round trip of an HTTP request to each of ``urls`` (``requests`` each, on a kept-alive connection, to
    the nodes' ``/v1/health``, which does no work): what a message between services takes on the network and the
    HTTP stacks of both ends, without the handling it carries."""
    import aiohttp

    halves = []
    async with aiohttp.ClientSession() as session:
        for url in urls:
            for k in range(requests + 1):
                t0 = time.perf_counter()
                async with session.get(url + "/v1/health") as resp:
                    await resp.read()
                if k:  # the first opens the connection
                    halves.append((time.perf_counter() - t0) / 2)
    return _quantiles(halves)


async def submission_delay(urls: list[str], messages: int = REQUESTS) -> Quantiles:
    """How long a job takes from a client to its GM through the broker: a persistent message's publish (confirmed)
    to its delivery on another connection, on a queue of its own (deleted after)."""
    from schedlab.services.net import AmqpLink, BrokerUnreachable
    from schedlab.services.supervise import safe_url

    queue = f"schedlab.calibrate.{secrets.token_hex(4)}"
    pub, sub = AmqpLink(urls), AmqpLink(urls)
    try:
        await pub.connect()
        await sub.connect()
    except BrokerUnreachable as e:
        await pub.close()
        raise InputError(f"broker {safe_url(e.url)}", e.reason) from None
    got: dict[int, float] = {}
    sent: dict[int, float] = {}
    arrived = asyncio.Event()

    def on_body(body: bytes) -> None:
        got[int(body)] = time.perf_counter()
        arrived.set()

    try:
        await sub.consume(queue, on_body)
        for k in range(messages):  # one at a time: each measures the path alone
            arrived.clear()
            sent[k] = time.perf_counter()
            pub.publish(queue, str(k).encode(), True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), 5.0)
            if k not in got:
                break
    finally:
        await sub.delete_queues([queue])
        await sub.close()
        await pub.close()
    if len(got) < messages:
        raise InputError("--cluster", f"the broker delivered {len(got)} of {messages} calibration messages within 5 s each")
    return _quantiles([got[k] - sent[k] for k in range(messages)])


async def calibrate(path: Path, trace: str | None = None, max_jobs: int | None = None, speedup: float = 1.0,
                    jobs: int = DEFAULT_JOBS, rate: float = DEFAULT_RATE, seed: int = 0) -> tuple[CostProfile, dict[str, Any]]:
    """Run the calibration workload on the cluster of ``path``: its cost profile, and what was measured (counts
    per step, the replay's summary)."""
    from schedlab.services.client import Client
    from schedlab.services.clusterfile import load_cluster
    from schedlab.services.remote import fetch_statuses

    if rate <= 0:
        raise InputError("--rate", f"must be > 0 tasks/s, got {rate}")
    if jobs < 1:
        raise InputError("--jobs", f"must be >= 1, got {jobs}")
    loaded = load_cluster(path)
    statuses = await fetch_statuses(loaded)
    before, fits_before = step_histograms(statuses), merge_fits(s.get("step_costs", {}) for s in statuses)
    workload: Any = trace if trace is not None else calibration_workload(jobs, rate, seed)
    async with Client(path) as c:
        result = await c.replay(workload, max_jobs=max_jobs, speedup=speedup, constraints="auto", timeout="auto",
                                trace_label=trace or f"calibration ({jobs} jobs, {rate:g} tasks/s, seed {seed})")
    statuses = await fetch_statuses(loaded)
    after = step_histograms(statuses)
    observed = subtract(after, before)
    fits = {s: [x - y for x, y in zip(f, fits_before.get(s, [0.0] * 6), strict=True)]
            for s, f in merge_fits(s.get("step_costs", {}) for s in statuses).items()}
    steps: dict[Step, float | Quantiles] = {}
    for step in STEPS:
        hist = observed.get(step)
        if hist:
            steps[step] = Quantiles(p50=quantile(hist, 0.5), p90=quantile(hist, 0.9))
        fitted = affine(fits[step]) if step in fits else None
        if fitted is not None:  # an input's part and each item's (stepcosts), at the median of the fit's lognormal
            per_input, per_item, sigma = _medians(fitted)
            steps[step] = Quantiles(p50=per_item, p90=per_item * math.exp(Z90 * sigma), per_input=per_input)
    transit = observed.get(TRANSIT)
    if transit:  # the messages' own transit over the workload (stepcosts), rather than an idle round trip
        delay = _sized(Quantiles(p50=quantile(transit, 0.5), p90=quantile(transit, 0.9)), fits.get(TRANSIT))
    else:  # services that measure no transit: an idle round trip, half of it (see the module)
        delay = await one_way_delay([g.url for g in loaded.spec.gms] + [lm.urls[0] for lm in loaded.spec.lms])
    jobs_in = observed.get(SUBMISSION)
    if jobs_in:  # the workload's own jobs, client's signature to GM's handler (stepcosts), rather than the idle probe's
        submission = _sized(Quantiles(p50=quantile(jobs_in, 0.5), p90=quantile(jobs_in, 0.9)), fits.get(SUBMISSION))
    else:  # GMs that measure no submission: the idle probe (see the module)
        submission = await submission_delay(loaded.brokers)
    missing = [s for s in STEPS if s not in steps]
    if missing:
        raise InputError("--cluster", f"no {', '.join(missing)} measured: are the cluster's services of this version "
                                      "(a node's status has step_costs) and did the workload reach them?")
    spec = loaded.spec
    profile = CostProfile(source=f"schedlab calibrate on {spec.name}: {len(spec.gms)} GM x {len(spec.lms)} LM, "
                                 f"{len(result.tasks)} tasks",
                          one_way_delay=delay, submission_delay=submission, steps=steps)
    measured = {"inputs": {s: sum(h.values()) for s, h in observed.items()}, "summary": result.summary}
    return profile, measured


def _sized(measured: Quantiles, fit: list[float] | None) -> Quantiles:
    """A delay's quantiles, with its growth per task carried where its fit against the tasks gives one (stepcosts):
    the median and p90 then those of a message carrying none, so that ``p50 + n x per_task`` is one of n tasks."""
    fitted = affine(fit) if fit is not None else None
    if fitted is None:
        return measured
    per_message, per_task, sigma = _medians(fitted)
    return Quantiles(p50=per_message, p90=per_message * math.exp(Z90 * sigma), per_task=per_task)


def _medians(fitted: tuple[float, float, float]) -> tuple[float, float, float]:
    """An affine fit's two parts as medians of its lognormal (the fit is of the mean; a profile gives medians), and
    its sigma."""
    a, b, sigma = fitted
    median = math.exp(-sigma * sigma / 2)
    return a * median, b * median, sigma


def write_profile(profile: CostProfile, out: Path) -> None:
    """The profile as YAML, written whole or not at all (``simulate --costs`` reads it)."""
    data = profile.model_dump(exclude_none=True)
    text = yaml.safe_dump(data, sort_keys=False)
    atomic_write(out, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
