/*
** mp_profile.c: aggregate a profile by site in one streaming pass.
**
** Per event the work is: decode, find the site (a 256-entry cache in front
** of the symbol and site tables; most events repeat a recent location),
** add its cost, and update the heap table. The heap table is the only
** structure as large as the profiled heap; it follows the locality of the
** addresses (mp_heap.h), and is prefetched a batch of events ahead when
** they have none.
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mp_profile.h"
#include "analysis/mp_sample.h"
#include "util/mp_array.h"

#define SITE_MAX	0x7fffffffu	/* Site numbers fit in 31 bits. */
#define STEP		((size_t)1 << 20)	/* Bytes between progress calls. */

/* -- Sites ---------------------------------------------------------------- */

/* Make room for record i (the next one) of an owner array *a of capacity
** *cap, zeroed; 0 or -1. */
static int live_slot(mp_live **a, uint32_t i, uint32_t *cap)
{
  if (mp_array_grow((void **)a, i, cap, sizeof(**a)) < 0) return -1;
  memset(&(*a)[i], 0, sizeof(**a));
  return 0;
}

/* Site of a resolved location (one per source: mp_loc_same()), made on
** first use; SITE_MAX + 1 when out of memory. */
static uint32_t site_find(mp_profile *p, const mp_loc *l)
{
  uint64_t h = mp_loc_hash(l);
  mp_hash_iter it;
  uint32_t *v, i;
  for (v = mp_hash_first(&p->smap, h, &it); v; v = mp_hash_next(&p->smap, &it))
    if (mp_loc_same(&p->site[*v].loc, l)) return *v;
  if (p->nsite >= SITE_MAX ||
      mp_array_grow((void **)&p->site, p->nsite, &p->capsite,
		    sizeof(*p->site)) < 0 ||
      (p->full && live_slot(&p->slive, p->nsite, &p->capslive) < 0) ||
      mp_hash_insert(&p->smap, h, p->nsite) < 0)
    return SITE_MAX + 1;
  i = p->nsite++;
  memset(&p->site[i], 0, sizeof(p->site[i]));
  p->site[i].loc = *l;
  return i;
}

/* Site of location (src, id, line) when the cache has not got it: resolve
** the symbol in force, find or make the site, and remember it in cache
** entry c with tag. SITE_MAX + 1 when out of memory. Never inlined: in the
** loop over events it would cost registers that every event pays for (a
** seventh of the time of a binary-trees profile). */
static __attribute__((noinline)) uint32_t site_miss(mp_profile *p, mp_lcache *c, uint64_t tag,
			  uint8_t src, uint64_t id, uint64_t line)
{
  mp_loc l = mp_loc_of(&p->syms, src, id, line);
  uint32_t site = site_find(p, &l);
  if (site > SITE_MAX) return site;
  if (src == MP_SRC_INTERNAL) p->internal = site + 1;
  c->id = id;
  c->line = line;
  c->tag = tag;
  c->site = site;
  return site;
}

/* Site of an event's location (src, id, line); SITE_MAX + 1 when out of
** memory. The VM's internals are one site, which no symbol changes, kept
** aside: most frees come from the garbage collector. Other events mostly
** repeat one of a few recent locations, so a small direct-mapped cache
** answers them with one multiply and three compares; the symbol and site
** tables see only its misses. */
static inline uint32_t site_of(mp_profile *p, uint8_t src, uint64_t id,
			       uint64_t line)
{
  uint64_t h, tag;
  mp_lcache *c;
  if (src == MP_SRC_INTERNAL && p->internal) return p->internal - 1;
  tag = ((uint64_t)p->epoch << 8) | src;
  h = ((id ^ (line << 24) ^ src) * 0x9e3779b97f4a7c15ull) >> 56;
  c = &p->lcache[h & (MP_LCACHE - 1)];
  if (c->id == id && c->line == line && c->tag == tag) return c->site;
  return site_miss(p, c, tag, src, id, line);
}

/* -- Stack nodes (the extension) ------------------------------------------ */

/* Add the node of item it: its frame resolved now, and the site its
** events are billed to, as the one-frame mode bills them: a builtin to
** the frame that called it, the line inside a trace and the frames the
** trace inlined below it to the trace, the rest to their own location.
** MP_OK or MP_ERR_NOMEM. */
static int node_add(mp_profile *p, const mp_item *it)
{
  mp_pnode *n, *parent;
  mp_loc l;
  uint32_t site;
  int intrace;	/* A frame the trace inlined, or its line. */
  if (it->id != (uint64_t)p->nnode + 1 ||
      mp_array_grow((void **)&p->node, p->nnode, &p->capnode,
		    sizeof(*p->node)) < 0 ||
      (p->full && live_slot(&p->nlive, p->nnode, &p->capnlive) < 0))
    return MP_ERR_NOMEM;
  parent = it->parent ? &p->node[it->parent - 1] : NULL;
  intrace = it->fkind == MP_FK_LUA && parent && parent->intrace;
  l = mp_frame_loc(&p->syms, it->fkind, it->fa, it->line);
  if ((it->fkind == MP_FK_BUILTIN && parent) || intrace) {
    site = parent->site;
  } else if (it->fkind == MP_FK_NATIVE) {
    /* Native memory: billed where the VM's would be, as a source of its
    ** own (its kind in the label). */
    mp_loc s;
    if (parent) {
      s = p->site[parent->site].loc;
    } else {
      memset(&s, 0, sizeof(s));
      s.src = MP_SRC_INTERNAL;
    }
    s.heap = MP_HEAP_NATIVE;
    if ((site = site_find(p, &s)) > SITE_MAX) return MP_ERR_NOMEM;
  } else {
    mp_loc s = l;
    if (it->fkind == MP_FK_BUILTIN || it->fkind == MP_FK_CUT ||
	it->fkind == MP_FK_THREAD) {
      memset(&s, 0, sizeof(s));	/* Called from nowhere: internal. */
      s.src = MP_SRC_INTERNAL;
    }
    if ((site = site_find(p, &s)) > SITE_MAX) return MP_ERR_NOMEM;
  }
  n = &p->node[p->nnode++];
  memset(n, 0, sizeof(*n));
  n->loc = l;
  n->parent = (uint32_t)it->parent;
  n->kind = it->fkind;
  n->site = site;
  n->intrace = it->fkind == MP_FK_TRACE || intrace;
  return MP_OK;
}

