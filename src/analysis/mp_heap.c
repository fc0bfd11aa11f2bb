/*
** mp_heap.c: live blocks by address (see mp_heap.h for the layout).
**
** The header holds the common cases inline (a free or an allocation in
** the page of the previous operation); this file holds the rest: the
** directory, page tables that appear, grow and go, replacements and sizes
** of 4 GiB or more. The big heap stores raw values (the two halves of the
** size), so it goes through the raw_* functions, which never look at what
** a value means.
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_heap.h"

#define PAGE_MASK	((1u << MP_HPAGE_BITS) - 1)
#define LG_MIN		2
#define LG_MAX		MP_HPAGE_LGMAX
#define SPARE_BYTES	((size_t)1 << 20)	/* Empty tables kept at most... */
#define SPARE_LG	3	/* ...of 8 slots at most. */
#define DIR_MIN		256

void mp_heap_init(mp_heap *h)
{
  memset(h, 0, sizeof(*h));
}

void mp_heap_init_stamped(mp_heap *h)
{
  mp_heap_init(h);
  h->stamped = 1;
}

void mp_heap_free(mp_heap *h)
{
  size_t i;
  if (h->big) { mp_heap_free(h->big); free(h->big); }
  for (i = 0; h->dir && i <= h->dmask; i++)
    if (h->dir[i].key) free(h->dir[i].pg);
  for (i = 0; i <= LG_MAX; i++)
    while (h->spare[i]) {
      mp_hpage *g = h->spare[i];
      memcpy(&h->spare[i], mp_hpage_val(g), sizeof(g));
      free(g);
    }
  free(h->dir);
  memset(h, 0, sizeof(*h));
}

/* -- Directory ------------------------------------------------------------ */

/* Slot of page key k, or the empty slot that ends its probe sequence. */
static size_t dir_probe(const mp_heap *h, uint64_t k)
{
  size_t j = mp_hdir_home(h, k);
  while (h->dir[j].key && h->dir[j].key != k) j = (j + 1) & h->dmask;
  return j;
}

/* Double the directory (or create it); 0 or -1. */
static int dir_grow(mp_heap *h)
{
  size_t cap = h->dir ? (h->dmask + 1) * 2 : DIR_MIN, i;
  mp_hdir *d = calloc(cap, sizeof(*d)), *old = h->dir;
  size_t omask = h->dmask;
  if (!d) return -1;
  h->dir = d;
  h->dmask = cap - 1;
  h->dshift = 64 - (unsigned)__builtin_ctzll(cap);
  for (i = 0; old && i <= omask; i++)
    if (old[i].key) d[dir_probe(h, old[i].key)] = old[i];
  free(old);
  return 0;
}

/* Empty directory slot j and shift later entries of its cluster back. */
static void dir_vacate(mp_heap *h, size_t j)
{
  size_t i = j, mask = h->dmask;
  for (;;) {
    size_t k;
    i = (i + 1) & mask;
    if (!h->dir[i].key) break;
    k = mp_hdir_home(h, h->dir[i].key);
    /* Leave i where it is if its home k lies cyclically in (j, i]. */
    if (j <= i ? (j < k && k <= i) : (j < k || k <= i)) continue;
    h->dir[j] = h->dir[i];
    j = i;
  }
  h->dir[j].key = 0;
  h->dir[j].pg = NULL;
}

mp_hpage *mp_heap_page(mp_heap *h, uint64_t k)
{
  size_t j;
  h->lookups++;
  if (!h->dir) return NULL;
  j = dir_probe(h, k);
  if (!h->dir[j].key) {
    h->absent = k;
    h->absentslot = j;
    return NULL;
  }
  h->lastkey = k;
  h->lastslot = j;
  return h->last = h->dir[j].pg;
}

/* -- Page tables ---------------------------------------------------------- */

/* Bytes of a page table of 2^lg slots in h. */
static size_t page_bytes(const mp_heap *h, unsigned lg)
{
  return sizeof(mp_hpage) + ((size_t)1 << lg) *
	 (sizeof(uint16_t) + sizeof(mp_hval) + (h->stamped ? 4 : 0));
}

