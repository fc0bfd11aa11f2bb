/*
** mp_render.c: the registry of renderers and what they share.
*/

#include <stdlib.h>
#include <string.h>

#include "render/mp_render.h"

const mp_renderer mp_renderers[] = {
  { "text", "the layout of Tarantool's memprof parser (default)",
    mp_render_text, 0, mp_render_diff_text },
  { "json", "one JSON object with the same data and each source's details "
    "(docs/REPORT.md)", mp_render_json, 0, mp_render_diff_json },
  { "collapsed", "`frame;frame;... value`, a line per call stack "
    "(flamegraph.pl, speedscope)", mp_render_collapsed,
    MP_RF_STACKS, mp_render_diff_collapsed },
  { "svg", "an interactive flame graph, one SVG file for a browser",
    mp_render_svg, MP_RF_STACKS, NULL },
  { "pprof", "a gzip'd pprof profile.proto (go tool pprof, Pyroscope)",
    mp_render_pprof, MP_RF_STACKS | MP_RF_BINARY, NULL },
  { "html", "one self-contained HTML page: summary, sources, flame graph, "
    "timeline, temporaries", mp_render_html, MP_RF_FULL,
    mp_render_diff_html },
  { NULL, NULL, NULL, 0, NULL }
};

const char *const mp_metric_names[MP_METRIC_N] = {
  "alloc-bytes", "alloc-count", "leak-bytes", "leak-count", "peak-bytes",
  "peak-count"
};

const char *const mp_metric_what[MP_METRIC_N] = {
  "allocated bytes", "allocations", "bytes not freed", "blocks not freed",
  "bytes live at the peak", "blocks live at the peak"
};

int mp_metric_find(const char *name)
{
  int m;
  for (m = 0; m < MP_METRIC_N; m++)
    if (!strcmp(mp_metric_names[m], name)) return m;
  return -1;
}

double mp_render_rate(const mp_profile *p)
{
  uint32_t i;
  if (!p->rates) return p->sample;
  for (i = 1; i < p->merged; i++)
    if (p->rates[i] != p->rates[0]) return 0;
  return p->rates[0];
}

int mp_render_with_tree(FILE *out, const mp_sections *sec,
			const mp_render_opts *o, mp_render_tree_fn fn)
{
  mp_stacktree t;
  int rc;
  if (mp_stacktree_build(&t, sec) < 0) return -1;
  rc = fn(out, &t, o);
  mp_stacktree_free(&t);
  return rc;
}

const uint8_t mp_section_order[3] = {
  MP_AEV_ALLOC, MP_AEV_REALLOC, MP_AEV_FREE
};

const mp_renderer *mp_renderer_find(const char *name)
{
  const mp_renderer *r;
  for (r = mp_renderers; r->name; r++)
    if (!strcmp(r->name, name)) return r;
  return NULL;
}

const char *mp_fmt_bytes(char *buf, size_t size, uint64_t n, int human)
{
  static const char *const unit[] = {
    "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"
  };
  double v = (double)n;
  int u = 0;
  if (!human || n < 1024) {
    snprintf(buf, size, "%lluB", (unsigned long long)n);
    return buf;
  }
  /* A value that %.2f would round up to 1024 takes the next unit. */
  while (v >= 1023.995 && u < 6) { v /= 1024; u++; }
  if (v == (double)(uint64_t)v)
    snprintf(buf, size, "%llu%s", (unsigned long long)v, unit[u]);
  else
    snprintf(buf, size, "%.2f%s", v, unit[u]);
  return buf;
}


const char *mp_fmt_ns(char *buf, size_t size, uint64_t ns)
{
  if (ns < 1000000000ull)
    snprintf(buf, size, "%.3f ms", (double)ns / 1e6);
  else
    snprintf(buf, size, "%.3f s", (double)ns / 1e9);
  return buf;
}

void mp_render_peak_line(FILE *out, const mp_profile *p, int human)
{
  char b[64];
  uint64_t ns = mp_profile_peak_ns(p);
  if (p->merged > 1) {
    fprintf(out, "%s in %llu blocks, the sum of the peaks of %u profiles",
	    mp_fmt_bytes(b, sizeof(b), p->peak_bytes, human),
	    (unsigned long long)p->peak_blocks, p->merged);
    return;
  }
  fprintf(out, "%s in %llu blocks, after event %llu of %llu",
	  mp_fmt_bytes(b, sizeof(b), p->peak_bytes, human),
	  (unsigned long long)p->peak_blocks,
	  (unsigned long long)p->peak_ev, (unsigned long long)p->nev);
  if (ns != UINT64_MAX) {
    fprintf(out, ", at %s", mp_fmt_ns(b, sizeof(b), ns));
    fprintf(out, " of %s", mp_fmt_ns(b, sizeof(b), p->mark.ns));
  }
}

