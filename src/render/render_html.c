/*
** render_html.c: the HTML report, one self-contained page (its style,
** script and data inline; nothing is fetched): a summary (totals, the
** peak, the duration, the profiler's settings), a sortable and filterable
** table of sources, the flame graph (allocated bytes, bytes not freed,
** bytes at the peak; a click zooms), the timeline with the peak marked,
** the temporaries, and for `ljmemprof diff --format html` the diff of
** two profiles (the table of changes, a flame graph coloured by change).
**
** The page holds summaries, never events: every source once, the stack
** tree pruned like the SVG flame graph's (a frame narrower than 0.1 pixel
** at full width under every metric is left out, its cost staying in its
** caller), the timeline's points (mp_timeline.h). Its size follows the
** distinct sources and stacks, not the profile. The data is one JSON
** object in a <script type="application/json"> element, written with the
** project's JSON writer, '<' escaped so that no text can close the
** element; the script reads it and builds the page (text is only ever
** set as text, never parsed as HTML).
**
**   data := {"kind": "report" | "diff", "files": [...], "summary": {...},
**            "sources": [[label, kind, numbers...]], "tree": {"labels":
**            [...], "nodes": [[depth, kind, label, ...inclusive costs]]},
**            "timeline": {"events", "width", "points", "marks"} | null,
**            "trace_lines": {trace label: [[line label, bytes, events]]},
**            "aliases": [[name, text]]}
**
** The style and the script are below as C strings (edit them there).
*/

#include <stdlib.h>
#include <string.h>

#include "render/mp_json.h"
#include "render/mp_render.h"
#include "render/mp_sview.h"
#include "render/mp_walk.h"

#define FLAME_PX	11800	/* 0.1 pixel of 1180: frames drawn at most a
				   level, the pruning threshold. */

static const char style[] =
"body { font: 14px/1.4 system-ui, sans-serif; margin: 0 24px 40px; color: #222; }\n"
"h1 { font-size: 20px; margin: 16px 0 4px; }\n"
"h2 { font-size: 16px; margin: 28px 0 8px; border-bottom: 1px solid #ccc; }\n"
".note { color: #666; font-size: 12px; }\n"
"table { border-collapse: collapse; font-size: 13px; }\n"
"th, td { padding: 2px 6px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }\n"
"th { background: #f4f4f4; cursor: pointer; user-select: none; position: sticky; top: 0; white-space: normal; vertical-align: bottom; font-weight: 600; font-size: 12px; }\n"
"th.sorted::after { content: ' \\25BC'; font-size: 10px; }\n"
"th.sorted.asc::after { content: ' \\25B2'; }\n"
"td.label, th.label { text-align: left; font-family: ui-monospace, monospace; }\n"
"td.label div { max-width: 300px; overflow: hidden; text-overflow: ellipsis; }\n"
"#sources-more { margin: 6px 0; }\n"
"td.up { color: #b00; } td.down { color: #06c; }\n"
"tr.sub td { color: #555; font-size: 12px; } tr.sub td.label { padding-left: 24px; }\n"
"#summary td { text-align: left; border: 0; padding: 1px 12px 1px 0; }\n"
"#summary td:first-child { color: #555; }\n"
".controls { margin: 6px 0; }\n"
".controls label { margin-right: 14px; }\n"
"#filter { width: 320px; }\n"
"svg text { font: 12px ui-monospace, monospace; pointer-events: none; }\n"
"#flame g.f rect { stroke: #fff; stroke-width: 0.5; cursor: pointer; }\n"
"#flame g.anc { opacity: 0.55; }\n"
"#flame-box { max-height: 340px; overflow-y: auto; width: 1216px; }\n"
"#flame-info { font-family: ui-monospace, monospace; font-size: 12px; min-height: 1.4em; }\n"
"pre { background: #f8f8f8; padding: 6px; font-size: 12px; overflow: auto; }\n";