/* A page table of 2^lg empty slots, or NULL. An empty table kept by
** page_drop() is taken first: a program that allocates blocks of a page
** or more makes and empties a small table at nearly every event, the
** empty ones in bursts (a garbage cycle) and the new ones in others. */
static mp_hpage *page_new(mp_heap *h, unsigned lg)
{
  size_t n = (size_t)1 << lg;
  mp_hpage *g = h->spare[lg];
  if (g) {	/* Its keys are all 0; the link is in its first value. */
    memcpy(&h->spare[lg], mp_hpage_val(g), sizeof(g));
    h->sparebytes -= page_bytes(h, lg);
    return g;
  }
  g = malloc(page_bytes(h, lg));
  if (!g) return NULL;
  g->lg = (uint16_t)lg;
  g->count = 0;
  g->unused = 0;
  memset(mp_hpage_key(g), 0, n * sizeof(uint16_t));
  return g;
}

/* Free the empty table g (all keys 0), or keep it for page_new() if it is
** small. Keeping the tables of dense pages too made a binary-trees profile
** 10% slower, probably because malloc hands out the tables of pages filled
** one after the other at neighbouring addresses, and kept ones are not. */
static void page_drop(mp_heap *h, mp_hpage *g)
{
  if (g->lg <= SPARE_LG &&
      h->sparebytes + page_bytes(h, g->lg) <= SPARE_BYTES) {
    memcpy(mp_hpage_val(g), &h->spare[g->lg], sizeof(g));
    h->spare[g->lg] = g;
    h->sparebytes += page_bytes(h, g->lg);
  } else {
    free(g);
  }
}

/* Size of the first table of page key k: large enough for as many blocks
** as its neighbours hold. An allocator fills a fresh region page after
** page, so a new page is about to hold what the one before it holds;
** starting at the smallest size and doubling would move each block two or
** three times (a quarter of the heap's time on a binary-trees profile).
** A sparse page next to a dense one takes at most the memory of the
** dense one, and only until it is emptied. */
static unsigned first_lg(mp_heap *h, uint64_t k)
{
  unsigned lg = LG_MIN, n = 0;
  size_t j;
  for (j = mp_hdir_home(h, k - 1); h->dir[j].key; j = (j + 1) & h->dmask)
    if (h->dir[j].key == k - 1) { n = h->dir[j].pg->count; break; }
  for (j = mp_hdir_home(h, k + 1); h->dir[j].key; j = (j + 1) & h->dmask)
    if (h->dir[j].key == k + 1) {
      if (h->dir[j].pg->count > n) n = h->dir[j].pg->count;
      break;
    }
  while (lg < LG_MAX && (n + 1) * 2 > 1u << lg) lg++;
  return lg;
}

/* Slot of offset off in g, or the empty slot where it would go; *dist gets
** how far that is from its home. */
static uint32_t page_probe(mp_hpage *g, uint32_t off, uint32_t *dist)
{
  uint16_t *key = mp_hpage_key(g);
  uint32_t m = (1u << g->lg) - 1, j = mp_hpage_home(off, g->lg), n = 0;
  while (key[j] && key[j] != off + 1) { j = (j + 1) & m; n++; }
  *dist = n;
  return j;
}

/* Replace g (the table of page key k) by one of 2^lg slots; NULL when out
** of memory (g unchanged). */
static mp_hpage *page_resize(mp_heap *h, mp_hpage *g, uint64_t k,
			     unsigned lg)
{
  mp_hpage *n = page_new(h, lg);
  uint16_t *okey = mp_hpage_key(g), *nkey;
  mp_hval *oval = mp_hpage_val(g), *nval;
  uint32_t i, j, d;
  if (!n) return NULL;
  nkey = mp_hpage_key(n);
  nval = mp_hpage_val(n);
  for (i = 0; i < (1u << g->lg); i++)
    if (okey[i]) {
      j = page_probe(n, okey[i] - 1u, &d);
      nkey[j] = okey[i];
      nval[j] = oval[i];
      if (h->stamped) mp_hpage_stamp(n)[j] = mp_hpage_stamp(g)[i];
    }
  n->count = g->count;
  h->dir[h->lastkey == k ? h->lastslot : dir_probe(h, k)].pg = n;
  if (h->lastkey == k) h->last = n;
  h->nslot += ((size_t)1 << lg) - ((size_t)1 << g->lg);
  free(g);
  return n;
}

