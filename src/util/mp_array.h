/*
** mp_array.h: arrays that grow by doubling, for the tables of records that
** the reader keeps (sites, links, symbols, names) and that mp_hash indexes.
*/

#ifndef MP_ARRAY_H
#define MP_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Make room in *arr (n elements of elem bytes used, *cap allocated) for one
** more: double it (from 64) when full. 0, or -1 when out of memory or past
** 2^32 elements (the array is then unchanged). */
static inline int mp_array_grow(void **arr, uint32_t n, uint32_t *cap,
				size_t elem)
{
  void *a;
  uint32_t c;
  if (n < *cap) return 0;
  c = *cap ? *cap * 2 : 64;
  if (c <= *cap) return -1;
  if (!(a = realloc(*arr, (size_t)c * elem))) return -1;
  *arr = a;
  *cap = c;
  return 0;
}

#endif
