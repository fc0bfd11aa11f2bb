/*
** mp_file.c: map a profile for a single sequential pass.
**
** mmap avoids a copy and lets the kernel read ahead; pipes and other
** unmappable inputs are read into memory instead.
*/

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/mp_file.h"

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

int mp_file_open(mp_file *f, const char *path)
{
  struct stat st;
  int fd, rc;
  memset(f, 0, sizeof(*f));
  if (strcmp(path, "-") == 0) return slurp(f, 0);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (fstat(fd, &st) < 0) { int e = errno; close(fd); errno = e; return -1; }
  if (S_ISDIR(st.st_mode)) { close(fd); errno = EISDIR; return -1; }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
      f->data = p;
      f->len = (size_t)st.st_size;
      f->mapped = 1;
      close(fd);
      return 0;
    }
  }
  rc = slurp(f, fd);
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
  if (n) madvise((void *)f->data, n, MADV_DONTNEED);
}
