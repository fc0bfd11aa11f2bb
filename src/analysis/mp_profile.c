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
#include "util/mp_array.h"

#define SITE_MAX	0x7fffffffu	/* Site numbers fit in 31 bits. */
#define STEP		((size_t)1 << 20)	/* Bytes between progress calls. */

/* -- Sites ---------------------------------------------------------------- */

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
** the frame that called it, the line inside a trace to the trace, the rest
** to their own location. MP_OK or MP_ERR_NOMEM. */
static int node_add(mp_profile *p, const mp_item *it)
{
  mp_pnode *n, *parent;
  mp_loc l;
  uint32_t site;
  if (it->id != (uint64_t)p->nnode + 1 ||
      mp_array_grow((void **)&p->node, p->nnode, &p->capnode,
		    sizeof(*p->node)) < 0)
    return MP_ERR_NOMEM;
  parent = it->parent ? &p->node[it->parent - 1] : NULL;
  memset(&l, 0, sizeof(l));
  switch (it->fkind) {
  case MP_FK_LUA: l = mp_loc_of(&p->syms, MP_SRC_LFUNC, it->fa, it->line); break;
  case MP_FK_C: l = mp_loc_of(&p->syms, MP_SRC_CFUNC, it->fa, 0); break;
  case MP_FK_TRACE: l = mp_loc_of(&p->syms, MP_SRC_TRACE, it->fa, 0); break;
  case MP_FK_HOST: l = mp_loc_of(&p->syms, MP_SRC_CFUNC, 0, 0); break;
  case MP_FK_BUILTIN:
    l.id = it->fa;
    l.name = mp_symtab_builtin(&p->syms, it->fa);
    break;
  default: l.id = it->fa; break;	/* A cut: the depth limit. */
  }
  if ((it->fkind == MP_FK_BUILTIN && parent) ||
      (it->fkind == MP_FK_LUA && parent && parent->kind == MP_FK_TRACE)) {
    site = parent->site;
  } else {
    mp_loc s = l;
    if (it->fkind == MP_FK_BUILTIN || it->fkind == MP_FK_CUT)
      memset(&s, 0, sizeof(s));	/* Called from nowhere: internal. */
    if ((site = site_find(p, &s)) > SITE_MAX) return MP_ERR_NOMEM;
  }
  n = &p->node[p->nnode++];
  memset(n, 0, sizeof(*n));
  n->loc = l;
  n->parent = (uint32_t)it->parent;
  n->kind = it->fkind;
  n->site = site;
  return MP_OK;
}

/* Note a setting of the agent (MP_X_INFO). */
static void info_add(mp_profile *p, const mp_item *it)
{
  if (it->name_len == 6 && !memcmp(it->name, "stacks", 6)) {
    size_t i;
    unsigned v = 0;
    for (i = 0; i < it->value_len && i < 9; i++)
      if (it->value[i] >= '0' && it->value[i] <= '9')
	v = v * 10 + (unsigned)(it->value[i] - '0');
    p->stacks = v;
  }
}

/* -- Links ---------------------------------------------------------------- */

/* Account a block of owner's that site resized or freed, the link being
** a new one or found in the table (key: see link_note()), and remember it
** in cache entry c; 0 or -1. */
static int link_add(mp_profile *p, mp_lmru *c, uint64_t key, int kind,
		    uint32_t site, uint32_t owner, uint64_t alloced,
		    uint64_t freed)
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
  l->cost.n++;
  l->cost.plus += alloced;
  l->cost.minus += freed;
  return 0;
}

