/*
** report_fuzz.c: libFuzzer target over the whole reading pipeline, layer
** by layer.
**
** One input is a profile. It goes through the decoder one item at a time
** with the symbol table, the labeler and the JSON writer (as `ljmemprof
** events` uses them); through the profile pass twice, once from memory and
** once as a stream that arrives a few bytes at a time (the windowed input
** of pipes), which must agree exactly; then the sections, whose heap
** summary must add up to the live heap, and every renderer of the
** registry (the stack formats and the stack views too, Tarantool's
** accounting or not), with options taken from the input's last byte. A third pass keeps
** everything the analyses need (the owners' records, temporaries, the
** timeline): its peak and totals must be the plain pass's; its sections
** (PEAK, TEMPORARY) go through every renderer, HTML included. The profile
** is merged with itself, and diffed against the full pass, in every
** format that has a diff.
** Built and run by `make fuzz` (scripts/fuzz-report.sh); any crash,
** sanitizer report, leak, timeout or disagreement is a failure.
*/

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/mp_format.h"
#include "analysis/mp_diff.h"
#include "analysis/mp_merge.h"
#include "analysis/mp_profile.h"
#include "analysis/mp_sections.h"
#include "analysis/mp_stacks.h"
#include "reader/mp_input.h"
#include "reader/mp_label.h"
#include "render/mp_json.h"
#include "render/mp_render.h"
#include "render/mp_text.h"

static FILE *sink;

/* Decode one item at a time, label and write every event. */
static void events_path(const uint8_t *data, size_t size)
{
  mp_reader r;
  mp_item it;
  mp_symtab t;
  char label[MP_LABEL_MAX];
  int rc = mp_reader_init(&r, data, size);
  mp_symtab_init(&t);
  while (rc == MP_OK && (rc = mp_reader_next(&r, &it)) == MP_OK) {
    mp_loc l;
    if (it.kind == MP_AEV_SYMTAB) {
      mp_symtab_add(&t, &it);
      continue;
    }
    l = mp_loc_of(&t, it.src, it.id, it.line);
    mp_label(&t.names, &l, label, sizeof(label));
    mp_json_cstr(sink, label);
    mp_text_put(sink, label, strlen(label), 0);
  }
  if (rc == MP_MORE || (rc != MP_END && r.err_offset > size))
    __builtin_trap();
  mp_symtab_free(&t);
}

/* The pass over the input as a stream of chunk-byte reads must find what
** the pass over it in memory found. */
static void stream_path(const uint8_t *data, size_t size, const mp_profile *w,
			size_t chunk)
{
  mp_profile p;
  mp_input in;
  int rc, k;
  mp_profile_init(&p);
  mp_input_memory(&in, data, size, chunk);
  rc = mp_profile_read_input(&p, &in);
  if (rc != w->rc || p.nsite != w->nsite || p.nlink != w->nlink ||
      p.r.err_offset != w->r.err_offset || strcmp(p.r.err, w->r.err) ||
      p.heap.count != w->heap.count || p.net != w->net ||
      p.peak_bytes != w->peak_bytes || p.peak_ev != w->peak_ev ||
      p.live_bytes != w->live_bytes || p.nmark != w->nmark ||
      p.collect != w->collect)
    __builtin_trap();
  for (k = 0; k < MP_AEV_N; k++)
    if (memcmp(&p.total[k], &w->total[k], sizeof(mp_cost))) __builtin_trap();
  mp_input_close(&in);
  mp_profile_free(&p);
}

/* The pass that keeps everything, read as a stream: the same totals and
** peak as the plain pass w (which weighs a sampled profile the same way);
** then its sections in every format, a merge with itself and a diff. */
static void full_path(const uint8_t *data, size_t size, mp_profile *w,
		      const mp_render_opts *o, size_t chunk)
{
  mp_profile p, m;
  mp_sections sec;
  mp_input in;
  mp_diff d;
  const mp_renderer *r;
  int k;
  mp_profile_init(&p);
  p.want = MP_WANT_PEAK | MP_WANT_TEMP | MP_WANT_TIMELINE;
  p.window = 1 + (uint32_t)chunk * 3;
  mp_input_memory(&in, data, size, chunk);
  mp_profile_read_input(&p, &in);
  mp_input_close(&in);
  if (p.rc == MP_ERR_NOMEM || w->rc == MP_ERR_NOMEM) goto out;
  if (p.rc != w->rc || p.nsite != w->nsite || p.peak_bytes != w->peak_bytes ||
      p.peak_ev != w->peak_ev || p.live_n != w->live_n ||
      p.live_bytes != w->live_bytes || mp_profile_peak_ns(&p) !=
      mp_profile_peak_ns(w))
    __builtin_trap();
  for (k = 0; k < MP_AEV_N; k++)
    if (memcmp(&p.total[k], &w->total[k], sizeof(mp_cost))) __builtin_trap();
  if (mp_sections_build(&sec, &p, MP_SORT_BYTES) == 0) {
    for (r = mp_renderers; r->name; r++) r->render(sink, &sec, o);
    mp_sections_free(&sec);
  }
  mp_merge_init(&m);
  if (mp_merge_add(&m, &p, NULL) == 0 && mp_merge_add(&m, w, NULL) == 0 &&
      mp_sections_build(&sec, &m, MP_SORT_COUNT) == 0) {
    for (r = mp_renderers; r->name; r++) r->render(sink, &sec, o);
    mp_sections_free(&sec);
  }
  mp_profile_free(&m);
  if (mp_diff_build(&d, w, &p, o->metric, MP_SORT_BYTES, 1, 1) == 0) {
    d.file[0] = "base";
    d.file[1] = "new";
    for (r = mp_renderers; r->name; r++)
      if (r->diff) r->diff(sink, &d, o);
    mp_diff_free(&d);
  }
out:
  mp_profile_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  mp_profile p;
  mp_sections sec;
  mp_render_opts o;
  uint8_t opt = size ? data[size - 1] : 0;
  const mp_renderer *r;
  int rc;
  if (!sink) sink = fopen("/dev/null", "w");
  events_path(data, size);
  memset(&o, 0, sizeof(o));
  o.leak_only = (opt >> 1) & 1;
  o.human = (opt >> 2) & 1;
  o.top = (opt >> 3) & 3;
  o.metric = (mp_metric)((opt >> 4) % MP_METRIC_N);
  o.peak = o.temp = (opt >> 5) & 1;
  o.stacks = (opt >> 6) & 1 ? 1 + (opt >> 7) : 0;
  o.tarantool = (opt >> 7) & 1;
  o.file = "fuzz";
  mp_profile_init(&p);
  rc = mp_profile_read(&p, data, size);
  if (rc != MP_END && p.r.err_offset > size) __builtin_trap();
  stream_path(data, size, &p, 1 + (opt >> 5));
  full_path(data, size, &p, &o, 1 + (opt >> 6));
  if (mp_sections_build(&sec, &p, (opt & 1) ? MP_SORT_COUNT : MP_SORT_BYTES)
      == 0) {
    mp_stacktree t;
    mp_cost live = { 0, 0, 0 };
    uint32_t i;
    for (i = 0; i < sec.nlive; i++) mp_cost_add(&live, &sec.live[i].cost);
    if (live.n != p.live_n || live.plus != p.live_bytes)
      __builtin_trap();	/* The heap summary is the live heap. */
    for (r = mp_renderers; r->name; r++) r->render(sink, &sec, &o);
    if (mp_stacktree_build(&t, &sec) == 0) mp_stacktree_free(&t);
    mp_sections_free(&sec);
  }
  mp_profile_free(&p);
  return 0;
}