static const char script[] =
"'use strict';\n"
"var D = JSON.parse(document.getElementById('data').textContent);\n"
"var DIFF = D.kind == 'diff';\n"
"var NS = 'http://www.w3.org/2000/svg';\n"
"var W = 1180, PAD = 10, FH = 16, LIMIT = 1000, PAGE = 50, shown = PAGE;\n"
"\n"
"function $(id) { return document.getElementById(id); }\n"
"function make(tag, cls, text) {\n"
"  var e = document.createElement(tag);\n"
"  if (cls) e.className = cls;\n"
"  if (text !== undefined) e.textContent = text;\n"
"  return e;\n"
"}\n"
"function svg(tag, at) {\n"
"  var e = document.createElementNS(NS, tag), k;\n"
"  for (k in at) e.setAttribute(k, at[k]);\n"
"  return e;\n"
"}\n"
"function num(n) { return n == null ? '' : Math.round(n).toLocaleString('en-US'); }\n"
"function signed(n) { return n > 0 ? '+' + num(n) : n < 0 ? '-' + num(-n) : '0'; }\n"
"function human(n) {\n"
"  var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0, neg = n < 0;\n"
"  n = Math.abs(n);\n"
"  while (n >= 1023.995 && i < 4) { n /= 1024; i++; }\n"
"  return (neg ? '-' : '') + (i ? n.toFixed(2) : n) + ' ' + u[i];\n"
"}\n"
"function dur(ns) {\n"
"  return ns < 1e9 ? (ns / 1e6).toFixed(3) + ' ms' : (ns / 1e9).toFixed(3) + ' s';\n"
"}\n"
"function pct(a, b) { return b ? (100 * a / b).toFixed(1) + '%' : '0.0%'; }\n"
"\n"
"/* -- Summary -------------------------------------------------------------- */\n"
"\n"
"function summary() {\n"
"  var s = D.summary, t = $('summary'), rows = [];\n"
"  function row(k, v) { rows.push([k, v]); }\n"
"  document.title = 'ljmemprof: ' + D.files.join(', ');\n"
"  $('title').textContent = (DIFF ? 'ljmemprof diff: ' : 'ljmemprof: ') +\n"
"    D.files.join(DIFF ? ' -> ' : ', ');\n"
"  if (DIFF) {\n"
"    row('Changed sources', num(s.changed) + ' (' + num(s.unchanged) + ' unchanged)');\n"
"    [0, 1].forEach(function (i) {\n"
"      if (!s.complete[i]) row(i ? 'New' : 'Base', 'cut short or damaged: compared up to the cut');\n"
"    });\n"
"    [['Base', s.base], ['New', s.new]].forEach(function (x) {\n"
"      row(x[0] + ' allocated', num(x[1][0]) + ' B in ' + num(x[1][1]) + ' events');\n"
"      row(x[0] + ' held at the end', num(x[1][4]) + ' B in ' + num(x[1][5]) + ' blocks');\n"
"    });\n"
"    row('Change of allocated bytes', signed(s.new[0] - s.base[0]) + ' B');\n"
"    row('Change of bytes held at the end', signed(s.new[4] - s.base[4]) + ' B');\n"
"  } else {\n"
"    row('Format', 'memprof, symtab version ' + s.versions[0] + ', events version ' +\n"
"        s.versions[1] + s.version_note + (s.profiles > 1 ? ', ' + s.profiles + ' profiles merged' : ''));\n"
"    row('Complete', s.complete ? 'yes' : 'no, cut or damaged at byte ' + s.truncated_at);\n"
"    row(s.sample || s.rates ? 'Events (estimated)' : 'Events',\n"
"        num(s.alloc_events + s.realloc_events + s.free_events) +\n"
"        ' (alloc ' + num(s.alloc_events) + ', realloc ' + num(s.realloc_events) +\n"
"        ', free ' + num(s.free_events) + ')' +\n"
"        (s.sample || s.rates ? ', from ' + num(s.recorded_events) + ' recorded' : ''));\n"
"    row('Allocated', num(s.alloc_bytes) + ' B (' + human(s.alloc_bytes) + ')');\n"
"    row('Freed', num(s.free_bytes) + ' B (' + human(s.free_bytes) + ')');\n"
"    row('Live at the end', num(s.live_bytes) + ' B in ' + num(s.live_blocks) + ' blocks');\n"
"    row('Peak', num(s.peak_bytes) + ' B (' + human(s.peak_bytes) + ') in ' +\n"
"        num(s.peak_blocks) + ' blocks' + (s.profiles > 1 ?\n"
"        ', the sum of the peaks of ' + s.profiles + ' profiles' :\n"
"        ', after event ' + num(s.peak_event) + ' of ' + num(s.recorded_events) +\n"
"        (s.peak_ns != null ? ', at ' + dur(s.peak_ns) : '')));\n"
"    if (s.duration_ns != null) row('Duration', dur(s.duration_ns));\n"
"    row('Collected before the end', s.collected ? 'yes: what is live is reachable' :\n"
"        'no: what is live may be garbage not yet collected');\n"
"    if (s.stopped) row('Stopped', s.stopped);\n"
"    row('Call stacks', s.stacks ? 'recorded, up to ' + s.stacks + ' frames' : 'not recorded (one frame per event)');\n"
"    if (s.sample) row('Sampled', 'one sample every ' + num(s.sample) +\n"
"                      ' bytes on average: counts and bytes are estimates');\n"
"    if (s.rates) row('Sampled', 'at different rates, one sample every ' +\n"
"        s.rates.map(function (r) { return r ? num(r) + ' bytes' : 'event'; }).join(', every ') +\n"
"        ' (the profiles in their order): counts and bytes are estimates');\n"
"    row('Temporary', num(s.temp_blocks) + ' of ' + num(s.made_blocks) + ' blocks (' +\n"
"        pct(s.temp_blocks, s.made_blocks) + ') freed within ' + num(s.window) +\n"
"        ' allocations after their own');\n"
"  }\n"
"  rows.forEach(function (r) {\n"
"    var tr = make('tr');\n"
"    tr.appendChild(make('td', '', r[0]));\n"
"    tr.appendChild(make('td', '', r[1]));\n"
"    t.appendChild(tr);\n"
"  });\n"
"}\n"
"\n"
"/* -- Sources -------------------------------------------------------------- */\n"
"\n"
"function col(name, get, fmt, title) {\n"
"  return { name: name, get: get, fmt: fmt || num, title: title };\n"
"}\n"
"function at(i) { return function (r) { return r[i]; }; }\n"
"function change(i, j) { return function (r) { return r[j] - r[i]; }; }\n"
"\n"
"var COLS = DIFF ? [\n"
"  col('Source', at(0), String),\n"
"  col('Allocated B, base', at(2)), col('new', at(8)),\n"
"  col('change', change(2, 8), signed),\n"
"  col('Allocations, base', at(3)), col('new', at(9)),\n"
"  col('change', change(3, 9), signed),\n"
"  col('Freed B, change', change(4, 10), signed),\n"
"  col('Held at the end B, base', at(6)), col('new', at(12)),\n"
"  col('change', change(6, 12), signed),\n"
"  col('Blocks at the end, change', change(7, 13), signed)\n"
"] : [\n"
"  col('Source', at(0), String),\n"
"  col('Allocated B', at(2), null, 'new sizes of its allocations and reallocations'),\n"
"  col('Allocations', at(3), null, 'allocation and reallocation events'),\n"
"  col('Freed B', at(4), null, 'old sizes of its reallocations and frees'),\n"
"  col('Frees', at(5), null, 'reallocation and free events'),\n"
"  col('Live B at the end', at(7), null, 'HEAP SUMMARY: its blocks (allocated or resized last) still live at the end'),\n"
"  col('Live blocks', at(8)),\n"
"].concat(D.summary.accounting == 'tarantool' ? [\n"
"  col('Held B (Tarantool)', at(6), null, 'HEAP SUMMARY of --accounting tarantool: charged at allocation and growth, credited at free and resize')\n"
"] : [], [\n"
"  col('B at the peak', at(9), null, 'its blocks live at the peak'),\n"
"  col('Blocks at the peak', at(10)),\n"
"  col('Temporary blocks', at(12), null, 'freed within the window of allocations after their own'),\n"
"  col('Temporary B', at(11))\n"
"]);\n"
"var sortCol = DIFF ? 3 : 1, sortDesc = true, filterText = '';\n"
"\n"
"function sources() {\n"
"  var head = $('sources-head'), tr = make('tr');\n"
"  COLS.forEach(function (c, i) {\n"
"    var th = make('th', i ? '' : 'label', c.name);\n"
"    if (c.title) th.title = c.title;\n"
"    th.addEventListener('click', function () {\n"
"      if (sortCol == i) sortDesc = !sortDesc;\n"
"      else { sortCol = i; sortDesc = i != 0; }\n"
"      fill();\n"
"    });\n"
"    tr.appendChild(th);\n"
"  });\n"
"  head.appendChild(tr);\n"
"  $('filter').addEventListener('input', function () {\n"
"    filterText = this.value.toLowerCase();\n"
"    fill();\n"
"  });\n"
"  $('sources-more').addEventListener('click', function () { shown += PAGE; fill(); });\n"
"  fill();\n"
"}\n"
"\n"
"function fill() {\n"
"  var body = $('sources-body'), c = COLS[sortCol], rows, n, i, j;\n"
"  var ths = $('sources-head').getElementsByTagName('th');\n"
"  for (i = 0; i < ths.length; i++) {\n"
"    ths[i].className = (i ? '' : 'label') + (i == sortCol ? ' sorted' + (sortDesc ? '' : ' asc') : '');\n"
"  }\n"
"  rows = D.sources.filter(function (r) {\n"
"    return !filterText || r[0].toLowerCase().indexOf(filterText) >= 0;\n"
"  });\n"
"  rows.sort(function (a, b) {\n"
"    var x = c.get(a), y = c.get(b), d;\n"
"    if (DIFF && sortCol && c.fmt == signed) { x = Math.abs(x); y = Math.abs(y); }\n"
"    d = x < y ? -1 : x > y ? 1 : 0;\n"
"    if (sortDesc) d = -d;\n"
"    return d || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);\n"
"  });\n"
"  while (body.firstChild) body.removeChild(body.firstChild);\n"
"  n = Math.min(rows.length, shown);\n"
"  for (i = 0; i < n; i++) {\n"
"    var tr = make('tr');\n"
"    for (j = 0; j < COLS.length; j++) {\n"
"      var v = COLS[j].get(rows[i]), td = make('td', j ? '' : 'label', j ? COLS[j].fmt(v) : undefined);\n"
"      if (!j) { td.title = rows[i][0]; td.appendChild(make('div', '', rows[i][0])); }\n"
"      if (DIFF && COLS[j].fmt == signed) td.className = v > 0 ? 'up' : v < 0 ? 'down' : '';\n"
"      tr.appendChild(td);\n"
"    }\n"
"    body.appendChild(tr);\n"
"    (D.trace_lines && D.trace_lines[rows[i][0]] || []).forEach(function (x) {\n"
"      var s = make('tr', 'sub'), k;\n"
"      s.appendChild(make('td', 'label', '\\u21b3 ' + x[0]));\n"
"      s.firstChild.title = 'a line inside the trace: its allocations and reallocations';\n"
"      s.appendChild(make('td', '', num(x[1])));\n"
"      s.appendChild(make('td', '', num(x[2])));\n"
"      for (k = 3; k < COLS.length; k++) s.appendChild(make('td'));\n"
"      body.appendChild(s);\n"
"    });\n"
"  }\n"
"  $('sources-note').textContent = (rows.length > n ? 'The first ' + n + ' of ' : '') +\n"
"    rows.length + ' of ' + D.sources.length + ' sources' +\n"
"    (filterText ? ' match' : '') + '.';\n"
"  $('sources-more').style.display = rows.length > n ? '' : 'none';\n"
"  $('sources-more').textContent = 'Show ' + Math.min(rows.length - n, PAGE) + ' more';\n"
"}\n"
"\n"
"/* -- Flame graph ---------------------------------------------------------- */\n"
"\n"
"var T = D.tree, parent = [], kids = [], maxDepth = 0, metric = 0, zoomed = 0, side = 1;\n"
"var HUES = [[0, 0, 0, 80], [14, 30, 80, 60], [58, 22, 65, 52], [195, 25, 55, 62],\n"
"            [275, 25, 45, 66], [0, 0, 0, 72], [355, 8, 55, 84], [0, 0, 0, 64]];\n"
"var METRICS = ['allocated bytes', 'bytes not freed at the end', 'bytes live at the peak'];\n"
"\n"
"function value(i) { return T.nodes[i][3 + 2 * metric]; }\n"
"function base(i) { return T.nodes[i][9 + 2 * metric]; }\n"
"\n"
"function treeInit() {\n"
"  var stack = [], i;\n"
"  for (i = 0; i < T.nodes.length; i++) {\n"
"    var d = T.nodes[i][0];\n"
"    while (stack.length > d) stack.pop();\n"
"    parent[i] = stack.length ? stack[stack.length - 1] : -1;\n"
"    kids[i] = [];\n"
"    if (parent[i] >= 0) kids[parent[i]].push(i);\n"
"    stack.push(i);\n"
"    if (d > maxDepth) maxDepth = d;\n"
"  }\n"
"}\n"
"\n"
"function hash(s) {\n"
"  var h = 0, i;\n"
"  for (i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;\n"
"  return Math.abs(h);\n"
"}\n"
"\n"
"function colour(i) {\n"
"  var n = T.nodes[i], k = HUES[n[1]] || HUES[7], h = hash(T.labels[n[2]]) % 100 / 100;\n"
"  if (DIFF) {\n"
"    var a = base(i), b = value(i), m = Math.max(a, b), r = m ? (b - a) / m : 0;\n"
"    return r > 0 ? 'hsl(0,80%,' + (92 - 40 * r).toFixed(0) + '%)' :\n"
"           r < 0 ? 'hsl(215,80%,' + (92 + 40 * r).toFixed(0) + '%)' : 'hsl(0,0%,88%)';\n"
"  }\n"
"  return 'hsl(' + (k[0] + k[1] * h).toFixed(0) + ',' + k[2] + '%,' + (k[3] + 8 * h).toFixed(0) + '%)';\n"
"}\n"
"\n"
"function tip(i) {\n"
"  var n = T.nodes[i], v = value(i), tot = value(0), s = T.labels[n[2]] + '\\n';\n"
"  if (DIFF) {\n"
"    var a = base(i);\n"
"    return s + num(a) + ' -> ' + num(v) + ' (' + signed(v - a) + ') ' + METRICS[metric];\n"
"  }\n"
"  return s + num(v) + ' ' + METRICS[metric] + ' (' + human(v) + '), ' + pct(v, tot) + ' of all';\n"
"}\n"
"\n"
"function draw() {\n"
"  var g = $('flame-frames'), x = [], total, scale, top, i, drawn = 0;\n"
"  var anc = {}, width = function (i) { return side ? value(i) : base(i); };\n"
"  while (g.firstChild) g.removeChild(g.firstChild);\n"
"  total = width(zoomed);\n"
"  $('flame').setAttribute('height', (maxDepth + 1) * FH + 10);\n"
"  g.parentNode.setAttribute('data-zoom', zoomed);\n"
"  for (i = parent[zoomed]; i >= 0; i = parent[i]) anc[i] = 1;\n"
"  if (!total) {\n"
"    g.appendChild(svg('text', { x: W / 2, y: 20, 'text-anchor': 'middle' })).textContent =\n"
"      'No ' + METRICS[metric] + ' in this profile.';\n"
"    return;\n"
"  }\n"
"  scale = W / total;\n"
"  top = maxDepth * FH;\n"
"  /* Positions: each child after its elder siblings, inside its parent. */\n"
"  x[zoomed] = PAD;\n"
"  for (i = 0; i < T.nodes.length; i++) {\n"
"    var w, el, r, t, lab, n = Math.floor, y = top - T.nodes[i][0] * FH, c;\n"
"    if (anc[i]) { x[i] = PAD; w = W; }\n"
"    else if (x[i] === undefined) continue;\n"
"    else w = width(i) * scale;\n"
"    if (!anc[i]) {\n"
"      var acc = x[i];\n"
"      kids[i].forEach(function (k) { x[k] = acc; acc += width(k) * scale; });\n"
"    }\n"
"    if (w < 0.1) continue;\n"
"    el = svg('g', { 'class': 'f' + (anc[i] ? ' anc' : ''), 'data-i': i });\n"
"    r = svg('rect', { x: x[i].toFixed(2), y: y, width: w.toFixed(2), height: FH - 1, fill: colour(i) });\n"
"    t = svg('title', {});\n"
"    t.textContent = tip(i);\n"
"    el.appendChild(t);\n"
"    el.appendChild(r);\n"
"    lab = T.labels[T.nodes[i][2]];\n"
"    c = n((w - 6) / 7.3);\n"
"    if (c >= 3) {\n"
"      var tx = svg('text', { x: (x[i] + 3).toFixed(2), y: y + 11.5 });\n"
"      tx.textContent = lab.length <= c ? lab : lab.slice(0, c - 2) + '..';\n"
"      el.appendChild(tx);\n"
"    }\n"
"    g.appendChild(el);\n"
"    drawn++;\n"
"  }\n"
"  g.parentNode.setAttribute('data-drawn', drawn);\n"
"  /* A deep graph scrolls in its box, which opens on the root: the\n"
"  ** graph stays in the first screen of the page. */\n"
"  $('flame-box').scrollTop = $('flame-box').scrollHeight;\n"
"}\n"
"\n"
"function flame() {\n"
"  if (!T || !T.nodes.length) { $('flame-section').style.display = 'none'; return; }\n"
"  treeInit();\n"
"  $('flame').addEventListener('click', function (e) {\n"
"    var g = e.target.closest ? e.target.closest('g.f') : null;\n"
"    if (!g) return;\n"
"    zoomed = +g.getAttribute('data-i');\n"
"    draw();\n"
"  });\n"
"  $('flame').addEventListener('mousemove', function (e) {\n"
"    var g = e.target.closest ? e.target.closest('g.f') : null;\n"
"    $('flame-info').textContent = g ? tip(+g.getAttribute('data-i')).replace('\\n', ': ') : ' ';\n"
"  });\n"
"  $('flame-reset').addEventListener('click', function () { zoomed = 0; draw(); });\n"
"  if (DIFF) {	/* Widths from one side, colours from the change. */\n"
"    var sel = make('select');\n"
"    sel.id = 'flame-width';\n"
"    [['1', 'widths: new'], ['0', 'widths: base']].forEach(function (o) {\n"
"      var e = make('option', '', o[1]);\n"
"      e.value = o[0];\n"
"      sel.appendChild(e);\n"
"    });\n"
"    sel.addEventListener('change', function () { side = +this.value; zoomed = 0; draw(); });\n"
"    $('flame-side').appendChild(sel);\n"
"  }\n"
"  Array.prototype.forEach.call(document.getElementsByName('metric'), function (r) {\n"
"    if (+r.value == 2 && !D.summary.has_peak) r.disabled = true;\n"
"    r.addEventListener('change', function () { metric = +this.value; zoomed = 0; draw(); });\n"
"  });\n"
"  draw();\n"
"}\n"
"\n"
"/* -- Timeline ------------------------------------------------------------- */\n"
"\n"
"function timeline() {\n"
"  var L = D.timeline, s = D.summary, p = $('timeline'), H = 300, RH = 60, X0 = 80, XW = 1100;\n"
"  if (!L || !L.points.length) { $('timeline-section').style.display = 'none'; return; }\n"
"  var marks = L.marks, timed = marks.length > 0, pts = L.points, end = s.recorded_events;\n"
"  function t(ev) {	/* The time of event index ev (or ev itself). */\n"
"    var lo = 0, hi = marks.length, a = [0, 0], b;\n"
"    if (!timed) return ev;\n"
"    while (lo < hi) { var m = (lo + hi) >> 1; if (marks[m][0] <= ev) lo = m + 1; else hi = m; }\n"
"    if (lo) a = marks[lo - 1];\n"
"    b = lo < marks.length ? marks[lo] : null;\n"
"    if (!b || b[0] <= a[0]) return a[1];\n"
"    return a[1] + (b[1] - a[1]) * (ev - a[0]) / (b[0] - a[0]);\n"
"  }\n"
"  var tmax = Math.max(t(end), 1), ymax = 1, rmax = 0, i;\n"
"  pts.forEach(function (q) { if (q[2] > ymax) ymax = q[2]; });\n"
"  if (s.peak_bytes > ymax) ymax = s.peak_bytes;\n"
"  function X(ev) { return X0 + XW * t(ev) / tmax; }\n"
"  function Y(v) { return 10 + (H - 20) * (1 - v / ymax); }\n"
"  var up = [], low = [], line = [], rates = [];\n"
"  pts.forEach(function (q) {\n"
"    var e1 = Math.min(q[0] + L.width, end), x0 = X(q[0]), x1 = X(e1), dt = t(e1) - t(q[0]);\n"
"    up.push(x0.toFixed(1) + ',' + Y(q[2]).toFixed(1), x1.toFixed(1) + ',' + Y(q[2]).toFixed(1));\n"
"    low.unshift(x0.toFixed(1) + ',' + Y(q[3]).toFixed(1), x1.toFixed(1) + ',' + Y(q[3]).toFixed(1));\n"
"    line.push(x1.toFixed(1) + ',' + Y(q[1]).toFixed(1));\n"
"    var r = dt > 0 ? q[5] / dt : 0;\n"
"    rates.push([x0, x1, r]);\n"
"    if (r > rmax) rmax = r;\n"
"  });\n"
"  p.setAttribute('height', H + RH + 40);\n"
"  p.appendChild(svg('polygon', { points: up.concat(low).join(' '), fill: '#f3b27a', stroke: 'none' }));\n"
"  p.appendChild(svg('polyline', { points: line.join(' '), fill: 'none', stroke: '#b5561b', 'stroke-width': 1 }));\n"
"  for (i = 0; i <= 4; i++) {	/* The y axis. */\n"
"    var yv = ymax * i / 4;\n"
"    p.appendChild(svg('line', { x1: X0, x2: X0 + XW, y1: Y(yv), y2: Y(yv), stroke: '#ddd' }));\n"
"    p.appendChild(svg('text', { x: X0 - 6, y: Y(yv) + 4, 'text-anchor': 'end' })).textContent = human(yv);\n"
"  }\n"
"  for (i = 0; i <= 5; i++) {	/* The x axis. */\n"
"    var xv = tmax * i / 5;\n"
"    p.appendChild(svg('text', { x: X0 + XW * i / 5, y: H + RH + 34,\n"
"      'text-anchor': i ? i < 5 ? 'middle' : 'end' : 'start' })).textContent =\n"
"      timed ? dur(xv) : 'event ' + num(xv);\n"
"  }\n"
"  rates.forEach(function (r) {	/* The allocation rate, below. */\n"
"    var h = rmax ? RH * r[2] / rmax : 0;\n"
"    if (h > 0) p.appendChild(svg('rect', { x: r[0].toFixed(1), y: (H + RH + 10 - h).toFixed(1),\n"
"      width: Math.max(r[1] - r[0], 0.5).toFixed(1), height: h.toFixed(1), fill: '#7aa6d6' }));\n"
"  });\n"
"  p.appendChild(svg('text', { x: X0, y: H + 8 })).textContent = 'allocation rate (max ' +\n"
"    (timed ? human(rmax * 1e9) + '/s' : human(rmax) + '/event') + ')';\n"
"  if (s.peak_event != null) {	/* The peak. */\n"
"    var px = timed && s.peak_ns != null ? X0 + XW * s.peak_ns / tmax : X(s.peak_event), py = Y(s.peak_bytes);\n"
"    var mk = svg('g', { id: 'peak-mark' });\n"
"    mk.appendChild(svg('line', { x1: px, x2: px, y1: 10, y2: H - 10, stroke: '#c00', 'stroke-dasharray': '4 3' }));\n"
"    mk.appendChild(svg('circle', { cx: px, cy: py, r: 4, fill: '#c00' }));\n"
"    mk.appendChild(svg('text', { x: px + (px > X0 + XW * 0.7 ? -8 : 8), y: Math.max(py - 6, 22),\n"
"      'text-anchor': px > X0 + XW * 0.7 ? 'end' : 'start', fill: '#c00' })).textContent =\n"
"      'peak ' + human(s.peak_bytes) + (s.peak_ns != null ? ' at ' + dur(s.peak_ns) : ' after event ' + num(s.peak_event));\n"
"    p.appendChild(mk);\n"
"  }\n"
"  $('timeline-note').textContent = 'Live heap (bytes allocated within the profile and not yet freed): the band is ' +\n"
"    'its range within each of ' + pts.length + ' intervals of ' + num(L.width) + ' events, the line its value at ' +\n"
"    'their ends; ' + (timed ? 'time from the profile\\'s time marks.' : 'no time marks in this profile: the axis is the event index.');\n"
"}\n"
"\n"
"/* -- Temporaries, aliases --------------------------------------------------- */\n"
"\n"
"function temporary() {\n"
"  var b = $('temp-body'), rows;\n"
"  if (DIFF) { $('temp-section').style.display = 'none'; return; }\n"
"  rows = D.sources.filter(function (r) { return r[12] > 0; });\n"
"  rows.sort(function (a, b) { return b[11] - a[11] || b[12] - a[12] || (a[0] < b[0] ? -1 : 1); });\n"
"  $('temp-note').textContent = 'Blocks freed (or resized) within ' + num(D.summary.window) +\n"
"    ' allocations after their own: ' + num(D.summary.temp_blocks) + ' of ' + num(D.summary.made_blocks) +\n"
"    ' blocks made, ' + num(D.summary.temp_bytes) + ' of ' + num(D.summary.made_bytes) + ' bytes.';\n"
"  rows.slice(0, LIMIT).forEach(function (r) {\n"
"    var tr = make('tr');\n"
"    [r[0], num(r[12]), num(r[3]), num(r[11]), num(r[2]), pct(r[12], r[3])].forEach(function (v, i) {\n"
"      tr.appendChild(make('td', i ? '' : 'label', v));\n"
"    });\n"
"    b.appendChild(tr);\n"
"  });\n"
"}\n"
"\n"
"function aliases() {\n"
"  var a = $('aliases');\n"
"  if (!D.aliases.length) { $('aliases-section').style.display = 'none'; return; }\n"
"  D.aliases.forEach(function (x) {\n"
"    a.appendChild(make('h3', '', x[0]));\n"
"    a.appendChild(make('pre', '', x[1]));\n"
"  });\n"
"}\n"
"\n"
"summary();\n"
"sources();\n"
"flame();\n"
"timeline();\n"
"temporary();\n"
"aliases();\n"
"document.body.setAttribute('data-ready', '1');\n";

