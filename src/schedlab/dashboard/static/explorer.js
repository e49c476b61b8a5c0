// schedlab results explorer: pick runs, draw their CDFs (Vega-Lite), percentiles with ratios, utilization.
// The view lives in the URL's hash (runs, metric, baseline, log axis, hidden series), so a view is a link.
"use strict";

const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
const METRIC_AXIS = { jrt_delay: "delay in job response time (s)", allocation_time: "task allocation time (s)", utilization: "utilization" };
const state = { runs: [], byId: new Map(), selected: [], metric: "jrt_delay", baseline: "", logx: true, hidden: new Set(), filter: "" };
const $ = (sel) => document.querySelector(sel);

function fmt(v, digits = 4) {
  if (v === null || v === undefined) return "–";
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1e4 || a < 1e-3 ? v.toExponential(2) : Number(v.toPrecision(digits)).toString();
}

function readHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  state.selected = (h.get("runs") || "").split(",").filter((r) => state.byId.has(r));
  state.metric = h.get("metric") || "jrt_delay";
  state.baseline = h.get("baseline") || "";
  state.logx = h.get("log") !== "0";
  state.hidden = new Set((h.get("hide") || "").split(",").filter(Boolean));
}

function writeHash() {
  const h = new URLSearchParams();
  h.set("runs", state.selected.join(","));
  h.set("metric", state.metric);
  if (state.baseline) h.set("baseline", state.baseline);
  h.set("log", state.logx ? "1" : "0");
  if (state.hidden.size) h.set("hide", [...state.hidden].join(","));
  history.replaceState(null, "", "#" + h.toString());
  $("#permalink").href = location.href;
}

async function getJSON(url) {
  const r = await fetch(url);
  const body = await r.json().catch(() => ({ error: `${r.status} ${r.statusText}` }));
  if (!r.ok) throw new Error(body.error || `${r.status} ${r.statusText}`);
  return body;
}

function setStatus(text) { $("#status").textContent = text; }

function showProblems(problems) {
  const box = $("#problems");
  box.hidden = problems.length === 0;
  box.innerHTML = problems.length ? "<strong>Could not read:</strong><ul></ul>" : "";
  for (const p of problems) {
    const li = document.createElement("li");
    li.textContent = `${p.where}: ${p.what}`;
    box.querySelector("ul").appendChild(li);
  }
}

function colorOf(id) { return PALETTE[state.selected.indexOf(id) % PALETTE.length]; }
function nameOf(id) { const r = state.byId.get(id); return r ? `${r.label} · ${r.workload} · ${r.data_center} · seed ${r.seed}` : id; }

function renderRuns() {
  const body = $("#runs-table tbody");
  body.innerHTML = "";
  const words = state.filter.toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const r of state.runs) {
    const text = `${r.label} ${r.scheduler} ${r.workload} ${r.data_center} seed${r.seed} ${r.id}`.toLowerCase();
    if (!words.every((w) => text.includes(w))) continue;
    shown++;
    const tr = document.createElement("tr");
    tr.dataset.run = r.id;
    const on = state.selected.includes(r.id);
    tr.className = on ? "selected" : "";
    tr.title = `${r.id} (${r.source})`;
    const cells = [r.label, r.workload, r.data_center, r.seed, r.tasks.toLocaleString(), fmt(r.jrt_delay_p50), fmt(r.jrt_delay_p99), fmt(r.allocation_time_p50), fmt(r.utilization_mean, 3)];
    tr.innerHTML = `<td><input type="checkbox" ${on ? "checked" : ""} aria-label="select"></td>` + cells.map(() => "<td></td>").join("");
    cells.forEach((c, i) => { tr.children[i + 1].textContent = c; });
    tr.addEventListener("click", () => toggleRun(r.id));
    body.appendChild(tr);
  }
  $("#run-count").textContent = `(${state.selected.length} selected of ${state.runs.length}${shown !== state.runs.length ? `, ${shown} shown` : ""})`;
}

function toggleRun(id) {
  const i = state.selected.indexOf(id);
  if (i >= 0) state.selected.splice(i, 1); else state.selected.push(id);
  if (!state.selected.includes(state.baseline)) state.baseline = state.selected[0] || "";
  refresh();
}

function renderBaseline() {
  const sel = $("#baseline");
  sel.innerHTML = "";
  for (const id of state.selected) {
    const o = document.createElement("option");
    o.value = id; o.textContent = nameOf(id); o.selected = id === state.baseline;
    sel.appendChild(o);
  }
}

function renderToggles() {
  const box = $("#series-toggles");
  box.innerHTML = "";
  for (const id of state.selected) {
    const b = document.createElement("button");
    b.dataset.series = id;
    b.className = state.hidden.has(id) ? "off" : "";
    b.innerHTML = `<span class="swatch" style="background:${colorOf(id)}"></span>`;
    b.appendChild(document.createTextNode(nameOf(id)));
    b.title = state.hidden.has(id) ? "show this series" : "hide this series";
    b.addEventListener("click", () => {
      if (state.hidden.has(id)) state.hidden.delete(id); else state.hidden.add(id);
      refresh();
    });
    box.appendChild(b);
  }
}

