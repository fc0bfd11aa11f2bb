/*
** render_text.c: the text report, in the layout of Tarantool's memprof
** parser (sections, one line per site, tab-separated sizes, "Overrides:"
** blocks, HEAP SUMMARY, ALIASES), so people and scripts used to it read
** ours the same way. Its HEAP SUMMARY is the live blocks by owner, with
** their total in its heading; Tarantool's own (mp_sections.held) only
** with --accounting tarantool. A section cut by --top ends with a line
** saying how many sources it leaves out. Labels and source text are
** escaped for a terminal (mp_text.h).
*/

#include <stdlib.h>
#include <string.h>

#include "reader/mp_label.h"
#include "render/mp_render.h"
#include "render/mp_sview.h"
#include "render/mp_text.h"

static const char *const section[MP_AEV_N] = {
  NULL, "ALLOCATIONS", "DEALLOCATIONS", "REALLOCATIONS"
};

/* Write site i's label. */
static void label(FILE *out, const mp_sections *sec, uint32_t i)
{
  mp_text_put(out, sec->label[i], strlen(sec->label[i]), 0);
}

/* Note that site i's alias (if any) is printed. */
static void mark_alias(const mp_sections *sec, uint32_t i, uint8_t *used)
{
  used[mp_site_alias(sec, i)] = 1;
}

/* Print an alias's text with line numbers. */
static void text_alias(FILE *out, const mp_name *nm, uint32_t num)
{
  size_t i = 0, line = 1;
  fprintf(out, "function_alias_%u:\n", num);
  while (i < nm->kept) {
    const char *nl = memchr(nm->s + i, '\n', nm->kept - i);
    size_t end = nl ? (size_t)(nl - nm->s) : nm->kept;
    fprintf(out, "%zu\t| ", line++);
    mp_text_put(out, nm->s + i, end - i, MP_TEXT_TABS);
    fputc('\n', out);
    i = end + 1;
  }
  if (nm->kept < nm->len)
    fprintf(out, "... (%llu bytes in all)\n", (unsigned long long)nm->len);
  fputc('\n', out);
}

/* The line under a section that --top cut: how many sources it leaves
** out of all. */
static void more_rows(FILE *out, uint32_t shown, uint32_t all)
{
  if (shown < all)
    fprintf(out, "... and %u more source%s (--top 0 prints all)\n",
	    all - shown, all - shown == 1 ? "" : "s");
}

/* The line under a list of what sources hold (HEAP SUMMARY, PEAK) that
** --top cut: how many it leaves out of all, and what they hold. */
static void more_held(FILE *out, const mp_srow *rows, uint32_t shown,
		      uint32_t all, int human)
{
  mp_cost rest = { 0, 0, 0 };
  char b[64];
  uint32_t i;
  if (shown >= all) return;
  for (i = shown; i < all; i++) mp_cost_add(&rest, &rows[i].cost);
  fprintf(out, "... and %u more source%s hold%s %s in %llu block%s "
	  "(--top 0 prints all)\n", all - shown, all - shown == 1 ? "" : "s",
	  all - shown == 1 ? "s" : "", mp_fmt_bytes(b, sizeof(b), rest.plus,
						    human),
	  (unsigned long long)rest.n, rest.n == 1 ? "" : "s");
}

/* The percentage that part is of all, 0 if all is. */
static double percent(uint64_t part, uint64_t all)
{
  return all ? 100.0 * (double)part / (double)all : 0.0;
}

/* A cost as the stack view shows it under metric m: "N events<TAB>+B"
** for allocations, "N blocks<TAB>B not freed" for leaks, "N blocks<TAB>B
** at the peak". */
static void stack_cost(FILE *out, const mp_cost *alloc, const mp_cost *live,
		       const mp_cost *peak, mp_metric m, int human)
{
  const mp_cost *c = mp_metric_cost(m, alloc, live, peak);
  char b[64];
  if (c == alloc)
    fprintf(out, "%llu events\t+%s", (unsigned long long)c->n,
	    mp_fmt_bytes(b, sizeof(b), c->plus, human));
  else
    fprintf(out, "%llu blocks\t%s %s", (unsigned long long)c->n,
	    mp_fmt_bytes(b, sizeof(b), c->plus, human),
	    c == live ? "not freed" : "at the peak");
}

