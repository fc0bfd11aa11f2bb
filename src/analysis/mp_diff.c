/*
** mp_diff.c: two profiles side by side (see mp_diff.h).
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_diff.h"
#include "analysis/mp_merge.h"

/* -- Sides ---------------------------------------------------------------- */

/* Make d->side[k], a view of d->m with the costs of profile s only: its
** sites through map, its nodes (those from off on, n of them). 0 or -1. */
static int make_side(mp_diff *d, int k, const mp_profile *s,
		     const uint32_t *map, uint32_t off)
{
  mp_profile *v = &d->side[k];
  const mp_profile *m = &d->m;
  uint32_t i;
  int e;
  *v = *m;	/* Shares m's symbols and tables: never freed as a whole. */
  v->link = NULL;
  v->nlink = 0;
  v->tl = NULL;
  v->site = calloc((size_t)m->nsite + 1, sizeof(*v->site));
  v->slive = calloc((size_t)m->nsite + 1, sizeof(*v->slive));
  v->node = calloc((size_t)m->nnode + 1, sizeof(*v->node));
  v->nlive = calloc((size_t)m->nnode + 1, sizeof(*v->nlive));
  if (!v->site || !v->slive || !v->node || !v->nlive) return -1;
  for (i = 0; i < m->nsite; i++) v->site[i].loc = m->site[i].loc;
  for (i = 0; i < s->nsite; i++) {
    mp_site *y = &v->site[map[i]];
    mp_live *l = &v->slive[map[i]];
    for (e = 0; e < MP_AEV_N; e++) {
      y->n[e] += s->site[i].n[e];
      y->plus[e] += s->site[i].plus[e];
      y->minus[e] += s->site[i].minus[e];
    }
    l->n += s->slive[i].n;
    l->bytes += s->slive[i].bytes;
    l->pn += s->slive[i].pn;
    l->pbytes += s->slive[i].pbytes;
  }
  for (i = 0; i < m->nnode; i++) {
    v->node[i] = m->node[i];
    if (i >= off && i < off + s->nnode) {
      v->nlive[i] = m->nlive[i];
    } else {
      memset(&v->node[i].alloc, 0, sizeof(v->node[i].alloc));
    }
  }
  memcpy(v->total, s->total, sizeof(v->total));
  v->peak_bytes = s->peak_bytes;
  v->peak_blocks = s->peak_blocks;
  v->live_n = s->live_n;
  v->live_bytes = s->live_bytes;
  v->nev = s->nev;
  return 0;
}

static void free_side(mp_profile *v)
{
  free(v->site);
  free(v->slive);
  free(v->node);
  free(v->nlive);
  memset(v, 0, sizeof(*v));
}

/* -- Rows ----------------------------------------------------------------- */

/* What site i costs on side v (its stack nodes' blocks included). */
static void side_cost(mp_dcost *c, const mp_profile *v, uint32_t i,
		      const mp_live *by)
{
  const mp_site *s = &v->site[i];
  memset(c, 0, sizeof(*c));
  c->alloc.n = s->n[MP_AEV_ALLOC] + s->n[MP_AEV_REALLOC];
  c->alloc.plus = s->plus[MP_AEV_ALLOC] + s->plus[MP_AEV_REALLOC];
  c->freed.n = s->n[MP_AEV_REALLOC] + s->n[MP_AEV_FREE];
  c->freed.minus = s->minus[MP_AEV_REALLOC] + s->minus[MP_AEV_FREE];
  c->live.n = by[i].n;
  c->live.plus = by[i].bytes;
  c->peak.n = by[i].pn;
  c->peak.plus = by[i].pbytes;
}

/* Every field of a and b equal. */
static int same(const mp_dcost *a, const mp_dcost *b)
{
  return !memcmp(a, b, sizeof(*a));
}

static void dcost_add(mp_dcost *a, const mp_dcost *b)
{
  mp_cost_add(&a->alloc, &b->alloc);
  mp_cost_add(&a->freed, &b->freed);
  mp_cost_add(&a->live, &b->live);
  mp_cost_add(&a->peak, &b->peak);
}

/* |a - b| of two counters (read as exact). */
static uint64_t dist(uint64_t a, uint64_t b)
{
  return a > b ? a - b : b - a;
}

static const mp_diff *cmp_d;	/* qsort has no context argument. */

/* The largest change first, then that of the other measure, then by
** label. */
static int cmp_row(const void *pa, const void *pb)
{
  const mp_drow *x = pa, *y = pb;
  mp_metric m = cmp_d->metric, o = mp_metric_other(m);
  uint64_t a = dist(mp_dcost_value(&x->side[1], m),
		    mp_dcost_value(&x->side[0], m));
  uint64_t b = dist(mp_dcost_value(&y->side[1], m),
		    mp_dcost_value(&y->side[0], m));
  int c;
  if (a != b) return a > b ? -1 : 1;
  a = dist(mp_dcost_value(&x->side[1], o), mp_dcost_value(&x->side[0], o));
  b = dist(mp_dcost_value(&y->side[1], o), mp_dcost_value(&y->side[0], o));
  if (a != b) return a > b ? -1 : 1;
  if ((c = strcmp(cmp_d->sec.label[x->site], cmp_d->sec.label[y->site])))
    return c;
  return x->site < y->site ? -1 : x->site > y->site;
}

