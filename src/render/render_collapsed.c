/*
** render_collapsed.c: collapsed stacks, the input of flamegraph.pl,
** inferno and speedscope: one line per call stack, its frames root first
** separated by ';', then a space and the value of the metric that the
** stack's innermost frame cost itself.
**
**   @app.lua:22;@app.lua:16;@app.lua:8 17260
**
** Stacks whose value is 0 are left out. The diff of two profiles has two
** values, BASE then NEW ("frames 120 96"): the input of flamegraph.pl's
** differential flame graphs (what its difffolded.pl writes). Lines are sorted frame by frame
** (mp_walk.h), so a profile always prints the same. Frames are written as
** in the text report (control characters and bytes that are not UTF-8 as
** \xNN), and ';' and '\' as \x3b and \x5c (MP_TEXT_FOLDED): a frame never
** splits, and two frames that differ never print alike. Spaces stay: the
** readers split the value off at the last space.
*/

#include <stdlib.h>
#include <string.h>

#include "render/mp_render.h"
#include "render/mp_text.h"
#include "render/mp_walk.h"

int mp_render_collapsed_tree(FILE *out, const mp_stacktree *t,
			     const mp_render_opts *o)
{
  return mp_render_collapsed_pairs(out, t, o, NULL);
}

int mp_render_collapsed_pairs(FILE *out, const mp_stacktree *t,
			      const mp_render_opts *o, const mp_dnode *base)
{
  mp_walk w;
  uint32_t *path, i, k;
  if (mp_walk_build(&w, t) < 0) return -1;
  if (!(path = malloc(((size_t)w.maxdepth + 1) * sizeof(*path)))) {
    mp_walk_free(&w);
    return -1;
  }
  /* path[d] is the node at depth d on the way to the current one. */
  for (i = 1; i < w.n; i++) {
    const mp_tnode *x = &t->node[w.node[i]];
    uint64_t v = mp_tnode_value(x, o->metric), b = 0;
    uint32_t d = w.depth[i];
    path[d] = w.node[i];
    if (base) {
      const mp_dnode *y = &base[w.node[i]];
      b = mp_metric_value(o->metric, mp_metric_cost(o->metric, &y->alloc,
						    &y->live, &y->peak));
    }
    if (!v && !b) continue;
    for (k = 1; k <= d; k++) {
      const char *l = t->node[path[k]].label;
      if (k > 1) fputc(';', out);
      if (l) mp_text_put(out, l, strlen(l), MP_TEXT_FOLDED);
    }
    if (base) fprintf(out, " %llu", (unsigned long long)b);
    fprintf(out, " %llu\n", (unsigned long long)v);
  }
  free(path);
  mp_walk_free(&w);
  return ferror(out) ? -1 : 0;
}

int mp_render_collapsed(FILE *out, const mp_sections *sec,
			const mp_render_opts *o)
{
  return mp_render_with_tree(out, sec, o, mp_render_collapsed_tree);
}