/* Whether item it (MP_X_INFO) has key k. */
static int info_is(const mp_item *it, const char *k)
{
  return it->name_len == strlen(k) && !memcmp(it->name, k, it->name_len);
}

/* The value of setting it as a number (its first 18 digits; 0 if none). */
static uint64_t info_number(const mp_item *it)
{
  size_t i;
  uint64_t v = 0;
  for (i = 0; i < it->value_len && i < 18; i++)
    if (it->value[i] >= '0' && it->value[i] <= '9')
      v = v * 10 + (uint64_t)(it->value[i] - '0');
  return v;
}

/* Give every site and node an owner record; MP_OK or MP_ERR_NOMEM. */
static int go_full(mp_profile *p)
{
  uint32_t i;
  if (p->full) return MP_OK;
  for (i = 0; i < p->nsite; i++)
    if (live_slot(&p->slive, i, &p->capslive) < 0) return MP_ERR_NOMEM;
  for (i = 0; i < p->nnode; i++)
    if (live_slot(&p->nlive, i, &p->capnlive) < 0) return MP_ERR_NOMEM;
  p->full = 1;
  return MP_OK;
}

/* Note a setting or a note of the agent (MP_X_INFO); MP_OK or
** MP_ERR_NOMEM. A sampling rate is taken only before the first event:
** blocks recorded before would have no weight. */
static int info_add(mp_profile *p, const mp_item *it)
{
  if (info_is(it, "stacks")) {
    p->stacks = (unsigned)info_number(it);
  } else if (info_is(it, "sample")) {
    if (p->nev || !info_number(it)) return MP_OK;
    p->sample = (double)info_number(it);
    return go_full(p);
  } else if (info_is(it, "native")) {
    p->native = info_number(it) != 0;
  } else if (info_is(it, "closefin")) {
    uint64_t n = info_number(it);
    p->closefin = n > UINT32_MAX ? UINT32_MAX : (unsigned)n;
  } else if (info_is(it, "native_unseen")) {
    p->native_unseen = info_number(it);
  } else if (info_is(it, "native_lost")) {
    p->native_lost = info_number(it);
  } else if (info_is(it, "collect")) {
    p->collect = it->value_len == 1 && it->value[0] == '1';
  } else if (info_is(it, "settled")) {
    p->settled = it->value_len == 1 && it->value[0] == '1';
  } else if (info_is(it, "uncollected")) {
    p->exited = it->value_len == 4 && !memcmp(it->value, "exit", 4);
  } else if (info_is(it, "snapshot")) {	/* "OBJECTS BYTES TOTAL CUT NAME" */
    char v[128];
    unsigned long long o, b, t;
    int cut, at = 0;
    size_t n = it->value_len < sizeof(v) - 1 ? it->value_len : sizeof(v) - 1;
    memcpy(v, it->value, n);
    v[n] = '\0';
    if (sscanf(v, "%llu %llu %llu %d %n", &o, &b, &t, &cut, &at) == 4 && at) {
      struct mp_snapmark m;
      m.ev = p->nev;
      m.objects = o;
      m.bytes = b;
      m.total = t;
      m.cut = cut != 0;
      snprintf(m.name, sizeof(m.name), "%s", v + at);
      if (p->nsnap < MP_SNAPMARKS) p->snaps[p->nsnap] = m;
      p->nsnap++;
      if (p->on_snap) p->on_snap(p->snap_ctx, p, &m);
    }
  } else if (info_is(it, "stopped")) {
    size_t n = it->value_len < sizeof(p->stopped) - 1 ? it->value_len
						       : sizeof(p->stopped) - 1;
    memcpy(p->stopped, it->value, n);
    p->stopped[n] = '\0';
  }
  return MP_OK;
}

/* Note a time mark (MP_X_TIME): ns after the start, after p->nev events. */
static void mark_add(mp_profile *p, uint64_t ns)
{
  p->mark.ev = p->nev;
  p->mark.ns = ns;
  p->nmark++;
  if (p->peak_wait) {
    p->peak_after = p->mark;
    p->peak_wait = 0;
  }
  if (p->tl) mp_timeline_mark(p->tl, p->nev, ns);
}

