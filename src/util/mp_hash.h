/*
** mp_hash.h: the one hash table of the project, for the agent and the
** reader alike.
**
** Open addressing with linear probing over an array of 64-bit keys (and,
** in a map, a parallel array of 32-bit values), at most half full, doubled
** when it would be fuller. Deletion shifts the later entries of a cluster
** back instead of leaving tombstones, so a table that sees many insertions
** and deletions (prototypes born and collected for hours) never degrades.
** The home slot of a key is a Fibonacci hash of it (multiply by 2^64/phi,
** keep the top bits), which spreads aligned pointers and small integers.
**
** Two ways to use it, on the same structure:
**
**   Exact keys: a set (mp_hash_add/has/del) or a map to 32-bit values
**   (mp_hash_put/get/del) of any 64-bit keys (0 included, it is kept
**   aside): pointers, addresses, packed ids. Don't mix set and map calls
**   on one table.
**
**   Records the caller keeps in its own array (compound or string keys:
**   a site, a name, a (parent node, frame) pair): the key is the record's
**   64-bit hash (mp_hash_mix(), mp_hash_bytes()), the value its index, and
**   several records may share a hash. Look up with mp_hash_first/next,
**   which return the candidates, compare them yourself, then
**   mp_hash_insert() or mp_hash_remove().
**
**   Lookup of a record:
**     mp_hash_iter it;
**     for (v = mp_hash_first(&t, h, &it); v; v = mp_hash_next(&t, &it))
**       if (same(&rec[*v], key)) return *v;
**     return mp_hash_insert(&t, h, new_index);
**
** A zeroed mp_hash is an empty set (no init call needed); a map or a
** table of records becomes one at its first mp_hash_put/insert, or at
** once with mp_hash_init_map() (before mp_hash_reserve()). Memory is
** malloc'd only: no stdio, no Lua, no locks, so the agent can call it from
** inside the allocator hook (the work is bounded: a growth rehashes once).
** Functions that allocate return -1 when out of memory and leave the table
** as it was. Cost: 8 bytes a slot for a set, 12 for a map; 2 to 4 slots a
** key.
*/

#ifndef MP_HASH_H
#define MP_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct mp_hash {
  uint64_t *key;	/* Slots; 0 = empty (key 0 is kept in zero/zval). */
  uint32_t *val;	/* Values by slot; NULL in a set. */
  size_t mask;		/* Slots - 1; 0 while key is NULL. */
  size_t count;		/* Entries (key 0 included). */
  unsigned shift;	/* 64 - log2(slots): the home slot's bits. */
  uint8_t map;		/* 1 once used as a map (values kept). */
  uint8_t zero;		/* 1 if key 0 is in (exact keys only). */
  uint32_t zval;	/* Its value. */
} mp_hash;

/* A position in a run of candidates (mp_hash_first/next). */
typedef struct mp_hash_iter {
  uint64_t key;
  size_t slot;
} mp_hash_iter;

/* An empty map (or table of records), so that mp_hash_reserve() makes
** room for values too. */
static inline void mp_hash_init_map(mp_hash *h)
{
  static const mp_hash empty;
  *h = empty;
  h->map = 1;
}

/* Free the table's memory; it is then empty and usable again. */
void mp_hash_free(mp_hash *h);

/* Make room for n more entries now, so that the next n insertions cannot
** fail or move slots. 0, or -1 when out of memory. */
int mp_hash_reserve(mp_hash *h, size_t n);

/* -- Exact keys ----------------------------------------------------------- */

/* Set: add key. 1 if it is new, 0 if it was there, -1 out of memory. */
int mp_hash_add(mp_hash *h, uint64_t key);

/* Home slot of key: Fibonacci hashing, the top bits of key * 2^64/phi. */
static inline size_t mp_hash_home_(const mp_hash *h, uint64_t key)
{
  return (size_t)((key * 0x9e3779b97f4a7c15ull) >> h->shift);
}

/* Slot of key, or the empty slot that ends its probe sequence. */
static inline size_t mp_hash_probe_(const mp_hash *h, uint64_t key)
{
  size_t j = mp_hash_home_(h, key);
  while (h->key[j] && h->key[j] != key) j = (j + 1) & h->mask;
  return j;
}

/* Set or map: 1 if key is in, else 0. Inline: the sampling hook asks it
** at every free. */
static inline int mp_hash_has(const mp_hash *h, uint64_t key)
{
  if (!key) return h->zero;
  return h->key && h->key[mp_hash_probe_(h, key)] != 0;
}

/* Map: key's value becomes val. 1 if key is new, 0 if it was there (value
** replaced), -1 out of memory. */
int mp_hash_put(mp_hash *h, uint64_t key, uint32_t val);

/* Map: the value of key (writable until the next insertion or deletion),
** or NULL if key is not in. */
uint32_t *mp_hash_get(const mp_hash *h, uint64_t key);

/* Set or map: remove key. 1 if it was there, else 0. Never allocates. */
int mp_hash_del(mp_hash *h, uint64_t key);

/* Map: remove key, its value into *val (set or map: val NULL, as
** mp_hash_del()). 1 if it was there, else 0 (*val untouched). One probe:
** mp_hash_get() and mp_hash_del() in one. */
int mp_hash_take(mp_hash *h, uint64_t key, uint32_t *val);

/* Set or map: call f(ud, key) for every key, in no order. */
void mp_hash_each(const mp_hash *h, void (*f)(void *ud, uint64_t key),
		  void *ud);

/* -- Records kept by the caller -------------------------------------------- */

/* First value stored under hash, or NULL; *it remembers where to go on. */
uint32_t *mp_hash_first(const mp_hash *h, uint64_t hash, mp_hash_iter *it);

/* Next value stored under the same hash, or NULL. */
uint32_t *mp_hash_next(const mp_hash *h, mp_hash_iter *it);

/* Store val under hash (always a new entry). 0, or -1 out of memory. */
int mp_hash_insert(mp_hash *h, uint64_t hash, uint32_t val);

/* Remove the entry (hash, val). 1 if it was there, else 0. */
int mp_hash_remove(mp_hash *h, uint64_t hash, uint32_t val);

/* -- Hashes --------------------------------------------------------------- */

/* A 64-bit mixer (every input bit changes about half the output bits),
** for hashing records made of integers: mix(a ^ mix(b + c)). */
static inline uint64_t mp_hash_mix(uint64_t x)
{
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  return x ^ (x >> 32);
}

/* Hash of n bytes at p (eight at a time; not for adversaries who can
** choose the bytes: a collision only costs a comparison). */
uint64_t mp_hash_bytes(const void *p, size_t n);

#endif
