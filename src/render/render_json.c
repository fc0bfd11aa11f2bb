/*
** render_json.c: the report as one JSON object: the data of the text
** report plus what a program needs to tell sites apart (kind, chunk, line,
** addresses). docs/REPORT.md and docs/report.schema.json describe it field
** by field.
*/

#include <stdlib.h>
#include <string.h>

#include "reader/mp_label.h"
#include "render/mp_json.h"
#include "render/mp_render.h"
#include "render/mp_sview.h"

static const char *const jsection[MP_AEV_N] = {
  NULL, "allocations", "deallocations", "reallocations"
};

/* A Lua chunk (or its alias) as "chunk" and maybe "alias" fields. */
static void jchunk(FILE *out, const mp_strtab *names, const char *field,
		   uint32_t chunk)
{
  const mp_name *nm = mp_strtab_get(names, chunk);
  fprintf(out, ",\"%s\":", field);
  mp_json_name(out, nm, MP_NAME_SHOWN);
  if (nm->alias) fprintf(out, ",\"alias\":\"function_alias_%u\"", nm->alias);
}

void mp_render_json_source(FILE *out, const mp_sections *sec, uint32_t i)
{
  const mp_strtab *names = &sec->p->syms.names;
  const mp_loc *l = &sec->p->site[i].loc;
  fprintf(out, "{\"kind\":\"%s\",\"label\":", mp_src_name(l->src));
  mp_json_cstr(out, sec->label[i]);
  if (l->heap == MP_HEAP_NATIVE) fputs(",\"heap\":\"native\"", out);
  switch (l->src) {
  case MP_SRC_LFUNC:
    fprintf(out, ",\"address\":%llu,\"line\":%llu",
	    (unsigned long long)l->id, (unsigned long long)l->line);
    if (l->name) {
      jchunk(out, names, "chunk", l->name);
      fprintf(out, ",\"function_line\":%llu", (unsigned long long)l->aux);
    }
    break;
  case MP_SRC_CFUNC:
    fprintf(out, ",\"address\":%llu", (unsigned long long)l->id);
    if (l->name) {
      fputs(",\"name\":", out);
      mp_json_name(out, mp_strtab_get(names, l->name), MP_NAME_SHOWN);
      fprintf(out, ",\"offset\":%llu", (unsigned long long)l->aux);
    }
    break;
  case MP_SRC_TRACE:
    fprintf(out, ",\"trace\":%llu", (unsigned long long)l->id);
    if (l->name) {
      jchunk(out, names, "start_chunk", l->name);
      fprintf(out, ",\"start_line\":%llu", (unsigned long long)l->aux);
    }
    break;
  }
  fputc('}', out);
}

void mp_render_json_costs(FILE *out, const mp_cost *alloc,
			  const mp_cost *live, const mp_cost *peak)
{
  fprintf(out, "\"alloc_events\":%llu,\"alloc_bytes\":%llu,"
	  "\"live_blocks\":%llu,\"live_bytes\":%llu",
	  (unsigned long long)alloc->n, (unsigned long long)alloc->plus,
	  (unsigned long long)live->n, (unsigned long long)live->plus);
  if (peak)
    fprintf(out, ",\"peak_blocks\":%llu,\"peak_bytes\":%llu",
	    (unsigned long long)peak->n, (unsigned long long)peak->plus);
}

/* A frame object. */
static void jframe(FILE *out, const mp_tnode *x)
{
  fprintf(out, "{\"kind\":\"%s\",\"label\":", mp_fk_name(x->kind));
  mp_json_cstr(out, x->label ? x->label : "");
  if (x->func) {
    fputs(",\"function\":", out);
    mp_json_cstr(out, x->func);
  }
  if (x->file) {
    fputs(",\"file\":", out);
    mp_json_cstr(out, x->file);
    fprintf(out, ",\"line\":%llu,\"function_line\":%llu",
	    (unsigned long long)x->line, (unsigned long long)x->func_line);
  }
  fputc('}', out);
}

