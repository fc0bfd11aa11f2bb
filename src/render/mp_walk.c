/*
** mp_walk.c: the call-stack tree in print order (see mp_walk.h).
*/

#include <stdlib.h>
#include <string.h>

#include "render/mp_walk.h"

/* A child to sort: its label and its index. */
typedef struct kid {
  const char *label;
  uint32_t node;
} kid;

/* Siblings by label bytes, then by index (two nodes may print alike). */
static int kid_cmp(const void *a, const void *b)
{
  const kid *x = a, *y = b;
  int c = strcmp(x->label, y->label);
  if (c) return c;
  return x->node < y->node ? -1 : x->node > y->node;
}

int mp_walk_build(mp_walk *w, const mp_stacktree *t)
{
  uint32_t n = t->n, i, p, top = 0;
  uint32_t *start = NULL, *stack = NULL, *sdepth = NULL;
  kid *kids = NULL;
  memset(w, 0, sizeof(*w));
  if (!n) return 0;
  start = calloc((size_t)n + 1, sizeof(*start));
  kids = malloc((size_t)n * sizeof(*kids));
  stack = malloc((size_t)n * sizeof(*stack));
  sdepth = malloc((size_t)n * sizeof(*sdepth));
  w->node = malloc((size_t)n * sizeof(*w->node));
  w->depth = malloc((size_t)n * sizeof(*w->depth));
  if (!start || !kids || !stack || !sdepth || !w->node || !w->depth)
    goto err;
  /* Children grouped by parent: counts, offsets, then the groups. */
  for (i = 1; i < n; i++)
    if ((p = t->node[i].parent) < n && p != i) start[p + 1]++;
  for (i = 0; i < n; i++) start[i + 1] += start[i];
  for (i = 1; i < n; i++) {
    const mp_tnode *x = &t->node[i];
    if ((p = x->parent) >= n || p == i) continue;
    kids[start[p]].label = x->label ? x->label : "";
    kids[start[p]++].node = i;
  }
  for (i = n; i > 0; i--) start[i] = start[i - 1];	/* Back to starts. */
  start[0] = 0;
  for (i = 0; i < n; i++)
    if (start[i + 1] - start[i] > 1)
      qsort(kids + start[i], start[i + 1] - start[i], sizeof(*kids),
	    kid_cmp);
  /* Depth first from the root; children pushed last first. */
  stack[top] = 0;
  sdepth[top++] = 0;
  while (top) {
    uint32_t x = stack[--top], d = sdepth[top], k;
    w->node[w->n] = x;
    w->depth[w->n++] = d;
    if (d > w->maxdepth) w->maxdepth = d;
    for (k = start[x + 1]; k > start[x]; k--) {
      stack[top] = kids[k - 1].node;
      sdepth[top++] = d + 1;
    }
  }
  free(start);
  free(kids);
  free(stack);
  free(sdepth);
  return 0;
err:
  free(start);
  free(kids);
  free(stack);
  free(sdepth);
  mp_walk_free(w);
  return -1;
}

void mp_walk_free(mp_walk *w)
{
  free(w->node);
  free(w->depth);
  memset(w, 0, sizeof(*w));
}
