/*
** mp_sink.c: the buffered writer behind the hook.
**
** Events are appended to a chunk (1 MiB by default). For a file, a full
** chunk is handed to a writer thread and the hook goes on in the next one
** of MP_NCHUNK chunks: the write(2) and the kernel's copy into the page
** cache (about 40% of the naive profiler's cost on binary-trees) leave the
** program's core. If the disk is slower than the program, the hook waits
** for a free chunk: nothing is dropped. A writer callback (C API) is called
** in the program's thread, with a single chunk.
**
** Every full chunk is handed over with exactly bufsize bytes (a multiple of
** 4 KiB); what the last write put past that end (chunks have MP_SLACK
** spare bytes) moves to the start of the next chunk. So a regular file can
** be written with O_DIRECT: page-aligned blocks go to the device without
** the copy into the page cache and its writeback, which on binary-trees
** cost the program a tenth of its speed even from another core. Where the
** file system refuses O_DIRECT, writes fall back to the page cache.
**
** The first failure is sticky: recording stops, errno is kept for
** ljmp_stop(), and what was written before stays a readable prefix.
*/

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mp_agent.h"
#include "mp_sink.h"
#include "mp_stream.h"
#include "../format/mp_format.h"

/* What one event or symbol record and the end of the stream may add to
** the profile after it reached the limit of max_size. */
#define MP_RESERVE	(MP_SLACK + MP_NAME_MAX + 256)

