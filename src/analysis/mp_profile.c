/*
** mp_profile.c: aggregate a profile by site in one streaming pass.
**
** Per event the work is: decode, find the site (a 256-entry cache in front
** of the symbol and site tables; most events repeat a recent location),
** update its counters, and update the heap table. The heap table is the
** only structure as large as the profiled heap; it follows the locality of
** the addresses (mp_heap.h), and is prefetched a batch of events ahead
** when they have none.
*/

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mp_profile.h"

#define SITE_MAX	0x7fffffffu	/* Site numbers fit in 31 bits. */
#define CONSUMED_STEP	((size_t)8 << 20)

/* -- Hashing -------------------------------------------------------------- */

static inline uint64_t mix(uint64_t x)
{
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}

static inline uint64_t hash_loc(uint8_t src, uint32_t sym, uint64_t id,
				uint64_t line)
{
  return mix(id ^ mix(line + ((uint64_t)src << 40) + ((uint64_t)sym << 8)));
}

/* FNV-1a over a chunk text. */
static uint32_t hash_text(const char *s, size_t n)
{
  uint32_t h = 2166136261u;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h ? h : 1;
}

/* Grow an array of n used elements to hold one more; 0 or -1. */
static int reserve(void **arr, uint32_t n, uint32_t *cap, size_t elem)
{
  void *a;
  uint32_t c;
  if (n < *cap) return 0;
  c = *cap ? *cap * 2 : 64;
  if (c <= *cap) return -1;
  a = realloc(*arr, (size_t)c * elem);
  if (!a) return -1;
  *arr = a;
  *cap = c;
  return 0;
}

/* -- Aliases -------------------------------------------------------------- */

int mp_chunk_is_text(const char *name, size_t len)
{
  if (len == 0) return 0;
  if (name[0] != '@' && name[0] != '=') return 1;
  return memchr(name, '\n', len) != NULL;
}

/* Rebuild the alias hash with twice the slots; 0 or -1. */
static int alias_grow(mp_profile *p)
{
  size_t cap = p->amap ? (p->amask + 1) * 2 : 64, j;
  uint32_t *m = calloc(cap, sizeof(*m)), i;
  if (!m) return -1;
  for (i = 1; i < p->nalias; i++) {
    for (j = p->alias[i].hash & (cap - 1); m[j]; j = (j + 1) & (cap - 1)) {}
    m[j] = i;
  }
  free(p->amap);
  p->amap = m;
  p->amask = cap - 1;
  return 0;
}

/* Alias number of chunk text (assigned in order of first use); 0 when out
** of memory. */
static uint32_t alias_of(mp_profile *p, const char *text, size_t len)
{
  uint32_t h = hash_text(text, len), i;
  size_t j;
  if (!p->nalias) p->nalias = 1;
  if (!p->amap || (size_t)p->nalias * 2 > p->amask + 1)
    if (alias_grow(p) < 0) return 0;
  for (j = h & p->amask; (i = p->amap[j]) != 0; j = (j + 1) & p->amask) {
    const mp_alias *a = &p->alias[i];
    if (a->hash == h && a->len == len && memcmp(a->text, text, len) == 0)
      return i;
  }
  if (reserve((void **)&p->alias, p->nalias, &p->capalias,
	      sizeof(*p->alias)) < 0)
    return 0;
  i = p->nalias++;
  p->alias[i].text = text;
  p->alias[i].len = len;
  p->alias[i].hash = h;
  p->amap[j] = i;
  return i;
}

/* -- Sites ---------------------------------------------------------------- */

/* Rebuild the site hash with twice the slots; 0 or -1. */
static int site_grow(mp_profile *p)
{
  size_t cap = p->smap ? (p->smask + 1) * 2 : 256, j;
  uint32_t *m = calloc(cap, sizeof(*m)), i;
  if (!m) return -1;
  for (i = 0; i < p->nsite; i++) {
    const mp_site *s = &p->site[i];
    for (j = hash_loc(s->src, s->sym, s->id, s->line) & (cap - 1); m[j];
	 j = (j + 1) & (cap - 1)) {}
    m[j] = i + 1;
  }
  free(p->smap);
  p->smap = m;
  p->smask = cap - 1;
  return 0;
}

