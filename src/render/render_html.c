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
** The page is src/render/page.html, its style src/render/page.css and its
** script page.js, made C strings at build time (scripts/gen-embed.pl, into
** page_assets.h): edit them there. Their bytes are the page's: they have
** no header comment. page.html's markers @TITLE@ (twice: <title>, <h1>),
** @STYLE@, @DATA@ and @SCRIPT@ are where the title, the style, the data
** and the script go.
*/

#include <stdlib.h>
#include <string.h>

#include "render/mp_json.h"
#include "render/mp_render.h"
#include "render/mp_sview.h"
#include "render/mp_text.h"
#include "render/mp_walk.h"
#include "page_assets.h"	/* mp_page_html, _css, _js (generated). */

#define FLAME_PX	11800	/* 0.1 pixel of 1180: frames drawn at most a
				   level, the pruning threshold. */

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
  fputc(']', out);
  if (t->nrss) {	/* Native profiles: the process's RSS. */
    fputs(",\"rss\":[", out);
    for (i = 0; i < t->nrss; i++)
      fprintf(out, "%s[%llu,%llu]", i ? "," : "",
	      (unsigned long long)t->rss[i].ev,
	      (unsigned long long)t->rss[i].bytes);
    if (t->rss[t->nrss - 1].ev != t->rlast.ev ||
	t->rss[t->nrss - 1].bytes != t->rlast.bytes)
      fprintf(out, ",[%llu,%llu]", (unsigned long long)t->rlast.ev,
	      (unsigned long long)t->rlast.bytes);
    fputc(']', out);
  }
  fputc('}', out);
}

/* A JSON number, or null for UINT64_MAX (unknown). */
static void json_maybe(FILE *out, const char *field, uint64_t v)
{
  if (v == UINT64_MAX) fprintf(out, ",\"%s\":null", field);
  else fprintf(out, ",\"%s\":%llu", field, (unsigned long long)v);
}

