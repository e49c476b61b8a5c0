"""The Alibaba 2018 converter on fixture shards in the trace's documented schema: every interpretation
(stages as jobs, retries across shards and out of order, unknown times, stages without a batch_task row or
with an unknown start, missing and invalid requests), the drop report, bounded-memory sorting, a row-by-row
definition the vectorized fold is held to, and every malformed-row path."""

from __future__ import annotations

import gzip
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.workload.columnar import read_columnar, read_metadata
from schedlab.workload.convert import convert
from schedlab.workload.converters import RawJob, gather_tables
from schedlab.workload.converters.alibaba2018 import STATUSES, convert_alibaba2018, instance_keys

from .rawtrace import by_id, convert_fixture, job_fields, simulated_counters, spilled

FIXTURES = Path(__file__).parent / "fixtures" / "alibaba2018"
SHARD1, SHARD2 = FIXTURES / "batch_instance-1.csv.gz", FIXTURES / "batch_instance-2.csv.gz"
TASK_ROWS, INSTANCE_ROWS = 34, 141 + 141  # lines of batch_task.csv and of the two batch_instance shards
ORPHAN = 33  # j_7's code: after batch_task's 33 stages (34 rows, one repeated)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    return convert_fixture("alibaba2018", FIXTURES, tmp_path_factory)


_by_id = by_id


def test_the_documented_cases_convert_as_interpreted(converted):
    out, _report, _rows = converted
    jobs = _by_id(out)
    # j_1's three stages are three jobs, arriving at their batch_task start_time; 100 plan_cpu = 1 core, 0.5 % of 16 GB
    j = jobs[0]
    assert (j.arrival, j.durations, j.mean_duration, j.task_ids, j.user, j.priority, j.constraints) == (100.0, [10.0, 20.0, 30.0], 20.0, [0, 1, 2], None, None, None)
    assert j.requests == [(1.0, pytest.approx(81.92))] * 3
    # R2_1: ins_1 failed (seq 1) then terminated (seq 2, 34 s) in one block; ins_1 names another instance in each stage
    assert (jobs[1].arrival, jobs[1].durations, jobs[1].requests[0]) == (150.0, [34.0, 15.0], (2.0, pytest.approx(163.84)))
    assert (jobs[2].arrival, jobs[2].durations) == (260.0, [40.0, 0.0])  # a run within a second lasts 0 s
    # an independent task_ stage without plan_cpu: no requests (the simulation draws them); it arrives first
    assert (jobs[3].arrival, jobs[3].durations, jobs[3].requests) == (90.0, [5.0, 6.0, 7.0, 8.0], None)
    # a Failed stage keeps the instance that terminated
    assert (jobs[4].arrival, jobs[4].durations) == (500.0, [30.0])
    # start_time 0: the earliest start of a Terminated run (610), not of the Failed one (600)
    assert (jobs[5].arrival, jobs[5].durations) == (610.0, [20.0, 5.0])
    # nothing of j_5 ran to the end, and j_11's M3 has no instance rows: both vanish
    assert 6 not in jobs and 12 not in jobs
    # Terminated with start 0, without end, or ending before it starts: left out; the fourth kept
    assert jobs[7].durations == [50.0]
    # retries across the shards and out of order: the later run counts; a failed backup run does not undo one
    assert (jobs[8].arrival, jobs[8].durations, jobs[8].mean_duration) == (1000.0, [30.0, 25.0, 40.0], pytest.approx(95 / 3))
    assert jobs[8].requests == [(3.0, pytest.approx(409.6))] * 3
    # plan_mem 101 and plan_cpu -1 mark invalid values: no requests
    assert jobs[9].requests is None and jobs[10].requests is None
    # batch_task repeats j_10's stage: its first row counts
    assert (jobs[11].arrival, jobs[11].requests) == (1400.0, [(1.0, pytest.approx(81.92))])
    # j_7 has no batch_task row: a code after batch_task's stages, arrival from its instances (ins_2 first seen)
    assert (jobs[ORPHAN].arrival, jobs[ORPHAN].durations, jobs[ORPHAN].requests) == (1100.0, [12.0, 10.0], None)
    # the filler: 20 stages of 5-15 instances (215 as batch_task plans them), every one kept
    assert sum(len(jobs[k].durations) for k in range(13, 33)) == 215
    arrivals = [(j.arrival, k) for k, j in jobs.items()]
    assert arrivals == sorted(arrivals)  # arrival order, ties by job ID