void mp_render_memory_line(FILE *out, const mp_memory *m, int human)
{
  char b[6][64];
  fprintf(out, "RSS %s at the end (at most %s at a time mark): VM heap %s "
	  "and native %s live (allocated within the profile), ",
	  mp_fmt_bytes(b[0], sizeof(b[0]), m->rss, human),
	  mp_fmt_bytes(b[1], sizeof(b[1]), m->rss_max, human),
	  mp_fmt_bytes(b[2], sizeof(b[2]), m->vm, human),
	  mp_fmt_bytes(b[3], sizeof(b[3]), m->native, human));
  if (m->has_mcode)
    fprintf(out, "JIT machine code %s mapped, ",
	    mp_fmt_bytes(b[5], sizeof(b[5]), m->mcode, human));
  fprintf(out, "the rest %s (allocator caches and fragmentation, %sstacks, "
	  "mapped files, and what was allocated before the start)",
	  mp_fmt_bytes(b[4], sizeof(b[4]), m->rest, human),
	  m->has_mcode ? "" : "machine code, ");
}

void mp_render_json_memory(FILE *out, const mp_memory *m)
{
  fprintf(out, ",\"memory\":{\"rss_bytes\":%llu,\"rss_max_bytes\":%llu,"
	  "\"vm_live_bytes\":%llu,\"native_live_bytes\":%llu,",
	  (unsigned long long)m->rss, (unsigned long long)m->rss_max,
	  (unsigned long long)m->vm, (unsigned long long)m->native);
  if (m->has_mcode)	/* Else it is in the rest. */
    fprintf(out, "\"jit_mcode_bytes\":%llu,", (unsigned long long)m->mcode);
  fprintf(out, "\"rest_bytes\":%llu}", (unsigned long long)m->rest);
}

/* Heaviest first, then by label. */
static int tline_cmp(const void *x, const void *y)
{
  const mp_tline *a = x, *b = y;
  if (a->c.plus != b->c.plus) return a->c.plus < b->c.plus ? 1 : -1;
  return strcmp(a->label, b->label);
}

int mp_trace_lines(const mp_stacktree *t, uint32_t site, int live,
		   mp_tline **lines, uint32_t *n)
{
  mp_tline *a = NULL;
  uint32_t cap = 0, i, j, k, hops;
  *lines = NULL;
  *n = 0;
  for (i = 1; i < t->n; i++) {
    const mp_tnode *x = &t->node[i];
    const char *line = NULL;
    int in = 0;
    const mp_cost *xc = live ? &x->live : &x->alloc;
    if (x->site != site || !xc->n) continue;
    for (k = i, hops = 0; k && hops++ < t->n; k = t->node[k].parent) {
      if (t->node[k].kind == MP_FK_TRACE) { in = 1; break; }
      if (!line && t->node[k].kind == MP_FK_LUA)	/* As its source row. */
	line = t->node[k].source ? t->node[k].source : t->node[k].label;
    }
    if (!in) continue;
    if (!line) line = "(the trace alone: no line told)";
    for (j = 0; j < *n && strcmp(a[j].label, line); j++) ;
    if (j == *n) {
      if (*n == cap) {
	mp_tline *g = realloc(a, (cap = cap ? cap * 2 : 8) * sizeof(*a));
	if (!g) { free(a); *n = 0; return -1; }
	a = g;
      }
      memset(&a[*n], 0, sizeof(a[*n]));
      a[(*n)++].label = line;
    }
    a[j].c.n += xc->n;
    a[j].c.plus += xc->plus;
  }
  if (*n) qsort(a, *n, sizeof(*a), tline_cmp);
  *lines = a;
  return 0;
}

int mp_heap_lines(const mp_sections *sec, const mp_render_opts *o)
{
  uint32_t i, n = mp_rows_shown(sec->nlive, o);
  if (o->tarantool || !sec->p->stacks) return 0;
  for (i = 0; i < n; i++)
    if (sec->p->site[sec->live[i].site].loc.src == MP_SRC_TRACE) return 1;
  return 0;
}

