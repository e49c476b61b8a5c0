"""Checks of a finished run (real or simulated) that do not trust the scheduler or the workers."""

from __future__ import annotations

import secrets
from pathlib import Path

import numpy as np

from schedlab.cluster import Cluster
from schedlab.services.clusterfile import render_cluster
from schedlab.services.supervise import free_port_range
from tests.helpers import assert_no_over_allocation
from tests.services.conftest import broker_url


def assert_valid_schedule(result, cluster: Cluster) -> None:
    """Every task ran to completion exactly once, on a worker with its constraints, without over-allocation.

    A task preempted by fair sharing starts once more per preemption; its
    killed runs (``result.extra["preempted_runs"]``) count in the allocation check.
    """
    t = result.tasks
    s = result.summary
    assert s["counters"]["tasks_unfinished"] == 0, "a task never finished"
    assert s["counters"]["jobs_incomplete"] == 0, "a job never completed"
    preempted = result.extra.get("preempted_runs", [])
    runs = np.bincount([p[0] for p in preempted], minlength=len(t)) if preempted else np.zeros(len(t), dtype=int)
    assert (t.starts.to_numpy() == 1 + runs).all(), "a task started more often than it was preempted"
    for key in ("duplicate_starts", "duplicate_finishes", "duplicate_reports", "refused_launches", "handler_errors", "bad_record_messages", "unknown_task_events"):
        assert s["counters"].get(key, 0) == 0, f"{key} = {s['counters'][key]}"
    masks = np.array(cluster.machine_masks, dtype=object)
    for task, worker, need in zip(t.task, t.worker, t.constraints, strict=True):
        assert worker >= 0, f"task {task} has no worker"
        assert int(need) & ~int(masks[worker]) == 0, f"task {task} ran on worker {worker} without its constraints"
    assert_no_over_allocation(t, cluster, result.extra.get("requests"), preempted)


def consecutive_free_ports(n: int) -> int:
    """A base port with ``n`` free consecutive ports after it (outside the ephemeral range)."""
    return free_port_range(n)


def write_cluster(tmp_path: Path, *, gms: int = 2, lms: int = 2, workers: int = 12, hosts_per_lm: int = 1, heartbeat: float = 0.2,
                  resources: list[str] | None = None, capacity: list[float] | None = None, url: str | None = None,
                  host_constraints: list[list[int]] | None = None) -> Path:
    """A cluster file on free ports with a unique name; ``host_constraints[k]`` gives worker host k's workers constraints."""
    n = gms + lms + lms * hosts_per_lm
    text = render_cluster(name=f"t{secrets.token_hex(4)}", gms=gms, lms=lms, workers=workers, hosts_per_lm=hosts_per_lm,
                          base_port=consecutive_free_ports(n), broker=url or broker_url(), heartbeat=heartbeat,
                          resources=resources, capacity=capacity)
    for cons in host_constraints or []:
        text = text.replace("constraints: []", f"constraints: {cons}".replace("[", "<").replace("]", ">"), 1)
    text = text.replace("<", "[").replace(">", "]")
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path