/* Chunk symbol shown in a site's label (Lua function or trace start). */
static const mp_sym *label_chunk(const mp_profile *p, const mp_site *s)
{
  const mp_sym *sym;
  if (!s->sym) return NULL;
  sym = &p->syms.sym[s->sym];
  if (s->src == MP_SRC_LFUNC) return sym;
  if (s->src == MP_SRC_TRACE && sym->start) return &p->syms.sym[sym->start];
  return NULL;
}

/* Site for a resolved location, created on first use; SITE_MAX + 1 when
** out of memory. */
static uint32_t site_find(mp_profile *p, uint8_t src, uint32_t sym,
			  uint64_t id, uint64_t line, uint64_t off)
{
  size_t j;
  uint32_t i;
  mp_site *s;
  const mp_sym *chunk;
  if (!p->smap || ((size_t)p->nsite + 1) * 2 > p->smask + 1)
    if (site_grow(p) < 0) return SITE_MAX + 1;
  for (j = hash_loc(src, sym, id, line) & p->smask; (i = p->smap[j]) != 0;
       j = (j + 1) & p->smask) {
    s = &p->site[i - 1];
    if (s->id == id && s->line == line && s->sym == sym && s->src == src)
      return i - 1;
  }
  if (p->nsite >= SITE_MAX ||
      reserve((void **)&p->site, p->nsite, &p->capsite, sizeof(*p->site)) < 0)
    return SITE_MAX + 1;
  i = p->nsite;
  s = &p->site[i];
  memset(s, 0, sizeof(*s));
  s->src = src;
  s->sym = sym;
  s->id = id;
  s->line = line;
  s->off = off;
  chunk = label_chunk(p, s);
  if (chunk && mp_chunk_is_text(chunk->name, chunk->name_len) &&
      !(s->alias = alias_of(p, chunk->name, chunk->name_len)))
    return SITE_MAX + 1;
  p->smap[j] = i + 1;
  p->nsite++;
  return i;
}