/* The stream does not say whether 'ljmemprof run' recorded it, so the
** note is true of both: run's collection is at lua_close(), which a
** plain os.exit() never reaches. */
const char mp_note_uncollected[] =
  "the profile notes no full garbage collection before its end: what is "
  "held may be garbage never collected (to see only what is reachable, "
  "record with mp.stop{collect = true} or 'ljmemprof run', whose "
  "collection runs as the Lua state closes: a script that ends with "
  "os.exit(code) skips it, os.exit(code, true) closes the state)";

/* A collection was asked for (start{collect = true}, LJMEMPROF's
** collect=yes, run), but the process exited without closing its Lua
** state, so it could not run. */
const char mp_note_exited[] =
  "a full garbage collection was asked for before the end, but the "
  "process exited without closing its Lua state (lua_close: a host that "
  "exits without it, os.exit(code) without true), so none ran: what is "
  "held may be garbage never collected (stop the profiler from Lua "
  "before the exit: require(\"ljmemprof\").stop{collect = true}; a "
  "script can end with os.exit(code, true), which closes the state)";

const char *mp_note_nogc(const mp_profile *p)
{
  return p->exited ? mp_note_exited : mp_note_uncollected;
}

/* The agent's collection did not run, but the collector had finished a
** cycle with nothing allocated since: what is held survived it. */
const char mp_note_settled[] =
  "no collection ran at the stop, but the collector had just finished a "
  "cycle and nothing was allocated after it (as after the program's own "
  "collectgarbage()): what is held survived that collection";

const char *mp_note_closefin(char *buf, size_t size, unsigned n)
{
  snprintf(buf, size, "the recording ended as the VM closed (lua_close), "
	   "which ran %u userdata finaliser%s first: what %s freed shows as "
	   "freed, though the program still held it when it ended (a module's "
	   "buffers, what a __gc cleared); to record what it held, end the "
	   "script with require(\"ljmemprof\").stop{collect = true}", n,
	   n == 1 ? "" : "s", n == 1 ? "it" : "they");
  return buf;
}

const char *mp_note_cut(char *buf, size_t size, const mp_profile *p)
{
  const char *what = p->rc == MP_ERR_TRUNC ? "cut short" :
		     p->rc == MP_ERR_IO ? "unreadable" : "damaged";
  snprintf(buf, size, "%s %s at byte %zu, after %llu event%s: its frees "
	   "after that are missing, so what is held is an upper bound (the "
	   "blocks made before the cut that the program still held, and "
	   "those it freed later)", p->merged > 1 ? "a merged profile is" :
	   "the profile is", what, p->r.err_offset,
	   (unsigned long long)p->nev, p->nev == 1 ? "" : "s");
  return buf;
}

const char *mp_note_native_unseen(char *buf, size_t size, uint64_t n)
{
  snprintf(buf, size, "%llu free%s or resize%s of native blocks "
	   "allocated before the recording started (not counted)",
	   (unsigned long long)n, n == 1 ? "" : "s", n == 1 ? "" : "s");
  return buf;
}

const char *mp_note_native_lost(char *buf, size_t size, uint64_t n)
{
  snprintf(buf, size, "%llu native event%s lost: the agent could not keep "
	   "%s (out of memory, or other threads' queue full while the VM's "
	   "thread took none); native figures are short by %s",
	   (unsigned long long)n, n == 1 ? "" : "s", n == 1 ? "it" : "them",
	   n == 1 ? "it" : "them");
  return buf;
}

void mp_render_json_native(FILE *out, const mp_profile *p)
{
  if (p->native)
    fprintf(out, ",\"native_unseen\":%llu,\"native_lost\":%llu",
	    (unsigned long long)p->native_unseen,
	    (unsigned long long)p->native_lost);
}

