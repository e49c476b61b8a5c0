"""Alibaba cluster-trace-v2018, batch workload → schedlab's columnar trace.

Source: the trace's documentation (github.com/alibaba/clusterdata,
``cluster-trace-v2018/trace_2018.md`` and ``schema.md``): headerless CSV
tables, times in seconds from the start of the trace's 8 days (0: "before or
after the 8-day span", i.e. unknown), memory normalised to the largest
machine ([0, 100]; -1 and 101 mark invalid values), CPU in hundredths of a
core. Tables:

* ``batch_task``: task_name, instance_num, job_name, task_type, status,
  start_time, end_time, plan_cpu, plan_mem — one row per task, which in this
  trace is one stage of a job's DAG (``M1``; ``R2_1``: task 2 waits for task
  1; ``J3_1_2``; ``task_<random>`` for tasks without dependencies).
* ``batch_instance``: instance_name, task_name, job_name, task_type, status,
  start_time, end_time, machine_id, seq_no, total_seq_no, cpu_avg, cpu_max,
  mem_avg, mem_max — one row per run of an instance (the largest table, about
  1.3 billion rows, in no particular order).
* ``machine_meta`` is gathered with the others but not read here: ``trace
  machines`` reads it (:func:`.machines.rows_alibaba2018`).

Every field is parsed and checked: a wrong field count, a time, count or
request that is not a number, an unknown status (Terminated, Failed,
Running, Waiting, Ready, Cancelled, Interrupted), a negative time,
instance_num or seq_no is a malformed row (``file:line``, or counted and
skipped with ``skip_bad``).

Interpretation (the schema leaves these to the reader; each is our choice):

* **Jobs and tasks.** A schedlab job is a set of parallel tasks submitted
  together — what Sparrow calls a job (a Spark stage). Here that is an
  Alibaba *task*: a DAG stage of homogeneous instances sharing one plan_cpu
  and plan_mem. So one schedlab job = one (job_name, task_name) stage, one
  schedlab task = one instance. Job IDs are dense codes in the order the
  stages first appear (batch_task's stages, then those seen only in
  batch_instance); the names are not kept. A task's index is its instance's
  ordinal among the stage's kept instances, in the order they first appear
  in batch_instance.
* **Arrival.** The trace has no submit times. A stage arrives at its
  batch_task start_time: when its instances could start, an upper bound of
  its submission. The DAG's edges are kept only through these arrivals (a
  stage starts after those it waits for) and are counted as lost
  (``dag_edges_not_kept``). A stage whose start_time is unknown (0 or empty),
  or that has no batch_task row, arrives at the earliest start of a
  Terminated run of its instances — again an upper bound of its submission.
* **Runs and durations.** An instance's rows are its runs (seq_no of
  total_seq_no: retries), in any order, anywhere in the shards. Its outcome is
  its best row: a Terminated run with known times (start and end > 0, end ≥
  start) over a Terminated one without, over any other status; then the
  higher seq_no (the later run); then the status further along (Ready <
  Waiting < Running < Interrupted < Cancelled < Failed); then the longer run.
  An instance whose best row is a Terminated run with known times is one task
  lasting that run's end − start (0 for a run under a second, the trace's
  resolution); earlier runs' time is not part of it. So a task is the last
  run that terminated: a later run that failed or was cancelled (a backup
  attempt, say) does not undo it.
* **Dropped**, counted per instance by reason: its best row Failed,
  Cancelled, Interrupted, or still Running, Waiting or Ready at the trace's
  end; Terminated with an unknown start or end time; or ending before it
  starts. A stage left without a kept instance vanishes (counted:
  ``stages_without_a_kept_instance``).
* **A stage's own status** does not filter its instances: a Terminated
  instance of a Failed (or unfinished) stage did run, and is kept; such
  instances are counted (``instances_kept_in_unterminated_stages``), as are
  those of stages without a batch_task row
  (``instances_kept_without_a_batch_task_row``). A stage repeated in
  batch_task keeps its first row (``batch_task_rows_repeated``).
* **Requests**: the stage's plan_cpu and plan_mem, for each of its instances.
  By default cores = plan_cpu / 100 — absolute cores, as the trace states them
  (its machines have 96, more than the 64-core default worker) — and
  memory_mb = plan_mem / 100 × 16,384 MB (the default worker's memory: the
  trace gives memory only relative to its largest machine). With
  ``scale_requests`` off both are fractions of the largest machine, as Google
  2011 states them: cpus = plan_cpu / 100 / 96 (the cpu_num machine_meta
  gives the trace's machines, as analyses of the trace report it; option
  ``machine_cores`` for another), memory = plan_mem / 100. A missing value, or one the schema marks invalid (negative, or
  plan_mem above 100), leaves the stage's tasks without a request (the
  simulation draws one, counted); a stage stating one of the two is taken as
  stating none.
* **User, priority, constraints**: the batch tables have none (None).
* **Lost**: the DAG edges (above), the usage columns (cpu_avg, cpu_max,
  mem_avg, mem_max), the placement (machine_id), task_type, the stage's end
  time, which stages make up one job_name, and the names. instance_num is
  only compared with the instances found (``instances_planned``,
  ``instances``).

How (speed and memory): batch_task is read first into one row per stage: a
64-bit hash of its (job_name, task_name) — SipHash of each name, combined; two
of the full trace's 14 M stages colliding has a probability of about 10⁻⁵ —
its start, requests and status, by code. batch_instance is then streamed a
CSV block at a time with its strings left in Arrow: stage names
dictionary-encoded and looked up once per distinct stage in the block,
instance names keyed by their number (``ins_<n>``, as the trace names them)
or else hashed to 63 bits (compared only within their stage). Each
row becomes, with numpy, a run row (stage, instance key, rank, duration,
arrival, row number) handed to :mod:`.tasks`' finished-task buffer, spilled
to runs, sorted by stage arrival and merged. No per-instance state is kept:
an instance's rows, wherever they are in the shards, meet in the merge,
where a stage's rows arrive together and are folded to exactly one outcome
per instance (the best row is a maximum, so where the input was cut into
blocks, runs and chunks does not matter). Rows are not folded per block
first: that (finding a block's repeated instances and their best row) cost
more than carrying the repeated rows through the sort, with one instance in
ten retried. Held in memory: one row per stage (its hash, code, start and
requests, about 40 bytes; tasks.py's per-job fold), the merge's buffers, the
rows of the stage being resolved, and up to max(``run_rows``, stages so far)
buffered rows of 48 bytes — a spill folds every stage seen so far, so a run
holds at least as many rows as there are stages and a spill costs a bounded
time per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.defaults import DEFAULT_CAPACITY, MULTI_RESOURCES
from schedlab.errors import InputError
from schedlab.workload.converters import RawJob, RawTrace
from schedlab.workload.converters.checkpoint import counts_state, restore_counts, work_for
from schedlab.workload.converters.common import Batch, Drops, read_csv_shards
from schedlab.workload.converters.tasks import (
    TASK_BITS,
    Finished,
    new_jobs,
    restore_spill_state,
    sorted_chunks,
    spill,
    spill_state,
    to_table,
)

BATCH_TASK = [
    ("task_name", "str"),
    ("instance_num", "int?"),
    ("job_name", "str"),
    ("task_type", "str?"),
    ("status", "str"),
    ("start_time", "int?"),
    ("end_time", "int?"),
    ("plan_cpu", "float?"),
    ("plan_mem", "float?"),
]
BATCH_INSTANCE = [
    ("instance_name", "str"),
    ("task_name", "str"),
    ("job_name", "str"),
    ("task_type", "str?"),
    ("status", "str"),
    ("start_time", "int?"),
    ("end_time", "int?"),
    ("machine_id", "str?"),
    ("seq_no", "int?"),
    ("total_seq_no", "int?"),
    ("cpu_avg", "float?"),
    ("cpu_max", "float?"),
    ("mem_avg", "float?"),
    ("mem_max", "float?"),
]
# codes 1..7 in the order a run's row outranks another of the same run (0: a stage without a batch_task row)
STATUSES = ("Ready", "Waiting", "Running", "Interrupted", "Cancelled", "Failed", "Terminated")
TERMINATED = len(STATUSES)
NOT_KEPT = {
    1: "ready at the trace's end",
    2: "waiting at the trace's end",
    3: "running at the trace's end",
    4: "interrupted",
    5: "cancelled",
    6: "failed",
}
# a Terminated run without usable times: its code in the rank's status bits (above every status)
UNKNOWN_TIME, ENDS_BEFORE_START = TERMINATED + 1, TERMINATED + 2
NOT_KEPT_UNTIMED = {
    UNKNOWN_TIME: "terminated with an unknown start or end time",
    ENDS_BEFORE_START: "terminated with its end before its start",
}
MACHINE_CORES = 96.0  # machine_meta's cpu_num for the trace's machines
NO_TIME = np.iinfo(np.int64).max  # the arrival of a stage none of whose instances ran to the end (yet)
# an instance row's rank (larger: the row its outcome is taken from): class, seq_no, status (or why untimed)
CLASS_SHIFT, SEQ_SHIFT = 58, 4
KEPT, TERMINATED_UNTIMED, OTHER = 2, 1, 0
SEQ_MAX = (1 << (CLASS_SHIFT - SEQ_SHIFT)) - 1
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd: combines two hashes into one


def resources(scale: bool, machine_cores: float = MACHINE_CORES) -> tuple[tuple[str, ...], dict[str, str], tuple[float, float]]:
    """The output's request columns, their units, and the factors from plan_cpu and plan_mem to them."""
    if not scale:
        return ("cpus", "memory"), {
            "cpus": f"fraction of a {machine_cores:g}-core machine (plan_cpu / 100 / {machine_cores:g})",
            "memory": "fraction of the largest machine's memory (plan_mem / 100)",
        }, (1 / (100 * machine_cores), 1 / 100)
    mb = DEFAULT_CAPACITY[1]
    return tuple(MULTI_RESOURCES), {
        MULTI_RESOURCES[0]: "cores (plan_cpu / 100, as the trace states them)",
        MULTI_RESOURCES[1]: f"MB (plan_mem / 100 of the largest machine, taken as {mb:g} MB)",
    }, (1 / 100, mb / 100)


