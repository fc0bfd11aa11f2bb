/*
** stack_dump.c: print the call-stack tree of a profile, one line per node
** that has a cost of its own, for the tests of stack recording:
**
**   frame;frame;...;frame<TAB>allocs<TAB>bytes<TAB>live blocks<TAB>live bytes
**
** root first, lines sorted. The tree is the reader's (mp_stacks.h), so the
** tests check what every stack renderer starts from.
**
**   stack_dump FILE
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mp_profile.h"
#include "analysis/mp_sections.h"
#include "analysis/mp_stacks.h"

/* Print the path of node i (root first) into buf. */
static void path(const mp_stacktree *t, uint32_t i, char *buf, size_t size)
{
  uint32_t chain[4096];
  int n = 0;
  size_t len = 0;
  while (i && n < 4096) { chain[n++] = i; i = t->node[i].parent; }
  buf[0] = '\0';
  while (n-- > 0) {
    int m = snprintf(buf + len, size - len, "%s%s", len ? ";" : "",
		     t->node[chain[n]].label);
    if (m < 0 || (size_t)m >= size - len) break;
    len += (size_t)m;
  }
}

static int cmp(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
  FILE *f;
  static char data[1 << 26];
  size_t len;
  mp_profile p;
  mp_sections sec;
  mp_stacktree t;
  char **lines, buf[65536];
  uint32_t i, n = 0;
  if (argc != 2 || !(f = fopen(argv[1], "rb"))) {
    fprintf(stderr, "usage: stack_dump FILE\n");
    return 2;
  }
  len = fread(data, 1, sizeof(data), f);
  fclose(f);
  mp_profile_init(&p);
  mp_profile_read(&p, data, len);
  if (mp_sections_build(&sec, &p, MP_SORT_BYTES) < 0 ||
      mp_stacktree_build(&t, &sec) < 0) {
    fprintf(stderr, "stack_dump: out of memory\n");
    return 2;
  }
  lines = calloc(t.n ? t.n : 1, sizeof(*lines));
  for (i = 1; i < t.n; i++) {
    const mp_tnode *nd = &t.node[i];
    size_t l;
    if (!nd->alloc.n && !nd->live.n) continue;
    path(&t, i, buf, sizeof(buf));
    l = strlen(buf);
    snprintf(buf + l, sizeof(buf) - l, "\t%llu\t%llu\t%llu\t%llu",
	     (unsigned long long)nd->alloc.n, (unsigned long long)nd->alloc.plus,
	     (unsigned long long)nd->live.n, (unsigned long long)nd->live.plus);
    lines[n++] = strdup(buf);
  }
  qsort(lines, n, sizeof(*lines), cmp);
  for (i = 0; i < n; i++) { puts(lines[i]); free(lines[i]); }
  printf("stacks\t%d\n", t.stacks);
  free(lines);
  mp_stacktree_free(&t);
  mp_sections_free(&sec);
  mp_profile_free(&p);
  return 0;
}
