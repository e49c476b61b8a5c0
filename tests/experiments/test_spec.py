"""Spec validation (errors name file, line and field) and grid expansion (order, labels, ids, exclusions)."""

from __future__ import annotations

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.experiments.matrix import expand
from schedlab.experiments.spec import load_spec, parse_spec
from tests.experiments.helpers import TINY, write_spec

GRID = """\
name: grid
workloads:
  - trace: syn_250
    max_jobs: 5
  - name: gen
    generate: {jobs: 10}
data_centers:
  - workers: 100
  - workers: 200
schedulers:
  - name: megha
    label: "m_{worker_choice}_{heartbeat}"
    params: {gms: 2}
    grid: {worker_choice: [random, min-constraints], heartbeat: [5, 10]}
  - name: centralized
seeds: 3
exclude:
  - {scheduler: centralized, data_center: 200w}
"""


def error_of(tmp_path, text: str) -> str:
    p = write_spec(tmp_path, text)
    with pytest.raises(InputError) as e:
        expand(load_spec(p))
    return str(e.value)


def test_bad_scheduler_parameter_names_file_line_and_field(tmp_path):
    text = TINY.replace("params: {gms: 2, lms: 2}", "params: {gms: 2, lms: 2, heartbeat: 0}")
    msg = error_of(tmp_path, text)
    assert msg.endswith("exp.yaml:10: schedulers[0].params.heartbeat: Input should be greater than 0, got 0")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("seeds: [0]", "seeds: [0, -1]"), "exp.yaml:12: seeds: seeds must be >= 0"),
        (("seeds: [0]", "seeds: [0]\ncolour: red"), "exp.yaml:13: colour: unknown field"),
        (("- workers: 40", "- workers: 0"), "exp.yaml:6: data_centers[0].workers: must be >= 1"),
        (('arrivals: "poisson:0.5"', 'arrivals: "poison:0.5"'), "exp.yaml:4: workloads[0].generate: arrivals: unknown arrival process 'poison'"),
        (("  - name: gen\n", "  - name: gen\n    trace: syn_250\n"), "exp.yaml:3: workloads[0]: give exactly one of 'trace' and 'generate'"),
        (("name: megha\n", "name: nosuch\n"), "exp.yaml:8: schedulers[0].name: unknown scheduler 'nosuch'"),
        (("[random, min-constraints]", "[random, best]"), "exp.yaml:11: schedulers[0].grid.worker_choice[1]: Input should be 'min-constraints' or 'random'"),
        (("params: {gms: 2, lms: 2}", "params: {gms: 2, lms: 2, colour: 1}"), "schedulers[0].params.colour: unknown parameter for scheduler 'megha'"),
        (('label: "megha_{worker_choice}"', "label: megha"), "exp.yaml:9: schedulers[0].label: two variants are labelled 'megha'"),
        (('label: "megha_{worker_choice}"', 'label: "m_{colour}"'), "exp.yaml:9: schedulers[0].label: cannot fill placeholder 'colour'"),
        (("seeds: [0]", "seeds: [0]\nbaseline: nosuch"), "exp.yaml:13: baseline: no scheduler variant is labelled 'nosuch'"),
        (("seeds: [0]", "seeds: [0]\nexclude: [{scheduler: nosuch}]"), "exp.yaml:13: exclude[0]: matches no run"),
        (("seeds: [0]", "seeds: [0]\nmetrics: [jrt_delay.p42]"), "exp.yaml:13: metrics: unknown metric 'jrt_delay.p42'"),
        (("seeds: [0]", "seeds: [0]\nplots: [pie]"), "exp.yaml:13: plots[0]: Input should be"),
        (("name: tiny", "name: a/b"), "exp.yaml:1: name: use letters, digits"),
        (("name: tiny\n", ""), "exp.yaml:1: name: Field required"),
        (("seeds: [0]", "seeds: [0]\n  oops: : :"), "exp.yaml:13: invalid YAML"),
    ],
)
def test_spec_errors(tmp_path, change, expected):
    old, new = change
    assert old in TINY
    msg = error_of(tmp_path, TINY.replace(old, new, 1))
    assert expected in msg, msg


def test_missing_trace_file_is_an_error_at_its_field(tmp_path):
    text = TINY.replace("  - name: gen\n    generate: {jobs: 12, arrivals: \"poisson:0.5\", tasks_per_job: \"geom:4\", duration: \"exp:2\", seed: 3}\n", "  - trace: nowhere.tr\n")
    msg = error_of(tmp_path, text)
    assert "exp.yaml:3: workloads[0].trace: no such trace file" in msg


