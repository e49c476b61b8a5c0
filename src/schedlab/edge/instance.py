"""CRED instances: jobs with deadlines and chunk sets, and the N nodes of B chunks and S VMs that run them.

The model is Section 1 of the report (and the CRED paper's problem formulation): N
homogeneous nodes, each storing at most B equal-sized chunks and running S VMs;
J jobs all arriving at t = 0, job j needing every chunk of its set C_j
processed once (one unit-time task per chunk, tasks run in parallel) before
its deadline d_j. Time is slotted: slot t is the interval [t, t+1), so a task
in slot t meets deadline d iff t + 1 <= d, i.e. t < d.

Derived views used by every algorithm (:class:`Demand`):

* the distinct deadlines D↑ = d↑_1 < … < d↑_D (the report's "deadline classes");
* ``demand[c, i]`` = F_{c,i}: how many jobs of class i need chunk c — the
  processing time chunk c must receive for class i. The paper's observation that
  a shared chunk must be processed once per job that needs it (Section 2 of the
  report) makes this the whole scheduling requirement: by an exchange argument,
  a placement and slot schedule meet every job's deadline iff, for every chunk c
  and class i, chunk c receives at least Σ_{k<=i} F_{c,k} slots before d↑_i
  (earliest-deadline-first matching of a chunk's slots to its jobs);
* the deadline *intervals* [d↑_{k-1}, d↑_k) (d↑_0 = 0) of lengths L_k.

JSON format (``schedlab-edge-instance``)::

    {"format": "schedlab-edge-instance", "name": "…" (optional),
     "nodes": N, "chunks_per_node": B, "vms_per_node": S,
     "jobs": [{"deadline": 3, "chunks": [0, 4, 7]}, …],
     "generator": {…} (optional: the parameters that made it)}

Chunk ids are non-negative integers (not necessarily contiguous); C is the union
of the jobs' chunk sets. A job's chunks must be distinct (report, assumption 1).
Every structural problem raises :class:`~schedlab.errors.InputError` naming the
file and the JSON path of the field (``inst.json: jobs[3].deadline``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError

INSTANCE_FORMAT = "schedlab-edge-instance"
_TOP_FIELDS = ("format", "name", "nodes", "chunks_per_node", "vms_per_node", "jobs", "generator")
_JOB_FIELDS = ("deadline", "chunks")
INT_LIMIT = 2**31  # every integer in the JSON formats is below this, so int64 arithmetic never overflows


@dataclass(frozen=True, eq=False)
class EdgeInstance:
    """A CRED problem: ``nodes`` (N), ``chunks_per_node`` (B), ``vms_per_node`` (S) and the jobs.

    Jobs are stored in CSR form: job j needs ``job_chunks[job_start[j]:job_start[j+1]]``
    (external chunk ids) by ``deadlines[j]``.
    """

    nodes: int
    chunks_per_node: int
    vms_per_node: int
    deadlines: np.ndarray  # (J,) int64, >= 1
    job_start: np.ndarray  # (J+1,) int64
    job_chunks: np.ndarray  # (sum |C_j|,) int64, external chunk ids
    name: str = ""
    generator: dict[str, Any] = field(default_factory=dict)

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_jobs(
        cls,
        jobs: list[tuple[int, list[int]]],
        *,
        nodes: int,
        chunks_per_node: int,
        vms_per_node: int,
        name: str = "",
        generator: dict[str, Any] | None = None,
        where: str = "instance",
    ) -> EdgeInstance:
        """Build from ``[(deadline, [chunk ids]), …]``, validating like the JSON loader."""
        data = {
            "nodes": nodes,
            "chunks_per_node": chunks_per_node,
            "vms_per_node": vms_per_node,
            "jobs": [{"deadline": d, "chunks": list(cs)} for d, cs in jobs],
            "name": name,
        }
        if generator:
            data["generator"] = generator
        return cls.from_dict(data, where)

    @classmethod
    def from_dict(cls, data: Any, where: str = "instance") -> EdgeInstance:
        if not isinstance(data, dict):
            raise InputError(where, f"expected a JSON object, got {type(data).__name__}")
        for key in data:
            if key not in _TOP_FIELDS:
                raise InputError(f"{where}: {key}", f"unknown field (expected {', '.join(_TOP_FIELDS)})")
        fmt = data.get("format", INSTANCE_FORMAT)
        if fmt != INSTANCE_FORMAT:
            raise InputError(f"{where}: format", f"expected {INSTANCE_FORMAT!r}, got {fmt!r}")
        sizes = {}
        for key in ("nodes", "chunks_per_node", "vms_per_node"):
            if key not in data:
                raise InputError(f"{where}: {key}", "missing")
            sizes[key] = _positive_int(data[key], f"{where}: {key}")
        jobs = data.get("jobs")
        if jobs is None:
            raise InputError(f"{where}: jobs", "missing")
        if not isinstance(jobs, list) or not jobs:
            raise InputError(f"{where}: jobs", "must be a non-empty list of {\"deadline\", \"chunks\"} objects")
        deadlines = np.empty(len(jobs), dtype=np.int64)
        starts = np.zeros(len(jobs) + 1, dtype=np.int64)
        flat: list[int] = []
        for j, job in enumerate(jobs):
            jw = f"{where}: jobs[{j}]"
            if not isinstance(job, dict):
                raise InputError(jw, f"expected an object with deadline and chunks, got {type(job).__name__}")
            for key in job:
                if key not in _JOB_FIELDS:
                    raise InputError(f"{jw}.{key}", f"unknown field (expected {', '.join(_JOB_FIELDS)})")
            if "deadline" not in job:
                raise InputError(f"{jw}.deadline", "missing")
            deadlines[j] = _positive_int(job["deadline"], f"{jw}.deadline")
            chunks = job.get("chunks")
            if chunks is None:
                raise InputError(f"{jw}.chunks", "missing")
            if not isinstance(chunks, list) or not chunks:
                raise InputError(f"{jw}.chunks", "must be a non-empty list of chunk ids")
            seen: set[int] = set()
            for k, c in enumerate(chunks):
                if not isinstance(c, int) or isinstance(c, bool) or not 0 <= c < INT_LIMIT:
                    raise InputError(f"{jw}.chunks[{k}]", f"chunk ids are integers in [0, 2**31), got {c!r}")
                if c in seen:
                    raise InputError(f"{jw}.chunks[{k}]", f"chunk {c} listed twice (a job's chunks are distinct)")
                seen.add(c)
            flat.extend(chunks)
            starts[j + 1] = len(flat)
        name = data.get("name", "")
        if not isinstance(name, str):
            raise InputError(f"{where}: name", "must be a string")
        gen = data.get("generator", {})
        if not isinstance(gen, dict):
            raise InputError(f"{where}: generator", "must be an object")
        return cls(
            nodes=sizes["nodes"],
            chunks_per_node=sizes["chunks_per_node"],
            vms_per_node=sizes["vms_per_node"],
            deadlines=deadlines,
            job_start=starts,
            job_chunks=np.asarray(flat, dtype=np.int64),
            name=name,
            generator=gen,
        )

    # -- I/O -------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": INSTANCE_FORMAT}
        if self.name:
            out["name"] = self.name
        out.update(nodes=self.nodes, chunks_per_node=self.chunks_per_node, vms_per_node=self.vms_per_node)
        out["jobs"] = [{"deadline": int(d), "chunks": cs.tolist()} for d, cs in zip(self.deadlines, self.chunks_of_jobs(), strict=True)]
        if self.generator:
            out["generator"] = self.generator
        return out

    def save(self, path: str | Path) -> Path:
        from schedlab.metrics.export import write_json

        return write_json(path, self.to_dict())

    # -- views -----------------------------------------------------------------------------------
    @property
    def num_jobs(self) -> int:
        return len(self.deadlines)

    def chunks_of_jobs(self) -> list[np.ndarray]:
        return [self.job_chunks[a:b] for a, b in zip(self.job_start[:-1], self.job_start[1:], strict=True)]

    @cached_property
    def chunk_ids(self) -> np.ndarray:
        """The sorted distinct external ids of C = ∪_j C_j; dense chunk index = position here."""
        return np.unique(self.job_chunks)

    @property
    def num_chunks(self) -> int:
        return len(self.chunk_ids)

    @property
    def num_tasks(self) -> int:
        return len(self.job_chunks)

    @cached_property
    def demand(self) -> Demand:
        return Demand.of(self)

    def with_deadlines(self, deadlines: np.ndarray) -> EdgeInstance:
        """The same instance with other deadlines (e.g. CRED-S's all-equal view)."""
        return EdgeInstance(
            nodes=self.nodes,
            chunks_per_node=self.chunks_per_node,
            vms_per_node=self.vms_per_node,
            deadlines=np.asarray(deadlines, dtype=np.int64),
            job_start=self.job_start,
            job_chunks=self.job_chunks,
            name=self.name,
            generator=self.generator,
        )

    def describe(self) -> dict[str, Any]:
        d = self.demand
        return {
            "name": self.name,
            "jobs": self.num_jobs,
            "chunks": self.num_chunks,
            "tasks": self.num_tasks,
            "nodes": self.nodes,
            "chunks_per_node": self.chunks_per_node,
            "vms_per_node": self.vms_per_node,
            "deadlines": d.deadlines.tolist(),
            "jobs_per_deadline": np.bincount(d.job_class, minlength=d.num_classes).tolist(),
        }


@dataclass(frozen=True, eq=False)
class Demand:
    """What the instance asks of the nodes, in dense chunk indices.

    ``deadlines``: the D distinct deadlines, increasing; ``lengths[k]`` = d↑_k − d↑_{k−1};
    ``demand[c, i]`` = F_{c,i} (jobs of class i needing chunk c); ``task_*``: one row per
    (job, chunk) pair, the unit tasks to schedule.
    """

    deadlines: np.ndarray  # (D,)
    lengths: np.ndarray  # (D,)
    job_class: np.ndarray  # (J,) class index of each job
    demand: np.ndarray  # (M, D) int64
    task_job: np.ndarray  # (T,)
    task_chunk: np.ndarray  # (T,) dense chunk index
    task_deadline: np.ndarray  # (T,)

    @classmethod
    def of(cls, inst: EdgeInstance) -> Demand:
        deadlines, job_class = np.unique(inst.deadlines, return_inverse=True)
        lengths = np.diff(deadlines, prepend=0)
        sizes = np.diff(inst.job_start)
        task_job = np.repeat(np.arange(inst.num_jobs, dtype=np.int64), sizes)
        task_chunk = np.searchsorted(inst.chunk_ids, inst.job_chunks).astype(np.int64)
        m, nd = inst.num_chunks, len(deadlines)
        demand = np.bincount(task_chunk * nd + job_class[task_job], minlength=m * nd).reshape(m, nd)
        return cls(
            deadlines=deadlines.astype(np.int64),
            lengths=lengths.astype(np.int64),
            job_class=job_class.astype(np.int64),
            demand=demand.astype(np.int64),
            task_job=task_job,
            task_chunk=task_chunk,
            task_deadline=inst.deadlines[task_job],
        )

    @property
    def num_classes(self) -> int:
        return len(self.deadlines)

    @property
    def num_chunks(self) -> int:
        return self.demand.shape[0]

    @cached_property
    def cumulative(self) -> np.ndarray:
        """W[c, i] = Σ_{k<=i} F_{c,k}: slots chunk c needs before d↑_i."""
        return np.cumsum(self.demand, axis=1)


def _positive_int(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(where, f"must be an integer >= 1, got {value!r}")
    if value < 1:
        raise InputError(where, f"must be >= 1, got {value}")
    if value >= INT_LIMIT:
        raise InputError(where, f"{value} is out of range (must be < 2**31)")
    return value


def read_json_file(path: str | Path, what: str) -> Any:
    """Parse a JSON file; unreadable files and syntax errors become one-line InputErrors."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(p), f"{what} file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(str(p), f"cannot read {what}: {e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{p}:{e.lineno}", f"invalid JSON: {e.msg} (column {e.colno})") from None


def load_instance(path: str | Path) -> EdgeInstance:
    """Read and validate an instance file (errors name ``file: field.path``)."""
    return EdgeInstance.from_dict(read_json_file(path, "instance"), str(path))
