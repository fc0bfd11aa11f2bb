/*
** mp_heapdiff.h: what changed between two heap snapshots of one process.
**
** An object of B is the object of A at the same address with the same
** type (snapshots of one process: an address reused by an object of
** another type is a new object; one reused by an object of the same type
** between the two is taken for the same, as DevTools' comparison would).
** Objects of B that A lacks are new, those of A that B lacks are gone,
** the others kept (resized if their self size changed). By type, and by
** path class (keys of big containers folded to [*], analysis/
** mp_heapsnap.h): the objects and bytes in A and in B, new and gone. A
** class of B is the class of A with the same folded path (found through
** a member both hold, or by the path among the classes that lost
** members), so a list capped at 50 whose entries were all replaced shows
** 50 new, 50 gone and no growth, and a cache that only gains shows its
** growth.
*/

#ifndef MP_HEAPDIFF_H
#define MP_HEAPDIFF_H

#include <stdint.h>

#include "analysis/mp_heapsnap.h"

/* Objects and their bytes. */
typedef struct mp_heapcount {
  uint64_t count, bytes;
} mp_heapcount;

/* A path class that changed: it has new, gone or resized members. */
typedef struct mp_heapdiff_class {
  char *path;		/* Folded path of the class. */
  mp_heapcount live[2];	/* Members in A and in B (self sizes). */
  mp_heapcount added;	/* New members (in B only). */
  mp_heapcount gone;	/* Members of A gone. */
  uint8_t type;		/* The type of its members, or 0 if mixed. */
} mp_heapdiff_class;

typedef struct mp_heapdiff {
  mp_heapcount live[2][MP_HT__MAX];	/* By type, A and B. */
  mp_heapcount added[MP_HT__MAX];	/* New in B, by type. */
  mp_heapcount gone[MP_HT__MAX];	/* In A only, by type. */
  mp_heapcount total[2], added_all, gone_all;
  uint64_t resized;	/* Kept objects whose size changed... */
  int64_t resized_bytes;	/* ...and by how much, in all. */
  mp_heapdiff_class *cls;	/* Largest growth first (then most new
				   members): at most the n asked for... */
  uint32_t ncls;
  uint32_t morecls;		/* ...and how many more changed. */
} mp_heapdiff;

/* Compare snapshot a with b (both built), classes with keys of
** containers of more than fold entries folded, the n that changed most.
** 0, or -1 out of memory. */
int mp_heapdiff_build(mp_heapdiff *d, const mp_heapsnap *a,
		      const mp_heapsnap *b, unsigned fold, uint32_t n);
void mp_heapdiff_free(mp_heapdiff *d);

#endif
