"""Jobs after their client has gone: submit --detach prints ids, `schedlab jobs` and `job status` read their
state from the job ledger (a RabbitMQ stream) and the GMs' open jobs — also across a GM killed and restarted."""

from __future__ import annotations

import asyncio
import json
import time

from schedlab.cli import main
from schedlab.services import supervise
from schedlab.services.clusterfile import load_cluster
from schedlab.services.ledger import job_state

from .helpers import write_cluster
from .test_cluster import queues_of


def test_the_state_of_a_job() -> None:
    sub = {"job": 7, "tasks": 3, "gm": 0, "time": 1.0, "user": 2}
    assert job_state(sub, {"time": 5.0}, None, True)["state"] == "done"
    assert job_state(sub, None, {"running": 0, "completed": 0}, True)["state"] == "queued"
    row = job_state(sub, None, {"running": 1, "completed": 1}, True)
    assert (row["state"], row["queued"], row["running"], row["completed"]) == ("running", 1, 1, 1)
    assert job_state(sub, None, None, False)["state"] == "unknown"
    assert job_state(sub, None, None, True)["state"] == "queued"  # in the GM's queue, not delivered yet


def _jobs(path, capsys) -> dict[int, dict]:
    capsys.readouterr()
    assert main(["jobs", "--cluster", str(path), "--json"]) == 0
    return {r["job"]: r for r in json.loads(capsys.readouterr().out)}


def test_detach_list_status_and_a_gm_restart(tmp_path, capsys) -> None:
    path = write_cluster(tmp_path, gms=1, lms=1, workers=2, heartbeat=0.2)
    loaded = load_cluster(path)
    trace = tmp_path / "t.tr"
    trace.write_text("0 2 4 4 4\n0.1 2 4 4 4\n")  # 4 tasks of 4 s on 2 workers: one job runs, the other waits
    asyncio.run(supervise.up(loaded, path, timeout=60))
    try:
        capsys.readouterr()
        assert main(["submit", "--cluster", str(path), "--trace", str(trace), "--detach"]) == 0
        ids = [int(x) for x in capsys.readouterr().out.split()]
        assert len(ids) == 2
        time.sleep(1.0)
        jobs = _jobs(path, capsys)
        assert sorted(j["state"] for j in jobs.values()) == ["queued", "running"], jobs
        assert all(j["tasks"] == 2 for j in jobs.values())
        supervise.kill(path, "gm", 0)  # the GM dies between submission and the jobs' ends; its queue keeps them
        time.sleep(0.5)
        assert {j["state"] for j in _jobs(path, capsys).values()} == {"unknown"}
        asyncio.run(supervise.restart(loaded, path, "gm", 0, timeout=30))
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            jobs = _jobs(path, capsys)
            if all(j["state"] == "done" for j in jobs.values()):
                break
            time.sleep(0.5)
        assert set(jobs) == set(ids) and all(j["state"] == "done" and j["completed"] == 2 for j in jobs.values()), jobs
        assert main(["job", "status", str(ids[0]), "--cluster", str(path)]) == 0
        assert json.loads(capsys.readouterr().out)["state"] == "done"
        assert main(["job", "status", "12345", "--cluster", str(path)]) == 1
        assert "no job 12345 in the ledger" in capsys.readouterr().err
        assert main(["jobs", "--cluster", str(path), "--state", "nope"]) == 2
        capsys.readouterr()
        # retried twice on the real cluster (the same worker), then failed with its exit code, the attempts recorded
        assert main(["submit", "--cluster", str(path), "--command", "sh -c 'echo hello; echo oops >&2; exit 3'", "--retries", "2",
                     "--detach"]) == 0
        bad = int(capsys.readouterr().out)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _jobs(path, capsys)[bad]["state"] != "failed":
            time.sleep(0.3)
        row = _jobs(path, capsys)[bad]
        assert (row["state"], row["exit_code"], row["failed_tasks"]) == ("failed", 3, 1), row
        assert main(["job", "logs", str(bad), "--cluster", str(path)]) == 0
        logs = capsys.readouterr().out.splitlines()
        # the outcome is the last attempt's, its output tails with it
        assert logs == ["task 0: failed  exit 3  attempts 3", "--- stdout ---", "hello", "--- stderr ---", "oops"], logs
        assert main(["job", "logs", str(bad), "--cluster", str(path), "--task", "0"]) == 0
        assert capsys.readouterr().out.splitlines() == logs
        assert main(["job", "logs", str(bad), "--cluster", str(path), "--task", "1"]) == 2
        assert f"job {bad} has tasks 0..0, not 1" in capsys.readouterr().err
    finally:
        asyncio.run(supervise.down(loaded, path))
    assert queues_of(loaded.name) == []  # the ledger and the detached runs' record streams went with the cluster


def test_retries_run_a_failing_command_again_and_record_the_attempts(tmp_path, capsys) -> None:
    path, flag = tmp_path / "c.yaml", tmp_path / "flag"
    assert main(["cluster", "init", str(path), "--workers", "4"]) == 0
    capsys.readouterr()
    assert main(["submit", "--cluster", str(path), "--embedded", "--command", "sh -c 'echo try; exit 3'", "--retries", "2"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("status failed  exit 3  attempts 3 "), out
    once = f"sh -c 'test -e {flag} && exit 0; touch {flag}; exit 1'"  # fails the first time only
    assert main(["submit", "--cluster", str(path), "--embedded", "--command", once, "--retries", "3"]) == 0
    assert capsys.readouterr().out.startswith("status ok  exit 0  attempts 2 ")
    assert main(["submit", "--cluster", str(path), "--embedded", "--trace", "syn_250", "--retries", "1"]) == 2
    assert "error: --retries: needs --command" in capsys.readouterr().err
