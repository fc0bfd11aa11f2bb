/*
** render_svg.c: the call-stack tree as a flame graph, one SVG file that
** needs nothing else: open it in a browser.
**
** The root ("all") spans the width and stands for the metric's total; each
** frame sits on its caller and is as wide as what it and its callees cost.
** Siblings are in the byte order of their labels (mp_walk.h). Colours say
** the kind of frame: Lua warm orange, builtins yellow-green, C blue,
** traces purple, the host and the VM grey, cut stacks pale red; the shade
** varies with the name so neighbours stand apart.
**
** Size: a frame narrower than MIN_PX pixels at full width is not drawn (it
** stays in its caller's width): at most (width / MIN_PX) frames a level,
** whatever the number of stacks. Every drawn frame is a <g> with a
** <title> (the tooltip: name, bytes, count, percent, and its own cost),
** its <rect> and, when it fits, its <text>.
**
** The script (no library) zooms on a click (the frame spans the width, its
** callers stay under it, faded), resets, searches with a regular
** expression (matches turn magenta; "Matched" is their share of the total,
** nested matches counted once), and shows the frame under the mouse in the
** line at the bottom. Without scripts (an <img> on a web page) the graph
** and its tooltips still show.
*/

#include <stdlib.h>
#include <string.h>

#include "render/mp_render.h"
#include "render/mp_text.h"
#include "render/mp_walk.h"

#define WIDTH	1200	/* Image width, px. */
#define PAD	10	/* Left and right margins. */
#define FRAME_H	16	/* Height of a level. */
#define TOP	58	/* Title, buttons and legend. */
#define BOTTOM	28	/* The details line. */
#define CHAR_W	7.3	/* Width of a character of the 12px monospace font. */
#define MIN_PX	0.1	/* Frames narrower than this are not drawn. */
#define STR_(x)	#x
#define STR(x)	STR_(x)

/* Kind names for the legend and colours: hue, hue spread, saturation, and
** lightness, by MP_FK_* (0: the root). */
static const struct {
  const char *name;
  int hue, spread, sat, light;
} kinds[9] = {
  { "all", 0, 0, 0, 80 },
  { "Lua", 14, 30, 80, 60 },
  { "builtin", 58, 22, 65, 52 },
  { "C", 195, 25, 55, 62 },
  { "trace", 275, 25, 45, 66 },
  { "host", 0, 0, 0, 72 },
  { "cut", 355, 8, 55, 84 },
  { "VM", 0, 0, 0, 64 },
  { "native", 120, 20, 50, 55 },	/* Not in the legend: labelled. */
};

static const char script[] =
"'use strict';\n"
"var NS = 'http://www.w3.org/2000/svg', W = " STR(WIDTH) ", P = " STR(PAD)
  ", CW = " STR(CHAR_W) ", FH = " STR(FRAME_H) ";\n"
