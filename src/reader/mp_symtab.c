/*
** mp_symtab.c: symbol definitions and their lookup by address or number.
*/

#include <stdlib.h>
#include <string.h>

#include "reader/mp_symtab.h"
#include "util/mp_array.h"

void mp_symtab_init(mp_symtab *t)
{
  int k;
  memset(t, 0, sizeof(*t));
  for (k = 0; k < MP_SRC_N; k++) mp_hash_init_map(&t->latest[k]);
  mp_hash_init_map(&t->builtin);
  mp_strtab_init(&t->names);
}

void mp_symtab_free(mp_symtab *t)
{
  int k;
  for (k = 0; k < MP_CRUNS; k++) free(t->crun[k]);
  for (k = 0; k < MP_SRC_N; k++) mp_hash_free(&t->latest[k]);
  mp_hash_free(&t->builtin);
  mp_strtab_free(&t->names);
  free(t->sym);
  memset(t, 0, sizeof(*t));
}

/* -- C symbols by address ------------------------------------------------ */

/* Order of two C symbols: by address, then by serial (older first). */
static inline int caddr_less(const mp_caddr *a, const mp_caddr *b)
{
  return a->addr < b->addr || (a->addr == b->addr && a->serial < b->serial);
}

/* Add a C symbol to the runs: like incrementing a binary counter, merge
** equal-sized runs upwards. Returns 0 or -1 (out of memory). */
static int cadd(mp_symtab *t, uint64_t addr, uint32_t serial)
{
  mp_caddr *carry = malloc(sizeof(*carry));
  size_t n = 1;
  int k;
  if (!carry) return -1;
  carry->addr = addr;
  carry->serial = serial;
  for (k = 0; k < MP_CRUNS; k++) {
    mp_caddr *run = t->crun[k], *m;
    size_t i = 0, j = 0, o = 0;
    if (!run) { t->crun[k] = carry; return 0; }
    m = malloc(2 * n * sizeof(*m));
    if (!m) { free(carry); return -1; }
    while (i < n && j < n)	/* Both have n entries. */
      m[o++] = caddr_less(&carry[j], &run[i]) ? carry[j++] : run[i++];
    while (i < n) m[o++] = run[i++];
    while (j < n) m[o++] = carry[j++];
    free(run);
    free(carry);
    t->crun[k] = NULL;
    carry = m;
    n *= 2;
  }
  free(carry);	/* 2^32 symbols: cannot happen with 32-bit serials. */
  return -1;
}

uint32_t mp_symtab_cfloor(const mp_symtab *t, uint64_t addr, uint64_t *off)
{
  const mp_caddr *best = NULL;
  int k;
  for (k = 0; k < MP_CRUNS; k++) {
    const mp_caddr *run = t->crun[k];
    size_t lo = 0, hi = (size_t)1 << k;	/* First entry > addr in [lo, hi]. */
    if (!run) continue;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (run[mid].addr <= addr) lo = mid + 1; else hi = mid;
    }
    if (lo && (!best || caddr_less(best, &run[lo - 1]))) best = &run[lo - 1];
  }
  if (!best) return 0;
  *off = addr - best->addr;
  return best->serial;
}

/* -- Definitions ---------------------------------------------------------- */

uint32_t mp_symtab_add(mp_symtab *t, const mp_item *it)
{
  mp_hash *latest;
  uint32_t *v, name, i;
  mp_sym *s;
  switch (it->src) {	/* The extension's records that are no symbols. */
  case MP_SRC_BUILTIN: return mp_symtab_builtin_add(t, it) == 0;
  case MP_SRC_FNAME:	/* The name of the function in force there. */
    i = mp_symtab_find(t, MP_SRC_LFUNC, it->id);
    return !i || !t->sym[i].name ||
	   mp_strtab_fname_set(&t->names, t->sym[i].name, t->sym[i].line,
			       it->name, it->name_len) == 0;
  case MP_SRC_LFUNC: case MP_SRC_CFUNC: case MP_SRC_TRACE: break;
  default: return UINT32_MAX;
  }
  latest = &t->latest[it->src >> MP_SRC_SHIFT];
  v = mp_hash_get(latest, it->id);
  if (it->src == MP_SRC_TRACE) {
    i = mp_symtab_find(t, MP_SRC_LFUNC, it->proto);
    name = i ? t->sym[i].name : 0;
  } else if (!(name = mp_strtab_intern(&t->names, it->name, it->name_len))) {
    return 0;
  }
  if (v && it->src != MP_SRC_CFUNC) {	/* Redefined: replace in place. */
    i = *v;
  } else {
    if (!t->nsym) t->nsym = 1;	/* Serial 0 means unresolved. */
    if (mp_array_grow((void **)&t->sym, t->nsym, &t->capsym,
		      sizeof(*t->sym)) < 0 ||
	mp_hash_reserve(latest, 1) < 0 ||
	(it->src == MP_SRC_CFUNC && cadd(t, it->id, t->nsym) < 0))
      return 0;
    i = t->nsym++;
    mp_hash_put(latest, it->id, i);	/* Cannot fail: room reserved. */
  }
  s = &t->sym[i];
  s->src = it->src;
  s->id = it->id;
  s->line = it->line;
  s->name = name;
  if (it->src == MP_SRC_CFUNC) {	/* Is the name shared by two functions? */
    mp_name *nm = &t->names.name[name];
    if (!nm->caddr) nm->caddr = it->id + 1;
    else if (nm->caddr != it->id + 1) nm->cshared = 1;
  }
  return i;
}

int mp_symtab_builtin_add(mp_symtab *t, const mp_item *it)
{
  uint32_t name = mp_strtab_intern(&t->names, it->name, it->name_len);
  return name && mp_hash_put(&t->builtin, it->id, name) >= 0 ? 0 : -1;
}

uint32_t mp_symtab_find(const mp_symtab *t, int src, uint64_t id)
{
  const uint32_t *v;
  if (src != MP_SRC_LFUNC && src != MP_SRC_CFUNC && src != MP_SRC_TRACE)
    return 0;	/* No symbol names such a location (a stack node). */
  v = mp_hash_get(&t->latest[src >> MP_SRC_SHIFT], id);
  return v ? *v : 0;
}

uint32_t mp_symtab_resolve(const mp_symtab *t, int src, uint64_t id)
{
  uint64_t off;
  uint32_t i;
  if (src == MP_SRC_INTERNAL) return 0;
  i = mp_symtab_find(t, src, id);
  if (!i && src == MP_SRC_CFUNC) i = mp_symtab_cfloor(t, id, &off);
  return i;
}
