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
  const char *source;	/* Lua: the line as a source of the report is
			   labelled (mp_label(): "@app.lua:12", "@app.lua:1
			   (vec)"), for the lines inside a trace; else
			   label. */
  const char *file;	/* Lua: the chunk as labels name it ("@app.lua",
			   "[string \"tbl\"]", "function_alias_N");
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
  mp_cost peak;		/* Self: n blocks live at the peak, plus their
			   sizes (when the profile kept them). */
} mp_tnode;

typedef struct mp_stacktree {
  mp_tnode *node;	/* node[0] is the root. */
  uint32_t n, cap;
  int stacks;		/* 1 if the profile recorded call stacks. */
  int peak;		/* 1 if the nodes have their peak costs. */
  mp_strtab text;	/* Storage of labels and names. */
} mp_stacktree;

/* Build the tree of sec's profile (after mp_sections_build()). Returns 0,
** or -1 when out of memory. */
int mp_stacktree_build(mp_stacktree *t, const mp_sections *sec);
void mp_stacktree_free(mp_stacktree *t);

/* Add the frames of tree a to t: a's node under a parent is t's node of
** the same kind and label (and site, if several have them) under the
** parent's node in t, made (without costs) if t has none. map (a->n entries) gets t's node of each of a's.
** 0, or -1 when out of memory. */
int mp_stacktree_graft(mp_stacktree *t, const mp_stacktree *a,
		       uint32_t *map);

/* The self cost of node i under a metric, for flame graphs and views:
** allocated bytes or events, live (leaked) bytes or blocks at the end,
** bytes or blocks live at the peak. A metric is a cost (m >> 1) and a
** measure of it (m & 1: bytes or count). */
typedef enum mp_metric {
  MP_METRIC_ALLOC_BYTES, MP_METRIC_ALLOC_COUNT,
  MP_METRIC_LEAK_BYTES, MP_METRIC_LEAK_COUNT,
  MP_METRIC_PEAK_BYTES, MP_METRIC_PEAK_COUNT
} mp_metric;

#define MP_METRIC_N	6

/* Of the three costs of a node or a group of them, the one that metric m
** measures. */
static inline const mp_cost *mp_metric_cost(mp_metric m, const mp_cost *alloc,
					    const mp_cost *live,
					    const mp_cost *peak)
{
  return m >> 1 == 0 ? alloc : m >> 1 == 1 ? live : peak;
}

/* Whether a metric counts bytes (else events or blocks). */
static inline int mp_metric_bytes(mp_metric m)
{
  return !(m & 1);
}

/* Whether metric m weighs what was live at the peak. */
static inline int mp_metric_peak(mp_metric m)
{
  return m >> 1 == MP_METRIC_PEAK_BYTES >> 1;
}

/* What metric m measures of cost c. */
static inline uint64_t mp_metric_value(mp_metric m, const mp_cost *c)
{
  return mp_metric_bytes(m) ? c->plus : c->n;
}

/* The cost of node n that metric m measures. */
static inline const mp_cost *mp_tnode_cost(const mp_tnode *n, mp_metric m)
{
  return mp_metric_cost(m, &n->alloc, &n->live, &n->peak);
}

/* The other measure of the same cost (bytes for a count, and back). */
static inline mp_metric mp_metric_other(mp_metric m)
{
  return (mp_metric)(m ^ 1);
}

static inline uint64_t mp_tnode_value(const mp_tnode *n, mp_metric m)
{
  return mp_metric_value(m, mp_tnode_cost(n, m));
}

#endif