"var F = [], query = '', details, matched;\n"
"function init() {\n"
"  var fr = document.getElementById('frames'), gs = fr.children, open = [];\n"
"  var i, base = 0;\n"
"  details = document.getElementById('details');\n"
"  matched = document.getElementById('matched');\n"
"  for (i = 0; i < gs.length; i++) {\n"
"    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
"    var tip = g.getElementsByTagName('title')[0].textContent;\n"
"    var f = { i: i, g: g, r: r, t: g.getElementsByTagName('text')[0],\n"
"      x: +r.getAttribute('x'), w: +r.getAttribute('width'),\n"
"      y: +r.getAttribute('y'), fill: r.getAttribute('fill'),\n"
"      label: tip.split('\\n')[0], tip: tip.replace(/\\n/g, '  |  ') };\n"
"    if (!i) base = f.y;\n"
"    f.d = Math.round((base - f.y) / FH);\n"
"    while (open.length && open[open.length - 1].d >= f.d) open.pop().end = i;\n"
"    open.push(f);\n"
"    g._i = i;\n"
"    F.push(f);\n"
"  }\n"
"  while (open.length) open.pop().end = F.length;\n"
"  fr.addEventListener('click', function (e) {\n"
"    var f = hit(e); if (f) zoom(f); });\n"
"  fr.addEventListener('mouseover', function (e) {\n"
"    var f = hit(e); if (f) details.textContent = f.tip; });\n"
"  fr.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
"  document.addEventListener('keydown', function (e) {\n"
"    if ((e.ctrlKey || e.metaKey) && e.key == 'f') { e.preventDefault(); search(); }\n"
"    else if (e.key == 'Escape') { reset(); mark(''); }\n"
"  });\n"
"}\n"
"function hit(e) {\n"
"  var g = e.target;\n"
"  while (g && g._i === undefined) g = g.parentNode;\n"
"  return g ? F[g._i] : null;\n"
"}\n"
"function place(f, x, w) {\n"
"  var n = Math.floor((w - 6) / CW), s = '';\n"
"  f.r.setAttribute('x', x.toFixed(2));\n"
"  f.r.setAttribute('width', w.toFixed(2));\n"
"  if (n >= 3) s = f.label.length <= n ? f.label : f.label.slice(0, n - 2) + '..';\n"
"  if (!f.t) {\n"
"    if (!s) return;\n"
"    f.t = document.createElementNS(NS, 'text');\n"
"    f.t.setAttribute('y', f.y + 11.5);\n"
"    f.g.appendChild(f.t);\n"
"  }\n"
"  f.t.setAttribute('x', (x + 3).toFixed(2));\n"
"  f.t.textContent = s;\n"
"}\n"
"function zoom(z) {\n"
"  var s = (W - 2 * P) / z.w;\n"
"  F.forEach(function (f, i) {\n"
"    var inside = i >= z.i && i < z.end, under = i < z.i && f.end > z.i;\n"
"    f.g.style.display = inside || under ? '' : 'none';\n"
"    f.g.classList.toggle('anc', under);\n"
"    if (inside) place(f, P + (f.x - z.x) * s, f.w * s);\n"
"    else if (under) place(f, P, W - 2 * P);\n"
"  });\n"
"}\n"
"function reset() {\n"
"  F.forEach(function (f) {\n"
"    f.g.style.display = '';\n"
"    f.g.classList.remove('anc');\n"
"    place(f, f.x, f.w);\n"
"  });\n"
"}\n"
"function search() {\n"
"  var q = prompt('Search frames (a regular expression; empty clears)', query);\n"
"  if (q !== null) mark(q);\n"
"}\n"
"function mark(q) {\n"
"  var re = null, tot = 0, until = 0;\n"
"  if (q) {\n"
"    try { re = new RegExp(q); } catch (e) { alert(e.message); return; }\n"
"  }\n"
"  query = q;\n"
"  F.forEach(function (f, i) {\n"
"    var m = re !== null && i > 0 && re.test(f.label);\n"
"    f.r.setAttribute('fill', m ? '#e040e0' : f.fill);\n"
"    if (m && i >= until) { tot += f.w; until = f.end; }\n"
"  });\n"
"  matched.textContent = re ? 'Matched: ' +\n"
"    (100 * tot / F[0].w).toFixed(1) + '%' : '';\n"
"}\n";

static const char style[] =
"text { font: 12px monospace; fill: #000; }\n"
"#frames text { pointer-events: none; }\n"
"#frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
"#frames .anc { opacity: 0.5; }\n"
".title { font-size: 16px; }\n"
".btn { cursor: pointer; text-decoration: underline; }\n";

/* Inclusive costs of a node: what it and its callees cost. */
typedef struct incl {
  uint64_t bytes, count;
} incl;

/* v with thousands separators into buf (28 bytes). */
static const char *commas(char *buf, uint64_t v)
{
  char tmp[24];
  int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v), i, j;
  for (i = 0, j = 0; i < n; i++) {
    if (i && (n - i) % 3 == 0) buf[j++] = ',';
    buf[j++] = tmp[i];
  }
  buf[j] = '\0';
  return buf;
}

/* Columns a label takes when shown, and the bytes of its longest prefix
** that takes at most max columns (*cut). A byte written as \xNN takes 4. */
static size_t columns(const char *s, size_t max, size_t *cut)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t n = strlen(s), i = 0, cols = 0, m;
  *cut = 0;
  while (i < n) {
    size_t w = 1;
    m = 1;
    if (u[i] >= 0x80) {
      m = mp_utf8_len(u + i, n - i);
      if (!m) m = 1, w = 4;
    } else if (u[i] < 0x20 || u[i] == 0x7f) w = 4;
    cols += w;
    i += m;
    if (cols <= max) *cut = i;
  }
  return cols;
}

