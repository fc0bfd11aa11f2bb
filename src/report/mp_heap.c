/*
** mp_heap.c: live blocks by address (see mp_heap.h).
**
** The table soon outgrows the caches, so nearly every lookup would be a
** cache miss; mp_profile_read() prefetches slots a batch of events ahead
** (mp_heap_prefetch), which makes up for it (measured on binary-trees).
*/

#include <stdlib.h>
#include <string.h>

#include "report/mp_heap.h"

#define home mp_heap_home

void mp_heap_init(mp_heap *h)
{
  memset(h, 0, sizeof(*h));
}

void mp_heap_free(mp_heap *h)
{
  if (h->big) { mp_heap_free(h->big); free(h->big); }
  free(h->slot);
  memset(h, 0, sizeof(*h));
}

/* Double the table (or create it); returns 0 or -1. */
static int grow(mp_heap *h)
{
  size_t cap = h->slot ? (h->mask + 1) * 2 : 4096, i;
  mp_hslot *s = calloc(cap, sizeof(*s));
  if (!s) return -1;
  for (i = 0; h->slot && i <= h->mask; i++)
    if (h->slot[i].addr) {
      size_t j = home(h->slot[i].addr, cap - 1);
      while (s[j].addr) j = (j + 1) & (cap - 1);
      s[j] = h->slot[i];
    }
  free(h->slot);
  h->slot = s;
  h->mask = cap - 1;
  return 0;
}

/* Slot of addr, or the empty slot that ends its probe sequence. */
static inline size_t probe(const mp_heap *h, uint64_t addr)
{
  size_t j = home(addr, h->mask);
  while (h->slot[j].addr && h->slot[j].addr != addr) j = (j + 1) & h->mask;
  return j;
}

/* Empty slot j and shift later entries of its cluster back into place. */
static void vacate(mp_heap *h, size_t j)
{
  size_t i = j, mask = h->mask;
  for (;;) {
    size_t k;
    i = (i + 1) & mask;
    if (!h->slot[i].addr) break;
    k = home(h->slot[i].addr, mask);
    /* Move i to j unless its home k lies cyclically in (j, i]. */
    if (j <= i ? (j < k && k <= i) : (j < k || k <= i)) continue;
    h->slot[j] = h->slot[i];
    j = i;
  }
  h->slot[j].addr = 0;
}

/* Store a raw slot value for addr, replacing any; returns 0 or -1. */
static int raw_put(mp_heap *h, uint64_t addr, uint32_t site, uint32_t size)
{
  size_t j;
  if ((h->count + 1) * 8 > (h->mask + 1) * 5 || !h->slot)
    if (grow(h) < 0) return -1;
  j = probe(h, addr);
  if (!h->slot[j].addr) h->count++;
  h->slot[j].addr = addr;
  h->slot[j].site = site;
  h->slot[j].size = size;
  return 0;
}

/* Remove addr and copy its raw slot to *out; returns 1 if it was there. */
static int raw_take(mp_heap *h, uint64_t addr, mp_hslot *out)
{
  size_t j;
  if (!h->slot || !addr) return 0;
  j = probe(h, addr);
  if (!h->slot[j].addr) return 0;
  *out = h->slot[j];
  vacate(h, j);
  h->count--;
  return 1;
}

/* Size of the block in slot j (looked up in the big table if needed). */
static uint64_t slot_size(const mp_heap *h, size_t j)
{
  const mp_hslot *s = &h->slot[j];
  if (s->size == MP_HEAP_BIG && h->big && h->big->slot) {
    size_t k = probe(h->big, s->addr);
    const mp_hslot *b = &h->big->slot[k];
    if (b->addr) return ((uint64_t)b->site << 32) | b->size;
  }
  return s->size;
}

int mp_heap_put(mp_heap *h, uint64_t addr, uint64_t size, uint32_t site)
{
  size_t j;
  uint64_t old = 0;
  int found;
  mp_hslot tmp;
  if ((h->count + 1) * 8 > (h->mask + 1) * 5 || !h->slot)
    if (grow(h) < 0) return -1;
  j = probe(h, addr);	/* One probe: replace or insert. */
  found = h->slot[j].addr != 0;
  if (found) old = slot_size(h, j);
  if (size >= MP_HEAP_BIG) {
    if (!h->big) {
      if (!(h->big = malloc(sizeof(*h->big)))) return -1;
      mp_heap_init(h->big);
    }
    if (raw_put(h->big, addr, (uint32_t)(size >> 32), (uint32_t)size) < 0)
      return -1;
  } else if (found && h->slot[j].size == MP_HEAP_BIG && h->big) {
    raw_take(h->big, addr, &tmp);
  }
  h->slot[j].addr = addr;
  h->slot[j].site = site;
  h->slot[j].size = size >= MP_HEAP_BIG ? MP_HEAP_BIG : (uint32_t)size;
  h->count += !found;
  h->bytes += size - old;
  return 0;
}

int mp_heap_take(mp_heap *h, uint64_t addr, uint64_t *size, uint32_t *site)
{
  mp_hslot s, b;
  if (!raw_take(h, addr, &s)) return 0;
  *site = s.site;
  *size = s.size;
  if (s.size == MP_HEAP_BIG && h->big && raw_take(h->big, addr, &b))
    *size = ((uint64_t)b.site << 32) | b.size;
  h->bytes -= *size;
  return 1;
}
