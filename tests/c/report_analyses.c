/*
** report_analyses.c: the analyses of the profile pass on streams built by
** hand (mkstream.h): time marks and the notes (in an extension stream and
** in the trailer of a version-3 one, cut at every byte); the peak, its
** time and who held it, on a stream worked out by hand; the peak, the
** blocks held at the end, the temporaries and the timeline against a
** model that replays random streams event by event (snapshots at every
** new high, ages of every block); the weights of a sampled profile, and
** the estimates they give against the truth of a simulated sampler.
** Prints TAP.
*/

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mp_profile.h"
#include "analysis/mp_sections.h"
#include "mkstream.h"
#include "tap.h"

static uint32_t window;	/* Of the next reads, if not 0. */

/* Read s into p (initialised, want set) whole, or as a stream chunk bytes
** at a time. */
static int read_ms(mp_profile *p, const ms *s, unsigned want, size_t chunk)
{
  mp_input in;
  int rc;
  mp_profile_init(p);
  p->want = want;
  if (window) p->window = window;
  mp_input_memory(&in, s->b, s->n, chunk);
  rc = mp_profile_read_input(p, &in);
  mp_input_close(&in);
  return rc;
}

/* The site of Lua location (proto, line), or UINT32_MAX. */
static uint32_t lua_site(const mp_profile *p, uint64_t proto, uint64_t line)
{
  uint32_t i;
  for (i = 0; i < p->nsite; i++)
    if (p->site[i].loc.src == MP_SRC_LFUNC && p->site[i].loc.id == proto &&
	p->site[i].loc.line == line)
      return i;
  return UINT32_MAX;
}

/* -- Time marks and notes -------------------------------------------------- */

static void test_notes(void)
{
  ms s;
  mp_profile p;
  size_t chunk, cut, end, full, notes;
  int rc, bad = 0;
  /* An extension stream: notes before the epilogue. */
  ms_ext(&s);
  ms_time(&s, 0);
  ms_sym_lua(&s, 0x100, "@n.lua", 1);
  ms_alloc(&s, MP_SRC_LFUNC, 0x100, 2, 0x1000, 64);
  ms_time(&s, 500);
  ms_info(&s, "collect", "1");
  ms_info(&s, "stopped", "size limit");
  ms_end(&s);
  for (chunk = 0; chunk < 8; chunk++) {
    rc = read_ms(&p, &s, 0, chunk);
    if (rc != MP_END || p.nmark != 2 || p.mark.ns != 500 || p.mark.ev != 1 ||
	!p.collect || strcmp(p.stopped, "size limit"))
      bad++;
    mp_profile_free(&p);
  }
  OK(!bad, "extension: time marks, collect and stopped notes, read whole "
     "and a few bytes at a time", "%d reads differ", bad);
  ms_free_buf(&s);

  /* Version 3: the notes in a trailer after the epilogue. */
  ms_v3(&s);
  ms_sym_lua(&s, 0x100, "@n.lua", 1);
  ms_alloc(&s, MP_SRC_LFUNC, 0x100, 2, 0x1000, 64);
  ms_end(&s);
  end = s.n;
  ms_trailer(&s);
  ms_info(&s, "collect", "1");
  notes = s.n;
  ms_time(&s, 123);
  full = s.n;
  for (chunk = 0, bad = 0; chunk < 8; chunk++) {
    rc = read_ms(&p, &s, 0, chunk);
    if (rc != MP_END || !p.collect || p.mark.ns != 123 || p.nmark != 1 ||
	p.len != full)
      bad++;
    mp_profile_free(&p);
  }
  OK(!bad, "version 3: the trailer's notes are read after the epilogue",
     "%d reads differ", bad);
  /* Cut anywhere after the epilogue: complete, with the notes whole. */
  for (cut = end, bad = 0; cut <= full; cut++) {
    ms c = s;
    c.n = cut;
    for (chunk = 0; chunk < 3; chunk++) {
      int want_collect = cut >= notes, want_mark = cut == full;
      rc = read_ms(&p, &c, 0, chunk);
      if (rc != MP_END || p.total[MP_AEV_ALLOC].n != 1 ||
	  p.collect != want_collect || (p.nmark == 1) != want_mark) {
	if (!bad++)
	  printf("# cut at %zu of %zu (chunk %zu): rc %d, collect %d, "
		 "marks %llu\n", cut, full, chunk, rc, p.collect,
		 (unsigned long long)p.nmark);
      }
      mp_profile_free(&p);
    }
  }
  OK(!bad, "version 3 cut anywhere in its trailer: complete, the notes "
     "read whole only", "%d cuts wrong", bad);
  ms_free_buf(&s);

  /* Other bytes after the epilogue are not a trailer: ignored. */
  ms_v3(&s);
  ms_alloc(&s, MP_SRC_INTERNAL, 0, 0, 0x1000, 64);
  ms_end(&s);
  ms_bytes(&s, "ljm\3\0\0\0\x80", 8);
  rc = read_ms(&p, &s, 0, 0);
  OK(rc == MP_END && p.total[MP_AEV_ALLOC].n == 1 && !p.collect,
     "bytes after the epilogue that are not a trailer are ignored",
     "rc %d", rc);
  mp_profile_free(&p);
  ms_free_buf(&s);

  /* A damaged record in the trailer ends it; what came before stays. */
  ms_v3(&s);
  ms_alloc(&s, MP_SRC_INTERNAL, 0, 0, 0x1000, 64);
  ms_end(&s);
  ms_trailer(&s);
  ms_info(&s, "collect", "1");
  ms_u8(&s, MP_XREC);
  ms_uleb(&s, MP_X_INFO);
  ms_uleb(&s, 3);
  ms_bytes(&s, "\x7f" "ab", 3);	/* A string longer than its record. */
  ms_time(&s, 99);
  rc = read_ms(&p, &s, 0, 0);
  OK(rc == MP_END && p.collect && !p.nmark,
     "a bad record in the trailer ends it quietly after the notes before it",
     "rc %d, collect %d, marks %llu", rc, p.collect,
     (unsigned long long)p.nmark);
  mp_profile_free(&p);
  ms_free_buf(&s);
}

