"""Restartable conversions (trace convert --work-dir): a conversion that fails part-way resumes after the last
shard it finished and writes what an uninterrupted conversion writes."""

from __future__ import annotations

import gzip
import json
import shutil

import pyarrow.parquet as pq
import pytest

import schedlab.workload.converters.google2011 as g2011
from schedlab.errors import InputError
from schedlab.workload.convert import convert

from .test_google2011 import FIXTURES


def _tree(tmp_path):
    """The fixture trace with its task_events cut into four shards (a task's events span shards)."""
    root = tmp_path / "trace"
    shutil.copytree(FIXTURES / "task_constraints", root / "task_constraints")
    lines = [ln for p in sorted((FIXTURES / "task_events").iterdir()) for ln in gzip.decompress(p.read_bytes()).decode().splitlines()]
    (root / "task_events").mkdir(parents=True)
    q = len(lines) // 4
    parts = [lines[:q], lines[q : 2 * q], lines[2 * q : 3 * q], lines[3 * q :]]
    for k, part in enumerate(parts):
        (root / "task_events" / f"part-{k:05d}-of-00004.csv.gz").write_bytes(gzip.compress(("\n".join(part) + "\n").encode(), mtime=0))
    return root, parts


def _shards_read(monkeypatch, module, reader: str) -> list[str]:
    """The names of the shards ``module``'s ``reader`` is asked to read from now on."""
    read: list[str] = []
    real = getattr(module, reader)

    def spy(paths, *a, **k):
        read.extend(p.name for p in paths)
        return real(paths, *a, **k)

    monkeypatch.setattr(module, reader, spy)
    return read


def test_a_failed_conversion_resumes_after_its_last_shard(tmp_path, monkeypatch):
    root, parts = _tree(tmp_path)
    clean = convert("google2011", [root], tmp_path / "clean.parquet", row_group_tasks=1000)
    expected = pq.read_table(tmp_path / "clean.parquet")

    # shard 3 has a malformed row: the conversion stops there, with shards 0-2 checkpointed
    shard3 = root / "task_events" / "part-00002-of-00004.csv.gz"
    shard3.write_bytes(gzip.compress(("\n".join([*parts[2][:5], "1,2,3", *parts[2][5:]]) + "\n").encode()))
    work = tmp_path / "work"
    with pytest.raises(InputError, match=r"part-00002-of-00004.csv.gz:6: expected 13 fields, got 3"):
        convert("google2011", [root], tmp_path / "out.parquet", work_dir=work, checkpoint_every_s=0, row_group_tasks=1000)
    assert (work / "checkpoint.json").exists() and not (tmp_path / "out.parquet").exists()

    # fixed, it resumes: shards 0 and 1 are not read again, and the result is the uninterrupted one
    shard3.write_bytes(gzip.compress(("\n".join(parts[2]) + "\n").encode()))
    read = _shards_read(monkeypatch, g2011, "read_csv_shards")
    report = convert("google2011", [root], tmp_path / "out.parquet", work_dir=work, checkpoint_every_s=0, row_group_tasks=1000)
    assert [n for n in read if n.startswith("part-")][:2] == ["part-00002-of-00004.csv.gz", "part-00003-of-00004.csv.gz"]
    assert pq.read_table(tmp_path / "out.parquet").equals(expected)
    assert report.as_dict() == clean.as_dict()  # rows read, drops and counts as if it had run in one go
    assert not work.exists()  # done: the work folder goes


def test_a_work_folder_belongs_to_one_conversion(tmp_path):
    root, parts = _tree(tmp_path)
    shard2 = root / "task_events" / "part-00001-of-00004.csv.gz"
    shard2.write_bytes(gzip.compress(("\n".join(["1,2,3", *parts[1]]) + "\n").encode()))
    work = tmp_path / "work"
    with pytest.raises(InputError, match="part-00001"):
        convert("google2011", [root], tmp_path / "out.parquet", work_dir=work, checkpoint_every_s=0)
    with pytest.raises(InputError, match="holds the checkpoints of another conversion"):
        convert("google2011", [root], tmp_path / "out.parquet", work_dir=work, checkpoint_every_s=0, scale_requests=False)
    # a shard already converted changes: refused
    shard1 = root / "task_events" / "part-00000-of-00004.csv.gz"
    shard1.write_bytes(gzip.compress(("\n".join(parts[0][:-1]) + "\n").encode()))
    with pytest.raises(InputError, match="changed after it was converted"):
        convert("google2011", [root], tmp_path / "out.parquet", work_dir=work, checkpoint_every_s=0)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("a user's file")
    with pytest.raises(InputError, match="must be a new or empty folder"):
        convert("google2011", [root], tmp_path / "out.parquet", work_dir=mine)
    assert (mine / "notes.txt").exists()
    # a conversion that failed before its first checkpoint leaves its folder, which a rerun takes
    root, parts = _tree(tmp_path / "again")
    shard0 = root / "task_events" / "part-00000-of-00004.csv.gz"
    shard0.write_bytes(gzip.compress(("\n".join(["1,2,3", *parts[0]]) + "\n").encode()))
    early = tmp_path / "early"
    with pytest.raises(InputError, match="part-00000"):
        convert("google2011", [root], tmp_path / "out.parquet", work_dir=early, checkpoint_every_s=0)
    shard0.write_bytes(gzip.compress(("\n".join(parts[0]) + "\n").encode()))
    convert("google2011", [root], tmp_path / "out.parquet", work_dir=early, checkpoint_every_s=0)
    assert not early.exists()
    with pytest.raises(InputError, match="the swim converter keeps no checkpoints"):
        convert("swim", [FIXTURES.parent / "swim" / "sample.tsv"], tmp_path / "o.parquet", work_dir=work, checkpoint_every_s=0)
    with pytest.raises(InputError, match="only raw trace formats keep a work folder"):
        convert("tr", ["syn_250"], tmp_path / "o.parquet", work_dir=work, checkpoint_every_s=0)


