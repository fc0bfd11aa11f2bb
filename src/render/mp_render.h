/*
** mp_render.h: the renderers of a report, in a registry.
**
** A renderer turns the sections of one profile (mp_sections) into one
** output format on a stdio stream. Each is a file of its own in this folder
** (render_text.c, render_json.c) and a line in the table of mp_render.c;
** the CLI parses --format against that table and lists it in --help, so a
** new format touches this folder only.
**
** Errors: a renderer returns 0, or -1 when writing failed (errno set) or
** memory ran out.
*/

#ifndef MP_RENDER_H
#define MP_RENDER_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/mp_sections.h"

/* How to render. */
typedef struct mp_render_opts {
  uint64_t top;		/* Rows per section; 0 = all. */
  int leak_only;	/* Only the heap summary. */
  int human;		/* Sizes as KiB, MiB, ... (text only). */
  const char *file;	/* The profile's name, for formats that show it. */
} mp_render_opts;

typedef int (*mp_render_fn)(FILE *out, const mp_sections *sec,
			    const mp_render_opts *o);

/* A renderer: its --format name, a line for --help, its function. */
typedef struct mp_renderer {
  const char *name;
  const char *summary;
  mp_render_fn render;
} mp_renderer;

/* Every renderer, the default first; the table ends with a NULL name. */
extern const mp_renderer mp_renderers[];

/* The renderer called name, or NULL. */
const mp_renderer *mp_renderer_find(const char *name);

/* The renderers (render_*.c). */
int mp_render_text(FILE *out, const mp_sections *sec, const mp_render_opts *o);
int mp_render_json(FILE *out, const mp_sections *sec, const mp_render_opts *o);

/* -- Helpers shared by renderers ------------------------------------------ */

/* Format n bytes as "123B" or, if human, "1.50KiB"; returns buf. */
const char *mp_fmt_bytes(char *buf, size_t size, uint64_t n, int human);

/* Rows of a section of n to show under o. */
static inline uint32_t mp_rows_shown(uint32_t n, const mp_render_opts *o)
{
  return o->top && o->top < n ? (uint32_t)o->top : n;
}

/* The section order of the text layout (Tarantool's): allocations,
** reallocations, deallocations. */
extern const uint8_t mp_section_order[3];

#endif