# -- hashing names -----------------------------------------------------------------------------------
def _hash(strings: Any) -> np.ndarray:
    """64-bit SipHash of each string of an Arrow array (as int64)."""
    import pandas as pd

    return pd.util.hash_array(strings.to_numpy(zero_copy_only=False), categorize=False).view(np.int64)


def instance_keys(names: Any) -> np.ndarray:
    """A 64-bit key of each instance name: ``ins_<n>`` (the trace's names; n in canonical decimal, below
    10^18) is n itself, any other name its SipHash with the top bit set, so the two kinds never meet."""
    import pyarrow as pa
    import pyarrow.compute as pc

    digits = pc.utf8_slice_codeunits(names, 4)
    size = pc.binary_length(digits)
    canonical = pc.and_(pc.less_equal(size, 18), pc.or_(pc.equal(size, 1), pc.invert(pc.starts_with(digits, "0"))))
    numbered = pc.and_(pc.and_(pc.starts_with(names, "ins_"), pc.ascii_is_decimal(digits)), canonical)  # (not "")
    numbered = numbered.to_numpy(zero_copy_only=False)
    if numbered.all():
        return pc.cast(digits, pa.int64()).to_numpy()
    keys = np.zeros(len(numbered), np.int64)
    if numbered.any():
        keys[numbered] = pc.cast(pc.filter(digits, pa.array(numbered)), pa.int64()).to_numpy()
    other = ~numbered
    keys[other] = _hash(pc.filter(names, pa.array(other))) | np.int64(-(1 << 63))
    return keys


