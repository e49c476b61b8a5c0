"""The services' commands: cluster init, submit --embedded, and their bad-input paths (one line, exit 2)."""

from __future__ import annotations

import json

import pytest

from schedlab.cli import main
from schedlab.services.clusterfile import load_cluster


def _err(capsys) -> str:
    e = capsys.readouterr().err.strip()
    assert "\n" not in e and "Traceback" not in e, e
    return e


def test_init_writes_a_file_that_loads(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    assert main(["cluster", "init", str(path), "--gms", "3", "--lms", "2", "--workers", "20", "--hosts-per-lm", "2"]) == 0
    assert "start it with `schedlab cluster up" in capsys.readouterr().err
    loaded = load_cluster(path)
    assert loaded.cluster.n == 20 and len(loaded.spec.gms) == 3 and len(loaded.hosts) == 4
    assert loaded.secret and len(loaded.secret) >= 32
    text = path.read_text()
    assert text.startswith("# schedlab cluster file") and "SCHEDLAB_CLUSTER_SECRET" in text
    # every LM has one partition per GM
    assert [len(parts) for parts in loaded.cluster.topology.partitions] == [3, 3]
    assert main(["cluster", "init", str(path)]) == 2
    assert "exists (use --force to replace it)" in _err(capsys)


def test_init_multi_resource(tmp_path):
    path = tmp_path / "m.yaml"
    assert main(["cluster", "init", str(path), "--resources", "cores,memory_mb", "--capacity", "4,4096", "--workers", "8"]) == 0
    cl = load_cluster(path).cluster
    assert not cl.slot_mode and cl.capacity.tolist()[0] == [4.0, 4096.0]


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--gms", "0"], "error: --gms: must be >= 1, got 0"),
        (["--workers", "3", "--gms", "2", "--lms", "2"], "error: --workers: 3 workers cannot give each of 2 LMs a partition for each of 2 GMs"),
        (["--capacity", "4"], "error: --capacity: needs --resources"),
        (["--resources", "cores", "--capacity", "x"], "error: --capacity: expected numbers, got 'x'"),
        (["--base-port", "65530"], "are out of range"),
    ],
)
def test_init_bad_options(tmp_path, capsys, args, msg):
    path = tmp_path / "c.yaml"
    assert main(["cluster", "init", str(path), *args]) == 2
    assert msg in _err(capsys)
    assert not path.exists()


GOOD = """name: demo
gms: [{id: 0, port: 7100}]
lms:
  - id: 0
    port: 7101
    hosts:
      - {id: 0, port: 7102, workers: [{count: 4}]}
"""


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        (GOOD.replace("port: 7101", "port: 70000"), "c.yaml:5: lms[0].port: Input should be less than or equal to 65535"),
        (GOOD.replace("count: 4", "count: 4, constraints: [25]"), "constraint indices are 0..20, got 25"),
        (GOOD.replace("name: demo", "name: demo\ncolour: blue"), "c.yaml:2: colour: unknown field"),
        (GOOD.replace("port: 7102", "port: 7100"), "worker host 0 and gm 0 both listen on 127.0.0.1:7100"),
        (GOOD.replace("count: 4", "count: 4, capacity: [4]"), "slot mode (resources [slots]) takes no worker capacity"),
        (GOOD + "megha: {worker_choice: best}\n", "c.yaml: megha.worker_choice: Input should be 'min-constraints' or 'random'"),
        (GOOD + "megha: {shares: [0.7, 0.7]}\n", "c.yaml: megha: shares must be positive and sum to at most 1"),
        (GOOD + "megha: {shares: [0.5, 0.5], queue_gms: [1, 3]}\n", "c.yaml: megha.queue_gms: GMs are numbered 1..1"),
        ("gms: [", "c.yaml:1: invalid YAML"),
        ("- 1\n", "a cluster file is a YAML mapping"),
    ],
)
def test_bad_cluster_files_name_file_line_and_field(tmp_path, capsys, text, msg):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert main(["cluster", "status", str(path)]) == 2
    assert msg in _err(capsys)


