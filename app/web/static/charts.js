// Plain SVG charts for the leaderboard pages (no libraries, no CDN).
"use strict";
const PF = (window.PF = window.PF || {});
const SVGNS = "http://www.w3.org/2000/svg";
PF.palette = ["#1f5fbf", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285", "#c2255c",
              "#5c940d", "#364fc7", "#a61e4d", "#495057", "#087f5b", "#f08c00", "#5f3dc4",
              "#74b816", "#1098ad", "#e64980", "#845ef7", "#66a80f", "#000000"];

function el(name, attrs, parent) {
  const node = document.createElementNS(SVGNS, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}
function text(parent, x, y, s, attrs) {
  const t = el("text", Object.assign({ x, y }, attrs || {}), parent);
  t.textContent = s;
  return t;
}
function niceTicks(lo, hi, n) {
  if (!(hi > lo)) { hi = lo + 1; }
  const step0 = (hi - lo) / Math.max(n, 1);
  const mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-12; v += step) ticks.push(+v.toFixed(10));
  return ticks;
}
function frame(svg, opts) {
  const W = +svg.getAttribute("width") || 520, H = +svg.getAttribute("height") || 280;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const m = { l: 52, r: 12, t: 14, b: 38 };
  const x = (v) => m.l + ((v - opts.x0) / (opts.x1 - opts.x0)) * (W - m.l - m.r);
  const y = (v) => H - m.b - ((v - opts.y0) / (opts.y1 - opts.y0)) * (H - m.t - m.b);
  const g = el("g", {}, svg);
  for (const t of opts.yticks) {
    el("line", { x1: m.l, x2: W - m.r, y1: y(t), y2: y(t), stroke: "#e3e7ed" }, g);
    text(g, m.l - 6, y(t) + 4, opts.yfmt ? opts.yfmt(t) : String(t), { "text-anchor": "end" });
  }
  for (const t of opts.xticks) {
    text(g, x(t), H - m.b + 15, opts.xfmt ? opts.xfmt(t) : String(t), { "text-anchor": "middle" });
  }
  el("line", { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b, stroke: "#8a94a3" }, g);
  el("line", { x1: m.l, x2: m.l, y1: m.t, y2: H - m.b, stroke: "#8a94a3" }, g);
  if (opts.xlabel) text(g, (m.l + W - m.r) / 2, H - 4, opts.xlabel, { "text-anchor": "middle" });
  if (opts.ylabel) text(g, 12, (m.t + H - m.b) / 2, opts.ylabel,
    { "text-anchor": "middle", transform: `rotate(-90 12 ${(m.t + H - m.b) / 2})` });
  return { x, y, g, W, H, m };
}
// A series' colour: its model's fixed index (opts.colors) or its position.
function colour(opts, name, i) {
  const k = opts && opts.colors && name in opts.colors ? opts.colors[name] : i;
  return PF.palette[k % PF.palette.length];
}
PF.colour = colour;
function legend(container, names, opts) {
  if (!container) return;
  container.innerHTML = "";
  names.forEach((n, i) => {
    const s = document.createElement("span");
    s.style.setProperty("--c", colour(opts, n, i));
    s.textContent = n;
    container.appendChild(s);
  });
}

// series: [{name, points: [[x, y], ...]}]
PF.lineChart = function (svg, series, opts) {
  opts = opts || {};
  const pts = series.flatMap((s) => s.points.filter((p) => Number.isFinite(p[1])));
  if (!pts.length) { svg.outerHTML = '<div class="empty">No scores to draw yet.</div>'; return; }
  let y0 = Math.min(...pts.map((p) => p[1])), y1 = Math.max(...pts.map((p) => p[1]));
  if (opts.includeZero) { y0 = Math.min(y0, 0); y1 = Math.max(y1, 0); }
  const pad = (y1 - y0) * 0.08 || 0.05; y0 -= pad; y1 += pad;
  const xs = pts.map((p) => p[0]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs);
  const f = frame(svg, { x0, x1, y0, y1, yticks: niceTicks(y0, y1, 5), xticks: niceTicks(x0, x1, 10),
    xlabel: opts.xlabel, ylabel: opts.ylabel, yfmt: (v) => v.toFixed(2) });
  series.forEach((s, i) => {
    const c = colour(opts, s.name, i);
    const good = s.points.filter((p) => Number.isFinite(p[1]));
    el("polyline", { points: good.map((p) => `${f.x(p[0])},${f.y(p[1])}`).join(" "), fill: "none",
      stroke: c, "stroke-width": 2, "data-series": s.name }, f.g);
    for (const p of good) {
      const dot = el("circle", { cx: f.x(p[0]), cy: f.y(p[1]), r: 2.6, fill: c }, f.g);
      el("title", {}, dot).textContent = `${s.name}: h=${p[0]}, ${p[1].toFixed(4)}`;
    }
  });
  legend(opts.legend, series.map((s) => s.name), opts);
};