/* The RSS at time marks: the figures of where the memory is, and the
** timeline's series, kept evenly when there are more than it holds. */
static void test_rss(void)
{
  ms s;
  mp_profile p;
  mp_memory m;
  uint32_t i, n = 3 * MP_TL_MARKS + 5, bad = 0;
  uint64_t step;
  int rc;
  ms_ext(&s);
  ms_sym_lua(&s, 0x100, "@r.lua", 1);
  for (i = 0; i < n; i++) {
    ms_alloc(&s, MP_SRC_LFUNC, 0x100, 2, 0x1000 + 64 * (uint64_t)i, 64);
    ms_time(&s, 10 * (uint64_t)i);
    ms_rss(&s, 1000000 + 4096 * (uint64_t)(i % 7));
  }
  ms_end(&s);
  rc = read_ms(&p, &s, MP_WANT_TIMELINE, 0);
  OK(rc == MP_END && p.nrss == n && p.rss == 1000000 + 4096 * ((n - 1) % 7) &&
     p.rss_max == 1000000 + 4096 * 6, "the RSS records: counted, the last "
     "and the largest", "rc %d, %u records, last %llu, max %llu", rc, p.nrss,
     (unsigned long long)p.rss, (unsigned long long)p.rss_max);
  rc = mp_profile_memory(&p, &m);
  OK(rc == 1 && m.vm == 64 * (uint64_t)n && m.native == 0 &&
     m.rest == m.rss - m.vm && m.rss == p.rss && m.rss_max == p.rss_max,
     "where the memory is: the VM heap's live bytes, the rest of the RSS",
     "rc %d, vm %llu, native %llu, rest %llu", rc, (unsigned long long)m.vm,
     (unsigned long long)m.native, (unsigned long long)m.rest);
  step = p.tl->rstep;
  for (i = 0; i < p.tl->nrss; i++)
    if (p.tl->rss[i].ev != (uint64_t)i * step + 1 ||
	p.tl->rss[i].bytes != 1000000 + 4096 * ((i * step) % 7))
      bad++;
  OK(!bad && step == 4 && p.tl->nrss == (n + step - 1) / step &&
     p.tl->rlast.ev == n && p.tl->rlast.bytes == p.rss,
     "the timeline keeps every 4th of 3 * MP_TL_MARKS + 5 RSS values, each "
     "after its event, and the last", "%u wrong, step %llu, %u kept", bad,
     (unsigned long long)step, p.tl->nrss);
  for (i = 0, bad = 0; i < p.tl->nmark; i++)
    if (p.tl->mark[i].ev != (uint64_t)i * step + 1 ||
	p.tl->mark[i].ns != 10 * (uint64_t)i * step)
      bad++;
  OK(!bad && p.tl->mstep == 4 && p.tl->nmark == p.tl->nrss,
     "the time marks are kept the same way", "%u wrong, step %llu", bad,
     (unsigned long long)p.tl->mstep);
  mp_profile_free(&p);
  rc = read_ms(&p, &s, 0, 0);
  OK(rc == MP_END && mp_profile_memory(&p, &m) == 1, "the same without a "
     "timeline", "rc %d", rc);
  mp_profile_free(&p);
  mp_profile_init(&p);
  p.heapsel = MP_HEAPSEL_VM;
  {
    mp_input in;
    mp_input_memory(&in, s.b, s.n, 0);
    rc = mp_profile_read_input(&p, &in);
    mp_input_close(&in);
  }
  OK(rc == MP_END && mp_profile_memory(&p, &m) == 0 && !m.rss,
     "a pass of one heap only (--heap vm) has no such figures", "rc %d", rc);
  mp_profile_free(&p);
  ms_free_buf(&s);
  ms_ext(&s);
  ms_alloc(&s, MP_SRC_INTERNAL, 0, 0, 0x1000, 64);
  ms_time(&s, 5);
  ms_end(&s);
  rc = read_ms(&p, &s, MP_WANT_TIMELINE, 0);
  OK(rc == MP_END && mp_profile_memory(&p, &m) == 0 && p.tl->nrss == 0,
     "a profile without RSS records has neither", "rc %d", rc);
  mp_profile_free(&p);
  ms_free_buf(&s);
}

