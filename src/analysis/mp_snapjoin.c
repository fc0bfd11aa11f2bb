/*
** mp_snapjoin.c: a heap snapshot joined with its recording (see
** mp_snapjoin.h).
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_snapjoin.h"
#include "util/mp_array.h"

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
    if (mp_heap_owner(&p->heap, sn->addr[i], &owner, NULL)) {
      j->site[i] = mp_owner_site(p, owner) + 1;
      j->made++;
      j->made_bytes += sn->size[i];
    }
  for (i = 0; i < sn->npart; i++) {
    const struct mp_snap_part *pt = &sn->part[i];
    uint32_t site = 0, k;
    uint64_t size = 0, left = sn->size[pt->obj];
    if (mp_heap_owner(&p->heap, pt->addr, &owner, &size))
      site = mp_owner_site(p, owner) + 1;
    /* A part made before the recording whose object was too (or by the
    ** same site) changes nothing. */
    if (site == j->site[pt->obj]) continue;
    /* Its object's bytes less the parts taken from it already: a part is
    ** never more than what is left (a damaged or foreign profile). */
    for (k = j->npart; k > 0 && j->part[k - 1].obj == pt->obj; k--)
      left -= j->part[k - 1].bytes;
    if (!site) continue;	/* Its size is unknown: it stays. */
    if (size > left) size = left;
    if (mp_array_grow((void **)&j->part, j->npart, &j->cappart,
		      sizeof(*j->part))) {
      j->oom = 1;
      return;
    }
    j->part[j->npart].obj = pt->obj;
    j->part[j->npart].site = site;
    j->part[j->npart++].bytes = size;
    if (!j->site[pt->obj]) j->made_bytes += size;
  }
}

void mp_snapjoin_free(mp_snapjoin *j)
{
  free(j->site);
  free(j->part);
  j->site = NULL;
  j->part = NULL;
}
