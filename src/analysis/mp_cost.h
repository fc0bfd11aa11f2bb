/*
** mp_cost.h: what a set of events cost: how many, bytes allocated, bytes
** freed. The one value type of the analyses (per site and event kind, per
** override link, per heap summary line, totals), so that two profiles or
** two points in time compare by subtraction.
**
** Fields are unsigned and wrap modulo 2^64 like the counters they come
** from; a difference of two costs is read as signed (mp_cost_net and the
** fields of mp_cost_sub). The profile pass proves that no sum wrapped
** (mp_profile.overflow): then every field and every difference is exact.
*/

#ifndef MP_COST_H
#define MP_COST_H

#include <stdint.h>

typedef struct mp_cost {
  uint64_t n;		/* Events (or blocks). */
  uint64_t plus;	/* Bytes allocated: new sizes. */
  uint64_t minus;	/* Bytes freed: old sizes. */
} mp_cost;

/* *a += b. */
static inline void mp_cost_add(mp_cost *a, const mp_cost *b)
{
  a->n += b->n;
  a->plus += b->plus;
  a->minus += b->minus;
}

/* a - b, field by field (read the fields as int64_t). */
static inline mp_cost mp_cost_sub(mp_cost a, const mp_cost *b)
{
  a.n -= b->n;
  a.plus -= b->plus;
  a.minus -= b->minus;
  return a;
}

/* Bytes allocated minus bytes freed. */
static inline int64_t mp_cost_net(const mp_cost *c)
{
  return (int64_t)(c->plus - c->minus);
}

#endif
