/*
** mp_heap.h: the blocks alive in the profiled heap, by address.
**
** Two levels, so that the table has the locality of the heap it mirrors.
** A directory (open addressing, linear probing, backward-shift deletion)
** maps a 4 KiB page of the address space to a small table of the blocks
** that start in it; that table is open addressing too, but its home slot
** is the block's offset scaled to the table's size, so the slots follow
** the addresses in order. Allocators hand out neighbouring addresses one
** after the other and garbage collectors free them in runs, so one event
** after another lands in the same page table, mostly in the same cache
** line, and the hardware prefetcher sees the runs. The single table hashed
** by address that this replaces took a cache miss on nearly every event
** (20 ns an operation on the operations of a binary-trees profile with 1.2
** million live blocks, against 6 to 7 ns now), and a hash that kept
** neighbours together in one big table let dense pages spill into their
** neighbours' slots. The price is paid by blocks of a page or more, each
** alone in its page: a table made and dropped with each (a profile made of
** such blocks only reads a quarter slower than with the single table).
**
** A page table has 2^lg slots, kept at most half full, so a slot stands
** for 4096 >> lg bytes, at most half the mean distance between the page's
** blocks: blocks at even spacing never collide. Blocks packed more tightly
** than the rest of their page do; when an insertion has to probe more than
** MP_HPAGE_PROBE slots the table doubles (up to 8192 slots, where every
** offset has a slot of its own). Memory follows the peak number of live
** blocks: 10 bytes a slot, 20 to 40 a block (more in a sparse page next
** to a dense one, see first_lg()), plus 32 to 64 bytes of directory and
** 48 of table at least per page in use, which a page with one block pays
** alone (about twice the single table's memory for such blocks). A page
** table is dropped when its last block goes; up to 1 MiB of small empty
** ones are kept for new pages. Sizes of 4 GiB and more, which a real heap
** rarely has, go to a second heap of the same kind so that the common
** value stays 8 bytes.
**
** A heap made with mp_heap_init_stamped() also keeps a 32-bit stamp per
** block (an array after the values: 14 bytes a slot instead of 10): the
** one in h->now when the block was put, given back in h->took when it is
** taken. The analyses use it for the age of a block (temporaries).
*/

#ifndef MP_HEAP_H
#define MP_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define MP_HPAGE_BITS	12	/* Directory granule: 4 KiB pages. */
#define MP_HPAGE_LGMAX	(MP_HPAGE_BITS + 1)	/* Every offset has a slot. */
#define MP_HPAGE_PROBE	8	/* Longest insertion probe before growing. */
#define MP_HEAP_BIG	0xffffffffu	/* Size: look in the big heap. */

/* Size and owner of one block. In the big heap: the size's two halves. */
typedef struct mp_hval {
  uint32_t size;	/* Size, or MP_HEAP_BIG. */
  uint32_t site;	/* Owner (mp_profile's site number). */
} mp_hval;

/* The blocks of one page; the slots follow the header: uint16_t key[1 <<
** lg] (offset in the page + 1, 0 = empty), then mp_hval val[1 << lg]. */
typedef struct mp_hpage {
  uint16_t lg;		/* log2 of the slots, 2 to 13. */
  uint16_t count;	/* Blocks in the page. */
  uint32_t unused;	/* Keeps the values 8-byte aligned. */
} mp_hpage;

/* A directory slot. */
typedef struct mp_hdir {
  uint64_t key;		/* Page number + 1; 0 = empty. */
  mp_hpage *pg;
} mp_hdir;

typedef struct mp_heap {
  uint32_t now;		/* Stamp of the blocks put (stamped heaps)... */
  uint32_t took;	/* ...and of the last block taken. */
  uint8_t stamped;	/* 1 if blocks have stamps. */
  uint8_t replaced;	/* Set when a put replaced a block (its free was
			   missed): its owner and size follow. The caller
			   clears it. */
  uint32_t rsite;
  uint64_t rsize;
  mp_hdir *dir;		/* NULL until the first block. */
  size_t dmask;		/* Directory slots - 1. */
  unsigned dshift;	/* 64 - log2(directory slots). */
  size_t npage;		/* Pages with blocks. */
  size_t nslot;		/* Slots in the page tables (10 bytes each). */
  size_t lookups;	/* Directory lookups so far (page changes). */
  uint64_t lastkey;	/* Page of the last operation (0: none)... */
  mp_hpage *last;	/* ...its table... */
  size_t lastslot;	/* ...and its directory slot. */
  uint64_t absent;	/* Page of the last lookup that failed, or 0... */
  size_t absentslot;	/* ...and the empty slot where it would go. */
  mp_hpage *spare[MP_HPAGE_LGMAX + 1];	/* Empty tables kept, by size... */
  size_t sparebytes;	/* ...and their bytes. */
  size_t count;		/* Blocks. */
  uint64_t bytes;	/* Sum of their sizes. */
  struct mp_heap *big;	/* Sizes >= MP_HEAP_BIG, or NULL. */
} mp_heap;

