"""The live view on a real cluster (every component its own process, HTTP + RabbitMQ): the dashboard reads the
nodes and the replaying client's allocation-time figures while a trace is replayed; then everything stops and
no queue is left behind (the dashboard's live queue included)."""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from pathlib import Path

from schedlab.services import supervise
from schedlab.services.client import replay
from schedlab.services.clusterfile import load_cluster
from schedlab.services.remote import RemoteCluster
from schedlab.workload.trace import TraceJob
from tests.dashboard.conftest import stop
from tests.services.helpers import write_cluster
from tests.services.test_cluster import queues_of

SHOTS = os.environ.get("SCHEDLAB_DASHBOARD_SHOTS")


def trace(jobs: int = 50, spacing: float = 0.08):
    return [TraceJob(spacing * i, 0.25, [0.15, 0.25, 0.35, 0.25]) for i in range(jobs)]


class Replay(threading.Thread):
    """The trace replayed by a client of the cluster, in its own thread and event loop."""

    def __init__(self, loaded, jobs: list[TraceJob]) -> None:
        super().__init__(daemon=True)
        self.loaded, self.jobs, self.result, self.error = loaded, jobs, None, None

    def run(self) -> None:
        async def go():
            async with RemoteCluster(self.loaded) as rc:
                return await replay(rc, self.jobs, constraints=False, timeout=60)

        try:
            self.result = asyncio.run(go())
        except BaseException as e:  # reported by the test
            self.error = e


def until(cond, timeout: float = 20.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(every)
    raise AssertionError("timed out")


def with_cluster(tmp_path: Path, body) -> None:
    path = write_cluster(tmp_path, gms=2, lms=2, workers=12, hosts_per_lm=1)
    loaded = load_cluster(path)
    try:
        asyncio.run(supervise.up(loaded, path, timeout=60))
        body(path, loaded)
    finally:
        asyncio.run(supervise.down(loaded, path))
    assert queues_of(loaded.name) == []


def test_live_api_counts_placements_tells_a_host_crash_and_gets_the_clients_allocation_times(broker, tmp_path, dashboard_of) -> None:
    def body(path, loaded):
        d = dashboard_of("--cluster", str(path), "--every", "0.3")
        first = until(lambda: (s := d.get("/api/live")[1]).get("totals") and s)
        assert first["totals"]["nodes"] == 6 and first["totals"]["nodes_up"] == 6 and first["totals"]["workers"] == 12
        assert until(lambda: f"{loaded.name}.live" in queues_of(loaded.name))  # the dashboard's own, while it runs
        r = Replay(loaded, trace(jobs=70))
        r.start()
        seen = [first["totals"]["placements"]]
        killed = restarted = False
        t0 = time.monotonic()
        while r.is_alive():
            now = time.monotonic() - t0
            if not killed and now > 1.5:  # a worker host crashes mid-replay, and comes back a second later
                supervise.kill(path, "worker", 1)
                killed = True
            elif killed and not restarted and now > 2.5:
                asyncio.run(supervise.restart(loaded, path, "worker", 1, timeout=30))
                restarted = True
            seen.append(d.get("/api/live")[1]["totals"]["placements"])
            time.sleep(0.3)
        r.join(60)
        assert r.error is None and restarted
        s = r.result.summary  # every task completed exactly once
        assert s["tasks"] == 280 and s["counters"]["tasks_unfinished"] == 0 and s["counters"].get("duplicate_finishes", 0) == 0
        assert seen == sorted(seen) and len(set(seen)) >= 3  # the counter rose during the replay, never fell
        final = until(lambda: (x := d.get("/api/live")[1])["totals"]["nodes_up"] == 6 and x["totals"]["placements"] >= 280 and x)
        told = [e["text"] for e in reversed(final["events"])]
        assert told[0].startswith("worker 1 stopped answering")
        assert any(re.fullmatch(r"lm \d: 1 worker host\(s\) declared down", t) for t in told)
        assert any(re.fullmatch(r"worker 1 restarted \(pid \d+\)", t) for t in told)
        assert {e["kind"] for e in final["events"]} == {"failure", "recovery"}
        run = until(lambda: [x for x in d.get("/api/live")[1]["runs"] if x["done"]])[0]
        assert run["tasks_done"] == 280 and run["tasks"] > 0 and set(run["components"]) == {"framework_queuing", "processing", "worker_queuing", "communication"}
        a = run["allocation_time"]
        assert 0 < a["p50"] <= a["p90"] <= a["p99"] <= a["max"]
        assert final["live_problem"] is None
        stop(d.proc)  # its live queue goes with it
        assert until(lambda: queues_of(loaded.name) and f"{loaded.name}.live" not in queues_of(loaded.name))

    with_cluster(tmp_path, body)


def test_live_page_shows_the_components_and_a_placement_counter_rising_during_a_replay(broker, tmp_path, dashboard_of, chromium) -> None:
    from playwright.sync_api import sync_playwright

    def body(path, loaded):
        d = dashboard_of("--cluster", str(path), "--every", "0.3")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1500, "height": 1000})
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(d.url)  # the explorer has no runs: the dashboard opens the live view
                assert page.url.endswith("/live")
                page.wait_for_function("Number(document.body.dataset.polls || 0) >= 2", timeout=20_000)
                for table in ("#gms", "#lms", "#hosts"):
                    assert page.locator(f"{table} tbody tr").count() == 2
                    assert page.locator(f"{table} tbody td.up").count() == 2
                assert page.locator("#nodes-up").inner_text() == "6 / 6"

                def placements() -> int:
                    return int(re.sub(r"\D", "", page.locator("#placements").inner_text()) or 0)

                r = Replay(loaded, trace())
                r.start()
                seen = [placements()]
                while r.is_alive():
                    page.wait_for_timeout(250)
                    seen.append(placements())
                r.join(60)
                assert r.error is None
                assert seen == sorted(seen) and len(set(seen)) >= 3
                page.wait_for_function("document.querySelector('#placements').textContent === '200'", timeout=20_000)
                page.wait_for_function("document.querySelectorAll('#alloc tbody tr').length >= 1", timeout=20_000)
                assert page.locator("#util-chart svg").count() == 1
                if SHOTS:
                    page.screenshot(path=str(Path(SHOTS) / "live.png"), full_page=True)
                assert errors == []
            finally:
                browser.close()
        stop(d.proc)

    with_cluster(tmp_path, body)
