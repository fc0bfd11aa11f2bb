/*
** mp_stream.c: the framing of the stream around its events (see
** mp_stream.h).
*/

#include <stdio.h>
#include <time.h>

#include "mp_stream.h"
#include "format/mp_format.h"

/* See mp_stream.h. */
uint64_t mp_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Append the notes of s (at most 60 bytes). */
static uint8_t *put_notes(mp_state *s, uint8_t *p)
{
  if (s->notes & MP_NOTE_COLLECT) p = mp_put_info(p, "collect", "1");
  if (s->notes & MP_NOTE_SIZE) p = mp_put_info(p, "stopped", "size limit");
  if (s->notes & MP_NOTE_SETTLED) p = mp_put_info(p, "settled", "1");
  if (s->notes & MP_NOTE_EXITED) p = mp_put_info(p, "uncollected", "exit");
  if (s->closefin) {
    char n[16];
    snprintf(n, sizeof(n), "%u", s->closefin);
    p = mp_put_info(p, "closefin", n);
  }
  return p;
}

/* See mp_stream.h. */
void mp_stream_end(mp_state *s)
{
  uint8_t *p = s->pos;
  if (s->ext) {
    p = mp_put_time(s, p);
    p = put_notes(s, p);
    *p++ = MP_FINAL;
  } else {
    *p++ = MP_FINAL;
    if (s->notes) {	/* Readers of version 3 stop at the epilogue. */
      p = mp_put_prologue(p, MP_LJN_MAGIC, MP_LJN_VERSION);
      p = put_notes(s, p);
    }
  }
  s->pos = p;
}