/* -- Links ---------------------------------------------------------------- */

/* Account a block of owner's that site resized or freed, the link being
** a new one or found in the table (key: see link_note()), and remember it
** in cache entry c; 0 or -1. */
static int link_add(mp_profile *p, mp_lmru *c, uint64_t key, int kind,
		    uint32_t site, uint32_t owner, uint64_t blocks,
		    uint64_t alloced, uint64_t freed)
{
  uint32_t *v = mp_hash_get(&p->lmap, key);
  mp_link *l;
  if (v) {
    l = &p->link[*v];
  } else {
    if (mp_array_grow((void **)&p->link, p->nlink, &p->caplink,
		      sizeof(*p->link)) < 0 ||
	mp_hash_put(&p->lmap, key, p->nlink) < 0)
      return -1;
    l = &p->link[p->nlink++];
    memset(l, 0, sizeof(*l));
    l->kind = (uint8_t)kind;
    l->site = site;
    l->owner = owner;
  }
  c->key = key;
  c->link = (uint32_t)(l - p->link);
  l->cost.n += blocks;
  l->cost.plus += alloced;
  l->cost.minus += freed;
  return 0;
}

/* Account a block of owner's that site resized or freed (standing for
** `blocks` blocks: 1 unless sampled); 0 or -1. Inline for the common
** case: a site frees the blocks of a few owners at a time (the objects of
** a garbage cycle), so the link is a recent one, found in a small
** direct-mapped cache. */
static inline int link_note(mp_profile *p, int kind, uint32_t site,
			    uint32_t owner, uint64_t blocks, uint64_t alloced,
			    uint64_t freed)
{
  uint64_t key = ((uint64_t)kind << 62) | ((uint64_t)site << 31) | owner;
  mp_lmru *c = &p->lmru[(key * 0x9e3779b97f4a7c15ull) >> 58];
  mp_link *l;
  if (key != c->key)
    return link_add(p, c, key, kind, site, owner, blocks, alloced, freed);
  l = &p->link[c->link];
  l->cost.n += blocks;
  l->cost.plus += alloced;
  l->cost.minus += freed;
  return 0;
}

mp_live *mp_profile_by_site(const mp_profile *p)
{
  mp_live *by = calloc((size_t)p->nsite + 1, sizeof(*by));
  uint32_t i;
  if (!by) return NULL;
  for (i = 0; p->slive && i < p->nsite; i++) by[i] = p->slive[i];
  for (i = 0; p->nlive && i < p->nnode; i++) {
    mp_live *l = &by[p->node[i].site];
    l->n += p->nlive[i].n;
    l->bytes += p->nlive[i].bytes;
    l->pn += p->nlive[i].pn;
    l->pbytes += p->nlive[i].pbytes;
    l->tn += p->nlive[i].tn;
    l->tbytes += p->nlive[i].tbytes;
  }
  return by;
}

int mp_profile_memory(const mp_profile *p, mp_memory *m)
{
  mp_live *by;
  uint32_t i;
  memset(m, 0, sizeof(*m));
  if (!p->nrss || p->merged || p->heapsel != MP_HEAPSEL_ALL) return 0;
  if (!(by = mp_profile_by_site(p))) return -1;
  for (i = 0; i < p->nsite; i++) {
    if (p->site[i].loc.heap == MP_HEAP_NATIVE) m->native += by[i].bytes;
    else m->vm += by[i].bytes;
  }
  free(by);
  m->rss = p->rss;
  m->rss_max = p->rss_max;
  m->has_mcode = p->nmcode > 0;
  m->mcode = p->mcode;
  m->rest = m->rss > m->vm + m->native + m->mcode
	    ? m->rss - m->vm - m->native - m->mcode : 0;
  return 1;
}

uint32_t mp_profile_sources(const mp_profile *p)
{
  uint32_t i, n = 0;
  for (i = 0; i < p->nsite; i++) n += mp_site_has_events(&p->site[i]);
  return n;
}

uint32_t mp_profile_site(mp_profile *p, const mp_loc *l)
{
  uint32_t i = site_find(p, l);
  return i > SITE_MAX ? UINT32_MAX : i;
}

int mp_profile_add_link(mp_profile *p, int kind, uint32_t site,
			uint32_t owner, const mp_cost *c)
{
  return link_note(p, kind, site, owner, c->n, c->plus, c->minus);
}

/* -- The pass ------------------------------------------------------------- */

void mp_profile_init(mp_profile *p)
{
  memset(p, 0, sizeof(*p));
  mp_symtab_init(&p->syms);
  mp_heap_init(&p->heap);
  mp_hash_init_map(&p->smap);
  mp_hash_init_map(&p->lmap);
  p->epoch = 1;	/* Tag 0 (epoch 0) marks an empty cache entry. */
  p->window = MP_TEMP_WINDOW;
}

void mp_profile_free(mp_profile *p)
{
  mp_symtab_free(&p->syms);
  mp_heap_free(&p->heap);
  mp_hash_free(&p->smap);
  mp_hash_free(&p->lmap);
  free(p->site);
  free(p->link);
  free(p->node);
  free(p->slive);
  free(p->nlive);
  free(p->tl);
  free(p->rates);
  free(p->gcfree);
  memset(p, 0, sizeof(*p));
}