int mp_render_json_stacks(FILE *out, const mp_sections *sec,
			  const mp_stacktree *t, const mp_render_opts *o,
			  uint8_t *used)
{
  mp_sview v;
  uint32_t i, j;
  fprintf(out, ",\n\"call_stacks\":{\"recorded\":%s,\"metric\":\"%s\","
	  "\"per_source\":%u,\"sources\":[", t->stacks ? "true" : "false",
	  mp_metric_names[o->metric],
	  o->stacks == UINT32_MAX ? 0 : o->stacks);
  if (!t->stacks) {
    fputs("]}", out);
    return 0;
  }
  if (mp_sview_build(&v, t, o->metric, o->top, o->stacks) < 0) return -1;
  for (i = 0; i < v.ngroup; i++) {
    const mp_sgroup *g = &v.group[i];
    fputs(i ? ",\n {\"label\":" : "\n {\"label\":", out);
    if (g->site < sec->p->nsite) {
      mp_json_cstr(out, sec->label[g->site]);
      fputs(",\"source\":", out);
      mp_render_json_source(out, sec, g->site);
      used[mp_site_alias(sec, g->site)] = 1;
    } else {
      mp_json_cstr(out, t->node[g->node].label ? t->node[g->node].label : "");
    }
    fputc(',', out);
    mp_render_json_costs(out, &g->alloc, &g->live,
			 t->peak ? &g->peak : NULL);
    fprintf(out, ",\"stacks\":%u,\"paths\":[", g->nstack);
    for (j = 0; j < g->npath; j++) {
      uint32_t k = v.path[g->path0 + j], hops = 0;
      fputs(j ? ",{" : "{", out);
      mp_render_json_costs(out, &t->node[k].alloc, &t->node[k].live,
	     t->peak ? &t->node[k].peak : NULL);
      fputs(",\"frames\":[", out);
      mp_sview_mark_aliases(t, k, &sec->p->syms.names, used);
      for (; k && k < t->n && hops < t->n; k = t->node[k].parent, hops++) {
	if (hops) fputc(',', out);
	jframe(out, &t->node[k]);
      }
      fputs("]}", out);
    }
    fputs("]}", out);
  }
  fputs("]}", out);
  mp_sview_free(&v);
  return 0;
}

/* Where the "notes" array goes, and how many it has. */
typedef struct notes {
  FILE *out;
  int n;
} notes;

/* The "trace_lines" field of trace site `site`'s row: the lines inside
** its code with their allocations and reallocations, or (live: HEAP
** SUMMARY's row) the blocks they hold at the end. -1 when out of memory. */
static int trace_lines(FILE *out, const mp_stacktree *t, uint32_t site,
		       int live)
{
  mp_tline *a;
  uint32_t j, n;
  if (mp_trace_lines(t, site, live, &a, &n) < 0) return -1;
  fputs(",\"trace_lines\":[", out);
  for (j = 0; j < n; j++) {
    fputs(j ? ",{\"line\":" : "{\"line\":", out);
    mp_json_cstr(out, a[j].label);
    if (live)
      fprintf(out, ",\"bytes\":%llu,\"blocks\":%llu}",
	      (unsigned long long)a[j].c.plus, (unsigned long long)a[j].c.n);
    else
      fprintf(out, ",\"events\":%llu,\"alloc_bytes\":%llu}",
	      (unsigned long long)a[j].c.n, (unsigned long long)a[j].c.plus);
  }
  fputc(']', out);
  free(a);
  return 0;
}

/* A note as a string of the "notes" array. */
static void note_string(void *ctx, const char *line)
{
  notes *n = ctx;
  if (n->n++) fputc(',', n->out);
  mp_json_cstr(n->out, line);
}

