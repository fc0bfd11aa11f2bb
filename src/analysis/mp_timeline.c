/*
** mp_timeline.c: intervals that double in width, and time marks and RSS
** values, thinned (see mp_timeline.h).
*/

#include <string.h>

#include "analysis/mp_timeline.h"

void mp_timeline_init(mp_timeline *t)
{
  memset(t, 0, sizeof(*t));
  t->width = 1;
  t->mstep = 1;
  t->rstep = 1;
}

/* Whether to keep the seen-th value (0-based) of a series of *n kept in a
** of MP_TL_MARKS elements of size sz, keeping every step-th: when a is
** full, every other one is dropped and the step doubles. */
static int thin(void *a, size_t sz, uint32_t *n, uint64_t *step,
		uint64_t seen)
{
  char *e = a;
  uint32_t i;
  if (seen % *step) return 0;
  if (*n == MP_TL_MARKS) {	/* Keep every other one. */
    for (i = 0; i < MP_TL_MARKS / 2; i++)
      memcpy(e + i * sz, e + 2 * i * sz, sz);
    *n = MP_TL_MARKS / 2;
    *step *= 2;
    if (seen % *step) return 0;
  }
  return 1;
}

/* Two neighbouring intervals as one. */
static void merge(mp_tpoint *d, const mp_tpoint *a, const mp_tpoint *b)
{
  mp_tpoint m = *a;
  m.last = b->last;
  if (b->max > m.max) m.max = b->max;
  if (b->min < m.min) m.min = b->min;
  m.alloc_n += b->alloc_n;
  m.alloc_bytes += b->alloc_bytes;
  m.free_bytes += b->free_bytes;
  *d = m;
}

void mp_timeline_end(mp_timeline *t, uint64_t live)
{
  if (t->cur) t->cur->last = live;
}

void mp_timeline_next(mp_timeline *t, uint64_t ev, uint64_t live)
{
  mp_timeline_end(t, live);
  while (ev >= t->end) {
    mp_tpoint *p;
    if (t->n == MP_TL_POINTS) {	/* Halve the points, double the width. */
      uint32_t i;
      for (i = 0; i < MP_TL_POINTS / 2; i++)
	merge(&t->pt[i], &t->pt[2 * i], &t->pt[2 * i + 1]);
      t->n = MP_TL_POINTS / 2;
      t->cur = &t->pt[t->n - 1];
      t->width *= 2;
      t->end = t->pt[t->n - 1].ev + t->width;
      continue;
    }
    p = t->cur = &t->pt[t->n++];
    memset(p, 0, sizeof(*p));
    p->ev = t->end;
    p->last = p->max = p->min = live;
    t->end += t->width;
  }
}

void mp_timeline_mark(mp_timeline *t, uint64_t ev, uint64_t ns)
{
  t->last.ev = ev;
  t->last.ns = ns;
  t->marked = 1;
  if (!thin(t->mark, sizeof(t->mark[0]), &t->nmark, &t->mstep, t->mseen++))
    return;
  t->mark[t->nmark].ev = ev;
  t->mark[t->nmark].ns = ns;
  t->nmark++;
}

void mp_timeline_rss(mp_timeline *t, uint64_t ev, uint64_t bytes)
{
  t->rlast.ev = ev;
  t->rlast.bytes = bytes;
  if (!thin(t->rss, sizeof(t->rss[0]), &t->nrss, &t->rstep, t->rseen++))
    return;
  t->rss[t->nrss].ev = ev;
  t->rss[t->nrss].bytes = bytes;
  t->nrss++;
}

uint64_t mp_timeline_ns(const mp_timeline *t, uint64_t ev)
{
  mp_tmark a = { 0, 0 }, b;
  uint32_t lo = 0, hi = t->nmark;
  if (!t->marked) return UINT64_MAX;
  /* The last kept mark at or before ev (a: the start, 0 ns, if none). */
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (t->mark[mid].ev <= ev) lo = mid + 1;
    else hi = mid;
  }
  if (lo) a = t->mark[lo - 1];
  if (t->last.ev <= ev) return t->last.ns > a.ns ? t->last.ns : a.ns;
  b = lo < t->nmark ? t->mark[lo] : t->last;
  if (b.ev <= a.ev || b.ns <= a.ns) return a.ns;
  return a.ns + (uint64_t)((double)(b.ns - a.ns) * (double)(ev - a.ev) /
			   (double)(b.ev - a.ev));
}