/* Under a trace's row of a stack profile, the lines inside its code that
** its events were made at (each stack's innermost Lua frame above the
** trace), with their allocations and reallocations (the same events as
** the stack views'), or (live: under HEAP SUMMARY) the blocks they hold
** at the end. At most 10 lines when --top limits the rows. */
static int trace_lines(FILE *out, const mp_stacktree *t, uint32_t site,
		       int live, const mp_render_opts *o)
{
  mp_tline *a;
  uint32_t n, j, shown;
  char b[64];
  if (mp_trace_lines(t, site, live, &a, &n) < 0) return -1;
  shown = o->top && n > 10 ? 10 : n;
  if (n) fputs(live ? "\tLines in the trace (held at the end):\n" :
	       "\tLines in the trace (allocations and reallocations):\n", out);
  for (j = 0; j < shown; j++) {
    fputs("\t\t", out);
    mp_text_put(out, a[j].label, strlen(a[j].label), 0);
    if (live)
      fprintf(out, " holds %s in %llu block%s\n",
	      mp_fmt_bytes(b, sizeof(b), a[j].c.plus, o->human),
	      (unsigned long long)a[j].c.n, a[j].c.n == 1 ? "" : "s");
    else
      fprintf(out, ": %llu events\t+%s\n", (unsigned long long)a[j].c.n,
	      mp_fmt_bytes(b, sizeof(b), a[j].c.plus, o->human));
  }
  if (shown < n) {	/* With what the rest made. */
    mp_cost rest = { 0, 0, 0 };
    for (j = shown; j < n; j++) mp_cost_add(&rest, &a[j].c);
    if (live)
      fprintf(out, "\t\t... and %u more hold %s in %llu block%s\n",
	      n - shown, mp_fmt_bytes(b, sizeof(b), rest.plus, o->human),
	      (unsigned long long)rest.n, rest.n == 1 ? "" : "s");
    else
      fprintf(out, "\t\t... and %u more: %llu events\t+%s\n", n - shown,
	      (unsigned long long)rest.n,
	      mp_fmt_bytes(b, sizeof(b), rest.plus, o->human));
  }
  free(a);
  return 0;
}

/* Where NOTES goes, and whether its heading is out. */
typedef struct notes {
  FILE *out;
  int tarantool;	/* Byte for byte Tarantool's parser's output
			   where it has nothing to say (nor says what
			   only our heap summary shows). */
  int shown;
} notes;

/* A line of NOTES (the heading before the first). */
static void note_line(void *ctx, const char *line)
{
  notes *n = ctx;
  if (n->tarantool && (line == mp_note_uncollected ||
			line == mp_note_settled || line == mp_note_exited ||
			!strncmp(line, MP_NOTE_TRACES, strlen(MP_NOTE_TRACES)) ||
			!strncmp(line, MP_NOTE_TRACES_ALONE,
				 strlen(MP_NOTE_TRACES_ALONE))))
    return;
  if (!n->shown++) fputs("NOTES:\n", n->out);
  mp_text_put(n->out, line, strlen(line), 0);
  fputc('\n', n->out);
}

/* The label of stack group g: its source's (marking the alias it uses),
** or its node's when it bills no source. */
static void group_label(FILE *out, const mp_sections *sec,
			const mp_stacktree *t, const mp_sgroup *g,
			uint8_t *used)
{
  if (g->site < sec->p->nsite) {
    label(out, sec, g->site);
    mark_alias(sec, g->site, used);
  } else {
    const char *l = t->node[g->node].label;
    mp_text_put(out, l ? l : "", l ? strlen(l) : 0, 0);
  }
}

