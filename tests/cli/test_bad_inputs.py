"""Every command against every kind of bad input: one line naming the user's path, exit 2, no traceback, nothing written.

Table-driven: each case is a command line (with ``{name}`` placeholders for the
bad inputs made in a fresh folder) and a text the error line must contain. The
commands that show progress run both with and without ``-q`` (counting jobs
for a progress bar once read a trace before the reader validated it). After
each case the folder must hold exactly what it held before: a refused command
writes nothing, not even a lock or an empty results folder.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from schedlab.cli import main

TRACE = "0 2 1.0 1.0 1.0\n1 1 2.0 2.0\n2 2 2.0 1.0 3.0\n"  # arrival, tasks, mean duration, durations
NO_SUCH = "/proc/schedlab-nowhere"  # a folder no one, root included, can create


def make_inputs(d: Path) -> dict[str, str]:
    """The bad inputs (and a few good ones the commands need), by placeholder name."""
    (d / "binary.tr").write_bytes(bytes(range(256)) * 8)
    good = gzip.compress(TRACE.encode() * 200)
    (d / "truncated.tr.gz").write_bytes(good[: len(good) // 2])
    (d / "notgzip.tr.gz").write_text(TRACE)
    (d / "empty.tr").write_text("")
    (d / "comments.tr").write_text("# only a comment\n\n")
    (d / "adir").mkdir()
    (d / "afile").write_text("x\n")
    (d / "good.tr").write_text(TRACE)
    (d / "text.parquet").write_text(TRACE)  # a columnar trace's name on a text file
    (d / "inst.json").write_text("{not json")
    (d / "empty.json").write_text("")
    (d / "cluster.yaml").write_text(
        "name: t\nseed: 0\ngms: [{id: 0, port: 7100}]\nlms:\n  - id: 0\n    port: 7101\n"
        "    hosts: [{id: 0, port: 7102, workers: [{count: 4}]}]\n"
    )
    names = {p.name.replace(".", "_"): str(p) for p in d.iterdir()}
    names["nowhere"] = NO_SUCH
    return names


def spec_for(d: Path, trace: str, name: str) -> str:
    path = d / f"{name}.yaml"
    path.write_text(
        f"name: {name}\nworkloads: [{{trace: {json.dumps(trace)}}}]\ndata_centers: [{{workers: 20}}]\n"
        "schedulers: [{name: ideal}]\nseeds: [0]\n"
    )
    return str(path)


# (command line, text the error must contain); {x} are make_inputs names
TRACE_INPUTS = ["binary_tr", "truncated_tr_gz", "notgzip_tr_gz", "empty_tr", "comments_tr", "adir", "text_parquet"]
CASES: list[tuple[str, str]] = []
for name in TRACE_INPUTS:
    CASES += [
        (f"simulate -s ideal -w 20 -t {{{name}}}", f"{{{name}}}"),
        (f"simulate -s ideal -w 20 -q -t {{{name}}}", f"{{{name}}}"),
        (f"trace info {{{name}}}", f"{{{name}}}"),
        (f"submit --embedded --cluster {{cluster_yaml}} --trace {{{name}}}", f"{{{name}}}"),
        (f"sweep {{spec:{name}}} --out {{adir}}/results", f"{{{name}}}"),
    ]
CASES += [
    # outputs: a folder where a file goes, a file where a folder goes, a place no one can write
    ("simulate -s ideal -w 20 -t {good_tr} --out {afile}", "{afile}"),
    ("simulate -s ideal -w 20 -t {good_tr} --summary-json {adir}", "{adir}"),
    ("simulate -s ideal -w 20 -t {good_tr} --out {adir}/ok --summary-json {nowhere}/s.json", "{nowhere}/s.json"),
    ("simulate -s ideal -w 20 -t {good_tr} --summary-json {afile}/s.json", "{afile}/s.json"),
    ("trace convert {good_tr} --out {adir}", "{adir}"),
    ("trace sample {good_tr} --jobs 1 --out {adir}", "{adir}"),
    ("trace sample {text_parquet} --jobs 1 --out {adir}/s.parquet", "{text_parquet}"),
    ("trace sample {good_tr} --jobs 0 --out {adir}/s.tr", "--jobs"),
    ("trace convert {text_parquet} --out {adir}/t.tr", "{text_parquet}"),
    ("trace convert {good_tr} --out {adir}/t.parquet --format swf2", "--format"),
    ("trace convert {good_tr} --out {adir}/t.parquet --format-option block_mb=64", "--format-option"),
    ("trace convert {good_tr} --out {adir}/t.parquet --format google2011 --format-option nope=1", "--format-option"),
    ("trace convert {good_tr} --out {adir}/t.parquet --format google2011 --format-option x", "--format-option"),
    ("trace generate --out {adir} --arrivals poisson:1 --tasks-per-job geom:2 --duration exp:1", "{adir}"),
    ("trace generate --out {nowhere}/t.tr --arrivals poisson:1 --tasks-per-job geom:2 --duration exp:1", "{nowhere}/t.tr"),
    ("sweep {spec:good_tr} --out {afile}", "{afile}"),
    ("grid sweep --out {afile} -s rand -d 0 --local-jobs 50 --global-jobs 50", "{afile}"),
    ("grid simulate --local-jobs 50 --global-jobs 50 --summary-json {adir}", "{adir}"),
    ("edge generate -o {adir}", "{adir}"),
    ("locality generate -o {nowhere}/i.json", "{nowhere}/i.json"),
    ("cluster init {adir}", "{adir}"),
    # inputs of the other domains
    ("edge solve {inst_json}", "{inst_json}"),
    ("edge solve {empty_json}", "{empty_json}"),
    ("edge solve {adir}", "{adir}"),
    ("locality solve {inst_json}", "{inst_json}"),
    ("locality solve {binary_tr}", "{binary_tr}"),
    ("grid simulate --local-swf {binary_tr} --global-jobs 50", "{binary_tr}"),
    # sizes and options out of range
    ("simulate -s ideal -t {good_tr} -w 1000000000", "--workers"),
    ("sweep {spec:good_tr} --out {adir}/r --jobs 0", "--jobs"),
    ("sweep {spec:good_tr} --out {adir}/r --jobs 100000", "--jobs"),
    ("sweep {spec:good_tr} --out {adir}/r --backend dask", "--backend"),
    ("grid sweep --out {adir}/g -s rand -d 0 --local-jobs 50 --global-jobs 50 --jobs 100000", "--jobs"),
    ("grid simulate --local-jobs 10000000000 --global-jobs 50", "--local-jobs"),
    ("edge generate -o {adir}/e.json --jobs 2000000000", "--jobs"),
    ("locality generate -o {adir}/l.json --tasks 10000000000", "--tasks"),
    # empty: nothing to simulate is said, not "succeeded" with null statistics
    ("grid simulate --local-jobs 50 --global-jobs 0", "--global-jobs"),
    # durations: a unit we do not know, a negative one
    ("chaos --cluster {cluster_yaml} --trace {good_tr} --every 5x", "--every: expected a duration such as 5, 5s, 500ms or 2m"),
    ("chaos --cluster {cluster_yaml} --trace {good_tr} --restart-after -1s", "--restart-after: must be a duration >= 0"),
    ("chaos --cluster {cluster_yaml} --trace {good_tr} --every 0s", "--every: must be > 0"),
]


def _expand(text: str, names: dict[str, str], d: Path) -> str:
    out = text
    while "{spec:" in out:
        start = out.index("{spec:")
        end = out.index("}", start)
        key = out[start + 6 : end]
        out = out[:start] + spec_for(d, names[key], f"s_{key}") + out[end + 1 :]
    return out.format(**names)


def _snapshot(d: Path) -> dict[str, float]:
    return {str(p.relative_to(d)): p.stat().st_mtime for p in sorted(d.rglob("*"))}


@pytest.mark.parametrize(("command", "expect"), CASES, ids=[c for c, _ in CASES])
def test_bad_input_one_line_exit_2_nothing_written(command, expect, tmp_path, capsys):
    names = make_inputs(tmp_path)
    argv = _expand(command, names, tmp_path).split()
    before = _snapshot(tmp_path)
    rc = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, f"exit {rc}: {err}"
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    assert _expand(expect, names, tmp_path) in lines[0], lines[0]
    assert _snapshot(tmp_path) == before, "a refused command changed the folder"


def test_bad_options_never_touch_an_existing_results_folder(tmp_path, capsys):
    names = make_inputs(tmp_path)
    spec = spec_for(tmp_path, names["good_tr"], "ok")
    res = tmp_path / "results"
    assert main(["sweep", spec, "--out", str(res)]) == 0
    before = {p: p.read_bytes() for p in res.rglob("*") if p.is_file()}
    for bad in (["--jobs", "0"], ["--jobs", "-5"], ["--backend", "dask"]):
        assert main(["sweep", spec, "--out", str(res), *bad]) == 2
    assert {p: p.read_bytes() for p in res.rglob("*") if p.is_file()} == before
    capsys.readouterr()
    assert main(["compare", str(res)]) == 0


def test_outputs_are_all_or_nothing(tmp_path, monkeypatch, capsys):
    # the second output fails after the first was staged: neither lands
    from schedlab import atomic

    names = make_inputs(tmp_path)
    real = atomic.os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(dst)
        if str(dst).endswith("s.json"):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    out = tmp_path / "ok"
    rc = main(["simulate", "-s", "ideal", "-w", "20", "-q", "-t", names["good_tr"], "--out", str(out), "--summary-json", str(tmp_path / "s.json")])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "\n" not in err
    assert not list(tmp_path.rglob("*.tmp"))
    assert not (tmp_path / "s.json").exists()
    # the files renamed before the failure are named in the one error line, and nothing else was left
    written = sorted(p.name for p in out.iterdir())
    assert written and all(name in err for name in written), err
    assert str(tmp_path / "s.json") in err


def test_a_failing_run_writes_no_output(tmp_path, capsys, monkeypatch):
    # the run itself fails after the options were checked: no output folder, no summary
    import schedlab.engine

    names = make_inputs(tmp_path)

    def boom(*_a, **_k):
        raise schedlab.errors.InputError("run", "failed on purpose")

    monkeypatch.setattr(schedlab.engine, "simulate", boom)
    before = _snapshot(tmp_path)
    assert main(["simulate", "-s", "ideal", "-w", "20", "-q", "-t", names["good_tr"], "--out", str(tmp_path / "o"),
                 "--summary-json", str(tmp_path / "s.json")]) == 2
    assert _snapshot(tmp_path) == before


def test_two_grid_sweeps_on_one_folder_the_second_is_refused(tmp_path, capsys):
    from schedlab.folderlock import exclusive_folder

    with exclusive_folder(tmp_path / "g"):
        rc = main(["grid", "sweep", "--out", str(tmp_path / "g"), "-s", "rand", "-d", "0", "--local-jobs", "50", "--global-jobs", "50", "-q"])
    assert rc == 2 and "another sweep" in capsys.readouterr().err


def test_grid_sweep_resume_key_covers_every_option(tmp_path, capsys):
    out = tmp_path / "g"
    base = ["grid", "sweep", "--out", str(out), "-s", "rand", "-d", "0", "--global-jobs", "60", "-q"]
    assert main([*base, "--local-jobs", "50"]) == 0
    first = capsys.readouterr().out
    assert main([*base, "--local-jobs", "80"]) == 0  # other workload: new runs, not the old ones
    second = capsys.readouterr().out
    assert first != second
    rows = __import__("pandas").read_csv(out / "results.csv")  # this sweep's rows; the store keeps both sweeps' runs
    assert len(rows) == 2 and list(rows.local_jobs.unique()) == [80]
    runs = sorted((out / "runs").iterdir())
    assert len(runs) == 4
    mtimes = [(r / "summary.json").stat().st_mtime_ns for r in runs]
    assert main([*base, "--local-jobs", "50"]) == 0  # resumed: nothing new to run
    assert capsys.readouterr().out == first
    assert sorted((out / "runs").iterdir()) == runs and [(r / "summary.json").stat().st_mtime_ns for r in runs] == mtimes


@pytest.mark.skipif(os.geteuid() != 0, reason="uses /proc, which only root could otherwise mistake for writable")
def test_root_cannot_write_proc_so_the_probe_is_real(tmp_path):
    from schedlab.cliutil import check_output_file
    from schedlab.errors import InputError

    with pytest.raises(InputError, match="cannot write"):
        check_output_file(Path(NO_SUCH) / "x.json", "--out")


def test_grid_results_written_before_run_ids_are_resumed_not_rerun(tmp_path, capsys):
    import pandas as pd

    out = tmp_path / "g"
    base = ["grid", "sweep", "--out", str(out), "-s", "rand,qlen", "-d", "0,1", "--local-jobs", "50", "--global-jobs", "60", "-q"]
    assert main(base) == 0
    first = pd.read_csv(out / "results.csv")
    first.drop(columns="run_id").to_csv(out / "results.csv", index=False)  # an older schedlab's file
    shown = capsys.readouterr().out
    assert main(base) == 0
    again = pd.read_csv(out / "results.csv")
    assert capsys.readouterr().out == shown
    assert len(again) == len(first) and list(again.run_id) == list(first.run_id)
    assert (again.simulation_seconds == first.simulation_seconds).all(), "rows were rerun"
