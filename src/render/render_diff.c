/*
** render_diff.c: `ljmemprof diff BASE NEW` as text, JSON and collapsed
** stacks (the HTML view is in render_html.c). The rows are the sources
** whose costs changed, the largest change of the metric first
** (analysis/mp_diff.h); every number is shown for both sides with the
** change, NEW minus BASE.
**
**   text       SOURCE:, then a line each: allocated BASE -> NEW (+CHANGE)
**              in N -> M events (+K); freed ...; held at the end ...; [at
**              the peak ...]; absolute chunk paths relative to the
**              working directory or to the directory they share (marked
**              ".../" beside relative ones)
**   json       {"format":"ljmemprof-diff", ..., "sources":[{"source":
**              {...}, "base":{...}, "new":{...}, "change":{...}}]}
**   collapsed  frames BASE NEW: the stack's own value on each side under
**              the metric, the input flamegraph.pl takes for a
**              differential flame graph (difffolded.pl's output)
*/

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "render/mp_json.h"
#include "render/mp_render.h"
#include "render/mp_sview.h"
#include "render/mp_text.h"

/* A change of bytes as "+12B", "-1.50KiB". */
static const char *fmt_change(char *buf, size_t size, uint64_t a, uint64_t b,
			      int human)
{
  char v[48];
  int neg = a > b;
  mp_fmt_bytes(v, sizeof(v), neg ? a - b : b - a, human);
  snprintf(buf, size, "%c%s", neg ? '-' : '+', v);
  return buf;
}

/* A line of a row: "<TAB>WHAT  BASE -> NEW (+CHANGE) in N -> M UNIT (+K)",
** WHAT padded so that the figures of a row's lines start together. */
static void text_pair(FILE *out, const char *what, uint64_t b0, uint64_t b1,
		      uint64_t n0, uint64_t n1, const char *unit, int human)
{
  char x[48], y[48], z[64];
  fprintf(out, "\t%-16s %s -> %s (%s) in %" PRIu64 " -> %" PRIu64 " %s (%c%"
	  PRIu64 ")\n", what, mp_fmt_bytes(x, sizeof(x), b0, human),
	  mp_fmt_bytes(y, sizeof(y), b1, human),
	  fmt_change(z, sizeof(z), b0, b1, human), n0, n1, unit,
	  n0 > n1 ? '-' : '+', n0 > n1 ? n0 - n1 : n1 - n0);
}

/* The costs of a row, a line each (a row on one line was some 200
** characters). */
static void text_row(FILE *out, const mp_diff *d, const mp_drow *r, int human)
{
  const mp_dcost *a = &r->side[0], *b = &r->side[1];
  text_pair(out, "allocated", a->alloc.plus, b->alloc.plus, a->alloc.n,
	    b->alloc.n, "events", human);
  text_pair(out, "freed", a->freed.minus, b->freed.minus, a->freed.n,
	    b->freed.n, "events", human);
  text_pair(out, "held at the end", a->live.plus, b->live.plus, a->live.n,
	    b->live.n, "blocks", human);
  if (d->peak)
    text_pair(out, "at the peak", a->peak.plus, b->peak.plus, a->peak.n,
	      b->peak.n, "blocks", human);
}

/* -- Paths in labels ------------------------------------------------------- */

/* How labels' chunk paths are shortened: those under dir (ending in '/')
** lose it; with mark they read "@.../x.lua" (dir is not the working
** directory, and some chunk path is relative: "@x.lua" would read as
** that one's). dir "" shortens none. */
typedef struct mp_dpaths {
  char dir[4096];
  int mark;
} mp_dpaths;

/* The chunk path of label l: after its leading '@', or a trace's
** "started at @"; NULL if it names none. */
static const char *chunk_path(const char *l)
{
  const char *t;
  if (l[0] == '@') return l + 1;
  if ((t = strstr(l, " started at @"))) return t + strlen(" started at @");
  return NULL;
}

