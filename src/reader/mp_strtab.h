/*
** mp_strtab.h: interned names (chunk names, C function names, labels).
**
** Every name read from a stream is copied here once and shared by every
** symbol that carries it: a program that loads the same code a million
** times has a million prototype symbols and one name. This is also what
** lets the reader drop the bytes it has decoded (a window of a pipe, the
** mapped pages of a file already read). A name keeps at most
** MP_NAME_KEEP bytes; a longer one (a chunk loaded from a large string, or
** a crafted length) keeps its first MP_NAME_KEEP bytes and its length, and
** two names equal in both are one name. Names are never freed before the
** table, so pointers to them stay valid.
**
** A chunk name that is source text (code loaded from a string without a
** short name, mp_name_is_text()) is shown as "function_alias_N"; the
** numbers are given in the order the names are first shown
** (mp_strtab_alias()), the way Tarantool's parser numbers them.
*/

#ifndef MP_STRTAB_H
#define MP_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "util/mp_hash.h"

#define MP_NAME_KEEP	((size_t)1 << 20)	/* Bytes kept of one name. */

/* One name. */
typedef struct mp_name {
  const char *s;	/* Its first `kept` bytes (not NUL-terminated). */
  uint64_t len;		/* Its length in the stream. */
  uint32_t kept;	/* Bytes at s: len, or MP_NAME_KEEP if longer. */
  uint32_t alias;	/* Alias number, 0 until one is given. */
  uint64_t caddr;	/* A C symbol's name: the address of the first C
			   symbol with it, and... */
  uint8_t cshared;	/* ...1 once C symbols at two addresses have it
			   (labels then say which, see mp_label.h). */
} mp_name;

typedef struct mp_strtab {
  mp_name *name;	/* By id; name[0] is unused (0 = no name). */
  uint32_t n, cap;
  mp_hash map;		/* Hash of the kept bytes and length -> id. */
  uint32_t *alias;	/* Alias number -> id; alias[0] unused. */
  uint32_t nalias, capalias;
  mp_hash lline;	/* Lua lines that sources have, by chunk << 32 |
			   line: the first line of the function + 1, or
			   0 once two functions have it (mp_label.h). */
  mp_hash fname;	/* Names of Lua functions, by chunk << 32 | first
			   line: the name's id (mp_strtab_fname()). */
  struct mp_strblock *block;	/* Storage, newest first. */
  size_t bytes;		/* Bytes of names stored. */
} mp_strtab;

void mp_strtab_init(mp_strtab *t);
void mp_strtab_free(mp_strtab *t);

/* Id of the name of len bytes at s, added on first sight; 0 when out of
** memory. */
uint32_t mp_strtab_intern(mp_strtab *t, const char *s, uint64_t len);

/* A copy of n bytes at s in the table's storage, not interned (freed with
** the table); NULL when out of memory. */
const char *mp_strtab_copy(mp_strtab *t, const char *s, size_t n);

/* The name with id i (1 <= i < t->n). */
static inline const mp_name *mp_strtab_get(const mp_strtab *t, uint32_t i)
{
  return &t->name[i];
}

/* Longest chunk name loaded from a string (not starting with '@' or '=')
** that is shown by itself, as Lua names it: [string "tbl"]. A name this
** short and without control characters is a name given to load() (penlight's
** load(s, 'tbl')), not the code; a longer one is likely the code itself. */
#define MP_STRING_CHUNK_MAX	40

/* Non-zero if a chunk name is source text that gets an alias: it has a
** newline, or does not start with '@' (a file) or '=' (a description) and
** is longer than MP_STRING_CHUNK_MAX bytes or has a control character. */
int mp_name_is_text(const char *s, size_t len);

/* Non-zero if a chunk name is a short name of code loaded from a string,
** shown as [string "name"]: one that does not start with '@' or '=' and is
** not source text (mp_name_is_text()); the empty name too. */
int mp_name_is_string(const char *s, size_t len);

/* Note that line of chunk (a name) is a line of the function starting at
** fline: the labels of that line say which function once two have it.
** 0, or -1 when out of memory. */
int mp_strtab_lua_line(mp_strtab *t, uint32_t chunk, uint64_t line,
		       uint64_t fline);

/* Whether two functions have line of chunk (mp_strtab_lua_line()). */
int mp_strtab_line_shared(const mp_strtab *t, uint32_t chunk, uint64_t line);

/* Note that the function starting at fline of chunk is called name (len
** bytes: "parse_row", "M.parse"). Functions are sources by chunk and
** first line (mp_label.h): two that start on one line and are given two
** names have none. 0, or -1 when out of memory. */
int mp_strtab_fname_set(mp_strtab *t, uint32_t chunk, uint64_t fline,
			const char *name, uint64_t len);

/* The id of the name of the function starting at fline of chunk, 0 if it
** has none. */
uint32_t mp_strtab_fname(const mp_strtab *t, uint32_t chunk, uint64_t fline);

/* Alias number of name i, given now if it has none; 0 when out of memory. */
uint32_t mp_strtab_alias(mp_strtab *t, uint32_t i);

#endif