/* The note of a profile with call stacks (tree t) whose traces made 1%
** or more of the bytes allocated without a line: events whose innermost
** frame is the trace (mp_traceline.c could not tell which of several
** lines made them), which only a profile with the JIT off tells. */
static void trace_alone_note(const mp_sections *sec, const mp_stacktree *t,
			     int human,
			     void (*fn)(void *ctx, const char *line),
			     void *ctx)
{
  const mp_profile *p = sec->p;
  char line[512], b1[64], b2[64];
  uint64_t on = 0, all = 0;
  uint32_t i, n = 0;
  uint8_t *seen = calloc((size_t)p->nsite + 1, 1);	/* Traces counted. */
  if (!seen) return;
  for (i = 1; i < t->n; i++) {
    const mp_tnode *x = &t->node[i];
    all += x->alloc.plus;
    if (x->kind != MP_FK_TRACE || !x->alloc.plus) continue;
    on += x->alloc.plus;
    if (x->site < p->nsite && !seen[x->site]++) n++;
  }
  free(seen);
  if (!on || on < all / 100) return;
  snprintf(line, sizeof(line), MP_NOTE_TRACES_ALONE "%s of the %s "
	   "allocated%s (%.1f%%, %u trace%s) without a line: the agent could "
	   "not tell which of the trace's lines did "
	   "(several that can allocate, and no snapshot of the JIT's between "
	   "them to tell the way taken); with the JIT off ('ljmemprof run -- "
	   "luajit -joff SCRIPT') every allocation has its line",
	   mp_fmt_bytes(b1, sizeof(b1), on, human),
	   mp_fmt_bytes(b2, sizeof(b2), all, human),
	   p->sample ? " (estimated)" : "", 100.0 * (double)on / (double)all,
	   n, n == 1 ? "" : "s");
  fn(ctx, line);
}

/* The note of a profile without call stacks whose live blocks are on
** JIT traces: a trace's row tells no line then (with stacks, the lines
** inside it are told), and the way to the lines is to record again. */
static void trace_note(const mp_sections *sec, int human,
		       void (*fn)(void *ctx, const char *line), void *ctx)
{
  const mp_profile *p = sec->p;
  char line[512], b[64];
  mp_cost c = { 0, 0, 0 };
  uint32_t i, n = 0;
  for (i = 0; i < sec->nlive; i++)
    if (p->site[sec->live[i].site].loc.src == MP_SRC_TRACE &&
	sec->live[i].cost.n) {
      mp_cost_add(&c, &sec->live[i].cost);
      n++;
    }
  if (!n) return;
  snprintf(line, sizeof(line), MP_NOTE_TRACES "%s in %llu block%s live at "
	   "the end (%u trace%s) without a line: the profile has no call "
	   "stacks; record with 'ljmemprof run --stacks' (the lines inside "
	   "each trace) or with the JIT off ('ljmemprof run -- luajit -joff "
	   "SCRIPT')", mp_fmt_bytes(b, sizeof(b), c.plus, human),
	   (unsigned long long)c.n, c.n == 1 ? "" : "s", n, n == 1 ? "" : "s");
  fn(ctx, line);
}

uint32_t mp_render_notes(const mp_sections *sec, const mp_stacktree *t,
			 int human, void (*fn)(void *ctx, const char *line),
			 void *ctx)
{
  const mp_profile *p = sec->p;
  char line[MP_LABEL_MAX + 512], b1[64], b2[64];
  mp_cost all;
  uint32_t top = mp_profile_gc_top(p, &all);
  if (p->rc != MP_END) fn(ctx, mp_note_cut(line, sizeof(line), p));
  if (p->collect)
    fn(ctx, "a full garbage collection ran before the end: what is held is "
	 "reachable");
  else if (p->settled)
    fn(ctx, mp_note_settled);
  else
    fn(ctx, mp_note_nogc(p));
  if (top != UINT32_MAX) {
    const mp_cost *c = &p->gcfree[top];
    snprintf(line, sizeof(line), "the final collection freed %s in %llu "
	     "block%s made within the profile%s (the most by %s: %s in "
	     "%llu): garbage, or what only the main chunk's locals held, "
	     "which ends when the chunk returns",
	     mp_fmt_bytes(b1, sizeof(b1), all.plus, human),
	     (unsigned long long)all.n, all.n == 1 ? "" : "s",
	     p->sample ? " (estimated)" : "", sec->label[top],
	     mp_fmt_bytes(b2, sizeof(b2), c->plus, human),
	     (unsigned long long)c->n);
    fn(ctx, line);
  }
  if (p->stopped[0]) {
    snprintf(line, sizeof(line), "recording stopped early: %s", p->stopped);
    fn(ctx, line);
  }
  if (p->closefin) fn(ctx, mp_note_closefin(line, sizeof(line), p->closefin));
  if (p->native_lost)
    fn(ctx, mp_note_native_lost(line, sizeof(line), p->native_lost));
  if (!p->stacks) trace_note(sec, human, fn, ctx);
  else if (t && t->stacks) trace_alone_note(sec, t, human, fn, ctx);
  return top;
}
