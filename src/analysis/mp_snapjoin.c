/*
** mp_snapjoin.c: a heap snapshot joined with its recording (see
** mp_snapjoin.h).
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_snapjoin.h"

int mp_snapjoin_init(mp_snapjoin *j, const mp_snapshot *sn)
{
  memset(j, 0, sizeof(*j));
  j->sn = sn;
  j->site = calloc(sn->n ? sn->n : 1, sizeof(*j->site));
  return j->site ? 0 : -1;
}

void mp_snapjoin_on_mark(void *ctx, const mp_profile *p,
			 const struct mp_snapmark *m)
{
  mp_snapjoin *j = ctx;
  const mp_snapshot *sn = j->sn;
  uint32_t i, owner;
  /* The first mark with the snapshot's numbers: a later one with the
  ** same numbers is a later snapshot of the same heap. */
  if (j->found || m->objects != sn->objects || m->bytes != sn->bytes ||
      m->total != sn->gctotal)
    return;
  j->found = 1;
  j->ev = m->ev;
  for (i = 1; i < sn->n; i++)	/* Object 0 is the root. */
    if (mp_heap_owner(&p->heap, sn->addr[i], &owner)) {
      j->site[i] = mp_owner_site(p, owner) + 1;
      j->made++;
      j->made_bytes += sn->size[i];
    }
}

void mp_snapjoin_free(mp_snapjoin *j)
{
  free(j->site);
  j->site = NULL;
}
