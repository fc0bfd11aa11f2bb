/*
** mp_label.h: the one labeler: what a location is called in every output
** (report sections, JSON sources, `ljmemprof events`).
**
**   INTERNAL                          the VM itself
**   @app.lua:12                       a line of a Lua function
**   function_alias_1:3                a line of code loaded from a string
**   TRACE [3] started at @app.lua:41  a JIT trace, by where it started
**   TRACE [3]                         a trace without a symbol
**   json_encode                       a C function, by its symbol
**   lj_tab_new+0x1c                   a C address inside a symbol
**   LFUNC 0x7f00...:12, CFUNC 0x7f... locations without a symbol
**
** Labels are raw bytes as the stream has them (renderers escape them for
** their output); a name longer than MP_NAME_SHOWN bytes is cut there
** (at a UTF-8 boundary), or at a NUL byte, and followed by "... (N
** bytes)".
*/

#ifndef MP_LABEL_H
#define MP_LABEL_H

#include <stddef.h>
#include <stdint.h>

#include "reader/mp_symtab.h"

#define MP_NAME_SHOWN	1024	/* Bytes of a name shown in a label. */
#define MP_LABEL_MAX	(2 * MP_NAME_SHOWN + 128)	/* Longest label + 1. */

/* Where events come from: the raw location and the symbol in force. */
typedef struct mp_loc {
  uint64_t id;		/* Proto/C address or trace number; 0: internal. */
  uint64_t line;	/* Lua line, else 0. */
  uint32_t sym;		/* Serial of the symbol in force, 0 if none. */
  uint8_t src;		/* MP_SRC_*. */
} mp_loc;

/* The location (src, id, line) resolved against the symbols in force. */
static inline mp_loc mp_loc_of(const mp_symtab *t, int src, uint64_t id,
			       uint64_t line)
{
  mp_loc l;
  l.src = (uint8_t)src;
  l.id = id;
  l.line = line;
  l.sym = mp_symtab_resolve(t, src, id);
  return l;
}

/* The chunk name shown for a location (its function's, or where its trace
** started), as a name id of t->names; 0 if none. */
uint32_t mp_loc_chunk(const mp_symtab *t, const mp_loc *l);

/* The line shown with that chunk name. */
uint64_t mp_loc_chunk_line(const mp_symtab *t, const mp_loc *l);

/* Write the label of l into out (NUL-terminated, at most size - 1 bytes;
** MP_LABEL_MAX is always enough). Chunk names that are source text get
** their alias number here, in the order they are first labeled. Returns
** the label's length. */
size_t mp_label(mp_symtab *t, const mp_loc *l, char *out, size_t size);

/* Length of the first bytes of a name to show when at most max may be:
** all n, or a cut at a UTF-8 character boundary at most max. */
size_t mp_name_cut(const char *s, size_t n, size_t max);

#endif
