/*
** mp_stream.h: the framing of the stream around its events (mp_stream.c):
** time marks, notes, the end.
*/

#ifndef MP_STREAM_H
#define MP_STREAM_H

#include <stdint.h>

#include "mp_agent.h"
#include "format/mp_format.h"

/* Write the end of the stream at s->pos (see mp_ext.h): in the extension,
** a last time mark, the notes, the epilogue; in version 3, the epilogue,
** then the notes in a trailer if there are any. */
void mp_stream_end(mp_state *s);
/* Nanoseconds of the monotonic clock. */
uint64_t mp_now(void);

/* Append a time mark (MP_X_TIME: ns since start) at p; the byte after. */
static inline uint8_t *mp_put_time(mp_state *s, uint8_t *p)
{
  return mp_put_xuleb(p, MP_X_TIME, mp_now() - s->t0);
}

#endif