void mp_render_json_summary(FILE *out, const mp_profile *p)
{
  uint64_t ns = mp_profile_peak_ns(p);
  fprintf(out, ",\"peak\":{\"bytes\":%llu,\"blocks\":%llu",
	  (unsigned long long)p->peak_bytes,
	  (unsigned long long)p->peak_blocks);
  if (p->merged > 1) {
    fprintf(out, ",\"profiles\":%u}", p->merged);
  } else {
    fprintf(out, ",\"after_event\":%llu,\"events\":%llu",
	    (unsigned long long)p->peak_ev, (unsigned long long)p->nev);
    if (ns != UINT64_MAX)
      fprintf(out, ",\"time_ns\":%llu,\"duration_ns\":%llu",
	      (unsigned long long)ns, (unsigned long long)p->mark.ns);
    fputc('}', out);
  }
  fprintf(out, ",\"live\":{\"bytes\":%llu,\"blocks\":%llu}",
	  (unsigned long long)p->live_bytes, (unsigned long long)p->live_n);
  fprintf(out, ",\"collected\":%s", p->collect ? "true" : "false");
  if (p->settled) fputs(",\"settled\":true", out);
  if (p->exited) fputs(",\"uncollected\":\"exit\"", out);
  {	/* What the final collection freed of the program's blocks. */
    mp_cost all;
    if (mp_profile_gc_top(p, &all) != UINT32_MAX)
      fprintf(out, ",\"final_collection\":{\"freed_bytes\":%llu,"
	      "\"freed_blocks\":%llu}", (unsigned long long)all.plus,
	      (unsigned long long)all.n);
  }
  if (p->stopped[0]) {
    fputs(",\"stopped\":", out);
    mp_json_cstr(out, p->stopped);
  }
  if (p->sample) {
    uint32_t i;
    fputs(",\"sampled\":{", out);
    if (mp_render_rate(p)) fprintf(out, "\"rate\":%.0f,", p->sample);
    if (p->rates) {	/* A merge: each profile's. */
      fputs("\"rates\":[", out);
      for (i = 0; i < p->merged; i++)
	fprintf(out, "%s%.0f", i ? "," : "", p->rates[i]);
      fputs("],", out);
    }
    fprintf(out, "\"recorded_events\":%llu}", (unsigned long long)p->nev);
  }
  mp_render_json_native(out, p);
}