static const char page_head[] =
"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
"<meta name=\"generator\" content=\"ljmemprof\">\n<title>ljmemprof</title>\n"
"<style>\n";

static const char page_body[] =
"</style></head>\n<body>\n"
"<h1 id=\"title\">ljmemprof</h1>\n"
"<p class=\"note\">A memory profile of a LuaJIT program, by ljmemprof. "
"Everything is in this file.</p>\n"
"<h2>Summary</h2>\n<table id=\"summary\"></table>\n"
"<section id=\"flame-section\"><h2>Flame graph</h2>\n"
"<div class=\"controls\">"
"<label><input type=\"radio\" name=\"metric\" value=\"0\" checked> "
"allocated bytes</label>"
"<label><input type=\"radio\" name=\"metric\" value=\"1\"> bytes not freed "
"at the end</label>"
"<label><input type=\"radio\" name=\"metric\" value=\"2\"> bytes live at the "
"peak</label>"
"<span id=\"flame-side\"></span>"
"<button id=\"flame-reset\">Reset zoom</button></div>\n"
"<div id=\"flame-box\"><svg id=\"flame\" xmlns=\"http://www.w3.org/2000/svg\" "
"width=\"1200\" height=\"40\"><g id=\"flame-frames\"></g></svg></div>\n"
"<div id=\"flame-info\"> </div></section>\n"
"<h2>Sources</h2>\n<div class=\"controls\"><input id=\"filter\" "
"type=\"search\" placeholder=\"Filter sources by name\"> "
"<span id=\"sources-note\" class=\"note\"></span></div>\n"
"<table id=\"sources\"><thead id=\"sources-head\"></thead>"
"<tbody id=\"sources-body\"></tbody></table>\n"
"<button id=\"sources-more\">Show more</button>\n"
"<section id=\"timeline-section\"><h2>Timeline</h2>\n"
"<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" "
"height=\"400\"></svg>\n<p id=\"timeline-note\" class=\"note\"></p>"
"</section>\n"
"<section id=\"temp-section\"><h2>Temporary allocations</h2>\n"
"<p id=\"temp-note\" class=\"note\"></p>\n<table id=\"temp\"><thead><tr>"
"<th class=\"label\">Source</th><th>Temporary blocks</th><th>Blocks made"
"</th><th>Temporary B</th><th>B made</th><th>Share</th></tr></thead>"
"<tbody id=\"temp-body\"></tbody></table></section>\n"
"<section id=\"aliases-section\"><h2>Aliases</h2><div id=\"aliases\">"
"</div></section>\n"
"<script id=\"data\" type=\"application/json\">";