def stage_hashes(job_name: Any, task_name: Any) -> np.ndarray:
    """A 64-bit hash of each row's (job_name, task_name); each name is hashed once per block."""
    j, t = job_name.dictionary_encode(), task_name.dictionary_encode()
    hj = _hash(j.dictionary).view(np.uint64)[j.indices.to_numpy()]
    ht = _hash(t.dictionary).view(np.uint64)[t.indices.to_numpy()]
    with np.errstate(over="ignore"):
        return (hj * _MIX + ht).view(np.int64)


# -- the stages ------------------------------------------------------------------------------------
class Stages:
    """batch_task's stages by code (their order of first appearance), and the stages found only in batch_instance.

    Per code below ``known``: the start (0 unknown), plan_cpu, plan_mem (NaN: no request) and status code;
    index ``known`` holds a stage without a batch_task row."""

    def __init__(self, hashes: np.ndarray, start: np.ndarray, cpu: np.ndarray, mem: np.ndarray, status: np.ndarray) -> None:
        self.known = len(hashes)
        order = np.argsort(hashes, kind="stable")
        self.sorted_hashes = hashes[order]
        self.sorted_codes = order.astype(np.int64)
        self.start = np.append(start, 0)
        self.cpu = np.append(cpu, np.nan)
        self.mem = np.append(mem, np.nan)
        self.status = np.append(status, 0).astype(np.int8)
        self.orphans: dict[int, int] = {}  # hash -> code, for stages without a batch_task row

    def codes(self, hashes: np.ndarray) -> np.ndarray:
        """Each row's stage code; a stage not in batch_task gets the next code the first time it is seen."""
        import pandas as pd

        inverse, uniques = pd.factorize(hashes)
        uniques = np.asarray(uniques, dtype=np.int64)
        pos = np.searchsorted(self.sorted_hashes, uniques)
        pos_in = np.minimum(pos, max(self.known - 1, 0))
        found = (pos < self.known) & (self.sorted_hashes[pos_in] == uniques) if self.known else np.zeros(len(uniques), bool)
        codes = np.empty(len(uniques), np.int64)
        codes[found] = self.sorted_codes[pos_in[found]]
        if not found.all():
            orphans = self.orphans
            codes[~found] = [orphans.setdefault(h, self.known + len(orphans)) for h in uniques[~found].tolist()]
        return codes[inverse]

    def row(self, codes: np.ndarray) -> np.ndarray:
        """Index into the per-stage columns (a stage without a batch_task row: the last)."""
        return np.minimum(codes, self.known)