function colorScale(ids) {
  return { domain: ids.map(nameOf), range: ids.map(colorOf) };
}

async function drawCdf() {
  const shown = state.selected.filter((id) => !state.hidden.has(id));
  const el = $("#cdf-chart");
  if (!shown.length) { el.innerHTML = '<p class="empty">Select runs on the left (or show a hidden series).</p>'; return []; }
  const data = await getJSON(`/api/cdf?metric=${state.metric}&runs=${encodeURIComponent(shown.join(","))}`);
  const log = state.logx && state.metric !== "utilization";
  const points = log ? data.points.map((p) => ({ ...p, value: Math.max(p.value, 1e-4) })) : data.points;
  const spec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    width: "container", height: 320,
    data: { values: points.map((p) => ({ ...p, series: nameOf(p.run) })) },
    params: [{ name: "zoom", select: "interval", bind: "scales" }],
    mark: { type: "line", interpolate: "step-after", strokeWidth: 2 },
    encoding: {
      x: { field: "value", type: "quantitative", title: METRIC_AXIS[state.metric] + (log ? ", log scale (values ≤ 0.1 ms at 0.1 ms)" : ""), scale: log ? { type: "log" } : {} },
      y: { field: "p", type: "quantitative", title: "fraction", scale: { domain: [0, 1] } },
      color: { field: "series", type: "nominal", scale: colorScale(shown), legend: null },
      detail: { field: "run" },
      tooltip: [{ field: "series" }, { field: "value", format: ".4~g", title: "value" }, { field: "p", format: ".3f", title: "fraction ≤" }],
    },
  };
  await vegaEmbed(el, spec, { renderer: "svg", actions: false });
  el.dataset.series = String(new Set(points.map((p) => p.run)).size);
  return data.missing;
}