/* -- The peak, by hand ----------------------------------------------------- */

static void test_peak_by_hand(void)
{
  ms s;
  mp_profile p;
  mp_sections sec;
  uint32_t a, b;
  int rc, chunk, bad = 0;
  /* f (line 1) allocates 100 and 200 bytes at line 3, g (line 10) 50 at
  ** line 12: 350 live, the peak, after the 3rd event. Then the first two
  ** are freed (50 live), g allocates 250 (300) and resizes its 50 to 60
  ** (310). Marks: 1000 ns after 2 events, 3000 ns after 4. */
  ms_ext(&s);
  ms_time(&s, 0);
  ms_sym_lua(&s, 0x100, "@t.lua", 1);
  ms_sym_lua(&s, 0x200, "@t.lua", 10);
  ms_alloc(&s, MP_SRC_LFUNC, 0x100, 3, 0x1000, 100);
  ms_alloc(&s, MP_SRC_LFUNC, 0x100, 3, 0x2000, 200);
  ms_time(&s, 1000);
  ms_alloc(&s, MP_SRC_LFUNC, 0x200, 12, 0x3000, 50);
  ms_free(&s, MP_SRC_INTERNAL, 0, 0, 0x1000, 100);
  ms_time(&s, 3000);
  ms_free(&s, MP_SRC_INTERNAL, 0, 0, 0x2000, 200);
  ms_alloc(&s, MP_SRC_LFUNC, 0x200, 12, 0x4000, 250);
  ms_realloc(&s, MP_SRC_LFUNC, 0x200, 12, 0x3000, 50, 0x5000, 60);
  ms_time(&s, 4000);
  ms_end(&s);
  for (chunk = 0; chunk < 4; chunk++) {
    rc = read_ms(&p, &s, chunk & 1 ? MP_WANT_PEAK : 0, (size_t)chunk / 2);
    a = lua_site(&p, 0x100, 3);
    b = lua_site(&p, 0x200, 12);
    if (rc != MP_END || p.peak_bytes != 350 || p.peak_blocks != 3 ||
	p.peak_ev != 3 || mp_profile_peak_ns(&p) != 2000 || p.nev != 7 ||
	p.live_bytes != 310 || p.live_n != 2 || a == UINT32_MAX ||
	b == UINT32_MAX || p.slive[a].n != 0 || p.slive[b].n != 2 ||
	p.slive[b].bytes != 310) {
      bad++;
      printf("# peak %llu B in %llu blocks after %llu of %llu at %llu ns\n",
	     (unsigned long long)p.peak_bytes,
	     (unsigned long long)p.peak_blocks,
	     (unsigned long long)p.peak_ev, (unsigned long long)p.nev,
	     (unsigned long long)mp_profile_peak_ns(&p));
    }
    if (chunk & 1) {	/* Who held it. */
      if (mp_sections_build(&sec, &p, MP_SORT_BYTES) < 0) abort();
      if (sec.npeak != 2 || sec.peak[0].site != a ||
	  sec.peak[0].cost.plus != 300 || sec.peak[0].cost.n != 2 ||
	  sec.peak[1].site != b || sec.peak[1].cost.plus != 50 ||
	  sec.peak[1].cost.n != 1) {
	bad++;
	printf("# %u peak lines\n", sec.npeak);
      }
      mp_sections_free(&sec);
    }
    mp_profile_free(&p);
  }
  OK(!bad, "peak by hand: 350 B in 3 blocks after event 3 of 7, at 2000 ns "
     "(between the marks at 1000 and 3000 ns), f's line 3 holding 300 B in "
     "2 blocks and g's line 12 50 B; 310 B in 2 blocks at the end",
     "%d reads wrong", bad);
  ms_free_buf(&s);

  /* Without marks, no time; a stream whose heap never grows has its peak,
  ** 0, before the first event. */
  ms_v3(&s);
  ms_alloc(&s, MP_SRC_INTERNAL, 0, 0, 0x1000, 10);
  ms_end(&s);
  rc = read_ms(&p, &s, MP_WANT_PEAK, 0);
  OK(rc == MP_END && mp_profile_peak_ns(&p) == UINT64_MAX &&
     p.peak_bytes == 10 && p.peak_ev == 1,
     "no marks: the peak has an event, no time", "peak %llu",
     (unsigned long long)p.peak_bytes);
  mp_profile_free(&p);
  ms_free_buf(&s);
  ms_v3(&s);
  ms_free(&s, MP_SRC_INTERNAL, 0, 0, 0x1000, 10);
  ms_end(&s);
  rc = read_ms(&p, &s, MP_WANT_PEAK, 0);
  OK(rc == MP_END && p.peak_bytes == 0 && p.peak_ev == 0 && !p.live_n,
     "only a free of a block from before the profile: the peak is 0, "
     "before the first event", "peak %llu after %llu",
     (unsigned long long)p.peak_bytes, (unsigned long long)p.peak_ev);
  mp_profile_free(&p);
  ms_free_buf(&s);
}