/* The directory that the labels' chunk paths are shown relative to: the
** working directory if a changed source has a path in it, else the
** longest directory that all of them share; "" if none. The labels of a
** profile recorded elsewhere carry the whole path of every chunk, which
** made each line of the diff wider than a terminal. A relative chunk
** path (a file given as ./utils.lua) is relative to the working directory
** of the run: beside another directory, the shortened paths are marked
** (mp_dpaths), so that "@utils.lua" never stands for two files. */
static void common_dir(const mp_diff *d, uint32_t nrow, mp_dpaths *dp)
{
  char cwd[4096], *dir = dp->dir;
  size_t n = 0, cl = 0, size = sizeof(dp->dir);
  uint32_t i;
  int any = 0, rel = 0;
  dir[0] = '\0';
  dp->mark = 0;
  if (getcwd(cwd, sizeof(cwd) - 1)) {
    cl = strlen(cwd);
    if (cl > 1) cwd[cl++] = '/';
    cwd[cl] = '\0';
  }
  for (i = 0; cl > 1 && i < nrow; i++) {
    const char *at = strstr(d->sec.label[d->row[i].site], "@/");
    if (at && !strncmp(at + 1, cwd, cl)) {
      if (cl < size) memcpy(dir, cwd, cl + 1);
      return;
    }
  }
  for (i = 0; i < nrow; i++) {	/* The longest common directory. */
    const char *l = d->sec.label[d->row[i].site], *at = chunk_path(l);
    size_t k;
    if (!at) continue;
    if (at[0] != '/') {
      rel = 1;
      continue;
    }
    if (!any) {
      const char *slash = strrchr(at, '/');
      n = (size_t)(slash - at) + 1;
      if (n >= size) n = 0;
      memcpy(dir, at, n);
      any = 1;
      continue;
    }
    for (k = 0; k < n && at[k] == dir[k]; k++) {}
    while (k && dir[k - 1] != '/') k--;
    n = k;
  }
  dir[n > 1 ? n : 0] = '\0';
  dp->mark = rel && dir[0];
}

/* Write label l with the chunk paths under dp's directory relative to it
** ("@/a/b/x.lua" as "@x.lua" for "/a/b/", "@.../x.lua" marked). */
static void put_label(FILE *out, const char *l, const mp_dpaths *dp)
{
  size_t dl = strlen(dp->dir);
  const char *p = l, *at;
  while (dl && (at = strstr(p, "@/")) && !strncmp(at + 1, dp->dir, dl)) {
    mp_text_put(out, p, (size_t)(at - p) + 1, 0);
    if (dp->mark) fputs(".../", out);
    p = at + 1 + dl;
  }
  mp_text_put(out, p, strlen(p), 0);
}

/* The costs of a stack on both sides under metric m. */
static void stack_change(FILE *out, const mp_diff *d, uint32_t k,
			 mp_metric m, int human)
{
  const mp_dnode *a = &d->base[k];
  uint64_t v0 = mp_metric_value(m, mp_metric_cost(m, &a->alloc, &a->live,
						  &a->peak));
  uint64_t v1 = mp_tnode_value(&d->tree.node[k], m);
  char x[48], y[48], z[64];
  if (mp_metric_bytes(m))
    fprintf(out, "%s -> %s (%s)", mp_fmt_bytes(x, sizeof(x), v0, human),
	    mp_fmt_bytes(y, sizeof(y), v1, human),
	    fmt_change(z, sizeof(z), v0, v1, human));
  else
    fprintf(out, "%" PRIu64 " -> %" PRIu64 " (%c%" PRIu64 ")", v0, v1,
	    v0 > v1 ? '-' : '+', v0 > v1 ? v0 - v1 : v1 - v0);
}

/* Stack nodes whose own value changed under the metric, the largest
** change first (then by node): the stacks a diff shows. *n gets how
** many; NULL when out of memory. */
static const mp_diff *cmp_sd;

static uint64_t node_change(const mp_diff *d, uint32_t k)
{
  const mp_dnode *a = &d->base[k];
  mp_metric m = d->metric;
  uint64_t v0 = mp_metric_value(m, mp_metric_cost(m, &a->alloc, &a->live,
						  &a->peak));
  uint64_t v1 = mp_tnode_value(&d->tree.node[k], m);
  return v0 > v1 ? v0 - v1 : v1 - v0;
}

static int cmp_stack(const void *pa, const void *pb)
{
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  uint64_t x = node_change(cmp_sd, a), y = node_change(cmp_sd, b);
  if (x != y) return x > y ? -1 : 1;
  return a < b ? -1 : a > b;
}

static uint32_t *changed_stacks(const mp_diff *d, uint32_t *n)
{
  uint32_t *v = malloc(((size_t)d->tree.n + 1) * sizeof(*v)), i;
  *n = 0;
  if (!v) return NULL;
  for (i = 1; i < d->tree.n; i++)
    if (node_change(d, i)) v[(*n)++] = i;
  cmp_sd = d;
  qsort(v, *n, sizeof(*v), cmp_stack);
  return v;
}

