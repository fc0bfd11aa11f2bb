/*
** mp_file.h: a profile file mapped into memory for the reader.
*/
#ifndef MP_FILE_H
#define MP_FILE_H

#include <stddef.h>

typedef struct mp_file {
  const void *data;
  size_t len;
  int mapped;		/* 1 if data is an mmap, 0 if malloc'd. */
  size_t released;	/* Bytes dropped by mp_file_release() so far. */
} mp_file;

/* Map path; on failure return -1 and leave errno set. "-" reads stdin. */
int mp_file_open(mp_file *f, const char *path);
void mp_file_close(mp_file *f);

/* Tell the kernel the first upto bytes were read: a mapped file's pages
** there are dropped from memory (they are read back if touched again), so
** a long pass over a big file keeps a small resident set. */
void mp_file_release(mp_file *f, size_t upto);

#endif
