'use strict';
var D = JSON.parse(document.getElementById('data').textContent);
var DIFF = D.kind == 'diff';
var NS = 'http://www.w3.org/2000/svg';
var W = 1180, PAD = 10, FH = 16, LIMIT = 1000, PAGE = 50, shown = PAGE;

function $(id) { return document.getElementById(id); }
function make(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function svg(tag, at) {
  var e = document.createElementNS(NS, tag), k;
  for (k in at) e.setAttribute(k, at[k]);
  return e;
}
function num(n) { return n == null ? '' : Math.round(n).toLocaleString('en-US'); }
function signed(n) { return n > 0 ? '+' + num(n) : n < 0 ? '-' + num(-n) : '0'; }
function human(n) {
  var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0, neg = n < 0;
  n = Math.abs(n);
  while (n >= 1023.995 && i < 4) { n /= 1024; i++; }
  return (neg ? '-' : '') + (i ? n.toFixed(2) : n) + ' ' + u[i];
}
function dur(ns) {
  return ns < 1e9 ? (ns / 1e6).toFixed(3) + ' ms' : (ns / 1e9).toFixed(3) + ' s';
}
function pct(a, b) { return b ? (100 * a / b).toFixed(1) + '%' : '0.0%'; }

/* -- Summary -------------------------------------------------------------- */

function summary() {
  var s = D.summary, t = $('summary'), rows = [];
  function row(k, v) { rows.push([k, v]); }
  if (DIFF) {
    row('Changed sources', num(s.changed) + ' (' + num(s.unchanged) + ' unchanged)');
    [0, 1].forEach(function (i) {
      if (!s.complete[i]) row(i ? 'New' : 'Base', 'cut short or damaged: compared up to the cut');
    });
    [['Base', s.base], ['New', s.new]].forEach(function (x) {
      row(x[0] + ' allocated', num(x[1][0]) + ' B in ' + num(x[1][1]) + ' events');
      row(x[0] + ' held at the end', num(x[1][4]) + ' B in ' + num(x[1][5]) + ' blocks');
    });
    row('Change of allocated bytes', signed(s.new[0] - s.base[0]) + ' B');
    row('Change of bytes held at the end', signed(s.new[4] - s.base[4]) + ' B');
  } else {
    row('Format', 'memprof, symtab version ' + s.versions[0] + ', events version ' +
        s.versions[1] + s.version_note + (s.profiles > 1 ? ', ' + s.profiles + ' profiles merged' : ''));
    row('Complete', s.complete ? 'yes' : 'no: ' + s.cut_note);
    row(s.sample || s.rates ? 'Events (estimated)' : 'Events',
        num(s.alloc_events + s.realloc_events + s.free_events) +
        ' (alloc ' + num(s.alloc_events) + ', realloc ' + num(s.realloc_events) +
        ', free ' + num(s.free_events) + ')' +
        (s.sample || s.rates ? ', from ' + num(s.recorded_events) + ' recorded' : ''));
    row('Allocated', num(s.alloc_bytes) + ' B (' + human(s.alloc_bytes) + ')');
    row('Freed', num(s.free_bytes) + ' B (' + human(s.free_bytes) + ')');
    row('Live at the end', num(s.live_bytes) + ' B in ' + num(s.live_blocks) + ' blocks');
    row('Peak', num(s.peak_bytes) + ' B (' + human(s.peak_bytes) + ') in ' +
        num(s.peak_blocks) + ' blocks' + (s.profiles > 1 ?
        ', the sum of the peaks of ' + s.profiles + ' profiles' :
        ', after event ' + num(s.peak_event) + ' of ' + num(s.recorded_events) +
        (s.peak_ns != null ? ', at ' + dur(s.peak_ns) : '')));
    if (s.memory) {	/* Native profiles: where the process's memory is, as info says it. */
      var m = s.memory;
      row('Memory', 'RSS ' + num(m.rss_bytes) + ' B (' + human(m.rss_bytes) + ') at the end, at most ' +
          num(m.rss_max_bytes) + ' B at a time mark: VM heap ' + num(m.vm_live_bytes) + ' B and native ' +
          num(m.native_live_bytes) + ' B live (allocated within the profile), ' +
          (m.jit_mcode_bytes != null ? 'JIT machine code ' + num(m.jit_mcode_bytes) + ' B mapped, ' : '') +
          'the rest ' + num(m.rest_bytes) + ' B (allocator caches and fragmentation, ' +
          (m.jit_mcode_bytes != null ? '' : 'machine code, ') + 'stacks, ' +
          'mapped files, and what was allocated before the start)');
    }
    if (s.native_unseen)	/* Native profiles: what the native figures leave out. */
      row('Not seen allocated', num(s.native_unseen) + ' free' + (s.native_unseen == 1 ? '' : 's') +
          ' or resize' + (s.native_unseen == 1 ? '' : 's') +
          ' of native blocks allocated before the recording started (not counted)');
    if (s.native_lost)
      row('Lost', num(s.native_lost) + ' native event' + (s.native_lost == 1 ? '' : 's') +
          ' lost: the agent could not keep ' + (s.native_lost == 1 ? 'it' : 'them') +
          " (out of memory, or other threads' queue full while the VM's thread took none);" +
          ' native figures are short by ' + (s.native_lost == 1 ? 'it' : 'them'));
    if (s.duration_ns != null) row('Duration', dur(s.duration_ns));
    var g = s.final_collection;	/* What it freed, as NOTES says it: on the same line. */
    row('Collected before the end', s.collected ? 'yes: what is live is reachable' +
        (g ? '; it freed ' + num(g.freed_bytes) + ' B in ' + num(g.freed_blocks) +
         ' blocks made within the profile (most by ' + g.top + '): garbage, or what main-chunk locals held' : '') :
        s.settled ? "before the stop: the collector had just finished a cycle, as after the program's " +
        'collectgarbage(), and nothing was allocated after it (what is live survived it)' :
        s.exited ? 'no: asked for, but the process exited without closing its Lua state, so it could not run ' +
        '(what is live may be garbage not yet collected)' :
        'no: what is live may be garbage not yet collected');
    if (s.stopped) row('Stopped', s.stopped);
    row('Call stacks', s.stacks ? 'recorded, up to ' + s.stacks + ' frames' : 'not recorded (one frame per event)');
    if (s.sample) row('Sampled', 'one sample every ' + num(s.sample) +
                      ' bytes on average: counts and bytes are estimates');
    if (s.rates) row('Sampled', 'at different rates, one sample every ' +
        s.rates.map(function (r) { return r ? num(r) + ' bytes' : 'event'; }).join(', every ') +
        ' (the profiles in their order): counts and bytes are estimates');
    row('Temporary', num(s.temp_blocks) + ' of ' + num(s.made_blocks) + ' blocks (' +
        pct(s.temp_blocks, s.made_blocks) + ') freed within ' + num(s.window) +
        ' allocations after their own');
  }
  rows.forEach(function (r) {
    var tr = make('tr');
    tr.appendChild(make('td', '', r[0]));
    tr.appendChild(make('td', '', r[1]));
    t.appendChild(tr);
  });
}

/* -- Sources -------------------------------------------------------------- */

function col(name, get, fmt, title) {
  return { name: name, get: get, fmt: fmt || num, title: title };
}
function at(i) { return function (r) { return r[i]; }; }
function change(i, j) { return function (r) { return r[j] - r[i]; }; }

var COLS = DIFF ? [
  col('Source', at(0), String),
  col('Allocated B, base', at(2)), col('new', at(8)),
  col('change', change(2, 8), signed),
  col('Allocations, base', at(3)), col('new', at(9)),
  col('change', change(3, 9), signed),
  col('Freed B, change', change(4, 10), signed),
  col('Held at the end B, base', at(6)), col('new', at(12)),
  col('change', change(6, 12), signed),
  col('Blocks at the end, change', change(7, 13), signed)
].concat(D.summary.peak_compared ? [
  col('B at the peak, change', change(14, 15), signed, 'what it held at each profile\'s peak (--peak)')
] : []) : [
  col('Source', at(0), String),
  col('Allocated B', at(2), null, 'new sizes of its allocations and reallocations'),
  col('Allocations', at(3), null, 'allocation and reallocation events'),
  col('Freed B', at(4), null, 'old sizes of its reallocations and frees'),
  col('Frees', at(5), null, 'reallocation and free events'),
  col('Live B at the end', at(7), null, 'HEAP SUMMARY: its blocks (allocated or resized last) still live at the end'),
  col('Live blocks', at(8)),
].concat(D.summary.accounting == 'tarantool' ? [
  col('Held B (Tarantool)', at(6), null, 'HEAP SUMMARY of --accounting tarantool: charged at allocation and growth, credited at free and resize')
] : [], [
  col('B at the peak', at(9), null, 'its blocks live at the peak'),
  col('Blocks at the peak', at(10)),
  col('Temporary blocks', at(12), null, 'freed within the window of allocations after their own'),
  col('Temporary B', at(11))
]);
var sortCol = DIFF ? 3 : 1, sortDesc = true, filterText = '';

function sources() {
  var head = $('sources-head'), tr = make('tr');
  COLS.forEach(function (c, i) {
    var th = make('th', i ? '' : 'label', c.name);
    if (c.title) th.title = c.title;
    th.addEventListener('click', function () {
      if (sortCol == i) sortDesc = !sortDesc;
      else { sortCol = i; sortDesc = i != 0; }
      fill();
    });
    tr.appendChild(th);
  });
  head.appendChild(tr);
  $('filter').addEventListener('input', function () {
    filterText = this.value.toLowerCase();
    fill();
  });
  $('sources-more').addEventListener('click', function () { shown += PAGE; fill(); });
  fill();
}

function fill() {
  var body = $('sources-body'), c = COLS[sortCol], rows, n, i, j;
  var ths = $('sources-head').getElementsByTagName('th');
  for (i = 0; i < ths.length; i++) {
    ths[i].className = (i ? '' : 'label') + (i == sortCol ? ' sorted' + (sortDesc ? '' : ' asc') : '');
  }
  rows = D.sources.filter(function (r) {
    return !filterText || r[0].toLowerCase().indexOf(filterText) >= 0;
  });
  rows.sort(function (a, b) {
    var x = c.get(a), y = c.get(b), d;
    if (DIFF && sortCol && c.fmt == signed) { x = Math.abs(x); y = Math.abs(y); }
    d = x < y ? -1 : x > y ? 1 : 0;
    if (sortDesc) d = -d;
    return d || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  });
  while (body.firstChild) body.removeChild(body.firstChild);
  n = Math.min(rows.length, shown);
  for (i = 0; i < n; i++) {
    var tr = make('tr');
    for (j = 0; j < COLS.length; j++) {
      var v = COLS[j].get(rows[i]), td = make('td', j ? '' : 'label', j ? COLS[j].fmt(v) : undefined);
      if (!j) { td.title = rows[i][0]; td.appendChild(make('div', '', rows[i][0])); }
      if (DIFF && COLS[j].fmt == signed) td.className = v > 0 ? 'up' : v < 0 ? 'down' : '';
      tr.appendChild(td);
    }
    body.appendChild(tr);
    (D.trace_lines && D.trace_lines[rows[i][0]] || []).forEach(function (x) {
      var s = make('tr', 'sub'), k;
      s.appendChild(make('td', 'label', '\u21b3 ' + x[0]));
      s.firstChild.title = 'a line inside the trace: its allocations and reallocations, and what it holds at the end';
      s.appendChild(make('td', '', num(x[1])));
      s.appendChild(make('td', '', num(x[2])));
      for (k = 3; k < COLS.length; k++)	/* Live B at the end, Live blocks */
        s.appendChild(make('td', '', k == 5 ? num(x[3]) : k == 6 ? num(x[4]) : undefined));
      body.appendChild(s);
    });
  }
  /* "The first 50 of 370 sources.", "12 of 370 sources match.",
     "The first 50 of the 120 sources that match, of 370." */
  $('sources-note').textContent = !filterText ?
    (rows.length > n ? 'The first ' + n + ' of ' : '') + rows.length + ' sources.' :
    rows.length > n ? 'The first ' + n + ' of the ' + rows.length +
      ' sources that match, of ' + D.sources.length + '.' :
    rows.length + ' of ' + D.sources.length + ' sources match.';
  $('sources-more').style.display = rows.length > n ? '' : 'none';
  $('sources-more').textContent = 'Show ' + Math.min(rows.length - n, PAGE) + ' more';
}

/* -- Flame graph ---------------------------------------------------------- */

var T = D.tree, parent = [], kids = [], maxDepth = 0, metric = 0, zoomed = 0, side = 1;
var HUES = [[0, 0, 0, 80], [14, 30, 80, 60], [58, 22, 65, 52], [195, 25, 55, 62],
            [275, 25, 45, 66], [0, 0, 0, 72], [355, 8, 55, 84], [0, 0, 0, 64]];
var METRICS = ['allocated bytes', 'bytes not freed at the end', 'bytes live at the peak'];

function value(i) { return T.nodes[i][3 + 2 * metric]; }
function base(i) { return T.nodes[i][9 + 2 * metric]; }

function treeInit() {
  var stack = [], i;
  for (i = 0; i < T.nodes.length; i++) {
    var d = T.nodes[i][0];
    while (stack.length > d) stack.pop();
    parent[i] = stack.length ? stack[stack.length - 1] : -1;
    kids[i] = [];
    if (parent[i] >= 0) kids[parent[i]].push(i);
    stack.push(i);
    if (d > maxDepth) maxDepth = d;
  }
}

function hash(s) {
  var h = 0, i;
  for (i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return Math.abs(h);
}

function colour(i) {
  var n = T.nodes[i], k = HUES[n[1]] || HUES[7], h = hash(T.labels[n[2]]) % 100 / 100;
  if (DIFF) {
    var a = base(i), b = value(i), m = Math.max(a, b), r = m ? (b - a) / m : 0;
    return r > 0 ? 'hsl(0,80%,' + (92 - 40 * r).toFixed(0) + '%)' :
           r < 0 ? 'hsl(215,80%,' + (92 + 40 * r).toFixed(0) + '%)' : 'hsl(0,0%,88%)';
  }
  return 'hsl(' + (k[0] + k[1] * h).toFixed(0) + ',' + k[2] + '%,' + (k[3] + 8 * h).toFixed(0) + '%)';
}

function tip(i) {
  var n = T.nodes[i], v = value(i), tot = value(0), s = T.labels[n[2]] + '\n';
  if (DIFF) {
    var a = base(i);
    return s + num(a) + ' -> ' + num(v) + ' (' + signed(v - a) + ') ' + METRICS[metric];
  }
  return s + num(v) + ' ' + METRICS[metric] + ' (' + human(v) + '), ' + pct(v, tot) + ' of all';
}

function draw() {
  var g = $('flame-frames'), x = [], total, scale, top, i, drawn = 0;
  var anc = {}, width = function (i) { return side ? value(i) : base(i); };
  while (g.firstChild) g.removeChild(g.firstChild);
  total = width(zoomed);
  $('flame').setAttribute('height', (maxDepth + 1) * FH + 10);
  g.parentNode.setAttribute('data-zoom', zoomed);
  for (i = parent[zoomed]; i >= 0; i = parent[i]) anc[i] = 1;
  if (!total) {
    g.appendChild(svg('text', { x: W / 2, y: 20, 'text-anchor': 'middle' })).textContent =
      'No ' + METRICS[metric] + ' in this profile.';
    return;
  }
  scale = W / total;
  top = maxDepth * FH;
  /* Positions: each child after its elder siblings, inside its parent. */
  x[zoomed] = PAD;
  for (i = 0; i < T.nodes.length; i++) {
    var w, el, r, t, lab, n = Math.floor, y = top - T.nodes[i][0] * FH, c;
    if (anc[i]) { x[i] = PAD; w = W; }
    else if (x[i] === undefined) continue;
    else w = width(i) * scale;
    if (!anc[i]) {
      var acc = x[i];
      kids[i].forEach(function (k) { x[k] = acc; acc += width(k) * scale; });
    }
    if (w < 0.1) continue;
    el = svg('g', { 'class': 'f' + (anc[i] ? ' anc' : ''), 'data-i': i });
    r = svg('rect', { x: x[i].toFixed(2), y: y, width: w.toFixed(2), height: FH - 1, fill: colour(i) });
    t = svg('title', {});
    t.textContent = tip(i);
    el.appendChild(t);
    el.appendChild(r);
    lab = T.labels[T.nodes[i][2]];
    c = n((w - 6) / 7.3);
    if (c >= 3) {
      var tx = svg('text', { x: (x[i] + 3).toFixed(2), y: y + 11.5 });
      tx.textContent = lab.length <= c ? lab : lab.slice(0, c - 2) + '..';
      el.appendChild(tx);
    }
    g.appendChild(el);
    drawn++;
  }
  g.parentNode.setAttribute('data-drawn', drawn);
  /* A deep graph scrolls in its box, which opens on the root: the
  ** graph stays in the first screen of the page. */
  $('flame-box').scrollTop = $('flame-box').scrollHeight;
}

function flame() {
  if (!T || !T.nodes.length) { $('flame-section').style.display = 'none'; return; }
  treeInit();
  $('flame').addEventListener('click', function (e) {
    var g = e.target.closest ? e.target.closest('g.f') : null;
    if (!g) return;
    zoomed = +g.getAttribute('data-i');
    draw();
  });
  $('flame').addEventListener('mousemove', function (e) {
    var g = e.target.closest ? e.target.closest('g.f') : null;
    $('flame-info').textContent = g ? tip(+g.getAttribute('data-i')).replace('\n', ': ') : ' ';
  });
  $('flame-reset').addEventListener('click', function () { zoomed = 0; draw(); });
  if (DIFF) {	/* Widths from one side, colours from the change. */
    var sel = make('select');
    sel.id = 'flame-width';
    [['1', 'widths: new'], ['0', 'widths: base']].forEach(function (o) {
      var e = make('option', '', o[1]);
      e.value = o[0];
      sel.appendChild(e);
    });
    sel.addEventListener('change', function () { side = +this.value; zoomed = 0; draw(); });
    $('flame-side').appendChild(sel);
  }
  Array.prototype.forEach.call(document.getElementsByName('metric'), function (r) {
    if (+r.value == 2 && !D.summary.has_peak) r.disabled = true;
    r.addEventListener('change', function () { metric = +this.value; zoomed = 0; draw(); });
  });
  draw();
}

/* -- Timeline ------------------------------------------------------------- */

function timeline() {
  var L = D.timeline, s = D.summary, p = $('timeline'), H = 300, RH = 60, X0 = 80, XW = 1100;
  if (!L || !L.points.length) { $('timeline-section').style.display = 'none'; return; }
  var marks = L.marks, timed = marks.length > 0, pts = L.points, end = s.recorded_events;
  function t(ev) {	/* The time of event index ev (or ev itself). */
    var lo = 0, hi = marks.length, a = [0, 0], b;
    if (!timed) return ev;
    while (lo < hi) { var m = (lo + hi) >> 1; if (marks[m][0] <= ev) lo = m + 1; else hi = m; }
    if (lo) a = marks[lo - 1];
    b = lo < marks.length ? marks[lo] : null;
    if (!b || b[0] <= a[0]) return a[1];
    return a[1] + (b[1] - a[1]) * (ev - a[0]) / (b[0] - a[0]);
  }
  var tmax = Math.max(t(end), 1), ymax = 1, rmax = 0, i;
  pts.forEach(function (q) { if (q[2] > ymax) ymax = q[2]; });
  if (s.peak_bytes > ymax) ymax = s.peak_bytes;
  (L.rss || []).forEach(function (q) { if (q[1] > ymax) ymax = q[1]; });
  function X(ev) { return X0 + XW * t(ev) / tmax; }
  function Y(v) { return 10 + (H - 20) * (1 - v / ymax); }
  var up = [], low = [], line = [], rates = [];
  pts.forEach(function (q) {
    var e1 = Math.min(q[0] + L.width, end), x0 = X(q[0]), x1 = X(e1), dt = t(e1) - t(q[0]);
    up.push(x0.toFixed(1) + ',' + Y(q[2]).toFixed(1), x1.toFixed(1) + ',' + Y(q[2]).toFixed(1));
    low.unshift(x0.toFixed(1) + ',' + Y(q[3]).toFixed(1), x1.toFixed(1) + ',' + Y(q[3]).toFixed(1));
    line.push(x1.toFixed(1) + ',' + Y(q[1]).toFixed(1));
    var r = dt > 0 ? q[5] / dt : 0;
    rates.push([x0, x1, r]);
    if (r > rmax) rmax = r;
  });
  p.setAttribute('height', H + RH + 40);
  p.appendChild(svg('polygon', { points: up.concat(low).join(' '), fill: '#f3b27a', stroke: 'none' }));
  p.appendChild(svg('polyline', { points: line.join(' '), fill: 'none', stroke: '#b5561b', 'stroke-width': 1 }));
  if (L.rss) {	/* Native profiles: the process's RSS at the time marks. */
    p.appendChild(svg('polyline', { id: 'rss-line', fill: 'none', stroke: '#2a8a4a', 'stroke-width': 1.5,
      points: L.rss.map(function (q) { return X(q[0]).toFixed(1) + ',' + Y(q[1]).toFixed(1); }).join(' ') }));
    var rl = L.rss[L.rss.length - 1];
    p.appendChild(svg('text', { id: 'rss-label', x: X0 + XW - 4, y: Math.max(Y(rl[1]) - 6, 22),
      'text-anchor': 'end', fill: '#2a8a4a' })).textContent = 'RSS ' + human(rl[1]);
  }
  for (i = 0; i <= 4; i++) {	/* The y axis. */
    var yv = ymax * i / 4;
    p.appendChild(svg('line', { x1: X0, x2: X0 + XW, y1: Y(yv), y2: Y(yv), stroke: '#ddd' }));
    p.appendChild(svg('text', { x: X0 - 6, y: Y(yv) + 4, 'text-anchor': 'end' })).textContent = human(yv);
  }
  for (i = 0; i <= 5; i++) {	/* The x axis. */
    var xv = tmax * i / 5;
    p.appendChild(svg('text', { x: X0 + XW * i / 5, y: H + RH + 34,
      'text-anchor': i ? i < 5 ? 'middle' : 'end' : 'start' })).textContent =
      timed ? dur(xv) : 'event ' + num(xv);
  }
  rates.forEach(function (r) {	/* The allocation rate, below. */
    var h = rmax ? RH * r[2] / rmax : 0;
    if (h > 0) p.appendChild(svg('rect', { x: r[0].toFixed(1), y: (H + RH + 10 - h).toFixed(1),
      width: Math.max(r[1] - r[0], 0.5).toFixed(1), height: h.toFixed(1), fill: '#7aa6d6' }));
  });
  p.appendChild(svg('text', { x: X0, y: H + 8 })).textContent = 'allocation rate (max ' +
    (timed ? human(rmax * 1e9) + '/s' : human(rmax) + '/event') + ')';
  if (s.peak_event != null) {	/* The peak. */
    var px = timed && s.peak_ns != null ? X0 + XW * s.peak_ns / tmax : X(s.peak_event), py = Y(s.peak_bytes);
    var mk = svg('g', { id: 'peak-mark' });
    mk.appendChild(svg('line', { x1: px, x2: px, y1: 10, y2: H - 10, stroke: '#c00', 'stroke-dasharray': '4 3' }));
    mk.appendChild(svg('circle', { cx: px, cy: py, r: 4, fill: '#c00' }));
    mk.appendChild(svg('text', { x: px + (px > X0 + XW * 0.7 ? -8 : 8), y: Math.max(py - 6, 22),
      'text-anchor': px > X0 + XW * 0.7 ? 'end' : 'start', fill: '#c00' })).textContent =
      'peak ' + human(s.peak_bytes) + (s.peak_ns != null ? ' at ' + dur(s.peak_ns) : ' after event ' + num(s.peak_event));
    p.appendChild(mk);
  }
  $('timeline-note').textContent = 'Live heap (bytes allocated within the profile and not yet freed): the band is ' +
    'its range within each of ' + pts.length + ' intervals of ' + num(L.width) + ' events, the line its value at ' +
    'their ends; ' + (timed ? 'time from the profile\'s time marks.' : 'no time marks in this profile: the axis is the event index.') +
    (L.rss ? ' The green line is the process\'s RSS at ' + num(L.rss.length) + ' time marks: above the live heap ' +
     'are the rest (allocator caches and fragmentation, machine code, stacks, mapped files, and what was ' +
     'allocated before the start).' : '');
}

/* -- Temporaries, aliases --------------------------------------------------- */

function temporary() {
  var b = $('temp-body'), rows;
  if (DIFF) { $('temp-section').style.display = 'none'; return; }
  rows = D.sources.filter(function (r) { return r[12] > 0; });
  rows.sort(function (a, b) { return b[11] - a[11] || b[12] - a[12] || (a[0] < b[0] ? -1 : 1); });
  $('temp-note').textContent = 'Blocks freed (or resized) within ' + num(D.summary.window) +
    ' allocations after their own: ' + num(D.summary.temp_blocks) + ' of ' + num(D.summary.made_blocks) +
    ' blocks made, ' + num(D.summary.temp_bytes) + ' of ' + num(D.summary.made_bytes) + ' bytes.';
  rows.slice(0, LIMIT).forEach(function (r) {
    var tr = make('tr');
    [r[0], num(r[12]), num(r[3]), num(r[11]), num(r[2]), pct(r[12], r[3])].forEach(function (v, i) {
      tr.appendChild(make('td', i ? '' : 'label', v));
    });
    b.appendChild(tr);
  });
}

function aliases() {
  var a = $('aliases');
  if (!D.aliases.length) { $('aliases-section').style.display = 'none'; return; }
  D.aliases.forEach(function (x) {
    a.appendChild(make('h3', '', x[0]));
    a.appendChild(make('pre', '', x[1]));
  });
}

summary();
sources();
flame();
timeline();
temporary();
aliases();
document.body.setAttribute('data-ready', '1');