def test_cli_reports_a_bad_spec_in_one_line(tmp_path, capsys):
    p = write_spec(tmp_path, TINY.replace("params: {gms: 2, lms: 2}", "params: {gms: 0}"))
    assert main(["sweep", str(p), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {p}:10: schedulers[0].params.gms: Input should be greater than or equal to 1, got 0"
    assert not (tmp_path / "r").exists()
    assert main(["sweep", str(tmp_path / "none.yaml")]) == 2


@pytest.mark.parametrize(("change", "says"), [
    (("params: {gms: 2, lms: 2}", "params: {gms: 20, lms: 20}"),
     "topology: 40 workers cannot fill 20 clusters x 20 partitions (every partition needs at least one worker)"),
    (("  - workers: 40\n", "  - workers: 40\n    resource_mode: multi\n"), None),
    (("name: megha\n", "name: sparrow\n"), "unknown parameter"),
])
def test_a_run_the_scheduler_refuses_is_refused_before_the_store_is_made(tmp_path, capsys, change, says):
    """Every distinct run's data center and scheduler are built first: one line, exit 2, no results folder."""
    p = write_spec(tmp_path, TINY.replace(*change, 1))
    if says is None:  # Megha runs in multi-resource mode: the check builds it and lets it pass
        from schedlab.experiments.runner import check_configs
        check_configs(expand(load_spec(p)))
        return
    assert main(["sweep", str(p), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], err
    assert not (tmp_path / "r").exists()


def test_a_sparrow_on_capacity_vectors_is_refused_naming_the_run(tmp_path, capsys):
    text = TINY.replace("  - workers: 40\n", "  - workers: 40\n    resource_mode: multi\n", 1).replace(
        "  - name: megha\n    label: \"megha_{worker_choice}\"\n    params: {gms: 2, lms: 2}\n    grid: {worker_choice: [random, min-constraints]}\n",
        "  - name: sparrow\n", 1)
    p = write_spec(tmp_path, text)
    assert main(["sweep", str(p), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: run sparrow on gen (40w_multi), seed 0: --resources: sparrow runs one task per worker slot: "
                   "it supports slot mode only"), err
    assert not (tmp_path / "r").exists()


def test_grid_expansion_order_labels_and_exclusions(tmp_path):
    runs = expand(load_spec(write_spec(tmp_path, GRID)))
    # 2 workloads x (2 data centers x 4 megha variants + 1 data center x centralized) x 3 seeds
    assert len(runs) == 2 * (2 * 4 + 1) * 3
    assert len({r.id for r in runs}) == len(runs)
    first = [(r.workload, r.data_center, r.scheduler, r.seed) for r in runs[:13]]
    assert first[:3] == [("syn_250_first5", "100w", "m_random_5", s) for s in range(3)]
    assert first[3][2] == "m_random_10" and first[6][2] == "m_min-constraints_5" and first[12][2] == "centralized"
    assert not [r for r in runs if r.scheduler == "centralized" and r.data_center == "200w"]
    r = runs[0]
    assert r.config["params"]["heartbeat"] == 5.0 and r.config["params"]["gms"] == 2
    assert r.config["params"]["lms"] is None  # every default is resolved into the config
    assert r.config["data_center"]["workers"] == 100 and r.config["workload"]["max_jobs"] == 5


def test_run_ids_hash_the_resolved_config_only(tmp_path):
    base = {r.describe(): r.id for r in expand(load_spec(write_spec(tmp_path, GRID)))}
    again = {r.describe(): r.id for r in expand(load_spec(write_spec(tmp_path, GRID, "again.yaml")))}
    assert base == again
    relabelled = expand(load_spec(write_spec(tmp_path, GRID.replace("m_{worker_choice}_{heartbeat}", "x_{worker_choice}_{heartbeat}"), "b.yaml")))
    assert {r.id for r in relabelled} == set(base.values())
    changed = expand(load_spec(write_spec(tmp_path, GRID.replace("params: {gms: 2}", "params: {gms: 3}"), "c.yaml")))
    moved = {r.id for r in changed if r.scheduler.startswith("m_")}
    assert not moved & set(base.values())
    # the defaults a scheduler fills in count: writing one out explicitly is the same run
    explicit = expand(load_spec(write_spec(tmp_path, GRID.replace("params: {gms: 2}", "params: {gms: 2, updates: delta}"), "d.yaml")))
    assert {r.id for r in explicit} == set(base.values())


def test_paper_size_seed_count_and_per_scheduler_configs():
    text = """\
name: p
workloads: [{trace: google}, {trace: syn_500}]
data_centers:
  - {}
  - {name: ref, config: {megha: reference, centralized: reference-pigeon}}
schedulers: [{name: megha}, {name: centralized}]
seeds: 2
"""
    runs = expand(parse_spec(text, "p.yaml"))
    assert len(runs) == 2 * 2 * 2 * 2
    paper = {r.workload: r.config["data_center"]["workers"] for r in runs if r.data_center == "paper"}
    assert paper == {"google": 20000, "syn_500": 10000}
    ref = {r.scheduler: r.config["data_center"]["config"] for r in runs if r.data_center == "ref"}
    assert ref == {"megha": "reference", "centralized": "reference-pigeon"}
    assert sorted({r.seed for r in runs}) == [0, 1]


def test_short_and_long_job_delays_are_metrics():
    from schedlab.experiments.spec import expand_metric

    assert expand_metric("jrt_delay_short") == ["jrt_delay_short.p50", "jrt_delay_short.p99"]
    assert expand_metric("jrt_delay_long.p99") == ["jrt_delay_long.p99"]
