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
** when out of memory. Node 0, the root, is made first with parent 0. */
static uint32_t add_node(mp_stacktree *t, uint32_t parent)
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
  if (i == 0) return 0;
  if (t->node[parent].last) t->node[t->node[parent].last].next = i;
  else t->node[parent].first = i;
  t->node[parent].last = i;
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

/* Fill node n's names from site i of sec: label (as the text report names
** the source: a profile without stacks has sources, not frames), and for
** Lua its file and function (mp_func_label()). 0, or -1 when out of
** memory. */
static int name_site(mp_stacktree *t, mp_tnode *n, const mp_sections *sec,
		     uint32_t i)
{
  const mp_loc *l = &sec->p->site[i].loc;
  mp_strtab *names = (mp_strtab *)&sec->p->syms.names;
  const char *label = sec->label[i];
  char buf[MP_LABEL_MAX];
  n->label = keep(t, label, strlen(label));
  n->func = n->source = n->label;
  if (l->src == MP_SRC_LFUNC && l->name) {	/* Labelled as its source. */
    size_t m = mp_chunk_label(names, l->name, buf, sizeof(buf));
    n->file = keep(t, buf, m);
    m = mp_func_label(names, l, buf, sizeof(buf));
    n->func = keep(t, buf, m);
    n->line = l->line;
    n->func_line = l->aux;
    if (!n->file || !n->func) return -1;
  }
  return n->label ? 0 : -1;
}

/* Add what owner record l holds (at the end, and at the peak if the tree
** keeps it) to tree node i. */
static void add_live(mp_stacktree *t, uint32_t i, const mp_live *l)
{
  t->node[i].live.n += l->n;
  t->node[i].live.plus += l->bytes;
  if (t->peak) {
    t->node[i].peak.n += l->pn;
    t->node[i].peak.plus += l->pbytes;
  }
}

/* -- Stacks --------------------------------------------------------------- */

/* Write the label of stack node n into buf (size bytes); its length. */
static size_t node_label(const mp_profile *p, const mp_pnode *n, char *buf,
			 size_t size)
{
  return mp_frame_label((mp_strtab *)&p->syms.names, n->kind, &n->loc, buf,
			size);
}

/* Hash of a tree node's identity: its parent, kind and label. */
static uint64_t child_hash(uint32_t parent, uint8_t kind, const char *label)
{
  return mp_hash_mix(((uint64_t)parent << 8 | kind) ^
		     mp_hash_bytes(label, strlen(label)));
}

/* The tree node under parent with the frame of stack node n: found, or
** made (with its names); 0 when out of memory. */
static uint32_t child_of(mp_stacktree *t, mp_hash *index, uint32_t parent,
			 const mp_profile *p, const mp_pnode *n)
{
  char buf[MP_LABEL_MAX];
  size_t len = node_label(p, n, buf, sizeof(buf));
  uint64_t h = child_hash(parent, n->kind, buf);
  mp_hash_iter it;
  uint32_t *v, k;
  mp_tnode *c;
  for (v = mp_hash_first(index, h, &it); v; v = mp_hash_next(index, &it)) {
    c = &t->node[*v];
    if (c->parent == parent && c->kind == n->kind && !strcmp(c->label, buf))
      return *v;
  }
  if (!(k = add_node(t, parent)) || mp_hash_insert(index, h, k) < 0)
    return 0;
  c = &t->node[k];
  c->kind = n->kind;
  c->site = n->site;
  c->label = keep(t, buf, len);
  c->func = c->source = c->label;
  if (n->kind == MP_FK_LUA && n->loc.name) {	/* File and function. */
    mp_strtab *names = (mp_strtab *)&p->syms.names;
    len = mp_label(names, &n->loc, buf, sizeof(buf));
    if (strcmp(buf, c->label) && !(c->source = keep(t, buf, len))) return 0;
    len = mp_chunk_label(names, n->loc.name, buf, sizeof(buf));
    c->file = keep(t, buf, len);
    len = mp_func_label(names, &n->loc, buf, sizeof(buf));
    c->func = keep(t, buf, len);
    c->line = n->loc.line;
    c->func_line = n->loc.aux;
    if (!c->file || !c->func) return 0;
  }
  return c->label ? k : 0;
}

/* Add the stack nodes of p to the tree, and their self allocations; *tnode
** gets the tree node of each (by id - 1). 0, or -1 when out of memory. */
static int add_stacks(mp_stacktree *t, const mp_profile *p, uint32_t **tnode,
		      mp_cost *billed)
{
  mp_hash index;
  uint32_t i;
  int rc = -1;
  mp_hash_init_map(&index);
  if (!(*tnode = calloc((size_t)p->nnode + 1, sizeof(**tnode)))) goto done;
  for (i = 0; i < p->nnode; i++) {
    const mp_pnode *n = &p->node[i];
    uint32_t parent = n->parent ? (*tnode)[n->parent - 1] : 0, k;
    if (!(k = child_of(t, &index, parent, p, n))) goto done;
    (*tnode)[i] = k;
    mp_cost_add(&t->node[k].alloc, &n->alloc);
    mp_cost_add(&billed[n->site], &n->alloc);
  }
  rc = 0;
done:
  mp_hash_free(&index);
  return rc;
}

