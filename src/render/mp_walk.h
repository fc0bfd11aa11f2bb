/*
** mp_walk.h: the call-stack tree in the order the stack formats print it.
**
** Depth first, a node before its children (preorder), siblings in the
** byte order of their labels, so that every output is the same for the
** same profile whatever the order of its events, and collapsed stacks
** come out sorted frame by frame. The walk is an array, not a recursion:
** stacks are as deep as the profile says (thousands of frames).
**
** Only nodes that the root reaches are in it (a tree has no others). Cost:
** 12 bytes a node, and a sort of each node's children.
*/

#ifndef MP_WALK_H
#define MP_WALK_H

#include <stdint.h>

#include "analysis/mp_stacks.h"

typedef struct mp_walk {
  uint32_t *node;	/* Nodes in preorder; node[0] is the root. */
  uint32_t *depth;	/* By position: 0 for the root, 1 for its
			   children... */
  uint32_t n;		/* Nodes in the walk. */
  uint32_t maxdepth;	/* Deepest depth. */
} mp_walk;

/* Walk t. Returns 0, or -1 when out of memory (w is then empty). */
int mp_walk_build(mp_walk *w, const mp_stacktree *t);
void mp_walk_free(mp_walk *w);

/* Position after the subtree of the node at position i. */
static inline uint32_t mp_walk_skip(const mp_walk *w, uint32_t i)
{
  uint32_t d = w->depth[i];
  for (i++; i < w->n && w->depth[i] > d; i++) ;
  return i;
}

#endif
