/*
** mp_merge.c: several profiles as one (see mp_merge.h).
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_merge.h"
#include "util/mp_array.h"

void mp_merge_init(mp_profile *m)
{
  mp_profile_init(m);
  m->full = 1;	/* Sites get owner records as they are made. */
  m->want = MP_WANT_PEAK | MP_WANT_TEMP;	/* Until a profile lacks one. */
  m->rc = MP_END;
}

/* The id in m of name i of names (0 stays 0); 0 when out of memory. */
static uint32_t name_in(mp_profile *m, const mp_strtab *names, uint32_t i,
			int *nomem)
{
  const mp_name *nm;
  uint32_t j;
  if (!i) return 0;
  nm = mp_strtab_get(names, i);
  if (!(j = mp_strtab_intern(&m->syms.names, nm->s, nm->len))) *nomem = 1;
  else if (nm->cshared) m->syms.names.name[j].cshared = 1;
  return j;
}

int mp_merge_loc(mp_profile *m, const mp_strtab *names, const mp_loc *l,
		 mp_loc *out)
{
  int nomem = 0;
  *out = *l;
  out->name = name_in(m, names, l->name, &nomem);
  if (nomem) return 0;
  if (l->name && l->src == MP_SRC_LFUNC) {	/* The function's name. */
    uint32_t f = mp_strtab_fname(names, l->name, l->aux);
    const mp_name *nm = f ? mp_strtab_get(names, f) : NULL;
    if (nm && mp_strtab_fname_set(&m->syms.names, out->name, l->aux, nm->s,
				  nm->len) < 0)
      return 0;
  }
  if (l->name && l->src == MP_SRC_TRACE) {
    out->id = 0;	/* Where it started, not its number. */
  } else if (l->name && l->src == MP_SRC_CFUNC &&
	     !mp_strtab_get(names, l->name)->cshared) {
    out->id = l->aux;	/* Its name and the offset, not the address. */
  }
  return 1;
}

/* Add owner record b to a. */
static void live_add(mp_live *a, const mp_live *b)
{
  a->n += b->n;
  a->bytes += b->bytes;
  a->pn += b->pn;
  a->pbytes += b->pbytes;
  a->tn += b->tn;
  a->tbytes += b->tbytes;
}

