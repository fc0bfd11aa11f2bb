/*
** mp_stacks.c: the call-stack tree of a profile (see mp_stacks.h).
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mp_stacks.h"
#include "util/mp_array.h"

/* A NUL-terminated copy of n bytes at s in the tree's storage; NULL when
** out of memory. */
static const char *keep(mp_stacktree *t, const char *s, size_t n)
{
  char *p = (char *)mp_strtab_copy(&t->text, s, n + 1);
  if (p) { memcpy(p, s, n); p[n] = '\0'; }
  return p;
}

/* Append a node under parent (children linked in order); its index, or 0
** when out of memory. */
static uint32_t add_node(mp_stacktree *t, uint32_t parent, uint32_t *last)
{
  mp_tnode *n;
  uint32_t i;
  if (mp_array_grow((void **)&t->node, t->n, &t->cap, sizeof(*t->node)) < 0)
    return 0;
  i = t->n++;
  n = &t->node[i];
  memset(n, 0, sizeof(*n));
  n->parent = parent;
  n->site = MP_NO_SITE;
  if (*last) t->node[*last].next = i;
  else t->node[parent].first = i;
  *last = i;
  return i;
}

/* The frame kind of a site's location. */
static uint8_t kind_of(const mp_loc *l)
{
  switch (l->src) {
  case MP_SRC_LFUNC: return MP_FK_LUA;
  case MP_SRC_CFUNC: return l->id == 0 ? MP_FK_HOST : MP_FK_C;
  case MP_SRC_TRACE: return MP_FK_TRACE;
  }
  return MP_FK_INTERNAL;
}

/* Fill node n's names from site i of sec: label, and for Lua its file and
** function ("chunk:first line"). 0, or -1 when out of memory. */
static int name_site(mp_stacktree *t, mp_tnode *n, const mp_sections *sec,
		     uint32_t i)
{
  const mp_loc *l = &sec->p->site[i].loc;
  const char *label = sec->label[i];
  char buf[MP_LABEL_MAX];
  n->label = keep(t, label, strlen(label));
  n->func = n->label;
  if (l->src == MP_SRC_LFUNC && l->name) {
    const mp_name *nm = mp_strtab_get(&sec->p->syms.names, l->name);
    uint32_t alias = mp_site_alias(sec, i);
    int m = alias ? snprintf(buf, sizeof(buf), "function_alias_%u", alias)
		  : snprintf(buf, sizeof(buf), "%.*s",
			     (int)mp_name_cut(nm->s, nm->kept, MP_NAME_SHOWN),
			     nm->s);
    if (m < 0) m = 0;
    if ((size_t)m >= sizeof(buf)) m = (int)sizeof(buf) - 1;
    n->file = keep(t, buf, (size_t)m);
    snprintf(buf + m, sizeof(buf) - (size_t)m, ":%llu",
	     (unsigned long long)l->aux);
    n->func = keep(t, buf, strlen(buf));
    n->line = l->line;
    n->func_line = l->aux;
    if (!n->file || !n->func) return -1;
  }
  return n->label ? 0 : -1;
}

/* Context of the walk over the live blocks. */
typedef struct live_ctx {
  mp_stacktree *t;
  const uint32_t *node_of;	/* Owner (site) -> tree node, 0: none. */
} live_ctx;

static void add_live(void *ctx, uint64_t addr, uint64_t size, uint32_t owner)
{
  live_ctx *c = ctx;
  uint32_t i = c->node_of[owner];
  (void)addr;
  if (!i) return;
  c->t->node[i].live.n++;
  c->t->node[i].live.plus += size;
}

/* Whether site s allocated, or owns live blocks (counted by the walk). */
static int site_counts(const mp_site *s)
{
  return s->n[MP_AEV_ALLOC] || s->n[MP_AEV_REALLOC];
}

int mp_stacktree_build(mp_stacktree *t, const mp_sections *sec)
{
  const mp_profile *p = sec->p;
  uint32_t *node_of = NULL, last = 0, i;
  live_ctx c;
  memset(t, 0, sizeof(*t));
  mp_strtab_init(&t->text);
  if (!add_node(t, 0, &last) && !t->n) goto err;	/* The root (index 0). */
  t->node[0].first = 0;
  last = 0;
  if (!(node_of = calloc((size_t)p->nsite + 1, sizeof(*node_of)))) goto err;
  /* A profile without stacks: one node per site that allocated. */
  for (i = 0; i < p->nsite; i++) {
    const mp_site *s = &p->site[i];
    mp_cost a = mp_site_cost(s, MP_AEV_ALLOC), r;
    uint32_t k;
    if (!site_counts(s)) continue;
    if (!(k = add_node(t, 0, &last))) goto err;
    r = mp_site_cost(s, MP_AEV_REALLOC);
    t->node[k].kind = kind_of(&s->loc);
    t->node[k].site = i;
    t->node[k].alloc.n = a.n + r.n;
    t->node[k].alloc.plus = a.plus + r.plus;
    if (name_site(t, &t->node[k], sec, i) < 0) goto err;
    node_of[i] = k;
  }
  c.t = t;
  c.node_of = node_of;
  mp_heap_foreach(&p->heap, add_live, &c);
  free(node_of);
  return 0;
err:
  free(node_of);
  mp_stacktree_free(t);
  return -1;
}

void mp_stacktree_free(mp_stacktree *t)
{
  free(t->node);
  mp_strtab_free(&t->text);
  memset(t, 0, sizeof(*t));
}
