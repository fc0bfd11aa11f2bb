/*
** stream_items.c: list the records of a profile as the format's decoder
** sees them, one line each, for the tests of what the agent writes beyond
** events: settings and notes (MP_X_INFO), time marks (MP_X_TIME), nodes,
** builtin names, and the trailer of notes after a version-3 epilogue.
**
**   stream_items FILE
** Lines: "version V", "event", "symbol", "node", "builtin NAME",
** "info KEY=VALUE", "time NS", "end", "note KEY=VALUE", "status RC";
** consecutive "event" lines are counted ("event N").
*/

#include <stdio.h>
#include <stdlib.h>

#include "format/mp_format.h"

static unsigned long events;

/* Print the count of events read since the last other line. */
static void flush_events(void)
{
  if (events) printf("event %lu\n", events);
  events = 0;
}

int main(int argc, char **argv)
{
  static unsigned char buf[1 << 26];
  FILE *f;
  size_t n;
  mp_reader r;
  mp_item it;
  int rc;
  if (argc != 2 || !(f = fopen(argv[1], "rb"))) {
    fprintf(stderr, "usage: stream_items FILE\n");
    return 2;
  }
  n = fread(buf, 1, sizeof(buf), f);
  fclose(f);
  rc = mp_reader_init(&r, buf, n);
  while (rc == MP_OK && (rc = mp_reader_next(&r, &it)) == MP_OK) {
    if (it.kind != MP_AEV_SYMTAB) { events++; continue; }
    flush_events();
    switch (it.src) {
    case MP_SRC_STACK: puts("node"); break;
    case MP_SRC_BUILTIN: printf("builtin %.*s\n", (int)it.name_len, it.name); break;
    case MP_SRC_INFO:
      printf("info %.*s=%.*s\n", (int)it.name_len, it.name, (int)it.value_len,
	     it.value);
      break;
    case MP_SRC_TIME: printf("time %llu\n", (unsigned long long)it.id); break;
    default: puts("symbol"); break;
    }
  }
  flush_events();
  printf("version %d\n", r.ljm_version);
  if (rc == MP_END) {
    puts("end");
    while ((rc = mp_reader_note(&r, &it)) == MP_OK)
      printf("note %.*s=%.*s\n", (int)it.name_len, it.name, (int)it.value_len,
	     it.value);
  }
  printf("status %d\n", rc);
  return 0;
}