/* -- Data ----------------------------------------------------------------- */

/* Labels of the tree, each once, by index. */
typedef struct labels {
  mp_hash map;		/* Hash of a label -> its index. */
  const char **s;
  uint32_t n, cap;
} labels;

/* The index of label s, added on first sight; UINT32_MAX when out of
** memory. */
static uint32_t label_id(labels *l, const char *s)
{
  uint64_t h = mp_hash_bytes(s, strlen(s));
  mp_hash_iter it;
  uint32_t *v;
  for (v = mp_hash_first(&l->map, h, &it); v; v = mp_hash_next(&l->map, &it))
    if (!strcmp(l->s[*v], s)) return *v;
  if (l->n == l->cap) {
    uint32_t cap = l->cap ? l->cap * 2 : 256;
    const char **a = realloc(l->s, (size_t)cap * sizeof(*a));
    if (!a) return UINT32_MAX;
    l->s = a;
    l->cap = cap;
  }
  if (mp_hash_insert(&l->map, h, l->n) < 0) return UINT32_MAX;
  l->s[l->n] = s;
  return l->n++;
}

/* Inclusive costs of a node: alloc, live and peak (n and bytes), on up to
** two sides. */
typedef struct incl {
  mp_cost c[2][3];
} incl;

/* Write the tree t (pruned) as the "tree" field; base: the other side's
** costs of a diff, or NULL. 0, or -1 when out of memory. */
static int json_tree(FILE *out, const mp_stacktree *t, const mp_dnode *base)
{
  mp_walk w;
  incl *in = NULL;
  uint32_t *ids = NULL, i, k;
  labels l;
  int rc = -1, sides = base ? 2 : 1, s, m;
  memset(&l, 0, sizeof(l));
  mp_hash_init_map(&l.map);
  if (mp_walk_build(&w, t) < 0) return -1;
  if (!(in = calloc((size_t)t->n + 1, sizeof(*in))) ||
      !(ids = malloc(((size_t)w.n + 1) * sizeof(*ids))))
    goto done;
  for (k = 0; k < t->n; k++) {
    in[k].c[0][0] = t->node[k].alloc;
    in[k].c[0][1] = t->node[k].live;
    in[k].c[0][2] = t->node[k].peak;
    if (base) {
      in[k].c[1][0] = base[k].alloc;
      in[k].c[1][1] = base[k].live;
      in[k].c[1][2] = base[k].peak;
    }
  }
  for (i = w.n; i-- > 1;) {	/* Children before their parents. */
    incl *x = &in[w.node[i]], *p = &in[t->node[w.node[i]].parent];
    for (s = 0; s < sides; s++)
      for (m = 0; m < 3; m++) mp_cost_add(&p->c[s][m], &x->c[s][m]);
  }
  fputs(",\n\"tree\":{\"nodes\":[", out);
  for (i = 0; i < w.n;) {
    const mp_tnode *x = &t->node[w.node[i]];
    const incl *c = &in[w.node[i]];
    int keep = i == 0;
    for (s = 0; s < sides && !keep; s++)
      for (m = 0; m < 3 && !keep; m++)
	keep = (unsigned __int128)c->c[s][m].plus * FLAME_PX >=
	       in[0].c[s][m].plus && c->c[s][m].plus;
    if (!keep) {	/* Its cost stays in its caller's width. */
      i = mp_walk_skip(&w, i);
      continue;
    }
    if ((ids[i] = label_id(&l, x->label ? x->label : "all")) == UINT32_MAX)
      goto done;
    fprintf(out, "%s[%u,%u,%u", i ? ",\n" : "", w.depth[i], x->kind, ids[i]);
    for (s = 0; s < sides; s++)
      for (m = 0; m < 3; m++)
	fprintf(out, ",%llu,%llu", (unsigned long long)c->c[s][m].plus,
		(unsigned long long)c->c[s][m].n);
    fputc(']', out);
    i++;
  }
  fputs("],\n\"labels\":[", out);
  for (k = 0; k < l.n; k++) {
    if (k) fputc(',', out);
    mp_json_cstr(out, l.s[k]);
  }
  fprintf(out, "],\"stacks\":%s}", t->stacks ? "true" : "false");
  rc = 0;
done:
  mp_walk_free(&w);
  mp_hash_free(&l.map);
  free(l.s);
  free(in);
  free(ids);
  return rc;
}