/* A colour for a frame of kind k called label. */
static void colour(FILE *out, uint8_t k, const char *label)
{
  uint32_t h = 2166136261u;
  double hue, sat, light, c, x, m, r, g, b, hp, d;
  const unsigned char *p;
  if (k >= 9) k = MP_FK_INTERNAL;
  for (p = (const unsigned char *)label; p && *p; p++)
    h = (h ^ *p) * 16777619u;
  hue = kinds[k].hue + kinds[k].spread * (double)(h & 0xff) / 255.0;
  if (hue >= 360) hue -= 360;
  sat = kinds[k].sat / 100.0;
  light = (kinds[k].light + (double)((h >> 8) & 0xf) * 0.7 - 5) / 100.0;
  /* HSL to RGB. */
  d = 2 * light - 1;
  c = (1 - (d < 0 ? -d : d)) * sat;
  hp = hue / 60;
  d = hp - 2 * (int)(hp / 2) - 1;
  x = c * (1 - (d < 0 ? -d : d));
  r = g = b = 0;
  switch ((int)hp) {
  case 0: r = c; g = x; break;
  case 1: r = x; g = c; break;
  case 2: g = c; b = x; break;
  case 3: g = x; b = c; break;
  case 4: r = x; b = c; break;
  default: r = c; b = x; break;
  }
  m = light - c / 2;
  fprintf(out, "#%02x%02x%02x", (int)((r + m) * 255 + 0.5),
	  (int)((g + m) * 255 + 0.5), (int)((b + m) * 255 + 0.5));
}

/* The tooltip of a frame: its label, then its costs (in, out of total),
** then its own cost if it has callees. */
static void tooltip(FILE *out, const mp_tnode *x, const char *label,
		    const incl *in, uint64_t total, mp_metric m)
{
  const mp_cost *c = mp_tnode_cost(x, m);
  uint64_t v = mp_metric_bytes(m) ? in->bytes : in->count;
  uint64_t sb = c->plus, sc = c->n;
  char b1[32], b2[32], hb[32];
  const char *what = mp_metric_what[m | 1];
  mp_text_put(out, label, strlen(label), MP_TEXT_XML);
  fprintf(out, "\n%s bytes (%s), %s %s: %.2f%% of %s",
	  commas(b1, in->bytes), mp_fmt_bytes(hb, sizeof(hb), in->bytes, 1),
	  commas(b2, in->count), what,
	  total ? 100.0 * (double)v / (double)total : 0.0, mp_metric_what[m]);
  if ((sb != in->bytes || sc != in->count) && (sb || sc))
    fprintf(out, "\nitself: %s bytes, %s %s", commas(b1, sb),
	    commas(b2, sc), what);
}

/* One frame: its group, tooltip, rectangle and, if it fits, its text. */
static void frame(FILE *out, const mp_tnode *x, const char *label,
		  const incl *in, uint64_t total, mp_metric m, double fx,
		  double fw, int y)
{
  size_t cut, max = fw > 6 ? (size_t)((fw - 6) / CHAR_W) : 0;
  size_t cols = columns(label, max, &cut);
  fputs("<g><title>", out);
  tooltip(out, x, label, in, total, m);
  fprintf(out, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
	  "height=\"%d\" fill=\"", fx, y, fw, FRAME_H - 1);
  colour(out, x->kind, label);
  fputs("\"/>", out);
  if (max >= 3) {
    if (cols > max) columns(label, max - 2, &cut);
    fprintf(out, "<text x=\"%.2f\" y=\"%.1f\">", fx + 3, y + 11.5);
    mp_text_put(out, label, cols > max ? cut : strlen(label), MP_TEXT_XML);
    fputs(cols > max ? "..</text>" : "</text>", out);
  }
  fputs("</g>\n", out);
}

/* The header: title, buttons, legend, the search result. */
static void header(FILE *out, const mp_render_opts *o)
{
  int k, x = 260;
  fprintf(out, "<text class=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">"
	  "Flame graph of %s", WIDTH / 2, mp_metric_what[o->metric]);
  if (o->program) {	/* What ran (run). */
    fputs(": ", out);
    mp_text_put(out, o->program, strlen(o->program), MP_TEXT_XML);
  } else if (o->file) {	/* Its base name: where it was is not the point. */
    const char *b = strrchr(o->file, '/');
    b = b && b[1] ? b + 1 : o->file;
    fputs(": ", out);
    mp_text_put(out, b, strlen(b), MP_TEXT_XML);
  }
  fputs("</text>\n", out);
  fprintf(out, "<text class=\"btn\" x=\"%d\" y=\"44\" onclick=\"reset()\">"
	  "Reset zoom</text>\n<text class=\"btn\" x=\"%d\" y=\"44\" "
	  "onclick=\"search()\">Search</text>\n", PAD, PAD + 100);
  for (k = 1; k < 8; k++) {
    if (k == MP_FK_HOST) continue;	/* Shown as the VM: both grey. */
    fprintf(out, "<rect x=\"%d\" y=\"34\" width=\"12\" height=\"12\" fill=\"",
	    x);
    colour(out, (uint8_t)k, "");
    fprintf(out, "\"/><text x=\"%d\" y=\"44\">%s</text>\n", x + 16,
	    k == MP_FK_INTERNAL ? "VM, host" : kinds[k].name);
    x += 16 + 8 * (int)strlen(k == MP_FK_INTERNAL ? "VM, host" :
			      kinds[k].name) + 16;
  }
  fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"44\" text-anchor=\"end\">"
	  "</text>\n", WIDTH - PAD);
}