def test_missing_cluster_file(tmp_path, capsys):
    assert main(["cluster", "down", str(tmp_path / "none.yaml")]) == 2
    assert "no such cluster file" in _err(capsys)


def test_submit_embedded_writes_the_simulators_summary(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    assert main(["cluster", "init", str(path), "--workers", "40", "--heartbeat", "0.2"]) == 0
    trace = tmp_path / "t.tr"
    trace.write_text("".join(f"{0.05 * i:.2f} 3 0.1 0.1 0.05 0.1\n" for i in range(10)))
    out = tmp_path / "s.json"
    rc = main(["submit", "--cluster", str(path), "--embedded", "--trace", str(trace), "--summary-json", str(out), "--no-constraints", "-q"])
    assert rc == 0, capsys.readouterr().err
    s = json.loads(out.read_text())
    assert s["tasks"] == 30 and s["counters"]["tasks_unfinished"] == 0 and s["runtime"]["transport"] == "inproc"
    assert s["allocation_time"]["count"] == 30


def test_submit_embedded_command(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    assert main(["cluster", "init", str(path), "--workers", "4"]) == 0
    capsys.readouterr()
    rc = main(["submit", "--cluster", str(path), "--embedded", "--command", "sh -c 'echo out; echo err >&2; exit 3'"])
    assert rc == 1
    o = capsys.readouterr().out
    assert "status failed  exit 3" in o and "out" in o and "err" in o
    rc = main(["submit", "--cluster", str(path), "--embedded", "--command", "echo 'a;b'"])
    assert rc == 0 and "a;b" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        ([], "error: submit: give either --trace or --command"),
        (["--trace", "google", "--command", "true"], "error: submit: give either --trace or --command"),
        (["--trace", "google", "--speedup", "0"], "error: --speedup: must be > 0, got 0.0"),
        (["--trace", "google", "--max-jobs", "0"], "error: --max-jobs: must be >= 1, got 0"),
        (["--trace", "google", "--task", "gpu"], "error: --task: unknown task kind 'gpu'"),
        (["--command", "true", "--constraint", "30"], "error: --constraint: constraint indices are 0..20, got 30"),
        (["--command", "'unclosed"], "error: --command: No closing quotation"),
    ],
)
def test_submit_bad_options(tmp_path, capsys, args, msg):
    path = tmp_path / "c.yaml"
    assert main(["cluster", "init", str(path), "--workers", "4"]) == 0
    capsys.readouterr()
    assert main(["submit", "--cluster", str(path), "--embedded", *args]) == 2
    assert msg in _err(capsys)


def test_init_from_the_papers_config_keeps_every_worker_and_partition(tmp_path):
    from schedlab.cluster.config import load_config

    path = tmp_path / "ref.yaml"
    assert main(["cluster", "init", str(path), "--from-config", "reference"]) == 0
    mine, theirs = load_cluster(path).cluster, load_config("reference")
    assert mine.n == 10000 and mine.machine_masks == theirs.machine_masks and mine.topology == theirs.topology
    assert main(["cluster", "init", str(tmp_path / "p.yaml"), "--from-config", "reference-pigeon"]) == 2


def test_client_commands_leave_broker_reports_to_their_own_lines(tmp_path, monkeypatch):
    """A broker node killed under `schedlab chaos` made aiormq print its tracebacks of the reset connection; a
    client command says what happens to its links in one line of its own, and keeps the libraries quiet."""
    import logging

    for name in ("aio_pika", "aiormq"):
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    path = tmp_path / "c.yaml"
    assert main(["cluster", "init", str(path), "--broker", "amqp://guest:guest@127.0.0.1:1/"]) == 0
    main(["cluster", "status", str(path)])  # the broker unreachable: whatever it says, in its own words
    assert logging.getLogger("aiormq").level == logging.CRITICAL and logging.getLogger("aio_pika").level == logging.CRITICAL