/* Stop the pass at byte offset off for an event that on_event() refused
** (rc): no memory for the tables, or a stack node the stream has not
** defined. Returns rc. */
static int stop_at(mp_profile *p, int rc, size_t off)
{
  p->r.err_offset = off;
  if (rc == MP_ERR_DATA)
    snprintf(p->r.err, sizeof(p->r.err), "a stack node among the %u read "
	     "so far", p->nnode);
  else
    snprintf(p->r.err, sizeof(p->r.err), "memory for the report's tables");
  p->r.phase = MP_PH_DONE;
  return rc;
}

/* Stop the pass for lack of memory at byte offset off. */
static int nomem(mp_profile *p, size_t off)
{
  return stop_at(p, MP_ERR_NOMEM, off);
}

/* -- Owners of blocks (a full pass) ---------------------------------------- */

/* The record of heap owner o (a site, or a node). */
static inline mp_live *owner_live(mp_profile *p, uint32_t o)
{
  return o & MP_OWNER_NODE ? &p->nlive[(o & ~MP_OWNER_NODE) - 1]
			   : &p->slive[o];
}

/* Add n blocks of b bytes to owner record l and to the live heap (modulo
** 2^64: a subtraction is the addition of the negated values). The first
** change after a peak saves what l held at the peak. */
static inline void live_change(mp_profile *p, mp_live *l, uint64_t n,
			       uint64_t b)
{
  if (l->stamp != p->pepoch) {
    l->pn = l->n;
    l->pbytes = l->bytes;
    l->stamp = p->pepoch;
  }
  l->n += n;
  l->bytes += b;
  p->live_n += n;
  p->live_bytes += b;
}

/* What the block of size bytes at addr stands for: itself, or its weight
** in a sampled profile. */
static inline mp_weight block_weight(const mp_profile *p, uint64_t addr,
				     uint64_t size, int sampled)
{
  mp_weight w;
  if (sampled) return mp_sample_weight(p->sample, addr, size);
  w.n = 1;
  w.bytes = size;
  return w;
}

/* A put at addr replaced a block whose free was missed: take it from its
** owner. */
static __attribute__((noinline)) void replaced(mp_profile *p, uint64_t addr)
{
  mp_weight w = block_weight(p, addr, p->heap.rsize, p->sample != 0);
  p->heap.replaced = 0;
  live_change(p, owner_live(p, p->heap.rsite), -w.n, -w.bytes);
}

/* The live heap reached a new high, b bytes in n blocks, after the event
** being aggregated. */
static inline void new_peak(mp_profile *p, uint64_t b, uint64_t n)
{
  p->peak_bytes = b;
  p->peak_blocks = n;
  p->peak_ev = p->nev;
  p->peak_before = p->mark;
  p->peak_wait = 1;
  p->pepoch++;
}

/* -- Events --------------------------------------------------------------- */

