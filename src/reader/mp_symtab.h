/*
** mp_symtab.h: the symbols of a stream and the one in force for a location.
**
** Symbols come before the events that use them and may be redefined when an
** address or a trace number is reused, so a location resolves to the latest
** definition seen. What a location is called depends only on the names the
** definition carries (mp_label.h), and names are interned (mp_strtab.h), so
** nothing keeps a definition once another replaces it: a Lua function's or
** a trace's redefinition overwrites it in place (its serial stays), and
** memory follows the live addresses and the distinct names, not the number
** of definitions (a program that loads a chunk a million times, at a few
** thousand addresses, has a few thousand). C symbols, which are few, are
** all kept: an address inside a function resolves to the nearest symbol
** below it. Nothing points into the stream, which may be dropped as soon as
** it is decoded. Memory: 24 bytes a definition kept, 2 to 4 map slots of
** 12 bytes an address, and the names.
*/

#ifndef MP_SYMTAB_H
#define MP_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "format/mp_format.h"
#include "reader/mp_strtab.h"
#include "util/mp_hash.h"

/* One symbol definition. */
typedef struct mp_sym {
  uint64_t id;		/* Address, or trace number. */
  uint64_t line;	/* First line (Lua) or start line (trace). */
  uint32_t name;	/* Chunk name or C name (mp_strtab id); trace: the
			   chunk name of its starting prototype, 0 if that
			   is not known. */
  uint8_t src;		/* What it names: MP_SRC_LFUNC, _CFUNC or _TRACE. */
} mp_sym;

/* A C symbol's address and serial, for lookups by nearest lower address. */
typedef struct mp_caddr {
  uint64_t addr;
  uint32_t serial;
} mp_caddr;

#define MP_CRUNS	32	/* Run k holds 0 or 2^k symbols. */

typedef struct mp_symtab {
  mp_sym *sym;		/* By serial; sym[0] is unused (0 = unresolved). */
  uint32_t nsym, capsym;
  mp_hash latest[MP_SRC_N];	/* By src >> MP_SRC_SHIFT: id -> serial of
				   the latest definition. */
  mp_strtab names;	/* The names the symbols carry. */
  mp_hash builtin;	/* Extension: ffid -> name id of a builtin. */
  /* C symbols sorted by address in runs of 2^k (a binary counter of sorted
  ** runs): adding is O(log n) amortised and a floor lookup O(log^2 n),
  ** however symbols and events interleave. */
  mp_caddr *crun[MP_CRUNS];
} mp_symtab;

void mp_symtab_init(mp_symtab *t);
void mp_symtab_free(mp_symtab *t);

/* Record a symbol item (kind MP_AEV_SYMTAB); returns its serial (that of
** the definition it replaces, for a Lua function or a trace), or 0 when
** out of memory. The extension's records of that kind are taken too: a
** builtin's name is kept (1 returned), a function's name given to the
** function in force at its address (1 returned), a node or a setting ignored
** (UINT32_MAX returned: they are the profile pass's). */
uint32_t mp_symtab_add(mp_symtab *t, const mp_item *it);

/* Serial of the symbol defined last for (src, id), 0 if none. */
uint32_t mp_symtab_find(const mp_symtab *t, int src, uint64_t id);

/* Serial of the C symbol at the highest address <= addr (the latest one
** defined there), 0 if none; *off gets addr minus the symbol's address. */
uint32_t mp_symtab_cfloor(const mp_symtab *t, uint64_t addr, uint64_t *off);

/* Serial of the symbol in force for an event location of source src: the
** one defined for id, or for a C address without one, the C symbol below
** it (the location is then inside that function). 0 if none. */
uint32_t mp_symtab_resolve(const mp_symtab *t, int src, uint64_t id);

/* Record the name of builtin ffid (an MP_SRC_BUILTIN item); 0, or -1 when
** out of memory. */
int mp_symtab_builtin_add(mp_symtab *t, const mp_item *it);

/* The name id of builtin ffid, 0 if none was given. */
static inline uint32_t mp_symtab_builtin(const mp_symtab *t, uint64_t ffid)
{
  const uint32_t *v = mp_hash_get(&t->builtin, ffid);
  return v ? *v : 0;
}

/* The name of symbol i (its kept bytes, *len of them; see mp_strtab.h), or
** NULL if it has none. */
static inline const char *mp_symtab_name(const mp_symtab *t, uint32_t i,
					 size_t *len)
{
  const mp_name *nm;
  if (!t->sym[i].name) { *len = 0; return NULL; }
  nm = mp_strtab_get(&t->names, t->sym[i].name);
  *len = nm->kept;
  return nm->s;
}

#endif
