/*
** snap_cut.c: the snapshot decoder on damaged files. FILE is a good
** snapshot: it decodes; cut at every byte, it fails with a message naming
** a byte offset; with bytes changed at random (10000 tries), it decodes
** or fails with a message, never crashes or loops. Prints TAP.
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/mp_snap.h"
#include "tap.h"

int main(int argc, char **argv)
{
  FILE *f;
  uint8_t *buf, *copy;
  size_t n = 0, cap = 1 << 16, i, badcut = 0, nomsg = 0, decoded = 0;
  mp_snapshot sn;
  char err[256];
  if (argc != 2 || !(f = fopen(argv[1], "rb"))) return 2;
  buf = malloc(cap);
  for (;;) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  OK(mp_snap_decode(buf, n, &sn, err, sizeof(err)) == 0, "the file decodes",
     "%s", err);
  mp_snap_free(&sn);
  copy = malloc(n);
  for (i = 0; i < n; i++) {
    memcpy(copy, buf, i);
    err[0] = 0;
    if (mp_snap_decode(copy, i, &sn, err, sizeof(err)) == 0) {
      badcut++;
      mp_snap_free(&sn);
    } else if (strncmp(err, "byte ", 5)) {
      nomsg++;
    }
  }
  OK(badcut == 0, "cut at every byte: each cut is an error", "%zu of %zu "
     "cuts decoded", badcut, n);
  OK(nomsg == 0, "each with a message naming the byte", "%zu without",
     nomsg);
  nomsg = 0;
  for (i = 0; i < 10000; i++) {
    int k, changes = 1 + (int)(next() % 4);
    memcpy(copy, buf, n);
    for (k = 0; k < changes; k++) copy[next() % n] = (uint8_t)next();
    err[0] = 0;
    if (mp_snap_decode(copy, n, &sn, err, sizeof(err)) == 0) {
      decoded++;
      mp_snap_free(&sn);
    } else if (strncmp(err, "byte ", 5)) {
      nomsg++;
    }
  }
  OK(nomsg == 0, "changed bytes: decoded or an error naming the byte",
     "%zu without a message (%zu decoded)", nomsg, decoded);
  printf("1..%d\n", n_test);
  free(buf);
  free(copy);
  return n_fail != 0;
}
