/*
** mp_node.c: interning the nodes of the stack tree, and writing them with
** the symbols they name (see mp_node.h).
*/

#include <string.h>
#ifdef MP_STACK_CHECK
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#endif

#include "lj_obj.h"
#include "lj_jit.h"
#include "lj_dispatch.h"

#include "mp_node.h"
#include "mp_sym.h"
#include "mp_names.h"

/* Hash of a node: its parent and its frame. */
static inline uint64_t node_hash(uint32_t parent, const mp_snode *f)
{
  return mp_hash_mix(((uint64_t)parent << 32 | f->b) ^
		     mp_hash_mix(f->a + ((uint64_t)f->kind << 58)));
}

/* Write the name record of builtin ffid once. */
static void want_builtin(mp_state *s, uint64_t id)
{
  char name[256];
  uint8_t body[sizeof(name) + 20], *q;
  size_t n;
  if (id < 256) {	/* A fast function, by its ffid. */
    if (s->st.ffdone[id]) return;
    s->st.ffdone[id] = 1;
  } else if (mp_hash_add(&s->st.luabuiltins, id) <= 0) {
    return;	/* Written already (or no memory: its frames stay unnamed). */
  }
  n = mp_names_builtin(&s->builtins, id, name, sizeof(name));
  q = mp_put_uleb(body, id);
  q = mp_put_uleb(q, n);
  memcpy(q, name, n);
  s->pos = mp_put_xrec(s->pos, MP_X_BUILTIN, body, (size_t)(q + n - body));
  mp_settle(s);
}

/* Write the symbol a frame refers to, if not written yet. */
static void want_symbol(mp_state *s, const mp_snode *f)
{
  switch (f->kind) {
  case MP_FK_LUA: mp_want_proto(s, (const GCproto *)(uintptr_t)f->a); break;
  case MP_FK_C: mp_sym_cfunc(s, (const void *)(uintptr_t)f->a); break;
  case MP_FK_TRACE:
    mp_want_trace(s, (global_State *)s->g, (TraceNo)f->a);
    break;
  case MP_FK_BUILTIN: want_builtin(s, f->a); break;
  }
}

/* Write the record of a new node (its symbols first). */
static void write_node(mp_state *s, uint32_t parent, const mp_snode *f)
{
  uint8_t body[40], *q = body;
  want_symbol(s, f);
  q = mp_put_uleb(q, parent);
  *q++ = f->kind;
  switch (f->kind) {
  case MP_FK_LUA: q = mp_put_uleb(q, f->a); q = mp_put_uleb(q, f->b); break;
  case MP_FK_BUILTIN: q = mp_put_uleb(q, f->a); break;
  case MP_FK_C: case MP_FK_TRACE: case MP_FK_CUT: case MP_FK_NATIVE:
  case MP_FK_THREAD:
    q = mp_put_uleb(q, f->a);
    break;
  }
  s->pos = mp_put_xrec(s->pos, MP_X_NODE, body, (size_t)(q - body));
  mp_settle(s);
}

/* See mp_node.h. */
uint32_t mp_node_find(mp_state *s, uint32_t parent, const mp_snode *f)
{
  mp_stacks *st = &s->st;
  uint64_t h = node_hash(parent, f);
  mp_hash_iter it;
  uint32_t *v, id, *recent = &st->recent[mp_recent_slot(parent, f)];
  mp_snode *n;
  for (v = mp_hash_first(&st->index, h, &it); v; v = mp_hash_next(&st->index, &it)) {
    n = &st->node[*v];
    if (n->parent == parent && mp_same_frame(n, f)) {
      *recent = *v;
      return st->base + *v + 1;
    }
  }
  if (st->n == st->cap) {
    uint32_t cap = st->cap ? st->cap * 2 : 1024;
    mp_snode *a = realloc(st->node, (size_t)cap * sizeof(*a));
    if (!a) return 0;
    st->node = a;
    st->cap = cap;
  }
  if (mp_hash_insert(&st->index, h, st->n) < 0) return 0;
  *recent = st->n;
  n = &st->node[st->n++];
  *n = *f;
  n->parent = parent;
  id = st->base + st->n;	/* Ids start at 1. */
  write_node(s, parent, f);
  return id;
}

#ifdef MP_STACK_CHECK
/* See mp_node.h. */
void mp_stack_check_failed(const char *what, uint64_t got, uint64_t want)
{
  char msg[200];
  int n = snprintf(msg, sizeof(msg),
		   "ljmemprof stack check: %s: %llu, the long way: %llu\n",
		   what, (unsigned long long)got, (unsigned long long)want);
  if (write(2, msg, (size_t)n) < 0) abort();
  abort();
}

/* See mp_node.h. */
void mp_node_print(const mp_stacks *st, const char *what, uint32_t id)
{
  fprintf(stderr, "%s:", what);
  while (id > st->base && id - st->base - 1 < st->n) {
    const mp_snode *n = mp_node_at(st, id);
    fprintf(stderr, " %u=%d:%llx:%u", id, n->kind, (unsigned long long)n->a, n->b);
    id = n->parent;
  }
  fprintf(stderr, "\n");
}
#endif
