// schedlab live cluster view: the dashboard pushes the cluster's state after every read (server-sent events);
// this page keeps the last ten minutes of it for the charts.
"use strict";

const HISTORY_S = 600;
const history = [];
let chart = null;
const $ = (sel) => document.querySelector(sel);
const COMPONENTS = ["framework_queuing", "processing", "worker_queuing", "communication"];

function fmt(v, digits = 3) {
  if (v === null || v === undefined) return "–";
  if (typeof v !== "number") return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1e5 || a < 1e-3 ? v.toExponential(2) : Number(v.toPrecision(digits)).toLocaleString();
}
function ms(v) { return v === null || v === undefined ? "–" : fmt(v * 1000) + " ms"; }

function fillTable(sel, rows, cells) {
  const body = $(sel + " tbody");
  body.innerHTML = "";
  for (const r of rows) {
    const tr = document.createElement("tr");
    tr.dataset.id = r.id;
    for (const [value, cls] of cells(r)) {
      const td = document.createElement("td");
      td.textContent = value;
      if (cls) td.className = cls;
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

function stateCell(r) { return r.up ? ["up", "up"] : ["down", "down"]; }

function render(s) {
  $("#cluster-name").textContent = s.cluster;
  if (s.pending) return;
  const t = s.totals;
  $("#placements").textContent = t.placements.toLocaleString();
  $("#placements-rate").textContent = fmt(t.placements_per_s);
  $("#waiting").textContent = t.waiting.toLocaleString();
  $("#running").textContent = `${t.running.toLocaleString()} / ${t.workers.toLocaleString()}`;
  $("#utilization").textContent = t.utilization === null ? "–" : (100 * t.utilization).toFixed(1) + " %";
  $("#nodes-up").textContent = `${t.nodes_up} / ${t.nodes}`;
  fillTable("#gms", s.nodes.gm, (r) => [[r.id], stateCell(r), [fmt(r.heartbeat_age)], [fmt(r.waiting)], [fmt(r.placements_per_s)], [fmt(r.placements)], [fmt(r.rejected)], [fmt(r.repartition_requests)], [(r.lms_suspended || []).join(", ") || "–"]]);
  fillTable("#lms", s.nodes.lm, (r) => [[r.id], stateCell(r), [fmt(r.heartbeat_age)], [fmt(r.running)], [r.partitions], [fmt(r.lent_workers)], [fmt(r.repartitions)], [fmt(r.inconsistencies_per_min)], [(r.hosts_down_now || []).join(", ") || "–"]]);
  fillTable("#hosts", s.nodes.worker, (r) => [[r.id], stateCell(r), [fmt(r.workers)], [fmt(r.running)], [fmt(r.started)], [fmt(r.finished)]]);

  const problems = [];
  for (const role of ["gm", "lm", "worker"]) for (const r of s.nodes[role]) if (!r.up) problems.push(`${role} ${r.id} (${r.url}): ${r.error}`);
  if (s.live_problem) problems.push(s.live_problem);
  const box = $("#problems");
  box.hidden = problems.length === 0;
  box.innerHTML = problems.length ? "<ul></ul>" : "";
  for (const p of problems) { const li = document.createElement("li"); li.textContent = p; box.querySelector("ul").appendChild(li); }

  $("#alloc-empty").hidden = s.runs.length > 0;
  $("#window-note").textContent = s.runs.length ? `— tasks completed in the last ${s.runs[0].window_s} s, per replaying client` : "";
  fillTable("#alloc", s.runs, (r) => {
    const a = r.allocation_time || {}, c = r.components || {};
    return [[r.run], [`${r.tasks_done.toLocaleString()}/${r.tasks.toLocaleString()}${r.done ? " ✓" : ""}`], [r.tasks], [ms(a.p50)], [ms(a.p90)], [ms(a.p99)], [ms(a.mean)],
      ...COMPONENTS.map((k) => [ms((c[k] || {}).mean)])];
  });

  const ev = $("#events");
  ev.innerHTML = "";
  for (const e of s.events) {
    const li = document.createElement("li");
    li.className = e.kind;
    const time = document.createElement("time");
    time.textContent = new Date(e.time * 1000).toLocaleTimeString();
    li.appendChild(time);
    li.appendChild(document.createTextNode(e.text));
    ev.appendChild(li);
  }
  if (!s.events.length) ev.innerHTML = '<li class="empty">none since the dashboard started</li>';

  history.push({ time: s.time, utilization: t.utilization, rate: t.placements_per_s });
  while (history.length && history[0].time < s.time - HISTORY_S) history.shift();
  drawChart();
  document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
}

function chartValues() {
  const out = [];
  for (const h of history) {
    const d = new Date(h.time * 1000);
    if (h.utilization !== null) out.push({ time: d, value: h.utilization, series: "utilization" });
    if (h.rate !== null) out.push({ time: d, value: h.rate, series: "placements/s" });
  }
  return out;
}

async function drawChart() {
  const values = chartValues();
  if (chart) {
    chart.view.change("points", vega.changeset().remove(() => true).insert(values)).run();
    return;
  }
  const spec = liveChartSpec(values);
  chart = await vegaEmbed("#util-chart", spec, { renderer: "svg", actions: false });
}

function connect() {
  const source = new EventSource("/api/live/stream" + location.search);
  source.onmessage = (m) => {
    const s = JSON.parse(m.data);
    render(s);
    $("#status").textContent = `updated ${new Date(s.time * 1000).toLocaleTimeString()} (every ${s.every} s)`;
  };
  source.onerror = () => { $("#status").textContent = "connection lost, retrying…"; };
}
connect();