int mp_stacktree_build(mp_stacktree *t, const mp_sections *sec)
{
  const mp_profile *p = sec->p;
  uint32_t *node_of = NULL, *tnode = NULL, i;
  mp_cost *billed = NULL;
  memset(t, 0, sizeof(*t));
  mp_strtab_init(&t->text);
  add_node(t, 0);	/* The root. */
  if (t->n != 1) goto err;
  t->stacks = p->nnode > 0 || p->stacks > 0;
  t->peak = mp_profile_has_peak(p);
  if (!(node_of = calloc((size_t)p->nsite + 1, sizeof(*node_of))) ||
      !(billed = calloc((size_t)p->nsite + 1, sizeof(*billed))))
    goto err;
  if (p->nnode && add_stacks(t, p, &tnode, billed) < 0) goto err;
  /* What no stack accounts for (every event of a profile without stacks;
  ** the VM's own allocations in one with them): a node per site under the
  ** root. */
  for (i = 0; i < p->nsite; i++) {
    const mp_site *s = &p->site[i];
    mp_cost a = mp_site_cost(s, MP_AEV_ALLOC), r = mp_site_cost(s, MP_AEV_REALLOC);
    uint32_t k;
    mp_cost_add(&a, &r);
    a = mp_cost_sub(a, &billed[i]);
    if (!a.n && (!p->slive || (!p->slive[i].n && !p->slive[i].pn)))
      continue;
    if (!(k = add_node(t, 0))) goto err;
    t->node[k].kind = kind_of(&s->loc);
    t->node[k].site = i;
    t->node[k].alloc.n = a.n;
    t->node[k].alloc.plus = a.plus;
    if (name_site(t, &t->node[k], sec, i) < 0) goto err;
    node_of[i] = k;
  }
  /* What the owners of blocks held. */
  for (i = 0; p->slive && i < p->nsite; i++)
    if (node_of[i]) add_live(t, node_of[i], &p->slive[i]);
  for (i = 0; p->nlive && i < p->nnode; i++)
    add_live(t, tnode[i], &p->nlive[i]);
  free(node_of);
  free(tnode);
  free(billed);
  return 0;
err:
  free(node_of);
  free(tnode);
  free(billed);
  mp_stacktree_free(t);
  return -1;
}

void mp_stacktree_free(mp_stacktree *t)
{
  free(t->node);
  mp_strtab_free(&t->text);
  memset(t, 0, sizeof(*t));
}

/* A copy of s in t's storage, or NULL for NULL; *nomem set on failure. */
static const char *keep_str(mp_stacktree *t, const char *s, int *nomem)
{
  const char *c;
  if (!s) return NULL;
  if (!(c = keep(t, s, strlen(s)))) *nomem = 1;
  return c;
}

int mp_stacktree_graft(mp_stacktree *t, const mp_stacktree *a, uint32_t *map)
{
  mp_hash index;
  uint32_t i;
  int rc = -1, nomem = 0;
  mp_hash_init_map(&index);
  for (i = 1; i < t->n; i++) {
    const mp_tnode *x = &t->node[i];
    if (mp_hash_insert(&index, child_hash(x->parent, x->kind, x->label), i) < 0)
      goto done;
  }
  map[0] = 0;
  for (i = 1; i < a->n; i++) {
    const mp_tnode *x = &a->node[i];
    uint32_t parent = map[x->parent], *v, k = 0;
    uint64_t h = child_hash(parent, x->kind, x->label);
    mp_hash_iter it;
    mp_tnode *y;
    /* The node of the same frame; of the same site too, if there are
    ** several (two sources with one label, at the root). */
    for (v = mp_hash_first(&index, h, &it); v; v = mp_hash_next(&index, &it))
      if (t->node[*v].parent == parent && t->node[*v].kind == x->kind &&
	  !strcmp(t->node[*v].label, x->label) &&
	  (!k || t->node[*v].site == x->site))
	k = *v;
    if (!k) {
      if (!(k = add_node(t, parent)) || mp_hash_insert(&index, h, k) < 0)
	goto done;
      y = &t->node[k];
      y->kind = x->kind;
      y->site = x->site;
      y->line = x->line;
      y->func_line = x->func_line;
      y->label = keep_str(t, x->label, &nomem);
      y->file = keep_str(t, x->file, &nomem);
      y->func = x->func == x->label ? y->label : keep_str(t, x->func, &nomem);
      y->source = x->source == x->label ? y->label :
		  keep_str(t, x->source, &nomem);
      if (nomem) goto done;
    }
    map[i] = k;
  }
  rc = 0;
done:
  mp_hash_free(&index);
  return rc;
}
