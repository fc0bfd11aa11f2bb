/*
** mp_hash.c: open addressing with linear probing and backward-shift
** deletion (see mp_hash.h for the two ways to use it).
*/

#include <stdlib.h>
#include <string.h>

#include "util/mp_hash.h"

#define MIN_LG		6	/* 64 slots at least. */


/* Key 0 marks an empty slot: records whose hash is 0 are stored under 1. */
static inline uint64_t record_key(uint64_t hash)
{
  return hash ? hash : 1;
}

void mp_hash_free(mp_hash *h)
{
  free(h->key);
  free(h->val);
  memset(h, 0, sizeof(*h));
}

void mp_hash_each(const mp_hash *h, void (*f)(void *ud, uint64_t key),
		  void *ud)
{
  size_t j;
  if (h->zero) f(ud, 0);
  if (h->key)
    for (j = 0; j <= h->mask; j++)
      if (h->key[j]) f(ud, h->key[j]);
}

/* Rebuild the table with 2^lg slots; 0 or -1 (table unchanged). */
static int rehash(mp_hash *h, unsigned lg)
{
  size_t cap = (size_t)1 << lg, i;
  uint64_t *k = calloc(cap, sizeof(*k));
  uint32_t *v = h->map ? malloc(cap * sizeof(*v)) : NULL;
  mp_hash n;
  if (!k || (h->map && !v)) { free(k); free(v); return -1; }
  n = *h;
  n.key = k;
  n.val = v;
  n.mask = cap - 1;
  n.shift = 64 - lg;
  for (i = 0; h->key && i <= h->mask; i++)
    if (h->key[i]) {
      size_t j = mp_hash_home_(&n, h->key[i]);
      while (k[j]) j = (j + 1) & n.mask;
      k[j] = h->key[i];
      if (v) v[j] = h->val ? h->val[i] : 0;
    }
  free(h->key);
  free(h->val);
  *h = n;
  return 0;
}

int mp_hash_reserve(mp_hash *h, size_t n)
{
  unsigned lg = h->key ? 64 - h->shift : 0;
  size_t need = h->count + n;
  if (h->key && need * 2 <= h->mask + 1 && (!h->map || h->val)) return 0;
  if (lg < MIN_LG) lg = MIN_LG;
  while (((size_t)1 << lg) < need * 2) lg++;
  return rehash(h, lg);
}

/* Room for one more entry. */
static inline int room(mp_hash *h)
{
  if (h->key && (h->count + 1) * 2 <= h->mask + 1 && (!h->map || h->val))
    return 0;
  return mp_hash_reserve(h, 1);
}


/* Empty slot j and shift the later entries of its cluster back. */
static void vacate(mp_hash *h, size_t j)
{
  size_t i = j;
  for (;;) {
    size_t k;
    i = (i + 1) & h->mask;
    if (!h->key[i]) break;
    k = mp_hash_home_(h, h->key[i]);
    /* Leave i where it is if its home k lies cyclically in (j, i]. */
    if (j <= i ? (j < k && k <= i) : (j < k || k <= i)) continue;
    h->key[j] = h->key[i];
    if (h->val) h->val[j] = h->val[i];
    j = i;
  }
  h->key[j] = 0;
  h->count--;
}

/* -- Exact keys ----------------------------------------------------------- */

int mp_hash_add(mp_hash *h, uint64_t key)
{
  size_t j;
  if (!key) {
    if (h->zero) return 0;
    h->zero = 1;
    h->zval = 0;
    h->count++;
    return 1;
  }
  if (h->key) {
    j = mp_hash_probe_(h, key);
    if (h->key[j]) return 0;
  }
  if (room(h) < 0) return -1;
  j = mp_hash_probe_(h, key);
  h->key[j] = key;
  if (h->val) h->val[j] = 0;
  h->count++;
  return 1;
}


int mp_hash_put(mp_hash *h, uint64_t key, uint32_t val)
{
  size_t j;
  h->map = 1;
  if (!key) {
    int isnew = !h->zero;
    h->zero = 1;
    h->zval = val;
    h->count += (size_t)isnew;
    return isnew;
  }
  if (h->key && h->val) {
    j = mp_hash_probe_(h, key);
    if (h->key[j]) { h->val[j] = val; return 0; }
    if ((h->count + 1) * 2 <= h->mask + 1) goto store;	/* j stays. */
  }
  if (room(h) < 0) return -1;
  j = mp_hash_probe_(h, key);
  if (h->key[j]) { h->val[j] = val; return 0; }
store:
  h->key[j] = key;
  h->val[j] = val;
  h->count++;
  return 1;
}

uint32_t *mp_hash_get(const mp_hash *h, uint64_t key)
{
  size_t j;
  if (!key) return h->zero ? (uint32_t *)&h->zval : NULL;
  if (!h->key || !h->val) return NULL;
  j = mp_hash_probe_(h, key);
  return h->key[j] ? &h->val[j] : NULL;
}

int mp_hash_del(mp_hash *h, uint64_t key)
{
  return mp_hash_take(h, key, NULL);
}

int mp_hash_take(mp_hash *h, uint64_t key, uint32_t *val)
{
  size_t j;
  if (!key) {
    if (!h->zero) return 0;
    if (val) *val = h->zval;
    h->zero = 0;
    h->count--;
    return 1;
  }
  if (!h->key || (val && !h->val)) return 0;
  j = mp_hash_probe_(h, key);
  if (!h->key[j]) return 0;
  if (val) *val = h->val[j];
  vacate(h, j);
  return 1;
}

/* -- Records kept by the caller -------------------------------------------- */

uint32_t *mp_hash_first(const mp_hash *h, uint64_t hash, mp_hash_iter *it)
{
  it->key = record_key(hash);
  if (!h->key || !h->val) return NULL;
  it->slot = (mp_hash_home_(h, it->key) - 1) & h->mask;
  return mp_hash_next(h, it);
}

uint32_t *mp_hash_next(const mp_hash *h, mp_hash_iter *it)
{
  size_t j = it->slot;
  for (;;) {
    j = (j + 1) & h->mask;
    if (!h->key[j]) break;
    if (h->key[j] == it->key) {
      it->slot = j;
      return &h->val[j];
    }
  }
  it->slot = j;
  return NULL;
}

int mp_hash_insert(mp_hash *h, uint64_t hash, uint32_t val)
{
  uint64_t key = record_key(hash);
  size_t j;
  h->map = 1;
  if (room(h) < 0) return -1;
  for (j = mp_hash_home_(h, key); h->key[j]; j = (j + 1) & h->mask) {}
  h->key[j] = key;
  h->val[j] = val;
  h->count++;
  return 0;
}

int mp_hash_remove(mp_hash *h, uint64_t hash, uint32_t val)
{
  mp_hash_iter it;
  uint32_t *v;
  for (v = mp_hash_first(h, hash, &it); v; v = mp_hash_next(h, &it))
    if (*v == val) {
      vacate(h, it.slot);
      return 1;
    }
  return 0;
}

/* -- Hashes --------------------------------------------------------------- */

uint64_t mp_hash_bytes(const void *p, size_t n)
{
  const unsigned char *s = p;
  uint64_t h = 0x243f6a8885a308d3ull ^ n, w;
  while (n >= 8) {
    memcpy(&w, s, 8);
    h = mp_hash_mix(h ^ w);
    s += 8;
    n -= 8;
  }
  w = 0;
  if (n) memcpy(&w, s, n);
  return mp_hash_mix(h ^ w ^ ((uint64_t)n << 59));
}