def test_a_killed_conversion_resumes(tmp_path):
    """SIGKILL a running `schedlab trace convert --work-dir` once it has checkpointed, rerun it: the output is the
    uninterrupted conversion's."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = tmp_path / "trace"
    (root / "task_events").mkdir(parents=True)
    # eight shards of 40,000 events: long enough to be killed part-way, short enough for a test
    job = 1
    for k in range(8):
        lines = []
        while len(lines) < 40_000:
            t = 700_000_000 + job * 1000
            for i in range(4):
                lines += [f"{t},,{job},{i},,0,u{job % 7},,1,0.01,0.01,,", f"{t + 10},,{job},{i},{i},1,u{job % 7},,1,0.01,0.01,,",
                          f"{t + 10 + (job % 50 + i) * 1_000_000},,{job},{i},{i},4,u{job % 7},,1,0.01,0.01,,"]  # fmt: skip
            job += 1
        (root / "task_events" / f"part-{k:05d}-of-00008.csv.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=1))
    convert("google2011", [root], tmp_path / "clean.parquet")
    work = tmp_path / "work"
    cmd = [sys.executable, "-m", "schedlab", "trace", "convert", "--format", "google2011", str(root), "--out", str(tmp_path / "out.parquet"),
           "--work-dir", str(work), "--checkpoint-every", "0"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (work / "checkpoint.json").exists():
            assert proc.poll() is None, "finished before its first checkpoint: the input is too small to kill part-way"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert not (tmp_path / "out.parquet").exists()
    done = json.loads((work / "checkpoint.json").read_text())["shards_done"]
    assert 1 <= done < 8
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert pq.read_table(tmp_path / "out.parquet").equals(pq.read_table(tmp_path / "clean.parquet"))
    assert not work.exists()


def test_a_failed_google2019_conversion_resumes(tmp_path, monkeypatch):
    import schedlab.workload.converters.google2019 as g2019

    src = FIXTURES.parent / "google2019"
    root = tmp_path / "g19"
    root.mkdir()
    shutil.copy(src / "collection_events-000000000000.json.gz", root)
    lines = [ln for p in sorted(src.glob("instance_events-*.json.gz")) for ln in gzip.decompress(p.read_bytes()).decode().splitlines()]
    q = len(lines) // 4
    parts = [lines[:q], lines[q : 2 * q], lines[2 * q : 3 * q], lines[3 * q :]]

    def write(k, rows):
        (root / f"instance_events-{k:012d}.json.gz").write_bytes(gzip.compress(("\n".join(rows) + "\n").encode(), mtime=0))

    for k, part in enumerate(parts):
        write(k, part)
    clean = convert("google2019", [root], tmp_path / "clean.parquet")
    write(2, [*parts[2][:3], "{not json", *parts[2][3:]])
    work = tmp_path / "work"
    with pytest.raises(InputError, match=r"instance_events-000000000002.json.gz:4: not valid JSON"):
        convert("google2019", [root], tmp_path / "out.parquet", work_dir=work, checkpoint_every_s=0)
    write(2, parts[2])
    read = _shards_read(monkeypatch, g2019, "read_json_shards")
    report = convert("google2019", [root], tmp_path / "out.parquet", work_dir=work, checkpoint_every_s=0)
    assert [n for n in read if n.startswith("instance_events")] == ["instance_events-000000000002.json.gz", "instance_events-000000000003.json.gz"]
    assert pq.read_table(tmp_path / "out.parquet").equals(pq.read_table(tmp_path / "clean.parquet"))
    assert report.as_dict() == clean.as_dict()
    assert not work.exists()


def test_a_failed_alibaba2018_conversion_resumes(tmp_path, monkeypatch):
    import schedlab.workload.converters.alibaba2018 as ali

    src = FIXTURES.parent / "alibaba2018"
    root = tmp_path / "ali"
    shutil.copytree(src, root, ignore=shutil.ignore_patterns("malformed", "README.md"))
    clean = convert("alibaba2018", [root], tmp_path / "clean.parquet")
    shard2 = root / "batch_instance-2.csv.gz"
    good = gzip.decompress(shard2.read_bytes()).decode().splitlines()
    shard2.write_bytes(gzip.compress(("\n".join([*good[:2], "ins_1,M1", *good[2:]]) + "\n").encode()))
    work = tmp_path / "work"
    with pytest.raises(InputError, match=r"batch_instance-2.csv.gz:3: expected 14 fields, got 2"):
        convert("alibaba2018", [root], tmp_path / "out.parquet", work_dir=work, checkpoint_every_s=0)
    shard2.write_bytes(gzip.compress(("\n".join(good) + "\n").encode()))
    read = _shards_read(monkeypatch, ali, "read_csv_shards")
    report = convert("alibaba2018", [root], tmp_path / "out.parquet", work_dir=work, checkpoint_every_s=0)
    assert [n for n in read if n.startswith("batch_instance")] == ["batch_instance-2.csv.gz"]
    assert pq.read_table(tmp_path / "out.parquet").equals(pq.read_table(tmp_path / "clean.parquet"))
    assert report.as_dict() == clean.as_dict()
    assert not work.exists()
