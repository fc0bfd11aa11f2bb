/*
** mp_sview.c: call stacks per site (see mp_sview.h).
*/

#include <stdlib.h>
#include <string.h>

#include "render/mp_sview.h"

/* What qsort's comparators need. */
typedef struct order {
  const mp_stacktree *t;
  mp_metric m;
} order;

static order ord;	/* Set around each sort; the reader is one thread. */

/* The measure that orders ties: counts for a bytes metric, and back. */
static mp_metric other(mp_metric m)
{
  return mp_metric_other(m);
}

/* Compare two stacks frame by frame from their innermost nodes. */
static int path_cmp(uint32_t a, uint32_t b)
{
  const mp_stacktree *t = ord.t;
  uint32_t hops = 0;
  while (a && b && a != b && hops++ < t->n) {
    const char *x = t->node[a].label, *y = t->node[b].label;
    int c = strcmp(x ? x : "", y ? y : "");
    if (c) return c;
    a = t->node[a].parent;
    b = t->node[b].parent;
  }
  return a < b ? -1 : a > b;	/* The shorter stack first. */
}

/* Heavier first, then the other measure, then the frames. */
static int weigh(uint32_t a, uint32_t b)
{
  const mp_tnode *x = &ord.t->node[a], *y = &ord.t->node[b];
  uint64_t va = mp_tnode_value(x, ord.m), vb = mp_tnode_value(y, ord.m);
  if (va != vb) return va > vb ? -1 : 1;
  va = mp_tnode_value(x, other(ord.m));
  vb = mp_tnode_value(y, other(ord.m));
  if (va != vb) return va > vb ? -1 : 1;
  return path_cmp(a, b);
}

/* Stacks by site, then heavier first. */
static int node_cmp(const void *pa, const void *pb)
{
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  uint32_t sa = ord.t->node[a].site, sb = ord.t->node[b].site;
  if (sa != sb) return sa < sb ? -1 : 1;
  return weigh(a, b);
}

/* The value of a group under m. */
static uint64_t group_value(const mp_sgroup *g, mp_metric m)
{
  return mp_metric_value(m, mp_metric_cost(m, &g->alloc, &g->live, &g->peak));
}

/* Sites heavier first, then the other measure, then their labels. */
static int group_cmp(const void *pa, const void *pb)
{
  const mp_sgroup *a = pa, *b = pb;
  uint64_t va = group_value(a, ord.m), vb = group_value(b, ord.m);
  const char *la, *lb;
  int c;
  if (va != vb) return va > vb ? -1 : 1;
  va = group_value(a, other(ord.m));
  vb = group_value(b, other(ord.m));
  if (va != vb) return va > vb ? -1 : 1;
  la = ord.t->node[a->node].label;
  lb = ord.t->node[b->node].label;
  if ((c = strcmp(la ? la : "", lb ? lb : ""))) return c;
  return a->site < b->site ? -1 : a->site > b->site;
}

int mp_sview_build(mp_sview *v, const mp_stacktree *t, mp_metric m,
		   uint64_t top, uint32_t per_site)
{
  uint32_t *nodes, n = 0, i, j;
  memset(v, 0, sizeof(*v));
  if (per_site == UINT32_MAX) per_site = 0;
  if (t->n < 2) return 0;
  if (!(nodes = malloc((size_t)t->n * sizeof(*nodes)))) return -1;
  for (i = 1; i < t->n; i++)
    if (mp_tnode_value(&t->node[i], m)) nodes[n++] = i;
  ord.t = t;
  ord.m = m;
  qsort(nodes, n, sizeof(*nodes), node_cmp);
  v->path = nodes;	/* Reused in place: each group keeps its first. */
  v->group = calloc(n ? n : 1, sizeof(*v->group));
  if (!v->group) { mp_sview_free(v); return -1; }
  for (i = 0; i < n; i = j) {
    mp_sgroup *g = &v->group[v->ngroup++];
    uint32_t site = t->node[nodes[i]].site;
    g->site = site;
    g->node = nodes[i];
    g->path0 = i;
    for (j = i; j < n && t->node[nodes[j]].site == site; j++) {
      const mp_tnode *x = &t->node[nodes[j]];
      g->alloc.n += x->alloc.n;
      g->alloc.plus += x->alloc.plus;
      g->live.n += x->live.n;
      g->live.plus += x->live.plus;
      g->peak.n += x->peak.n;
      g->peak.plus += x->peak.plus;
    }
    g->nstack = j - i;
    g->npath = per_site && per_site < g->nstack ? per_site : g->nstack;
  }
  qsort(v->group, v->ngroup, sizeof(*v->group), group_cmp);
  v->nall = v->ngroup;
  if (top && top < v->ngroup) v->ngroup = (uint32_t)top;
  return 0;
}

void mp_sview_free(mp_sview *v)
{
  free(v->group);
  free(v->path);
  memset(v, 0, sizeof(*v));
}

uint32_t mp_tnode_alias(const mp_tnode *x)
{
  static const char pre[] = "function_alias_";
  const char *s = x->file;
  uint32_t a = 0;
  if (!s || strncmp(s, pre, sizeof(pre) - 1)) return 0;
  for (s += sizeof(pre) - 1; *s >= '0' && *s <= '9'; s++) {
    if (a > UINT32_MAX / 10 - 1) return 0;
    a = a * 10 + (uint32_t)(*s - '0');
  }
  return *s ? 0 : a;
}

void mp_sview_mark_aliases(const mp_stacktree *t, uint32_t k,
			   const mp_strtab *names, uint8_t *used)
{
  uint32_t a, hops = 0;
  for (; k && k < t->n && hops++ < t->n; k = t->node[k].parent)
    if ((a = mp_tnode_alias(&t->node[k])) && a < names->nalias) used[a] = 1;
}

const char *mp_fk_name(uint8_t kind)
{
  static const char *const name[10] = {
    "internal", "lua", "builtin", "cfunc", "trace", "host", "cut", "internal",
    "native", "thread"
  };
  return name[kind < 10 ? kind : 0];
}
