/*
** mp_node.h: the tree of call stacks of the stacks mode (mp_node.c).
**
** A recorded stack is a chain of nodes (parent node, frame), root first.
** A node is interned once, in st->node with a hash index, and written into
** the stream the first time an event refers to it (MP_X_NODE, see
** src/format/mp_ext.h), after the symbols its frame names. Events carry
** the id of their innermost node. Ids start at 1 and go on across
** mp_stack_forget(), which drops the nodes when an object they name dies.
** The lookups of a node met a few events ago are inline, here.
*/

#ifndef MP_NODE_H
#define MP_NODE_H

#include <stdint.h>

#include "mp_agent.h"
#include "mp_sym.h"

/* Whether two frames are the same. */
static inline int mp_same_frame(const mp_snode *x, const mp_snode *y)
{
  return x->a == y->a && x->b == y->b && x->kind == y->kind;
}

/* Where node (parent, f) is looked for first in st->recent: cheaper to
** compute than node_hash(), and the kind rarely tells nodes apart. */
static MP_INLINE uint32_t mp_recent_slot(uint32_t parent, const mp_snode *f)
{
  uint64_t k = f->a ^ ((uint64_t)f->b << 40) ^
	       ((uint64_t)parent * 0x9e3779b97f4a7c15ull);
  return (uint32_t)((k * 0xff51afd7ed558ccdull) >> (64 - MP_RECENT_BITS));
}

/* mp_node_of() past st->recent: the node table, or a new node (written
** into the stream); 0 when out of memory. */
MP_NOINLINE uint32_t mp_node_find(mp_state *s, uint32_t parent,
				  const mp_snode *f);

/* The id of node (parent, f), made and written if it is new; 0 when out
** of memory (the event then has no stack). Most lookups are of a node met
** a few events ago: a direct-mapped cache of node indexes answers them
** inline, without the hash table. */
static MP_INLINE uint32_t mp_node_of(mp_state *s, uint32_t parent,
				     const mp_snode *f)
{
  mp_stacks *st = &s->st;
  uint32_t r = st->recent[mp_recent_slot(parent, f)];
  if (r < st->n) {
    const mp_snode *n = &st->node[r];
    if (n->parent == parent && mp_same_frame(n, f)) return st->base + r + 1;
  }
  return mp_node_find(s, parent, f);
}

/* Node id, made since the last forget (id > st->base). */
static inline const mp_snode *mp_node_at(const mp_stacks *st, uint32_t id)
{
  return &st->node[id - st->base - 1];
}


#ifdef MP_STACK_CHECK
/* The checked build (make all: build/stackcheck/): what a shortcut of the
** stacks mode finds is found again the long way, and a difference aborts
** with this message. */
MP_NOINLINE void mp_stack_check_failed(const char *what, uint64_t got,
				       uint64_t want);
/* Print the frames of node id, innermost first, on stderr. */
void mp_node_print(const mp_stacks *st, const char *what, uint32_t id);
#endif

#endif
