/*
** mp_symtab.h: resolving event locations to the symbols in force.
**
** Symbols come before the events that use them and may be redefined when an
** address or a trace number is reused, so a location resolves to the latest
** definition seen. Each definition gets a serial number (its generation
** identity), so aggregations can tell two functions at one address apart.
** Strings point into the stream's bytes, which must outlive the table.
*/

#ifndef MP_SYMTAB_H
#define MP_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "format/mp_format.h"

/* One symbol definition. */
typedef struct mp_sym {
  uint8_t src;		/* What it names: MP_SRC_LFUNC, _CFUNC or _TRACE. */
  uint64_t id;		/* Address, or trace number. */
  const char *name;	/* Chunk name or C name (not NUL-terminated). */
  size_t name_len;
  uint64_t line;	/* First line (Lua) or start line (trace). */
  uint32_t start;	/* Trace: serial of its starting prototype, or 0. */
} mp_sym;

/* A C symbol's address and serial, for lookups by nearest lower address. */
typedef struct mp_caddr {
  uint64_t addr;
  uint32_t serial;
} mp_caddr;

#define MP_CRUNS	32	/* Run k holds 0 or 2^k symbols. */

/* Open-addressing map from (src, id) to the serial of its latest sym. */
typedef struct mp_symtab {
  mp_sym *sym;		/* By serial; sym[0] is unused (0 = unresolved). */
  uint32_t nsym, capsym;
  uint64_t *key;	/* id, src in the top bits; 0 = empty slot. */
  uint32_t *val;
  size_t mask, count;
  /* C symbols sorted by address in runs of 2^k (a binary counter of sorted
  ** runs): adding is O(log n) amortised and a floor lookup O(log^2 n),
  ** however symbols and events interleave. */
  mp_caddr *crun[MP_CRUNS];
} mp_symtab;

void mp_symtab_init(mp_symtab *t);
void mp_symtab_free(mp_symtab *t);

/* Record a symbol item; returns its serial, or 0 when out of memory. */
uint32_t mp_symtab_add(mp_symtab *t, const mp_item *it);

/* Serial of the symbol in force for an event location, 0 if none. */
uint32_t mp_symtab_find(const mp_symtab *t, int src, uint64_t id);

/* Serial of the C symbol at the highest address <= addr (the latest one
** defined there), 0 if none; *off gets addr minus the symbol's address. */
uint32_t mp_symtab_cfloor(const mp_symtab *t, uint64_t addr, uint64_t *off);

/* Write a human label for an event location into out (NUL-terminated):
** "INTERNAL", "@file.lua:12", "TRACE [3] started at @file.lua:41",
** "json_encode" (C function), "CFUNC 0x..." when unresolved. */
size_t mp_symtab_label(const mp_symtab *t, const mp_item *ev, char *out,
		       size_t size);

#endif
