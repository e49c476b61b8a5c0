"""The live view's arithmetic, from nodes' statuses as fetch_statuses gives them: rates, totals, failures and
recoveries; and the clients' sliding window of allocation times."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.dashboard.live import LiveMonitor
from schedlab.services.clusterfile import load_cluster
from schedlab.services.live import AllocationWindow
from tests.services.helpers import write_cluster


def statuses(gm_requests=0, gm_rejected=0, launched=0, inconsistencies=0, hosts_down=0, running=0, lm_pid=20, host_error=None):
    gms = [{"role": "gm", "id": g, "url": f"http://h:{g}", "pid": 10 + g, "waiting": 3 * g, "requests": gm_requests * (g + 1),
            "rejected_requests": gm_rejected, "repartition_requests": 0, "last_heartbeat_age": 0.1} for g in range(2)]
    lms = [{"role": "lm", "id": i, "url": f"http://l:{i}", "pid": lm_pid + i, "running": running, "launched": launched, "repartitions": 1,
            "inconsistencies": inconsistencies, "lent_workers": 2, "hosts_down": hosts_down, "last_heartbeat_age": 0.2} for i in range(2)]
    hosts = [{"role": "worker", "id": h, "url": f"http://w:{h}", "pid": 40 + h, "workers": 6, "running": running, "started": 0, "finished": 0} for h in range(2)]
    if host_error:
        hosts[1] = {"role": "worker", "id": 1, "url": "http://w:1", "error": host_error}
    return gms + lms + hosts


@pytest.fixture
def monitor(tmp_path):
    return LiveMonitor(load_cluster(write_cluster(tmp_path, gms=2, lms=2, workers=12)))


def test_rates_totals_and_per_minute_counts(monitor) -> None:
    s = monitor.update(100.0, statuses())
    assert s["totals"]["placements_per_s"] is None  # one read: no rate yet
    s = monitor.update(102.0, statuses(gm_requests=10, gm_rejected=2, launched=25, inconsistencies=3, running=4))
    g0, g1 = s["nodes"]["gm"]
    assert g0["placements_per_s"] == (10 - 2) / 2 and g1["placements_per_s"] == (20 - 2) / 2
    t = s["totals"]
    assert t["placements_per_s"] == 4 + 9 and t["placements"] == 50 and t["waiting"] == 3
    assert t["running"] == 8 and t["workers"] == 12 and t["utilization"] == pytest.approx(8 / 12)
    assert s["nodes"]["lm"][0]["partitions"] == 2 and s["nodes"]["lm"][0]["lent_workers"] == 2
    assert s["nodes"]["lm"][0]["inconsistencies_per_min"] == pytest.approx(3 * 60 / 2)
    s = monitor.update(200.0, statuses(gm_requests=10, gm_rejected=2, launched=25, inconsistencies=3, running=4))
    assert s["nodes"]["lm"][0]["inconsistencies_per_min"] == 0.0  # none in the last minute
    assert s["events"] == []


def test_failures_and_recoveries_are_told_once_each(monitor) -> None:
    monitor.update(1.0, statuses())
    monitor.update(2.0, statuses(host_error="ClientConnectorError: refused", hosts_down=1))
    s = monitor.update(3.0, statuses(host_error="ClientConnectorError: refused", hosts_down=1))
    texts = [e["text"] for e in reversed(s["events"])]
    # what stopped answering first, then what the others counted meanwhile
    assert texts == ["worker 1 stopped answering: ClientConnectorError: refused",
                     "lm 0: 1 worker host(s) declared down", "lm 1: 1 worker host(s) declared down"]  # fmt: skip
    assert s["totals"]["nodes_up"] == 5 and s["totals"]["workers"] == 6
    s = monitor.update(4.0, statuses(hosts_down=1, lm_pid=70))  # the host is back; both LMs restarted (new pids)
    new = [e["text"] for e in reversed(s["events"])][3:]
    assert new == ["lm 0 restarted between two reads (pid 20 -> 70)", "lm 1 restarted between two reads (pid 21 -> 71)", "worker 1 answers again (pid 41)"]
    assert [e["kind"] for e in s["events"][:3]] == ["recovery"] * 3


def test_allocation_window_is_exact_and_forgets_old_tasks() -> None:
    now = [0.0]
    w = AllocationWindow(span=60.0, clock=lambda: now[0])
    rng = np.random.default_rng(3)
    comps = rng.exponential(0.01, size=(500, 4))
    for k, c in enumerate(comps):
        now[0] = k * 0.25  # 125 s of completions
        w.add(tuple(c))
    snap = w.snapshot()
    kept = comps[259:]  # completed at 64.75 s (124.75 - 60) or later
    assert snap["tasks"] == 241
    assert snap["allocation_time"]["p99"] == pytest.approx(np.percentile(kept.sum(axis=1), 99))
    assert snap["components"]["worker_queuing"]["mean"] == pytest.approx(kept[:, 2].mean())
    now[0] = 1000.0
    assert w.snapshot() == {"window_s": 60.0, "tasks": 0, "allocation_time": {}, "components": {}}


def test_only_live_snapshots_are_kept(monitor) -> None:
    import json

    monitor._on_live(json.dumps({"kind": "schedlab.live", "run": 7, "tasks": 3}).encode())
    monitor._on_live(json.dumps({"kind": "something else", "run": 8}).encode())
    monitor._on_live(b"not json")
    assert sorted(monitor.runs) == [7] and monitor.ignored_messages == 2