/* -- Random streams against a model ---------------------------------------- */

#define NPROTO	4	/* Lua sites: proto k at line 1..3. */
#define NNODE	6	/* Stack nodes. */
#define NADDR	300	/* Addresses in use. */
#define NOWN	(NPROTO * 3 + NNODE + 1)	/* Model owners; last: none. */

typedef struct mblock {
  int live, owner;
  uint64_t size, stamp;
} mblock;

typedef struct mown {
  uint64_t n, bytes, pn, pbytes, tn, tbytes;
} mown;

/* The model's owner of a site or node of p, or -1. */
static int model_owner_of_site(const mp_profile *p, uint32_t i)
{
  const mp_loc *l = &p->site[i].loc;
  if (l->src != MP_SRC_LFUNC) return -1;
  return (int)((l->id / 0x100 - 1) * 3 + (l->line - 1));
}

/* One random stream of n events, read with window w; 0 if p agrees with
** the model in everything. */
static int model_round(uint64_t seed, int n, uint32_t w, int chunk)
{
  static mblock blk[NADDR];
  static mown own[NOWN];
  static uint64_t live_after[20000];
  ms s;
  mp_profile p;
  uint64_t live = 0, nlive = 0, peak = 0, peak_ev = 0, nalloc = 0;
  int i, k, bad = 0, rc;
  uint32_t j;
  rng = seed;
  memset(blk, 0, sizeof(blk));
  memset(own, 0, sizeof(own));
  ms_ext(&s);
  for (k = 0; k < NPROTO; k++)
    ms_sym_lua(&s, 0x100 * (uint64_t)(k + 1), "@m.lua", (uint64_t)k * 10);
  for (k = 0; k < NNODE; k++)	/* A chain: node k + 1 under node k. */
    ms_node_lua(&s, (uint64_t)k, 0x100, (uint64_t)(k % 3 + 1));
  for (i = 0; i < n; i++) {
    int a = (int)(next() % NADDR), o = (int)(next() % (NOWN - 1)), kind;
    uint64_t addr = 0x10000 + (uint64_t)a * 0x40, size = next() % 3000 + 1;
    unsigned src = o < NPROTO * 3 ? MP_SRC_LFUNC : MP_SRC_STACK;
    uint64_t id = src == MP_SRC_LFUNC ? 0x100 * (uint64_t)(o / 3 + 1)
				      : (uint64_t)(o - NPROTO * 3 + 1);
    uint64_t line = (uint64_t)(o % 3 + 1);
    kind = (int)(next() % 10);
    if (kind < 4 || (!blk[a].live && kind < 9)) kind = MP_AEV_ALLOC;
    else if (kind < 7) kind = MP_AEV_FREE;
    else kind = MP_AEV_REALLOC;
    /* Frees and reallocations of blocks the model does not know are
    ** blocks from before the profile: sizes as given. */
    if (kind & MP_AEV_FREE) {
      uint64_t osize = blk[a].live ? blk[a].size : size;
      if (kind == MP_AEV_FREE)
	ms_free(&s, MP_SRC_INTERNAL, 0, 0, addr, osize);
      if (blk[a].live) {
	mown *m = &own[blk[a].owner];
	m->n--;
	m->bytes -= osize;
	nlive--;
	live -= osize;
	if (nalloc - blk[a].stamp - 1 < w) {
	  m->tn++;
	  m->tbytes += osize;
	}
	blk[a].live = 0;
      }
      if (kind == MP_AEV_REALLOC) {
	int b = (int)(next() % NADDR);
	uint64_t naddr = 0x10000 + (uint64_t)b * 0x40;
	ms_realloc(&s, src, id, line, addr, osize, naddr, size);
	addr = naddr;
	a = b;
      }
    } else {
      ms_alloc(&s, src, id, line, addr, size);
    }
    if (kind & MP_AEV_ALLOC) {
      if (blk[a].live) {	/* A missed free: the block is replaced. */
	mown *m = &own[blk[a].owner];
	m->n--;
	m->bytes -= blk[a].size;
	nlive--;
	live -= blk[a].size;
      }
      blk[a].live = 1;
      blk[a].owner = o;
      blk[a].size = size;
      blk[a].stamp = nalloc++;
      own[o].n++;
      own[o].bytes += size;
      nlive++;
      live += size;
    }
    if (!(i % 97)) ms_time(&s, (uint64_t)i * 1000);
    live_after[i] = live;
    if (live > peak) {	/* The model's snapshot. */
      peak = live;
      peak_ev = (uint64_t)i + 1;
      for (k = 0; k < NOWN; k++) {
	own[k].pn = own[k].n;
	own[k].pbytes = own[k].bytes;
      }
    }
  }
  ms_end(&s);
  window = w;
  rc = read_ms(&p, &s, MP_WANT_PEAK | MP_WANT_TEMP | MP_WANT_TIMELINE,
	       (size_t)chunk);
  window = 0;
  if (rc != MP_END || p.peak_bytes != peak || p.peak_ev != peak_ev ||
      p.live_bytes != live || p.live_n != nlive) {
    printf("# seed %llu: rc %d, peak %llu after %llu (model %llu after "
	   "%llu), live %llu (model %llu)\n", (unsigned long long)seed, rc,
	   (unsigned long long)p.peak_bytes, (unsigned long long)p.peak_ev,
	   (unsigned long long)peak, (unsigned long long)peak_ev,
	   (unsigned long long)p.live_bytes, (unsigned long long)live);
    bad++;
  }
  /* Every owner: the pass's records against the model's. */
  for (j = 0; j < p.nsite + p.nnode && !bad; j++) {
    const mp_live *l = j < p.nsite ? &p.slive[j] : &p.nlive[j - p.nsite];
    int o = j < p.nsite ? model_owner_of_site(&p, j)
			: NPROTO * 3 + (int)(j - p.nsite);
    const mown *m;
    if (o < 0) {
      if (l->n || l->pn || l->tn) bad++;
      continue;
    }
    m = &own[o];
    if (l->n != m->n || l->bytes != m->bytes || l->pn != m->pn ||
	l->pbytes != m->pbytes || l->tn != m->tn || l->tbytes != m->tbytes) {
      printf("# seed %llu, owner %d: end %llu/%llu peak %llu/%llu temp "
	     "%llu/%llu; model %llu/%llu %llu/%llu %llu/%llu\n",
	     (unsigned long long)seed, o, (unsigned long long)l->n,
	     (unsigned long long)l->bytes, (unsigned long long)l->pn,
	     (unsigned long long)l->pbytes, (unsigned long long)l->tn,
	     (unsigned long long)l->tbytes, (unsigned long long)m->n,
	     (unsigned long long)m->bytes, (unsigned long long)m->pn,
	     (unsigned long long)m->pbytes, (unsigned long long)m->tn,
	     (unsigned long long)m->tbytes);
      bad++;
    }
  }
  /* The timeline: intervals of equal width covering every event, each
  ** with the highest, lowest and last live heap of the model. */
  if (!bad) {
    const mp_timeline *t = p.tl;
    uint64_t before = 0;
    if (!t || !t->n || t->n > MP_TL_POINTS ||
	(uint64_t)(t->n - 1) * t->width >= (uint64_t)n ||
	(uint64_t)t->n * t->width < (uint64_t)n)
      bad++;
    for (j = 0; !bad && j < t->n; j++) {
      const mp_tpoint *pt = &t->pt[j];
      uint64_t e, hi = before, lo = before, last = before;
      if (pt->ev != (uint64_t)j * t->width) bad++;
      for (e = pt->ev; e < pt->ev + t->width && e < (uint64_t)n; e++) {
	last = live_after[e];
	if (last > hi) hi = last;
	if (last < lo) lo = last;
      }
      if (pt->max != hi || pt->min != lo || pt->last != last) {
	printf("# seed %llu: interval %u: %llu..%llu, last %llu; model "
	       "%llu..%llu, %llu\n", (unsigned long long)seed, j,
	       (unsigned long long)pt->min, (unsigned long long)pt->max,
	       (unsigned long long)pt->last, (unsigned long long)lo,
	       (unsigned long long)hi, (unsigned long long)last);
	bad++;
      }
      before = last;
    }
    if (!bad && mp_timeline_ns(t, (uint64_t)n) != p.mark.ns) bad++;
  }
  mp_profile_free(&p);
  ms_free_buf(&s);
  return bad;
}