def _first_bad(b: Batch, checks: Sequence[tuple[np.ndarray, str, Callable[[int], str]]], skip_bad: bool, bad_rows: Drops) -> np.ndarray | None:
    """The rows to keep (None: all). A bad row is an error naming ``file:line`` (the first in the file), or with
    ``skip_bad`` counted under its first problem."""
    bad = np.zeros(len(checks[0][0]), bool)
    for mask, _reason, _what in checks:
        bad |= mask
    if not bad.any():
        return None
    if not skip_bad:
        i = int(np.argmax(bad))
        what = next(w for mask, _r, w in checks if mask[i])
        raise InputError(b.where(i), what(i))
    seen = np.zeros(len(bad), bool)
    for mask, reason, _what in checks:
        bad_rows.add(reason, int((mask & ~seen).sum()))
        seen |= mask
    return ~bad


def _status_codes(status: Any) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    code = pc.index_in(status, value_set=pa.array(STATUSES))
    return pc.fill_null(code, -1).to_numpy(zero_copy_only=False).astype(np.int64) + 1  # 0: unknown


def _ints(values: Any) -> np.ndarray:
    import pyarrow.compute as pc

    return pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _row_checks(b: Batch, status: np.ndarray, start: np.ndarray, end: np.ndarray, count: str, n: np.ndarray) -> list[tuple[np.ndarray, str, Callable[[int], str]]]:
    """What a row's fields must be beyond their types: a known status, times and the ``count`` column >= 0."""
    names = b["status"]
    return [
        (status == 0, "rows with an unknown status", lambda i: f"unknown status {names[i].as_py()!r} (one of {', '.join(STATUSES)})"),
        (start < 0, "rows with a negative time", lambda i: f"start_time is negative: {start[i]}"),
        (end < 0, "rows with a negative time", lambda i: f"end_time is negative: {end[i]}"),
        (n < 0, f"rows with a negative {count}", lambda i: f"{count} is negative: {n[i]}"),
    ]


