/*
** mp_file.c: map a profile for a single sequential pass.
**
** mmap avoids a copy and lets the kernel read ahead. Pipes and other
** unmappable inputs are first copied to an unlinked temporary file (in
** $TMPDIR or /tmp) and mapped from there, so that reading a stream does
** not hold all of it in memory; if no temporary file can be made, they
** are read into memory.
*/

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/mp_file.h"

/* Read all of fd into a malloc'd buffer. */
static int slurp(mp_file *f, int fd)
{
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  if (!buf) return -1;
  for (;;) {
    ssize_t n;
    if (len == cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) { free(buf); errno = ENOMEM; return -1; }
      buf = nb;
      cap *= 2;
    }
    n = read(fd, buf + len, cap - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      { int e = errno; free(buf); errno = e; }
      return -1;
    }
    if (n == 0) break;
    len += (size_t)n;
  }
  f->data = buf;
  f->len = len;
  f->mapped = 0;
  return 0;
}

/* Map the regular file fd (size bytes); 0, or -1 to fall back to read(). */
static int map(mp_file *f, int fd, size_t size)
{
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return -1;
  madvise(p, size, MADV_SEQUENTIAL);
  f->data = p;
  f->len = size;
  f->mapped = 1;
  return 0;
}

/* Copy the stream fd to an unlinked temporary file and map that. Returns
** 0, -1 on an I/O error (errno set), or 1 if no temporary file could be
** made (nothing was read yet: the caller can read the stream itself). */
static int spool(mp_file *f, int fd)
{
  const char *dir = getenv("TMPDIR");
  char path[4096], buf[1 << 16];
  size_t total = 0;
  int t;
  snprintf(path, sizeof(path), "%s/ljmemprof-XXXXXX",
	   dir && *dir ? dir : "/tmp");
  if ((t = mkstemp(path)) < 0) return 1;
  unlink(path);
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf)), w = 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { int e = errno; close(t); errno = e; return -1; }
    if (n == 0) break;
    while (w < n) {
      ssize_t m = write(t, buf + w, (size_t)(n - w));
      if (m < 0 && errno == EINTR) continue;
      if (m < 0) { int e = errno; close(t); errno = e; return -1; }
      w += m;
    }
    total += (size_t)n;
  }
  if (total == 0) {	/* Nothing to map: an empty profile. */
    close(t);
    f->data = NULL;
    f->len = 0;
    f->mapped = 0;
    return 0;
  }
  if (map(f, t, total) < 0) {
    int e = errno;
    close(t);
    errno = e;
    return -1;
  }
  close(t);
  return 0;
}

int mp_file_open(mp_file *f, const char *path)
{
  struct stat st;
  int fd, rc;
  memset(f, 0, sizeof(*f));
  if (strcmp(path, "-") == 0) {
    fd = 0;
  } else {
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
  }
  if (fstat(fd, &st) < 0) rc = -1;
  else if (S_ISDIR(st.st_mode)) { errno = EISDIR; rc = -1; }
  else if (S_ISREG(st.st_mode) && st.st_size > 0 &&
	   map(f, fd, (size_t)st.st_size) == 0) rc = 0;
  else if (S_ISREG(st.st_mode)) rc = slurp(f, fd);
  else if ((rc = spool(f, fd)) == 1) rc = slurp(f, fd);
  if (fd == 0) return rc;
  { int e = errno; close(fd); errno = e; }
  return rc;
}

void mp_file_close(mp_file *f)
{
  if (f->mapped) munmap((void *)f->data, f->len);
  else free((void *)f->data);
  memset(f, 0, sizeof(*f));
}

void mp_file_release(mp_file *f, size_t upto)
{
  long page = sysconf(_SC_PAGESIZE);
  size_t n;
  if (!f->mapped || page <= 0) return;
  n = upto - upto % (size_t)page;
  if (n > f->len) n = f->len - f->len % (size_t)page;
  if (n <= f->released) return;	/* Only what is new: the kernel walks it. */
  madvise((char *)f->data + f->released, n - f->released, MADV_DONTNEED);
  f->released = n;
}