static inline uint16_t *mp_hpage_key(mp_hpage *g)
{
  return (uint16_t *)(g + 1);
}

static inline mp_hval *mp_hpage_val(mp_hpage *g)
{
  return (mp_hval *)(mp_hpage_key(g) + ((size_t)1 << g->lg));
}

/* The stamps of a stamped heap's table, after the values. */
static inline uint32_t *mp_hpage_stamp(mp_hpage *g)
{
  return (uint32_t *)(mp_hpage_val(g) + ((size_t)1 << g->lg));
}

/* Home slot of a page offset: the offset scaled to 2^lg slots. */
static inline uint32_t mp_hpage_home(uint32_t off, unsigned lg)
{
  return (off << lg) >> MP_HPAGE_BITS;
}

/* Home slot of page key k in the directory: a multiplicative hash. */
static inline size_t mp_hdir_home(const mp_heap *h, uint64_t k)
{
  return (size_t)((k * 0x9e3779b97f4a7c15ull) >> h->dshift);
}

/* Table of page key k, or NULL; makes it the last page. */
mp_hpage *mp_heap_page(mp_heap *h, uint64_t k);

/* Remove slot j of page table g of page key k (backward shift; frees the
** table when it empties). */
void mp_heap_vacate(mp_heap *h, mp_hpage *g, uint64_t k, uint32_t j);

/* Slow half of mp_heap_put(): a new page, a full table, a big size. */
int mp_heap_put_slow(mp_heap *h, uint64_t addr, uint64_t size,
		     uint32_t site);

/* Size of a block whose value says MP_HEAP_BIG, taken from the big heap. */
uint64_t mp_heap_take_big(mp_heap *h, uint64_t addr);

void mp_heap_init(mp_heap *h);
void mp_heap_free(mp_heap *h);

/* An empty heap whose blocks have stamps (see above). */
void mp_heap_init_stamped(mp_heap *h);

/* Call fn(ctx, addr, size, site) for every block, in no particular order;
** the heap must not change meanwhile. */
void mp_heap_foreach(const mp_heap *h, void (*fn)(void *ctx, uint64_t addr,
						   uint64_t size,
						   uint32_t site),
		     void *ctx);

/* Record block addr (never 0) of size bytes owned by site, replacing any
** block at addr (one whose free was missed). Returns 0, or -1 when out of
** memory (nothing changed). Inline (by force: GCC stops inlining it into
** the two instances of the profile pass's loop, a tenth of its time): the
** common case is a slot in the page of the previous operation. */
static inline __attribute__((always_inline)) int mp_heap_put(mp_heap *h, uint64_t addr, uint64_t size,
			      uint32_t site)
{
  uint64_t k = (addr >> MP_HPAGE_BITS) + 1;
  uint32_t off = (uint32_t)addr & ((1u << MP_HPAGE_BITS) - 1), j, m, n;
  mp_hpage *g = h->last;
  uint16_t *key;
  mp_hval *v;
  if (k != h->lastkey && !(g = mp_heap_page(h, k)))
    return mp_heap_put_slow(h, addr, size, site);	/* A new page. */
  if (size >= MP_HEAP_BIG || ((uint32_t)g->count + 1) * 2 > (1u << g->lg))
    return mp_heap_put_slow(h, addr, size, site);
  key = mp_hpage_key(g);
  m = (1u << g->lg) - 1;
  for (j = mp_hpage_home(off, g->lg), n = 0; key[j]; j = (j + 1) & m)
    if (key[j] == off + 1 || ++n > MP_HPAGE_PROBE)	/* Replace, grow. */
      return mp_heap_put_slow(h, addr, size, site);
  key[j] = (uint16_t)(off + 1);
  v = &mp_hpage_val(g)[j];
  v->size = (uint32_t)size;
  v->site = site;
  if (h->stamped) mp_hpage_stamp(g)[j] = h->now;
  g->count++;
  h->count++;
  h->bytes += size;
  return 0;
}

