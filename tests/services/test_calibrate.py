"""``schedlab calibrate`` on a live cluster (needs the broker): the services measure the steps the simulator charges,
the profile is written whole and ``simulate --costs`` runs on it; a bad option is one line (issue 43)."""

from __future__ import annotations

import asyncio
import json

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.schedulers.megha.costs import STEPS, load_costs
from schedlab.services import supervise
from schedlab.services.calibrate import submission_delay
from schedlab.services.clusterfile import load_cluster
from schedlab.services.remote import fetch_statuses
from schedlab.services.stepcosts import (
    StepCosts,
    affine,
    bucket_of,
    bucket_value,
    merge,
    merge_fits,
    quantile,
    subtract,
)

from .helpers import write_cluster


def test_step_histograms_give_quantiles_within_a_bucket_and_merge_and_subtract_by_counts():
    costs = StepCosts()
    for k in range(1, 101):  # 100 inputs of 10 items: per-item 1..100 µs
        costs.observe("lm_verify", k * 1e-5, 10)
    costs.observe("lm_verify", 1.0, 0)  # an input of no item is no observation
    st = costs.status()
    assert st["lm_verify"]["n"] == 100 and set(st) == {"lm_verify"}
    hist = merge([st])["lm_verify"]
    assert abs(quantile(hist, 0.5) / 50e-6 - 1) < 0.06 and abs(quantile(hist, 0.9) / 90e-6 - 1) < 0.06
    twice = merge([st, st])
    assert subtract(twice, merge([st])) == merge([st]) and subtract(merge([st]), merge([st])) == {}
    for s in (3e-9, 2.5e-6, 40.0):  # clamped at both ends, and a bucket's middle is within a bucket of the value
        assert abs(bucket_of(bucket_value(bucket_of(s))) - bucket_of(s)) <= 1