int mp_render_svg_tree(FILE *out, const mp_stacktree *t,
		       const mp_render_opts *o)
{
  mp_walk w;
  incl *in;
  double *xs = NULL, *dx = NULL, scale;
  uint32_t i, maxd = 0, *drawn = NULL, nd = 0;
  uint64_t total, minv;
  int height, bytes;
  if (mp_walk_build(&w, t) < 0) return -1;
  in = calloc(t->n ? t->n : 1, sizeof(*in));
  xs = malloc((size_t)(w.maxdepth + 2) * sizeof(*xs));
  drawn = malloc(((size_t)w.n + 1) * sizeof(*drawn));
  dx = malloc(((size_t)w.n + 1) * sizeof(*dx));
  if (!in || !xs || !drawn || !dx) {
    free(in);
    free(xs);
    free(drawn);
    free(dx);
    mp_walk_free(&w);
    return -1;
  }
  /* What each node and its callees cost: children come after parents in
  ** the walk, so one pass backwards. */
  for (i = w.n; i-- > 0;) {
    uint32_t k = w.node[i];
    const mp_tnode *x = &t->node[k];
    in[k].bytes += mp_tnode_cost(x, o->metric)->plus;
    in[k].count += mp_tnode_cost(x, o->metric)->n;
    if (i) {
      in[x->parent].bytes += in[k].bytes;
      in[x->parent].count += in[k].count;
    }
  }
  bytes = mp_metric_bytes(o->metric);
  total = w.n ? (bytes ? in[0].bytes : in[0].count) : 0;
  scale = total ? (double)(WIDTH - 2 * PAD) / (double)total : 0;
  minv = total ? (uint64_t)((double)total * MIN_PX /
			    (double)(WIDTH - 2 * PAD)) : 0;
  /* Which frames are drawn, and where: a frame starts where its previous
  ** sibling ended (drawn or not), or where its caller starts. Frames
  ** narrower than MIN_PX are left out with their callees. */
  xs[0] = PAD;
  for (i = 0; i < w.n;) {
    uint32_t k = w.node[i], d = w.depth[i];
    uint64_t v = bytes ? in[k].bytes : in[k].count;
    double fx = xs[d];
    xs[d] = fx + (double)v * scale;
    xs[d + 1] = fx;
    if (i && (!v || v < minv)) { i = mp_walk_skip(&w, i); continue; }
    drawn[nd] = i;
    dx[nd++] = fx;
    if (d > maxd) maxd = d;
    i++;
  }
  height = TOP + (int)(maxd + 1) * FRAME_H + BOTTOM;
  fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
	  "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
	  "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	  "onload=\"init()\">\n<style>\n%s</style>\n"
	  "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
	  "<rect width=\"100%%\" height=\"100%%\" fill=\"#fbfbf6\"/>\n",
	  WIDTH, height, WIDTH, height, style, script);
  header(out, o);
  fputs("<g id=\"frames\">\n", out);
  for (i = 0; i < nd; i++) {
    uint32_t pos = drawn[i], k = w.node[pos], d = w.depth[pos];
    const mp_tnode *x = &t->node[k];
    double fw = total ? (double)(bytes ? in[k].bytes : in[k].count) * scale
		      : (double)(WIDTH - 2 * PAD);
    /* Absurd sizes (2^63 bytes and more) wrap the sums: a callee may then
    ** seem wider than the whole. */
    if (fw > WIDTH) fw = WIDTH;
    frame(out, x, d ? (x->label ? x->label : "") : "all", &in[k], total,
	  o->metric, dx[i], fw, height - BOTTOM - (int)(d + 1) * FRAME_H);
  }
  fputs("</g>\n", out);
  fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD,
	  height - 10);
  if (!total)
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">No %s in "
	    "this profile.</text>\n", WIDTH / 2, height / 2, mp_metric_what[o->metric]);
  fputs("</svg>\n", out);
  free(in);
  free(xs);
  free(drawn);
  free(dx);
  mp_walk_free(&w);
  return ferror(out) ? -1 : 0;
}

int mp_render_svg(FILE *out, const mp_sections *sec, const mp_render_opts *o)
{
  return mp_render_with_tree(out, sec, o, mp_render_svg_tree);
}