def test_what_was_left_out_is_reported_by_reason(converted):
    out, report, rows = converted
    assert report.tasks_dropped == {
        "ready at the trace's end": 1,
        "waiting at the trace's end": 1,
        "running at the trace's end": 1,
        "interrupted": 1,
        "cancelled": 1,
        "failed": 3,
        "terminated with an unknown start or end time": 2,
        "terminated with its end before its start": 1,
    }
    assert (report.jobs, report.tasks) == (32, 238)
    c = report.counts
    assert c["instances"] == report.tasks + sum(report.tasks_dropped.values()) == 249
    assert c["instance_rows"] == INSTANCE_ROWS and c["instance_rows_not_chosen"] == INSTANCE_ROWS - 249
    assert (c["stages"], c["batch_task_rows_repeated"], c["stages_without_batch_task_row"], c["stages_without_a_kept_instance"]) == (33, 1, 1, 2)
    assert (c["stages_failed"], c["stages_running"], c["stages_terminated"], c["stages_start_unknown"]) == (1, 1, 31, 1)
    assert (c["stages_request_missing"], c["stages_request_invalid"], c["stages_independent"], c["dag_edges_not_kept"]) == (1, 2, 5, 8)
    assert (c["instances_kept_in_unterminated_stages"], c["instances_kept_without_a_batch_task_row"], c["runs_started_before_their_stage"]) == (1, 2, 1)
    assert c["instances_planned"] == 252
    assert report.rows_read == rows == TASK_ROWS + INSTANCE_ROWS and not report.bad_rows  # machine_meta is not read
    meta = read_metadata(out)
    assert meta["source"] == "alibaba2018" and meta["resources"] == ["cores", "memory_mb"]
    assert "plan_cpu / 100" in meta["request_units"]["cores"]


def test_normalised_requests_are_fractions_of_the_largest_machine(tmp_path):
    out = tmp_path / "n.parquet"
    convert("alibaba2018", [FIXTURES], out, scale_requests=False)
    meta = read_metadata(out)
    assert meta["resources"] == ["cpus", "memory"] and "96-core" in meta["request_units"]["cpus"]
    assert _by_id(out)[8].requests[0] == (pytest.approx(3 / 96), pytest.approx(0.025))
    convert("alibaba2018", [FIXTURES], out, scale_requests=False, options={"machine_cores": 64})
    assert _by_id(out)[8].requests[0] == (pytest.approx(3 / 64), pytest.approx(0.025))
    with pytest.raises(InputError, match="machine_cores"):
        convert("alibaba2018", [FIXTURES], out, options={"machine_cores": 0})


def test_bounded_memory_sorting_gives_the_same_trace(converted, tmp_path):
    """Blocks of a few rows (an instance's runs in different blocks) and runs of 3 rows (in different runs)."""
    out, _report, _rows = converted
    small = spilled(convert_alibaba2018, "alibaba2018", FIXTURES, tmp_path, run_rows=3, block_bytes=300, chunk_rows=7)
    assert job_fields(small) == job_fields(out)


def test_a_converted_trace_runs_with_its_own_requests(converted):
    out, report, _rows = converted
    c = simulated_counters(out, report)
    assert c["tasks_request_drawn"] == 8  # j_2's four tasks, j_9's two, j_7's two


def test_instance_names_are_keyed_exactly_when_numbered_and_hashed_otherwise():
    import pyarrow as pa

    names = ["ins_7", "ins_07", "ins_0", "ins_00", "ins_", "ins_x", "inst_7", "7", "ins_7 ", "ins_7\nx", "ins_\u0663",
             "ins_123456789012345678", "ins_1234567890123456789", "task_Nzg3ODAwNDgzMTAwNTc2NTQ2Mw=="]  # fmt: skip
    keys = instance_keys(pa.array(names)).tolist()
    assert keys[0] == 7 and keys[2] == 0 and keys[11] == 123456789012345678  # the trace's names: their number
    assert len(set(keys)) == len(names)  # ins_07 is not ins_7; the others hashed below zero
    assert all(k < 0 for i, k in enumerate(keys) if i not in (0, 2, 11))
    again = instance_keys(pa.array(["x", *names[::-1]]).slice(1)).tolist()  # a block of its own, sliced
    assert again == keys[::-1]


