/*
** report_fuzz.c: libFuzzer target over the whole reading pipeline.
**
** One input is a profile. It goes through the decoder (both entry points),
** the symbol resolver and its labels (as `ljmemprof events` uses them), the
** profile pass, the report and both renderers, with options taken from the
** input's last byte. Built and run by `make fuzz` (scripts/fuzz-report.sh);
** any crash, sanitizer report, leak or timeout is a failure.
*/

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/mp_format.h"
#include "analysis/mp_profile.h"
#include "render/mp_render.h"
#include "reader/mp_symtab.h"

static FILE *sink;

/* Decode one item at a time and label every event. */
static void events_path(const uint8_t *data, size_t size)
{
  mp_reader r;
  mp_item it;
  mp_symtab t;
  char label[512];
  int rc = mp_reader_init(&r, data, size);
  mp_symtab_init(&t);
  while (rc == MP_OK && (rc = mp_reader_next(&r, &it)) == MP_OK) {
    if (it.kind == MP_AEV_SYMTAB) mp_symtab_add(&t, &it);
    else mp_symtab_label(&t, &it, label, sizeof(label));
  }
  if (rc != MP_END && r.err_offset > size) __builtin_trap();
  mp_symtab_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  mp_profile p;
  mp_report rep;
  mp_report_opts o;
  uint8_t opt = size ? data[size - 1] : 0;
  int rc;
  if (!sink) sink = fopen("/dev/null", "w");
  events_path(data, size);
  memset(&o, 0, sizeof(o));
  o.sort = (opt & 1) ? MP_SORT_COUNT : MP_SORT_BYTES;
  o.leak_only = (opt >> 1) & 1;
  o.human = (opt >> 2) & 1;
  o.top = (opt >> 3) & 3;
  mp_profile_init(&p);
  rc = mp_profile_read(&p, data, size);
  if (rc != MP_END && p.r.err_offset > size) __builtin_trap();
  if (rc == MP_END || rc == MP_ERR_TRUNC) {
    if (mp_report_build(&rep, &p, &o) == 0) {
      mp_render_text(sink, &rep, &o);
      mp_render_json(sink, &rep, &o, "fuzz");
      mp_report_free(&rep);
    }
  }
  mp_profile_free(&p);
  return 0;
}