def read_stages(paths: Sequence[Path], counts: dict[str, int], skip_bad: bool, bad_rows: Drops, progress: Callable[[int], None] | None, block_bytes: int) -> Stages:
    """batch_task as one row per stage (its first row), with the stages' counts."""
    import pyarrow.compute as pc

    parts: list[tuple[np.ndarray, ...]] = []
    for b in read_csv_shards(paths, BATCH_TASK, skip_bad=skip_bad, bad_rows=bad_rows, progress=progress, block_bytes=block_bytes, as_arrow=True):
        status, start, end = _status_codes(b["status"]), _ints(b["start_time"]), _ints(b["end_time"])
        planned = _ints(b["instance_num"])
        keep = _first_bad(b, _row_checks(b, status, start, end, "instance_num", planned), skip_bad, bad_rows)
        name = b["task_name"]
        independent = pc.starts_with(name, "task_")
        edges = pc.if_else(independent, 0, pc.count_substring_regex(name, r"_\d+"))  # M5_3_4: waits for 3 and 4
        cols = (
            stage_hashes(b["job_name"], name), start, b["plan_cpu"].to_numpy(zero_copy_only=False).astype(np.float64),
            b["plan_mem"].to_numpy(zero_copy_only=False).astype(np.float64), status, planned,
            independent.to_numpy(zero_copy_only=False), edges.to_numpy(zero_copy_only=False).astype(np.int64),
        )  # fmt: skip
        parts.append(cols if keep is None else tuple(c[keep] for c in cols))
    hashes, start, cpu, mem, status, planned, independent, edges = (
        np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, t)
        for k, t in enumerate((np.int64, np.int64, np.float64, np.float64, np.int64, np.int64, bool, np.int64))
    )
    _u, first = np.unique(hashes, return_index=True)
    first = np.sort(first)  # each stage's first row, in file order: its code is its rank here
    counts["batch_task_rows_repeated"] = len(hashes) - len(first)
    hashes, start, cpu, mem, status = hashes[first], start[first], cpu[first], mem[first], status[first]
    planned, independent, edges = planned[first], independent[first], edges[first]
    invalid = (cpu < 0) | (mem < 0) | (mem > 100)
    missing = np.isnan(cpu) | np.isnan(mem)
    counts["stages"] = len(hashes)
    for code, name in enumerate(STATUSES, start=1):
        counts[f"stages_{name.lower()}"] = int((status == code).sum())
    counts["stages_start_unknown"] = int((start <= 0).sum())
    counts["stages_request_missing"] = int(missing.sum())
    counts["stages_request_invalid"] = int((invalid & ~missing).sum())
    counts["stages_independent"] = int(independent.sum())
    counts["dag_edges_not_kept"] = int(edges.sum())
    counts["instances_planned"] = int(planned.sum())
    cpu[invalid], mem[invalid] = np.nan, np.nan
    return Stages(hashes, start, cpu, mem, status)


# -- the instances ---------------------------------------------------------------------------------
class Runs(Finished):
    """One row per instance row: the run's rank and duration, the stage's arrival (or the run's start), the row's
    number and the instance's key (:func:`instance_keys`). ``key`` is the stage's code << TASK_BITS."""

    NAMES = ("key", "arrival", "duration", "rank", "instance", "first")
    TYPES = (np.int64,) * 6