int mp_render_text_stacks(FILE *out, const mp_sections *sec,
			  const mp_stacktree *t, const mp_render_opts *o,
			  uint8_t *used)
{
  mp_sview v;
  uint32_t i, j;
  if (!t->stacks) {
    fputs("CALL STACKS: none in this profile (it was recorded with one frame "
	  "per event; record with mp.start{stacks = 64} or 'ljmemprof run "
	  "--stacks')\n\n", out);
    return 0;
  }
  if (mp_sview_build(&v, t, o->metric, o->top, o->stacks) < 0) return -1;
  fprintf(out, "CALL STACKS (%s", mp_metric_what[o->metric]);
  /* Not ALLOCATIONS' figures alone: say so where they are read. */
  if (o->metric >> 1 == MP_METRIC_ALLOC_BYTES >> 1)
    fputs(" of allocations and reallocations", out);
  if (o->stacks != UINT32_MAX)
    fprintf(out, ", at most %u per source", o->stacks);
  fputs("):\n", out);
  for (i = 0; i < v.ngroup; i++) {
    const mp_sgroup *g = &v.group[i];
    group_label(out, sec, t, g, used);
    fputs(": ", out);
    stack_cost(out, &g->alloc, &g->live, &g->peak, o->metric, o->human);
    fprintf(out, "\tin %u stack%s\n", g->nstack, g->nstack == 1 ? "" : "s");
    for (j = 0; j < g->npath; j++) {
      uint32_t k = v.path[g->path0 + j], hops = 0;
      const mp_tnode *x = &t->node[k];
      fputc('\t', out);
      stack_cost(out, &x->alloc, &x->live, &x->peak, o->metric, o->human);
      fputc('\n', out);
      mp_sview_mark_aliases(t, k, &sec->p->syms.names, used);
      for (; k && k < t->n && hops++ < t->n; k = t->node[k].parent) {
	const char *l = t->node[k].label;
	fputs("\t\t", out);
	mp_text_put(out, l ? l : "", l ? strlen(l) : 0, 0);
	fputc('\n', out);
      }
    }
    fputc('\n', out);
  }
  more_rows(out, v.ngroup, v.nall);
  fputc('\n', out);
  mp_sview_free(&v);
  return 0;
}

int mp_render_text_sources(FILE *out, const mp_sections *sec,
			   const mp_stacktree *t, const mp_render_opts *o,
			   uint8_t *used)
{
  mp_sview v;
  uint32_t i;
  if (mp_sview_build(&v, t, o->metric, o->top, 1) < 0) return -1;
  fprintf(out, "SOURCES (%s; the profile has no call stacks: each source "
	  "is its own frame):\n", mp_metric_what[o->metric]);
  for (i = 0; i < v.ngroup; i++) {
    const mp_sgroup *g = &v.group[i];
    group_label(out, sec, t, g, used);
    fputs(": ", out);
    stack_cost(out, &g->alloc, &g->live, &g->peak, o->metric, o->human);
    fputc('\n', out);
  }
  more_rows(out, v.ngroup, v.nall);
  fputc('\n', out);
  mp_sview_free(&v);
  return 0;
}