async function drawPercentiles() {
  const metric = state.metric === "allocation_time" ? "allocation_time" : "jrt_delay";
  $("#pct-metric").textContent = `— ${metric === "jrt_delay" ? "JRT delay" : "allocation time"} (s); × ratio to the baseline, for runs on its workload and data center`;
  const head = $("#percentiles thead"), body = $("#percentiles tbody");
  head.innerHTML = ""; body.innerHTML = "";
  if (!state.selected.length) return;
  const t = await getJSON(`/api/percentiles?metric=${metric}&baseline=${encodeURIComponent(state.baseline)}&runs=${encodeURIComponent(state.selected.join(","))}`);
  head.innerHTML = "<tr><th>run</th>" + t.columns.map((c) => `<th>${c}</th>`).join("") + "</tr>";
  for (const row of t.rows) {
    const tr = document.createElement("tr");
    const name = document.createElement("td");
    name.textContent = row.label + (row.run === t.baseline ? " (baseline)" : "");
    tr.appendChild(name);
    for (const c of t.columns) {
      const td = document.createElement("td");
      td.textContent = fmt(row[c]);
      if (t.baseline && row[c + "_ratio"] !== null && row.run !== t.baseline) {
        const s = document.createElement("span");
        s.className = "ratio"; s.textContent = ` ×${fmt(row[c + "_ratio"], 3)}`;
        td.appendChild(s);
      }
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

async function drawUtilization() {
  const shown = state.selected.filter((id) => !state.hidden.has(id));
  const el = $("#util-chart");
  if (!shown.length) { el.innerHTML = ""; return []; }
  const data = await getJSON(`/api/utilization?runs=${encodeURIComponent(shown.join(","))}`);
  if (!data.points.length) { el.innerHTML = '<p class="empty">No utilization tables stored for these runs.</p>'; return data.missing; }
  const spec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    width: "container", height: 200,
    data: { values: data.points.map((p) => ({ ...p, series: nameOf(p.run) })) },
    params: [{ name: "zoom", select: { type: "interval", encodings: ["x"] }, bind: "scales" }],
    mark: { type: "line", strokeWidth: 1.2 },
    encoding: {
      x: { field: "time", type: "quantitative", title: "simulated time (s)" },
      y: { field: "utilization", type: "quantitative", title: "utilization", scale: { domain: [0, 1] } },
      color: { field: "series", type: "nominal", scale: colorScale(shown), legend: null },
      detail: { field: "run" },
      tooltip: [{ field: "series" }, { field: "time", format: ".1f" }, { field: "utilization", format: ".3f" }],
    },
  };
  await vegaEmbed(el, spec, { renderer: "svg", actions: false });
  return data.missing;
}

const LOAD_STATS = [["mean", "average"], ["p50", "median"], ["p95", "95th percentile"], ["p99", "99th percentile"]];

function renderLoadChoices() {
  // one choice per workload and data center among the selected runs (the load does not depend on the scheduler)
  const sel = $("#load-of");
  const previous = sel.value;
  const seen = new Map();
  for (const id of state.selected) {
    const r = state.byId.get(id);
    const key = `${r.workload} on ${r.data_center}`;
    if (!seen.has(key)) seen.set(key, id);
  }
  sel.innerHTML = "";
  for (const [key, id] of seen) {
    const o = document.createElement("option");
    o.value = id; o.textContent = key; o.selected = id === previous;
    sel.appendChild(o);
  }
}

async function drawLoad() {
  const el = $("#load-chart"), note = $("#load-note");
  const rid = $("#load-of").value;
  if (!rid) { el.innerHTML = ""; note.textContent = ""; return; }
  note.textContent = "computing from the trace…";
  const t = await getJSON(`/api/constraint_load?run=${encodeURIComponent(rid)}`);
  if ($("#load-of").value !== rid) return;  // the choice changed meanwhile
  if (t.note) { el.innerHTML = ""; note.textContent = `${t.what || nameOf(rid)}: ${t.note}.`; return; }
  const values = [];
  for (const row of t.rows) for (const [k, name] of LOAD_STATS) values.push({ constraint: row.constraint, stat: name, load: row[k], workers: row.workers, tasks: row.tasks });
  const spec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    width: "container", height: 220,
    data: { values },
    params: [{ name: "stat_shown", select: { type: "point", fields: ["stat"] }, bind: "legend" }],
    mark: "bar",
    encoding: {
      x: { field: "constraint", type: "ordinal", title: "constraint id" },
      xOffset: { field: "stat", sort: LOAD_STATS.map((s) => s[1]) },
      y: { field: "load", type: "quantitative", title: "load (demand / supply)" },
      color: { field: "stat", type: "nominal", sort: LOAD_STATS.map((s) => s[1]), title: null, legend: { orient: "top" } },
      opacity: { condition: { param: "stat_shown", value: 1 }, value: 0.15 },
      tooltip: [{ field: "constraint" }, { field: "stat" }, { field: "load", format: ".3f" }, { field: "workers", title: "workers satisfying it" }, { field: "tasks", title: "tasks needing it" }],
    },
  };
  await vegaEmbed(el, spec, { renderer: "svg", actions: false });
  const l = t.load;
  note.textContent = `Overall load per second (demand / workers): median ${fmt(l.median, 3)}, mean ${fmt(l.mean, 3)}, p99 ${fmt(l.p99, 3)} (the constraint-aware paper's Table 1). Click a legend entry to pick out one statistic.`;
}

async function refresh() {
  writeHash();
  renderRuns();
  renderBaseline();
  renderToggles();
  renderLoadChoices();
  $("#metric").value = state.metric;
  $("#logx").checked = state.logx;
  setStatus("drawing…");
  try {
    const [m1, , m2] = await Promise.all([drawCdf(), drawPercentiles(), drawUtilization(), drawLoad()]);
    const missing = [...new Set([...(m1 || []), ...(m2 || [])])];
    $("#missing").textContent = missing.length ? `Without the table this chart needs: ${missing.map(nameOf).join("; ")}.` : "";
    setStatus(`${state.runs.length} runs loaded`);
    document.body.dataset.ready = "1";
  } catch (e) {
    setStatus(`error: ${e.message}`);
    document.body.dataset.ready = "1";
  }
}

async function load(reload = false) {
  setStatus("loading runs…");
  const t0 = performance.now();
  const data = await getJSON("/api/runs" + (reload ? "?reload=1" : ""));
  state.runs = data.runs;
  state.byId = new Map(data.runs.map((r) => [r.id, r]));
  showProblems(data.problems);
  readHash();
  if (!state.selected.length && state.runs.length) state.selected = state.runs.slice(0, Math.min(3, state.runs.length)).map((r) => r.id);
  if (!state.selected.includes(state.baseline)) state.baseline = state.selected[0] || "";
  await refresh();
  document.body.dataset.loadMs = String(Math.round(performance.now() - t0));
}

$("#metric").addEventListener("change", (e) => { state.metric = e.target.value; refresh(); });
$("#logx").addEventListener("change", (e) => { state.logx = e.target.checked; refresh(); });
$("#baseline").addEventListener("change", (e) => { state.baseline = e.target.value; refresh(); });
$("#load-of").addEventListener("change", () => drawLoad().catch((e) => { $("#load-note").textContent = `error: ${e.message}`; }));
$("#filter").addEventListener("input", (e) => { state.filter = e.target.value; renderRuns(); });
$("#select-shown").addEventListener("click", () => {
  for (const tr of document.querySelectorAll("#runs-table tbody tr")) if (!state.selected.includes(tr.dataset.run)) state.selected.push(tr.dataset.run);
  if (!state.baseline) state.baseline = state.selected[0] || "";
  refresh();
});
$("#select-none").addEventListener("click", () => { state.selected = []; state.baseline = ""; refresh(); });
$("#reload").addEventListener("click", () => load(true));
window.addEventListener("hashchange", () => { readHash(); refresh(); });
load().catch((e) => setStatus(`error: ${e.message}`));