int mp_render_json(FILE *out, const mp_sections *sec, const mp_render_opts *o)
{
  const mp_profile *p = sec->p;
  const mp_strtab *names = &p->syms.names;
  mp_stacktree t;
  uint8_t *used;
  mp_memory mem;
  uint32_t i, j, n;
  int x, k, hasmem = mp_profile_memory(p, &mem);
  int hl = mp_heap_lines(sec, o), tree = o->stacks || hl || p->stacks;
  if (hasmem < 0) return -1;
  /* The tree first: labelling its frames may number more aliases. */
  if (tree && mp_stacktree_build(&t, sec) < 0) return -1;
  if (!(used = calloc((size_t)names->nalias + 1, 1))) {
    if (tree) mp_stacktree_free(&t);
    return -1;
  }
  fputs("{\"format\":\"ljmemprof-report\",\"format_version\":2,\"file\":", out);
  mp_json_cstr(out, o->file ? o->file : "");
  if (o->nfiles > 1) {
    fputs(",\"files\":[", out);
    for (x = 0; x < o->nfiles; x++) {
      if (x) fputc(',', out);
      mp_json_cstr(out, o->files[x]);
    }
    fputc(']', out);
  }
  fprintf(out, ",\"complete\":%s", p->rc == MP_END ? "true" : "false");
  if (p->rc != MP_END)
    fprintf(out, ",\"truncated_at\":%zu", p->r.err_offset);
  if (p->rc == MP_ERR_DATA) fputs(",\"damaged\":true", out);
  if (p->overflow) fputs(",\"overflow\":true", out);
  fprintf(out, ",\"versions\":{\"symtab\":%d,\"events\":%d}",
	  p->r.ljs_version, p->r.ljm_version);
  fprintf(out, ",\"sort\":\"%s\",\"top\":%llu",
	  sec->sort == MP_SORT_COUNT ? "count" : "bytes",
	  (unsigned long long)o->top);
  fprintf(out, ",\"totals\":{\"alloc_events\":%llu,\"realloc_events\":%llu,"
	  "\"free_events\":%llu,\"alloc_bytes\":%llu,\"free_bytes\":%llu}",
	  (unsigned long long)p->total[MP_AEV_ALLOC].n,
	  (unsigned long long)p->total[MP_AEV_REALLOC].n,
	  (unsigned long long)p->total[MP_AEV_FREE].n,
	  (unsigned long long)mp_profile_allocated(p),
	  (unsigned long long)mp_profile_freed(p));
  mp_render_json_summary(out, p);
  if (hasmem) mp_render_json_memory(out, &mem);	/* Native profiles. */
  for (x = 0; x < 3 && !o->leak_only; x++) {
    k = mp_section_order[x];
    fprintf(out, ",\n\"%s\":[", jsection[k]);
    for (i = 0, n = mp_rows_shown(sec->nrow[k], o); i < n; i++) {
      const mp_row *r = &sec->row[k][i];
      mp_cost c = mp_site_cost(&p->site[r->site], k);
      fputs(i ? ",\n {\"source\":" : "\n {\"source\":", out);
      mp_render_json_source(out, sec, r->site);
      used[mp_site_alias(sec, r->site)] = 1;
      fprintf(out, ",\"events\":%llu,\"alloc_bytes\":%llu,"
	      "\"free_bytes\":%llu", (unsigned long long)c.n,
	      (unsigned long long)c.plus, (unsigned long long)c.minus);
      if (k == MP_AEV_ALLOC && o->stacks && t.stacks &&
	  p->site[r->site].loc.src == MP_SRC_TRACE) {
	/* The lines inside the trace, as the text lists them. */
	if (trace_lines(out, &t, r->site, 0) < 0) {
	  mp_stacktree_free(&t);
	  free(used);
	  return -1;
	}
      }
      if (k != MP_AEV_ALLOC) {
	fputs(",\"overrides\":[", out);
	for (j = 0; j < r->nlink; j++) {
	  const mp_link *l = &p->link[sec->link[r->link0 + j]];
	  fputs(j ? ",{\"source\":" : "{\"source\":", out);
	  mp_render_json_source(out, sec, l->owner);
	  used[mp_site_alias(sec, l->owner)] = 1;
	  fprintf(out, ",\"blocks\":%llu,\"alloc_bytes\":%llu,"
		  "\"free_bytes\":%llu}", (unsigned long long)l->cost.n,
		  (unsigned long long)l->cost.plus,
		  (unsigned long long)l->cost.minus);
	}
	fputc(']', out);
      }
      fputc('}', out);
    }
    fputs("]", out);
  }
  fprintf(out, ",\n\"accounting\":\"%s\"", o->tarantool ? "tarantool" : "live");
  fputs(",\n\"heap_summary\":[", out);
  for (i = 0, n = mp_rows_shown(sec->nlive, o); !o->tarantool && i < n; i++) {
    const mp_srow *r = &sec->live[i];
    fputs(i ? ",\n {\"source\":" : "\n {\"source\":", out);
    mp_render_json_source(out, sec, r->site);
    used[mp_site_alias(sec, r->site)] = 1;
    fprintf(out, ",\"bytes\":%llu,\"blocks\":%llu",
	    (unsigned long long)r->cost.plus, (unsigned long long)r->cost.n);
    if (hl && p->site[r->site].loc.src == MP_SRC_TRACE) {
      /* The lines inside the trace that hold its blocks, as the text. */
      if (trace_lines(out, &t, r->site, 1) < 0) {
	mp_stacktree_free(&t);
	free(used);
	return -1;
      }
    }
    fputc('}', out);
  }
  for (i = 0, n = mp_rows_shown(sec->nheld, o); o->tarantool && i < n; i++) {
    const mp_held *h = &sec->held[i];
    fputs(i ? ",\n {\"source\":" : "\n {\"source\":", out);
    mp_render_json_source(out, sec, h->site);
    used[mp_site_alias(sec, h->site)] = 1;
    fprintf(out, ",\"bytes\":%llu,\"allocs\":%llu,\"frees\":%llu}",
	    (unsigned long long)mp_held_bytes(h), (unsigned long long)h->cost.n,
	    (unsigned long long)h->nfree);
  }
  fputc(']', out);
  if (o->peak && sec->peak) {
    fputs(",\n\"peak_sources\":[", out);
    for (i = 0, n = mp_rows_shown(sec->npeak, o); i < n; i++) {
      const mp_srow *r = &sec->peak[i];
      fputs(i ? ",\n {\"source\":" : "\n {\"source\":", out);
      mp_render_json_source(out, sec, r->site);
      used[mp_site_alias(sec, r->site)] = 1;
      fprintf(out, ",\"bytes\":%llu,\"blocks\":%llu}",
	      (unsigned long long)r->cost.plus, (unsigned long long)r->cost.n);
    }
    fputc(']', out);
  }
  if (o->temp && sec->temp) {
    fprintf(out, ",\n\"temporary\":{\"window\":%u,\"blocks\":%llu,"
	    "\"bytes\":%llu,\"made_blocks\":%llu,\"made_bytes\":%llu}",
	    p->window, (unsigned long long)sec->temp_total.n,
	    (unsigned long long)sec->temp_total.plus,
	    (unsigned long long)sec->made_total.n,
	    (unsigned long long)sec->made_total.plus);
    fputs(",\n\"temporary_sources\":[", out);
    for (i = 0, n = mp_rows_shown(sec->ntemp, o); i < n; i++) {
      const mp_srow *r = &sec->temp[i];
      fputs(i ? ",\n {\"source\":" : "\n {\"source\":", out);
      mp_render_json_source(out, sec, r->site);
      used[mp_site_alias(sec, r->site)] = 1;
      fprintf(out, ",\"blocks\":%llu,\"bytes\":%llu,\"made_blocks\":%llu,"
	      "\"made_bytes\":%llu}", (unsigned long long)r->cost.n,
	      (unsigned long long)r->cost.plus, (unsigned long long)r->made.n,
	      (unsigned long long)r->made.plus);
    }
    fputc(']', out);
  }
  if (o->stacks && mp_render_json_stacks(out, sec, &t, o, used) < 0) {
    mp_stacktree_free(&t);
    free(used);
    return -1;
  }
  {	/* The notes of the text, each a string; the site named lists its
	** alias too. */
    notes n = { out, 0 };
    uint32_t top;
    fputs(",\n\"notes\":[", out);
    if ((top = mp_render_notes(sec, tree ? &t : NULL, 0, note_string,
			       &n)) != UINT32_MAX)
      used[mp_site_alias(sec, top)] = 1;
    fputc(']', out);
  }
  if (tree) mp_stacktree_free(&t);
  mp_render_json_aliases(out, names, used);
  fputs("}\n", out);
  free(used);
  return ferror(out) ? -1 : 0;
}

void mp_render_json_aliases(FILE *out, const mp_strtab *names,
			    const uint8_t *used)
{
  uint32_t i, j;
  fputs(",\n\"aliases\":[", out);
  for (i = 1, j = 0; i < names->nalias; i++) {
    if (!used[i]) continue;
    fprintf(out, "%s{\"name\":\"function_alias_%u\",\"text\":", j++ ? "," : "",
	    i);
    mp_json_name(out, mp_strtab_get(names, names->alias[i]), MP_NAME_KEEP);
    fputc('}', out);
  }
  fputc(']', out);
}