static void test_model(void)
{
  int seed, bad = 0;
  for (seed = 1; seed <= 40; seed++)
    bad += model_round((uint64_t)seed * 7919, seed % 4 ? 3000 : 19000,
		       (uint32_t)(seed % 5 ? 40 * seed : 1), seed % 3) != 0;
  OK(!bad, "40 random streams (Lua sites and stack nodes, frees, resizes, "
     "missed frees, blocks from before): peak, its event, what each owner "
     "held at the peak and at the end, temporaries, the timeline's "
     "intervals: all equal the model's", "%d streams differ", bad);
}

/* -- Sampling -------------------------------------------------------------- */

/* What a block of s bytes stands for at rate r, worked out here apart
** from mp_sample.h: 1/p and s/p with p = 1 - exp(-s/r). */
static double inv_p(double r, uint64_t s)
{
  return 1.0 / (1.0 - exp(-(double)s / r));
}

static void test_sample_weights(void)
{
  ms s;
  mp_profile p;
  uint32_t a;
  double r = 4096, want_n = 0, want_b = 0, want_fb = 0, lo = 0, hi = 0;
  uint64_t sizes[] = { 1, 8, 64, 700, 4096, 5000, 20000, 100000, 1 << 20 };
  int i, k, nblk = 0, rc;
  ms_ext(&s);
  ms_info(&s, "sample", "4096");
  ms_sym_lua(&s, 0x100, "@s.lua", 1);
  /* 9 sizes x 1000 blocks at line 2; every fourth block freed. */
  for (k = 0; k < 1000; k++)
    for (i = 0; i < 9; i++) {
      uint64_t addr = 0x100000 + (uint64_t)(k * 9 + i) * 0x200000;
      ms_alloc(&s, MP_SRC_LFUNC, 0x100, 2, addr, sizes[i]);
      want_n += inv_p(r, sizes[i]);
      lo += floor(inv_p(r, sizes[i]));
      hi += ceil(inv_p(r, sizes[i]));
      want_b += floor((double)sizes[i] * inv_p(r, sizes[i]) + 0.5);
      nblk++;
      if (k % 4 == 0) {
	ms_free(&s, MP_SRC_INTERNAL, 0, 0, addr, sizes[i]);
	want_fb += floor((double)sizes[i] * inv_p(r, sizes[i]) + 0.5);
      }
    }
  ms_end(&s);
  rc = read_ms(&p, &s, 0, 0);
  a = lua_site(&p, 0x100, 2);
  OK(rc == MP_END && p.sample == 4096 && a != UINT32_MAX &&
     (double)p.site[a].plus[MP_AEV_ALLOC] == want_b &&
     (double)p.total[MP_AEV_FREE].minus == want_fb &&
     (double)p.live_bytes == want_b - want_fb,
     "sampled (R = 4096): each recorded block of s bytes counts s/p(s) "
     "bytes, p(s) = 1 - exp(-s/R), rounded; its free and what stays live "
     "the same", "bytes %llu, want %.0f; freed %llu, want %.0f",
     (unsigned long long)p.site[a].plus[MP_AEV_ALLOC], want_b,
     (unsigned long long)p.total[MP_AEV_FREE].minus, want_fb);
  OK((double)p.site[a].n[MP_AEV_ALLOC] >= lo &&
     (double)p.site[a].n[MP_AEV_ALLOC] <= hi &&
     fabs((double)p.site[a].n[MP_AEV_ALLOC] - want_n) <= 3 * sqrt(nblk) / 2,
     "sampled: events count 1/p(s) each, rounded up or down without bias "
     "(within 3 standard deviations of the rounding over 9000 blocks)",
     "events %llu, 1/p sums to %.1f (%.0f to %.0f)",
     (unsigned long long)p.site[a].n[MP_AEV_ALLOC], want_n, lo, hi);
  mp_profile_free(&p);
  /* A setting after the first event is not a sampling rate. */
  ms_free_buf(&s);
  ms_ext(&s);
  ms_alloc(&s, MP_SRC_INTERNAL, 0, 0, 0x1000, 10);
  ms_info(&s, "sample", "4096");
  ms_alloc(&s, MP_SRC_INTERNAL, 0, 0, 0x2000, 10);
  ms_end(&s);
  rc = read_ms(&p, &s, 0, 0);
  OK(rc == MP_END && !p.sample && p.total[MP_AEV_ALLOC].plus == 20,
     "a sampling rate after the first event is ignored (the blocks before "
     "it have no weight)", "sample %g, bytes %llu", p.sample,
     (unsigned long long)p.total[MP_AEV_ALLOC].plus);
  mp_profile_free(&p);
  ms_free_buf(&s);
}

