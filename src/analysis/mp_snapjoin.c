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

/* The site + 1 that made the block of owner: its site, or for a stack
** node billed to a JIT trace, the site of the line inside the trace (the
** first Lua frame from the top, below the trace's frame, as the report's
** lines of a trace tell it); 0 when out of memory. */
static uint32_t made_by(mp_profile *p, uint32_t owner)
{
  uint32_t site = mp_owner_site(p, owner), k, hops = 0;
  const mp_pnode *line = NULL;
  if (!(owner & MP_OWNER_NODE) || p->site[site].loc.src != MP_SRC_TRACE)
    return site + 1;
  for (k = owner & ~MP_OWNER_NODE; k && hops++ < p->nnode;
       k = p->node[k - 1].parent) {
    const mp_pnode *n = &p->node[k - 1];
    if (n->kind == MP_FK_TRACE) break;
    if (!line && n->kind == MP_FK_LUA) line = n;
  }
  if (!k || !line) return site + 1;	/* No line told: the trace's. */
  site = mp_profile_site(p, &line->loc);
  return site == UINT32_MAX ? 0 : site + 1;
}

void mp_snapjoin_on_mark(void *ctx, mp_profile *p,
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
      if (!(j->site[i] = made_by(p, owner))) {
	j->oom = 1;
	return;
      }
      j->made++;
      j->made_bytes += sn->size[i];
    }
  for (i = 0; i < sn->npart; i++) {
    const struct mp_snap_part *pt = &sn->part[i];
    uint32_t site = 0, k;
    uint64_t size = 0, left = sn->size[pt->obj];
    if (mp_heap_owner(&p->heap, pt->addr, &owner, &size) &&
	!(site = made_by(p, owner))) {
      j->oom = 1;
      return;
    }
    /* A part made before the recording whose object was too (or by the
    ** same site) changes nothing. */
    if (site == j->site[pt->obj] || !site)	/* !site: size unknown. */
      continue;
    /* Its object's bytes less the parts taken from it already: a part is
    ** never more than what is left (a damaged or foreign profile). */
    for (k = j->npart; k > 0 && j->part[k - 1].obj == pt->obj; k--)
      left -= j->part[k - 1].bytes;
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
