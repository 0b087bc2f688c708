// The launcher's status page (cmd/launch/status_page.h): one HTML file
// with its CSS and script inline; nothing loaded from elsewhere. The script
// polls status.json every second (cmd/launch/job_view.h has its fields)
// and draws the plots as inline SVG. Text from the JSON is set with
// textContent only, never parsed as HTML.
#include "cmd/launch/status_page.h"

namespace fabps::launch {

const char kStatusPageHtml[] = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:">
<title>fabps job</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
header { background: #1d2330; color: #fff; padding: 12px 20px; display: flex; align-items: center; gap: 14px; }
header h1 { font-size: 18px; margin: 0; font-weight: 600; }
#health { padding: 3px 10px; border-radius: 12px; font-weight: 600; font-size: 13px; background: #888; }
#health.running { background: #1f9d55; } #health.starting { background: #3b82f6; }
#health.degraded { background: #d97706; } #health.failed { background: #dc2626; }
#health.finished { background: #6366f1; }
#reason { color: #fca5a5; font-size: 13px; }
#conn { margin-left: auto; font-size: 12px; color: #cbd5e1; }
main { padding: 16px 20px; display: grid; gap: 16px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(136px, 1fr)); gap: 12px; }
.card, .panel { background: #fff; border-radius: 8px; box-shadow: 0 1px 2px rgba(0,0,0,.08); padding: 10px 14px; }
.card .k { font-size: 12px; color: #64748b; } .card .v { font-size: 20px; font-weight: 600; }
.card .v.small { font-size: 13px; font-weight: 500; word-break: break-all; }
.bar { height: 6px; background: #e2e8f0; border-radius: 3px; margin-top: 6px; }
.bar div { height: 6px; background: #3b82f6; border-radius: 3px; width: 0; }
.plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 16px; }
.panel h2 { font-size: 14px; margin: 0 0 6px; color: #334155; }
svg { width: 100%; height: 220px; display: block; }
svg text { font-size: 11px; fill: #64748b; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #e2e8f0; font-size: 13px; }
th { color: #64748b; font-weight: 600; }
.st { padding: 1px 8px; border-radius: 10px; font-size: 12px; background: #e2e8f0; }
.st.running { background: #dcfce7; color: #166534; } .st.restarting { background: #fef3c7; color: #92400e; }
.st.ended { background: #fee2e2; color: #991b1b; } .st.finished { background: #e0e7ff; color: #3730a3; }
a { color: #2563eb; }
.none { color: #94a3b8; }
</style>
</head>
<body>
<header>
  <h1>fabps job <span id="job"></span></h1>
  <span id="health">loading</span>
  <span id="reason"></span>
  <span id="conn"></span>
</header>
<main>
  <div class="cards">
    <div class="card"><div class="k">pass</div><div class="v" id="pass">-</div></div>
    <div class="card"><div class="k">tasks of this pass</div><div class="v" id="tasks">-</div>
      <div class="bar"><div id="tasks-bar"></div></div></div>
    <div class="card"><div class="k">samples/s</div><div class="v" id="sps">-</div></div>
    <div class="card"><div class="k">updates/s (pservers)</div><div class="v" id="ups">-</div></div>
    <div class="card"><div class="k">loss (latest)</div><div class="v" id="loss">-</div></div>
    <div class="card"><div class="k" id="metric-name">test accuracy (last pass)</div><div class="v" id="accuracy">-</div></div>
    <div class="card"><div class="k">elapsed</div><div class="v" id="elapsed">-</div></div>
    <div class="card"><div class="k">provider / store</div><div class="v small" id="where">-</div></div>
  </div>
  <div class="plots">
    <div class="panel"><h2>loss per pass</h2><svg id="plot-loss"></svg></div>
    <div class="panel"><h2 id="plot-acc-title">test accuracy per pass</h2><svg id="plot-acc"></svg></div>
    <div class="panel"><h2>throughput over time</h2><svg id="plot-rate"></svg></div>
  </div>
  <div class="panel"><h2>passes</h2>
    <table id="passes"><thead><tr><th>pass</th><th>loss</th><th id="passes-metric">test accuracy</th><th>seconds</th></tr></thead>
    <tbody></tbody></table></div>
  <div class="panel"><h2>processes</h2>
    <table id="processes"><thead><tr><th>name</th><th>role</th><th>index</th><th>state</th><th>pid</th>
      <th>restarts of role</th><th>detail</th><th>log</th></tr></thead><tbody></tbody></table></div>
</main>
<script>
"use strict";
const SVGNS = "http://www.w3.org/2000/svg";
function $(id) { return document.getElementById(id); }
function fmt(v, d) { return (v === null || v === undefined) ? "-" : Number(v).toFixed(d); }
function el(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function niceTicks(lo, hi, n, integers) {
  if (!(hi > lo)) { hi = lo + 1; }
  const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw);
  if (integers) step = Math.max(1, Math.round(step));
  const ticks = [];
  for (let t = Math.floor(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(t);
  if (ticks[ticks.length - 1] < hi) ticks.push(ticks[ticks.length - 1] + step);
  return ticks;
}
// series: [{name, color, points: [[x, y], ...], dots}]; intX: x ticks
// on whole numbers only (passes).
function lineChart(svg, series, xlabel, empty, intX) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const W = svg.clientWidth || 400, H = svg.clientHeight || 220;
  const L = 52, R = 12, T = 22, B = 30;
  const pts = [].concat(...series.map(s => s.points.filter(p => p[1] !== null)));
  if (pts.length === 0) {
    svg.appendChild(el("text", {x: W / 2, y: H / 2, "text-anchor": "middle"}, empty));
    return;
  }
  let xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
  let x0 = Math.min(...xs), x1 = Math.max(...xs);
  if (x1 === x0) { x0 -= intX ? 0.5 : 1; x1 += intX ? 0.5 : 1; }
  let y0 = Math.min(...ys), y1 = Math.max(...ys);
  if (y1 === y0) { y0 -= Math.abs(y0) * 0.1 + 0.01; y1 += Math.abs(y1) * 0.1 + 0.01; }
  const yt = niceTicks(y0, y1, 4); y0 = yt[0]; y1 = yt[yt.length - 1];
  const X = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const Y = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  for (const t of yt) {
    svg.appendChild(el("line", {x1: L, x2: W - R, y1: Y(t), y2: Y(t), stroke: "#e2e8f0"}));
    svg.appendChild(el("text", {x: L - 6, y: Y(t) + 4, "text-anchor": "end"},
                       Math.abs(t) >= 1000 ? t.toFixed(0) : Number(t.toPrecision(3)).toString()));
  }
  for (const t of niceTicks(x0, x1, 5, intX).filter(t => t >= x0 && t <= x1)) {
    svg.appendChild(el("text", {x: X(t), y: H - B + 16, "text-anchor": "middle"},
                       Number(t.toPrecision(4)).toString()));
  }
  svg.appendChild(el("text", {x: W - R, y: H - 2, "text-anchor": "end"}, xlabel));
  svg.appendChild(el("line", {x1: L, x2: L, y1: T, y2: H - B, stroke: "#94a3b8"}));
  svg.appendChild(el("line", {x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: "#94a3b8"}));
  let lx = L + 4;
  for (const s of series) {
    const p = s.points.filter(q => q[1] !== null);
    if (p.length > 0) {
      svg.appendChild(el("polyline", {fill: "none", stroke: s.color, "stroke-width": 2,
        points: p.map(q => X(q[0]).toFixed(1) + "," + Y(q[1]).toFixed(1)).join(" ")}));
      if (s.dots) for (const q of p)
        svg.appendChild(el("circle", {cx: X(q[0]), cy: Y(q[1]), r: 3.5, fill: s.color}));
    }
    svg.appendChild(el("rect", {x: lx, y: 6, width: 10, height: 10, fill: s.color}));
    const label = el("text", {x: lx + 14, y: 15}, s.name);
    svg.appendChild(label);
    lx += 24 + 7 * s.name.length;
  }
}
function cell(tr, text, cls) {
  const td = document.createElement("td");
  if (cls) { const s = document.createElement("span"); s.className = cls; s.textContent = text; td.appendChild(s); }
  else td.textContent = text;
  tr.appendChild(td);
  return td;
}
function render(s) {
  $("job").textContent = s.job;
  document.title = "fabps job " + s.job + " (" + s.health + ")";
  $("health").textContent = s.health;
  $("health").className = s.health;
  $("reason").textContent = s.reason;
  $("pass").textContent = Math.min(s.pass, s.passes) + " / " + s.passes;
  $("tasks").textContent = s.tasks_done + " / " + s.tasks_total;
  $("tasks-bar").style.width = (s.tasks_total > 0 ? 100 * s.tasks_done / s.tasks_total : 0) + "%";
  $("sps").textContent = fmt(s.samples_per_sec, 0);
  $("ups").textContent = fmt(s.updates_per_sec, 0);
  $("loss").textContent = fmt(s.loss, 4);
  const mname = s.metric === "auc" ? "test AUC" : "test accuracy";
  $("metric-name").textContent = mname + " (last pass)";
  $("plot-acc-title").textContent = mname + " per pass";
  $("passes-metric").textContent = mname;
  const done = s.pass_results.filter(p => p.accuracy !== null);
  $("accuracy").textContent = done.length ? fmt(done[done.length - 1].accuracy, 4) : "-";
  $("elapsed").textContent = fmt(s.elapsed_s, 0) + " s";
  $("where").textContent = s.provider + " / " + s.store;
  const pb = $("passes").tBodies[0];
  pb.replaceChildren();
  for (const p of s.pass_results) {
    const tr = document.createElement("tr");
    tr.dataset.pass = p.pass;
    cell(tr, p.pass); cell(tr, fmt(p.loss, 4));
    cell(tr, fmt(p.accuracy, 4)).className = "accuracy";
    cell(tr, fmt(p.seconds, 1));
    pb.appendChild(tr);
  }
  const tb = $("processes").tBodies[0];
  tb.replaceChildren();
  for (const p of s.processes) {
    const tr = document.createElement("tr");
    tr.dataset.role = p.role; tr.dataset.name = p.name;
    cell(tr, p.name); cell(tr, p.role); cell(tr, p.index === null ? "" : p.index);
    cell(tr, p.state, "st " + p.state); cell(tr, p.pid ? p.pid : "");
    cell(tr, p.restarts); cell(tr, p.detail);
    const td = document.createElement("td");
    if (p.log) {
      const a = document.createElement("a");
      a.href = "logs/" + encodeURIComponent(p.log); a.textContent = p.log; a.target = "_blank";
      a.className = "log";
      td.appendChild(a);
    }
    tr.appendChild(td);
    tb.appendChild(tr);
  }
  const pr = s.pass_results;
  lineChart($("plot-loss"), [{name: "loss", color: "#dc2626", dots: true,
    points: pr.map(p => [p.pass, p.loss])}], "pass", "no pass over yet", true);
  lineChart($("plot-acc"), [{name: mname, color: "#1f9d55", dots: true,
    points: pr.map(p => [p.pass, p.accuracy])}], "pass", "no pass over yet", true);
  lineChart($("plot-rate"), [
    {name: "samples/s", color: "#3b82f6", points: s.rates.map(r => [r.t, r.samples_per_sec])},
    {name: "updates/s", color: "#f59e0b", points: s.rates.map(r => [r.t, r.updates_per_sec])}],
    "seconds", "no training yet");
}
let lastOk = 0;
async function poll() {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 3000);
  try {
    const r = await fetch("status.json", {cache: "no-store", signal: ctl.signal});
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    lastOk = Date.now();
    $("conn").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    $("conn").textContent = lastOk ? "launcher not answering (job ended?) since " +
      new Date(lastOk).toLocaleTimeString() : "launcher not answering";
  } finally {
    clearTimeout(timer);
    setTimeout(poll, 1000);
  }
}
poll();
</script>
</body>
</html>
)HTML";

}  // namespace fabps::launch
