/*
** mp_symtab.c: symbol definitions and their lookup by address or number.
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/mp_symtab.h"

/* Map key: the id with the symbol's source in the top 3 bits (addresses
** and trace numbers fit in 61 bits), never 0. */
static inline uint64_t key_of(int src, uint64_t id)
{
  return ((uint64_t)(src >> MP_SRC_SHIFT) << 61) ^ id;
}

static inline size_t slot_of(uint64_t key, size_t mask)
{
  return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 24) & mask;
}

void mp_symtab_init(mp_symtab *t)
{
  memset(t, 0, sizeof(*t));
}

void mp_symtab_free(mp_symtab *t)
{
  int k;
  for (k = 0; k < MP_CRUNS; k++) free(t->crun[k]);
  free(t->sym);
  free(t->key);
  free(t->val);
  memset(t, 0, sizeof(*t));
}

/* Double the map; returns 0 or -1. */
static int grow_map(mp_symtab *t)
{
  size_t cap = t->key ? (t->mask + 1) * 2 : 1024, i;
  uint64_t *k = calloc(cap, sizeof(*k));
  uint32_t *v = malloc(cap * sizeof(*v));
  if (!k || !v) { free(k); free(v); return -1; }
  for (i = 0; t->key && i <= t->mask; i++)
    if (t->key[i]) {
      size_t j = slot_of(t->key[i], cap - 1);
      while (k[j]) j = (j + 1) & (cap - 1);
      k[j] = t->key[i];
      v[j] = t->val[i];
    }
  free(t->key);
  free(t->val);
  t->key = k;
  t->val = v;
  t->mask = cap - 1;
  return 0;
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
  uint64_t key = key_of(it->src, it->id);
  mp_sym *s;
  size_t j;
  if (t->nsym + 1 >= t->capsym) {
    uint32_t cap = t->capsym ? t->capsym * 2 : 256;
    mp_sym *n = realloc(t->sym, cap * sizeof(*n));
    if (!n) return 0;
    t->sym = n;
    t->capsym = cap;
    if (!t->nsym) t->nsym = 1;	/* Serial 0 means unresolved. */
  }
  if ((t->count + 1) * 2 > t->mask + 1 || !t->key)
    if (grow_map(t) < 0) return 0;
  s = &t->sym[t->nsym];
  s->src = it->src;
  s->id = it->id;
  s->name = it->name;
  s->name_len = it->src == MP_SRC_TRACE ? 0 : it->name_len;
  s->line = it->line;
  s->start = it->src == MP_SRC_TRACE ?
	     mp_symtab_find(t, MP_SRC_LFUNC, it->proto) : 0;
  for (j = slot_of(key, t->mask); t->key[j] && t->key[j] != key;
       j = (j + 1) & t->mask) {}
  if (it->src == MP_SRC_CFUNC && cadd(t, it->id, t->nsym) < 0) return 0;
  if (!t->key[j]) { t->key[j] = key; t->count++; }
  t->val[j] = t->nsym;
  return t->nsym++;
}

uint32_t mp_symtab_find(const mp_symtab *t, int src, uint64_t id)
{
  uint64_t key = key_of(src, id);
  size_t j;
  if (!t->key) return 0;
  for (j = slot_of(key, t->mask); t->key[j]; j = (j + 1) & t->mask)
    if (t->key[j] == key) return t->val[j];
  return 0;
}

/* "chunk:line" of a Lua location. */
static size_t lua_label(const mp_sym *s, uint64_t line, char *out, size_t size)
{
  int n = snprintf(out, size, "%.*s:%llu", (int)s->name_len, s->name,
		   (unsigned long long)line);
  return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

size_t mp_symtab_label(const mp_symtab *t, const mp_item *ev, char *out,
		       size_t size)
{
  uint32_t i;
  int n;
  switch (ev->src) {
  case MP_SRC_LFUNC:
    i = mp_symtab_find(t, MP_SRC_LFUNC, ev->id);
    if (i) return lua_label(&t->sym[i], ev->line, out, size);
    n = snprintf(out, size, "LFUNC 0x%llx:%llu", (unsigned long long)ev->id,
		 (unsigned long long)ev->line);
    break;
  case MP_SRC_CFUNC:
    i = mp_symtab_find(t, MP_SRC_CFUNC, ev->id);
    if (i)
      n = snprintf(out, size, "%.*s", (int)t->sym[i].name_len, t->sym[i].name);
    else
      n = snprintf(out, size, "CFUNC 0x%llx", (unsigned long long)ev->id);
    break;
  case MP_SRC_TRACE:
    i = mp_symtab_find(t, MP_SRC_TRACE, ev->id);
    n = snprintf(out, size, "TRACE [%llu]", (unsigned long long)ev->id);
    if (i && t->sym[i].start && n > 0 && (size_t)n < size) {
      const mp_sym *s = &t->sym[i];
      int m = snprintf(out + n, size - (size_t)n, " started at ");
      if (m > 0 && (size_t)(n + m) < size)
	return (size_t)(n + m) + lua_label(&t->sym[s->start], s->line,
					   out + n + m, size - (size_t)(n + m));
    }
    break;
  default:
    n = snprintf(out, size, "INTERNAL");
    break;
  }
  return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}
