/*
** mp_input.c: a mapped file, or a stream read through a sliding window
** (see mp_input.h for why and what it costs).
*/

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/mp_input.h"

#define RELEASE_STEP	((size_t)8 << 20)	/* Bytes between madvise calls. */

/* Map the regular file fd of size bytes; 0, or -1 to read it instead. */
static int map(mp_input *in, int fd, size_t size)
{
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return -1;
  madvise(p, size, MADV_SEQUENTIAL);
  in->data = p;
  in->len = in->total = in->maplen = size;
  in->mapped = 1;
  return 0;
}

int mp_input_open(mp_input *in, const char *path)
{
  struct stat st;
  int fd;
  memset(in, 0, sizeof(*in));
  in->fd = in->mapfd = -1;
  if (strcmp(path, "-") == 0) {
    fd = 0;
  } else {
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    in->own_fd = 1;
  }
  if (fstat(fd, &st) < 0 || (S_ISDIR(st.st_mode) && (errno = EISDIR))) {
    int e = errno;
    if (in->own_fd) close(fd);
    errno = e;
    return -1;
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0 &&
      map(in, fd, (size_t)st.st_size) == 0) {
    in->mapfd = fd;	/* Kept to learn the size if the file shrinks. */
    return 0;
  }
  in->fd = fd;	/* A stream (or a file that reads as one). */
  return 0;
}

void mp_input_memory(mp_input *in, const void *data, size_t len,
		     size_t chunk)
{
  memset(in, 0, sizeof(*in));
  in->fd = in->mapfd = -1;
  if (!chunk) {
    in->data = data;
    in->len = in->total = len;
    return;
  }
  in->src = data;
  in->srclen = len;
  in->chunk = chunk;
}

void mp_input_close(mp_input *in)
{
  if (in->mapped) munmap((void *)in->data, in->maplen);
  if (in->own_fd) close(in->mapfd >= 0 ? in->mapfd : in->fd);
  free(in->buf);
  memset(in, 0, sizeof(*in));
  in->fd = in->mapfd = -1;
}

void mp_input_start(mp_input *in, mp_reader *r)
{
  mp_reader_start(r);
  if (in->data || (!in->src && in->fd < 0))
    mp_reader_window(r, in->data, in->len, 0, 1);
  else
    mp_reader_window(r, NULL, 0, 0, 0);	/* Filled by the first read. */
}

/* Read up to n bytes into dst: from the fd, or chunk bytes at a time from
** memory. The count, 0 at the end, -1 on an error (errno set). */
static ssize_t get(mp_input *in, uint8_t *dst, size_t n)
{
  ssize_t got;
  if (in->src) {
    size_t m = in->srclen - in->srcpos;
    if (m > in->chunk) m = in->chunk;
    if (m > n) m = n;
    memcpy(dst, in->src + in->srcpos, m);
    in->srcpos += m;
    return (ssize_t)m;
  }
  do got = read(in->fd, dst, n); while (got < 0 && errno == EINTR);
  return got;
}

int mp_input_fill(mp_input *in, mp_reader *r)
{
  size_t keep = (size_t)(r->end - r->p), have, origin = mp_reader_offset(r);
  int eof = 0;
  if (r->eof) return 0;
  if (keep == in->cap || !in->buf) {	/* An item longer than the window. */
    size_t cap = in->cap ? in->cap * 2 : MP_WINDOW;
    uint8_t *b;
    if (cap > MP_WINDOW_MAX) cap = MP_WINDOW_MAX;
    if (cap <= keep) {
      r->err_offset = origin;
      snprintf(r->err, sizeof(r->err), "an item of at most %zu bytes",
	       (size_t)MP_WINDOW_MAX);
      return MP_ERR_DATA;
    }
    if (!(b = malloc(cap))) {
      in->err = ENOMEM;
      r->err_offset = origin;
      snprintf(r->err, sizeof(r->err), "memory for a window of %zu bytes",
	       cap);
      return MP_ERR_IO;
    }
    if (keep) memcpy(b, r->p, keep);
    free(in->buf);
    in->buf = b;
    in->cap = cap;
  } else if (keep) {
    memmove(in->buf, r->p, keep);
  }
  for (have = keep; have < in->cap; ) {	/* Fill the window. */
    ssize_t got = get(in, in->buf + have, in->cap - have);
    if (got < 0) {
      in->err = errno;
      mp_reader_window(r, in->buf, have, origin, 1);
      r->err_offset = origin + have;
      snprintf(r->err, sizeof(r->err), "more data, found a read error");
      return MP_ERR_IO;
    }
    if (got == 0) { eof = 1; break; }
    have += (size_t)got;
    in->total += (size_t)got;
    if (in->src) break;	/* In-memory streams: one chunk at a time. */
  }
  mp_reader_window(r, in->buf, have, origin, eof);
  return 0;
}

