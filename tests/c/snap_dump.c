/*
** snap_dump.c: every object of a heap snapshot as the reader sees it, for
** the tests: a header line, then one line per object (tab-separated):
**   id type self retained weak path
** where weak is 1 if only weak references reach it; with -d, each line
** begins with the object's DevTools @id and a tab (the .heapsnapshot
** export's, mp_heapsnapshot_ids()). A path more than 64
** steps long is printed only for the last object (each path walks to
** the root: all of a long list's would take quadratic time).
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mp_heapsnap.h"
#include "render/mp_heapsnapshot.h"

int main(int argc, char **argv)
{
  FILE *f;
  uint8_t *buf;
  size_t n, cap = 1 << 20;
  mp_snapshot sn;
  mp_heapsnap h;
  char err[256], path[4096];
  uint32_t i, *ids = NULL;
  int dev = argc == 3 && !strcmp(argv[1], "-d");
  if (argc != 2 + dev || !(f = fopen(argv[1 + dev], "rb"))) {
    fprintf(stderr, "usage: snap_dump [-d] FILE\n");
    return 2;
  }
  buf = malloc(cap);
  for (n = 0; buf; ) {
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (n < cap) break;
    buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf) return 2;
  if (mp_snap_decode(buf, n, &sn, err, sizeof(err)) < 0) {
    printf("error %s\n", err);
    return 1;
  }
  if (mp_heapsnap_build(&h, &sn) < 0) return 2;
  printf("objects=%llu bytes=%llu gctotal=%llu vmbytes=%llu unreached=%llu "
	 "ubytes=%llu flags=%llu weakonly=%u filesize=%zu\n",
	 (unsigned long long)sn.objects, (unsigned long long)sn.bytes,
	 (unsigned long long)sn.gctotal, (unsigned long long)sn.vmbytes,
	 (unsigned long long)sn.unreached, (unsigned long long)sn.ubytes,
	 (unsigned long long)sn.flags, h.nweak, n);
  if (dev && (!(ids = malloc(sn.n * sizeof(*ids))) ||
	      mp_heapsnapshot_ids(&sn, ids) < 0))
    return 2;
  for (i = 1; i < sn.n; i++) {
    if (dev) printf("%u\t", ids[i]);
    printf("%u\t%s\t%llu\t%llu\t%d\t%s\n", i, mp_heapsnap_type(sn.type[i]),
	   (unsigned long long)sn.size[i], (unsigned long long)h.retained[i],
	   h.weakonly[i], h.depth[i] > 64 && i + 1 < sn.n ? "(deep)" :
	   mp_heapsnap_path(&h, i, 0, path, sizeof(path)));
  }
  free(ids);
  mp_heapsnap_free(&h);
  mp_snap_free(&sn);
  free(buf);
  return 0;
}
