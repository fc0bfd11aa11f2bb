/*
** mp_timeline.h: the live heap and the allocations of a profile over
** time, in a bounded number of points.
**
** The profile pass feeds it every event (mp_timeline_event) and every
** time mark of the stream (mp_timeline_mark). The x axis is the event
** index, cut into at most MP_TL_POINTS intervals of equal width: the
** width starts at one event and doubles when the intervals run out, two
** neighbours becoming one, so that memory is fixed and the points always
** cover the whole profile evenly (between MP_TL_POINTS / 2 and
** MP_TL_POINTS of them once the profile has that many events). Each
** interval keeps the live bytes at its end, the highest and the lowest
** within it (so the peak is never smoothed away), and what was allocated
** and freed in it.
**
** Time comes from the marks (MP_X_TIME: nanoseconds since the profile
** started, every few thousand events): they are kept too, at most
** MP_TL_MARKS of them, thinned the same way, and an event's time is
** interpolated between the marks around it (mp_timeline_ns). A profile
** without marks (memprof's own format) has only the event index.
**
** The process's RSS (MP_X_RSS, native profiles: after each time mark and
** at the end) is kept the same way, each value with the event index it
** follows.
*/

#ifndef MP_TIMELINE_H
#define MP_TIMELINE_H

#include <stdint.h>

#define MP_TL_POINTS	1024	/* Intervals at most (even). */
#define MP_TL_MARKS	4096	/* Time marks kept at most (even). */

/* One interval of events. */
typedef struct mp_tpoint {
  uint64_t ev;		/* Its first event (0-based index). */
  uint64_t last;	/* Live bytes after its last event... */
  uint64_t max, min;	/* ...the highest and lowest after any of its
			   events (or before the first). */
  uint64_t alloc_n;	/* Allocation and reallocation events... */
  uint64_t alloc_bytes;	/* ...their new sizes... */
  uint64_t free_bytes;	/* ...and the old sizes of reallocations and
			   frees. */
} mp_tpoint;

/* A time mark: ns nanoseconds after the start, after ev events. */
typedef struct mp_tmark {
  uint64_t ev, ns;
} mp_tmark;

/* The process's RSS: bytes, after ev events. */
typedef struct mp_trss {
  uint64_t ev, bytes;
} mp_trss;

typedef struct mp_timeline {
  mp_tpoint pt[MP_TL_POINTS];
  uint32_t n;		/* Intervals in use... */
  mp_tpoint *cur;	/* ...pt[n - 1], the current one (NULL at first). */
  uint64_t width;	/* Events an interval spans. */
  uint64_t end;		/* The first event after the current interval. */
  mp_tmark mark[MP_TL_MARKS];
  uint32_t nmark;
  uint64_t mstep;	/* Marks seen between two kept... */
  uint64_t mseen;	/* ...and seen so far. */
  mp_tmark last;	/* The last mark seen (kept or not). */
  int marked;		/* 1 once a mark was seen. */
  mp_trss rss[MP_TL_MARKS];	/* RSS values, thinned like the marks... */
  uint32_t nrss;
  uint64_t rstep, rseen;
  mp_trss rlast;	/* ...and the last seen (kept or not). */
} mp_timeline;

void mp_timeline_init(mp_timeline *t);

/* Start the interval of event ev (ev >= t->end), live bytes being live
** before it (and so at the end of the current one). */
void mp_timeline_next(mp_timeline *t, uint64_t ev, uint64_t live);

/* The events are over, live bytes being live: the end of the current
** interval. */
void mp_timeline_end(mp_timeline *t, uint64_t live);

/* Account event ev, after which live bytes are live (before it: before);
** it allocated an events of ab bytes and freed fb bytes. An interval's
** last value is set when the next one starts (or at the end). */
static inline void mp_timeline_event(mp_timeline *t, uint64_t ev,
				     uint64_t live, uint64_t an, uint64_t ab,
				     uint64_t fb, uint64_t before)
{
  mp_tpoint *p;
  if (ev >= t->end) mp_timeline_next(t, ev, before);
  p = t->cur;
  if (live > p->max) p->max = live;
  else if (live < p->min) p->min = live;
  p->alloc_n += an;
  p->alloc_bytes += ab;
  p->free_bytes += fb;
}

/* A time mark after ev events. */
void mp_timeline_mark(mp_timeline *t, uint64_t ev, uint64_t ns);

/* The process's RSS, bytes after ev events. */
void mp_timeline_rss(mp_timeline *t, uint64_t ev, uint64_t bytes);

/* The time of the moment after ev events, in nanoseconds, interpolated
** between the marks around it (after the last mark: that mark's time);
** UINT64_MAX without marks. */
uint64_t mp_timeline_ns(const mp_timeline *t, uint64_t ev);

#endif