/* Aggregate one allocation event; MP_OK or MP_ERR_NOMEM. Inlined by force
** into the loop over a batch, where GCC would otherwise call it and save
** and restore six registers for every event. `full` is a constant: the
** loop is compiled three times, without the owners' records (0), with
** them, temporaries and the timeline (1), and with the weights of a
** sampled profile too (2). */
static inline __attribute__((always_inline))
int on_event(mp_profile *p, const mp_event *e, const int full)
{
  unsigned k = e->kind;
  uint32_t si, owner, put = 0;
  uint64_t size, cnt = 1, nb = e->nsize, ob = e->osize, before = 0;
  uint64_t oa = e->oaddr, na = e->naddr;	/* Keys in the heap table. */
  mp_weight wn = { 1, e->nsize }, wo = { 1, e->osize };
  mp_site *s;
  if (full) {
    before = p->live_bytes;
    if (full == 2) {	/* What the recorded event stands for. */
      if (k & MP_AEV_ALLOC) wn = mp_sample_weight(p->sample, e->naddr,
						  e->nsize);
      if (k == MP_AEV_FREE) wo = mp_sample_weight(p->sample, e->oaddr,
						  e->osize);
      /* A reallocation was recorded for its new block (or because its old
      ** one was sampled, and then its old one's weight leaves the live
      ** heap below): its old bytes count as its new ones do. */
      else if (k == MP_AEV_REALLOC)
	wo.bytes = mp_sample_scale(p->sample, e->nsize, e->osize);
      cnt = k & MP_AEV_ALLOC ? wn.n : wo.n;
      nb = k & MP_AEV_ALLOC ? wn.bytes : 0;
      ob = wo.bytes;
    }
  }
  if (__builtin_expect(e->src == MP_SRC_STACK, 0)) {
    mp_pnode *n;
    if (e->id - 1 >= p->nnode) return MP_ERR_DATA;	/* No such node. */
    n = &p->node[e->id - 1];
    if (n->kind == MP_FK_NATIVE) {	/* A heap of its own. */
      if (p->heapsel == MP_HEAPSEL_VM) return MP_OK;
      oa ^= MP_NATIVE_KEY;
      na ^= MP_NATIVE_KEY;
    } else if (p->heapsel == MP_HEAPSEL_NATIVE) {
      return MP_OK;
    }
    if (k & MP_AEV_ALLOC) {	/* Native frees have a node too. */
      n->alloc.n += cnt;
      n->alloc.plus += nb;
    }
    si = n->site;
    put = MP_OWNER_NODE | (uint32_t)e->id;
  } else {
    if (p->heapsel == MP_HEAPSEL_NATIVE) return MP_OK;
    si = site_of(p, e->src, e->id, e->line);
    if (si > SITE_MAX) return MP_ERR_NOMEM;
    put = si;
  }
  s = &p->site[si];
  s->n[k] += cnt;
  s->plus[k] += nb;
  s->minus[k] += ob;
  if (__builtin_expect((nb | ob) >> MP_SMALL_BITS, 0)) {
    p->big_plus += nb;	/* 128 bits: cannot wrap. */
    p->big_minus += ob;
  }
  p->net += nb - ob;	/* Modulo 2^64: bad data must not trap. */
  if ((int64_t)p->net > p->peak) p->peak = (int64_t)p->net;
  if ((k & MP_AEV_FREE) && mp_heap_take(&p->heap, oa, &size, &owner)) {
    mp_weight w = { 1, size };
    if (full) {
      mp_live *l = owner_live(p, owner);
      if (full == 2)	/* The block's size, as it was weighed. */
	w = size == e->osize && k == MP_AEV_FREE ? wo :
	    block_weight(p, e->oaddr, size, 1);
      live_change(p, l, -w.n, -w.bytes);
      /* The allocations since the block's own (that one excluded). */
      if (p->heap.stamped && !p->gcstart &&
	  (uint32_t)(p->nalloc - p->heap.took - w.n) < p->window) {
	l->tn += w.n;
	l->tbytes += w.bytes;
      }
    }
    if (__builtin_expect(p->gcstart, 0) && k == MP_AEV_FREE &&
	mp_profile_gc_freed(p, mp_owner_site(p, owner), w.n, w.bytes) < 0)
      return MP_ERR_NOMEM;
    if (link_note(p, k, si, mp_owner_site(p, owner), w.n, nb, w.bytes) < 0)
      return MP_ERR_NOMEM;
  } else if (full == 2 && k == MP_AEV_REALLOC) {
    /* A sampled resize of a block that was not sampled: the new block
    ** enters the sample, charged to the site as its allocation would
    ** be (the heap summary's accounting). */
    if (link_note(p, k, si, si, cnt, nb, 0) < 0) return MP_ERR_NOMEM;
  }
  if ((k & MP_AEV_ALLOC) && e->naddr) {
    if (full) p->heap.now = p->nalloc;
    if (mp_heap_put(&p->heap, na, e->nsize, put) < 0)
      return MP_ERR_NOMEM;
    if (full) {
      live_change(p, owner_live(p, put), wn.n, wn.bytes);
      if (__builtin_expect(p->heap.replaced, 0)) replaced(p, na);
    }
  }
  p->nev++;
  if (full == 2) p->recorded[k]++;
  if (full) {
    if (k & MP_AEV_ALLOC) p->nalloc += (uint32_t)cnt;	/* Estimated. */
    if (p->live_bytes > p->peak_bytes)
      new_peak(p, p->live_bytes, p->live_n);
    if (p->tl)
      mp_timeline_event(p->tl, p->nev - 1, p->live_bytes,
			k & MP_AEV_ALLOC ? cnt : 0, nb, ob, before);
  } else if (p->heap.bytes > p->peak_bytes) {
    new_peak(p, p->heap.bytes, p->heap.count);
  }
  return MP_OK;
}

int mp_profile_gc_freed(mp_profile *p, uint32_t site, uint64_t n,
			uint64_t bytes)
{
  while (site >= p->ngcfree) {
    if (mp_array_grow((void **)&p->gcfree, p->ngcfree, &p->capgcfree,
		      sizeof(*p->gcfree)) < 0)
      return -1;
    memset(&p->gcfree[p->ngcfree++], 0, sizeof(*p->gcfree));
  }
  p->gcfree[site].n += n;
  p->gcfree[site].plus += bytes;
  return 0;
}

uint32_t mp_profile_gc_top(const mp_profile *p, mp_cost *all)
{
  uint32_t i, top = UINT32_MAX;
  memset(all, 0, sizeof(*all));
  for (i = 0; i < p->ngcfree && i < p->nsite; i++) {
    const mp_cost *c = &p->gcfree[i];
    if (!c->n || p->site[i].loc.src == MP_SRC_INTERNAL) continue;
    mp_cost_add(all, c);
    if (top == UINT32_MAX || c->plus > p->gcfree[top].plus) top = i;
  }
  return top;
}

/* A sampled block left the sample (MP_X_DROP): it is no longer live, and
** no event happened to it that the sections count; the heap summary
** credits its owner with it, as a resize by the owner. MP_OK or
** MP_ERR_NOMEM. */
static int drop(mp_profile *p, uint64_t addr)
{
  uint64_t size;
  uint32_t owner, site;
  mp_weight w;
  if (!p->sample || !mp_heap_take(&p->heap, addr, &size, &owner))
    return MP_OK;
  w = block_weight(p, addr, size, 1);
  live_change(p, owner_live(p, owner), -w.n, -w.bytes);
  site = mp_owner_site(p, owner);
  return link_note(p, MP_AEV_REALLOC, site, site, 0, 0, w.bytes) < 0 ?
	 MP_ERR_NOMEM : MP_OK;
}

