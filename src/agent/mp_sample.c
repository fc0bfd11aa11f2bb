/*
** mp_sample.c: the sampled hook (see mp_sample.h). The gaps between
** sampled bytes are drawn from an exponential distribution, so that the
** sampled bytes are a Poisson process over the bytes allocated; the
** stack is captured as in the stacks mode (mp_stack.h).
*/

#include <stdlib.h>
#include <string.h>

#include "mp_sample.h"
#include "mp_seen.h"
#include "mp_stack.h"

/* -ln(u) for u in (0, 1], to about 1e-7: u = m 2^e with m in [1, 2), and
** ln m = 2 atanh((m-1)/(m+1)) by its series (no libm in the agent). */
static double neg_log(double u)
{
  union { double d; uint64_t b; } x = { u };
  int e = (int)((x.b >> 52) & 0x7ff) - 1023;
  double m, t, t2;
  x.b = (x.b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  m = x.d;
  t = (m - 1) / (m + 1);
  t2 = t * t;
  return -(e * 0.6931471805599453 +
	   2 * t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 +
	   t2 * (1.0 / 9 + t2 * (1.0 / 11 + t2 / 13)))))));
}

/* Bytes to the next sample: exponentially distributed with mean
** sm->mean (xorshift64* for the uniform draw). */
static int64_t next_gap(mp_sampler *sm)
{
  uint64_t x = sm->rng;
  double u, gap;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  sm->rng = x;
  u = (double)(((x * 0x2545f4914f6cdd1dull) >> 11) + 1) * 0x1p-53;
  gap = neg_log(u) * (double)sm->mean;
  return gap < 0x1p62 ? (int64_t)gap : (int64_t)1 << 62;
}

/* See mp_sample.h. */
void mp_sample_init(mp_sampler *sm, uint64_t mean, uint64_t seed)
{
  sm->mean = mean;
  sm->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
  sm->left = next_gap(sm);
  mp_seen_reset(sm);
}

/* See mp_sample.h. */
void mp_sample_free(mp_sampler *sm)
{
  if (sm->seen && sm->seen != sm->seen0) {	/* Back to an empty seen0. */
    uint8_t *big = sm->seen;
    mp_seen_reset(sm);
    free(big);
  }
  mp_hash_free(&sm->live);
}

/* Forget a sampled block that is freed or moves: 1 if it was one. */
static int unsample(mp_state *s, void *ptr)
{
  if (!mp_hash_del(&s->sm.live, (uintptr_t)ptr)) return 0;
  mp_sample_unmark(s, (uintptr_t)ptr);
  return 1;
}

/* Append that the sampled block at ptr left the sample: a reallocation
** that is not sampled moved it (MP_X_DROP). Not a free: the reader only
** takes the block out of the live heap. */
static void put_drop(mp_state *s, void *ptr)
{
  s->pos = mp_put_xuleb(s->pos, MP_X_DROP, (uint64_t)(uintptr_t)ptr);
  mp_settle(s);
}

/* A sampled event: the allocation was chosen (take), or its old block was
** (old), or both. The stack is captured before forwarding, as in the
** full hook; the event is written once the allocator succeeded. */
static MP_NOINLINE void *sampled(mp_state *s, void *ptr, size_t osize,
				 size_t nsize, int take, int old)
{
  mp_stacks *st = &s->st;
  mp_sampler *sm = &s->sm;
  uint32_t node = 0;
  uint8_t *p, *h;
  void *res;
  if (take) {
    sm->left = next_gap(sm);
    /* A block whose free could not be followed is not sampled. */
    if (mp_hash_reserve(&sm->live, 1) < 0) take = 0;
    else node = mp_stack_capture(s, __builtin_frame_address(0));
  }
  res = s->orig_f(s->orig_ud, ptr, osize, nsize);
  if (MP_UNLIKELY(res == NULL)) {	/* Nothing changed. */
    mp_leave(s);
    return NULL;
  }
  mp_stack_tick(s);
  if (old) unsample(s, ptr);
  if (!take) {	/* The sampled block moved to one that is not. */
    put_drop(s, ptr);
    mp_leave(s);
    return res;
  }
  h = s->pos;
  if (ptr) {	/* A reallocation, whether its old block was sampled or not. */
    p = mp_put_where(st, h, MP_AEV_REALLOC, node);
    p = mp_put_delta(p, h, MP_EV_OLD8, &st->old_addr, (uint64_t)(uintptr_t)ptr);
    p = mp_put_uleb_near(p, osize);
  } else {
    p = mp_put_where(st, h, MP_AEV_ALLOC, node);
  }
  p = mp_put_delta(p, h, MP_EV_NEW8, &st->new_addr, (uint64_t)(uintptr_t)res);
  s->pos = mp_put_uleb_near(p, nsize);
  mp_hash_add(&sm->live, (uintptr_t)res);	/* Room was reserved. */
  mp_sample_mark(s, (uintptr_t)res);
  mp_settle(s);
  mp_leave(s);
  return res;
}

/* The sampling hook's work beyond forwarding: a free of a sampled block
** or one that may be a prototype or trace, an allocation that is taken,
** the reallocation of a sampled block. */
static MP_NOINLINE void *sample_slow(mp_state *s, void *ptr, size_t osize,
				     size_t nsize)
{
  mp_sampler *sm = &s->sm;
  int take = nsize && sm->left < 0, old;
  mp_enter(s);
  if (MP_UNLIKELY(!__atomic_load_n(&s->recording, __ATOMIC_RELAXED))) {
    mp_sink_limited(s);
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, nsize);
  }
  if (nsize == 0) {
    mp_stack_sym_free(s, ptr, osize);
    if (unsample(s, ptr)) {
      mp_stack_tick(s);
      mp_stack_put_free(s, ptr, osize);
    }
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, 0);
  }
  old = ptr && mp_hash_has(&sm->live, (uintptr_t)ptr);
  if (!take && !old) {
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, nsize);
  }
  return sampled(s, ptr, osize, nsize, take, old);
}

/* The lua_Alloc installed while sampling; ud is the state. Most calls
** only count bytes (allocations) or find the block's slot empty in the
** filter of live sampled ones (frees, reallocations), then forward as a
** tail call: no register is saved, no event flag is set, as nothing is
** recorded. Whether recording goes on is only asked when something
** would be. */
/* See mp_sample.h. */
void *mp_hook_alloc_sampled(void *ud, void *ptr, size_t osize, size_t nsize)
{
  mp_state *s = (mp_state *)ud;
  mp_sampler *sm = &s->sm;
  lua_Alloc f = s->orig_f;
  if (nsize) {	/* sample_slow() reads left again: one instruction. */
    if (MP_LIKELY((sm->left -= (int64_t)nsize) >= 0) &&
	(!ptr || !*mp_seen(sm, (uintptr_t)ptr)))
      return f(s->orig_ud, ptr, osize, nsize);
    return sample_slow(s, ptr, osize, nsize);
  }
  /* A free. NULL (never freed by LuaJIT) would find slot 0 and, if that
  ** is taken, be forwarded by sample_slow(). */
  if (MP_LIKELY(!*mp_seen(sm, (uintptr_t)ptr)))
    return f(s->orig_ud, ptr, osize, nsize);
  return sample_slow(s, ptr, osize, nsize);
}