def _several(c: dict[str, np.ndarray]) -> np.ndarray:
    """Rows that may share their instance with another row (a hash of stage and instance: it may pair two
    instances, which :func:`best_runs` then tells apart)."""
    import pandas as pd

    with np.errstate(over="ignore"):
        mixed = c["key"].view(np.uint64) * _MIX ^ c["instance"].view(np.uint64)
    return pd.Series(mixed).duplicated(keep=False).to_numpy()


def best_runs(c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per instance (stage ``key``, ``instance``): the index of its best row and its earliest ``first``,
    instances in row order (of their best row). Most rows are an instance's only one."""
    again = _several(c)
    if not again.any():  # the usual case: nothing to fold
        return np.arange(len(again)), c["first"]
    rows = np.flatnonzero(again)
    order = rows[np.lexsort(tuple(c[k][rows] for k in ("duration", "rank", "instance", "key")))]
    k, i = c["key"][order], c["instance"][order]
    starts = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (i[1:] != i[:-1])])
    top = order[np.r_[starts[1:] - 1, len(order) - 1]]  # the last of a group sorts highest
    is_best = ~again
    is_best[top] = True
    first = c["first"].copy()
    first[top] = np.minimum.reduceat(c["first"][order], starts)
    best = np.flatnonzero(is_best)
    return best, first[best]


class Tally:
    """What reading and resolving the instances count besides the drops."""

    def __init__(self) -> None:
        self.instances = 0
        self.stages = 0  # with a kept instance
        self.kept_unterminated = 0
        self.kept_orphans = 0
        self.early_runs = 0  # Terminated runs starting before their stage's start_time


def _instance_rows(b: Batch, stages: Stages, row0: int, skip_bad: bool, bad_rows: Drops, tally: Tally) -> dict[str, np.ndarray] | None:
    """A block of batch_instance as run rows (before folding), its malformed rows handled."""
    status, start, end = _status_codes(b["status"]), _ints(b["start_time"]), _ints(b["end_time"])
    seq = _ints(b["seq_no"])
    keep = _first_bad(b, _row_checks(b, status, start, end, "seq_no", seq), skip_bad, bad_rows)
    code = stages.codes(stage_hashes(b["job_name"], b["task_name"]))
    inst = instance_keys(b["instance_name"])
    cols = {"code": code, "inst": inst, "status": status, "start": start, "end": end, "seq": seq, "first": row0 + np.arange(len(code), dtype=np.int64)}
    if keep is not None:
        cols = {k: v[keep] for k, v in cols.items()}
        if not len(cols["code"]):
            return None
    code, status, start, end = cols["code"], cols["status"], cols["start"], cols["end"]
    terminated = status == TERMINATED
    unknown = (start == 0) | (end == 0)
    timed = ~unknown & (end >= start)
    cls = np.where(terminated, np.where(timed, KEPT, TERMINATED_UNTIMED), OTHER)
    why = np.where(terminated & ~timed, np.where(unknown, UNKNOWN_TIME, ENDS_BEFORE_START), status)
    rank = (cls << CLASS_SHIFT) | (np.minimum(cols["seq"], SEQ_MAX) << SEQ_SHIFT) | why
    stage_start = stages.start[stages.row(code)]
    ran = cls == KEPT
    tally.early_runs += int((ran & (stage_start > 0) & (start < stage_start)).sum())
    arrival = np.where(stage_start > 0, stage_start, np.where(ran, start, NO_TIME))
    return {"key": code << TASK_BITS, "arrival": arrival, "duration": end - start, "rank": rank, "instance": cols["inst"], "first": cols["first"]}


