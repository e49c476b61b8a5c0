"""Every GM, LM and worker host of a running cluster serves Prometheus text exposition at /metrics, for the
bearer token derived from the cluster's secret; the figures are those of /v1/status (cluster status)."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from schedlab.cli import main
from schedlab.dashboard.live import LiveMonitor
from schedlab.metrics.recorder import COMPONENTS
from schedlab.services import supervise
from schedlab.services.auth import metrics_token
from schedlab.services.client import replay
from schedlab.services.clusterfile import load_cluster
from schedlab.services.remote import RemoteCluster, fetch_statuses
from schedlab.services.timings import Histogram
from schedlab.workload.trace import TraceJob

from .helpers import write_cluster


def test_histogram_buckets_are_cumulative() -> None:
    h = Histogram()
    for v in (0.0005, 0.003, 0.003, 100.0):
        h.observe(v)
    cum = dict(h.cumulative())
    assert (cum[0.001], cum[0.005], cum[60.0], cum[float("inf")], h.count) == (1, 3, 3, 4, 4)


def test_every_node_serves_metrics_for_the_token_only(tmp_path, capsys) -> None:
    path = write_cluster(tmp_path, gms=1, lms=1, workers=4, heartbeat=0.2)
    loaded = load_cluster(path)
    token = metrics_token(loaded.secret)
    jobs = [TraceJob(0.05 * i, 0.05, [0.05, 0.05]) for i in range(6)]

    fresh: list[dict] = []

    async def body() -> tuple[dict, dict, list]:
        t0 = time.time()
        await supervise.up(loaded, path, timeout=60)
        try:
            await asyncio.sleep(1.0)  # five heartbeats of an idle cluster
            fresh.extend(await fetch_statuses(loaded))
            fresh.append({"since_up": time.time() - t0})
            async with RemoteCluster(loaded) as rc:
                result = await replay(rc, jobs, constraints=False, timeout=30)
            assert result.summary["tasks"] == 12
            await asyncio.sleep(0.5)  # the last ends reach every node's counters
            urls = {(st["role"], st["id"]): st["url"] for st in await fetch_statuses(loaded)}
            scraped, refused = {}, []
            async with aiohttp.ClientSession() as session:
                for key, url in urls.items():
                    async with session.get(url + "/metrics", headers={"Authorization": "Bearer nope"}) as resp:
                        refused.append(resp.status)
                    async with session.get(url + "/metrics", headers={"Authorization": f"Bearer {token}"}) as resp:
                        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/plain"), key
                        scraped[key] = await resp.text()
            statuses = {(st["role"], st["id"]): st for st in await fetch_statuses(loaded)}
            return scraped, statuses, refused
        finally:
            await supervise.down(loaded, path)

    scraped, statuses, refused = asyncio.run(body())
    # a fresh, idle cluster's heartbeat ages are a few heartbeats, never more than it has been up (the issue saw
    # 545-597 s on a cluster up for under a minute: a clock mixed up would show as the machine's uptime)
    since_up = fresh.pop()["since_up"]
    for st in fresh:
        assert 0 <= st["uptime"] <= since_up, st
        if st["role"] != "worker":
            assert 0 <= st["last_heartbeat_age"] < 3.0, st
    assert set(scraped) == {("gm", 0), ("lm", 0), ("worker", 0)} and refused == [401, 401, 401]
    samples = {}
    for key, text in scraped.items():
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                assert s.labels["cluster"] == loaded.name and s.labels["role"] == key[0] and s.labels["id"] == str(key[1])
                samples[(key[0], s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k not in ("cluster", "role", "id"))))] = s.value
    gm, lm, host = statuses[("gm", 0)], statuses[("lm", 0)], statuses[("worker", 0)]
    assert samples[("gm", "schedlab_placements_total", ())] == gm["requests"] - gm["rejected_requests"] >= 12
    assert samples[("gm", "schedlab_waiting_tasks", ())] == gm["waiting"] == 0
    assert samples[("lm", "schedlab_launches_total", ())] == lm["launched"] >= 12
    assert samples[("worker", "schedlab_task_starts_total", ())] == host["started"] == 12
    assert samples[("worker", "schedlab_task_failures_total", ())] == 0
    assert samples[("worker", "schedlab_allocation_seconds_count", ())] == 12  # every start measured from its arrival at the GM
    assert 0 < samples[("worker", "schedlab_allocation_seconds_sum", ())] < 12 * 5
    assert samples[("gm", "schedlab_allocation_component_seconds_count", (("component", "framework_queuing"),))] >= 12
    # the four components on every node: what each observes (timings), parsed as histograms by the library
    comp = {(role, c): samples[(role, "schedlab_allocation_component_seconds_count", (("component", c),))]
            for role in ("gm", "lm", "worker") for c in COMPONENTS}
    assert comp[("worker", "communication")] == 12  # from the last mark upstream (the LM's processing mark)
    assert all(comp[(r, "worker_queuing")] == 0 for r in ("gm", "lm", "worker"))  # no Megha node queues at workers
    spans = sum(samples[(r, "schedlab_allocation_component_seconds_sum", (("component", c),))] for r in ("gm", "lm", "worker")
                for c in COMPONENTS)
    assert abs(spans - samples[("worker", "schedlab_allocation_seconds_sum", ())]) < 1e-3  # the components add up to it
    for role in ("gm", "lm", "worker"):
        for c in COMPONENTS:
            inf = samples[(role, "schedlab_allocation_component_seconds_bucket", (("component", c), ("le", "+Inf")))]
            assert inf == comp[(role, c)] and samples[(role, "schedlab_allocation_component_seconds_sum", (("component", c),))] >= 0
    assert 0 < samples[("worker", "schedlab_allocation_component_seconds_sum", (("component", "communication"),))] < 12 * 5
    assert samples[("gm", "schedlab_refused_input_total", (("reason", "unauthenticated"),))] == 1  # the wrong token, counted
    assert ("lm", "schedlab_recovery_events_total", (("event", "hosts_down"),)) in samples
    for role in ("gm", "lm"):  # scraped after the status read, by less than a few seconds
        age = samples[(role, "schedlab_heartbeat_age_seconds", ())]
        assert 0 <= age < 3.0 and abs(age - statuses[(role, 0)]["last_heartbeat_age"]) < 3.0, (role, age)
    # the live view shows what cluster status read, node by node
    live = LiveMonitor(loaded).update(time.time(), list(statuses.values()))
    for role in ("gm", "lm"):
        (row,) = live["nodes"][role]
        assert row["heartbeat_age"] == statuses[(role, 0)]["last_heartbeat_age"] and row["uptime"] == statuses[(role, 0)]["uptime"]
    assert live["nodes"]["gm"][0]["placements"] == samples[("gm", "schedlab_placements_total", ())]
    assert main(["cluster", "metrics", str(path)]) == 0
    cfg = capsys.readouterr().out
    assert f"credentials: {token}" in cfg and "type: Bearer" in cfg and all(u.split("://")[1] in cfg for u in
                                                                        (loaded.spec.gms[0].url, loaded.spec.lms[0].url))