/* The "files" and "aliases" fields. */
static void json_files(FILE *out, const mp_render_opts *o)
{
  int i;
  fputs(",\"files\":[", out);
  if (o->nfiles < 1) mp_json_cstr(out, o->file ? o->file : "");
  for (i = 0; i < o->nfiles; i++) {
    if (i) fputc(',', out);
    mp_json_cstr(out, o->files[i]);
  }
  fputc(']', out);
}

static void json_aliases(FILE *out, const mp_strtab *names)
{
  uint32_t i;
  fputs(",\n\"aliases\":[", out);
  for (i = 1; i < names->nalias; i++) {
    fprintf(out, "%s[\"function_alias_%u\",", i > 1 ? "," : "", i);
    mp_json_name(out, mp_strtab_get(names, names->alias[i]), MP_NAME_KEEP);
    fputc(']', out);
  }
  fputc(']', out);
}

/* The timeline of p, or null. */
static void json_timeline(FILE *out, const mp_profile *p)
{
  const mp_timeline *t = p->tl;
  uint32_t i;
  if (!t || p->merged) {
    fputs(",\n\"timeline\":null", out);
    return;
  }
  fprintf(out, ",\n\"timeline\":{\"width\":%llu,\"points\":[",
	  (unsigned long long)t->width);
  for (i = 0; i < t->n; i++) {
    const mp_tpoint *x = &t->pt[i];
    fprintf(out, "%s[%llu,%llu,%llu,%llu,%llu,%llu,%llu]", i ? "," : "",
	    (unsigned long long)x->ev, (unsigned long long)x->last,
	    (unsigned long long)x->max, (unsigned long long)x->min,
	    (unsigned long long)x->alloc_n, (unsigned long long)x->alloc_bytes,
	    (unsigned long long)x->free_bytes);
  }
  fputs("],\"marks\":[", out);
  for (i = 0; i < t->nmark; i++)
    fprintf(out, "%s[%llu,%llu]", i ? "," : "",
	    (unsigned long long)t->mark[i].ev,
	    (unsigned long long)t->mark[i].ns);
  if (t->marked && (!t->nmark || t->mark[t->nmark - 1].ev != t->last.ev))
    fprintf(out, "%s[%llu,%llu]", t->nmark ? "," : "",
	    (unsigned long long)t->last.ev, (unsigned long long)t->last.ns);
  fputs("]}", out);
}