int mp_render_text(FILE *out, const mp_sections *sec, const mp_render_opts *o)
{
  const mp_profile *p = sec->p;
  const mp_strtab *names = &p->syms.names;
  mp_stacktree t;
  uint8_t *used;
  uint32_t *links;	/* A row's links shown. */
  char b1[64], b2[64];
  uint32_t i, j, n, m;
  int x, k;
  mp_memory mm;
  int mem = mp_profile_memory(p, &mm);
  /* A stack profile's tree also tells the notes what its traces made
  ** without a line. */
  int hl = mp_heap_lines(sec, o), tree = o->stacks || hl || p->stacks;
  if (mem < 0) return -1;
  /* The tree first: labelling its frames may number more aliases. */
  if (tree && mp_stacktree_build(&t, sec) < 0) return -1;
  used = calloc((size_t)names->nalias + 1, 1);
  links = malloc(((size_t)p->nlink + 1) * sizeof(*links));
  if (!used || !links) {
    if (tree) mp_stacktree_free(&t);
    free(used);
    free(links);
    return -1;
  }
  if (mp_render_rate(p)) {
    fprintf(out, "SAMPLED: one sample every %.0f bytes allocated on average; "
	    "the counts and bytes below are estimates from %llu events "
	    "recorded\n\n", p->sample, (unsigned long long)p->nev);
  } else if (p->sample) {	/* A merge of different rates. */
    fputs("SAMPLED: the profiles merged were sampled at different rates, "
	  "in their order: one sample", out);
    for (i = 0; i < p->merged; i++)
      if (p->rates[i]) fprintf(out, "%s every %.0f bytes", i ? "," : "",
			       p->rates[i]);
      else fprintf(out, "%s every event", i ? "," : "");
    fprintf(out, "; the counts and bytes below are estimates from %llu "
	    "events recorded\n\n", (unsigned long long)p->nev);
  }
  for (x = 0; x < 3 && !o->leak_only; x++) {
    k = mp_section_order[x];
    fprintf(out, "%s\n", section[k]);
    for (i = 0, n = mp_rows_shown(sec->nrow[k], o); i < n; i++) {
      const mp_row *r = &sec->row[k][i];
      mp_cost c = mp_site_cost(&p->site[r->site], k);
      label(out, sec, r->site);
      fprintf(out, ": %llu events\t+%s\t-%s\n", (unsigned long long)c.n,
	      mp_fmt_bytes(b1, sizeof(b1), c.plus, o->human),
	      mp_fmt_bytes(b2, sizeof(b2), c.minus, o->human));
      mark_alias(sec, r->site, used);
      if (k == MP_AEV_ALLOC && o->stacks && t.stacks &&
	  trace_lines(out, &t, r->site, 0, o) < 0) {
	mp_stacktree_free(&t);
	free(used);
	free(links);
	return -1;
      }
      if (!r->nlink) continue;
      fputs("\tOverrides:\n", out);
      m = mp_row_links(sec, r, o->top, links);
      for (j = 0; j < m; j++) {
	uint32_t owner = p->link[links[j]].owner;
	fputs("\t\t", out);
	label(out, sec, owner);
	fputc('\n', out);
	mark_alias(sec, owner, used);
      }
      if (m < r->nlink) fprintf(out, "\t\t... and %u more\n", r->nlink - m);
      fputc('\n', out);
    }
    more_rows(out, n, sec->nrow[k]);
    fputc('\n', out);
  }
  if (o->tarantool)	/* Tarantool's layout. */
    fputs("HEAP SUMMARY:\n", out);
  else
    fprintf(out, "HEAP SUMMARY: %s in %llu block%s live at the end, by the "
	    "source that allocated or last resized them\n",
	    mp_fmt_bytes(b1, sizeof(b1), p->live_bytes, o->human),
	    (unsigned long long)p->live_n, p->live_n == 1 ? "" : "s");
  m = o->tarantool ? sec->nheld : sec->nlive;	/* The summary's rows... */
  n = mp_rows_shown(m, o);			/* ...and those shown. */
  for (i = 0; o->tarantool && i < n; i++) {
    const mp_held *h = &sec->held[i];
    label(out, sec, h->site);
    fprintf(out, " holds %s: %llu allocs, %llu frees\n",
	    mp_fmt_bytes(b1, sizeof(b1), mp_held_bytes(h), o->human),
	    (unsigned long long)h->cost.n, (unsigned long long)h->nfree);
    mark_alias(sec, h->site, used);
  }
  for (i = 0; !o->tarantool && i < n; i++) {
    const mp_srow *r = &sec->live[i];
    label(out, sec, r->site);
    fprintf(out, " holds %s in %llu block%s (%.1f%%)\n",
	    mp_fmt_bytes(b1, sizeof(b1), r->cost.plus, o->human),
	    (unsigned long long)r->cost.n, r->cost.n == 1 ? "" : "s",
	    percent(r->cost.plus, p->live_bytes));
    mark_alias(sec, r->site, used);
    if (hl && p->site[r->site].loc.src == MP_SRC_TRACE &&
	trace_lines(out, &t, r->site, 1, o) < 0) {
      mp_stacktree_free(&t);
      free(used);
      free(links);
      return -1;
    }
  }
  if (o->tarantool) more_rows(out, n, m);
  else more_held(out, sec->live, n, m, o->human);
  fputc('\n', out);
  if (mem > 0 || p->native_unseen || p->native_lost) {
    /* Where the memory is (native profiles), what it leaves out. */
    char note[256];
    fputs("MEMORY:", out);
    if (mem > 0) {
      fputc(' ', out);
      mp_render_memory_line(out, &mm, o->human);
    }
    fputc('\n', out);
    if (p->native_unseen)
      fprintf(out, "  %s\n", mp_note_native_unseen(note, sizeof(note),
						     p->native_unseen));
    if (p->native_lost)
      fprintf(out, "  %s\n", mp_note_native_lost(note, sizeof(note),
						   p->native_lost));
    fputc('\n', out);
  }
  if (o->peak && sec->peak) {
    fputs("PEAK: ", out);
    mp_render_peak_line(out, p, o->human);
    fputc('\n', out);
    for (i = 0, n = mp_rows_shown(sec->npeak, o); i < n; i++) {
      const mp_srow *r = &sec->peak[i];
      label(out, sec, r->site);
      fprintf(out, " holds %s in %llu block%s (%.1f%%)\n",
	      mp_fmt_bytes(b1, sizeof(b1), r->cost.plus, o->human),
	      (unsigned long long)r->cost.n, r->cost.n == 1 ? "" : "s",
	      percent(r->cost.plus, p->peak_bytes));
      mark_alias(sec, r->site, used);
    }
    more_held(out, sec->peak, n, sec->npeak, o->human);
    fputc('\n', out);
  }
  if (o->temp && sec->temp) {
    fprintf(out, "TEMPORARY: %llu of %llu blocks (%.1f%%), %s of %s, freed "
	    "within %u allocations after their own\n",
	    (unsigned long long)sec->temp_total.n,
	    (unsigned long long)sec->made_total.n, sec->made_total.n ?
	    100.0 * (double)sec->temp_total.n / (double)sec->made_total.n : 0.0,
	    mp_fmt_bytes(b1, sizeof(b1), sec->temp_total.plus, o->human),
	    mp_fmt_bytes(b2, sizeof(b2), sec->made_total.plus, o->human),
	    p->window);
    for (i = 0, n = mp_rows_shown(sec->ntemp, o); i < n; i++) {
      const mp_srow *r = &sec->temp[i];
      label(out, sec, r->site);
      fprintf(out, ": %llu of %llu blocks\t%s of %s\n",
	      (unsigned long long)r->cost.n, (unsigned long long)r->made.n,
	      mp_fmt_bytes(b1, sizeof(b1), r->cost.plus, o->human),
	      mp_fmt_bytes(b2, sizeof(b2), r->made.plus, o->human));
      mark_alias(sec, r->site, used);
    }
    more_rows(out, n, sec->ntemp);
    fputc('\n', out);
  }
  if (o->stacks && mp_render_text_stacks(out, sec, &t, o, used) < 0) {
    mp_stacktree_free(&t);
    free(used);
    free(links);
    return -1;
  }
  {	/* The site a note names lists its alias too. */
    mp_cost all;
    uint32_t top = mp_profile_gc_top(p, &all);
    if (top != UINT32_MAX) mark_alias(sec, top, used);
  }
  mp_render_text_aliases(out, names, used);
  {	/* After Tarantool's layout. */
    notes n = { out, o->tarantool, 0 };
    mp_render_notes(sec, tree ? &t : NULL, o->human, note_line, &n);
    if (n.shown) fputc('\n', out);
  }
  if (tree) mp_stacktree_free(&t);
  free(used);
  free(links);
  return ferror(out) ? -1 : 0;
}

void mp_render_text_aliases(FILE *out, const mp_strtab *names,
			    const uint8_t *used)
{
  uint32_t i, j;
  for (i = 1, j = 0; i < names->nalias; i++) {
    if (!used[i]) continue;
    if (!j++) fputs("ALIASES:\n", out);
    text_alias(out, mp_strtab_get(names, names->alias[i]), i);
  }
}