static int build_rows(mp_diff *d)
{
  mp_live *by[2];
  uint32_t i;
  int k, rc = -1;
  by[0] = mp_profile_by_site(&d->side[0]);
  by[1] = mp_profile_by_site(&d->side[1]);
  d->row = calloc((size_t)d->m.nsite + 1, sizeof(*d->row));
  if (!by[0] || !by[1] || !d->row) goto done;
  for (i = 0; i < d->m.nsite; i++) {
    mp_drow r;
    static const mp_dcost zero;
    r.site = i;
    for (k = 0; k < 2; k++) side_cost(&r.side[k], &d->side[k], i, by[k]);
    if (!d->peak)
      for (k = 0; k < 2; k++) memset(&r.side[k].peak, 0, sizeof(mp_cost));
    dcost_add(&d->total.side[0], &r.side[0]);
    dcost_add(&d->total.side[1], &r.side[1]);
    if (same(&r.side[0], &r.side[1])) {
      if (!same(&r.side[0], &zero)) d->nsame++;
      continue;
    }
    d->row[d->nrow++] = r;
  }
  cmp_d = d;
  qsort(d->row, d->nrow, sizeof(*d->row), cmp_row);
  rc = 0;
done:
  free(by[0]);
  free(by[1]);
  return rc;
}

/* -- Trees ---------------------------------------------------------------- */

/* The stack tree of side k, with the merged profile's labels. The side
** holds a copy of m's name table (see make_side()): the aliases labels
** are given while the tree is built grow its list of them, which may
** move, so the copy is taken fresh and handed back to m (it leaked, and m
** kept the old list). */
static int side_tree(mp_diff *d, int k, mp_stacktree *t)
{
  mp_sections s = d->sec;
  int rc;
  d->side[k].syms.names = d->m.syms.names;
  s.p = &d->side[k];
  rc = mp_stacktree_build(t, &s);
  d->m.syms.names = d->side[k].syms.names;
  return rc;
}

static int build_tree(mp_diff *d)
{
  mp_stacktree a;
  uint32_t *map = NULL, i;
  int rc = -1;
  if (side_tree(d, 1, &d->tree) < 0) return -1;
  if (side_tree(d, 0, &a) < 0) return -1;
  if (!(map = calloc((size_t)a.n + 1, sizeof(*map))) ||
      mp_stacktree_graft(&d->tree, &a, map) < 0 ||
      !(d->base = calloc((size_t)d->tree.n + 1, sizeof(*d->base))))
    goto done;
  for (i = 1; i < a.n; i++) {
    mp_dnode *x = &d->base[map[i]];
    mp_cost_add(&x->alloc, &a.node[i].alloc);
    mp_cost_add(&x->live, &a.node[i].live);
    mp_cost_add(&x->peak, &a.node[i].peak);
  }
  d->stacks = d->tree.stacks || a.stacks;
  rc = 0;
done:
  free(map);
  mp_stacktree_free(&a);
  return rc;
}

int mp_diff_build(mp_diff *d, const mp_profile *a, const mp_profile *b,
		  mp_metric metric, mp_sort sort, int with_tree, int peak)
{
  uint32_t *map[2], off;
  int rc = -1;
  memset(d, 0, sizeof(*d));
  d->metric = metric;
  mp_merge_init(&d->m);
  map[0] = malloc(((size_t)a->nsite + 1) * sizeof(uint32_t));
  map[1] = malloc(((size_t)b->nsite + 1) * sizeof(uint32_t));
  if (!map[0] || !map[1] || mp_merge_add(&d->m, a, map[0]) < 0)
    goto done;
  off = d->m.nnode;
  if (mp_merge_add(&d->m, b, map[1]) < 0 ||
      mp_sections_build(&d->sec, &d->m, sort) < 0 ||
      make_side(d, 0, a, map[0], 0) < 0 ||
      make_side(d, 1, b, map[1], off) < 0)
    goto done;
  d->peak = peak && mp_profile_has_peak(a) && mp_profile_has_peak(b);
  if (build_rows(d) < 0 || (with_tree && build_tree(d) < 0)) goto done;
  rc = 0;
done:
  free(map[0]);
  free(map[1]);
  if (rc < 0) mp_diff_free(d);
  return rc;
}

void mp_diff_free(mp_diff *d)
{
  free_side(&d->side[0]);
  free_side(&d->side[1]);
  mp_sections_free(&d->sec);
  mp_profile_free(&d->m);
  mp_stacktree_free(&d->tree);
  free(d->row);
  free(d->base);
  memset(d, 0, sizeof(*d));
}