/* A JSON number, or null for UINT64_MAX (unknown). */
static void json_maybe(FILE *out, const char *field, uint64_t v)
{
  if (v == UINT64_MAX) fprintf(out, ",\"%s\":null", field);
  else fprintf(out, ",\"%s\":%llu", field, (unsigned long long)v);
}

/* The "trace_lines" field: under each trace of a stack profile, the lines
** inside its code with their allocations and reallocations. */
static int json_trace_lines(FILE *out, const mp_sections *sec,
			    const mp_stacktree *t)
{
  const mp_profile *p = sec->p;
  uint32_t i, j, n;
  int first = 1;
  fputs(",\n\"trace_lines\":{", out);
  for (i = 0; t->stacks && i < p->nsite; i++) {
    mp_tline *a;
    if (p->site[i].loc.src != MP_SRC_TRACE) continue;
    if (mp_trace_lines(t, i, &a, &n) < 0) return -1;
    if (!n) continue;
    fputs(first ? "\n" : ",\n", out);
    first = 0;
    mp_json_cstr(out, sec->label[i]);
    fputs(":[", out);
    for (j = 0; j < n; j++) {
      fputs(j ? ",[" : "[", out);
      mp_json_cstr(out, a[j].label);
      fprintf(out, ",%llu,%llu]", (unsigned long long)a[j].c.plus,
	      (unsigned long long)a[j].c.n);
    }
    fputc(']', out);
    free(a);
  }
  fputc('}', out);
  return 0;
}

