"""The lifecycle recorder, summaries and export, against hand-computed examples."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.errors import InvariantError
from schedlab.metrics import (
    COMMUNICATION,
    FRAMEWORK_QUEUING,
    PROCESSING,
    Recorder,
    build_summary,
    inconsistencies_frame,
    jobs_frame,
    stats,
    tasks_frame,
    utilization_frame,
    write_json,
    write_run,
)


def _example() -> Recorder:
    rec = Recorder()
    rec.add_job(0, 1.0, [2.0, 3.0], ideal_jrt=3.0)
    rec.task_started(1, 1.0, worker=1)  # placed at arrival: zero allocation time
    rec.mark(0, 1.5, FRAMEWORK_QUEUING)
    rec.mark(0, 1.7, PROCESSING)
    rec.task_started(0, 2.0, worker=0, component=COMMUNICATION)
    rec.task_finished(1, 4.0)
    rec.task_finished(0, 4.0)
    assert not rec.task_reported(0, 4.2)
    assert rec.task_reported(1, 4.5)  # last report completes the job
    return rec


def test_allocation_components_sum_to_allocation_time():
    t = tasks_frame(_example())
    row = t.iloc[0]
    assert row.allocation_time == pytest.approx(1.0)
    assert (row.framework_queuing, row.processing, row.worker_queuing, row.communication) == pytest.approx((0.5, 0.2, 0.0, 0.3))
    assert t.iloc[1].allocation_time == 0.0
    assert t.worker.tolist() == [0, 1] and t.starts.tolist() == [1, 1]


def test_jrt_is_measured_when_the_scheduler_learns_of_the_last_task():
    j = jobs_frame(_example()).iloc[0]
    assert (j.completion, j.jrt, j.ideal_jrt, j.jrt_delay) == pytest.approx((4.5, 3.5, 3.0, 0.5))


def test_jrt_delay_is_split_into_short_and_long_jobs_by_the_trace_mean_duration():
    rec = Recorder()
    # job 0: short by its trace mean (1 s) though a task runs 100 s; job 1: long by its own durations' mean
    rec.add_job(0, 0.0, [1.0, 100.0], mean_duration=1.0)
    rec.add_job(1, 0.0, [200.0])
    rec.add_job(2, 0.0, [1.0])  # short, never completes
    for tid, end in ((0, 2.0), (1, 101.0), (2, 205.0)):
        rec.task_started(tid, 0.0, worker=tid)
        rec.task_finished(tid, end)
        rec.task_reported(tid, end)
    jobs = jobs_frame(rec)
    assert jobs["short"].tolist() == [True, False, True]
    assert jobs["mean_duration"].tolist() == pytest.approx([1.0, 200.0, 1.0])
    u = utilization_frame(rec, np.array([3.0]), ("slots",))
    s = build_summary(tasks_frame(rec), jobs, u, ("slots",))
    assert s["jrt_delay_short"]["count"] == 1 and s["jrt_delay_short"]["p99"] == pytest.approx(1.0)
    assert s["jrt_delay_long"]["count"] == 1 and s["jrt_delay_long"]["p50"] == pytest.approx(5.0)
    assert s["jrt_delay"]["count"] == 2


def test_a_class_without_jobs_has_count_zero_and_no_statistics():
    s = build_summary(tasks_frame(_example()), jobs_frame(_example()), pd.DataFrame({"time": [], "slots": []}), ("slots",))
    assert s["jrt_delay_short"]["count"] == 1 and s["jrt_delay_long"]["count"] == 0
    assert s["jrt_delay_long"]["p99"] is None


def test_lifecycle_violations_are_invariant_errors():
    rec = Recorder()
    rec.add_job(0, 0.0, [1.0])
    with pytest.raises(InvariantError, match="finished without running"):
        rec.task_finished(0, 1.0)
    with pytest.raises(InvariantError, match="before it finished"):
        rec.task_reported(0, 1.0)
    rec.task_started(0, 0.0, 3)
    with pytest.raises(InvariantError, match="started twice"):
        rec.task_started(0, 0.5, 4)
    rec.task_finished(0, 1.0)
    with pytest.raises(InvariantError, match="finished twice"):
        rec.task_finished(0, 1.0)
    rec.task_reported(0, 1.0)
    with pytest.raises(InvariantError, match="reported finished twice"):
        rec.task_reported(0, 1.0)
    with pytest.raises(InvariantError, match="in order"):
        rec.add_job(5, 0.0, [1.0])


def test_preempted_runs_restart_and_are_excluded_from_allocation_time():
    rec = Recorder()
    rec.add_job(0, 0.0, [4.0])
    rec.task_started(0, 1.0, 0)  # waited 1 s
    rec.task_preempted(0, 3.0)  # ran 2 s, killed
    rec.task_started(0, 3.5, 1)  # waited 0.5 s more
    rec.task_finished(0, 7.5)
    t = tasks_frame(rec).iloc[0]
    assert t.allocation_time == pytest.approx(1.5) and t.starts == 2 and t.worker == 1
    assert rec.counters["preemptions"] == 1
    u = utilization_frame(rec, np.array([2.0]), ("slots",))
    # busy: [1,3) on worker 0 and [3.5,7.5) on worker 1, over 2 slots
    assert u.slots.tolist() == pytest.approx([0.0, 0.5, 0.5, 0.25, 0.5, 0.5, 0.5, 0.25])


def test_stats_of_known_values():
    s = stats([1, 2, 3, 4, float("nan")])
    assert s["count"] == 4 and s["mean"] == 2.5 and s["p50"] == 2.5 and s["max"] == 4
    assert s["p90"] == pytest.approx(3.7)
    empty = stats([])
    assert empty["count"] == 0 and np.isnan(empty["mean"])


def test_utilization_weights_requests_in_multi_resource_mode():
    rec = Recorder()
    rec.add_job(0, 0.0, [1.0, 2.0])
    rec.task_started(0, 0.0, 0)
    rec.task_started(1, 0.0, 0)
    rec.task_finished(0, 1.0)
    rec.task_finished(1, 2.0)
    u = utilization_frame(rec, np.array([8.0, 100.0]), ("cores", "memory_mb"), np.array([[2.0, 10.0], [4.0, 50.0]]))
    assert u.cores.tolist() == pytest.approx([6 / 8, 4 / 8])
    assert u.memory_mb.tolist() == pytest.approx([0.6, 0.5])
    s = build_summary(tasks_frame(rec), jobs_frame(rec), u, ("cores", "memory_mb"))
    assert s["utilization"]["mean"] == pytest.approx(5 / 8)
    assert set(s["utilization_by_resource"]) == {"cores", "memory_mb"}


def test_export_is_complete_and_json_safe(tmp_path):
    rec = _example()
    tables = {"tasks": tasks_frame(rec), "jobs": jobs_frame(rec)}
    files = write_run(tmp_path / "run", tables, {"x": float("nan"), "y": np.float64(2.0)}, formats=("parquet", "csv"))
    assert [f.name for f in files][-1] == "summary.json"
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == {"x": None, "y": 2.0}
    assert pd.read_parquet(tmp_path / "run" / "tasks.parquet").shape[0] == 2
    assert pd.read_csv(tmp_path / "run" / "jobs.csv").jrt_delay.tolist() == pytest.approx([0.5])
    assert not [p for p in (tmp_path / "run").iterdir() if p.name.endswith(".tmp")]


def test_failed_write_leaves_the_previous_file(tmp_path):
    p = tmp_path / "s.json"
    write_json(p, {"ok": 1})

    class Boom:
        pass

    with pytest.raises(TypeError):
        write_json(p, {"bad": Boom()})
    assert json.loads(p.read_text()) == {"ok": 1}
    assert [x.name for x in tmp_path.iterdir()] == ["s.json"]


def test_written_files_get_the_usual_permissions(tmp_path):
    import os

    mask = os.umask(0o022)
    try:
        p = write_json(tmp_path / "x.json", {"a": 1})
        assert p.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(mask)


# -- bounded memory: chunks retire to the spill, and read back bit for bit -------------------------------
def _busy_run(spill: bool, tmp_path) -> Recorder:
    """150 jobs of 1,000 tasks (two chunks retire), run and reported in a shuffled order; the last five never finish."""
    import random

    rng = random.Random(7)
    rec = Recorder(spill=spill, spill_dir=str(tmp_path))
    for j in range(150):
        rec.add_job(j, float(j), [rng.uniform(0.5, 9.0) for _ in range(1000)])
    order = list(range(rec.num_tasks - 5))
    rng.shuffle(order)
    for tid in order:
        now = tid // 1000 + rng.random()
        rec.mark(tid, now, PROCESSING)
        rec.task_started(tid, now + 0.5, tid % 97, COMMUNICATION)
        if tid % 1001 == 0:
            rec.task_preempted(tid, now + 0.7)
            rec.task_started(tid, now + 0.9, 3)
        rec.task_finished(tid, now + 2.0)
        rec.task_reported(tid, now + 2.5)
    return rec


def test_retired_chunks_read_back_exactly_as_an_unbounded_recorder_holds_them(tmp_path):
    spilled, kept = _busy_run(True, tmp_path / "a"), _busy_run(False, tmp_path / "b")
    assert spilled.spilled_tasks == 2 * 65536 and kept.spilled_tasks == 0
    pd.testing.assert_frame_equal(tasks_frame(spilled), tasks_frame(kept), check_exact=True)
    a, b = tasks_frame(spilled, 65000, 70000), tasks_frame(kept)[65000:70000].reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    ua, ub = (utilization_frame(r, np.array([97.0]), ("slots",)) for r in (spilled, kept))
    pd.testing.assert_frame_equal(ua, ub, check_exact=True)
    assert spilled.unfinished_tasks() == 5
    with pytest.raises(InvariantError, match="after its completion was reported"):
        spilled.task_reported(0, 999.0)
    spilled.close()
    assert not any((tmp_path / "a").iterdir())


def test_a_streamed_task_table_is_the_table(tmp_path):
    from schedlab.metrics.summary import TaskRecords

    rec = _busy_run(True, tmp_path)
    masks = list(range(rec.num_tasks))
    records = TaskRecords(rec, masks)
    whole = records.frame()
    assert whole.constraints.tolist() == masks
    write_run(tmp_path / "run", {"tasks": records}, {}, formats=("parquet", "csv"))
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "run" / "tasks.parquet"), whole, check_exact=True)
    csv = pd.read_csv(tmp_path / "run" / "tasks.csv")
    assert len(csv) == len(whole) and csv.task.tolist() == whole.task.tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=60))
def test_unit_weight_busy_integral_is_bit_identical_to_the_weighted_form(runs):
    from schedlab.metrics.summary import _busy_integral

    s = np.array([a / 4 for a, b in runs]) + 0.1
    e = s + np.array([b / 3 for a, b in runs])
    points = np.arange(0.0, 25.0)
    weighted = _busy_integral(points, s, e, np.ones(len(s)))
    unit = _busy_integral(points, s.copy(), e.copy(), None)
    assert weighted.tobytes() == unit.tobytes()


def test_a_spill_folder_that_cannot_be_made_is_one_clear_error(tmp_path):
    from schedlab.errors import InputError

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    rec = Recorder(spill_dir=str(blocker / "spill"))
    rec.add_job(0, 0.0, [1.0] * 65536)
    for tid in range(65535):
        rec.task_started(tid, 0.0, 0)
        rec.task_finished(tid, 1.0)
        rec.task_reported(tid, 1.0)
    rec.task_started(65535, 0.0, 0)
    rec.task_finished(65535, 1.0)
    with pytest.raises(InputError, match="cannot make a folder for finished tasks' records"):
        rec.task_reported(65535, 1.0)


def test_inconsistencies_are_counted_per_second_and_gm():
    rec = Recorder()
    assert inconsistencies_frame(rec).empty and list(inconsistencies_frame(rec).columns) == ["time", "gm", "inconsistencies"]
    rec.inconsistency(2, 10.4, 3)
    rec.inconsistency(0, 10.9)
    rec.inconsistency(2, 10.0)
    rec.inconsistency(0, 7.2, 2)
    f = inconsistencies_frame(rec)
    assert f[["time", "gm", "inconsistencies"]].values.tolist() == [[7.0, 0, 2], [10.0, 0, 1], [10.0, 2, 4]]