/* Aggregate one item from mp_reader_next(); MP_OK or MP_ERR_NOMEM. */
static int on_item(mp_profile *p, const mp_item *it)
{
  int rc;
  if (it->kind != MP_AEV_SYMTAB) {
    mp_event e;
    e.id = it->id;
    e.line = it->line;
    e.oaddr = it->oaddr;
    e.osize = it->osize;
    e.naddr = it->naddr;
    e.nsize = it->nsize;
    e.kind = it->kind;
    e.src = it->src;
    rc = p->sample ? on_event(p, &e, 2) : p->full ? on_event(p, &e, 1) :
	 on_event(p, &e, 0);
    return rc == MP_OK ? MP_OK : stop_at(p, rc, it->offset);
  }
  switch (it->src) {	/* The extension's records. */
  case MP_SRC_STACK:
    return (rc = node_add(p, it)) == MP_OK ? MP_OK : stop_at(p, rc, it->offset);
  case MP_SRC_BUILTIN:
    return mp_symtab_builtin_add(&p->syms, it) == 0 ? MP_OK
						    : nomem(p, it->offset);
  case MP_SRC_INFO:
    return (rc = info_add(p, it)) == MP_OK ? MP_OK : nomem(p, it->offset);
  case MP_SRC_TIME:
    mark_add(p, it->id);
    return MP_OK;
  case MP_SRC_DROP:
    return (rc = drop(p, it->oaddr)) == MP_OK ? MP_OK : nomem(p, it->offset);
  case MP_SRC_GCSTART:
    p->gcstart = 1;
    return MP_OK;
  case MP_SRC_FNAME:
    return mp_symtab_add(&p->syms, it) ? MP_OK : nomem(p, it->offset);
  case MP_SRC_RSS:
    p->rss = it->id;
    if (it->id > p->rss_max) p->rss_max = it->id;
    p->nrss++;
    if (p->tl) mp_timeline_rss(p->tl, p->nev, it->id);
    return MP_OK;
  case MP_SRC_MCODE:
    p->mcode = it->id;
    p->nmcode++;
    return MP_OK;
  }
  if (!mp_symtab_add(&p->syms, it)) return nomem(p, it->offset);
  p->nsym[!it->in_header][it->src >> MP_SRC_SHIFT]++;
  if (++p->epoch == 0) {	/* Wrapped: forget every cached location. */
    memset(p->lcache, 0, sizeof(p->lcache));
    p->epoch = 1;
  }
  return MP_OK;
}

/* Aggregate n events that start at byte offset off; MP_OK or
** MP_ERR_NOMEM (with the offset of the event that failed). */
static inline __attribute__((always_inline))
int on_events_x(mp_profile *p, const mp_event *ev, size_t n, size_t off,
		const int full)
{
  size_t i;
  for (i = 0; i < n; i++) {
    int rc = on_event(p, &ev[i], full);
    if (rc != MP_OK) return stop_at(p, rc, off);
    off += ev[i].len;
  }
  return MP_OK;
}

static __attribute__((noinline))
int on_events_plain(mp_profile *p, const mp_event *ev, size_t n, size_t off)
{
  return on_events_x(p, ev, n, off, 0);
}

static __attribute__((noinline))
int on_events_full(mp_profile *p, const mp_event *ev, size_t n, size_t off)
{
  return on_events_x(p, ev, n, off, 1);
}

static __attribute__((noinline))
int on_events_sampled(mp_profile *p, const mp_event *ev, size_t n, size_t off)
{
  return on_events_x(p, ev, n, off, 2);
}

static inline int on_events(mp_profile *p, const mp_event *ev, size_t n,
			    size_t off)
{
  return p->sample ? on_events_sampled(p, ev, n, off) :
	 p->full ? on_events_full(p, ev, n, off) :
	 on_events_plain(p, ev, n, off);
}

/* Events are aggregated a batch at a time, in one of two ways. Straight
** from the stream (direct_batch()) while the heap operations stay in a
** few pages: the page tables are then in cache or the hardware prefetcher
** follows the runs. Or through a pipeline, when they jump from page to
** page over a large heap: while one batch is aggregated the next one is
** already decoded and what its heap operations will read is prefetched
** (32 events ahead covers a cache miss, ~100 ns, at a few ns an event).
** The pipeline halves the time of a profile whose frees scatter over a
** large heap; where it is not needed it adds a tenth to the time of a
** binary-trees profile, and a third to a half to that of small ones. A
** batch jumps about when it changes pages more than BATCH / 8 times. */
#define BATCH	32
/* Batches that stay in their pages before the pipeline is left. */
#define CALM	16
/* Slots in the heap's page tables from which they may not fit in the
** caches (2.5 MiB of tables); below, only direct. */
#define PREFETCH_SLOTS	((size_t)1 << 18)

