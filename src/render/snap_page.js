'use strict';
var D = JSON.parse(document.getElementById('data').textContent);
var R = D.report, REC = R.recording || null;

function $(id) { return document.getElementById(id); }
function make(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function num(n) { return Math.round(n).toLocaleString('en-US'); }
function human(n) {
  var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
  while (n >= 1023.995 && i < 4) { n /= 1024; i++; }
  return (i ? n.toFixed(2) : n) + ' ' + u[i];
}
function bytes(n) { return num(n) + ' B'; }
function pct(a, b) { return b ? (100 * a / b).toFixed(0) + '%' : '0%'; }
function row(tbody, cells) {
  var tr = make('tr');
  cells.forEach(function (c) {
    var td = make('td', c[1] || '');
    /* A label may be cut (ellipsis): its full text is in its title. */
    if (c[1] == 'label') {
      td.appendChild(make('div', '', c[0]));
      if (c[0]) td.title = c[2] || c[0];
    } else td.textContent = c[0];
    if (c[2]) td.title = c[2];
    tr.appendChild(td);
  });
  tbody.appendChild(tr);
  return tr;
}

/* -- Summary -------------------------------------------------------------- */

function summary() {
  var t = $('summary'), acc = R.bytes + R.vm_bytes + R.unreached_bytes, rows = [];
  document.title = 'ljmemprof snapshot: ' + D.file;
  $('title').textContent = 'ljmemprof snapshot: ' + D.file;
  rows.push(['Objects', num(R.objects)]);
  rows.push(['Live', bytes(R.bytes) + ' (' + human(R.bytes) + ')']);
  rows.push(['The VM counts', bytes(R.gc_total) + ': objects ' + bytes(R.bytes) +
             ' + VM internals ' + bytes(R.vm_bytes) + ' + not reached ' +
             bytes(R.unreached_bytes) + ' in ' + num(R.unreached) + ' objects' +
             (acc == R.gc_total ? ' (exact)' : ' (' + (acc < R.gc_total ? '+ ' : '- ') +
              bytes(Math.abs(R.gc_total - acc)) + ' unaccounted)')]);
  if (R.weak_only)
    rows.push(['Reached only through weak references', num(R.weak_only) +
               ' objects, ' + bytes(R.weak_only_bytes)]);
  rows.push(['Complete', R.cut ? 'no: cut short at max_size, objects are missing' : 'yes']);
  if (REC)
    rows.push(['Made within the recording', num(REC.made_objects) + ' of ' +
               num(R.objects) + ' objects, ' + bytes(REC.made_bytes) + ' of ' +
               bytes(R.bytes) + ' (' + REC.profile + ', marked after event ' +
               num(REC.marked_after_event) + ')']);
  rows.forEach(function (r) {
    var tr = make('tr');
    tr.appendChild(make('td', '', r[0]));
    tr.appendChild(make('td', '', r[1]));
    t.appendChild(tr);
  });
}

function types() {
  var b = $('types-body');
  R.types.forEach(function (t) {
    row(b, [[t.type, 'label'], [num(t.count)], [bytes(t.bytes)], [pct(t.bytes, R.bytes)]]);
  });
}

/* -- Retainers, and what the recording says of them ----------------------- */

function retainers() {
  var head = make('tr'), b = $('retainers-body'), made = {};
  ['Retained', 'Self', 'Type', 'Path from a root'].concat(REC ?
    ['Made within the recording', 'Lines that made it'] : []).forEach(function (h, i) {
    head.appendChild(make('th', i == 2 || i == 3 || i == 5 ? 'label' : '', h));
  });
  $('retainers-head').appendChild(head);
  if (REC) REC.retainers.forEach(function (r) { made[r.retainer] = r; });
  R.retainers.forEach(function (r, i) {
    var cells = [[bytes(r.retained)], [bytes(r.self)], [r.type, 'label'],
                 [r.path, 'label', r.path]];
    if (REC) {
      var m = made[i];
      cells.push([m ? bytes(m.made_bytes) : '0 B']);
      cells.push([m ? m.lines.map(function (l) {
        return l.line + ': ' + bytes(l.bytes);
      }).join('; ') : '', 'label']);
    }
    row(b, cells).setAttribute('data-i', i);
  });
}

function made() {
  var b = $('made-body');
  if (!REC) { $('made-section').style.display = 'none'; return; }
  $('made-note').textContent = num(REC.made_objects) + ' of ' + num(R.objects) +
    ' objects, ' + bytes(REC.made_bytes) + ' of ' + bytes(R.bytes) +
    ' were made (allocated, or resized last) within the recording ' + REC.profile +
    '; the lines that made them, by the bytes still live.';
  if (!REC.lines.length)
    row(b, [[''], [''], ['none: every object was made before the recording', 'label'], [''], ['', 'label']]);
  REC.lines.forEach(function (l) {
    var who = l.held_by === null ? null : R.retainers[l.held_by];
    row(b, [[bytes(l.bytes)], [num(l.objects)], [l.line, 'label'],
            [who ? pct(l.held_bytes, l.bytes) : ''],
            [who ? who.path : 'none of the top retainers', 'label', who ? who.path : '']]);
  });
}

function classes() {
  var b = $('classes-body');
  if (!R.classes.length) row(b, [['none', 'label'], [''], ['', 'label'], ['']]);
  R.classes.forEach(function (c) {
    row(b, [[c.path, 'label', c.path], [num(c.count)], [c.type, 'label'], [bytes(c.retained)]]);
  });
}

/* -- The dominator tree --------------------------------------------------- */

var T = D.tree, KIDS = T.map(function () { return []; });
T.forEach(function (n, i) { if (n[0] >= 0) KIDS[n[0]].push(i); });

/* The row of node i, its children made when it is first opened. */
function node(i) {
  var n = T[i], box = make('div', 'dnode'), line = make('div', 'dline'),
      total = T[0][4] || 1, kids = null;
  var open = make('span', 'dtoggle', KIDS[i].length ? '\u25B8' : '\u00B7');
  line.appendChild(open);
  var bar = make('span', 'dbar'), barbox = make('span', 'dbarbox');
  bar.style.width = Math.max(1, Math.round(120 * n[4] / total)) + 'px';
  barbox.appendChild(bar);
  line.appendChild(barbox);
  line.appendChild(make('span', 'dnum', bytes(n[4])));
  line.appendChild(make('span', 'dnum', pct(n[4], total)));
  line.appendChild(make('span', 'dtype', n[2]));
  line.appendChild(make('span', 'dpath', n[7])).title = n[7];
  line.setAttribute('data-i', i);
  box.appendChild(line);
  function toggle() {
    $('tree-info').textContent = n[7] + ': ' + n[2] + ', self ' + bytes(n[3]) +
      ', retains ' + bytes(n[4]);
    if (!KIDS[i].length) return;
    if (!kids) {
      kids = make('div', 'dkids');
      KIDS[i].forEach(function (k) { kids.appendChild(node(k)); });
      if (n[5]) kids.appendChild(make('div', 'dmore', '... ' + num(n[5]) +
        ' more retaining ' + bytes(n[6])));
      box.appendChild(kids);
    } else {
      kids.style.display = kids.style.display == 'none' ? '' : 'none';
    }
    open.textContent = kids.style.display == 'none' ? '\u25B8' : '\u25BE';
  }
  line.addEventListener('click', toggle);
  box.toggle = toggle;
  return box;
}

function tree() {
  var root = node(0);
  $('tree').appendChild(root);
  root.toggle();
  $('tree-info').textContent = ' ';
}

summary();
types();
retainers();
made();
classes();
tree();
document.body.setAttribute('data-ready', '1');