/* Exponential gap of mean r (the test's own sampler). */
static double expo(double r)
{
  double u = ((double)(next() >> 11) + 0.5) * 0x1p-53;
  return -log(u) * r;
}

/* Simulate Go's sampler on a known workload, record what it picks, and
** compare the reader's estimates with the truth. */
static void test_sample_estimates(void)
{
  enum { NSITE = 8 };
  static const uint64_t size[NSITE] = { 16, 40, 100, 300, 1000, 6000,
					40000, 300000 };
  double r = 16384, worst = 0;
  int seed, bad = 0;
  for (seed = 1; seed <= 20; seed++) {
    ms s;
    mp_profile p;
    char rate[32];
    uint64_t truth[NSITE], tn[NSITE], addr = 0x1000000;
    double gap;
    int i, k;
    rng = 1234567ull * (uint64_t)seed;
    gap = expo(r);
    ms_ext(&s);
    snprintf(rate, sizeof(rate), "%.0f", r);
    ms_info(&s, "sample", rate);
    ms_sym_lua(&s, 0x100, "@w.lua", 1);
    for (k = 0; k < NSITE; k++) truth[k] = tn[k] = 0;
    /* Each site allocates 50 MB in blocks of its size (plus up to a
    ** third more), the sites in turn. */
    for (i = 0, k = 0; k < NSITE; i++) {
      int site = i % NSITE;
      uint64_t sz = size[site] + next() % (size[site] / 3 + 1);
      if (!site) k = 0;
      if (truth[site] >= 50000000) { k++; continue; }
      truth[site] += sz;
      tn[site]++;
      addr += 0x100;
      if (gap < (double)sz) {	/* Sampled: a byte of it is picked. */
	ms_alloc(&s, MP_SRC_LFUNC, 0x100, (uint64_t)site + 2, addr, sz);
	gap = expo(r);
      } else {
	gap -= (double)sz;
      }
    }
    ms_end(&s);
    read_ms(&p, &s, 0, 0);
    for (k = 0; k < NSITE; k++) {
      uint32_t a = lua_site(&p, 0x100, (uint64_t)k + 2);
      double e = a == UINT32_MAX ? 0 : (double)p.site[a].plus[MP_AEV_ALLOC];
      double err = fabs(e - (double)truth[k]) / (double)truth[k];
      if (err > worst) worst = err;
      if (err > 0.08) bad++;
    }
    mp_profile_free(&p);
    ms_free_buf(&s);
  }
  /* About 3000 samples a source: a relative standard deviation of 1.8 %
  ** at most (small blocks, weight R each); 8 % is 4.4 of them. */
  OK(!bad, "20 seeds of a simulated sampler (R = 16 KiB, 8 sources of 50 "
     "MB each, blocks of 16 B to 400 KB): every source's estimated bytes "
     "within 8% of the truth", "%d estimates off; worst %.2f%%", bad,
     worst * 100);
  printf("# worst relative error: %.2f%%\n", worst * 100);
}

int main(void)
{
  test_notes();
  test_rss();
  test_peak_by_hand();
  test_model();
  test_sample_weights();
  test_sample_estimates();
  printf("1..%d\n", n_test);
  return n_fail != 0;
}
