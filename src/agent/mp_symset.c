/*
** mp_symset.c: the pointer sets that remember which symbols were written.
**
** Linear probing keeps a lookup to one or two cache lines; deletion shifts
** later entries back instead of leaving tombstones, so a long run with many
** prototypes born and collected never degrades the table.
*/

#include <stdlib.h>

#include "mp_agent.h"

/* Fibonacci hashing: pointers are aligned, so mix the high bits down. */
static inline size_t slot_of(const mp_ptrset *set, uintptr_t key)
{
  return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & set->mask;
}

/* Double the table (or create it); returns 0 or -1 when out of memory. */
static int grow(mp_ptrset *set)
{
  size_t cap = set->slot ? (set->mask + 1) * 2 : 256, i;
  mp_ptrset n;
  n.slot = calloc(cap, sizeof(uintptr_t));
  if (!n.slot) return -1;
  n.mask = cap - 1;
  n.count = set->count;
  if (set->slot) {
    for (i = 0; i <= set->mask; i++) {
      uintptr_t k = set->slot[i];
      if (k) {
	size_t j = slot_of(&n, k);
	while (n.slot[j]) j = (j + 1) & n.mask;
	n.slot[j] = k;
      }
    }
    free(set->slot);
  }
  *set = n;
  return 0;
}

/* Add key: 1 if new, 0 if present, -1 when out of memory. */
int mp_ptrset_add(mp_ptrset *set, uintptr_t key)
{
  size_t j;
  if (!set->slot || (set->count + 1) * 2 > set->mask + 1)
    if (grow(set) < 0) return -1;
  for (j = slot_of(set, key); set->slot[j]; j = (j + 1) & set->mask)
    if (set->slot[j] == key) return 0;
  set->slot[j] = key;
  set->count++;
  return 1;
}

/* Remove key: 1 if it was there, else 0. */
int mp_ptrset_del(mp_ptrset *set, uintptr_t key)
{
  size_t j, k;
  if (!set->count) return 0;
  for (j = slot_of(set, key); set->slot[j] != key; j = (j + 1) & set->mask)
    if (!set->slot[j]) return 0;
  /* Shift back every later entry of the run that may now sit too far. */
  for (k = (j + 1) & set->mask; set->slot[k]; k = (k + 1) & set->mask) {
    size_t home = slot_of(set, set->slot[k]);
    if (((k - home) & set->mask) >= ((k - j) & set->mask)) {
      set->slot[j] = set->slot[k];
      j = k;
    }
  }
  set->slot[j] = 0;
  set->count--;
  return 1;
}

/* Free the table; the set is empty and usable again. */
void mp_ptrset_free(mp_ptrset *set)
{
  free(set->slot);
  set->slot = NULL;
  set->mask = set->count = 0;
}