/* Site of location (src, id, line) when the cache has not got it: resolve
** the symbol in force, find or make the site, and remember it in cache
** entry c with tag. SITE_MAX + 1 when out of memory. */
static uint32_t site_miss(mp_profile *p, mp_lcache *c, uint64_t tag,
			  uint8_t src, uint64_t id, uint64_t line)
{
  uint64_t off = 0;
  uint32_t sym = 0, site;
  switch (src) {
  case MP_SRC_LFUNC:
    sym = mp_symtab_find(&p->syms, MP_SRC_LFUNC, id);
    break;
  case MP_SRC_CFUNC:
    sym = mp_symtab_find(&p->syms, MP_SRC_CFUNC, id);
    if (!sym) sym = mp_symtab_cfloor(&p->syms, id, &off);
    break;
  case MP_SRC_TRACE:
    sym = mp_symtab_find(&p->syms, MP_SRC_TRACE, id);
    break;
  }
  site = site_find(p, src, sym, id, line, off);
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

/* -- Links ---------------------------------------------------------------- */

/* Rebuild the link hash with twice the slots; 0 or -1. */
static int link_grow(mp_profile *p)
{
  size_t cap = p->lkey ? (p->lmask + 1) * 2 : 256, i, j;
  uint64_t *k = calloc(cap, sizeof(*k));
  uint32_t *v = malloc(cap * sizeof(*v));
  if (!k || !v) { free(k); free(v); return -1; }
  for (i = 0; p->lkey && i <= p->lmask; i++)
    if (p->lkey[i]) {
      for (j = mix(p->lkey[i]) & (cap - 1); k[j]; j = (j + 1) & (cap - 1)) {}
      k[j] = p->lkey[i];
      v[j] = p->lval[i];
    }
  free(p->lkey);
  free(p->lval);
  p->lkey = k;
  p->lval = v;
  p->lmask = cap - 1;
  return 0;
}

/* Account a block of owner's that site resized or freed, the link being
** a new one or found in the hash (key: see link_note()), and remember it
** in cache entry c; 0 or -1. */
static int link_add(mp_profile *p, mp_lmru *c, uint64_t key, int kind,
		    uint32_t site, uint32_t owner, uint64_t alloced,
		    uint64_t freed)
{
  size_t j;
  mp_link *l;
  if (!p->lkey || ((size_t)p->nlink + 1) * 2 > p->lmask + 1)
    if (link_grow(p) < 0) return -1;
  for (j = mix(key) & p->lmask; p->lkey[j] && p->lkey[j] != key;
       j = (j + 1) & p->lmask) {}
  if (p->lkey[j]) {
    l = &p->link[p->lval[j]];
  } else {
    if (reserve((void **)&p->link, p->nlink, &p->caplink,
		sizeof(*p->link)) < 0)
      return -1;
    l = &p->link[p->nlink];
    memset(l, 0, sizeof(*l));
    l->kind = (uint8_t)kind;
    l->site = site;
    l->owner = owner;
    p->lkey[j] = key;
    p->lval[j] = p->nlink++;
  }
  c->key = key;
  c->link = (uint32_t)(l - p->link);
  l->count++;
  l->alloced += alloced;
  l->freed += freed;
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
  l->count++;
  l->alloced += alloced;
  l->freed += freed;
  return 0;
}

/* -- The pass ------------------------------------------------------------- */

void mp_profile_init(mp_profile *p)
{
  memset(p, 0, sizeof(*p));
  mp_symtab_init(&p->syms);
  mp_heap_init(&p->heap);
  p->epoch = 1;	/* Tag 0 (epoch 0) marks an empty cache entry. */
}

void mp_profile_free(mp_profile *p)
{
  mp_symtab_free(&p->syms);
  mp_heap_free(&p->heap);
  free(p->site);
  free(p->smap);
  free(p->link);
  free(p->lkey);
  free(p->lval);
  free(p->alias);
  free(p->amap);
  memset(p, 0, sizeof(*p));
}

/* Stop the pass for lack of memory at byte offset off. */
static int nomem(mp_profile *p, size_t off)
{
  p->r.err_offset = off;
  snprintf(p->r.err, sizeof(p->r.err), "memory for the report's tables");
  return MP_ERR_NOMEM;
}

/* Aggregate one allocation event; MP_OK or MP_ERR_NOMEM. Inlined by force
** into the loop over a batch, where GCC would otherwise call it and save
** and restore six registers for every event. */
static inline __attribute__((always_inline))
int on_event(mp_profile *p, const mp_event *e)
{
  int k = e->kind;
  uint32_t si = site_of(p, e->src, e->id, e->line), owner;
  uint64_t size;
  mp_site *s;
  if (si > SITE_MAX) return MP_ERR_NOMEM;
  s = &p->site[si];
  s->n[k]++;
  s->plus[k] += e->nsize;
  s->minus[k] += e->osize;
  p->net += e->nsize - e->osize;	/* Modulo 2^64: bad data must not trap. */
  if ((int64_t)p->net > p->peak) p->peak = (int64_t)p->net;
  if ((e->kind & MP_AEV_FREE) &&
      mp_heap_take(&p->heap, e->oaddr, &size, &owner) &&
      link_note(p, k, si, owner, e->nsize, size) < 0)
    return MP_ERR_NOMEM;
  if ((e->kind & MP_AEV_ALLOC) && e->naddr &&
      mp_heap_put(&p->heap, e->naddr, e->nsize, si) < 0)
    return MP_ERR_NOMEM;
  return MP_OK;
}

/* Aggregate one item from mp_reader_next(); MP_OK or MP_ERR_NOMEM. */
static int on_item(mp_profile *p, const mp_item *it)
{
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
    return on_event(p, &e) == MP_OK ? MP_OK : nomem(p, it->offset);
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
    if (on_event(p, &ev[i]) != MP_OK) return nomem(p, off);
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
  size_t i;
  mp_event e;
  *n = 0;
  if (r->phase != MP_PH_EVENTS || (size_t)(r->end - at) < MP_EVENT_LONGEST)
    return MP_OK;
  lim = r->end - MP_EVENT_LONGEST;
  for (i = 0; i < BATCH && at <= lim &&
	      (q = mp_event_decode(at, &e, r->headers));
       i++, at = q)
    if (on_event(p, &e) != MP_OK) {
      r->p = at;
      return nomem(p, mp_reader_offset(r));
    }
  r->p = at;
  *n = i;
  return MP_OK;
}

int mp_profile_read(mp_profile *p, const void *data, size_t len)
{
  mp_event buf[2][BATCH];
  size_t got[2] = { 0, 0 }, at[2] = { 0, 0 }, mark = CONSUMED_STEP, i;
  int cur = 0, rc = mp_reader_init(&p->r, data, len), prc = MP_OK;
  int prefetch = 0;
  unsigned calm = CALM;
  p->len = len;
  /* Events are aggregated in stream order, a batch at a time: straight
  ** from the stream while the heap operations stay in a few pages, or,
  ** when they jump about, through a pipeline that decodes one batch ahead
  ** and prefetches for it, which changes nothing but the cache misses.
  ** When no event can be decoded in bulk (a symbol, the end, an error, the
  ** last bytes), one item is read with mp_reader_next() after everything
  ** before it has been aggregated. */
  while (rc == MP_OK) {
    size_t pos = (size_t)(p->r.p - p->r.base), n;
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
      if (rc == MP_OK && (prc = on_item(p, &it)) != MP_OK) goto out;
    }
    if (p->consumed && pos >= mark) {
      p->consumed(p->ctx, pos);
      mark = pos + CONSUMED_STEP;
    }
  }
out:
  /* Totals from the sites: cheaper than counting them per event. */
  memset(p->nev, 0, sizeof(p->nev));
  p->alloc_bytes = p->free_bytes = 0;
  for (i = 0; i < p->nsite; i++) {
    const mp_site *s = &p->site[i];
    int k;
    for (k = 1; k < MP_AEV_N; k++) {
      p->nev[k] += s->n[k];
      p->alloc_bytes += s->plus[k];
      p->free_bytes += s->minus[k];
    }
  }
  return p->rc = prc != MP_OK ? prc : rc;
}

