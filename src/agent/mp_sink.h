/*
** mp_sink.h: where the stream goes (mp_sink.c): chunks of the buffer, handed
** to a writer thread (files) or to the writer callback.
*/

#ifndef MP_SINK_H
#define MP_SINK_H

#include "mp_agent.h"

int mp_sink_prepare(mp_state *s, size_t bufsize, int threaded);
int mp_sink_begin(mp_state *s, const uint8_t *prologue, size_t len);
void mp_sink_close(mp_state *s);
void mp_sink_forked(mp_state *s);
void mp_sink_flush(mp_state *s);
void mp_sink_put(mp_state *s, const void *data, size_t len);
void mp_sink_finish(mp_state *s);
/* Called by the hook when it finds recording off: end the stream if it
** stopped at its size limit. */
void mp_sink_limited(mp_state *s);

/* Start a thread running fn(arg) that takes no signals (the program's
** handlers keep running in its own threads); 0 or pthread_create's
** error. */
int mp_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