def resolve(c: dict[str, np.ndarray], stages: Stages, drops: Drops, tally: Tally) -> dict[str, np.ndarray]:
    """Whole stages' rows, in (arrival, stage) order, as their kept tasks: one per instance, numbered by first
    appearance, with the stage's mean duration and requests."""
    best, first = best_runs(c)
    tally.instances += len(best)
    rank = c["rank"][best]
    kept = (rank >> CLASS_SHIFT) == KEPT
    why = np.bincount(rank[~kept] & ((1 << SEQ_SHIFT) - 1), minlength=1 << SEQ_SHIFT)  # OTHER: a status; else why
    for code, reason in (*NOT_KEPT.items(), *NOT_KEPT_UNTIMED.items()):
        drops.add(reason, int(why[code]))
    best, first = best[kept], first[kept]
    code = c["key"][best] >> TASK_BITS  # a stage's rows are together (the merge's order: arrival, stage)
    n = len(best)
    same = code[1:] == code[:-1]
    starts = np.flatnonzero(np.r_[True, ~same]) if n else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, n])
    if n and (same & (first[1:] < first[:-1])).any():  # number them by first appearance
        order = np.lexsort((first, np.repeat(np.arange(len(starts)), sizes)))
        best, code = best[order], code[order]
    if n and sizes.max() >= 1 << TASK_BITS:
        raise InputError(f"stage {int(code[starts[np.argmax(sizes)]])}", f"more than 2^{TASK_BITS} instances")
    task = np.arange(n) - np.repeat(starts, sizes)
    duration = c["duration"][best]
    mean = np.repeat(np.add.reduceat(duration, starts) / sizes, sizes) if n else np.zeros(0)
    row = stages.row(code)
    tally.stages += len(starts)
    tally.kept_orphans += int((code >= stages.known).sum())
    tally.kept_unterminated += int(((code < stages.known) & (stages.status[row] != TERMINATED)).sum())
    return {
        "key": (code << TASK_BITS) | task, "job_arrival": c["job_arrival"][best], "duration": duration, "mean": mean,
        "user": np.full(n, -1, np.int64), "priority": np.full(n, np.nan), "cpu": stages.cpu[row], "memory": stages.mem[row],
    }  # fmt: skip


def whole_stages(chunks: Iterator[dict[str, np.ndarray]]) -> Iterator[dict[str, np.ndarray]]:
    """The merged rows regrouped so that a stage's rows are never split between two chunks (they are
    contiguous: the merge orders them by stage arrival, then stage)."""
    carry: dict[str, np.ndarray] | None = None
    for c in chunks:
        if carry is not None:
            c = {k: np.concatenate([carry[k], v]) for k, v in c.items()}
        stage = c["key"] >> TASK_BITS
        n = len(stage)
        if not n:
            continue
        cut = n - int(np.argmax(stage[::-1] != stage[-1])) if (stage != stage[-1]).any() else 0
        if cut:
            yield {k: v[:cut] for k, v in c.items()}
        carry = {k: v[cut:] for k, v in c.items()}
    if carry is not None:
        yield carry