/* Prefetch what the heap operations of n events will read (see
** mp_heap.h). A macro, for the reason given there. */
#define prefetch_batch(p, ev, n) \
  do { \
    size_t pi_; \
    uint64_t pk_ = 0; \
    mp_hpage *pg_ = NULL; \
    for (pi_ = 0; pi_ < (n); pi_++) { \
      if ((ev)[pi_].kind & MP_AEV_FREE) \
	mp_heap_prefetch_dir(&(p)->heap, (ev)[pi_].oaddr, pk_); \
      if ((ev)[pi_].kind & MP_AEV_ALLOC) \
	mp_heap_prefetch_dir(&(p)->heap, (ev)[pi_].naddr, pk_); \
    } \
    pk_ = 0; \
    for (pi_ = 0; pi_ < (n); pi_++) { \
      if ((ev)[pi_].kind & MP_AEV_FREE) \
	mp_heap_prefetch_slot(&(p)->heap, (ev)[pi_].oaddr, pk_, pg_); \
      if ((ev)[pi_].kind & MP_AEV_ALLOC) \
	mp_heap_prefetch_slot(&(p)->heap, (ev)[pi_].naddr, pk_, pg_); \
    } \
  } while (0)

/* Decode and aggregate up to BATCH events in one loop, straight from the
** stream; *n gets how many. MP_OK or MP_ERR_NOMEM. Stops where
** mp_reader_events() would. */
static inline __attribute__((always_inline))
int direct_batch_x(mp_profile *p, size_t *n, const int full)
{
  mp_reader *r = &p->r;
  const uint8_t *at = r->p, *lim, *q;
  uint32_t valid = r->headers;	/* In a register: on_event() stores. */
  size_t i;
  mp_event e;
  *n = 0;
  if (r->phase != MP_PH_EVENTS || (size_t)(r->end - at) < MP_EVENT_LONGEST)
    return MP_OK;
  lim = r->end - MP_EVENT_LONGEST;
  for (i = 0; i < BATCH && at <= lim && (q = mp_event_decode(at, &e, valid));
       i++, at = q) {
    int rc;
    if (r->ext) mp_event_undelta(r, &e);
    if ((rc = on_event(p, &e, full)) != MP_OK) {
      r->p = at;
      return stop_at(p, rc, mp_reader_offset(r));
    }
  }
  r->p = at;
  *n = i;
  return MP_OK;
}

static __attribute__((noinline)) int direct_batch_plain(mp_profile *p,
							 size_t *n)
{
  return direct_batch_x(p, n, 0);
}

static __attribute__((noinline)) int direct_batch_full(mp_profile *p,
							size_t *n)
{
  return direct_batch_x(p, n, 1);
}

static __attribute__((noinline)) int direct_batch_sampled(mp_profile *p,
							   size_t *n)
{
  return direct_batch_x(p, n, 2);
}

uint64_t mp_profile_events(const mp_profile *p)
{
  uint64_t n = 0;
  uint32_t i;
  int k;
  for (i = 0; i < p->nsite; i++)
    for (k = 1; k < MP_AEV_N; k++) n += p->site[i].n[k];
  return n;
}

/* Totals from the sites (cheaper than counting them per event), and
** whether any byte sum may have wrapped. */
static void totals(mp_profile *p)
{
  uint32_t i;
  int k;
  memset(p->total, 0, sizeof(p->total));
  for (i = 0; i < p->nsite; i++)
    for (k = 1; k < MP_AEV_N; k++) {
      mp_cost c = mp_site_cost(&p->site[i], k);
      mp_cost_add(&p->total[k], &c);
    }
  /* Sizes below 2^MP_SMALL_BITS add up to less than events << that much;
  ** the others were summed exactly. */
  {
    unsigned __int128 small = (unsigned __int128)mp_profile_events(p)
			      << MP_SMALL_BITS;
    p->overflow = (p->big_plus + small) >> 63 || (p->big_minus + small) >> 63;
  }
}

/* Heap table walk: count a live block for its owner. */
static void count_live(void *ctx, uint64_t addr, uint64_t size,
		       uint32_t owner)
{
  mp_live *l = owner_live(ctx, owner);
  (void)addr;
  l->n++;
  l->bytes += size;
}

/* After the pass: what each owner holds at the end, and what it held at
** the peak (its saved values, or the ones it has if they did not change
** since). A plain pass counts the blocks of the heap table now (a few ms
** for a million blocks). 0, or -1 when out of memory. */
static int finish(mp_profile *p)
{
  uint32_t i;
  if (p->tl) mp_timeline_end(p->tl, p->live_bytes);
  if (!p->full) {
    free(p->slive);
    free(p->nlive);
    p->slive = calloc((size_t)p->nsite + 1, sizeof(*p->slive));
    p->nlive = calloc((size_t)p->nnode + 1, sizeof(*p->nlive));
    p->capslive = p->nsite + 1;
    p->capnlive = p->nnode + 1;
    if (!p->slive || !p->nlive) return -1;
    mp_heap_foreach(&p->heap, count_live, p);
    p->live_n = p->heap.count;
    p->live_bytes = p->heap.bytes;
    return 0;
  }
  for (i = 0; i < p->nsite; i++)
    if (p->slive[i].stamp != p->pepoch) {
      p->slive[i].pn = p->slive[i].n;
      p->slive[i].pbytes = p->slive[i].bytes;
    }
  for (i = 0; i < p->nnode; i++)
    if (p->nlive[i].stamp != p->pepoch) {
      p->nlive[i].pn = p->nlive[i].n;
      p->nlive[i].pbytes = p->nlive[i].bytes;
    }
  return 0;
}