int mp_render_diff_text(FILE *out, const mp_diff *d, const mp_render_opts *o)
{
  const mp_strtab *names = &d->m.syms.names;
  uint8_t *used = calloc((size_t)names->nalias + 1, 1);
  mp_dpaths dp;
  uint32_t i, n;
  if (!used) return -1;
  fputs("DIFF: ", out);
  mp_text_put(out, d->file[0], strlen(d->file[0]), 0);
  fputs(" -> ", out);
  mp_text_put(out, d->file[1], strlen(d->file[1]), 0);
  fprintf(out, ", by the largest change of %s\n", mp_metric_what[d->metric]);
  n = mp_rows_shown(d->nrow, o);
  common_dir(d, d->nrow, &dp);
  if (dp.mark) {
    fputs("(\".../\" is ", out);
    mp_text_put(out, dp.dir, strlen(dp.dir), 0);
    fputs("; the other paths are as recorded)\n", out);
  } else if (dp.dir[0]) {
    fputs("(paths relative to ", out);
    mp_text_put(out, dp.dir, strlen(dp.dir), 0);
    fputs(")\n", out);
  }
  if (d->m.sample)
    fputs("(sampled: the counts and bytes are estimates)\n", out);
  for (i = 0; i < 2; i++)
    if (d->cut[i]) {
      fputc('(', out);
      mp_text_put(out, d->file[i], strlen(d->file[i]), 0);
      fputs(" is cut short or damaged: compared up to the cut)\n", out);
    }
  for (i = 0; i < n; i++) {
    const mp_drow *r = &d->row[i];
    put_label(out, d->sec.label[r->site], &dp);
    fputs(":\n", out);
    text_row(out, d, r, o->human);
    used[mp_site_alias(&d->sec, r->site)] = 1;
  }
  if (n < d->nrow)
    fprintf(out, "... and %u more changed source%s (--top 0 prints all)\n",
	    d->nrow - n, d->nrow - n == 1 ? "" : "s");
  fputs("TOTAL:\n", out);
  text_row(out, d, &d->total, o->human);
  fprintf(out, "%u source%s changed, %u did not\n\n", d->nrow,
	  d->nrow == 1 ? "" : "s", d->nsame);
  if (o->stacks && d->stacks) {
    uint32_t *v = changed_stacks(d, &n), j;
    if (!v) { free(used); return -1; }
    if (n) fprintf(out, "CALL STACKS (the largest changes of %s):\n",
		   mp_metric_what[d->metric]);
    else fprintf(out, "CALL STACKS: none changed (%s)\n",
		 mp_metric_what[d->metric]);
    for (i = 0; i < n && (o->stacks == UINT32_MAX || i < o->stacks); i++) {
      uint32_t k = v[i], hops = 0;
      fputc('\t', out);
      stack_change(out, d, k, d->metric, o->human);
      fputc('\n', out);
      mp_sview_mark_aliases(&d->tree, k, names, used);
      for (j = k; j && hops++ < d->tree.n; j = d->tree.node[j].parent) {
	const char *l = d->tree.node[j].label;
	fputs("\t\t", out);
	put_label(out, l ? l : "", &dp);
	fputc('\n', out);
      }
    }
    fputc('\n', out);
    free(v);
  } else if (o->stacks) {
    fputs("CALL STACKS: none in these profiles (they were recorded with "
	  "one frame per event)\n\n", out);
  }
  mp_render_text_aliases(out, names, used);
  free(used);
  return ferror(out) ? -1 : 0;
}

/* A side's costs as a JSON object. */
static void json_side(FILE *out, const mp_dcost *c, int peak)
{
  fprintf(out, "{\"alloc_events\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64
	  ",\"free_events\":%" PRIu64 ",\"free_bytes\":%" PRIu64
	  ",\"live_blocks\":%" PRIu64 ",\"live_bytes\":%" PRIu64,
	  c->alloc.n, c->alloc.plus, c->freed.n, c->freed.minus, c->live.n,
	  c->live.plus);
  if (peak)
    fprintf(out, ",\"peak_blocks\":%" PRIu64 ",\"peak_bytes\":%" PRIu64,
	    c->peak.n, c->peak.plus);
  fputc('}', out);
}

