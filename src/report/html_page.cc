// The HTML report's own stylesheet and script, compiled into the binary so the page needs no
// network: plain <canvas> drawing, no chart library. The script reads the JSON embedded by
// RenderHtml (#ww-data), draws swimlanes / power / utilization on one shared time axis, and
// reduces per pixel (dominant state, min/max envelope) on every redraw, so zoom and pan cost
// O(lanes x buckets) whatever the log size. When the first draw is done it sets
// <body data-rendered="ok">, which the browser test reads back from the DOM.
#include "report/html_report.h"

namespace ww::report {

const char* HtmlPageStyle() {
  return R"CSS(
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:16px 20px;color:#202124;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}
.inputs{color:#5f6368;margin:0;font-size:12px}.headline{margin:4px 0 8px}.bad{color:#c62828}
.toolbar{margin:6px 0}.toolbar button{margin-right:4px}.hint{color:#5f6368;font-size:12px}
#range{margin-left:12px;font-family:ui-monospace,monospace;font-size:12px}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px}
.s0{background:#9aa0a6}.s1{background:#2e7d32}.s2{background:#1e88e5}.s3{background:#f9a825}.s4{background:#8e24aa}.s5{background:#d32f2f}
canvas{display:block;cursor:crosshair}#charts{user-select:none}
.gpuhead{margin:8px 0 2px}#gpuinfo{color:#5f6368;font-size:12px}
.tip{position:fixed;display:none;pointer-events:none;background:#202124;color:#fff;padding:6px 8px;border-radius:4px;font-size:12px;max-width:520px;white-space:pre-wrap;z-index:10}
table.summary{border-collapse:collapse;font-size:12px}table.summary td,table.summary th{border-bottom:1px solid #e0e0e0;padding:3px 8px;text-align:right}
table.summary td:first-child,table.summary th:first-child,table.summary td:nth-child(2){text-align:left}
tr.total td{font-weight:600;border-top:2px solid #9e9e9e}.episodes li{margin-bottom:6px}.notes{color:#5f6368}
)CSS";
}

const char* HtmlPageScript() {
  return R"JS(
(function () {
  'use strict';
  var body = document.body;
  window.addEventListener('error', function (e) { body.setAttribute('data-error', String(e.message)); });
  var D = JSON.parse(document.getElementById('ww-data').textContent);
  var COLORS = ['#9aa0a6', '#2e7d32', '#1e88e5', '#f9a825', '#8e24aa', '#d32f2f'];
  var HANG = 5, NODATA = '#eceff1';
  var L = D.lanes, N = D.n, B = D.bucket_ms, T0 = D.t0;
  var T1 = T0 + Math.max(1, N) * B;
  var view = { a: T0, b: T1 };
  // Start on the first hang's culprit: its power curve is the evidence an operator wants first.
  var sel = D.hangs.length && D.hangs[0].culprits.length ? D.hangs[0].culprits[0] : 0;
  // A link can name a view: report.html#from=MS&to=MS&gpu=LABEL (ms since the epoch).
  (location.hash || '').replace(/^#/, '').split('&').forEach(function (kv) {
    var p = kv.split('='), v = decodeURIComponent(p[1] || '');
    if (p[0] === 'from' && isFinite(Number(v))) view.a = Number(v);
    if (p[0] === 'to' && isFinite(Number(v))) view.b = Number(v);
    if (p[0] === 'gpu') L.forEach(function (l, i) { if (l.label === v) sel = i; });
  });
  if (!(view.b > view.a)) { view.a = T0; view.b = T1; }
  var LABEL_W = 130, RIGHT_W = 110, MARK_ROW = 14, AXIS_H = 20;
  var LANE_H = Math.max(6, Math.min(22, Math.floor(420 / Math.max(1, L.length))));
  var cl = document.getElementById('lanes'), cp = document.getElementById('power'),
      cu = document.getElementById('util'), tip = document.getElementById('tip');
  var W = 800;

  function pad2(n) { return (n < 10 ? '0' : '') + n; }
  function iso(ms) {
    var s = new Date(ms).toISOString();
    return D.with_zone ? s : s.slice(0, -1);
  }
  function dur(ms) {
    var s = ms / 1000;
    if (s < 60) return s.toFixed(1) + ' s';
    var t = Math.round(s);
    if (t < 3600) return Math.floor(t / 60) + 'm' + pad2(t % 60) + 's';
    return Math.floor(t / 3600) + 'h' + pad2(Math.floor(t / 60) % 60) + 'm' + pad2(t % 60) + 's';
  }
  function plotW() { return Math.max(50, W - LABEL_W - RIGHT_W); }
  function xOf(t) { return LABEL_W + (t - view.a) / (view.b - view.a) * plotW(); }
  function tOf(x) { return view.a + (x - LABEL_W) / plotW() * (view.b - view.a); }
  // Buckets [b0, b1) under pixel column px of the plot.
  function bucketsAt(px) {
    var span = view.b - view.a, pw = plotW();
    var ta = view.a + px * span / pw, tb = view.a + (px + 1) * span / pw;
    var b0 = Math.floor((ta - T0) / B), b1 = Math.ceil((tb - T0) / B);
    if (b1 <= b0) b1 = b0 + 1;
    return [Math.max(0, b0), Math.min(N, b1)];
  }
  function dominant(s, b0, b1) {
    var c = [0, 0, 0, 0, 0, 0], best = -1, bn = 0;
    for (var i = b0; i < b1; i++) {
      var k = s.charCodeAt(i) - 48;
      if (k >= 0 && k < 6) c[k]++;
    }
    for (var k2 = 0; k2 < 6; k2++) {
      if (c[k2] > bn || (c[k2] > 0 && c[k2] === bn && k2 === HANG)) { best = k2; bn = c[k2]; }
    }
    return best;
  }
  function envelope(lo, hi, b0, b1) {
    var mn = Infinity, mx = -Infinity;
    for (var i = b0; i < b1; i++) {
      if (hi[i] < 0) continue;
      if (lo[i] < mn) mn = lo[i];
      if (hi[i] > mx) mx = hi[i];
    }
    return mx >= mn ? [mn, mx] : null;
  }
  function setup(c, h) {
    var r = window.devicePixelRatio || 1;
    c.width = Math.round(W * r); c.height = Math.round(h * r);
    c.style.width = W + 'px'; c.style.height = h + 'px';
    var g = c.getContext('2d');
    g.setTransform(r, 0, 0, r, 0, 0);
    g.clearRect(0, 0, W, h);
    g.font = '11px system-ui,sans-serif';
    return g;
  }
  var STEPS = [100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5,
               36e5, 72e5, 108e5, 216e5, 432e5, 864e5];
  function axis(g, y, h, grid, gridH) {
    var span = view.b - view.a, want = span / Math.max(2, plotW() / 110), step = STEPS[STEPS.length - 1];
    for (var i = 0; i < STEPS.length; i++) { if (STEPS[i] >= want) { step = STEPS[i]; break; } }
    g.fillStyle = '#5f6368'; g.strokeStyle = '#dadce0'; g.lineWidth = 1;
    g.textBaseline = 'middle'; g.textAlign = 'center';
    for (var t = Math.ceil(view.a / step) * step; t <= view.b; t += step) {
      var x = Math.round(xOf(t)) + 0.5, s = iso(t);
      g.fillText(step < 1000 ? s.slice(11, 23) : s.slice(11, 19), x, y + h / 2);
      if (grid) { g.beginPath(); g.moveTo(x, y + h); g.lineTo(x, y + h + gridH); g.stroke(); }
    }
    g.textAlign = 'left';
  }
  function lanesTop() { return 2 * MARK_ROW + AXIS_H + 4; }
  function drawLanes() {
    var top = lanesTop(), h = top + L.length * LANE_H + 4, pw = plotW();
    var g = setup(cl, h);
    axis(g, 2 * MARK_ROW, AXIS_H, false, 0);
    g.textBaseline = 'middle';
    for (var li = 0; li < L.length; li++) {
      var y = top + li * LANE_H, lane = L[li];
      g.fillStyle = NODATA; g.fillRect(LABEL_W, y, pw, LANE_H - 1);
      var runStart = 0, runState = -2;
      for (var px = 0; px <= pw; px++) {
        var st = -2;
        if (px < pw) { var r = bucketsAt(px); st = r[1] > r[0] ? dominant(lane.s, r[0], r[1]) : -1; }
        if (st !== runState) {
          if (runState >= 0) { g.fillStyle = COLORS[runState]; g.fillRect(LABEL_W + runStart, y, px - runStart, LANE_H - 1); }
          runStart = px; runState = st;
        }
      }
      g.fillStyle = li === sel ? '#1a73e8' : '#202124';
      g.font = (li === sel ? 'bold ' : '') + Math.min(12, LANE_H) + 'px system-ui,sans-serif';
      g.fillText(lane.label, 4, y + LANE_H / 2);
    }
    g.font = '11px system-ui,sans-serif';
    g.fillStyle = '#5f6368'; g.fillText('hangs', 4, MARK_ROW / 2); g.fillText('checkpoints', 4, MARK_ROW * 1.5);
    D.hangs.forEach(function (e) {
      var x0 = Math.max(LABEL_W, xOf(e.start)), x1 = Math.min(LABEL_W + pw, xOf(e.end));
      if (x1 < LABEL_W || x0 > LABEL_W + pw) return;
      var w = Math.max(2, x1 - x0);
      g.fillStyle = COLORS[HANG]; g.fillRect(x0, 1, w, MARK_ROW - 2);
      g.fillStyle = '#fff'; if (w > 40) g.fillText('hang', x0 + 3, MARK_ROW / 2);
      g.strokeStyle = '#b71c1c'; g.lineWidth = 1.5;
      e.gpus.forEach(function (li) { g.strokeRect(x0, top + li * LANE_H + 0.5, w, LANE_H - 2); });
      g.fillStyle = '#000';
      e.culprits.forEach(function (li) {
        var y = top + li * LANE_H;
        g.beginPath(); g.moveTo(x0, y); g.lineTo(x0 + LANE_H * 0.8, y + LANE_H / 2 - 0.5); g.lineTo(x0, y + LANE_H - 1); g.fill();
      });
      var xd = xOf(e.detected);
      if (xd >= LABEL_W && xd <= LABEL_W + pw) {
        g.strokeStyle = '#000'; g.setLineDash([3, 3]); g.beginPath();
        g.moveTo(Math.round(xd) + 0.5, 0); g.lineTo(Math.round(xd) + 0.5, h); g.stroke(); g.setLineDash([]);
      }
    });
    D.checkpoints.forEach(function (c) {
      var x0 = Math.max(LABEL_W, xOf(c.start)), x1 = Math.min(LABEL_W + pw, xOf(c.end));
      if (x1 < LABEL_W || x0 > LABEL_W + pw) return;
      g.fillStyle = COLORS[4]; g.fillRect(x0, MARK_ROW + 1, Math.max(2, x1 - x0), MARK_ROW - 2);
    });
  }
  function drawSeries(c, h, lo, hi, ymax, color, unit, levels) {
    var g = setup(c, h), pw = plotW(), top = 6, bottom = h - AXIS_H, ph = bottom - top;
    var lane = L[sel];
    function yOf(v) { return bottom - v / ymax * ph; }
    g.fillStyle = '#fafafa'; g.fillRect(LABEL_W, top, pw, ph);
    D.hangs.forEach(function (e) {
      if (e.gpus.indexOf(sel) < 0) return;
      var x0 = Math.max(LABEL_W, xOf(e.start)), x1 = Math.min(LABEL_W + pw, xOf(e.end));
      if (x1 > x0) { g.fillStyle = 'rgba(211,47,47,0.10)'; g.fillRect(x0, top, x1 - x0, ph); }
    });
    g.strokeStyle = '#e0e0e0'; g.fillStyle = '#5f6368'; g.textBaseline = 'middle'; g.textAlign = 'right';
    for (var k = 0; k <= 4; k++) {
      var v = ymax * k / 4, y = Math.round(yOf(v)) + 0.5;
      g.beginPath(); g.moveTo(LABEL_W, y); g.lineTo(LABEL_W + pw, y); g.stroke();
      g.fillText(Math.round(v) + ' ' + unit, LABEL_W - 6, y);
    }
    g.textAlign = 'left';
    g.fillStyle = color;
    for (var px = 0; px < pw; px++) {
      var r = bucketsAt(px);
      if (r[1] <= r[0]) continue;
      var e = envelope(lane[lo], lane[hi], r[0], r[1]);
      if (!e) continue;
      var y0 = yOf(e[1]), y1 = yOf(e[0]);
      g.fillRect(LABEL_W + px, y0, 1, Math.max(1.5, y1 - y0));
    }
    levels.forEach(function (lv) {
      if (!(lv.v > 0) || lv.v > ymax) return;
      var y = Math.round(yOf(lv.v)) + 0.5;
      g.strokeStyle = lv.c; g.setLineDash(lv.dash); g.lineWidth = 1.2;
      g.beginPath(); g.moveTo(LABEL_W, y); g.lineTo(LABEL_W + pw, y); g.stroke(); g.setLineDash([]);
      g.fillStyle = lv.c; g.fillText(lv.t + ' ' + Math.round(lv.v) + ' ' + unit, LABEL_W + pw + 4, y);
    });
    g.lineWidth = 1;
    axis(g, bottom, AXIS_H, false, 0);
  }
  function drawCharts() {
    var lane = L[sel];
    if (!lane) return;
    var pmax = 0;
    for (var i = 0; i < N; i++) if (lane.pmax[i] > pmax) pmax = lane.pmax[i];
    var ymax = Math.max(pmax, lane.limit_w, 1) * 1.08;
    var lv = lane.levels;
    drawSeries(cp, 200, 'pmin', 'pmax', ymax, '#1565c0', 'W', [
      { t: 'limit', v: lane.limit_w, c: '#c62828', dash: [] },
      { t: 'compute', v: lv.compute_w, c: COLORS[1], dash: [6, 3] },
      { t: 'comm', v: lv.comm_w, c: COLORS[2], dash: [6, 3] },
      { t: 'spin \u2264', v: lv.spin_max_w, c: '#e65100', dash: [2, 3] },
      { t: 'idle', v: lv.idle_w, c: '#616161', dash: [2, 3] }]);
    drawSeries(cu, 130, 'umin', 'umax', 100, '#00897b', '%', []);
    document.getElementById('gpuinfo').textContent =
        (lane.name || 'unknown model') + ' \u00b7 calibration: ' + lane.calibration +
        ' \u00b7 power: min/max envelope per pixel, calibrated levels dashed';
  }
  function drawAll() {
    W = Math.max(600, (document.documentElement.clientWidth || 1200) - 40);
    drawLanes(); drawCharts();
    document.getElementById('range').textContent = iso(view.a) + ' \u2192 ' + iso(view.b) + ' (' + dur(view.b - view.a) + ')';
  }
  var pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; drawAll(); });
  }
  function zoom(f, center) {
    var span = Math.max(B * 8, Math.min((T1 - T0) * 1.5, (view.b - view.a) * f));
    var c = center === undefined ? (view.a + view.b) / 2 : center;
    var frac = (c - view.a) / (view.b - view.a);
    view.a = c - frac * span; view.b = view.a + span;
    clamp(); redraw();
  }
  function clamp() {
    var span = view.b - view.a, slack = span * 0.25;
    if (view.a < T0 - slack) { view.a = T0 - slack; view.b = view.a + span; }
    if (view.b > T1 + slack) { view.b = T1 + slack; view.a = view.b - span; }
  }
  var drag = null;
  function localX(ev, c) { return ev.clientX - c.getBoundingClientRect().left; }
  function localY(ev, c) { return ev.clientY - c.getBoundingClientRect().top; }
  [cl, cp, cu].forEach(function (c) {
    c.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      zoom(ev.deltaY > 0 ? 1.25 : 0.8, tOf(localX(ev, c)));
    }, { passive: false });
    c.addEventListener('mousedown', function (ev) { drag = { x: ev.clientX, a: view.a, b: view.b, moved: false, c: c, ev: ev }; });
    c.addEventListener('mousemove', function (ev) { hover(ev, c); });
    c.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  });
  window.addEventListener('mousemove', function (ev) {
    if (!drag) return;
    var dx = ev.clientX - drag.x;
    if (Math.abs(dx) > 2) drag.moved = true;
    var dt = dx / plotW() * (drag.b - drag.a);
    view.a = drag.a - dt; view.b = drag.b - dt; clamp(); redraw();
  });
  window.addEventListener('mouseup', function (ev) {
    if (drag && !drag.moved && drag.c === cl) {
      var li = Math.floor((localY(ev, cl) - lanesTop()) / LANE_H);
      if (li >= 0 && li < L.length) { sel = li; document.getElementById('gpusel').value = String(li); redraw(); }
    }
    drag = null;
  });
  window.addEventListener('resize', redraw);
  document.getElementById('zin').onclick = function () { zoom(0.5); };
  document.getElementById('zout').onclick = function () { zoom(2); };
  document.getElementById('zreset').onclick = function () { view.a = T0; view.b = T1; redraw(); };
  var gs = document.getElementById('gpusel');
  L.forEach(function (l, i) { var o = document.createElement('option'); o.value = String(i); o.textContent = l.label; gs.appendChild(o); });
  gs.value = String(sel);
  gs.onchange = function () { sel = Number(gs.value); redraw(); };
  var lg = document.getElementById('legend');
  D.states.forEach(function (s, i) {
    var e = document.createElement('span');
    e.innerHTML = '<span class="sw s' + i + '"></span>';
    e.appendChild(document.createTextNode(s));
    lg.appendChild(e);
  });
  function episodeText(e) {
    var names = function (a) { return a.map(function (i) { return L[i] ? L[i].label : '?'; }).join(', '); };
    return 'HANG ' + iso(e.start) + ' \u2192 ' + iso(e.end) + (e.ongoing ? ' (still stuck at end of log)' : '') +
        '\n' + dur(e.end - e.start) + ', ' + e.gpus.length + ' GPUs, ' + e.wasted_gpu_h.toFixed(2) + ' GPU-hours wasted' +
        '\ndetected at ' + iso(e.detected) + '\nculprit: ' + (e.culprits.length ? names(e.culprits) : 'undetermined') +
        (e.reasons.length ? '\n\u2022 ' + e.reasons.join('\n\u2022 ') : '');
  }
  function checkpointText(c) {
    return 'CHECKPOINT ' + iso(c.start) + ' \u2192 ' + iso(c.end) + ' (' + dur(c.end - c.start) + ')\n' +
        (c.all_ranks ? 'every rank saving' : 'peers waited on ' + c.writers.map(function (i) { return L[i] ? L[i].label : '?'; }).join(', '));
  }
  function hover(ev, c) {
    var x = localX(ev, c), y = localY(ev, c), t = tOf(x), text = '';
    if (x >= LABEL_W && x <= LABEL_W + plotW()) {
      var px = Math.floor(x - LABEL_W), r = bucketsAt(px);
      if (c === cl) {
        var tol = (view.b - view.a) / plotW() * 3;
        if (y < MARK_ROW) {
          D.hangs.forEach(function (e) { if (t >= e.start - tol && t <= e.end + tol) text = episodeText(e); });
        } else if (y < 2 * MARK_ROW) {
          D.checkpoints.forEach(function (k) { if (t >= k.start - tol && t <= k.end + tol) text = checkpointText(k); });
        } else {
          var li = Math.floor((y - lanesTop()) / LANE_H);
          if (li >= 0 && li < L.length) {
            var st = r[1] > r[0] ? dominant(L[li].s, r[0], r[1]) : -1;
            text = L[li].label + ' @ ' + iso(t) + '\nstate: ' + (st >= 0 ? D.states[st] : 'no data');
            D.hangs.forEach(function (e) {
              if (t >= e.start && t <= e.end && e.gpus.indexOf(li) >= 0) {
                text += (e.culprits.indexOf(li) >= 0 ? '\nCULPRIT of this hang' : '') + '\n\n' + episodeText(e);
              }
            });
          }
        }
      } else {
        var lane = L[sel], p = envelope(lane.pmin, lane.pmax, r[0], r[1]), u = envelope(lane.umin, lane.umax, r[0], r[1]);
        text = lane.label + ' @ ' + iso(t) + '\npower: ' + (p ? p[0] + '\u2013' + p[1] + ' W' : 'n/a') +
            '\nutilization: ' + (u ? u[0] + '\u2013' + u[1] + ' %' : 'n/a');
      }
    }
    if (!text) { tip.style.display = 'none'; return; }
    tip.textContent = text; tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 540) + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
  }
  drawAll();
  body.setAttribute('data-lanes', String(L.length));
  body.setAttribute('data-rendered', 'ok');
})();
)JS";
}

}  // namespace ww::report
