"""A full CRED solution: where each chunk is placed, and which VM of which node processes which chunk for which job in which slot.

Every algorithm in :mod:`schedlab.edge` returns a :class:`Solution`, and the
verifier (:mod:`schedlab.edge.verify`) accepts or rejects any solution, whoever
wrote it. Both tables are columnar numpy arrays:

* placement — one row per (node, chunk) copy: ``node``, ``chunk`` (external id),
  ``placed_at`` (time the copy lands on the node) and ``removed_at`` (time it
  leaves; :data:`NEVER` if it stays). The rules say chunks are placed before
  execution starts (``placed_at <= 0``) and never moved; the two time columns
  exist so that a solution that breaks those rules can be *written down* and
  rejected, rather than the rules holding only by construction of the format.
* tasks — one row per unit task: ``job`` (index in the instance), ``chunk``
  (external id), ``node``, ``vm`` (0..S−1), ``slot`` (the task runs in [slot, slot+1)).

JSON format (``schedlab-edge-solution``)::

    {"format": "schedlab-edge-solution", "algorithm": "cred-m", "active_nodes": 5,
     "placement": {"node": […], "chunk": […], "placed_at": […], "removed_at": [null, …]},
     "tasks": {"job": […], "chunk": […], "node": […], "vm": […], "slot": […]}}

``placed_at`` and ``removed_at`` may be left out (all 0 / all null);
``active_nodes`` is optional and, when given, checked by the verifier.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.edge.instance import INT_LIMIT, read_json_file
from schedlab.errors import InputError

SOLUTION_FORMAT = "schedlab-edge-solution"
NEVER = np.iinfo(np.int64).max  # removed_at of a copy that is never removed
PLACEMENT_COLUMNS = ("node", "chunk", "placed_at", "removed_at")
TASK_COLUMNS = ("job", "chunk", "node", "vm", "slot")


@dataclass(eq=False)
class Solution:
    placement_node: np.ndarray
    placement_chunk: np.ndarray
    task_job: np.ndarray
    task_chunk: np.ndarray
    task_node: np.ndarray
    task_vm: np.ndarray
    task_slot: np.ndarray
    placed_at: np.ndarray | None = None  # None: all 0
    removed_at: np.ndarray | None = None  # None: all NEVER
    algorithm: str = ""
    claimed_active_nodes: int | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("placement_node", "placement_chunk", "task_job", "task_chunk", "task_node", "task_vm", "task_slot"):
            setattr(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        n = len(self.placement_node)
        if self.placed_at is None:
            self.placed_at = np.zeros(n, dtype=np.int64)
        if self.removed_at is None:
            self.removed_at = np.full(n, NEVER, dtype=np.int64)
        self.placed_at = np.asarray(self.placed_at, dtype=np.int64)
        self.removed_at = np.asarray(self.removed_at, dtype=np.int64)
        if not len(self.placement_chunk) == len(self.placed_at) == len(self.removed_at) == n:
            raise ValueError("placement columns differ in length")
        t = len(self.task_job)
        if any(len(getattr(self, f"task_{k}")) != t for k in ("chunk", "node", "vm", "slot")):
            raise ValueError("task columns differ in length")

    @property
    def num_tasks(self) -> int:
        return len(self.task_job)

    def nodes_used(self) -> int:
        """Distinct nodes holding a chunk or running a task (what an algorithm switched on)."""
        return len(np.union1d(self.placement_node, self.task_node))

    def copy(self) -> Solution:
        return Solution(
            self.placement_node.copy(),
            self.placement_chunk.copy(),
            self.task_job.copy(),
            self.task_chunk.copy(),
            self.task_node.copy(),
            self.task_vm.copy(),
            self.task_slot.copy(),
            None if self.placed_at is None else self.placed_at.copy(),
            None if self.removed_at is None else self.removed_at.copy(),
            self.algorithm,
            self.claimed_active_nodes,
            dict(self.info),
        )

    # -- I/O -------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        assert self.placed_at is not None and self.removed_at is not None
        out: dict[str, Any] = {"format": SOLUTION_FORMAT, "algorithm": self.algorithm}
        if self.claimed_active_nodes is not None:
            out["active_nodes"] = int(self.claimed_active_nodes)
        if self.info:
            out["info"] = self.info
        out["placement"] = {
            "node": self.placement_node.tolist(),
            "chunk": self.placement_chunk.tolist(),
            "placed_at": self.placed_at.tolist(),
            "removed_at": [None if r == NEVER else int(r) for r in self.removed_at.tolist()],
        }
        out["tasks"] = {
            "job": self.task_job.tolist(),
            "chunk": self.task_chunk.tolist(),
            "node": self.task_node.tolist(),
            "vm": self.task_vm.tolist(),
            "slot": self.task_slot.tolist(),
        }
        return out

    def save(self, path: str | Path) -> Path:
        from schedlab.metrics.export import write_json

        return write_json(path, self.to_dict())

    @classmethod
    def from_dict(cls, data: Any, where: str = "solution") -> Solution:
        if not isinstance(data, dict):
            raise InputError(where, f"expected a JSON object, got {type(data).__name__}")
        allowed = ("format", "algorithm", "active_nodes", "info", "placement", "tasks")
        for key in data:
            if key not in allowed:
                raise InputError(f"{where}: {key}", f"unknown field (expected {', '.join(allowed)})")
        fmt = data.get("format", SOLUTION_FORMAT)
        if fmt != SOLUTION_FORMAT:
            raise InputError(f"{where}: format", f"expected {SOLUTION_FORMAT!r}, got {fmt!r}")
        algorithm = data.get("algorithm", "")
        if not isinstance(algorithm, str):
            raise InputError(f"{where}: algorithm", "must be a string")
        claimed = data.get("active_nodes")
        if claimed is not None and (not isinstance(claimed, int) or isinstance(claimed, bool) or claimed < 0):
            raise InputError(f"{where}: active_nodes", f"must be an integer >= 0, got {claimed!r}")
        info = data.get("info", {})
        if not isinstance(info, dict):
            raise InputError(f"{where}: info", "must be an object")
        pl = _columns(data, "placement", ("node", "chunk"), ("placed_at", "removed_at"), where)
        tk = _columns(data, "tasks", TASK_COLUMNS, (), where)
        return cls(
            placement_node=pl["node"],
            placement_chunk=pl["chunk"],
            placed_at=pl.get("placed_at"),
            removed_at=pl.get("removed_at"),
            task_job=tk["job"],
            task_chunk=tk["chunk"],
            task_node=tk["node"],
            task_vm=tk["vm"],
            task_slot=tk["slot"],
            algorithm=algorithm,
            claimed_active_nodes=claimed,
            info=info,
        )


def _columns(data: dict, table: str, required: tuple[str, ...], optional: tuple[str, ...], where: str) -> dict[str, np.ndarray]:
    tw = f"{where}: {table}"
    obj = data.get(table)
    if obj is None:
        raise InputError(tw, "missing")
    if not isinstance(obj, dict):
        raise InputError(tw, f"expected an object of columns ({', '.join(required + optional)})")
    for key in obj:
        if key not in required + optional:
            raise InputError(f"{tw}.{key}", f"unknown column (expected {', '.join(required + optional)})")
    out: dict[str, np.ndarray] = {}
    length = None
    first = ""  # the column that set ``length``
    for key in required + optional:
        if key not in obj:
            if key in required:
                raise InputError(f"{tw}.{key}", "missing")
            continue
        col = obj[key]
        if not isinstance(col, list):
            raise InputError(f"{tw}.{key}", "must be a list")
        if length is None:
            length, first = len(col), key
        elif len(col) != length:
            raise InputError(f"{tw}.{key}", f"has {len(col)} entries but {first} has {length}")
        nullable = key == "removed_at"
        for i, v in enumerate(col):
            if v is None and nullable:
                continue
            if not isinstance(v, int) or isinstance(v, bool):
                raise InputError(f"{tw}.{key}[{i}]", f"must be an integer{' or null' if nullable else ''}, got {v!r}")
            if not -INT_LIMIT < v < INT_LIMIT:
                raise InputError(f"{tw}.{key}[{i}]", f"{v} is out of range (|value| < 2**31)")
        if nullable:
            out[key] = np.array([NEVER if v is None else v for v in col], dtype=np.int64)
        else:
            out[key] = np.array(col, dtype=np.int64) if col else np.zeros(0, dtype=np.int64)
    return out


def load_solution(path: str | Path) -> Solution:
    return Solution.from_dict(read_json_file(path, "solution"), str(path))