def test_inputs_are_sorted_into_tables(tmp_path):
    tables = gather_tables("alibaba2018", [FIXTURES])
    assert [p.name for p in tables["batch_instance"]] == ["batch_instance-1.csv.gz", "batch_instance-2.csv.gz"]
    assert [p.name for p in tables["batch_task"]] == ["batch_task.csv"] and [p.name for p in tables["machine_meta"]] == ["machine_meta.csv"]
    assert gather_tables("alibaba2018", [SHARD2, FIXTURES / "batch_task.csv", SHARD1])["batch_instance"] == [SHARD1, SHARD2]
    with pytest.raises(InputError, match="no batch_task shards"):
        gather_tables("alibaba2018", [SHARD1])
    with pytest.raises(InputError, match="no batch_instance shards"):
        gather_tables("alibaba2018", [FIXTURES / "batch_task.csv"])
    loose = tmp_path / "instances.csv"
    loose.write_text("")
    with pytest.raises(InputError, match="cannot tell which alibaba2018 table this is"):
        gather_tables("alibaba2018", [loose])


# -- malformed rows --------------------------------------------------------------------------------
MALFORMED = FIXTURES / "malformed"


def test_the_malformed_fixture_stops_at_its_first_bad_row_or_is_counted(tmp_path):
    with pytest.raises(InputError, match=rf"^{MALFORMED / 'batch_task.csv'}:3: unknown status 'Finished' \(one of Ready, "):
        convert("alibaba2018", [MALFORMED], tmp_path / "o.parquet")
    assert not (tmp_path / "o.parquet").exists()
    report = convert("alibaba2018", [MALFORMED], tmp_path / "o.parquet", skip_bad=True)
    assert report.bad_rows == {
        "rows with an unknown status": 2,  # one in each table
        "rows with the wrong number of fields": 1,
        "rows with a malformed value": 1,
        "rows with a negative time": 1,
    }
    assert report.tasks == 4 and report.counts["stages_without_batch_task_row"] == 1  # j_2 lost its batch_task row
    # with a good batch_task, the first bad row named is in the second shard
    fixed = tmp_path / "fixed"
    shutil.copytree(MALFORMED, fixed)
    (fixed / "batch_task.csv").write_text("M1,2,j_1,1,Terminated,100,200,100,0.5\n")
    with pytest.raises(InputError, match=rf"^{fixed / 'batch_instance-2.csv.gz'}:2: expected 14 fields, got 10$"):
        convert("alibaba2018", [fixed], tmp_path / "o.parquet")


GOOD = "ins_9,M1,j_1,1,Terminated,{s},{e},m_1,1,1,50,60,0.1,0.2"
BAD_INSTANCES = [
    ("too few fields", "ins_3,M1,j_1,1,Terminated,101,131,m_1,1,1", "expected 14 fields, got 10"),
    ("too many fields", GOOD.format(s=101, e=131) + ",7", "expected 14 fields, got 15"),
    ("time not an integer", "ins_3,M1,j_1,1,Terminated,101,1.5e2,m_1,1,1,50,60,0.1,0.2", "end_time is not an integer: '1.5e2'"),
    ("seq_no not an integer", "ins_3,M1,j_1,1,Terminated,101,131,m_1,one,1,50,60,0.1,0.2", "seq_no is not an integer: 'one'"),
    ("unknown status", "ins_3,M1,j_1,1,Finished,101,131,m_1,1,1,50,60,0.1,0.2", "unknown status 'Finished'"),
    ("negative start", "ins_3,M1,j_1,1,Terminated,-1,131,m_1,1,1,50,60,0.1,0.2", "start_time is negative: -1"),
    ("negative seq_no", "ins_3,M1,j_1,1,Terminated,101,131,m_1,-2,1,50,60,0.1,0.2", "seq_no is negative: -2"),
    ("instance name missing", ",M1,j_1,1,Terminated,101,131,m_1,1,1,50,60,0.1,0.2", "instance_name is missing"),
    ("usage not a number", "ins_3,M1,j_1,1,Terminated,101,131,m_1,1,1,lots,60,0.1,0.2", "cpu_avg is not a number: 'lots'"),
]


def _trace(folder: Path, shard2: list[str], task_rows: tuple[str, ...] = ("M1,2,j_1,1,Terminated,100,200,100,0.5",)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "batch_task.csv").write_text("\n".join(task_rows) + "\n")
    (folder / "batch_instance-1.csv.gz").write_bytes(gzip.compress((GOOD.format(s=101, e=111) + "\n").encode()))
    p = folder / "batch_instance-2.csv.gz"
    p.write_bytes(gzip.compress(("\n".join(shard2) + "\n").encode()))
    return p


