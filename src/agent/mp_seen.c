/*
** mp_seen.c: the sampler's filter (see mp_seen.h and mp_sampler).
*/

#include <stdlib.h>
#include <string.h>

#include "mp_seen.h"

/* See mp_seen.h. */
void mp_seen_reset(mp_sampler *sm)
{
  memset(sm->seen0, 0, sizeof(sm->seen0));
  sm->seen = sm->seen0;
  sm->seen_mask = MP_SEEN_MIN - 1;
}

/* Count the block at address key in the filter. */
static void seen_add(void *ud, uint64_t key)
{
  uint8_t *n = mp_seen((const mp_sampler *)ud, (uintptr_t)key);
  if (*n < 255) ++*n;
}

/* The blocks the filter counts. */
static size_t seen_blocks(const mp_state *s)
{
  return s->sm.live.count + s->protos.count + s->tracesyms.count;
}

/* Grow the filter at least fourfold, to 16 slots per block it counts
** (up to MP_SEEN_MAX), counted again from the sets. Out of memory, it
** stays as it is: fuller, still right. */
static void seen_grow(mp_state *s)
{
  mp_sampler *sm = &s->sm;
  size_t n = (sm->seen_mask + 1) * 4;
  uint8_t *old = sm->seen, *seen;
  while (n < seen_blocks(s) * 16 && n < MP_SEEN_MAX) n *= 2;
  if (n > MP_SEEN_MAX) n = MP_SEEN_MAX;
  seen = calloc(n, 1);
  if (!seen) return;
  sm->seen = seen;
  sm->seen_mask = n - 1;
  mp_hash_each(&sm->live, seen_add, sm);
  mp_hash_each(&s->protos, seen_add, sm);
  mp_hash_each(&s->tracesyms, seen_add, sm);
  if (old != sm->seen0) free(old);
}

/* See mp_seen.h. */
void mp_sample_mark(mp_state *s, uintptr_t a)
{
  mp_sampler *sm = &s->sm;
  if (!sm->seen) return;
  seen_add(sm, a);
  if (MP_UNLIKELY(seen_blocks(s) * 16 > sm->seen_mask + 1) &&
      sm->seen_mask + 1 < MP_SEEN_MAX)
    seen_grow(s);
}

/* See mp_seen.h. */
void mp_sample_unmark(mp_state *s, uintptr_t a)
{
  uint8_t *n;
  if (!s->sm.seen) return;
  n = mp_seen(&s->sm, a);
  if (*n < 255) --*n;	/* A slot that reached 255 stays taken. */
}