void mp_heap_vacate(mp_heap *h, mp_hpage *g, uint64_t k, uint32_t j)
{
  uint16_t *key = mp_hpage_key(g);
  mp_hval *val = mp_hpage_val(g);
  uint32_t i = j, m = (1u << g->lg) - 1;
  if (--g->count == 0) {	/* The page's last block: drop its table. */
    key[j] = 0;
    dir_vacate(h, h->lastkey == k ? h->lastslot : dir_probe(h, k));
    h->npage--;
    h->nslot -= (size_t)1 << g->lg;
    h->lastkey = h->absent = 0;	/* Slots may have moved. */
    h->last = NULL;
    page_drop(h, g);
    return;
  }
  for (;;) {
    uint32_t home;
    i = (i + 1) & m;
    if (!key[i]) break;
    home = mp_hpage_home(key[i] - 1u, g->lg);
    if (j <= i ? (j < home && home <= i) : (j < home || home <= i)) continue;
    key[j] = key[i];
    val[j] = val[i];
    if (h->stamped) mp_hpage_stamp(g)[j] = mp_hpage_stamp(g)[i];
    j = i;
  }
  key[j] = 0;
}

/* -- Raw operations (values not interpreted) ------------------------------ */

/* Store v for addr, replacing any value (then copied to *old, and *found
** set). Returns 0, or -1 when out of memory (nothing changed). */
static int raw_put(mp_heap *h, uint64_t addr, mp_hval v, int *found,
		   mp_hval *old)
{
  uint64_t k = (addr >> MP_HPAGE_BITS) + 1;
  uint32_t off = (uint32_t)addr & PAGE_MASK, j, d;
  mp_hpage *g = k == h->lastkey ? h->last :
		k == h->absent ? NULL : mp_heap_page(h, k);
  *found = 0;
  if (!g) {	/* A page without blocks so far. */
    size_t s;
    if (!h->dir || (h->npage + 1) * 2 > h->dmask + 1) {
      if (dir_grow(h) < 0) return -1;
      h->absent = 0;	/* Slots have moved. */
    }
    if (!(g = page_new(h, first_lg(h, k)))) return -1;
    s = k == h->absent ? h->absentslot : dir_probe(h, k);
    h->dir[s].key = k;
    h->dir[s].pg = g;
    h->npage++;
    h->nslot += (size_t)1 << g->lg;
    h->lastkey = k;
    h->last = g;
    h->lastslot = s;
    h->absent = 0;
  }
  j = page_probe(g, off, &d);
  if (mp_hpage_key(g)[j]) {
    *found = 1;
    *old = mp_hpage_val(g)[j];
    mp_hpage_val(g)[j] = v;
    if (h->stamped) mp_hpage_stamp(g)[j] = h->now;
    return 0;
  }
  /* Keep the table at most half full and its probes short (a new table,
  ** being empty, never grows here). */
  while (g->lg < LG_MAX && (((uint32_t)g->count + 1) * 2 > (1u << g->lg) ||
			    d > MP_HPAGE_PROBE)) {
    if (!(g = page_resize(h, g, k, g->lg + 1u))) return -1;
    j = page_probe(g, off, &d);
  }
  mp_hpage_key(g)[j] = (uint16_t)(off + 1);
  mp_hpage_val(g)[j] = v;
  if (h->stamped) mp_hpage_stamp(g)[j] = h->now;
  g->count++;
  h->count++;
  return 0;
}

/* Remove addr and copy its value to *out; returns 1 if it was there. */
static int raw_take(mp_heap *h, uint64_t addr, mp_hval *out)
{
  uint64_t k = (addr >> MP_HPAGE_BITS) + 1;
  uint32_t off = (uint32_t)addr & PAGE_MASK, j, d;
  mp_hpage *g = k == h->lastkey ? h->last : mp_heap_page(h, k);
  if (!g) return 0;
  j = page_probe(g, off, &d);
  if (!mp_hpage_key(g)[j]) return 0;
  *out = mp_hpage_val(g)[j];
  if (h->stamped) h->took = mp_hpage_stamp(g)[j];
  h->count--;
  mp_heap_vacate(h, g, k, j);
  return 1;
}

/* -- Iteration ------------------------------------------------------------ */