def test_a_steps_fit_gives_its_part_per_input_and_per_item_and_the_spread_around_them():
    costs = StepCosts()
    for k in range(200):  # inputs of 1..50 items: 120 µs + 5 µs an item, every other round of sizes 20 % dearer
        n = 1 + k % 50
        costs.observe("gm_match", (120e-6 + 5e-6 * n) * (1.2 if (k // 50) % 2 else 1.0), n)
    fit = merge_fits([costs.status(), costs.status()])["gm_match"]  # two nodes' sums add up
    assert fit[0] == 400 and "fit" not in costs.status().get("message", {})
    got = affine(fit)
    assert got is not None
    a, b, sigma = got
    assert a == pytest.approx(132e-6, rel=1e-6) and b == pytest.approx(5.5e-6, rel=1e-6) and 0.05 < sigma < 0.15
    one_size = StepCosts()
    for _ in range(50):
        one_size.observe("lm_verify", 1e-4, 10)
    assert affine(merge_fits([one_size.status()])["lm_verify"]) is None  # every input of one size: no fit
    assert affine(fit[:1] + [0.0] * 5) is None and affine([5.0, 5.0, 5.0, 1.0, 1.0, 1.0]) is None  # too few inputs


def test_calibrate_measures_a_live_cluster_and_simulate_reads_the_profile(broker, tmp_path, capsys):
    path = write_cluster(tmp_path, gms=2, lms=2, workers=16)
    loaded = load_cluster(path)
    out = tmp_path / "costs.yaml"

    async def up() -> None:
        await supervise.up(loaded, path, timeout=60)

    asyncio.run(up())
    try:
        assert main(["calibrate", "-c", str(path), "-o", str(out), "--jobs", "60", "--rate", "100"]) == 0
        statuses = asyncio.run(fetch_statuses(loaded))
    finally:
        asyncio.run(supervise.down(loaded, path))
    shown = capsys.readouterr().out
    assert f"cost profile written to {out}" in shown and "one-way delay" in shown
    profile = load_costs(out)
    for step in STEPS:
        q = profile.quantiles(step)
        assert 0 < q.p50 <= q.p90 < 0.1, (step, q)  # measured, per item, below 100 ms on any machine
    delay = profile.one_way_delay
    assert delay is not None and not isinstance(delay, float) and 0 < delay.p50 < 0.01
    # every GM and LM measured its steps; the receivers of HTTP requests (LMs, worker hosts) their transit; GMs their
    # jobs' submission (client to handler), which the profile's submission delay is
    roles = {(st["role"], st["id"]): set(st["step_costs"]) for st in statuses}
    assert all({"gm_match", "message", "submission"} <= v <= {*STEPS, "submission"} for (r, _i), v in roles.items() if r == "gm"), roles
    sub = profile.submission_delay
    assert sub is not None and not isinstance(sub, float) and 0 < sub.p50 <= sub.p90 < 1.0
    assert all({"lm_verify", "message", "transit"} <= v for (r, _i), v in roles.items() if r == "lm"), roles
    assert all(v == {"transit"} for (r, _i), v in roles.items() if r == "worker"), roles
    summary, trace = tmp_path / "s.json", tmp_path / "t.tr"
    trace.write_text("".join(f"{0.05 * i:.2f} 2 0.1 0.1 0.05\n" for i in range(12)))
    assert main(["simulate", "--scheduler", "megha", "--trace", str(trace), "--workers", "16", "-p", "gms=2", "-p", "lms=2", "--no-constraints", "--costs", str(out),
                 "--summary-json", str(summary), "-q"]) == 0
    s = json.loads(summary.read_text())
    assert s["tasks"] == 24 and s["allocation_time"]["p50"] > 0


def test_calibrate_refuses_bad_options_in_one_line(tmp_path, capsys):
    path = write_cluster(tmp_path, gms=1, lms=1, workers=2)
    for args, field in ((["--rate", "0"], "--rate"), (["--jobs", "0"], "--jobs")):
        rc = main(["calibrate", "-c", str(path), "-o", str(tmp_path / "c.yaml"), *args])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and err.count("\n") == 0 and field in err, err
    assert not (tmp_path / "c.yaml").exists()
    # a cluster whose nodes do not answer, and a broker that does not: one line each, no file
    assert main(["calibrate", "-c", str(path), "-o", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "did not answer" in err, err
    with pytest.raises(InputError, match="cannot connect"):
        asyncio.run(submission_delay(["amqp://guest:guest@127.0.0.1:1/"]))
    assert not (tmp_path / "c.yaml").exists()


def test_the_twin_report_compares_the_prediction_with_the_real_runs_median_and_their_spread(tmp_path):
    """The report's arithmetic, without a real cluster: simulated runs stand in for the real ones (one of them with
    its allocation times doubled: a slow run), the prediction drawn with the profile's delay spread."""
    import dataclasses
    import types

    from schedlab.schedulers.megha.costs import CostProfile
    from schedlab.services import twin

    setup = dataclasses.replace(twin.QUICK, repeats=3)
    profile = CostProfile.model_validate({"one_way_delay": {"p50": 0.0015, "p90": 0.004}, "submission_delay": {"p50": 0.001, "p90": 0.002},
                                          "steps": {"gm_match": 2e-5, "lm_verify": 6e-6, "update_per_worker": 1e-6, "message": 1.2e-4}})
    sims = [twin.predictions(setup, w, profile) for w in setup.workloads]
    assert [s.summary["seed"] for s in sims[0]] == [setup.seed + k for k in range(setup.sim_seeds)]
    assert sims[0][0].summary["config"]["latency_spread"] == pytest.approx(profile.latency_spread())

    def slow(run):
        at = {q: (2 * v if isinstance(v, float) else v) for q, v in run.summary["allocation_time"].items()}
        return types.SimpleNamespace(summary={**run.summary, "allocation_time": at}, tasks=run.tasks)

    reals = [[s[0], s[0], slow(s[0])] for s in sims]
    report = twin.write_report(tmp_path, setup, profile, {"inputs": {}}, reals, sims).read_text()
    rows = [line for line in report.splitlines() if line.startswith(f"| {setup.workloads[0].name} |")]
    cells = [c.strip() for c in rows[0].split("|")[1:-1]]
    assert cells[5] == "100%"  # the slow run lies 100 % above the other two's (and the median's) p50
    assert "Verdict" in report and (tmp_path / "allocation_cdf.png").exists()
    assert (tmp_path / "summary_real_single_tasks_run3.json").exists() and (tmp_path / f"summary_sim_single_tasks_seed{setup.seed + 2}.json").exists()
