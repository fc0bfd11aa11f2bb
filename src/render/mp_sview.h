/*
** mp_sview.h: the report's view of call stacks per site (text and JSON
** with --stacks): for each site, the heaviest stacks that end there.
**
** A stack "ends at" a site when its innermost frame bills that site (a
** builtin's frame bills the Lua line that called it, as in the report).
** Under a metric, sites are ordered by what their stacks cost (then by
** the other measure of the metric's kind, then by label), and each site's
** stacks the same way (then frame by frame, innermost first); stacks that
** cost 0 are left out, and so are sites left with none.
*/

#ifndef MP_SVIEW_H
#define MP_SVIEW_H

#include <stdint.h>

#include "analysis/mp_stacks.h"

/* A site and its stacks. */
typedef struct mp_sgroup {
  uint32_t site;	/* The site, or MP_NO_SITE (nodes that bill none). */
  uint32_t node;	/* Its heaviest stack's innermost node. */
  mp_cost alloc, live, peak;	/* What its stacks cost (n and plus; minus
				   is 0). */
  uint32_t nstack;	/* Stacks that end at it with a cost. */
  uint32_t path0;	/* Its stacks shown: the innermost nodes */
  uint32_t npath;	/* path[path0 .. path0 + npath), heaviest first. */
} mp_sgroup;

typedef struct mp_sview {
  mp_sgroup *group;	/* Sites, heaviest first. */
  uint32_t ngroup;
  uint32_t nall;	/* Sites before the cut at top. */
  uint32_t *path;	/* Innermost nodes of the stacks shown. */
} mp_sview;

/* The view of t under metric m: at most top sites (0: all), at most
** per_site stacks each (0 or UINT32_MAX: all). 0, or -1 when out of
** memory. */
int mp_sview_build(mp_sview *v, const mp_stacktree *t, mp_metric m,
		   uint64_t top, uint32_t per_site);
void mp_sview_free(mp_sview *v);

/* The alias number N of a frame whose file is "function_alias_N" (a Lua
** chunk loaded from a string), else 0. */
uint32_t mp_tnode_alias(const mp_tnode *x);

/* Mark the alias of the frames from node k to the root in used (indexed
** by alias number, names->nalias entries). */
void mp_sview_mark_aliases(const mp_stacktree *t, uint32_t k,
			   const mp_strtab *names, uint8_t *used);

/* JSON and text names of frame kinds ("lua", "builtin", "cfunc", "trace",
** "host", "cut", "internal"), by MP_FK_*; kinds past the table are
** "internal". */
const char *mp_fk_name(uint8_t kind);

#endif
