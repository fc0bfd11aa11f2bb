/*
** mp_seen.h: the sampler's filter of the blocks whose free the sampled
** hook must see (mp_seen.c): live sampled blocks, and the prototypes and
** traces the stream names (mp_sym.c marks those). See mp_sampler in
** mp_agent.h.
*/

#ifndef MP_SEEN_H
#define MP_SEEN_H

#include <stdint.h>

#include "mp_agent.h"

/* The filter, empty, in seen0. */
void mp_seen_reset(mp_sampler *sm);
/* Sampling: the block at a becomes one whose free the sampled hook must
** see (after it joined live or a symbol set), or stops being one. Both do
** nothing when the profiler does not sample. */
void mp_sample_mark(mp_state *s, uintptr_t a);
void mp_sample_unmark(mp_state *s, uintptr_t a);

#endif
