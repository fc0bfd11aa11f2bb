/*
** mp_stacks.h: the call-stack tree of a profile, the model of the stack
** renderers (collapsed stacks, the SVG flame graph, pprof) and of the
** report's stack views.
**
** Node 0 is the root (no frame); every other node is one frame under its
** parent, outermost frames nearest the root. Frames that print the same
** under one parent are one node (two prototypes of one line, a C address
** named twice), so the tree has what a reader sees. Each node holds what
** its frame cost as the innermost one (self): the allocations and
** reallocations made there, and the blocks allocated there (or resized
** last) that were still live when the profile ended, which is what a
** "leak" is here. A profile recorded without stacks gives a tree of one
** level: a node per site under the root. The VM's own allocations (garbage
** collector, JIT compiler) are one INTERNAL node under the root.
**
** Built after the profile pass from the profile and its sections (whose
** labels it uses); memory follows the distinct stacks. Children are linked
** in the order of their first event.
*/

#ifndef MP_STACKS_H
#define MP_STACKS_H

#include <stdint.h>

#include "analysis/mp_sections.h"
#include "reader/mp_strtab.h"

#define MP_NO_SITE	UINT32_MAX	/* A node whose events bill no site. */

/* One node of the tree. */
typedef struct mp_tnode {
  uint32_t parent;	/* Parent node (the root's is 0 too). */
  uint32_t first;	/* First child, 0 if none... */
  uint32_t next;	/* ...and this node's next sibling, 0 if last. */
  uint32_t last;	/* Last child (while the tree is built). */
  uint8_t kind;		/* MP_FK_* (mp_ext.h); MP_FK_INTERNAL for the VM's
			   own; 0 for the root. */
  const char *label;	/* What the frame is called (NUL-terminated):
			   "@app.lua:12", "string.rep", "cjson.encode",
			   "TRACE [3] started at @app.lua:40", "HOST (nvim)",
			   "[deeper than 64 frames]", "INTERNAL". */
  const char *file;	/* Lua: the chunk name (or "function_alias_N");
			   else NULL. */
  const char *func;	/* The function: Lua "@app.lua:10" (chunk and first
			   line: LuaJIT's functions have no names), C and
			   builtins their names, traces their labels. */
  uint64_t line;	/* Lua: the line; else 0. */
  uint64_t func_line;	/* Lua: the function's first line; else 0. */
  uint32_t site;	/* The report site (mp_profile.site) its events are
			   billed to, or MP_NO_SITE. */
  mp_cost alloc;	/* Self: n allocation and reallocation events, plus
			   their new sizes. */
  mp_cost live;		/* Self: n blocks still live at the end, plus their
			   sizes. */
} mp_tnode;

typedef struct mp_stacktree {
  mp_tnode *node;	/* node[0] is the root. */
  uint32_t n, cap;
  int stacks;		/* 1 if the profile recorded call stacks. */
  mp_strtab text;	/* Storage of labels and names. */
} mp_stacktree;

/* Build the tree of sec's profile (after mp_sections_build()). Returns 0,
** or -1 when out of memory. */
int mp_stacktree_build(mp_stacktree *t, const mp_sections *sec);
void mp_stacktree_free(mp_stacktree *t);

/* The self cost of node i under a metric, for flame graphs and views:
** allocated bytes or events, live (leaked) bytes or blocks. */
typedef enum mp_metric {
  MP_METRIC_ALLOC_BYTES, MP_METRIC_ALLOC_COUNT,
  MP_METRIC_LEAK_BYTES, MP_METRIC_LEAK_COUNT
} mp_metric;

static inline uint64_t mp_tnode_value(const mp_tnode *n, mp_metric m)
{
  switch (m) {
  case MP_METRIC_ALLOC_BYTES: return n->alloc.plus;
  case MP_METRIC_ALLOC_COUNT: return n->alloc.n;
  case MP_METRIC_LEAK_BYTES: return n->live.plus;
  default: return n->live.n;
  }
}

#endif
