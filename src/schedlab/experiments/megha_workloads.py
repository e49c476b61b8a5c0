"""The Megha paper's workloads from the raw public traces, and the built-in specs run on them.

Megha paper (Thiyyakat et al.), Section V: three samples, ``google_19``
(4,550 tasks of Google's ClusterData 2019), ``alibaba`` (8,000 tasks of
Alibaba's cluster-trace-v2018) and ``cloudera`` (10,173 tasks of a SWIM
Cloudera workload, Chen et al.), with their resource requests, simulated on
workers of 64 cores and 16 GB; ``google_19`` and ``alibaba`` get placement
constraints synthesised after Sharma et al. (the papers' constraint model).

:func:`build_samples` makes them from raw traces a user has
(``schedlab trace megha-samples``): each raw trace is converted
(:mod:`schedlab.workload.convert`, requests scaled to the 64-core, 16 GB
worker) and the sample cut from it (:func:`~schedlab.workload.sample.sample_trace`).
The paper does not say how its samples were cut. Ours: whole jobs from the
trace's start (``first``; a contiguous stretch keeps the trace's arrival
process and load, which a random draw of jobs would thin out), up to the
first job that brings the count to the paper's number of tasks, arrivals
rebased to 0; ``--start`` moves the stretch later in the trace.

:func:`with_paper_traces` points a built-in spec at them: a workload that
names the sample it stands in for (``paper_trace`` in the spec) runs that
sample instead of the stand-in (the spec's data centers unchanged: the
Megha-only specs already run multi-resource workers, and Sparrow runs one
task per worker), and workloads that stand in for nothing of the paper's are
left out (their figures have no paper counterpart). ``schedlab reproduce NAME --paper-traces
DIR`` does that, keeping its runs and report apart from the stand-ins'.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from schedlab.atomic import atomic_write
from schedlab.errors import InputError

# name -> (raw format, the paper's task count)
PAPER_SAMPLES: dict[str, tuple[str, int]] = {"google_19": ("google2019", 4550), "alibaba": ("alibaba2018", 8000), "cloudera": ("swim", 10173)}
MANIFEST = "samples.json"
QUICK_JOBS = 50  # a quick run's jobs of a sample, when its stand-in is generated


@dataclass
class Sample:
    name: str
    source: str  # raw format
    jobs: int
    tasks: int
    tasks_converted: int

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "jobs": self.jobs, "tasks": self.tasks, "tasks_converted": self.tasks_converted}


def build_samples(
    raw: dict[str, list[str | os.PathLike]],
    out: str | os.PathLike,
    *,
    start: float = 0.0,
    sizes: dict[str, int] | None = None,
    skip_bad: bool = False,
) -> list[Sample]:
    """Convert each raw trace given (``raw[name]``: its inputs, by sample name) and cut the paper's sample as
    ``out/NAME.parquet`` (the whole conversion kept as ``out/NAME.full.parquet``); ``sizes`` overrides the
    paper's task counts. A manifest ``out/samples.json`` records what was made."""
    from schedlab.workload.convert import convert
    from schedlab.workload.sample import sample_trace

    unknown = sorted(set(raw) - set(PAPER_SAMPLES))
    if unknown:
        raise InputError("samples", f"unknown sample(s) {', '.join(unknown)} (the paper's: {', '.join(PAPER_SAMPLES)})")
    if not raw:
        raise InputError("samples", f"give at least one raw trace ({', '.join(f'--{PAPER_SAMPLES[n][0]}' for n in PAPER_SAMPLES)})")
    if not start >= 0:
        raise InputError("--start", f"must be >= 0, got {start}")
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    made = []
    for name, inputs in raw.items():
        fmt, n = PAPER_SAMPLES[name]
        n = (sizes or {}).get(name, n)
        full = root / f"{name}.full.parquet"
        report = convert(fmt, inputs, full, skip_bad=skip_bad)
        window = (start, float("inf")) if start > 0 else None
        s = sample_trace(full, root / f"{name}.parquet", tasks=n, first=True, rebase=True, window=window)
        made.append(Sample(name, fmt, s.jobs, s.tasks, report.tasks))
    manifest = {"samples": [m.as_dict() for m in made], "start": start}
    atomic_write(root / MANIFEST, lambda tmp: Path(tmp).write_text(json.dumps(manifest, indent=2)))
    return made


def with_paper_traces(ls: Any, folder: str | os.PathLike, *, quick: bool = False) -> Any:
    """The loaded spec ``ls`` run on the paper's samples in ``folder`` (see the module docstring)."""
    root = Path(folder)
    kept = []
    seen = set()
    for w in ls.spec.workloads:
        name = w.paper_trace
        if name is None or name in seen:
            continue
        seen.add(name)
        path = root / f"{name}.parquet"
        if not path.is_file():
            raise InputError(str(path), f"no {name} sample here: make it with `schedlab trace megha-samples --{PAPER_SAMPLES[name][0]} RAW --out {root}`")
        # the stand-in's cut (max_jobs) sized the stand-in, not the paper's sample; a quick run keeps a few jobs
        kept.append(w.model_copy(update={"trace": str(path), "generate": None, "max_jobs": (w.max_jobs or QUICK_JOBS) if quick else None, "name": w.name or name}))
    if not kept:
        raise InputError(ls.spec.name, "stands in for none of the Megha paper's samples (no workload names a paper_trace)")
    spec = ls.spec.model_copy(
        update={
            "name": f"{ls.spec.name}-paper",
            "workloads": kept,
            "description": f"**On the Megha paper's samples** ({root}) instead of the stand-ins below.\n\n{ls.spec.description}",
        }
    )
    # the results folder keeps the spec that ran: this one, not the stand-ins' text
    text = yaml.safe_dump(spec.model_dump(mode="json", exclude_none=True, exclude_defaults=True), sort_keys=False)
    return type(ls)(**{**vars(ls), "spec": spec, "text": text})