/* Account a block of owner's that site resized or freed; 0 or -1. Inline
** for the common case: a site frees the blocks of a few owners at a time
** (the objects of a garbage cycle), so the link is a recent one, found in
** a small direct-mapped cache. */
static inline int link_note(mp_profile *p, int kind, uint32_t site,
			    uint32_t owner, uint64_t alloced, uint64_t freed)
{
  uint64_t key = ((uint64_t)kind << 62) | ((uint64_t)site << 31) | owner;
  mp_lmru *c = &p->lmru[(key * 0x9e3779b97f4a7c15ull) >> 58];
  mp_link *l;
  if (key != c->key)
    return link_add(p, c, key, kind, site, owner, alloced, freed);
  l = &p->link[c->link];
  l->cost.n++;
  l->cost.plus += alloced;
  l->cost.minus += freed;
  return 0;
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

/* Aggregate one allocation event; MP_OK or MP_ERR_NOMEM. Inlined by force
** into the loop over a batch, where GCC would otherwise call it and save
** and restore six registers for every event. */
static inline __attribute__((always_inline))
int on_event(mp_profile *p, const mp_event *e)
{
  unsigned k = e->kind;
  uint32_t si, owner, put = 0;
  uint64_t size;
  mp_site *s;
  if (__builtin_expect(e->src == MP_SRC_STACK, 0)) {
    mp_pnode *n;
    if (e->id - 1 >= p->nnode) return MP_ERR_DATA;	/* No such node. */
    n = &p->node[e->id - 1];
    n->alloc.n++;
    n->alloc.plus += e->nsize;
    si = n->site;
    put = MP_OWNER_NODE | (uint32_t)e->id;
  } else {
    si = site_of(p, e->src, e->id, e->line);
    if (si > SITE_MAX) return MP_ERR_NOMEM;
    put = si;
  }
  s = &p->site[si];
  s->n[k]++;
  s->plus[k] += e->nsize;
  s->minus[k] += e->osize;
  if (__builtin_expect((e->nsize | e->osize) >> MP_SMALL_BITS, 0)) {
    p->big_plus += e->nsize;	/* 128 bits: cannot wrap. */
    p->big_minus += e->osize;
  }
  p->net += e->nsize - e->osize;	/* Modulo 2^64: bad data must not trap. */
  if ((int64_t)p->net > p->peak) p->peak = (int64_t)p->net;
  if ((e->kind & MP_AEV_FREE) &&
      mp_heap_take(&p->heap, e->oaddr, &size, &owner) &&
      link_note(p, k, si, mp_owner_site(p, owner), e->nsize, size) < 0)
    return MP_ERR_NOMEM;
  if ((e->kind & MP_AEV_ALLOC) && e->naddr &&
      mp_heap_put(&p->heap, e->naddr, e->nsize, put) < 0)
    return MP_ERR_NOMEM;
  return MP_OK;
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
    rc = on_event(p, &e);
    return rc == MP_OK ? MP_OK : stop_at(p, rc, it->offset);
  }
  switch (it->src) {	/* The extension's records. */
  case MP_SRC_STACK:
    return (rc = node_add(p, it)) == MP_OK ? MP_OK : stop_at(p, rc, it->offset);
  case MP_SRC_BUILTIN:
    return mp_symtab_builtin_add(&p->syms, it) == 0 ? MP_OK
						    : nomem(p, it->offset);
  case MP_SRC_INFO:
    info_add(p, it);
    return MP_OK;
  case MP_SRC_TIME:
    p->time_ns = it->id;
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
static int on_events(mp_profile *p, const mp_event *ev, size_t n, size_t off)
{
  size_t i;
  for (i = 0; i < n; i++) {
    int rc = on_event(p, &ev[i]);
    if (rc != MP_OK) return stop_at(p, rc, off);
    off += ev[i].len;
  }
  return MP_OK;
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
static int direct_batch(mp_profile *p, size_t *n)
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
    if ((rc = on_event(p, &e)) != MP_OK) {
      r->p = at;
      return stop_at(p, rc, mp_reader_offset(r));
    }
  }
  r->p = at;
  *n = i;
  return MP_OK;
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

int mp_profile_read_input(mp_profile *p, mp_input *in)
{
  mp_event buf[2][BATCH];
  size_t got[2] = { 0, 0 }, at[2] = { 0, 0 }, mark = STEP;
  int cur = 0, rc = MP_OK, prc = MP_OK;
  int prefetch = 0;
  unsigned calm = CALM;
  mp_input_start(in, &p->r);
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
      if ((prc = direct_batch(p, &n)) != MP_OK) goto out;
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