@pytest.mark.parametrize(("line", "expect"), [(b, e) for _n, b, e in BAD_INSTANCES], ids=[n for n, _b, _e in BAD_INSTANCES])
def test_a_malformed_instance_row_is_named_by_shard_and_line_or_skipped_and_counted(tmp_path, line, expect):
    shard = _trace(tmp_path / "t", [GOOD.format(s=101, e=121).replace("ins_9", "ins_8"), line, GOOD.format(s=101, e=131).replace("ins_9", "ins_7")])
    with pytest.raises(InputError) as e:
        convert("alibaba2018", [tmp_path / "t"], tmp_path / "o.parquet")
    assert str(e.value).startswith(f"{shard}:2: ") and expect in str(e.value)
    assert not (tmp_path / "o.parquet").exists()
    report = convert("alibaba2018", [tmp_path / "t"], tmp_path / "o.parquet", skip_bad=True)
    assert sum(report.bad_rows.values()) == 1 and report.tasks == 3
    assert next(read_columnar(tmp_path / "o.parquet")).durations == [10.0, 20.0, 30.0]


BAD_TASKS = [
    ("too few fields", "M2,1,j_1,1,Terminated,100,200", "expected 9 fields, got 7"),
    ("start not an integer", "M2,1,j_1,1,Terminated,soon,200,100,0.5", "start_time is not an integer: 'soon'"),
    ("plan_mem not a number", "M2,1,j_1,1,Terminated,100,200,100,half", "plan_mem is not a number: 'half'"),
    ("unknown status", "M2,1,j_1,1,Done,100,200,100,0.5", "unknown status 'Done'"),
    ("negative instance_num", "M2,-1,j_1,1,Terminated,100,200,100,0.5", "instance_num is negative: -1"),
    ("job name missing", "M2,1,,1,Terminated,100,200,100,0.5", "job_name is missing"),
]


@pytest.mark.parametrize(("line", "expect"), [(b, e) for _n, b, e in BAD_TASKS], ids=[n for n, _b, _e in BAD_TASKS])
def test_a_malformed_task_row_is_named_by_file_and_line_or_skipped_and_counted(tmp_path, line, expect):
    _trace(tmp_path / "t", [GOOD.format(s=101, e=121).replace("ins_9", "ins_8")], ("M1,2,j_1,1,Terminated,100,200,100,0.5", line))
    with pytest.raises(InputError) as e:
        convert("alibaba2018", [tmp_path / "t"], tmp_path / "o.parquet")
    assert str(e.value).startswith(f"{tmp_path / 't' / 'batch_task.csv'}:2: ") and expect in str(e.value)
    report = convert("alibaba2018", [tmp_path / "t"], tmp_path / "o.parquet", skip_bad=True)
    assert sum(report.bad_rows.values()) == 1 and report.counts["stages"] == 1 and report.tasks == 2


def test_nothing_kept_is_one_clear_error(tmp_path):
    _trace(tmp_path / "t", ["ins_8,M1,j_1,1,Failed,101,111,m_1,1,1,50,60,0.1,0.2"])
    (tmp_path / "t" / "batch_instance-1.csv.gz").unlink()
    with pytest.raises(InputError, match=r"no task of the alibaba2018 input could be kept \(failed: 1\)"):
        convert("alibaba2018", [tmp_path / "t"], tmp_path / "o.parquet")


