/*
** mp_sample.h: what a recorded event of a sampled profile stands for.
**
** The one definition of the weights: the profile pass (mp_profile.c) is
** their only user, and every analysis works from what it summed.
**
** A profile recorded with sampling (the agent's "sample" setting R: mean
** bytes between samples) records an allocation of s bytes with
** probability p(s) = 1 - exp(-s / R): every allocated byte has the same
** chance 1/R of being picked, as in Go's and tcmalloc's heap profilers,
** and a block is recorded if any of its bytes is. So a recorded block of s
** bytes stands for 1/p(s) blocks and s/p(s) bytes on average (Horvitz and
** Thompson's estimator), whatever the sizes are: the sums of these weights
** are unbiased estimates of the true counts and bytes. The same weight
** applies to everything that happens to the block: its free, its resize,
** its bytes live at the peak or at the end.
**
** Sums stay integers: the bytes of a block are s/p(s) rounded to the
** nearest integer (half a byte off at most, against weights of R bytes
** and more), and its count is 1/p(s) rounded down or up at random with
** the probability that makes it unbiased, the "random" bit being a hash
** of the block's address and size, so that the block counts the same when
** it is allocated and when it is freed. A block of 0 bytes, which the
** agent never samples, counts as itself.
*/

#ifndef MP_SAMPLE_H
#define MP_SAMPLE_H

#include <math.h>
#include <stdint.h>

#include "util/mp_hash.h"

/* What a recorded block stands for: n blocks, bytes bytes. */
typedef struct mp_weight {
  uint64_t n, bytes;
} mp_weight;

/* The probability that a block of size bytes is recorded at a rate of one
** sample every rate bytes on average. */
static inline double mp_sample_p(double rate, uint64_t size)
{
  return -expm1(-(double)size / rate);
}

/* What the block of size bytes at addr stands for in a profile sampled at
** rate (> 0). */
static inline mp_weight mp_sample_weight(double rate, uint64_t addr,
					 uint64_t size)
{
  mp_weight w;
  double p, inv, whole, u;
  if (!size) {
    w.n = 1;
    w.bytes = 0;
    return w;
  }
  p = mp_sample_p(rate, size);
  if (p >= 1.0) {	/* Recorded for sure (and maybe past 2^53). */
    w.n = 1;
    w.bytes = size;
    return w;
  }
  inv = 1.0 / p;
  if ((double)size * inv > 0x1p62) inv = 0x1p62 / (double)size;	/* Absurd
					   rates: no undefined conversions. */
  whole = floor(inv);
  /* u in [0, 1) from the block's address and size. */
  u = (double)(mp_hash_mix(addr ^ mp_hash_mix(size)) >> 11) * 0x1p-53;
  w.n = (uint64_t)whole + (u < inv - whole);
  w.bytes = (uint64_t)llround((double)size * inv);
  return w;
}

/* bytes scaled by what a recorded event of size bytes stands for (1/p(size),
** unrounded): the old size of a reallocation, which was recorded for its
** new size. */
static inline uint64_t mp_sample_scale(double rate, uint64_t size,
				       uint64_t bytes)
{
  double p, v;
  if (!size || (p = mp_sample_p(rate, size)) >= 1.0) return bytes;
  v = (double)bytes / p;
  return v < 0x1p62 ? (uint64_t)llround(v) : (uint64_t)1 << 62;
}

#endif
