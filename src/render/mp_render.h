/*
** mp_render.h: the renderers of a report.
*/

#ifndef MP_RENDER_H
#define MP_RENDER_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/mp_sections.h"

/* Render as text (the layout of Tarantool's parser) or as one JSON object
** (docs/REPORT.md). file is the name shown in JSON. Return 0 or -1 (write
** error, see errno). */
int mp_render_text(FILE *out, const mp_report *rep, const mp_report_opts *o);
int mp_render_json(FILE *out, const mp_report *rep, const mp_report_opts *o,
		   const char *file);

/* Format n bytes as "123B" or, if human, "1.50KiB"; returns buf. */
const char *mp_fmt_bytes(char *buf, size_t size, uint64_t n, int human);

#endif