# -- the conversion --------------------------------------------------------------------------------
def convert_alibaba2018(job: RawJob, *, run_rows: int = 1_000_000, block_bytes: int = 8 << 20, chunk_rows: int = 262_144) -> Iterator[Any]:
    """Stream ``job``'s trace as Arrow tables in the columnar trace's schema, in arrival order (for
    :meth:`~schedlab.workload.columnar.ColumnarTraceWriter.write_tables`); ``run_rows``, ``block_bytes`` and
    ``chunk_rows`` size the spilled runs, the CSV blocks and the merged chunks.

    With ``job.work_dir`` the conversion is restartable (:mod:`.checkpoint`): a checkpoint after a
    batch_instance shard (at most ``job.checkpoint_every_s`` apart); a rerun with the same folder reads
    batch_task again and the batch_instance shards after the last checkpoint."""

    batch_task, batch_instance = job.tables["batch_task"], job.tables["batch_instance"]
    scale, machine_cores = job.scale_requests, job.options.get("machine_cores", MACHINE_CORES)
    skip_bad, drops, bad_rows, counts, progress = job.skip_bad, job.drops, job.bad_rows, job.counts, job.progress
    names, _units, factors = resources(scale, machine_cores)
    work = work_for(job, "alibaba2018", "batch_instance", run_rows=run_rows, block_bytes=block_bytes)
    try:
        saved = work.load()
        # on a rerun batch_task is read again (its rows counted as read again), its counts already in the checkpoint's
        stages = read_stages(batch_task, counts if saved is None else {}, skip_bad, bad_rows if saved is None else Drops(), progress, block_bytes)
        out = Runs()
        runs: list[Any] = []
        jobs = new_jobs()
        tally = Tally()
        rows = seen = 0  # rows kept; rows read (numbering them: an instance's first row orders its task)
        first, instance_rows = 0, [0]
        if saved is not None:
            first, arrays, values = saved
            jobs, runs = restore_spill_state(out, arrays, values)
            stages.orphans = dict(zip(arrays["orphan_hash"].tolist(), arrays["orphan_code"].tolist(), strict=True))
            vars(tally).update(values["tally"])
            rows, seen, instance_rows[0] = int(values["rows"]), int(values["seen"]), int(values["rows_read"])
            counts.update(values["counts"])
            restore_counts(drops, bad_rows, values)
            if progress is not None:
                progress(instance_rows[0])

        def counted(n: int) -> None:
            instance_rows[0] += n
            if progress is not None:
                progress(n)

        for k in range(first, len(batch_instance)):
            for b in read_csv_shards([batch_instance[k]], BATCH_INSTANCE, skip_bad=skip_bad, bad_rows=bad_rows, progress=counted, block_bytes=block_bytes, as_arrow=True):
                c = _instance_rows(b, stages, seen, skip_bad, bad_rows, tally)
                seen += len(b["status"])
                if c is None:
                    continue
                rows += len(c["key"])
                out.add(*(c[col] for col in Runs.NAMES))
                if out.rows >= max(run_rows, len(jobs)):
                    jobs = spill(out, runs, jobs, work.dir)
            if work.due() or (work.keeps and k + 1 == len(batch_instance)):  # and after the last: the merge can fail too
                arrays, values = spill_state(out, jobs, runs)
                arrays["orphan_hash"] = np.fromiter(stages.orphans, np.int64, len(stages.orphans))
                arrays["orphan_code"] = np.fromiter(stages.orphans.values(), np.int64, len(stages.orphans))
                values.update({"tally": vars(tally), "rows": rows, "seen": seen, "rows_read": instance_rows[0], "counts": dict(counts),
                               **counts_state(drops, bad_rows)})  # fmt: skip
                work.save(k + 1, arrays, values)
        if out.rows or not runs:
            jobs = spill(out, runs, jobs, work.dir, keep=not runs)
        counts["stages_without_batch_task_row"] = len(stages.orphans)
        counts["instance_rows"] = rows
        no_users = np.zeros(0, dtype=object)
        for c in whole_stages(sorted_chunks(runs, jobs, work.dir, chunk_rows, keep_runs=work.keeps)):  # a checkpoint names the runs
            t = resolve(c, stages, drops, tally)
            if len(t["key"]):
                yield to_table(t, resources=names, factors=factors, seconds_per_unit=1.0, user_names=no_users, constraints=())
        counts["instances"] = tally.instances
        counts["instance_rows_not_chosen"] = rows - tally.instances
        counts["stages_without_a_kept_instance"] = stages.known + len(stages.orphans) - tally.stages
        counts["instances_kept_in_unterminated_stages"] = tally.kept_unterminated
        counts["instances_kept_without_a_batch_task_row"] = tally.kept_orphans
        counts["runs_started_before_their_stage"] = tally.early_runs
    except BaseException:
        work.abandon()
        raise
    work.finish()


def convert(job: RawJob) -> RawTrace:
    """The :data:`~schedlab.workload.converters.FORMATS` entry point."""
    cores = job.options.get("machine_cores", MACHINE_CORES)
    if not cores > 0:
        raise InputError("--format-option machine_cores", f"must be a positive number of cores, got {cores:g}")
    names, units, _factors = resources(job.scale_requests, cores)
    return RawTrace(names, units, convert_alibaba2018(job))