/* After the epilogue of a version-3 stream: the notes of its trailer
** (settings and time marks, mp_ext.h). The events are complete whatever
** follows, so bytes that are not a trailer, or a record cut short or
** malformed, only end the notes: the profile stays complete. */
static void read_notes(mp_profile *p, mp_input *in)
{
  mp_item it;
  int rc;
  if (p->r.ext) return;	/* Its notes came before the epilogue. */
  for (;;) {
    rc = mp_reader_note(&p->r, &it);
    if (rc == MP_MORE) {
      if (mp_input_fill(in, &p->r) != 0) break;
      continue;
    }
    if (rc != MP_OK) break;
    if (it.src == MP_SRC_INFO) info_add(p, &it);
    else if (it.src == MP_SRC_TIME) mark_add(p, it.id);
  }
  p->r.err[0] = '\0';
  p->r.err_offset = 0;
  p->r.phase = MP_PH_DONE;
}

/* Set up what p->want asks for, before the first event; 0 or -1. */
static int prepare(mp_profile *p)
{
  if (!p->want) return 0;
  if (go_full(p) != MP_OK) return -1;
  if ((p->want & MP_WANT_TEMP) && !p->heap.count) {
    mp_heap_free(&p->heap);
    mp_heap_init_stamped(&p->heap);
  }
  if ((p->want & MP_WANT_TIMELINE) && !p->tl) {
    if (!(p->tl = malloc(sizeof(*p->tl)))) return -1;
    mp_timeline_init(p->tl);
  }
  return 0;
}

uint64_t mp_profile_peak_ns(const mp_profile *p)
{
  const mp_tmark *a = &p->peak_before, *b = &p->peak_after;
  if (!p->nmark) return UINT64_MAX;
  if (p->peak_wait || b->ev <= a->ev || b->ns <= a->ns) return a->ns;
  return a->ns + (uint64_t)((double)(b->ns - a->ns) *
			    (double)(p->peak_ev - a->ev) /
			    (double)(b->ev - a->ev));
}

int mp_profile_read_input(mp_profile *p, mp_input *in)
{
  mp_event buf[2][BATCH];
  size_t got[2] = { 0, 0 }, at[2] = { 0, 0 }, mark = STEP;
  int cur = 0, rc = MP_OK, prc = MP_OK;
  int prefetch = 0;
  unsigned calm = CALM;
  mp_input_start(in, &p->r);
  if (prepare(p) < 0) {
    prc = nomem(p, 0);
    goto out;
  }
  /* Events are aggregated in stream order, a batch at a time: straight
  ** from the stream while the heap operations stay in a few pages, or,
  ** when they jump about, through a pipeline that decodes one batch ahead
  ** and prefetches for it, which changes nothing but the cache misses.
  ** When no event can be decoded in bulk (a symbol, the end, an error, the
  ** last bytes of a window), one item is read with mp_reader_next() after
  ** everything before it has been aggregated. */
  while (rc == MP_OK) {
    size_t pos = mp_reader_offset(&p->r), n;
    size_t lookups = p->heap.lookups;
    if (!prefetch) {
      prc = p->sample ? direct_batch_sampled(p, &n) :
	    p->full ? direct_batch_full(p, &n) : direct_batch_plain(p, &n);
      if (prc != MP_OK) goto out;
    } else {
      int nxt = cur ^ 1;
      at[nxt] = pos;
      n = got[nxt] = mp_reader_events(&p->r, buf[nxt], BATCH);
      prefetch_batch(p, buf[nxt], got[nxt]);
      if ((prc = on_events(p, buf[cur], got[cur], at[cur])) != MP_OK)
	goto out;
      got[cur] = 0;
      cur = nxt;
    }
    /* Into the pipeline at the first batch that jumps about in a heap
    ** too large for the caches, out of it after CALM batches that do not:
    ** a batch decoded straight when it should have been prefetched waits
    ** for dozens of cache misses, a batch prefetched in vain costs
    ** little. */
    calm = p->heap.lookups - lookups > BATCH / 8 &&
	   p->heap.nslot >= PREFETCH_SLOTS ? 0 : calm + 1;
    prefetch = calm < CALM;
    if (!prefetch && got[cur]) {	/* Leaving the pipeline: empty it. */
      if ((prc = on_events(p, buf[cur], got[cur], at[cur])) != MP_OK)
	goto out;
      got[cur] = 0;
    }
    if (!n) {
      mp_item it;
      rc = mp_reader_next(&p->r, &it);
      if (rc == MP_END) read_notes(p, in);
      if (rc == MP_MORE) {	/* Events decoded ahead keep no pointer. */
	rc = mp_input_fill(in, &p->r);
	if (rc == 0) rc = MP_OK;
      } else if (rc == MP_OK && (prc = on_item(p, &it)) != MP_OK) {
	goto out;
      }
    }
    if (pos >= mark) {
      mp_input_consumed(in, pos);
      mark = pos + STEP;
    }
  }
out:
  p->len = in->total;
  totals(p);
  if (finish(p) < 0 && prc != MP_ERR_NOMEM)
    prc = nomem(p, mp_reader_offset(&p->r));
  return p->rc = prc != MP_OK ? prc : rc;
}

int mp_profile_read(mp_profile *p, const void *data, size_t len)
{
  mp_input in;
  int rc;
  mp_input_memory(&in, data, len, 0);
  rc = mp_profile_read_input(p, &in);
  mp_input_close(&in);
  return rc;
}
