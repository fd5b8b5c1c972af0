// repro report page: hand-written canvas drawing, no dependencies.
// The data (REPRO_DATA) is gzip+base64 JSON written by package htmlreport.
(async function () {
  "use strict";
  const started = performance.now();
  const $ = (id) => document.getElementById(id);
  const status = $("status");
  const fail = (msg) => {
    status.textContent = "the page failed: " + msg;
    status.className = "error";
    $("drawn").dataset.error = String(msg);
  };
  window.addEventListener("error", (e) => fail(e.message + " at line " + e.lineno));
  window.addEventListener("unhandledrejection", (e) => fail(e.reason && e.reason.stack || e.reason));

  const CLASS_COLORS = {
    "header-timeout": "#d62728", "connect-refused": "#ff7f0e", "connect-timeout": "#e377c2",
    "dns": "#8c8c8c", "tls": "#9467bd", "reset": "#8c564b", "eof": "#b8b820", "http-429": "#17a2b8",
    "http-5xx": "#e6550d", "http-other": "#7b4173", "client-timeout": "#a50f15", "other": "#636363",
    "aborted": "#c7c7c7",
  };
  const OK = "#5fb760";
  const PHASE_COLORS = { terminating: "#f2a93b", stopped: "#c0392b", starting: "#4a90d9", ready: "#2e9d48" };
  const STAGE_COLORS = { baseline: "rgba(120,130,140,0.10)", rollout: "rgba(255,196,0,0.13)", "cool-down": "rgba(60,140,220,0.09)" };
  const CONN_COLORS = { new: "#1f77b4", reused: "#9c5fc4" };

  let page;
  try {
    page = await inflate(REPRO_DATA);
  } catch (e) {
    status.textContent = "cannot read the embedded data: " + e;
    status.className = "error";
    return;
  }
  const decoded = performance.now();
  prepare(page);

  // ---------- helpers ----------
  async function inflate(b64) {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    if (typeof DecompressionStream === "undefined") throw new Error("this browser lacks DecompressionStream");
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  function undelta(a, T) {
    const out = new T(a.length);
    let acc = 0;
    for (let i = 0; i < a.length; i++) { acc += a[i]; out[i] = acc; }
    return out;
  }
  function prepare(p) {
    for (const r of p.runs) {
      for (const l of r.lanes) {
        l.T = undelta(l.t, Float64Array);
        l.Seq = undelta(l.seq, Float64Array);
        l.D = Int32Array.from(l.d); l.C = Int8Array.from(l.c);
        for (const lv of l.levels) lv.I = undelta(lv.idx, Int32Array);
        delete l.t; delete l.seq; delete l.d; delete l.c;
      }
    }
  }
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "class") e.className = attrs[k];
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  function fmtMs(ms) {
    if (ms === 0) return "0";
    if (ms >= 1000) return (ms / 1000).toFixed(3) + " s";
    if (ms >= 100) return Math.round(ms) + " ms";
    if (ms >= 10) return ms.toFixed(1) + " ms";
    return ms.toFixed(2) + " ms";
  }
  const barLabel = (ms) => Math.round(ms) + " ms";
  function clock(run, x, withMs) {
    const d = new Date(run.t0 + x);
    const p2 = (n) => String(n).padStart(2, "0");
    let s = p2(d.getUTCHours()) + ":" + p2(d.getUTCMinutes()) + ":" + p2(d.getUTCSeconds());
    if (withMs) s += "." + String(d.getUTCMilliseconds()).padStart(3, "0");
    return s;
  }
  function rel(x) { return (x >= 0 ? "+" : "") + (x / 1000).toFixed(3) + " s"; }
  const when = (run, x) => page.compare ? rel(x) + " from trigger (" + clock(run, x, true) + ")" : clock(run, x, true) + " UTC";
  function lowerBound(a, v) { let lo = 0, hi = a.length; while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; } return lo; }
  const className = (c) => c === 0 ? "ok" : page.classes[c - 1];
  const classColor = (c) => c === 0 ? OK : (CLASS_COLORS[page.classes[c - 1]] || "#636363");

  // ---------- tables ----------
  function buildTables() {
    const info = $("info");
    for (const r of page.runs) {
      if (page.compare) info.append(el("h3", { class: "runlabel" }, r.label));
      const dl = el("dl", { class: "info" });
      for (const kv of r.info) dl.append(el("dt", null, kv.k), el("dd", null, kv.v));
      info.append(dl);
      for (const n of r.notes || []) info.append(el("p", { class: "note" }, "note: " + n));
    }
    const sum = $("summary");
    sum.append(el("h2", null, page.compare ? "Totals side by side" : "Summary"));
    if (!page.compare) {
      const t = el("table");
      t.append(el("tr", null, ...["backend-connection", "samples", "failures", "disrupted", "intervals", "longest", "skipped", "error classes"]
        .map((h, i) => el("th", { class: i > 0 && i < 7 ? "num" : "" }, h))));
      for (const row of page.runs[0].rows) {
        t.append(el("tr", null, el("td", { class: "mono" }, row.name), el("td", { class: "num" }, row.samples),
          el("td", { class: "num" + (row.failures ? " bad" : "") }, row.failures),
          el("td", { class: "num" + (row.disruptedMs ? " bad" : "") }, fmtMs(row.disruptedMs)),
          el("td", { class: "num" }, row.intervals), el("td", { class: "num" }, fmtMs(row.longestMs)),
          el("td", { class: "num" }, row.skipped), el("td", null, row.classes || "-")));
      }
      sum.append(t);
    } else {
      const names = [];
      for (const r of page.runs) for (const row of r.rows) if (!names.includes(row.name)) names.push(row.name);
      const t = el("table");
      t.append(el("tr", null, el("th", null, "backend-connection"), ...page.runs.map((r) => el("th", { class: "num" }, r.label))));
      for (const n of names) {
        const tr = el("tr", null, el("td", { class: "mono" }, n));
        for (const r of page.runs) {
          const row = r.rows.find((x) => x.name === n);
          tr.append(row ? el("td", { class: "num" + (row.disruptedMs ? " bad" : "") },
            (row.intervals ? fmtMs(row.disruptedMs) + " in " + row.intervals + (row.intervals > 1 ? " intervals (longest " + fmtMs(row.longestMs) + ")" : " interval") : "no disruption") +
            " · " + row.failures + "/" + row.samples + " failed")
            : el("td", { class: "none" }, "-"));
        }
        t.append(tr);
      }
      sum.append(t);
    }
    const gaps = $("gaps");
    gaps.append(el("h2", null, "Disruption intervals"));
    const t = el("table");
    t.append(el("tr", null, ...[page.compare ? "run" : null, page.compare ? "from trigger" : "start (UTC)", "length", "backend-connection", "class", "failed samples", "where in the rollout", "served by", "first error"]
      .filter((h) => h !== null).map((h) => el("th", { class: h === "length" || h === "failed samples" ? "num" : "" }, h))));
    let n = 0;
    const list = [];
    for (const r of page.runs) for (const l of r.lanes) for (const b of l.bars) list.push([r, l, b]);
    list.sort((x, y) => x[0] === y[0] ? x[2].from - y[2].from : 0);
    for (const [r, l, b] of list) {
      const tr = el("tr", { class: "gap", title: "click to zoom here", onclick: () => { zoomTo(b.from - Math.max(1500, b.ms), b.to + Math.max(1500, b.ms)); $("timeline-section").scrollIntoView({ behavior: "smooth", block: "start" }); } });
      if (page.compare) tr.append(el("td", null, r.label));
      tr.append(el("td", { class: "mono" }, page.compare ? rel(b.from) : clock(r, b.from, true)),
        el("td", { class: "num bad" }, b.outage ? fmtMs(b.ms) + " (sampler outage)" : barLabel(b.ms) + (b.open ? " (open)" : "")),
        el("td", { class: "mono" }, l.name), el("td", null, b.class), el("td", { class: "num" }, b.samples),
        el("td", { class: "where" }, b.where || "-"), el("td", null, b.servedBy || "-"), el("td", { class: "err", title: b.message || "" }, b.message || "-"));
      t.append(tr); n++;
    }
    if (n === 0) gaps.append(el("p", { class: "none" }, "no disruption"));
    else gaps.append(el("div", { class: "scroll" }, t));
    gaps.querySelector("h2").append(el("span", { class: "none" }, " " + n + " (click one to zoom the timeline to it)"));
    const leg = $("legend");
    const item = (c, label) => el("span", null, el("i", { style: "background:" + c }), label);
    leg.append(item(OK, "ok"));
    const seen = new Set();
    for (const r of page.runs) for (const l of r.lanes) for (let i = 0; i < l.C.length; i++) if (l.C[i]) seen.add(l.C[i]);
    for (const c of [...seen].sort((a, b) => a - b)) leg.append(item(classColor(c), className(c)));
    for (const ph of ["terminating", "stopped", "starting"]) leg.append(item(PHASE_COLORS[ph], ph));
    leg.append(item(PHASE_COLORS.ready, "ready"));
  }

  // ---------- layout ----------
  const canvas = $("chart");
  const ctx = canvas.getContext("2d");
  const GUTTER = 250, RIGHT = 16, AXIS_H = 26;
  const rows = [];
  const backends = [];
  function layout() {
    rows.length = 0;
    let y = AXIS_H;
    for (const r of page.runs) {
      const top = y;
      if (page.compare) { rows.push({ kind: "run", run: r, y, h: 20 }); y += 20; }
      rows.push({ kind: "stages", run: r, y, h: 20 }); y += 20;
      for (const l of r.lanes) { rows.push({ kind: "lane", run: r, lane: l, y, h: 32 }); y += 32; }
      if (r.nodes.length) { rows.push({ kind: "sep", run: r, y, h: 6, label: "" }); y += 6; }
      for (const n of r.nodes) { rows.push({ kind: "node", run: r, node: n, y, h: 32 }); y += 32; }
      if ((r.metrics || []).length) { rows.push({ kind: "sep", run: r, y, h: 6, label: "" }); y += 6; }
      for (const m of r.metrics || []) { rows.push({ kind: "metric", run: r, metric: m, y, h: 64 }); y += 64; }
      r._top = top; r._bottom = y;
      y += 8;
    }
    rows.push({ kind: "title", y, h: 22, label: "latency (ms, log scale) per backend" }); y += 22;
    for (const r of page.runs) {
      const bs = [];
      for (const l of r.lanes) if (!bs.includes(l.backend)) bs.push(l.backend);
      for (const b of bs) {
        rows.push({ kind: "lat", run: r, backend: b, lanes: r.lanes.filter((l) => l.backend === b), y, h: 110 });
        y += 118;
        if (!backends.includes(b)) backends.push(b);
      }
    }
    return y + 4;
  }

  // ---------- view ----------
  let full = { from: Infinity, to: -Infinity };
  for (const r of page.runs) { full.from = Math.min(full.from, r.from); full.to = Math.max(full.to, r.to); }
  const pad = Math.max(200, (full.to - full.from) * 0.01);
  full = { from: full.from - pad, to: full.to + pad };
  const view = { from: full.from, to: full.to };
  let W = 0, H = 0;
  const plotW = () => W - GUTTER - RIGHT;
  const X = (t) => GUTTER + (t - view.from) / (view.to - view.from) * plotW();
  const T = (x) => view.from + (x - GUTTER) / plotW() * (view.to - view.from);
  const MIN_SPAN = 100;

  function setView(from, to) {
    let span = Math.max(MIN_SPAN, to - from);
    const fullSpan = full.to - full.from;
    if (span > fullSpan) span = fullSpan;
    if (from < full.from) from = full.from;
    if (from + span > full.to) from = full.to - span;
    view.from = from; view.to = from + span;
    schedule();
  }
  function zoomTo(from, to) { setView(from, to); }
  function zoomAt(x, factor) {
    const t = T(x);
    setView(t - (t - view.from) * factor, t + (view.to - t) * factor);
  }

  let pending = false;
  function schedule() { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; draw(); }); } }

  function resize() {
    const dpr = window.devicePixelRatio || 1;
    W = canvas.parentElement.clientWidth || 1200;
    H = layout();
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    canvas.style.height = H + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    draw();
  }

  // Which samples of lane l to draw in the current view: all of them when
  // they fit, else the finest downsampled level coarse enough.
  function visible(l) {
    const msPerPx = (view.to - view.from) / plotW();
    const lo = Math.max(0, lowerBound(l.T, view.from - 2 * msPerPx) - 1);
    const hi = Math.min(l.T.length, lowerBound(l.T, view.to + 2 * msPerPx) + 1);
    if (hi - lo <= plotW() * 1.5 || !l.levels.length) return { idx: null, lo, hi, w: 0 };
    let level = null;
    for (const lv of l.levels) if (lv.bucketMs <= 2 * msPerPx) level = lv;
    if (!level) return { idx: null, lo, hi, w: 0 };
    const I = level.I;
    const a = Math.max(0, lowerBound(I, lo) - 1), b = Math.min(I.length, lowerBound(I, hi) + 1);
    return { idx: I, lo: a, hi: b, w: level.bucketMs / msPerPx };
  }

  // ---------- drawing ----------
  let drawnRecord = null;
  function draw() {
    const drawStart = performance.now();
    ctx.clearRect(0, 0, W, H);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const rec = { lanes: [], bars: [], nodes: [], lat: [], marks: 0, points: 0, clusters: 0 };
    // stage shading behind each run's rows
    for (const r of page.runs) {
      for (const s of r.stages) {
        const x1 = Math.max(GUTTER, X(s.from)), x2 = Math.min(W - RIGHT, X(s.to));
        if (x2 <= x1) continue;
        ctx.fillStyle = STAGE_COLORS[s.name.replace(/ \d+$/, "")] || "rgba(0,0,0,0.05)";
        ctx.fillRect(x1, r._top, x2 - x1, r._bottom - r._top);
      }
    }
    drawAxis();
    for (const row of rows) {
      ctx.save();
      if (row.kind === "run") drawRunHeader(row);
      else if (row.kind === "stages") drawStages(row);
      else if (row.kind === "lane") drawLane(row, rec);
      else if (row.kind === "node") drawNode(row, rec);
      else if (row.kind === "title") { ctx.fillStyle = "#1d232a"; ctx.font = "600 12px system-ui, sans-serif"; ctx.fillText(row.label, 8, row.y + row.h / 2 + 2); }
      else if (row.kind === "lat") drawLatency(row, rec);
      else if (row.kind === "metric") drawMetric(row, rec);
      ctx.restore();
    }
    // trigger and completion lines across each run
    for (const r of page.runs) {
      for (const m of r.marks) {
        const x = X(m.t);
        if (x < GUTTER || x > W - RIGHT) continue;
        ctx.strokeStyle = m.label.startsWith("trigger") ? "rgba(200,40,40,0.75)" : "rgba(40,140,60,0.75)";
        ctx.setLineDash([4, 3]); ctx.beginPath(); ctx.moveTo(x + 0.5, r._top); ctx.lineTo(x + 0.5, r._bottom); ctx.stroke(); ctx.setLineDash([]);
      }
    }
    if (hoverX !== null && hoverX >= GUTTER) {
      ctx.strokeStyle = "rgba(0,0,0,0.25)"; ctx.beginPath(); ctx.moveTo(hoverX + 0.5, AXIS_H); ctx.lineTo(hoverX + 0.5, H); ctx.stroke();
    }
    const span = view.to - view.from;
    $("range").textContent = (page.compare ? rel(view.from) + " … " + rel(view.to) : clock(page.runs[0], view.from, true) + " – " + clock(page.runs[0], view.to, true) + " UTC") + "  (" + fmtMs(span) + " shown)";
    rec.drawMs = performance.now() - drawStart;
    if (!drawnRecord) { drawnRecord = rec; publish(rec); }
    if (hashReady) {
      try { history.replaceState(null, "", "#t=" + Math.round(view.from) + "," + Math.round(view.to)); } catch (e) { /* file: URLs may refuse */ }
    }
  }

  function niceStep(ms) {
    const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 900000, 1800000, 3600000];
    for (const s of steps) if (s >= ms) return s;
    return 7200000;
  }
  function drawAxis() {
    const msPerPx = (view.to - view.from) / plotW();
    const step = niceStep(msPerPx * 95);
    const run = page.runs[0];
    const base = page.compare ? 0 : run.t0;
    const first = Math.ceil((view.from + base) / step) * step - base;
    ctx.fillStyle = "#1d232a"; ctx.textAlign = "center";
    for (let t = first; t <= view.to; t += step) {
      const x = X(t);
      if (x < GUTTER) continue;
      ctx.strokeStyle = "rgba(0,0,0,0.08)"; ctx.beginPath(); ctx.moveTo(x + 0.5, AXIS_H - 4); ctx.lineTo(x + 0.5, H); ctx.stroke();
      let label;
      if (page.compare) label = (t / 1000).toFixed(step < 1000 ? 3 - Math.round(Math.log10(step)) : 0) + " s";
      else label = clock(run, t, step < 1000);
      ctx.fillText(label, x, 12);
    }
    ctx.textAlign = "left"; ctx.fillStyle = "#5b6570";
    ctx.fillText(page.compare ? "time from trigger" : "UTC", 8, 12);
  }
  function gutterLabel(row, text, sub, color) {
    ctx.fillStyle = color || "#1d232a";
    ctx.font = "12px ui-monospace, 'DejaVu Sans Mono', monospace";
    ctx.fillText(text, 8, row.y + (sub ? row.h / 2 - 6 : row.h / 2));
    if (sub) { ctx.font = "10px system-ui, sans-serif"; ctx.fillStyle = "#5b6570"; ctx.fillText(sub, 8, row.y + row.h / 2 + 7); }
    ctx.font = "11px system-ui, sans-serif";
  }
  function clipPlot(row) { ctx.beginPath(); ctx.rect(GUTTER, row.y, plotW(), row.h); ctx.clip(); }
  function drawRunHeader(row) {
    ctx.fillStyle = "#1d232a"; ctx.font = "600 12px system-ui, sans-serif";
    ctx.fillText(row.run.label, 8, row.y + row.h / 2);
  }
  function drawStages(row) {
    gutterLabel(row, "stage", null, "#5b6570");
    clipPlot(row);
    ctx.fillStyle = "#444";
    let end = -Infinity;
    for (const s of row.run.stages) {
      const x1 = Math.max(GUTTER, X(s.from)), x2 = Math.min(W - RIGHT, X(s.to));
      const tw = ctx.measureText(s.name).width;
      if (x2 - x1 < 20 || x1 + 9 < end) continue;
      ctx.fillText(s.name, x1 + 9, row.y + row.h / 2);
      end = x1 + 9 + tw + 6;
    }
    for (const m of row.run.marks) {
      const x = X(m.t);
      if (x < GUTTER - 5 || x > W) continue;
      ctx.fillStyle = m.label.startsWith("trigger") ? "#c62828" : "#2e7d32";
      ctx.beginPath(); ctx.moveTo(x, row.y + row.h - 2); ctx.lineTo(x - 5, row.y + 4); ctx.lineTo(x + 5, row.y + 4); ctx.fill();
    }
  }
  function drawLane(row, rec) {
    const l = row.lane;
    const dis = l.bars.filter((b) => !b.outage);
    const tot = dis.reduce((a, b) => a + b.ms, 0);
    gutterLabel(row, l.name, dis.length ? dis.length + " interval" + (dis.length > 1 ? "s" : "") + ", " + fmtMs(tot) + " disrupted" : "no disruption", dis.length ? "#c62828" : null);
    ctx.strokeStyle = "rgba(0,0,0,0.06)"; ctx.beginPath(); ctx.moveTo(0, row.y + row.h - 0.5); ctx.lineTo(W, row.y + row.h - 0.5); ctx.stroke();
    clipPlot(row);
    const v = visible(l);
    const msPerPx = (view.to - view.from) / plotW();
    const pxPerSample = 100 / msPerPx;
    const y0 = row.y + 9, hh = 14;
    // Successes: one path, touching marks merged into runs (a wide view
    // of a healthy lane is a few rectangles). Failures on top, each drawn.
    const sw = v.idx ? Math.max(1, v.w) : Math.max(1, Math.min(pxPerSample * 0.6, 6));
    ctx.beginPath();
    let runX = NaN, runEnd = NaN;
    for (let k = v.lo; k < v.hi; k++) {
      const i = v.idx ? v.idx[k] : k;
      if (l.C[i] !== 0) continue;
      const x = X(l.T[i]);
      rec.points++;
      if (x <= runEnd + 0.75) { runEnd = Math.max(runEnd, x + sw); continue; }
      if (runX === runX) ctx.rect(runX, y0, runEnd - runX, hh);
      runX = x; runEnd = x + sw;
    }
    if (runX === runX) ctx.rect(runX, y0, runEnd - runX, hh);
    ctx.fillStyle = OK;
    ctx.fill();
    for (let k = v.lo; k < v.hi; k++) {
      const i = v.idx ? v.idx[k] : k;
      const c = l.C[i];
      if (c === 0 && l.D[i] <= 10000) continue;
      const x = X(l.T[i]);
      ctx.fillStyle = classColor(c);
      if (c !== 0) { ctx.fillRect(x, y0, Math.max(sw, 2), hh); rec.points++; }
      const dpx = l.D[i] / 10 / msPerPx;
      if (dpx > 3) ctx.fillRect(x, y0 + hh + 2, dpx, 2);
    }
    // Bars first, then labels on top. Bars closer than 10 px form a
    // cluster labelled with its count and total; a lone bar gets its own
    // length. Zooming in separates clusters into single labelled bars.
    const shown = [];
    for (const b of l.bars) {
      const x1 = X(b.from), x2 = X(b.to);
      if (x2 < GUTTER || x1 > W - RIGHT) continue;
      const w = Math.max(2, x2 - x1);
      ctx.fillStyle = b.outage ? "rgba(120,120,120,0.18)" : "rgba(198,40,40,0.16)";
      ctx.strokeStyle = b.outage ? "#777" : "#c62828";
      ctx.lineWidth = 1.5;
      ctx.fillRect(x1, row.y + 2, w, row.h - 4); ctx.strokeRect(x1, row.y + 2, w, row.h - 4);
      shown.push({ b, x1, x2: x1 + w });
    }
    ctx.font = "bold 11px system-ui, sans-serif";
    let labelEnd = -Infinity;
    for (let a = 0; a < shown.length;) {
      let z = a;
      while (z + 1 < shown.length && shown[z + 1].x1 - shown[z].x2 < 10 && !shown[z + 1].b.outage && !shown[a].b.outage) z++;
      const group = shown.slice(a, z + 1);
      const x1 = group[0].x1, x2 = group[group.length - 1].x2, w = x2 - x1;
      const one = group.length === 1, b0 = group[0].b;
      const total = group.reduce((acc, g) => acc + g.b.ms, 0);
      const label = one ? (b0.outage ? "DNS outage " + barLabel(b0.ms) : barLabel(b0.ms)) : group.length + " gaps, " + barLabel(total);
      const tw = ctx.measureText(label).width;
      const lx = one && tw + 6 < w ? x1 + (w - tw) / 2 : x2 + 4;
      const labelled = lx - 2 > labelEnd;
      if (labelled) {
        ctx.fillStyle = "#ffffff"; ctx.fillRect(lx - 2, row.y + 3, tw + 4, 12);
        ctx.fillStyle = b0.outage ? "#555" : "#b71c1c";
        ctx.fillText(label, lx, row.y + 9);
        labelEnd = lx + tw + 2;
      }
      for (const g of group) {
        rec.bars.push({ lane: l.name, run: row.run.label, ms: g.b.ms, label: g.b.outage ? "DNS outage " + barLabel(g.b.ms) : barLabel(g.b.ms), labelled: labelled && one, outage: !!g.b.outage });
      }
      if (labelled && !one) rec.clusters++;
      a = z + 1;
    }
    ctx.font = "11px system-ui, sans-serif";
    rec.lanes.push({ name: l.name, run: row.run.label, samples: l.T.length, drawn: v.idx ? "level" : "all" });
  }
  function drawNode(row, rec) {
    const n = row.node;
    gutterLabel(row, n.node, null, "#1d232a");
    clipPlot(row);
    const y = row.y + 13, h = row.h - 15;
    ctx.strokeStyle = "rgba(0,0,0,0.06)"; ctx.beginPath(); ctx.moveTo(GUTTER, row.y + 6.5); ctx.lineTo(W, row.y + 6.5); ctx.stroke();
    for (const s of n.spans) {
      const x1 = X(s.from), x2 = X(s.to);
      if (x2 < GUTTER - 10 || x1 > W) continue;
      ctx.fillStyle = PHASE_COLORS[s.phase];
      if (s.phase === "ready") { ctx.fillRect(x1 - 1, y - 2, 3, h + 2); continue; }
      const w = Math.max(2, x2 - x1);
      ctx.globalAlpha = 0.85; ctx.fillRect(x1, y, w, h); ctx.globalAlpha = 1;
      const label = s.phase + " " + fmtMs(s.to - s.from);
      const tw = ctx.measureText(label).width;
      ctx.fillStyle = "#fff";
      if (tw + 6 < w) ctx.fillText(label, x1 + 3, y + h / 2);
      else if (ctx.measureText(s.phase).width + 6 < w) ctx.fillText(s.phase, x1 + 3, y + h / 2);
    }
    for (const e of n.events) {
      const x = X(e.t);
      if (x < GUTTER - 5 || x > W) continue;
      const cy = row.y + 7;
      ctx.fillStyle = e.kind === "cluster-event" ? "#1d232a" : "#ffffff";
      ctx.strokeStyle = "#1d232a"; ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(x, cy - 5); ctx.lineTo(x + 4, cy); ctx.lineTo(x, cy + 5); ctx.lineTo(x - 4, cy); ctx.closePath(); ctx.fill(); ctx.stroke();
      rec.marks++;
    }
    rec.nodes.push({ node: n.node, run: row.run.label, spans: n.spans.map((s) => s.phase).join(","), events: n.events.length });
  }
  // A server-side metric (signals.jsonl): one line per instance, linear
  // from 0 to the highest value of the run.
  const METRIC_COLORS = ["#1f6fb2", "#d9822b", "#2e9d5b", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d"];
  function fmtMetric(v, unit) {
    if (unit === "s") return v < 1 ? (v * 1000).toPrecision(3) + " ms" : v.toPrecision(3) + " s";
    if (unit === "ratio") return (v * 100).toFixed(0) + "%";
    return (v < 10 ? v.toPrecision(2) : v.toFixed(0)) + (unit ? " " + unit : "");
  }
  function drawMetric(row, rec) {
    const m = row.metric;
    if (row.max === undefined) {
      row.max = 0;
      for (const s of m.series) for (const v of s.v) if (v > row.max) row.max = v;
      if (!(row.max > 0)) row.max = 1;
    }
    ctx.fillStyle = "#1d232a"; ctx.font = "11px system-ui, sans-serif";
    ctx.fillText(m.title, 8, row.y + 9);
    let lx = 8;
    m.series.forEach((s, i) => {
      ctx.fillStyle = METRIC_COLORS[i % METRIC_COLORS.length]; ctx.fillRect(lx, row.y + 20, 8, 8);
      ctx.fillStyle = "#5b6570"; ctx.fillText(s.instance, lx + 11, row.y + 24);
      lx += 16 + ctx.measureText(s.instance).width;
      if (lx > GUTTER - 40) lx = 8;
    });
    ctx.textAlign = "right"; ctx.fillStyle = "#5b6570";
    ctx.fillText(fmtMetric(row.max, m.unit), GUTTER - 4, row.y + 40);
    ctx.textAlign = "left";
    ctx.strokeStyle = "#d8dde3"; ctx.strokeRect(GUTTER + 0.5, row.y + 2.5, plotW(), row.h - 5);
    clipPlot(row);
    const base = row.y + row.h - 4, hgt = row.h - 10;
    let n = 0;
    m.series.forEach((s, i) => {
      ctx.strokeStyle = METRIC_COLORS[i % METRIC_COLORS.length]; ctx.fillStyle = ctx.strokeStyle; ctx.lineWidth = 1.25;
      ctx.beginPath();
      for (let k = 0; k < s.t.length; k++) {
        const x = X(s.t[k]), y = base - s.v[k] / row.max * hgt;
        if (k === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
        n++;
      }
      ctx.stroke();
      if (s.t.length === 1) ctx.fillRect(X(s.t[0]) - 2, base - s.v[0] / row.max * hgt - 2, 4, 4);
    });
    (rec.metrics = rec.metrics || []).push({ title: m.title, run: row.run.label, series: m.series.length, points: n });
  }
  function latY(row, ms) {
    const lo = Math.log10(0.5), hi = Math.log10(row.max);
    const v = Math.log10(Math.max(0.5, ms));
    return row.y + row.h - 4 - (v - lo) / (hi - lo) * (row.h - 10);
  }
  function drawLatency(row, rec) {
    if (!row.max) {
      let m = 10;
      for (const l of row.lanes) for (let i = 0; i < l.D.length; i++) if (l.D[i] / 10 > m) m = l.D[i] / 10;
      row.max = Math.pow(10, Math.ceil(Math.log10(m)));
    }
    ctx.fillStyle = "#1d232a"; ctx.font = "12px ui-monospace, 'DejaVu Sans Mono', monospace";
    ctx.fillText(row.backend, 8, row.y + 12);
    ctx.font = "11px system-ui, sans-serif";
    if (page.compare) { ctx.fillStyle = "#5b6570"; ctx.fillText(row.run.label, 8, row.y + 27); }
    let ly = row.y + (page.compare ? 44 : 30);
    for (const l of row.lanes) {
      ctx.fillStyle = CONN_COLORS[l.connection] || "#555"; ctx.fillRect(8, ly - 4, 8, 8);
      ctx.fillStyle = "#5b6570"; ctx.fillText(l.connection + " connections", 20, ly); ly += 14;
    }
    ctx.fillStyle = "#fbfcfd"; ctx.fillRect(GUTTER, row.y, plotW(), row.h);
    ctx.strokeStyle = "#d8dde3"; ctx.strokeRect(GUTTER + 0.5, row.y + 0.5, plotW(), row.h);
    ctx.textAlign = "right"; ctx.fillStyle = "#5b6570";
    for (let v = 1; v <= row.max; v *= 10) {
      const y = latY(row, v);
      ctx.strokeStyle = "rgba(0,0,0,0.07)"; ctx.beginPath(); ctx.moveTo(GUTTER, y + 0.5); ctx.lineTo(W - RIGHT, y + 0.5); ctx.stroke();
      ctx.fillText(v >= 1000 ? v / 1000 + " s" : v + " ms", GUTTER - 4, y);
    }
    ctx.textAlign = "left";
    clipPlot(row);
    for (const r of page.runs) if (r === row.run) for (const b of r.lanes.filter((l) => l.backend === row.backend).flatMap((l) => l.bars)) {
      const x1 = X(b.from), x2 = X(b.to);
      ctx.fillStyle = "rgba(198,40,40,0.10)"; ctx.fillRect(x1, row.y, Math.max(2, x2 - x1), row.h);
    }
    let n = 0;
    const lo = Math.log10(0.5), span = Math.log10(row.max) - lo, base = row.y + row.h - 4, hgt = row.h - 10;
    for (const l of row.lanes) {
      const v = visible(l);
      ctx.beginPath();
      const failed = [];
      for (let k = v.lo; k < v.hi; k++) {
        const i = v.idx ? v.idx[k] : k;
        if (l.C[i] !== 0) { failed.push(i); continue; }
        const y = base - (Math.log10(Math.max(0.5, l.D[i] / 10)) - lo) / span * hgt;
        ctx.rect(X(l.T[i]) - 1, y - 1, 2, 2);
        n++;
      }
      ctx.fillStyle = CONN_COLORS[l.connection] || "#555";
      ctx.fill();
      ctx.lineWidth = 1.5;
      for (const i of failed) {
        const x = X(l.T[i]), y = latY(row, l.D[i] / 10);
        ctx.strokeStyle = classColor(l.C[i]);
        ctx.beginPath(); ctx.moveTo(x - 3, y - 3); ctx.lineTo(x + 3, y + 3); ctx.moveTo(x + 3, y - 3); ctx.lineTo(x - 3, y + 3); ctx.stroke();
        n++;
      }
    }
    rec.lat.push({ backend: row.backend, run: row.run.label, points: n });
  }

  // ---------- the record the browser test reads ----------
  function publish(rec) {
    const d = $("drawn");
    d.dataset.lanes = rec.lanes.length;
    d.dataset.laneNames = rec.lanes.map((l) => (page.compare ? l.run + "/" : "") + l.name).join("|");
    d.dataset.bars = rec.bars.length;
    d.dataset.barLabels = rec.bars.map((b) => (page.compare ? b.run + "/" : "") + b.lane + "=" + b.label).join("|");
    d.dataset.barsLabelled = rec.bars.filter((b) => b.labelled).length;
    d.dataset.clustersLabelled = rec.clusters;
    d.dataset.view = Math.round(view.from) + "," + Math.round(view.to);
    d.dataset.nodeLanes = rec.nodes.length;
    d.dataset.nodeNames = rec.nodes.map((n) => n.node + ":" + n.spans).join("|");
    d.dataset.nodeEvents = rec.marks;
    d.dataset.latencyPlots = rec.lat.length;
    d.dataset.metricLanes = (rec.metrics || []).map((m) => m.title + ":" + m.series + ":" + m.points).join("|");
    d.dataset.points = rec.points;
    d.dataset.decodeMs = Math.round(decoded - started);
    d.dataset.drawMs = rec.drawMs.toFixed(1);
    d.dataset.loadMs = Math.round(performance.now() - started);
    d.dataset.sinceNavigationMs = Math.round(performance.now());
    d.dataset.ready = "1";
    console.log("repro-report: drawn " + JSON.stringify({ decodeMs: +d.dataset.decodeMs, loadMs: +d.dataset.loadMs, sinceNavigationMs: +d.dataset.sinceNavigationMs, drawMs: +d.dataset.drawMs, points: rec.points }));
    status.textContent = page.runs.reduce((a, r) => a + r.lanes.reduce((b, l) => b + l.T.length, 0), 0).toLocaleString("en") + " samples, drawn in " + d.dataset.loadMs + " ms";
  }

  // ---------- hover ----------
  const tip = $("tip");
  let hoverX = null;
  function rowAt(y) { for (const r of rows) if (y >= r.y && y < r.y + r.h) return r; return null; }
  function nearestSample(l, x, maxPx, failedFirst) {
    const v = visible(l);
    const t = T(x);
    const j = lowerBound(l.T, t);
    let best = -1, bestD = Infinity;
    const consider = (i) => {
      if (i < 0 || i >= l.T.length) return;
      const d = Math.abs(X(l.T[i]) - x) - (failedFirst && l.C[i] ? 2 : 0);
      if (d < bestD) { bestD = d; best = i; }
    };
    if (v.idx) {
      const k = lowerBound(v.idx, j);
      for (let q = Math.max(0, k - 3); q < Math.min(v.idx.length, k + 3); q++) consider(v.idx[q]);
    } else for (let i = j - 3; i <= j + 3; i++) consider(i);
    return bestD <= maxPx ? best : -1;
  }
  function sampleTip(run, l, i) {
    const d = l.D[i] / 10;
    const ph = [["DNS", l.dns[i]], ["connect", l.conn[i]], ["TLS", l.tls[i]], ["first byte", l.fb[i]]];
    const c = l.C[i];
    let h = "<b>" + esc(l.name) + "</b> seq " + l.Seq[i] + (page.compare ? " · " + esc(run.label) : "") + "<br>";
    h += "<span class=k>start</span>" + esc(when(run, l.T[i])) + "<br>";
    h += "<span class=k>result</span><b style='color:" + classColor(c) + "'>" + esc(className(c)) + "</b>";
    const s = l.s[i];
    h += " · status " + (s === 0 ? "200" : s < 0 ? "none" : s) + " · " + fmtMs(d) + (l.r[i] ? " · reused connection" : " · new connection") + "<br>";
    h += "<div class=wf>";
    let prev = 0;
    const cols = ["#b0bec5", "#ffb74d", "#9575cd", "#64b5f6"];
    ph.forEach(([, v], k) => {
      if (!v) return;
      const a = prev / 10 / d * 100, b = v / 10 / d * 100;
      h += "<span style='left:" + a.toFixed(1) + "%;width:" + Math.max(0.5, b - a).toFixed(1) + "%;background:" + cols[k] + "'></span>";
      prev = v;
    });
    h += "</div><table>";
    for (const [name, v] of ph) h += "<tr><td class=k>" + name + "</td><td>" + (v ? "at " + fmtMs(v / 10) : "<span class=none>not reached</span>") + "</td></tr>";
    h += "<tr><td class=k>total</td><td>" + fmtMs(d) + "</td></tr>";
    if (l.n[i] > 0) h += "<tr><td class=k>served by</td><td><b>" + esc(run.servers[l.n[i] - 1]) + "</b></td></tr>";
    const a = l.audit[i];
    h += "<tr><td class=k>audit ID</td><td class=mono>" + (a ? esc(a) : "<span class=none>not embedded (large run): seq " + l.Seq[i] + " in samples.jsonl</span>") + "</td></tr>";
    if (l.err[i] !== undefined) h += "<tr><td class=k>error</td><td class=err>" + esc(run.errors[l.err[i]]) + "</td></tr>";
    if (l.verdict && l.verdict[i]) h += "<tr><td class=k>where it went</td><td>" + esc(l.verdict[i]) + "</td></tr>";
    h += "</table>";
    return h;
  }
  function barTip(run, l, b) {
    let h = "<b>" + (b.outage ? "sampler outage (DNS), not disruption" : "disruption " + barLabel(b.ms)) + "</b> · " + esc(l.name) + "<br>";
    h += "<span class=k>from</span>" + esc(when(run, b.from)) + "<br><span class=k>to</span>" + esc(when(run, b.to)) + (b.open ? " (still open at the end)" : "") + "<br>";
    h += "<span class=k>class</span>" + esc(b.class) + " · " + b.samples + " failed samples<br>";
    if (b.where) h += "<span class=k>where</span>" + esc(b.where) + "<br>";
    if (b.servedBy) h += "<span class=k>served by</span>" + esc(b.servedBy) + "<br>";
    if (b.message) h += "<span class=err>" + esc(b.message) + "</span><br>";
    if (b.auditId) h += "<span class=k>first audit ID</span>" + esc(b.auditId);
    return h;
  }
  function hover(ev) {
    const rect = canvas.getBoundingClientRect();
    const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
    hoverX = x;
    schedule();
    const row = rowAt(y);
    let html = null;
    if (row && x >= GUTTER && x <= W - RIGHT) {
      const t = T(x);
      if (row.kind === "lane") {
        const l = row.lane;
        const i = nearestSample(l, x, 6, true);
        const bar = l.bars.find((b) => X(b.from) - 2 <= x && x <= Math.max(X(b.to), X(b.from) + 2) + 2);
        const parts = [];
        if (i >= 0) parts.push(sampleTip(row.run, l, i));
        if (bar) parts.push(barTip(row.run, l, bar));
        if (parts.length) html = parts.join("<hr>");
      } else if (row.kind === "lat") {
        let best = null;
        for (const l of row.lanes) {
          const i = nearestSample(l, x, 6, true);
          if (i < 0) continue;
          const dy = Math.abs(latY(row, l.D[i] / 10) - y);
          if (dy < 10 && (!best || dy < best.dy)) best = { l, i, dy };
        }
        if (best) html = sampleTip(row.run, best.l, best.i);
      } else if (row.kind === "node") {
        const n = row.node;
        let ev2 = null, bd = 6;
        for (const e of n.events) { const d = Math.abs(X(e.t) - x); if (d <= bd) { bd = d; ev2 = e; } }
        const spans = n.spans.filter((s) => s.phase !== "ready" ? X(s.from) <= x && x <= Math.max(X(s.to), X(s.from) + 2) : Math.abs(X(s.from) - x) < 4);
        const parts = [];
        if (ev2) parts.push("<b>" + esc(ev2.label) + "</b> · " + esc(n.node) + "<br><span class=k>at</span>" + esc(when(row.run, ev2.t)) + (ev2.message ? "<br>" + esc(ev2.message) : ""));
        for (const s of spans) parts.push("<b>" + esc(n.node) + " " + s.phase + "</b>" + (s.phase === "ready" ? " (revision " + s.revision + ")" : " for " + fmtMs(s.to - s.from)) + " · iteration " + s.iteration + "<br><span class=k>from</span>" + esc(when(row.run, s.from)) + (s.phase !== "ready" ? "<br><span class=k>to</span>" + esc(when(row.run, s.to)) : ""));
        if (parts.length) html = parts.join("<hr>");
      } else if (row.kind === "stages") {
        const s = row.run.stages.find((s) => s.from <= t && t < s.to);
        const m = row.run.marks.find((m) => Math.abs(X(m.t) - x) < 6);
        if (m) html = "<b>" + esc(m.label) + "</b><br>" + esc(when(row.run, m.t));
        else if (s) html = "<b>" + esc(s.name) + "</b> " + fmtMs(s.to - s.from) + "<br>" + esc(when(row.run, s.from)) + " → " + esc(when(row.run, s.to));
      }
    }
    if (!html) { tip.hidden = true; return; }
    tip.innerHTML = html;
    tip.hidden = false;
    const tw = tip.offsetWidth, th = tip.offsetHeight;
    let left = ev.clientX + 14, top = ev.clientY + 14;
    if (left + tw > window.innerWidth - 4) left = ev.clientX - tw - 14;
    if (top + th > window.innerHeight - 4) top = Math.max(4, ev.clientY - th - 14);
    tip.style.left = left + "px"; tip.style.top = top + "px";
  }

  // ---------- interaction ----------
  let drag = null;
  canvas.addEventListener("mousemove", (ev) => {
    if (drag) {
      const dx = ev.clientX - drag.x;
      const span = drag.to - drag.from;
      setView(drag.from - dx / plotW() * span, drag.to - dx / plotW() * span);
      tip.hidden = true;
      return;
    }
    hover(ev);
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; hoverX = null; schedule(); });
  canvas.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, from: view.from, to: view.to }; canvas.classList.add("dragging"); });
  window.addEventListener("mouseup", () => { drag = null; canvas.classList.remove("dragging"); });
  canvas.addEventListener("dblclick", () => setView(full.from, full.to));
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const rect = canvas.getBoundingClientRect();
    const x = Math.max(GUTTER, ev.clientX - rect.left);
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      const span = view.to - view.from;
      const d = (ev.deltaX || ev.deltaY) / plotW() * span;
      setView(view.from + d, view.to + d);
    } else zoomAt(x, Math.pow(1.0015, ev.deltaY));
  }, { passive: false });
  const center = () => GUTTER + plotW() / 2;
  const pan = (f) => { const s = view.to - view.from; setView(view.from + f * s, view.to + f * s); };
  $("fit").onclick = () => setView(full.from, full.to);
  $("zin").onclick = () => zoomAt(center(), 0.5);
  $("zout").onclick = () => zoomAt(center(), 2);
  $("left").onclick = () => pan(-0.3);
  $("right").onclick = () => pan(0.3);
  const allBars = page.runs.flatMap((r) => r.lanes.flatMap((l) => l.bars)).filter((b) => !b.outage).sort((a, b) => a.from - b.from);
  function gotoGap(dir) {
    if (!allBars.length) return;
    const mid = (view.from + view.to) / 2;
    let b = dir > 0 ? allBars.find((b) => (b.from + b.to) / 2 > mid + 1) : [...allBars].reverse().find((b) => (b.from + b.to) / 2 < mid - 1);
    if (!b) b = dir > 0 ? allBars[0] : allBars[allBars.length - 1];
    const padMs = Math.max(1500, b.ms);
    setView(b.from - padMs, b.to + padMs);
  }
  $("prevgap").onclick = () => gotoGap(-1);
  $("nextgap").onclick = () => gotoGap(1);
  window.addEventListener("keydown", (ev) => {
    if (ev.target && (ev.target.tagName === "INPUT" || ev.target.tagName === "TEXTAREA")) return;
    if (ev.key === "+" || ev.key === "=") zoomAt(center(), 0.5);
    else if (ev.key === "-") zoomAt(center(), 2);
    else if (ev.key === "ArrowLeft") pan(-0.2);
    else if (ev.key === "ArrowRight") pan(0.2);
    else if (ev.key === "0") setView(full.from, full.to);
  });
  window.addEventListener("resize", resize);

  // A sample can be linked: report.html#sample=LANE:SEQ zooms to it and
  // pins its details (LANE is RUN/NAME on a comparison).
  function showSample(spec) {
    const k = spec.lastIndexOf(":");
    const name = spec.slice(0, k), seq = +spec.slice(k + 1);
    for (const r of page.runs) for (const l of r.lanes) {
      if ((page.compare ? r.label + "/" : "") + l.name !== name) continue;
      const i = lowerBound(l.Seq, seq);
      if (i >= l.Seq.length || l.Seq[i] !== seq) return;
      setView(l.T[i] - 1000, l.T[i] + 1000);
      draw();
      const row = rows.find((rw) => rw.lane === l);
      const rect = canvas.getBoundingClientRect();
      tip.innerHTML = sampleTip(r, l, i);
      tip.hidden = false;
      tip.style.left = Math.min(window.innerWidth - tip.offsetWidth - 4, rect.left + X(l.T[i]) + 14) + "px";
      tip.style.top = Math.max(4, rect.top + row.y + row.h) + "px";
      $("drawn").dataset.tip = tip.textContent;
      return;
    }
  }
  // A view can be linked: report.html#t=FROM,TO (ms from the run's zero).
  let hashReady = false;
  const hm = /^#t=(-?[\d.]+),(-?[\d.]+)(&bench)?$/.exec(location.hash);
  if (hm) { view.from = +hm[1]; view.to = +hm[2]; }
  buildTables();
  resize();
  if (hm) setView(+hm[1], +hm[2]);
  const sm = /^#sample=(.+:\d+)$/.exec(decodeURIComponent(location.hash));
  if (sm) showSample(sm[1]);
  else hashReady = true;
  // #t=FROM,TO&bench: time redraws of that view (for the page's figures).
  if (hm && hm[3]) {
    const n = 10, t1 = performance.now();
    for (let k = 0; k < n; k++) draw();
    const ms = (performance.now() - t1) / n;
    $("drawn").dataset.redrawMs = ms.toFixed(1);
    console.log("repro-report: redraw " + JSON.stringify({ redrawMs: ms }));
  }
})();
