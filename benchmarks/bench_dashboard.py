"""Dashboard speed: the results explorer on a store of 500 runs (target: loaded and drawn in <= 2 s).

A store of ``--runs`` runs (default 500) is made by running a small sweep once
(two schedulers) and copying its run folders under new ids — summaries and
tables as a sweep writes them; then:

* the server side: reading the store (:class:`~schedlab.dashboard.explorer.Catalog`),
  median of ``--repeat`` loads;
* the page: ``schedlab dashboard`` in a fresh process, Debian's Chromium
  (headless, through Playwright) opens the explorer and waits until the run
  table is filled and the first runs' CDFs, percentiles and utilization are
  drawn; wall time from navigation (median of ``--repeat`` page loads, after
  one warm-up), against the 2 s target.

    python benchmarks/bench_dashboard.py [--runs 500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 2.0
SPEC = """\
name: bench-dashboard
workloads:
  - name: gen
    generate: {jobs: 200, arrivals: "poisson:1", tasks_per_job: "geom:20", duration: "exp:5", seed: 1}
data_centers:
  - workers: 200
schedulers:
  - name: megha
  - name: sparrow
seeds: [0]
"""


def make_store(root: Path, runs: int) -> Path:
    from schedlab.experiments.runner import run_sweep

    spec = root / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    store = run_sweep(spec, root / "res", jobs=1).root
    exp = json.loads((store / "experiment.json").read_text())
    seeds = exp["runs"]
    listed = []
    for k in range(runs):
        src = seeds[k % len(seeds)]
        rid = f"{k:016x}"
        shutil.copytree(store / "runs" / src["id"], store / "runs" / rid)
        listed.append({**src, "id": rid, "seed": k // len(seeds)})
    for s in seeds:
        shutil.rmtree(store / "runs" / s["id"])
    exp["runs"] = listed
    (store / "experiment.json").write_text(json.dumps(exp))
    return store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    from schedlab.dashboard.explorer import Catalog

    with tempfile.TemporaryDirectory() as d:
        store = make_store(Path(d), args.runs)
        loads = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            cat = Catalog([store])
            loads.append(time.perf_counter() - t0)
        print(f"catalog: {len(cat.runs)} runs read in {statistics.median(loads) * 1000:.0f} ms (median of {args.repeat})", flush=True)

        from playwright.sync_api import sync_playwright

        proc = subprocess.Popen([sys.executable, "-m", "schedlab", "dashboard", "--results", str(store), "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split()[-1].decode()
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
                walls = []
                for k in range(args.repeat + 1):
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    t0 = time.perf_counter()
                    page.goto(url)
                    page.wait_for_function("document.body.dataset.ready === '1' && document.querySelectorAll('#cdf-chart svg').length > 0",
                                           timeout=60_000)  # fmt: skip
                    wall = time.perf_counter() - t0
                    rows = page.locator("#runs-table tbody tr").count()
                    page.close()
                    if k:
                        walls.append(wall)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(10)
        med = statistics.median(walls)
        print(f"page: {rows} runs listed, first CDFs drawn in {med:.2f} s (median of {args.repeat}; {min(walls):.2f}-{max(walls):.2f})  "
              f"target {TARGET_SECONDS:g} s: {'met' if med <= TARGET_SECONDS else 'MISSED'} (x{TARGET_SECONDS / med:.2f})")


if __name__ == "__main__":
    main()