/* -- Labels --------------------------------------------------------------- */

/* Append to out at *n (snprintf-style, never past size). */
static void put(char *out, size_t size, size_t *n, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static void put(char *out, size_t size, size_t *n, const char *fmt, ...)
{
  va_list ap;
  int m;
  if (*n + 1 >= size) return;
  va_start(ap, fmt);
  m = vsnprintf(out + *n, size - *n, fmt, ap);
  va_end(ap);
  if (m > 0) *n = *n + (size_t)m < size ? *n + (size_t)m : size - 1;
}

/* Append "chunk:line" or "function_alias_N:line". */
static void put_lua(const mp_profile *p, const mp_sym *chunk, uint32_t alias,
		    uint64_t line, char *out, size_t size, size_t *n)
{
  if (alias)
    put(out, size, n, "function_alias_%u:%llu", alias,
	(unsigned long long)line);
  else
    put(out, size, n, "%.*s:%llu", (int)chunk->name_len, chunk->name,
	(unsigned long long)line);
}

size_t mp_profile_label(const mp_profile *p, uint32_t i, char *out,
			size_t size)
{
  const mp_site *s = &p->site[i];
  const mp_sym *sym = s->sym ? &p->syms.sym[s->sym] : NULL;
  size_t n = 0;
  if (!size) return 0;
  out[0] = '\0';
  switch (s->src) {
  case MP_SRC_LFUNC:
    if (sym) put_lua(p, sym, s->alias, s->line, out, size, &n);
    else put(out, size, &n, "LFUNC 0x%llx:%llu", (unsigned long long)s->id,
	     (unsigned long long)s->line);
    break;
  case MP_SRC_CFUNC:
    if (!sym)
      put(out, size, &n, "CFUNC 0x%llx", (unsigned long long)s->id);
    else if (s->off)
      put(out, size, &n, "%.*s+0x%llx", (int)sym->name_len, sym->name,
	  (unsigned long long)s->off);
    else
      put(out, size, &n, "%.*s", (int)sym->name_len, sym->name);
    break;
  case MP_SRC_TRACE:
    put(out, size, &n, "TRACE [%llu]", (unsigned long long)s->id);
    if (sym && sym->start) {
      put(out, size, &n, " started at ");
      put_lua(p, &p->syms.sym[sym->start], s->alias, sym->line, out, size,
	      &n);
    }
    break;
  default:
    put(out, size, &n, "INTERNAL");
    break;
  }
  return n;
}
