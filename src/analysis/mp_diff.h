/*
** mp_diff.h: what changed between two profiles (`ljmemprof diff BASE
** NEW`), per source and per call stack.
**
** Both sides go into one merged profile (mp_merge.h), so that a source is
** found in both by the code it names and every label (and alias number)
** is the same on both sides; each side keeps its own costs, by site of
** the merged profile. A source's cost on a side is what the report shows
** of it: its allocations and reallocations (events, new sizes), its
** reallocations and frees (events, old sizes), the blocks it held at the
** end (blocks, bytes) and, when both sides kept it, at the peak. The
** change is NEW minus BASE, field by field: mp_cost_sub().
**
** Per stack, each side's call-stack tree is built from the merged
** profile with that side's costs only, and the two are laid over each
** other frame by frame (mp_stacktree_graft): one tree, the new side's
** costs in its nodes, the base side's beside them.
*/

#ifndef MP_DIFF_H
#define MP_DIFF_H

#include "analysis/mp_sections.h"
#include "analysis/mp_stacks.h"

/* What a source cost on one side. */
typedef struct mp_dcost {
  mp_cost alloc;	/* Allocations and reallocations: n, plus. */
  mp_cost freed;	/* Reallocations and frees: n, minus. */
  mp_cost live;		/* Blocks held at the end: n, plus. */
  mp_cost peak;		/* Blocks held at the peak: n, plus. */
} mp_dcost;

/* A source, on both sides. */
typedef struct mp_drow {
  uint32_t site;	/* Its site in the merged profile. */
  mp_dcost side[2];	/* Base, new. */
} mp_drow;

/* The costs of a stack node that the metrics weigh. */
typedef struct mp_dnode {
  mp_cost alloc, live, peak;
} mp_dnode;

typedef struct mp_diff {
  mp_profile m;		/* Both profiles merged: labels, the union. */
  mp_sections sec;	/* Its sections (labels, aliases). */
  const char *file[2];	/* Names of the two profiles. */
  mp_profile side[2];	/* Views of m with one side's costs (they share
			   m's symbols and locations). */
  mp_metric metric;	/* What orders the rows. */
  mp_drow *row;		/* Sources that changed, largest change first. */
  uint32_t nrow;
  uint32_t nsame;	/* Sources with a cost that did not change. */
  mp_drow total;	/* Every source. */
  int peak;		/* The rows compare the peaks (asked for, and both
			   sides kept them): a source changed at the peak
			   alone is a changed source only then. The tree
			   has its peaks when both kept them (tree.peak). */
  mp_stacktree tree;	/* Both sides' stacks: new's costs in its nodes... */
  mp_dnode *base;	/* ...base's costs by node. */
  int stacks;		/* Either side recorded call stacks. */
  int cut[2];		/* 1: that side was cut short or damaged (set by
			   the caller, which read them). */
} mp_diff;

/* Build the diff of profiles a (base) and b (new), read with the same
** options, under metric m (which orders the rows); with_tree: the stack
** trees too; peak: the rows compare what each source held at the peak
** too (--peak, a peak metric), else a source changed when what it
** allocated, freed or held at the end did: one definition for every
** format. The profiles can be freed afterwards. 0, or -1 when out of
** memory (d is then freed). */
int mp_diff_build(mp_diff *d, const mp_profile *a, const mp_profile *b,
		  mp_metric m, mp_sort sort, int with_tree, int peak);
void mp_diff_free(mp_diff *d);

/* What metric m measures of a side's cost. */
static inline uint64_t mp_dcost_value(const mp_dcost *c, mp_metric m)
{
  return mp_metric_value(m, mp_metric_cost(m, &c->alloc, &c->live, &c->peak));
}

#endif