int mp_input_next(mp_input *in, mp_reader *r, mp_item *it)
{
  int rc, frc;
  while ((rc = mp_reader_next(r, it)) == MP_MORE)
    if ((frc = mp_input_fill(in, r)) < 0) return frc;
  return rc;
}

void mp_input_consumed(mp_input *in, size_t offset)
{
  if (in->mapped && offset >= in->released + RELEASE_STEP) {
    /* Only what is new: the kernel walks every page of the range. */
    long page = sysconf(_SC_PAGESIZE);
    size_t n = offset - offset % (size_t)(page > 0 ? page : 4096);
    if (n > in->released) {
      madvise((char *)in->data + in->released, n - in->released,
	      MADV_DONTNEED);
      in->released = n;
    }
  }
  if (in->progress) in->progress(in->ctx, offset);
}

/* -- A file that shrinks under its mapping -------------------------------- */

static __thread sigjmp_buf *guard_jmp;	/* The pass of this thread... */
static __thread const mp_input *guard_in;	/* ...over this input. */
static __thread size_t guard_fault;	/* Offset of the faulting read. */
static struct sigaction guard_old;	/* SIGBUS's handler before ours. */
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

/* SIGBUS: a read of the guarded mapping past the file's end leaves the
** pass; any other fault goes back to the handler before ours, and the
** access, run again, faults into it. */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
  const mp_input *in = guard_in;
  uintptr_t a = (uintptr_t)si->si_addr, base;
  (void)uc;
  if (in && guard_jmp) {
    base = (uintptr_t)in->data;
    if (a >= base && a - base < in->maplen) {
      guard_fault = (size_t)(a - base);
      siglongjmp(*guard_jmp, 1);
    }
  }
  sigaction(sig, &guard_old, NULL);
}

/* Install on_sigbus (once a process). */
static void guard_install(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &guard_old);
}

/* Whether the mapped file is now shorter than in->len (or than the page
** of a fault at offset fault, if fault is not SIZE_MAX): if so, end the
** input there and return 1. */
static int shrink(mp_input *in, size_t fault)
{
  long page = sysconf(_SC_PAGESIZE);
  size_t end = in->len;
  struct stat st;
  if (fault != SIZE_MAX)
    end = fault - fault % (size_t)(page > 0 ? page : 4096);
  if (fstat(in->mapfd, &st) == 0 && st.st_size >= 0 &&
      (uint64_t)st.st_size < end)
    end = (size_t)st.st_size;
  if (end >= in->len) return 0;
  if (!in->shrunk) in->shrunk = in->maplen;
  in->len = in->total = end;
  in->released = 0;
  return 1;
}

int mp_input_holds(const mp_input *in, size_t n)
{
  struct stat st;
  if (!in->mapped) return 1;
  return fstat(in->mapfd, &st) < 0 || (st.st_size >= 0 &&
				       (uint64_t)st.st_size >= n);
}

int mp_input_guard(mp_input *in, int (*pass)(mp_input *in, void *ctx),
		   void *ctx)
{
  sigjmp_buf jb;
  int rc;
  if (!in->mapped) return pass(in, ctx);
  pthread_once(&guard_once, guard_install);
  /* After a fault, the file ends before it (each fault, and each size
  ** found smaller, shortens in->len: this ends). A pass that ended by
  ** itself may have read the zeros of a page the file no longer reaches:
  ** its size is checked again, and if it shrank, the pass runs again. */
  if (sigsetjmp(jb, 1)) shrink(in, guard_fault);
  do {
    guard_jmp = &jb;
    guard_in = in;
    rc = pass(in, ctx);
    guard_jmp = NULL;
    guard_in = NULL;
  } while (shrink(in, SIZE_MAX));
  return rc;
}
