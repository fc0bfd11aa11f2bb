/*
** report_fuzz.c: libFuzzer target over the whole reading pipeline, layer
** by layer.
**
** One input is a profile. It goes through the decoder one item at a time
** with the symbol table, the labeler and the JSON writer (as `ljmemprof
** events` uses them); through the profile pass twice, once from memory and
** once as a stream that arrives a few bytes at a time (the windowed input
** of pipes), which must agree exactly; then the sections and every
** renderer of the registry (the stack formats and the --stacks views
** too), with options taken from the input's last byte.
** Built and run by `make fuzz` (scripts/fuzz-report.sh); any crash,
** sanitizer report, leak, timeout or disagreement is a failure.
*/

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/mp_format.h"
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
      p.heap.count != w->heap.count || p.net != w->net)
    __builtin_trap();
  for (k = 0; k < MP_AEV_N; k++)
    if (memcmp(&p.total[k], &w->total[k], sizeof(mp_cost))) __builtin_trap();
  mp_input_close(&in);
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
  o.metric = (mp_metric)((opt >> 4) & 3);
  o.stacks = (opt >> 6) & 1 ? 1 + (opt >> 7) : 0;
  o.file = "fuzz";
  mp_profile_init(&p);
  rc = mp_profile_read(&p, data, size);
  if (rc != MP_END && p.r.err_offset > size) __builtin_trap();
  stream_path(data, size, &p, 1 + (opt >> 5));
  if (mp_sections_build(&sec, &p, (opt & 1) ? MP_SORT_COUNT : MP_SORT_BYTES)
      == 0) {
    mp_stacktree t;
    for (r = mp_renderers; r->name; r++) r->render(sink, &sec, &o);
    if (mp_stacktree_build(&t, &sec) == 0) mp_stacktree_free(&t);
    mp_sections_free(&sec);
  }
  mp_profile_free(&p);
  return 0;
}