/* The change of a row (NEW minus BASE, signed). */
static void json_change(FILE *out, const mp_dcost *a, const mp_dcost *b,
			int peak)
{
  fprintf(out, "{\"alloc_events\":%" PRId64 ",\"alloc_bytes\":%" PRId64
	  ",\"free_events\":%" PRId64 ",\"free_bytes\":%" PRId64
	  ",\"live_blocks\":%" PRId64 ",\"live_bytes\":%" PRId64,
	  (int64_t)(b->alloc.n - a->alloc.n),
	  (int64_t)(b->alloc.plus - a->alloc.plus),
	  (int64_t)(b->freed.n - a->freed.n),
	  (int64_t)(b->freed.minus - a->freed.minus),
	  (int64_t)(b->live.n - a->live.n),
	  (int64_t)(b->live.plus - a->live.plus));
  if (peak)
    fprintf(out, ",\"peak_blocks\":%" PRId64 ",\"peak_bytes\":%" PRId64,
	    (int64_t)(b->peak.n - a->peak.n),
	    (int64_t)(b->peak.plus - a->peak.plus));
  fputc('}', out);
}

static void json_row(FILE *out, const mp_diff *d, const mp_drow *r)
{
  fputs("\"base\":", out);
  json_side(out, &r->side[0], d->peak);
  fputs(",\"new\":", out);
  json_side(out, &r->side[1], d->peak);
  fputs(",\"change\":", out);
  json_change(out, &r->side[0], &r->side[1], d->peak);
}

int mp_render_diff_json(FILE *out, const mp_diff *d, const mp_render_opts *o)
{
  const mp_strtab *names = &d->m.syms.names;
  uint8_t *used = calloc((size_t)names->nalias + 1, 1);
  uint32_t i, n, j;
  if (!used) return -1;
  fputs("{\"format\":\"ljmemprof-diff\",\"format_version\":1,\"base\":", out);
  mp_json_cstr(out, d->file[0]);
  fputs(",\"new\":", out);
  mp_json_cstr(out, d->file[1]);
  fprintf(out, ",\"metric\":\"%s\",\"sampled\":%s,\"top\":%" PRIu64
	  ",\"complete\":{\"base\":%s,\"new\":%s}"
	  ",\"changed\":%u,\"unchanged\":%u,\n\"totals\":{",
	  mp_metric_names[d->metric], d->m.sample ? "true" : "false", o->top,
	  d->cut[0] ? "false" : "true", d->cut[1] ? "false" : "true",
	  d->nrow, d->nsame);
  json_row(out, d, &d->total);
  fputs("},\n\"sources\":[", out);
  for (i = 0, n = mp_rows_shown(d->nrow, o); i < n; i++) {
    const mp_drow *r = &d->row[i];
    fputs(i ? ",\n {\"source\":" : "\n {\"source\":", out);
    mp_render_json_source(out, &d->sec, r->site);
    used[mp_site_alias(&d->sec, r->site)] = 1;
    fputc(',', out);
    json_row(out, d, r);
    fputc('}', out);
  }
  fputc(']', out);
  if (o->stacks) {
    uint32_t *v = d->stacks ? changed_stacks(d, &n) : NULL;
    if (d->stacks && !v) { free(used); return -1; }
    fprintf(out, ",\n\"call_stacks\":{\"recorded\":%s,\"stacks\":[",
	    d->stacks ? "true" : "false");
    for (i = 0; v && i < n && (o->stacks == UINT32_MAX || i < o->stacks);
	 i++) {
      uint32_t k = v[i], hops = 0;
      const mp_dnode *a = &d->base[k];
      const mp_tnode *x = &d->tree.node[k];
      fputs(i ? ",\n {\"base\":{" : "\n {\"base\":{", out);
      mp_render_json_costs(out, &a->alloc, &a->live,
			   d->peak ? &a->peak : NULL);
      fputs("},\"new\":{", out);
      mp_render_json_costs(out, &x->alloc, &x->live,
			   d->peak ? &x->peak : NULL);
      fputs("},\"frames\":[", out);
      mp_sview_mark_aliases(&d->tree, k, names, used);
      for (j = k; j && hops < d->tree.n; j = d->tree.node[j].parent, hops++) {
	if (hops) fputc(',', out);
	mp_json_cstr(out, d->tree.node[j].label);
      }
      fputs("]}", out);
    }
    fputs("]}", out);
    free(v);
  }
  mp_render_json_aliases(out, names, used);
  fputs("}\n", out);
  free(used);
  return ferror(out) ? -1 : 0;
}

int mp_render_diff_collapsed(FILE *out, const mp_diff *d,
			     const mp_render_opts *o)
{
  mp_render_opts x = *o;
  x.metric = d->metric;
  return mp_render_collapsed_pairs(out, &d->tree, &x, d->base);
}
