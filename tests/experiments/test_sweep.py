"""Sweeps: the local pool and Ray give the results of a serial run; failures are reported per run."""

from __future__ import annotations

import pandas as pd
import pytest

from schedlab.cli import main
from schedlab.experiments.runner import run_sweep
from schedlab.sweeps.store import Store
from tests.experiments.helpers import TINY, comparable, write_spec
from tests.helpers import write_lines


def assert_same_results(a, b) -> None:
    assert sorted(a.ran + a.skipped) == sorted(b.ran + b.skipped)
    sa, sb = Store(a.root), Store(b.root)
    for rid in a.ran:
        assert comparable(sa.summary(rid)) == comparable(sb.summary(rid))
        for t in ("tasks", "jobs", "utilization"):
            pd.testing.assert_frame_equal(sa.table(rid, t), sb.table(rid, t))


def test_local_pool_matches_a_serial_sweep(tmp_path):
    spec = write_spec(tmp_path, TINY)
    states = []
    serial = run_sweep(spec, tmp_path / "serial", jobs=1, progress=lambda s: states.append((s.done, s.todo, s.eta)))
    pool = run_sweep(spec, tmp_path / "pool", jobs=2)
    assert len(pool.ran) == 2
    assert_same_results(serial, pool)
    assert states[0] == (0, 2, None) and states[-1] == (2, 2, 0.0)


def test_ray_matches_the_local_pool(tmp_path):
    pytest.importorskip("ray")
    spec = write_spec(tmp_path, TINY)
    local = run_sweep(spec, tmp_path / "local", jobs=2)
    ray = run_sweep(spec, tmp_path / "ray", jobs=2, backend="ray")
    assert len(ray.ran) == 2 and not ray.failed
    assert_same_results(local, ray)


def test_ray_missing_or_bad_backend_is_one_line(tmp_path, capsys):
    spec = write_spec(tmp_path, TINY)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--backend", "spark"]) == 2
    assert "error: --backend: unknown backend 'spark'" in capsys.readouterr().err
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--address", "x:1"]) == 2
    assert "only used with --backend ray" in capsys.readouterr().err


def test_a_failing_run_is_reported_and_the_others_are_kept(tmp_path, capsys):
    write_lines(tmp_path / "bad.tr", ["0 2 1 1 1", "1 1 1 1", "2 2 1 1 x"])
    text = TINY.replace(
        '  - name: gen\n    generate: {jobs: 12, arrivals: "poisson:0.5", tasks_per_job: "geom:4", duration: "exp:2", seed: 3}\n',
        '  - trace: bad.tr\n  - name: gen\n    generate: {jobs: 5}\n',
    )
    spec = write_spec(tmp_path, text)
    rc = main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--jobs", "1"])
    err = capsys.readouterr().err
    assert rc == 1
    failures = [line for line in err.splitlines() if line.startswith("error: run ")]
    assert len(failures) == 2 and all("bad.tr:3: task duration is not a number: 'x'" in f for f in failures)
    assert "2 run(s) done" in err and "2 failed" in err
    # the failed runs left nothing behind, so a rerun tries them again
    assert len(list((tmp_path / "r" / "runs").iterdir())) == 2
