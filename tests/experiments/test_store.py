"""The results store: finished runs are skipped, interrupted ones redone, nothing half-written or duplicated."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import schedlab.metrics.export as export
from schedlab.errors import InputError
from schedlab.experiments.matrix import expand
from schedlab.experiments.results import load_results
from schedlab.experiments.runner import run_sweep
from schedlab.experiments.spec import load_spec
from schedlab.sweeps.store import Store
from tests.experiments.helpers import TINY, comparable, write_spec

FOUR = TINY.replace("seeds: [0]", "seeds: [0, 1]")


def files(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in (root / "runs").rglob("*") if p.is_file()}


def no_temp_files(root: Path) -> bool:
    return not [p for p in root.rglob("*.tmp")]


def test_rerun_skips_finished_runs(tmp_path):
    spec = write_spec(tmp_path, FOUR)
    out = tmp_path / "res"
    umask = os.umask(0o022)
    os.umask(umask)
    first = run_sweep(spec, out, jobs=1)
    assert len(first.ran) == 4 and not first.skipped and not first.failed
    for rid in first.ran:
        d = out / "runs" / rid
        assert {p.name for p in d.iterdir()} == {"config.json", "tasks.parquet", "jobs.parquet", "utilization.parquet", "summary.json"}
        assert json.loads((d / "config.json").read_text())["id"] == rid
        assert stat.S_IMODE((d / "summary.json").stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600
    before = files(out)
    again = run_sweep(spec, out, jobs=1)
    assert not again.ran and sorted(again.skipped) == sorted(first.ran)
    assert files(out) == before  # nothing rewritten
    df = load_results(out)
    assert len(df) == 4 and df.attrs["unfinished"] == 0
    assert set(df["scheduler"]) == {"megha_random", "megha_min-constraints"}


class Crash(Exception):
    pass


def crash_on(monkeypatch, fn_name: str, nth: int) -> None:
    """Make the nth call of schedlab.metrics.export.<fn_name> die after it started — as a kill would."""
    real = getattr(export, fn_name)
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == nth:
            raise Crash(f"killed during {fn_name} #{nth}")
        return real(*args, **kwargs)

    monkeypatch.setattr(export, fn_name, dying)


@pytest.mark.parametrize(("fn_name", "nth"), [("write_table", 5), ("write_json", 2)])
def test_crash_between_two_writes_is_redone_on_rerun(tmp_path, monkeypatch, fn_name, nth):
    # A run writes config.json, then tasks, jobs and utilization tables (write_table), then summary.json
    # (export.write_json inside write_run). write_table #5 dies between the 2nd run's jobs and
    # utilization tables; write_json #2 dies between the 2nd run's tables and its summary.
    spec = write_spec(tmp_path, FOUR)
    clean = run_sweep(spec, tmp_path / "clean", jobs=1)
    out = tmp_path / "res"
    with monkeypatch.context() as m:
        crash_on(m, fn_name, nth)
        with pytest.raises(Crash):
            run_sweep(spec, out, jobs=1)
    runs = expand(load_spec(spec))
    store = Store(out)
    finished = [r.id for r in runs if store.is_finished(r)]
    assert len(finished) == 1  # the first run is safe; the second was cut short
    broken = runs[1]
    assert (out / "runs" / broken.id / "config.json").is_file()
    assert not (out / "runs" / broken.id / "summary.json").exists()
    assert no_temp_files(out)
    assert load_results(out).attrs["unfinished"] == 3

    rerun = run_sweep(spec, out, jobs=1)
    assert rerun.skipped == finished and rerun.redone == [broken.id]
    assert sorted(rerun.ran) == sorted(r.id for r in runs[1:])
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(r.id for r in runs)  # nothing duplicated
    for r in runs:  # and nothing differs from an uninterrupted sweep
        a = store.summary(r.id)
        b = Store(clean.root).summary(r.id)
        assert comparable(a) == comparable(b)
        pd.testing.assert_frame_equal(store.table(r.id, "jobs"), Store(clean.root).table(r.id, "jobs"))
    assert no_temp_files(out)


def test_a_changed_setting_is_a_new_run_and_old_runs_are_ignored(tmp_path):
    out = tmp_path / "res"
    first = run_sweep(write_spec(tmp_path, TINY), out, jobs=1)
    second = run_sweep(write_spec(tmp_path, TINY.replace("lms: 2", "lms: 1"), "b.yaml"), out, jobs=1)
    assert not set(first.ran) & set(second.ran) and len(second.ran) == 2
    assert len(list((out / "runs").iterdir())) == 4
    assert set(load_results(out)["id"]) == set(second.ran)


def test_asking_for_another_table_redoes_the_run(tmp_path):
    out = tmp_path / "res"
    run_sweep(write_spec(tmp_path, TINY + "tables: [jobs]\n"), out, jobs=1)
    assert not list((out / "runs").glob("*/tasks.parquet"))
    res = run_sweep(write_spec(tmp_path, TINY, "b.yaml"), out, jobs=1)
    assert len(res.redone) == 2 and len(list((out / "runs").glob("*/tasks.parquet"))) == 2


def test_two_sweeps_cannot_share_a_folder(tmp_path):
    out = tmp_path / "res"
    with Store(out).lock(), pytest.raises(InputError, match="another sweep"):
        run_sweep(write_spec(tmp_path, TINY), out, jobs=1)


def test_killed_sweep_loses_and_duplicates_nothing(tmp_path):
    """A real SIGKILL in the middle of a sweep, then a rerun."""
    spec = write_spec(tmp_path, FOUR.replace("jobs: 12", "jobs: 300").replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    out = tmp_path / "res"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "schedlab.cli", "sweep", str(spec), "--out", str(out), "--jobs", "1"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and not list((out / "runs").glob("*/summary.json")):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    runs = expand(load_spec(spec))
    done_before = {r.id for r in runs if Store(out).is_finished(r)}
    assert done_before  # at least one run was complete when the sweep died
    rc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert rc.returncode == 0, rc.stderr
    assert f"{len(done_before)} already finished" in rc.stderr
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(r.id for r in runs)
    assert all(Store(out).is_finished(r) for r in runs)
    assert no_temp_files(out)
