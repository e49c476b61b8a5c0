"""A run's records judge exactly-once from the user's side: a task's end reported twice is not a task run twice."""

from __future__ import annotations

from schedlab.services.records import FINISHED, RECOVERED_REPORT, REPORTED, STARTED, RunRecords


def records_of_one_task() -> RunRecords:
    r = RunRecords(1)
    r.add_job(0.0, [1.0], None, None, 1.0)
    return r


def test_the_same_runs_end_reported_again_is_counted_apart_and_a_second_run_is_a_duplicate():
    r = records_of_one_task()
    end = {"status": "ok", "worker": 3, "started_at": 0.5}
    r.event((STARTED, 0, 0.5, 3))
    r.event((FINISHED, 0, 1.5, end))
    r.event((REPORTED, 0, 1.6, 3))
    assert r.tasks_done == 1
    # an LM died before its record of the end reached the broker: the GM records the same run's end again
    r.event((FINISHED, 0, 1.5, dict(end)))
    assert r.counters["ends_reported_again"] == 1 and r.counters["duplicate_finishes"] == 0
    # another run's end (another worker, or another start) is the task run twice
    r.event((FINISHED, 0, 2.5, {**end, "worker": 4}))
    r.event((FINISHED, 0, 2.5, {**end, "started_at": 1.9}))
    assert r.counters["duplicate_finishes"] == 2


def test_a_repeat_before_the_report_is_judged_the_same_way():
    r = records_of_one_task()
    end = {"status": "ok", "worker": 3, "started_at": 0.5}
    r.event((FINISHED, 0, 1.5, end))
    r.event((FINISHED, 0, 1.5, dict(end)))
    r.event((FINISHED, 0, 1.7, {"status": "ok", "worker": 2, "started_at": 0.6}))
    assert r.counters["ends_reported_again"] == 1 and r.counters["duplicate_finishes"] == 1
    r.event((REPORTED, 0, 1.6, 3))
    assert r.tasks_done == 1


def test_a_restarted_gms_report_of_a_completion_already_reported_is_not_a_duplicate():
    r = records_of_one_task()
    r.event((FINISHED, 0, 1.5, {"status": "ok", "worker": 3, "started_at": 0.5}))
    r.event((REPORTED, 0, 1.6, 3))
    r.event((REPORTED, 0, 9.0, RECOVERED_REPORT))
    assert r.counters["reports_repeated_after_gm_restart"] == 1 and r.counters["duplicate_reports"] == 0
    r.event((REPORTED, 0, 9.5, 3))  # a second ordinary report is a duplicate
    assert r.counters["duplicate_reports"] == 1


def test_a_report_stamped_before_its_end_by_a_gm_whose_clock_is_behind_still_completes_the_task():
    # the GM's clock 20 s behind the worker host's: its report's stamp precedes the end it reports (found on the testbed:
    # the recorder refused the report, and the records after it in that message were never applied)
    r = records_of_one_task()
    r.event((STARTED, 0, 30.5, 3))
    r.event((FINISHED, 0, 31.5, {"status": "ok", "worker": 3, "started_at": 30.5}))
    r.event((REPORTED, 0, 11.6, 3))
    assert r.tasks_done == 1 and r.jobs_done == 1
    assert r.counters["reports_before_their_end"] == 1
