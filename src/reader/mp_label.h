/*
** mp_label.h: the one labeler: what a location is called in every output
** (report sections, JSON sources, `ljmemprof events`).
**
**   INTERNAL                          the VM itself
**   @app.lua:12                       a line of a Lua function
**   @app.lua:7 (function at line 5)   a line that two functions have
**   @app.lua:7 (main chunk)           (mp_loc below); the function's
**   @app.lua:7 (parse_row)            name when the profile has it
**   [string "tbl"]:3                  a line of code loaded from a string
**                                     with a short name (load(s, "tbl"))
**   function_alias_1:3                a line of code loaded from a string
**                                     named by its text (the alias lists
**                                     it)
**   TRACE [3] started at @app.lua:41  a JIT trace, by where it started
**   TRACE [3]                         a trace without a symbol
**   TRACE started at @app.lua:41      traces of several profiles that
**                                     started there (a merge: numbers
**                                     are per process)
**   json_encode                       a C function, by its symbol
**   encode@0x7f3a9c2b1040             a C function whose name other C
**                                     functions of the profile have too
**                                     (two modules' static encode): the
**                                     name and the symbol's address
**   lj_tab_new+0x1c                   a C address inside a symbol
**   LFUNC 0x7f00...:12, CFUNC 0x7f... locations without a symbol
**   @app.lua:12 [native]              native memory (malloc, mmap) made
**                                     there; a frame "malloc [native]"
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
#include "util/mp_hash.h"

/* Bytes of a name shown in a label or a name field: as many as the agent
** writes (it cuts longer names, with a marker of their length), so that
** what it wrote is shown whole; names from other writers are cut here. */
#define MP_NAME_SHOWN	4096
#define MP_LABEL_MAX	(2 * MP_NAME_SHOWN + 128)	/* Longest label + 1. */

/* Where events come from: the raw location and the names it resolved to
** (all a label is made of, with the first line of a Lua function).
**
** Two locations are one source when they name the same code: for Lua, the
** same line of the function starting on the same line of the same chunk
** (by name), however many prototypes ran it (a chunk loaded again and
** again, at new or reused addresses); for a trace, the same number
** started at the same place; for C, the same address (two functions with
** one name are two sources). A prototype address or trace number reused by different code
** is a different source. Two functions on one line are two sources,
** labelled "@app.lua:7 (function at line 5)" and "@app.lua:7 (main
** chunk)" once the profile notes that the line is shared
** (mp_strtab_lua_line(), for the sites and frames of a profile before
** they are labelled: mp_sections_build()). */
typedef struct mp_loc {
  uint64_t id;		/* Proto/C address or trace number (a source's
			   first one); 0: internal. */
  uint64_t line;	/* Lua line, else 0. */
  uint64_t aux;		/* Lua: the function's first line; C: the offset
			   from the symbol; trace: the line it started at. */
  uint32_t name;	/* Lua: chunk name; C: symbol name; trace: chunk
			   it started in (mp_strtab ids); 0: unresolved. */
  uint8_t src;		/* MP_SRC_*. */
  uint8_t heap;		/* MP_HEAP_NATIVE: a source of native memory (the
			   same place of the VM's heap is another one). */
} mp_loc;

#define MP_HEAP_NATIVE	1

/* The location (src, id, line) resolved against the symbols in force. */
mp_loc mp_loc_of(const mp_symtab *t, int src, uint64_t id, uint64_t line);

/* What tells sources apart (see mp_loc): k1, k2 with name and src. */
static inline void mp_loc_key(const mp_loc *l, uint64_t *k1, uint64_t *k2)
{
  switch (l->src) {
  case MP_SRC_LFUNC:
    *k1 = l->name ? l->aux : l->id;
    *k2 = l->line;
    break;
  case MP_SRC_CFUNC:
    *k1 = l->id;
    *k2 = 0;
    break;
  case MP_SRC_TRACE:
    *k1 = l->id;
    *k2 = l->name ? l->aux : 0;
    break;
  default:
    *k1 = *k2 = 0;
    break;
  }
}

/* Whether a and b are one source. */
static inline int mp_loc_same(const mp_loc *a, const mp_loc *b)
{
  uint64_t a1, a2, b1, b2;
  mp_loc_key(a, &a1, &a2);
  mp_loc_key(b, &b1, &b2);
  return a->src == b->src && a->name == b->name && a1 == b1 && a2 == b2 &&
	 a->heap == b->heap;
}

/* Hash of a source (equal for locations that mp_loc_same() finds equal). */
static inline uint64_t mp_loc_hash(const mp_loc *l)
{
  uint64_t k1, k2;
  mp_loc_key(l, &k1, &k2);
  return mp_hash_mix(k1 ^ mp_hash_mix(k2 + ((uint64_t)l->src << 40) +
				      ((uint64_t)l->heap << 48) +
				      ((uint64_t)l->name << 8)));
}

/* Write the label of l into out (NUL-terminated, at most size - 1 bytes;
** MP_LABEL_MAX is always enough). Chunk names that are source text get
** their alias number here, in the order they are first labeled. Returns
** the label's length. */
size_t mp_label(mp_strtab *names, const mp_loc *l, char *out, size_t size);

/* Write the name of Lua chunk (mp_strtab id) as labels show it into out
** (as mp_label() does, numbering its alias if it gets one): the file of a
** Lua location's label. Its length. */
size_t mp_chunk_label(mp_strtab *names, uint32_t chunk, char *out,
		      size_t size);

/* The location of a frame of a call stack (the extension's node record,
** mp_ext.h): kind fkind (MP_FK_*), its address, trace number or builtin
** id fa, its line, resolved against the symbols in force. A builtin's
** name goes in name (its id in id), a cut's depth limit in id (src 0 for
** both). */
mp_loc mp_frame_loc(const mp_symtab *t, int fkind, uint64_t fa,
		    uint64_t line);

/* Write the label of a frame of kind fkind at l (from mp_frame_loc())
** into out as mp_label() does, but a Lua frame of a named function or of
** a main chunk by the function and its line: "parse_row (app.lua:12)",
** "main chunk (app.lua:30)", "main chunk (app.lua)" when the frame has
** no line (a caller a trace returned below its base to); builtins by name ("string.rep", else
** "builtin#N"), a cut as "[deeper than N frames]". Its length. */
size_t mp_frame_label(mp_strtab *names, int fkind, const mp_loc *l,
		      char *out, size_t size);

/* How a Lua function without a name begins its name: "function at
** app.lua:5" (its file and first line). */
#define MP_FUNC_AT	"function at "

/* Write the name of the Lua function of l (resolved) into out: its name
** as the profile gives it ("parse_row", "M.parse", "obj:method"), "main
** chunk", else "function at app.lua:5" (where it starts). Its length; 0 (and "") if l is no resolved Lua
** location. */
size_t mp_func_label(mp_strtab *names, const mp_loc *l, char *out,
		     size_t size);

/* Length of the first bytes of a name to show when at most max may be:
** all n, or a cut at a UTF-8 character boundary at most max. */
size_t mp_name_cut(const char *s, size_t n, size_t max);

#endif