/* The "trace_lines" field: under each trace of a stack profile, the lines
** inside its code with their allocations and reallocations, and the
** bytes and blocks they hold at the end (HEAP SUMMARY's lines). */
static int json_trace_lines(FILE *out, const mp_sections *sec,
			    const mp_stacktree *t)
{
  const mp_profile *p = sec->p;
  uint32_t i, j, k, n, nl;
  int first = 1;
  fputs(",\n\"trace_lines\":{", out);
  for (i = 0; t->stacks && i < p->nsite; i++) {
    mp_tline *a, *l;
    if (p->site[i].loc.src != MP_SRC_TRACE) continue;
    if (mp_trace_lines(t, i, 0, &a, &n) < 0) return -1;
    if (!n) continue;
    if (mp_trace_lines(t, i, 1, &l, &nl) < 0) {
      free(a);
      return -1;
    }
    fputs(first ? "\n" : ",\n", out);
    first = 0;
    mp_json_cstr(out, sec->label[i]);
    fputs(":[", out);
    for (j = 0; j < n; j++) {
      mp_cost live = { 0, 0, 0 };
      for (k = 0; k < nl; k++)
	if (!strcmp(l[k].label, a[j].label)) live = l[k].c;
      fputs(j ? ",[" : "[", out);
      mp_json_cstr(out, a[j].label);
      fprintf(out, ",%llu,%llu,%llu,%llu]", (unsigned long long)a[j].c.plus,
	      (unsigned long long)a[j].c.n, (unsigned long long)live.plus,
	      (unsigned long long)live.n);
    }
    fputc(']', out);
    free(a);
    free(l);
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
  mp_memory mem;
  uint32_t i;
  int rc, first = 1, hasmem = mp_profile_memory(p, &mem);
  if (!by || !held || hasmem < 0 || mp_stacktree_build(&t, sec) < 0) {
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
  fputs(",\"cut_note\":", out);	/* As NOTES says it. */
  if (p->rc != MP_END) {
    char note[256];
    mp_json_cstr(out, mp_note_cut(note, sizeof(note), p));
  } else {
    fputs("null", out);
  }
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
  {	/* What the final collection freed, as NOTES says it. */
    mp_cost all;
    uint32_t top = mp_profile_gc_top(p, &all);
    if (top != UINT32_MAX) {
      fprintf(out, ",\"final_collection\":{\"freed_bytes\":%llu,"
	      "\"freed_blocks\":%llu,\"top\":", (unsigned long long)all.plus,
	      (unsigned long long)all.n);
      mp_json_cstr(out, sec->label[top]);
      fprintf(out, ",\"top_bytes\":%llu,\"top_blocks\":%llu}",
	      (unsigned long long)p->gcfree[top].plus,
	      (unsigned long long)p->gcfree[top].n);
    }
  }
  fprintf(out, ",\"collected\":%s,\"settled\":%s,\"exited\":%s,"
	  "\"stopped\":", p->collect ? "true" : "false",
	  p->settled ? "true" : "false", p->exited ? "true" : "false");
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
	  "\"made_blocks\":%llu,\"made_bytes\":%llu",
	  p->stacks ? p->stacks : (unsigned)t.stacks, mp_profile_has_peak(p) ?
	  "true" :
	  "false", p->window, (unsigned long long)sec->temp_total.n,
	  (unsigned long long)sec->temp_total.plus,
	  (unsigned long long)sec->made_total.n,
	  (unsigned long long)sec->made_total.plus);
  if (hasmem) mp_render_json_memory(out, &mem);	/* As info says it. */
  mp_render_json_native(out, p);	/* As the JSON report has them. */
  fputc('}', out);
  fputs(",\n\"sources\":[", out);
  for (i = 0; i < p->nsite; i++) {
    const mp_site *s = &p->site[i];
    const mp_live *l = &by[i];
    uint64_t an = s->n[MP_AEV_ALLOC] + s->n[MP_AEV_REALLOC];
    uint64_t ab = s->plus[MP_AEV_ALLOC] + s->plus[MP_AEV_REALLOC];
    uint64_t fn = s->n[MP_AEV_REALLOC] + s->n[MP_AEV_FREE];
    uint64_t fb = s->minus[MP_AEV_REALLOC] + s->minus[MP_AEV_FREE];
    if (!mp_site_has_events(s)) continue;	/* A caller: no row. */
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
	  "\"has_peak\":%s,\"peak_compared\":%s,\"complete\":[%s,%s],"
	  "\"base\":[", d->nrow, d->nsame, d->tree.peak ? "true" : "false",
	  d->peak ? "true" : "false", d->cut[0] ? "false" : "true",
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
    if (d->peak)	/* The column that tells a change at the peak. */
      fprintf(out, ",%llu,%llu", (unsigned long long)r->side[0].peak.plus,
	      (unsigned long long)r->side[1].peak.plus);
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

/* Write the page template from *at up to marker m, and move *at past the
** marker; -1 if the template has no such marker. */
static int upto(FILE *out, const char **at, const char *m)
{
  const char *e = strstr(*at, m);
  if (!e) return -1;
  fwrite(*at, 1, (size_t)(e - *at), out);
  *at = e + strlen(m);
  return 0;
}

/* The page's title, escaped for HTML: "ljmemprof: " and what ran (run:
** the script and its arguments), else the profiles, "ljmemprof diff: BASE
** -> NEW" for a diff. */
static void title(FILE *out, const mp_render_opts *o, int diff)
{
  int i;
  fputs(diff ? "ljmemprof diff: " : "ljmemprof: ", out);
  if (o->program) {
    mp_text_put(out, o->program, strlen(o->program), MP_TEXT_XML);
    return;
  }
  if (o->nfiles < 1 && o->file)
    mp_text_put(out, o->file, strlen(o->file), MP_TEXT_XML);
  for (i = 0; i < o->nfiles; i++) {
    if (i) fputs(diff ? " -&gt; " : ", ", out);
    mp_text_put(out, o->files[i], strlen(o->files[i]), MP_TEXT_XML);
  }
}

/* upto() marker m, writing the title (o, diff) at each @TITLE@ before it. */
static int upto_title(FILE *out, const char **at, const char *m,
		      const mp_render_opts *o, int diff)
{
  const char *e = strstr(*at, m), *t;
  if (!e) return -1;
  while (o && (t = strstr(*at, "@TITLE@")) && t < e) {
    fwrite(*at, 1, (size_t)(t - *at), out);
    title(out, o, diff);
    *at = t + strlen("@TITLE@");
  }
  return upto(out, at, m);
}

/* See mp_render.h. */
int mp_render_page(FILE *out, const char *html, const char *js,
		   const char *data, size_t len, const mp_render_opts *o,
		   int diff)
{
  const char *at = html;
  size_t i, j;
  if (upto_title(out, &at, "@STYLE@", o, diff) < 0) return -1;
  fputs(mp_page_css, out);
  if (upto_title(out, &at, "@DATA@", o, diff) < 0) return -1;
  for (i = j = 0; i < len; i++)
    if (data[i] == '<') {
      fwrite(data + j, 1, i - j, out);
      fputs("\\u003c", out);
      j = i + 1;
    }
  fwrite(data + j, 1, len - j, out);
  if (upto(out, &at, "@SCRIPT@") < 0) return -1;
  fputs(js, out);
  fputs(at, out);
  return ferror(out) ? -1 : 0;
}

/* Write the data with fn into memory, then the page; 0 or -1. */
static int with_data(FILE *out, int (*fn)(FILE *, const void *,
					  const mp_render_opts *),
		     const void *what, const mp_render_opts *o, int diff)
{
  char *data = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&data, &len);
  int rc;
  if (!m) return -1;
  rc = fn(m, what, o);
  if (fclose(m) != 0) rc = -1;
  if (rc == 0) rc = mp_render_page(out, mp_page_html, mp_page_js, data, len, o,
				  diff);
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
  return with_data(out, report_data, sec, o, 0);
}

int mp_render_diff_html(FILE *out, const mp_diff *d, const mp_render_opts *o)
{
  return with_data(out, diff_data, d, o, 1);
}