/* The size of a block of the big heap at addr, without taking it. */
static uint64_t big_size(const mp_heap *h, uint64_t addr)
{
  uint64_t k = (addr >> MP_HPAGE_BITS) + 1;
  uint32_t off = (uint32_t)addr & PAGE_MASK, j, d;
  mp_hpage *g = h->big ? mp_heap_peek(h->big, k) : NULL;
  if (!g) return MP_HEAP_BIG;
  j = page_probe(g, off, &d);
  if (!mp_hpage_key(g)[j]) return MP_HEAP_BIG;
  return ((uint64_t)mp_hpage_val(g)[j].site << 32) | mp_hpage_val(g)[j].size;
}

void mp_heap_foreach(const mp_heap *h, void (*fn)(void *ctx, uint64_t addr,
						   uint64_t size,
						   uint32_t site),
		     void *ctx)
{
  size_t i;
  for (i = 0; h->dir && i <= h->dmask; i++) {
    mp_hpage *g = h->dir[i].pg;
    uint64_t page = (h->dir[i].key - 1) << MP_HPAGE_BITS;
    uint32_t j;
    if (!h->dir[i].key) continue;
    for (j = 0; j < (1u << g->lg); j++) {
      uint16_t key = mp_hpage_key(g)[j];
      mp_hval v;
      uint64_t addr;
      if (!key) continue;
      v = mp_hpage_val(g)[j];
      addr = page + key - 1u;
      fn(ctx, addr, v.size == MP_HEAP_BIG ? big_size(h, addr) : v.size,
	 v.site);
    }
  }
}

/* -- Sizes and the big heap ----------------------------------------------- */

uint64_t mp_heap_take_big(mp_heap *h, uint64_t addr)
{
  mp_hval b;
  if (h->big && raw_take(h->big, addr, &b))
    return ((uint64_t)b.site << 32) | b.size;
  return MP_HEAP_BIG;
}

int mp_heap_put_slow(mp_heap *h, uint64_t addr, uint64_t size,
		     uint32_t site)
{
  mp_hval v, old, b, tmp;
  int found, bfound = 0;
  uint64_t oldsize = 0;
  v.size = size >= MP_HEAP_BIG ? MP_HEAP_BIG : (uint32_t)size;
  v.site = site;
  if (size >= MP_HEAP_BIG) {	/* First the part that may fail alone. */
    if (!h->big) {
      if (!(h->big = malloc(sizeof(*h->big)))) return -1;
      mp_heap_init(h->big);
    }
    b.size = (uint32_t)size;
    b.site = (uint32_t)(size >> 32);
    if (raw_put(h->big, addr, b, &bfound, &tmp) < 0) return -1;
  }
  if (raw_put(h, addr, v, &found, &old) < 0) {
    if (size >= MP_HEAP_BIG) {	/* Undo the big part. */
      if (bfound) raw_put(h->big, addr, tmp, &bfound, &b);
      else raw_take(h->big, addr, &b);
    }
    return -1;
  }
  if (found) {	/* Replaced a block whose free was missed. */
    h->replaced = 1;
    h->rsite = old.site;
    if (old.size != MP_HEAP_BIG)
      oldsize = old.size;
    else if (size >= MP_HEAP_BIG)	/* Its size was overwritten above. */
      oldsize = bfound ? ((uint64_t)tmp.site << 32) | tmp.size : MP_HEAP_BIG;
    else
      oldsize = mp_heap_take_big(h, addr);
  }
  if (found) h->rsize = oldsize;
  h->bytes += size - oldsize;
  return 0;
}

/* See mp_heap.h. */
int mp_heap_owner(const mp_heap *h, uint64_t addr, uint32_t *site,
		  uint64_t *size)
{
  uint64_t k = (addr >> MP_HPAGE_BITS) + 1;
  uint32_t off = (uint32_t)addr & ((1u << MP_HPAGE_BITS) - 1), j, m;
  mp_hpage *g = mp_heap_peek(h, k);
  uint16_t *key;
  if (!g) return 0;
  key = mp_hpage_key(g);
  m = (1u << g->lg) - 1;
  for (j = mp_hpage_home(off, g->lg); key[j] != off + 1; j = (j + 1) & m)
    if (!key[j]) return 0;
  *site = mp_hpage_val(g)[j].site;
  if (size) {
    *size = mp_hpage_val(g)[j].size;
    if (*size == MP_HEAP_BIG) *size = big_size(h, addr);
  }
  return 1;
}