/* The data of a report. */
static int json_report(FILE *out, const mp_sections *sec,
		       const mp_render_opts *o)
{
  const mp_profile *p = sec->p;
  mp_live *by = mp_profile_by_site(p);
  uint64_t *held = calloc((size_t)p->nsite + 1, sizeof(*held));
  mp_stacktree t;
  uint32_t i;
  int rc, first = 1;
  if (!by || !held || mp_stacktree_build(&t, sec) < 0) {
    free(by);
    free(held);
    return -1;
  }
  for (i = 0; o->tarantool && i < sec->nheld; i++)	/* Else by[i].bytes. */
    held[sec->held[i].site] = mp_held_bytes(&sec->held[i]);
  for (i = 0; !o->tarantool && i < p->nsite; i++) held[i] = by[i].bytes;
  fputs("{\"kind\":\"report\"", out);
  json_files(out, o);
  fprintf(out, ",\n\"summary\":{\"complete\":%s,\"truncated_at\":%zu,"
	  "\"versions\":[%d,%d],\"version_note\":",
	  p->rc == MP_END ? "true" : "false", p->rc == MP_END ? 0 :
	  p->r.err_offset, p->r.ljs_version, p->r.ljm_version);
  mp_json_cstr(out, mp_version_note(p->r.ljm_version));
  fprintf(out, ",\"profiles\":%u,\"recorded_events\":%llu,"
	  "\"alloc_events\":%llu,\"realloc_events\":%llu,\"free_events\":%llu,"
	  "\"alloc_bytes\":%llu,\"free_bytes\":%llu,\"live_bytes\":%llu,"
	  "\"live_blocks\":%llu,\"peak_bytes\":%llu,\"peak_blocks\":%llu",
	  p->merged,
	  (unsigned long long)p->nev,
	  (unsigned long long)p->total[MP_AEV_ALLOC].n,
	  (unsigned long long)p->total[MP_AEV_REALLOC].n,
	  (unsigned long long)p->total[MP_AEV_FREE].n,
	  (unsigned long long)mp_profile_allocated(p),
	  (unsigned long long)mp_profile_freed(p),
	  (unsigned long long)p->live_bytes, (unsigned long long)p->live_n,
	  (unsigned long long)p->peak_bytes,
	  (unsigned long long)p->peak_blocks);
  json_maybe(out, "peak_event", p->merged > 1 ? UINT64_MAX : p->peak_ev);
  json_maybe(out, "peak_ns", p->merged > 1 ? UINT64_MAX :
				mp_profile_peak_ns(p));
  json_maybe(out, "duration_ns", p->nmark && p->merged < 2 ? p->mark.ns :
				    UINT64_MAX);
  fprintf(out, ",\"collected\":%s,\"stopped\":", p->collect ? "true" : "false");
  if (p->stopped[0]) mp_json_cstr(out, p->stopped);
  else fputs("null", out);
  fprintf(out, ",\"sample\":%.0f,\"rates\":", mp_render_rate(p));
  if (p->sample && !mp_render_rate(p)) {	/* Different rates. */
    for (i = 0; i < p->merged; i++)
      fprintf(out, "%c%.0f", i ? ',' : '[', p->rates[i]);
    fputc(']', out);
  } else {
    fputs("null", out);
  }
  fprintf(out, ",\"accounting\":\"%s\"", o->tarantool ? "tarantool" : "live");
  fprintf(out, ",\"stacks\":%u,\"has_peak\":%s,"
	  "\"window\":%u,\"temp_blocks\":%llu,\"temp_bytes\":%llu,"
	  "\"made_blocks\":%llu,\"made_bytes\":%llu}",
	  p->stacks ? p->stacks : (unsigned)t.stacks, mp_profile_has_peak(p) ?
	  "true" :
	  "false", p->window, (unsigned long long)sec->temp_total.n,
	  (unsigned long long)sec->temp_total.plus,
	  (unsigned long long)sec->made_total.n,
	  (unsigned long long)sec->made_total.plus);
  fputs(",\n\"sources\":[", out);
  for (i = 0; i < p->nsite; i++) {
    const mp_site *s = &p->site[i];
    const mp_live *l = &by[i];
    uint64_t an = s->n[MP_AEV_ALLOC] + s->n[MP_AEV_REALLOC];
    uint64_t ab = s->plus[MP_AEV_ALLOC] + s->plus[MP_AEV_REALLOC];
    uint64_t fn = s->n[MP_AEV_REALLOC] + s->n[MP_AEV_FREE];
    uint64_t fb = s->minus[MP_AEV_REALLOC] + s->minus[MP_AEV_FREE];
    if (!(an | fn | held[i] | l->n | l->pn)) continue;
    fputs(first ? "\n[" : ",\n[", out);
    first = 0;
    mp_json_cstr(out, sec->label[i]);
    fprintf(out, ",\"%s\",%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,"
	    "%llu]", mp_src_name(s->loc.src),
	    (unsigned long long)ab, (unsigned long long)an,
	    (unsigned long long)fb, (unsigned long long)fn,
	    (unsigned long long)held[i], (unsigned long long)l->bytes,
	    (unsigned long long)l->n, (unsigned long long)l->pbytes,
	    (unsigned long long)l->pn, (unsigned long long)l->tbytes,
	    (unsigned long long)l->tn);
  }
  fputc(']', out);
  if (json_trace_lines(out, sec, &t) < 0) {
    rc = -1;
    goto out;
  }
  rc = json_tree(out, &t, NULL);
  json_timeline(out, p);
  json_aliases(out, &p->syms.names);
  fputs("}", out);
out:
  mp_stacktree_free(&t);
  free(by);
  free(held);
  return rc;
}

