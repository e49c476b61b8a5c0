"""Random CRED instances: jobs whose chunk sets overlap, a few distinct deadlines, and N, B, S.

The report evaluates on hand-made examples and sweeps over two deadline
classes; the CRED paper on Google-trace jobs. Neither fixes a generator, so the
choices here are ours:

* **Chunk sets with overlap.** Chunks have Zipf-like popularity: the chunk of
  popularity rank r (ranks are a random permutation of the ids) is drawn with
  weight (r+1)^(−popularity). Each job draws its size from ``chunks_per_job`` (a
  :class:`~schedlab.workload.distributions.Dist` spec, capped at the number of
  chunks) and that many distinct chunks by weight, so popular chunks are shared
  by many jobs — the overlap that makes a chunk need several slots, and
  replicas. ``popularity=0`` draws uniformly.
* **Every chunk is used** (``cover=True``): a chunk no job drew is added to a
  job chosen uniformly (none holds it), so |C| equals ``chunks`` exactly
  (benchmarks ask for a given number of chunks).
* **Deadline classes.** ``deadlines`` lists the distinct deadlines; ``mix``
  their relative weights (equal by default). Class sizes are exact — job counts
  proportional to the weights, rounded by largest remainder — and the classes
  are dealt to jobs in a random order, so a "ratio of d1- to d2-type jobs" is
  exactly that ratio.
* **N** defaults to one node per task (an ample cloud, so the N limit binds only
  when set).

Randomness comes from named streams of one seed
(:class:`~schedlab.sim.rng.RngStreams`), so an instance is a pure function of
its parameters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.edge.instance import INT_LIMIT, EdgeInstance
from schedlab.errors import InputError
from schedlab.memory import check_fits
from schedlab.sim.rng import RngStreams
from schedlab.workload.distributions import Dist


def parse_int_list(spec: str | list[int] | tuple[int, ...], field: str) -> list[int]:
    if isinstance(spec, list | tuple):
        values = list(spec)
    else:
        try:
            values = [int(x) for x in str(spec).split(",") if x.strip()]
        except ValueError:
            raise InputError(field, f"expected comma-separated integers, got {spec!r}") from None
    if not values:
        raise InputError(field, "needs at least one value")
    return values


def parse_float_list(spec: str, field: str) -> list[float]:
    try:
        values = [float(x) for x in str(spec).split(",") if x.strip()]
    except ValueError:
        raise InputError(field, f"expected comma-separated numbers, got {spec!r}") from None
    if not values or not all(np.isfinite(values)):
        raise InputError(field, f"expected finite numbers, got {spec!r}")
    return values


def parse_weights(spec: str | list[float] | tuple[float, ...], field: str) -> list[float]:
    if isinstance(spec, list | tuple):
        values = [float(x) for x in spec]
    else:
        try:
            values = [float(x) for x in str(spec).split(",") if x.strip()]
        except ValueError:
            raise InputError(field, f"expected comma-separated numbers, got {spec!r}") from None
    if not values or any(not np.isfinite(w) or w < 0 for w in values) or sum(values) <= 0:
        raise InputError(field, f"weights must be finite, >= 0 and not all 0, got {spec!r}")
    return values


def exact_counts(total: int, weights: list[float]) -> np.ndarray:
    """Split ``total`` in proportion to ``weights``, rounding by largest remainder (ties to the first)."""
    w = np.asarray(weights, dtype=float)
    share = total * w / w.sum()
    counts = np.floor(share).astype(np.int64)
    short = total - int(counts.sum())
    order = np.lexsort((np.arange(len(w)), -(share - counts)))
    counts[order[:short]] += 1
    return counts


def generate_instance(
    *,
    jobs: int,
    chunks: int,
    chunks_per_job: str | Dist = "uniform:2,8",
    popularity: float = 0.8,
    deadlines: str | list[int] = "4,8,12",
    mix: str | list[float] | None = None,
    nodes: int | None = None,
    chunks_per_node: int = 8,
    vms_per_node: int = 4,
    seed: int = 0,
    cover: bool = True,
    name: str = "",
) -> EdgeInstance:
    """A random instance; option names double as the error locations (``--jobs`` …)."""
    for opt, v in (("--jobs", jobs), ("--chunks", chunks), ("--chunks-per-node", chunks_per_node), ("--vms-per-node", vms_per_node)):
        if not isinstance(v, int) or v < 1 or v >= INT_LIMIT:
            raise InputError(opt, f"must be an integer in [1, 2**31), got {v!r}")
    if nodes is not None and (nodes < 1 or nodes >= INT_LIMIT):
        raise InputError("--nodes", f"must be in [1, 2**31), got {nodes}")
    if not isinstance(seed, int) or seed < 0:
        raise InputError("--seed", f"must be >= 0, got {seed}")
    check_fits("--jobs", jobs, 200, "jobs")  # a job's chunk set, deadline and bookkeeping: a lower bound
    check_fits("--chunks", chunks, 100, "chunks")
    if not np.isfinite(popularity) or popularity < 0:
        raise InputError("--popularity", f"must be >= 0, got {popularity}")
    size_dist = chunks_per_job if isinstance(chunks_per_job, Dist) else Dist.parse(chunks_per_job, "--chunks-per-job", integer=True)
    classes = parse_int_list(deadlines, "--deadlines")
    if any(d < 1 or d >= INT_LIMIT for d in classes) or len(set(classes)) != len(classes):
        raise InputError("--deadlines", f"deadlines must be distinct integers in [1, 2**31), got {classes}")
    weights = parse_weights(mix, "--mix") if mix is not None else [1.0] * len(classes)
    if len(weights) != len(classes):
        raise InputError("--mix", f"has {len(weights)} weights for {len(classes)} deadlines")
    streams = RngStreams(seed)
    rng_sets = streams.np_rng("edge:chunk-sets")
    rng_deadlines = streams.np_rng("edge:deadlines")

    sizes = np.minimum(size_dist.sample(jobs, rng_sets), chunks)
    rank_of = rng_sets.permutation(chunks)  # chunk id -> popularity rank
    weight = (rank_of + 1.0) ** (-float(popularity))
    weight /= weight.sum()
    sets = [rng_sets.choice(chunks, size=int(k), replace=False, p=weight) for k in sizes]
    if cover:
        used = np.zeros(chunks, dtype=bool)
        for s in sets:
            used[s] = True
        extra: list[list[int]] = [[] for _ in range(jobs)]
        for c in np.flatnonzero(~used).tolist():
            extra[int(rng_sets.integers(jobs))].append(c)  # no job drew c, so any job lacks it
        sets = [np.concatenate([s, np.asarray(e, dtype=np.int64)]) if e else s for s, e in zip(sets, extra, strict=True)]
    counts = exact_counts(jobs, weights)
    job_deadlines = rng_deadlines.permutation(np.repeat(np.asarray(classes, dtype=np.int64), counts))
    params: dict[str, Any] = {
        "jobs": jobs,
        "chunks": chunks,
        "chunks_per_job": str(size_dist),
        "popularity": popularity,
        "deadlines": classes,
        "mix": weights,
        "seed": seed,
        "cover": cover,
    }
    total_tasks = int(sum(len(s) for s in sets))
    return EdgeInstance.from_jobs(
        [(int(d), np.sort(s).tolist()) for d, s in zip(job_deadlines, sets, strict=True)],
        nodes=nodes if nodes is not None else min(max(total_tasks, 1), INT_LIMIT - 1),
        chunks_per_node=chunks_per_node,
        vms_per_node=vms_per_node,
        name=name or f"gen-j{jobs}-c{chunks}-s{seed}",
        generator=params,
    )
