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
** within the recording by that owner's site, else before the start.
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
  uint64_t ev;		/* The events before it. */
  uint32_t made;	/* Objects made within the recording... */
  uint64_t made_bytes;	/* ...and their self sizes. */
} mp_snapjoin;

/* A join of snapshot sn, to attach to a profile before reading it; 0, or
** -1 when out of memory. */
int mp_snapjoin_init(mp_snapjoin *j, const mp_snapshot *sn);
/* The hook of the profile pass (mp_profile.on_snap, ctx: the join). */
void mp_snapjoin_on_mark(void *ctx, const mp_profile *p,
			 const struct mp_snapmark *m);
void mp_snapjoin_free(mp_snapjoin *j);

#endif