// Nominal vs empirical interval coverage, one marker set per model, with the diagonal.
PF.coverageChart = function (svg, series, opts) {
  opts = opts || {};
  const f = frame(svg, { x0: 0.4, x1: 1.0, y0: 0.4, y1: 1.0, yticks: [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    xticks: [0.5, 0.8, 0.9, 0.95], xlabel: "nominal coverage", ylabel: "empirical coverage",
    yfmt: (v) => v.toFixed(1) });
  el("line", { x1: f.x(0.4), y1: f.y(0.4), x2: f.x(1), y2: f.y(1), stroke: "#8a94a3",
    "stroke-dasharray": "4 3" }, f.g);
  const drawn = [];
  series.forEach((s, i) => {
    const good = s.points.filter((p) => Number.isFinite(p[1]));
    if (!good.length) return;
    drawn.push(s.name);
    const c = colour(opts, s.name, i);
    el("polyline", { points: good.map((p) => `${f.x(p[0])},${f.y(Math.max(0.4, p[1]))}`).join(" "),
      fill: "none", stroke: c, "stroke-width": 1.5 }, f.g);
    for (const p of good) {
      const dot = el("circle", { cx: f.x(p[0]), cy: f.y(Math.max(0.4, p[1])), r: 3.2, fill: c }, f.g);
      el("title", {}, dot).textContent = `${s.name}: ${p[0]} -> ${p[1].toFixed(3)}`;
    }
  });
  if (!drawn.length) text(f.g, f.W / 2, f.H / 2, "no density forecasts", { "text-anchor": "middle" });
  legend(opts.legend, series.map((s) => s.name), opts);
};

// 20-bin PIT histogram (shares), with the uniform line at 1/20.
PF.pitChart = function (svg, shares, opts) {
  opts = opts || {};
  if (!shares || !shares.length) { svg.outerHTML = '<div class="empty">No PIT histogram (no sigma).</div>'; return; }
  const ymax = Math.max(0.1, ...shares.map((s) => s || 0)) * 1.1;
  const f = frame(svg, { x0: 0, x1: 1, y0: 0, y1: ymax, yticks: niceTicks(0, ymax, 4),
    xticks: [0, 0.25, 0.5, 0.75, 1], xlabel: "PIT", ylabel: "share", yfmt: (v) => v.toFixed(2) });
  const n = shares.length;
  shares.forEach((s, b) => {
    const x = f.x(b / n), w = f.x((b + 1) / n) - x - 1;
    const bar = el("rect", { x, y: f.y(s || 0), width: Math.max(w, 1), height: f.y(0) - f.y(s || 0),
      fill: opts.color || PF.palette[0], opacity: 0.85 }, f.g);
    el("title", {}, bar).textContent = `[${(b / n).toFixed(2)}, ${((b + 1) / n).toFixed(2)}): ${(s || 0).toFixed(4)}`;
  });
  el("line", { x1: f.x(0), x2: f.x(1), y1: f.y(1 / n), y2: f.y(1 / n), stroke: "#b42318",
    "stroke-dasharray": "4 3" }, f.g);
};

PF.readJSON = function (id) {
  const node = document.getElementById(id);
  return node ? JSON.parse(node.textContent) : null;
};
