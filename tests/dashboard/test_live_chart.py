"""The live view's chart spec (static/livechart.js) compiled and rendered by the vendored Vega in Node: its
axis labels are what a person reads (no browser needed; skipped without Node)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from schedlab.dashboard.server import static_dir

NODE = shutil.which("node")

RENDER = r"""
const fs = require("fs"), vm = require("vm");
const [dir, rates] = [process.argv[1], JSON.parse(process.argv[2])];
const ctx = { console, setTimeout, clearTimeout, structuredClone, Date, Intl, window: {}, self: {} };
ctx.globalThis = ctx;
vm.createContext(ctx);
for (const f of ["vendor/vega.min.js", "vendor/vega-lite.min.js", "livechart.js"]) vm.runInContext(fs.readFileSync(dir + "/" + f, "utf8"), ctx);
const values = [];
rates.forEach((r, i) => {
  const time = new Date(1700000000000 + 1000 * i);
  values.push({ time, value: 0.5, series: "utilization" }, { time, value: r, series: "placements/s" });
});
const spec = Object.assign(vm.runInContext("liveChartSpec", ctx)(values), { width: 300 });
const view = new ctx.vega.View(ctx.vega.parse(ctx.vegaLite.compile(spec).spec), { renderer: "none" });
view.toSVG().then((svg) => console.log(JSON.stringify([...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]))));
"""


def _labels(rates: list[float]) -> list[str]:
    if NODE is None:
        pytest.skip("no node on PATH: the chart spec is rendered by the vendored Vega in Node")
    done = subprocess.run([NODE, "-e", RENDER, str(Path(static_dir())), json.dumps(rates)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    labels: list[str] = json.loads(done.stdout)
    return labels[labels.index("utilization") + 1 : labels.index("placements/s")]


def test_an_idle_clusters_placement_axis_reads_0_not_0_000000() -> None:
    assert _labels([0, 0, 0, 0]) == ["0"]


def test_placement_axis_labels_are_short_numbers() -> None:
    labels = _labels([0, 2.5, 1200, 40])
    assert "0" in labels and all(len(x) <= 5 for x in labels), labels
    assert any("," in x for x in labels), labels  # thousands grouped: 1,000
