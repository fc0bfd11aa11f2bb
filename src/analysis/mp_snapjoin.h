/*
** mp_snapjoin.h: a heap snapshot joined with the recording that marked it
** (mp_snapjoin.c).
**
** A snapshot taken while recording is marked in the stream with the
** numbers of its trailer (objects, bytes, the VM's count; docs/FORMAT.md).
** Read with a join attached, the profile pass stops at nothing: at the
** mark whose numbers are the snapshot's, the heap table holds the blocks
** live at that moment with their owners, and each object of the snapshot
** is the block at its address: it was made (allocated, or resized last)
** within the recording by that owner's site, else before the start. The
** parts of an object (a table's array and hash, a thread's stack: blocks
** of its own allocated apart, listed by a snapshot taken while recording)
** are found the same way: a part made by another site than its object's
** is credited to that site, and its bytes are no longer the object's.
** What a JIT trace made, with a stack profile, is credited to the line
** inside the trace that made it (the report's HEAP SUMMARY lists the same
** under the trace's row), a site of its own: the join's lines are lines.
*/

#ifndef MP_SNAPJOIN_H
#define MP_SNAPJOIN_H

#include <stdint.h>

#include "analysis/mp_profile.h"
#include "format/mp_snap.h"

typedef struct mp_snapjoin {
  const mp_snapshot *sn;
  uint32_t *site;	/* By object: the site that made it + 1; 0: made
			   before the recording. */
  int found;		/* The mark of the snapshot was met. */
  int oom;		/* Out of memory for the parts. */
  uint64_t ev;		/* The events before it. */
  uint32_t made;	/* Objects made within the recording... */
  uint64_t made_bytes;	/* ...and the bytes of theirs and of the parts
			   made within it. */
  struct mp_joinpart {
    uint32_t obj;	/* The object... */
    uint32_t site;	/* ...the site that made the part + 1; 0: before
			   the recording... */
    uint64_t bytes;	/* ...and the part's bytes, taken from the
			   object's. */
  } *part;		/* The parts not made by their object's site. */
  uint32_t npart, cappart;
} mp_snapjoin;

/* A join of snapshot sn, to attach to a profile before reading it; 0, or
** -1 when out of memory. */
int mp_snapjoin_init(mp_snapjoin *j, const mp_snapshot *sn);
/* The hook of the profile pass (mp_profile.on_snap, ctx: the join). */
void mp_snapjoin_on_mark(void *ctx, mp_profile *p,
			 const struct mp_snapmark *m);
void mp_snapjoin_free(mp_snapjoin *j);

#endif