def test_cli(tmp_path, capsys):
    out = tmp_path / "a.parquet"
    assert main(["trace", "convert", "--format", "alibaba2018", str(FIXTURES), "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    assert '"tasks": 238' in captured.out and '"stages_without_batch_task_row": 1' in captured.out
    assert "wrote 32 jobs (238 tasks)" in captured.err and "failed: 3" in captured.err
    assert main(["trace", "convert", "--format", "alibaba2018", str(FIXTURES), "--out", str(tmp_path / "a.tr")]) == 2
    assert "converts to the columnar format only" in capsys.readouterr().err
    assert main(["trace", "convert", "--format", "alibaba2018", str(FIXTURES), "--out", str(out), "--format-option", "cores=2"]) == 2
    assert "its options: machine_cores" in capsys.readouterr().err


# -- the vectorized fold against a row-by-row definition -------------------------------------------
def reference(task_rows: list[tuple], instance_rows: list[tuple]) -> list[tuple]:
    """The interpretation row by row: ``(job ID, arrival, durations by task index)`` in arrival order."""
    stages: dict[tuple[str, str], int] = {}
    start_of: dict[int, int] = {}
    for name, job, start in task_rows:
        if (job, name) not in stages:
            stages[job, name] = len(stages)
            start_of[stages[job, name]] = start
    known = len(stages)
    best: dict[tuple[int, str], tuple] = {}
    first: dict[tuple[int, str], int] = {}
    for row, (inst, name, job, status, start, end, seq) in enumerate(instance_rows):
        code = stages.setdefault((job, name), len(stages))
        terminated = status == "Terminated"
        timed = start > 0 and end > 0 and end >= start
        kind = (2 if timed else 1) if terminated else 0
        why = STATUSES.index(status) + 1 if kind != 1 else (8 if start == 0 or end == 0 else 9)
        rank = (kind, seq, why, end - start)
        key = (code, inst)
        first.setdefault(key, row)
        if key not in best or rank > best[key]:
            best[key] = rank
    out = []
    for code in range(len(stages)):
        kept = sorted((first[k], r[3]) for k, r in best.items() if k[0] == code and r[0] == 2)
        if not kept:
            continue
        started = start_of[code] if code < known else 0
        # else the earliest start of any Terminated run with known times (not only the runs kept)
        arrival = started if started > 0 else min(
            s for (_i, n, j, status, s, e, _q) in instance_rows if stages[j, n] == code and status == "Terminated" and 0 < s <= e
        )
        out.append((code, float(arrival), [float(d) for _f, d in kept]))
    return sorted(out, key=lambda t: (t[1], t[0]))


_INSTANCE = st.tuples(
    st.sampled_from(["ins_1", "ins_2", "ins_3", "ins_01", "a7"]),  # numbered names and hashed ones
    st.sampled_from(["M1", "R2_1"]),
    st.sampled_from(["j_1", "j_2"]),
    st.sampled_from(["Terminated", "Terminated", "Terminated", *STATUSES]),
    st.sampled_from([0, 3, 5, 8]),  # start
    st.sampled_from([0, 4, 8, 9, 20]),  # end
    st.integers(0, 3),  # seq_no
)
_TASK = st.tuples(st.sampled_from(["M1", "R2_1"]), st.sampled_from(["j_1", "j_2"]), st.sampled_from([0, 1, 6]))


@settings(max_examples=120, deadline=None)
@given(tasks=st.lists(_TASK, max_size=5), rows=st.lists(_INSTANCE, min_size=1, max_size=30), cut=st.integers(0, 30),
       run_rows=st.sampled_from([1, 2, 5, 100]), block_bytes=st.sampled_from([200, 400, 1 << 20]), chunk_rows=st.integers(1, 6))  # fmt: skip
def test_the_vectorized_conversion_is_the_row_by_row_definition(tasks, rows, cut, run_rows, block_bytes, chunk_rows):
    """Any cut into shards, blocks (an instance's runs in different blocks), runs (in different runs) and merged
    chunks (a stage's rows split between two: one run of 100 rows is sorted in memory and cut in chunks)."""
    want = reference(tasks, rows)
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        bt = folder / "batch_task.csv"
        bt.write_text("".join(f"{n},1,{j},1,Terminated,{s},0,100,0.5\n" for n, j, s in tasks))
        lines = [f"{i},{n},{j},1,{status},{s},{e},m_1,{q},3,1,1,0.1,0.1\n" for i, n, j, status, s, e, q in rows]
        shards = [folder / "batch_instance-1.csv", folder / "batch_instance-2.csv"]
        shards[0].write_text("".join(lines[:cut]))
        shards[1].write_text("".join(lines[cut:]))
        tables = convert_alibaba2018(RawJob({"batch_task": [bt], "batch_instance": shards}, spill_dir=folder), run_rows=run_rows, block_bytes=block_bytes, chunk_rows=chunk_rows)
        got = []
        for t in tables:
            for job, arrival, duration in zip(t["job"].to_pylist(), t["arrival"].to_pylist(), t["duration"].to_pylist(), strict=True):
                if got and got[-1][0] == job:
                    got[-1][2].append(duration)
                else:
                    got.append((job, arrival, [duration]))
    assert got == want
