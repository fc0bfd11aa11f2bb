/*
** mp_sample.h: the sampled hook (mp_sample.c): every allocated byte has
** the same chance to be sampled, 1 in the mean gap; an allocation is
** recorded, with its stack, when it holds a sampled byte, and its free
** when it is one of those blocks.
*/

#ifndef MP_SAMPLE_H
#define MP_SAMPLE_H

#include <stdint.h>

#include "mp_agent.h"

/* The lua_Alloc installed while sampling; ud is the state. */
void *mp_hook_alloc_sampled(void *ud, void *ptr, size_t osize, size_t nsize);
/* Start sampling with a mean gap of mean bytes; seed 0 = a fixed one. */
void mp_sample_init(mp_sampler *sm, uint64_t mean, uint64_t seed);
/* Free what the sampler holds (the hook may still read the filter). */
void mp_sample_free(mp_sampler *sm);

#endif
