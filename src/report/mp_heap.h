/*
** mp_heap.h: the blocks alive in the profiled heap, by address.
**
** An open-addressing table (linear probing, deletion by backward shift, so
** no tombstones) from a block's address to its size and the site that owns
** it. Its memory follows the number of live blocks, never the number of
** events: 16 bytes a slot at a load of at most 5/8. Sizes of 4 GiB and
** more, which a real heap rarely has, go to a second table of the same
** kind so that the common slot stays 16 bytes.
*/

#ifndef MP_HEAP_H
#define MP_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mp_hslot {
  uint64_t addr;	/* 0 = empty slot. */
  uint32_t site;	/* Owner; in the big-size table: size >> 32. */
  uint32_t size;	/* Size, or MP_HEAP_BIG (real size in the big table). */
} mp_hslot;

#define MP_HEAP_BIG	0xffffffffu

typedef struct mp_heap {
  mp_hslot *slot;
  size_t mask;		/* Slots - 1 (a power of two minus one), 0 if none. */
  size_t count;		/* Occupied slots. */
  uint64_t bytes;	/* Sum of the sizes of all blocks. */
  struct mp_heap *big;	/* Sizes >= MP_HEAP_BIG, or NULL. */
} mp_heap;

/* Home slot of addr: a multiplicative hash, whose high bits depend on all
** of the address. A hash that kept neighbouring addresses in neighbouring
** slots was tried for cache locality: dense runs of blocks in different
** mappings overlapped in the table into clusters thousands of slots long.
** Random slots miss the cache, which the prefetch below hides. */
static inline size_t mp_heap_home(uint64_t addr, size_t mask)
{
  return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 24) & mask;
}

/* Ask the CPU to fetch the slot of addr: a lookup a few events later then
** finds it in cache. Frees arrive in the garbage collector's order, so
** without this nearly every free waits for a cache miss. For writing: the
** slot is about to change. A macro: GCC 12
** deems a function around __builtin_prefetch free of effects and deletes
** its calls. */
#define mp_heap_prefetch(h, addr) \
  do { \
    if ((h)->slot) \
      __builtin_prefetch(&(h)->slot[mp_heap_home((addr), (h)->mask)], 1); \
  } while (0)

void mp_heap_init(mp_heap *h);
void mp_heap_free(mp_heap *h);

/* Record block addr (never 0) of size bytes owned by site, replacing any
** block at addr (one whose free was missed). Returns 0, or -1 when out of
** memory (nothing changed). */
int mp_heap_put(mp_heap *h, uint64_t addr, uint64_t size, uint32_t site);

/* Remove block addr; if it was there, store its size and owner and return
** 1, else return 0. */
int mp_heap_take(mp_heap *h, uint64_t addr, uint64_t *size, uint32_t *site);

#endif