int mp_merge_add(mp_profile *m, const mp_profile *s, uint32_t *map)
{
  uint32_t *site = malloc(((size_t)s->nsite + 1) * sizeof(*site));
  uint32_t i, off = m->nnode;
  int k, rc = -1;
  if (!site) return -1;
  /* Sites: found or made by their location in m. */
  for (i = 0; i < s->nsite; i++) {
    const mp_site *x = &s->site[i];
    mp_site *y;
    mp_loc l;
    if (!mp_merge_loc(m, &s->syms.names, &x->loc, &l) ||
	(site[i] = mp_profile_site(m, &l)) == UINT32_MAX)
      goto done;
    y = &m->site[site[i]];
    for (k = 0; k < MP_AEV_N; k++) {
      y->n[k] += x->n[k];
      y->plus[k] += x->plus[k];
      y->minus[k] += x->minus[k];
    }
    if (s->slive) live_add(&m->slive[site[i]], &s->slive[i]);
    if (i < s->ngcfree && s->gcfree[i].n &&
	mp_profile_gc_freed(m, site[i], s->gcfree[i].n, s->gcfree[i].plus) < 0)
      goto done;
  }
  for (i = 0; i < s->nlink; i++) {
    const mp_link *x = &s->link[i];
    if (mp_profile_add_link(m, x->kind, site[x->site], site[x->owner],
			    &x->cost) < 0)
      goto done;
  }
  /* Stack nodes: appended, their parents and sites renumbered. */
  for (i = 0; i < s->nnode; i++) {
    const mp_pnode *x = &s->node[i];
    mp_pnode *y;
    if (mp_array_grow((void **)&m->node, m->nnode, &m->capnode,
		      sizeof(*m->node)) < 0 ||
	mp_array_grow((void **)&m->nlive, m->nnode, &m->capnlive,
		      sizeof(*m->nlive)) < 0)
      goto done;
    y = &m->node[m->nnode];
    *y = *x;
    if (x->kind == MP_FK_BUILTIN) {	/* Its name only. */
      int nomem = 0;
      y->loc.name = name_in(m, &s->syms.names, x->loc.name, &nomem);
      if (nomem) goto done;
    } else if (x->kind != MP_FK_CUT && x->kind != MP_FK_THREAD &&
	       !mp_merge_loc(m, &s->syms.names, &x->loc, &y->loc)) {
      goto done;
    }
    y->parent = x->parent ? x->parent + off : 0;
    y->site = site[x->site];
    memset(&m->nlive[m->nnode], 0, sizeof(*m->nlive));
    if (s->nlive) live_add(&m->nlive[m->nnode], &s->nlive[i]);
    m->nnode++;
  }
  /* Totals and what the profiles say of themselves. */
  for (k = 0; k < MP_AEV_N; k++) {
    mp_cost_add(&m->total[k], &s->total[k]);
    m->recorded[k] += s->sample ? s->recorded[k] : s->total[k].n;
  }
  for (k = 0; k < MP_SRC_N; k++) {
    m->nsym[0][k] += s->nsym[0][k];
    m->nsym[1][k] += s->nsym[1][k];
  }
  m->big_plus += s->big_plus;
  m->big_minus += s->big_minus;
  {	/* As the pass proves it (mp_profile.h), for the sums. */
    unsigned __int128 small = (unsigned __int128)mp_profile_events(m)
			      << MP_SMALL_BITS;
    m->overflow |= s->overflow || (m->big_plus + small) >> 63 ||
		   (m->big_minus + small) >> 63;
  }
  m->net += s->net;
  if (s->peak > m->peak) m->peak = s->peak;
  m->nev += s->nev;
  m->live_n += s->live_n;
  m->live_bytes += s->live_bytes;
  m->peak_bytes += s->peak_bytes;
  m->peak_blocks += s->peak_blocks;
  m->settled = m->merged ? (m->collect || m->settled) &&
			   (s->collect || s->settled) &&
			   !(m->collect && s->collect) : s->settled;
  m->collect = m->merged ? m->collect && s->collect : s->collect;
  m->exited = m->merged ? m->exited || s->exited : s->exited;
  m->native |= s->native;
  m->native_unseen += s->native_unseen;
  m->native_lost += s->native_lost;
  m->closefin = m->closefin + s->closefin < m->closefin ? UINT32_MAX
						   : m->closefin + s->closefin;
  if (!m->stopped[0]) memcpy(m->stopped, s->stopped, sizeof(m->stopped));
  if (s->stacks > m->stacks) m->stacks = s->stacks;
  if (s->sample) m->sample = s->sample;
  if (!mp_profile_has_peak(s)) m->want &= ~(unsigned)MP_WANT_PEAK;
  if (!(s->full && (s->want & MP_WANT_TEMP)))
    m->want &= ~(unsigned)MP_WANT_TEMP;
  if (m->window < s->window || !m->merged) m->window = s->window;
  if (s->rc != MP_END && m->rc == MP_END) {
    m->rc = s->rc;
    m->r.err_offset = s->r.err_offset;
  }
  if (!m->merged) {
    m->r.ljs_version = s->r.ljs_version;
    m->r.ljm_version = s->r.ljm_version;
  }
  m->len += s->len;
  {	/* Each profile's rate, for the header: merged ones say theirs. */
    double *r = realloc(m->rates, ((size_t)m->merged + 1) * sizeof(*r));
    if (!r) goto done;
    m->rates = r;
    r[m->merged] = s->sample;
  }
  m->merged++;
  if (map) memcpy(map, site, (size_t)s->nsite * sizeof(*map));
  rc = 0;
done:
  free(site);
  return rc;
}