/* write(2) all of data; returns 0 or errno. SIGPIPE and SIGXFSZ are held
** back while writing so that a closed pipe or a file size limit ends the
** recording instead of killing the program. */
static int fd_write(int fd, const uint8_t *data, size_t len)
{
  sigset_t hold, old, pending;
  int err = 0, pipe_was, fsz_was;
  sigemptyset(&hold);
  sigaddset(&hold, SIGPIPE);
  sigaddset(&hold, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &hold, &old);
  sigpending(&pending);
  pipe_was = sigismember(&pending, SIGPIPE);
  fsz_was = sigismember(&pending, SIGXFSZ);
  while (len) {
    ssize_t n = write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    if (n == 0) { err = EIO; break; }
    data += n;
    len -= (size_t)n;
  }
  if (err == EPIPE || err == EFBIG) {	/* Drop the signal we caused. */
    struct timespec zero = {0, 0};
    sigset_t mine;
    sigemptyset(&mine);
    if (err == EPIPE && !pipe_was) sigaddset(&mine, SIGPIPE);
    if (err == EFBIG && !fsz_was) sigaddset(&mine, SIGXFSZ);
    while (sigtimedwait(&mine, NULL, &zero) > 0) {}
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return err;
}

/* -- Writer thread -------------------------------------------------------- */

/* Turn O_DIRECT on or off for the file; returns 0 or -1. */
static int set_direct(int fd, int on)
{
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return -1;
  fl = on ? fl | O_DIRECT : fl & ~O_DIRECT;
  return fcntl(fd, F_SETFL, fl);
}

/* Write one chunk: with O_DIRECT when it is a whole number of pages, else
** (the last chunk, or a file system without O_DIRECT) through the cache. */
static int chunk_write(mp_state *s, const uint8_t *data, size_t len)
{
  if (s->direct) {
    if (len % MP_PAGE == 0) {
      ssize_t n = write(s->fd, data, len);
      if (n == (ssize_t)len) return 0;
      if (n >= 0 || errno != EINVAL) {	/* Short write or real error. */
	if (n < 0) return errno;
	data += n;
	len -= (size_t)n;
      }
    }
    set_direct(s->fd, 0);
    s->direct = 0;
  }
  return fd_write(s->fd, data, len);
}

/* The write error err ends recording: say so on stderr if no caller
** will hear it from stop(). In the writer thread (a file sink's), not in
** a signal handler or the hook, holding no lock: one write(2) of a
** formatted line, no stdio lock that the program's thread, waiting on
** this one for a chunk, might hold. */
static void announce(mp_state *s, int err)
{
  char line[4096 + 256], msg[128];
  int n;
  if (!__atomic_load_n(&s->announce, __ATOMIC_RELAXED)) return;
  n = snprintf(line, sizeof(line), "ljmemprof: %s: %s: recording stopped, "
	       "the profile is cut short\n", s->path,
	       strerror_r(err, msg, sizeof(msg)));
  if (n > (int)sizeof(line) - 1) n = (int)sizeof(line) - 1;
  if (write(STDERR_FILENO, line, (size_t)n) < 0) {}	/* Nowhere else. */
}

/* Write queued chunks in order until told to quit with an empty queue. */
static void *writer_main(void *arg)
{
  mp_state *s = (mp_state *)arg;
  __atomic_store_n(&s->writer_tid, (long)syscall(SYS_gettid),
		   __ATOMIC_RELEASE);
  pthread_mutex_lock(&s->mu);
  for (;;) {
    unsigned i;
    int err = 0;
    while (!s->queued && !s->quit) pthread_cond_wait(&s->cv_ready, &s->mu);
    if (!s->queued) break;
    i = s->tail;
    if (!s->err) {
      pthread_mutex_unlock(&s->mu);
      err = chunk_write(s, s->chunk[i], s->chunk_len[i]);
      if (err) announce(s, err);	/* The first: only we set s->err. */
      pthread_mutex_lock(&s->mu);
      if (err && !s->err)	/* ljmp_running() reads it unlocked. */
	__atomic_store_n(&s->err, err, __ATOMIC_RELAXED);
    }
    s->tail = (s->tail + 1) % MP_NCHUNK;
    s->queued--;
    pthread_cond_signal(&s->cv_free);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Set where the hook flushes: the end of the chunk, or before it where
** the profile reaches max_size less what the end of an event and of the
** stream may add (see limit()). */
static void set_lim(mp_state *s)
{
  s->lim = s->buf + s->bufsize;
  if (s->max_size && !s->limited) {
    size_t used = s->sent + MP_RESERVE;
    size_t left = s->max_size > used ? s->max_size - used : 0;
    if (left < s->bufsize) s->lim = s->buf + left;
  }
}

/* Continue in chunk next: move the bytes written past the end of the
** full chunk to its start. */
static void carry_to(mp_state *s, uint8_t *next)
{
  uint8_t *end = s->buf + s->bufsize;
  size_t carry = (size_t)(s->pos - end);
  memcpy(next, end, carry);
  s->sent += s->bufsize;
  s->buf = next;
  s->pos = next + carry;
  set_lim(s);
}

/* Queue the full chunk and continue in a free one (waiting if none). */
static void handoff(mp_state *s)
{
  unsigned cur;
  pthread_mutex_lock(&s->mu);
  while (s->queued == MP_NCHUNK - 1) pthread_cond_wait(&s->cv_free, &s->mu);
  cur = (s->tail + s->queued) % MP_NCHUNK;
  s->chunk_len[cur] = s->bufsize;
  s->queued++;
  pthread_cond_signal(&s->cv_ready);
  if (s->err) __atomic_store_n(&s->recording, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&s->mu);
  carry_to(s, s->chunk[(cur + 1) % MP_NCHUNK]);
}

/* -- Sink ----------------------------------------------------------------- */

/* Stop the writer thread (its queue is empty: nothing was handed over). */
static void stop_thread(mp_state *s)
{
  pthread_mutex_lock(&s->mu);
  s->quit = 1;
  pthread_cond_signal(&s->cv_ready);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  s->has_thread = 0;
  s->quit = 0;
}

/* See mp_sink.h. */
int mp_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
  sigset_t all, old;
  int err;
  /* The thread takes no signals: the program's handlers run elsewhere. */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  err = pthread_create(t, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return err;
}

/* Allocate the chunks and, for a file sink (threaded), start the writer
** thread, before anything is opened: a failure here leaves nothing behind.
** Returns 0, ENOMEM, or -(the error of pthread_create). */
int mp_sink_prepare(mp_state *s, size_t bufsize, int threaded)
{
  int i, n = threaded ? MP_NCHUNK : 1, err;
  s->bufsize = (bufsize + MP_PAGE - 1) / MP_PAGE * MP_PAGE;
  for (i = 0; i < n; i++) {
    void *p;
    if (posix_memalign(&p, MP_PAGE, s->bufsize + MP_SLACK)) return ENOMEM;
    s->chunk[i] = p;
  }
  s->buf = s->pos = s->chunk[0];
  set_lim(s);
  if (!threaded) return 0;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv_ready, NULL);
  pthread_cond_init(&s->cv_free, NULL);
  s->has_sync = 1;
  if ((err = mp_thread_start(&s->thread, writer_main, s)) != 0) return -err;
  s->has_thread = 1;
  return 0;
}

/* Write the prologue to the sink (s->fd or s->writer, now open) at once,
** so that an unwritable sink fails in start(). Returns 0 or an errno; on
** failure the writer thread is stopped. */
int mp_sink_begin(mp_state *s, const uint8_t *prologue, size_t len)
{
  struct stat st;
  int err = s->writer ? s->writer(s->ctx, prologue, len)
		      : fd_write(s->fd, prologue, len);
  if (err) {
    if (s->has_thread) stop_thread(s);
    return err;
  }
  s->sent = len;
  /* A regular file is rewritten from offset 0 with the prologue in the
  ** first chunk, so that every chunk lands page-aligned for O_DIRECT. */
  if (!s->writer && fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode) &&
      lseek(s->fd, 0, SEEK_SET) == 0) {
    memcpy(s->pos, prologue, len);
    s->pos += len;
    s->sent = 0;
    s->direct = set_direct(s->fd, 1) == 0;
  }
  set_lim(s);
  return 0;
}

/* The profile reached max_size: recording stops. The event or record
** being written is completed (it fits in MP_RESERVE), and the stream is
** ended, with the note, at the next call of the hook (mp_sink_limited()),
** at stop or at exit. */
static void limit(mp_state *s)
{
  s->limited = 1;
  s->notes |= MP_NOTE_SIZE;
  __atomic_store_n(&s->recording, 0, __ATOMIC_RELAXED);
  set_lim(s);
}

/* pos reached lim: if the chunk is full, hand its bufsize bytes to the
** sink and continue in an empty chunk with what was written past its end;
** if the profile is at its size limit, stop recording. */
void mp_sink_flush(mp_state *s)
{
  if (s->pos >= s->buf + s->bufsize) {
    if (s->has_thread) {
      handoff(s);
    } else {
      if (!s->err && !s->forked) {
	int err = s->writer(s->ctx, s->buf, s->bufsize);
	if (err) {
	  s->err = err;
	  __atomic_store_n(&s->recording, 0, __ATOMIC_RELAXED);
	}
      }
      carry_to(s, s->buf);
    }
  }
  if (s->pos >= s->lim) limit(s);
}

void mp_sink_limited(mp_state *s)
{
  if (s->limited) mp_sink_finish(s);
}

/* Append len bytes of arbitrary size (e.g. a long chunk name). */
void mp_sink_put(mp_state *s, const void *data, size_t len)
{
  const uint8_t *d = (const uint8_t *)data;
  while (len) {
    size_t room = (size_t)(s->lim - s->pos), n;
    n = len < room ? len : room;
    memcpy(s->pos, d, n);
    s->pos += n;
    d += n;
    len -= n;
    if (s->pos >= s->lim) mp_sink_flush(s);
  }
}

/* Write the epilogue, drain and stop the writer, close the file, notify.
** Idempotent. */
void mp_sink_finish(mp_state *s)
{
  size_t len;
  /* Claimed once: the hook may end a stream at its size limit while
  ** another thread's exit() ends them all. */
  if (__atomic_exchange_n(&s->finished, 1, __ATOMIC_ACQ_REL)) return;
  __atomic_store_n(&s->recording, 0, __ATOMIC_RELAXED);
  if (!s->err) mp_stream_end(s);	/* The stream is complete. */
  if (s->pos >= s->buf + s->bufsize && s->has_thread)	/* Full: split. */
    handoff(s);
  len = (size_t)(s->pos - s->buf);
  if (s->has_thread) {
    pthread_mutex_lock(&s->mu);
    s->chunk_len[(s->tail + s->queued) % MP_NCHUNK] = len;
    s->queued++;
    s->quit = 1;
    pthread_cond_signal(&s->cv_ready);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    s->has_thread = 0;
  } else if (!s->err && !s->forked && len) {
    int err = s->writer(s->ctx, s->buf, len);
    if (err) s->err = err;
  }
  if (s->fd >= 0) {
    if (close(s->fd) < 0 && !s->err) {
      s->err = errno;
      announce(s, s->err);
    }
    s->fd = -1;
  }
  if (s->on_stop) s->on_stop(s->ctx, s->err);
}

/* In a child after fork(): the writer thread is not there; stop recording
** and leave the stream to the parent. */
void mp_sink_forked(mp_state *s)
{
  s->forked = 1;
  s->has_thread = 0;
  s->has_sync = 0;	/* Its mutex may be held by the lost thread. */
  __atomic_store_n(&s->recording, 0, __ATOMIC_RELAXED);
  s->finished = 1;
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
}

/* Free the chunks (the sink is finished, or never began: then the idle
** writer thread is stopped first). */
void mp_sink_close(mp_state *s)
{
  int i;
  if (s->has_thread) stop_thread(s);
  for (i = 0; i < MP_NCHUNK; i++) free(s->chunk[i]);
  if (s->has_sync) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_ready);
    pthread_cond_destroy(&s->cv_free);
  }
}