/* Remove block addr; if it was there, store its size and owner and return
** 1, else return 0. */
static inline __attribute__((always_inline))
int mp_heap_take(mp_heap *h, uint64_t addr, uint64_t *size,
			       uint32_t *site)
{
  uint64_t k = (addr >> MP_HPAGE_BITS) + 1;
  uint32_t off = (uint32_t)addr & ((1u << MP_HPAGE_BITS) - 1), j, m;
  mp_hpage *g = h->last;
  uint16_t *key;
  mp_hval v;
  if (k != h->lastkey && !(g = mp_heap_page(h, k))) return 0;
  key = mp_hpage_key(g);
  m = (1u << g->lg) - 1;
  for (j = mp_hpage_home(off, g->lg); key[j] != off + 1; j = (j + 1) & m)
    if (!key[j]) return 0;
  v = mp_hpage_val(g)[j];
  *site = v.site;
  *size = v.size;
  if (h->stamped) h->took = mp_hpage_stamp(g)[j];
  if (v.size == MP_HEAP_BIG) *size = mp_heap_take_big(h, addr);
  h->count--;
  h->bytes -= *size;
  if (g->count > 1 && !key[(j + 1) & m]) {	/* Nothing to shift back. */
    key[j] = 0;
    g->count--;
  } else {
    mp_heap_vacate(h, g, k, j);
  }
  return 1;
}

/* The owner of block addr into *site and, if size is not NULL, its size
** into *size, without taking it: 1, or 0 if no block is there. */
int mp_heap_owner(const mp_heap *h, uint64_t addr, uint32_t *site,
		  uint64_t *size);

/* Table of page key k, or NULL; unlike mp_heap_page(), leaves the last
** page as it is, so that it can look ahead of the operations. */
static inline mp_hpage *mp_heap_peek(const mp_heap *h, uint64_t k)
{
  size_t j;
  if (k == h->lastkey) return h->last;
  if (!h->dir) return NULL;
  for (j = mp_hdir_home(h, k); h->dir[j].key; j = (j + 1) & h->dmask)
    if (h->dir[j].key == k) return h->dir[j].pg;
  return NULL;
}

/* Prefetching, in two passes over the addresses of the next few dozen
** operations (see mp_profile_read): first the directory slots of the pages
** they change to, then, the directory being in cache by then, the slots
** of the blocks in their page tables. It pays when operations jump from
** page to page over a heap larger than the caches (a program that frees
** strings all over a large heap: each operation would otherwise wait for
** two or three cache misses); runs in one page need none. These are
** macros: GCC 12 deems a function around __builtin_prefetch free of
** effects and deletes its calls. k_last holds the page of the previous
** address. */

/* Pass 1: the directory slot of addr's page, if it changes. */
#define mp_heap_prefetch_dir(h, addr, k_last) \
  do { \
    uint64_t hk_ = ((addr) >> MP_HPAGE_BITS) + 1; \
    if (hk_ != (k_last) && hk_ != (h)->lastkey && (h)->dir) \
      __builtin_prefetch(&(h)->dir[mp_hdir_home((h), hk_)]); \
    (k_last) = hk_; \
  } while (0)

/* Pass 2: the key and value of addr in its page's table (g_last: the
** table of k_last, looked up when the page changes). */
#define mp_heap_prefetch_slot(h, addr, k_last, g_last) \
  do { \
    uint64_t hk_ = ((addr) >> MP_HPAGE_BITS) + 1; \
    if (hk_ != (k_last)) { (g_last) = mp_heap_peek((h), hk_); (k_last) = hk_; } \
    if (g_last) { \
      uint32_t hj_ = mp_hpage_home((uint32_t)(addr) & \
				   ((1u << MP_HPAGE_BITS) - 1), (g_last)->lg); \
      __builtin_prefetch(&mp_hpage_key(g_last)[hj_], 1); \
      __builtin_prefetch(&mp_hpage_val(g_last)[hj_], 1); \
    } \
  } while (0)

#endif
