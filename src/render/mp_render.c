/*
** mp_render.c: the registry of renderers and what they share.
*/

#include <string.h>

#include "render/mp_render.h"

const mp_renderer mp_renderers[] = {
  { "text", "the layout of Tarantool's memprof parser (default)",
    mp_render_text },
  { "json", "one JSON object with the same data and each source's details "
    "(docs/REPORT.md)", mp_render_json },
  { NULL, NULL, NULL }
};

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
  while (v >= 1024 && u < 6) { v /= 1024; u++; }
  if (v == (double)(uint64_t)v)
    snprintf(buf, size, "%llu%s", (unsigned long long)v, unit[u]);
  else
    snprintf(buf, size, "%.2f%s", v, unit[u]);
  return buf;
}