/* A side's costs of a diff row as JSON numbers. */
static void json_dcost(FILE *out, const mp_dcost *c)
{
  fprintf(out, "%llu,%llu,%llu,%llu,%llu,%llu",
	  (unsigned long long)c->alloc.plus, (unsigned long long)c->alloc.n,
	  (unsigned long long)c->freed.minus, (unsigned long long)c->freed.n,
	  (unsigned long long)c->live.plus, (unsigned long long)c->live.n);
}

/* The data of a diff. */
static int json_diff(FILE *out, const mp_diff *d, const mp_render_opts *o)
{
  uint32_t i;
  fputs("{\"kind\":\"diff\"", out);
  json_files(out, o);
  fprintf(out, ",\n\"summary\":{\"changed\":%u,\"unchanged\":%u,"
	  "\"has_peak\":%s,\"complete\":[%s,%s],\"base\":[", d->nrow,
	  d->nsame, d->peak ? "true" : "false", d->cut[0] ? "false" : "true",
	  d->cut[1] ? "false" : "true");
  json_dcost(out, &d->total.side[0]);
  fputs("],\"new\":[", out);
  json_dcost(out, &d->total.side[1]);
  fputs("]}", out);
  fputs(",\n\"sources\":[", out);
  for (i = 0; i < d->nrow; i++) {
    const mp_drow *r = &d->row[i];
    fputs(i ? ",\n[" : "\n[", out);
    mp_json_cstr(out, d->sec.label[r->site]);
    fprintf(out, ",\"%s\",", mp_src_name(d->m.site[r->site].loc.src));
    json_dcost(out, &r->side[0]);
    fputc(',', out);
    json_dcost(out, &r->side[1]);
    fputc(']', out);
  }
  fputc(']', out);
  if (json_tree(out, &d->tree, d->base) < 0) return -1;
  json_timeline(out, &d->m);
  json_aliases(out, &d->m.syms.names);
  fputs("}", out);
  return 0;
}

/* -- The page ------------------------------------------------------------- */

/* Write the page around data (len bytes of JSON), '<' in it as \u003c. */
static int page(FILE *out, const char *data, size_t len)
{
  size_t i, j;
  fputs(page_head, out);
  fputs(style, out);
  fputs(page_body, out);
  for (i = j = 0; i < len; i++)
    if (data[i] == '<') {
      fwrite(data + j, 1, i - j, out);
      fputs("\\u003c", out);
      j = i + 1;
    }
  fwrite(data + j, 1, len - j, out);
  fputs("</script>\n<script>\n", out);
  fputs(script, out);
  fputs("</script>\n</body></html>\n", out);
  return ferror(out) ? -1 : 0;
}

/* Write the data with fn into memory, then the page; 0 or -1. */
static int with_data(FILE *out, int (*fn)(FILE *, const void *,
					  const mp_render_opts *),
		     const void *what, const mp_render_opts *o)
{
  char *data = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&data, &len);
  int rc;
  if (!m) return -1;
  rc = fn(m, what, o);
  if (fclose(m) != 0) rc = -1;
  if (rc == 0) rc = page(out, data, len);
  free(data);
  return rc;
}

static int report_data(FILE *m, const void *sec, const mp_render_opts *o)
{
  return json_report(m, sec, o);
}

static int diff_data(FILE *m, const void *d, const mp_render_opts *o)
{
  return json_diff(m, d, o);
}

int mp_render_html(FILE *out, const mp_sections *sec, const mp_render_opts *o)
{
  return with_data(out, report_data, sec, o);
}

int mp_render_diff_html(FILE *out, const mp_diff *d, const mp_render_opts *o)
{
  return with_data(out, diff_data, d, o);
}
