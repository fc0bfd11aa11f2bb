/*
** mp_sink.c: the buffered writer behind the hook.
**
** Events are appended to one buffer (1 MiB by default) and handed to the
** sink when it fills: write(2) to a file descriptor, or the host's writer
** callback. The first failure is sticky: recording stops, errno is kept for
** ljmp_stop(), and what was written before stays a readable prefix.
*/

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mp_agent.h"

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

/* Hand len bytes to the sink; the first error stops recording. */
static void emit(mp_state *s, const uint8_t *data, size_t len)
{
  int err;
  if (s->err || !len) return;
  err = s->writer ? s->writer(s->ctx, data, len) : fd_write(s->fd, data, len);
  if (err) {
    s->err = err;
    s->recording = 0;
  }
}

/* Write out the buffer and start it afresh. */
void mp_sink_flush(mp_state *s)
{
  emit(s, s->buf, (size_t)(s->pos - s->buf));
  s->pos = s->buf;
}

/* Append len bytes of arbitrary size (e.g. a long chunk name). */
void mp_sink_put(mp_state *s, const void *data, size_t len)
{
  const uint8_t *d = (const uint8_t *)data;
  while (len) {
    size_t room = (size_t)(s->lim - s->pos), n;
    if (!room) { mp_sink_flush(s); continue; }
    n = len < room ? len : room;
    memcpy(s->pos, d, n);
    s->pos += n;
    d += n;
    len -= n;
  }
}

/* Write the epilogue, flush, close the sink. Idempotent. */
void mp_sink_finish(mp_state *s)
{
  if (s->finished) return;
  s->finished = 1;
  s->recording = 0;
  if (!s->err) {
    *s->pos++ = 0x80;	/* MP_FINAL: the stream is complete. */
    mp_sink_flush(s);
  }
  if (s->fd >= 0) {
    if (close(s->fd) < 0 && !s->err) s->err = errno;
    s->fd = -1;
  }
  if (s->on_stop) s->on_stop(s->ctx, s->err);
}
