/*
** mp_profile.c: aggregate a profile by site in one streaming pass.
**
** Per event the work is: decode, find the site (a 256-entry cache in front
** of the symbol and site tables; most events repeat a recent location),
** update its counters, and update the heap table. The heap table is the
** only structure touched at random, so it decides the speed.
*/

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/mp_profile.h"

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

/* Site of an event's location; SITE_MAX + 1 when out of memory. */
static inline uint32_t site_of(mp_profile *p, const mp_item *it)
{
  uint64_t h, off = 0;
  mp_lcache *c = p->lastloc;
  uint32_t sym = 0, site;
  if (c->id == it->id && c->line == it->line && c->src == it->src &&
      c->epoch == p->epoch)	/* Same place as the last event. */
    return c->site;
  /* One multiply: this is on most events' path. */
  h = ((it->id ^ (it->line << 24) ^ it->src) * 0x9e3779b97f4a7c15ull) >> 56;
  c = &p->lcache[h & (MP_LCACHE - 1)];
  if (c->epoch == p->epoch && c->id == it->id && c->line == it->line &&
      c->src == it->src) {
    p->lastloc = c;
    return c->site;
  }
  switch (it->src) {
  case MP_SRC_LFUNC:
    sym = mp_symtab_find(&p->syms, MP_K_SYM_LFUNC, it->id);
    break;
  case MP_SRC_CFUNC:
    sym = mp_symtab_find(&p->syms, MP_K_SYM_CFUNC, it->id);
    if (!sym) sym = mp_symtab_cfloor(&p->syms, it->id, &off);
    break;
  case MP_SRC_TRACE:
    sym = mp_symtab_find(&p->syms, MP_K_SYM_TRACE, it->id);
    break;
  }
  site = site_find(p, it->src, sym, it->id, it->line, off);
  if (site <= SITE_MAX) {
    c->id = it->id;
    c->line = it->line;
    c->src = it->src;
    c->site = site;
    c->epoch = p->epoch;
    p->lastloc = c;
  }
  return site;
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

/* Account a block of owner's that site resized or freed; 0 or -1. */
static int link_add(mp_profile *p, int kind, uint32_t site, uint32_t owner,
		    uint64_t alloced, uint64_t freed)
{
  uint64_t key = ((uint64_t)kind << 62) | ((uint64_t)site << 31) | owner;
  size_t j;
  mp_link *l;
  if (key == p->lastkey) {	/* Frees come in runs of one owner. */
    l = &p->link[p->lastlink];
    goto found;
  }
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
  p->lastkey = key;
  p->lastlink = (uint32_t)(l - p->link);
found:
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
  p->epoch = 1;
  p->lastloc = &p->lcache[0];	/* Epoch 0: matches nothing. */
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

/* Stop the pass for lack of memory at item it. */
static int nomem(mp_profile *p, const mp_item *it)
{
  p->r.err_offset = it->offset;
  snprintf(p->r.err, sizeof(p->r.err), "memory for the report's tables");
  return MP_ERR_NOMEM;
}

/* Aggregate one allocation event; MP_OK or MP_ERR_NOMEM. */
static inline int on_event(mp_profile *p, const mp_item *it)
{
  int k = it->kind == MP_K_ALLOC ? MP_EV_ALLOC :
	  it->kind == MP_K_REALLOC ? MP_EV_REALLOC : MP_EV_FREE;
  uint32_t si = site_of(p, it), owner;
  uint64_t size;
  mp_site *s;
  if (si > SITE_MAX) return nomem(p, it);
  s = &p->site[si];
  s->n[k]++;
  s->plus[k] += it->nsize;
  s->minus[k] += it->osize;
  p->net += it->nsize - it->osize;	/* Modulo 2^64: bad data must not trap. */
  if ((int64_t)p->net > p->peak) p->peak = (int64_t)p->net;
  if (k != MP_EV_ALLOC && mp_heap_take(&p->heap, it->oaddr, &size, &owner) &&
      link_add(p, k, si, owner, it->nsize, size) < 0)
    return nomem(p, it);
  if (k != MP_EV_FREE && it->naddr &&
      mp_heap_put(&p->heap, it->naddr, it->nsize, si) < 0)
    return nomem(p, it);
  return MP_OK;
}

/* Aggregate one decoded item; MP_OK or MP_ERR_NOMEM. */
static int on_item(mp_profile *p, const mp_item *it)
{
  if (it->kind < MP_K_SYM_LFUNC) return on_event(p, it);
  if (!mp_symtab_add(&p->syms, it)) return nomem(p, it);
  p->nsym[!it->in_header][it->kind - MP_K_SYM_LFUNC]++;
  if (++p->epoch == 0) {	/* Wrapped: forget every cached location. */
    memset(p->lcache, 0, sizeof(p->lcache));
    p->epoch = 1;
    p->lastloc = &p->lcache[0];
  }
  return MP_OK;
}

/* Items decoded per batch. While one batch is aggregated the next one is
** already decoded and its heap slots prefetched: 16 to 32 items ahead
** covers a cache miss (~100 ns) at ~10 ns per item. */
#define BATCH	16

/* Prefetch the heap slots that n items at it will touch. A macro, for
** the reason given at mp_heap_prefetch. */
#define prefetch_batch(p, it, n) \
  do { \
    size_t i_; \
    for (i_ = 0; i_ < (n); i_++) { \
      mp_kind k_ = (it)[i_].kind; \
      if (k_ == MP_K_ALLOC || k_ == MP_K_REALLOC) \
	mp_heap_prefetch(&(p)->heap, (it)[i_].naddr); \
      if (k_ == MP_K_FREE || k_ == MP_K_REALLOC) \
	mp_heap_prefetch(&(p)->heap, (it)[i_].oaddr); \
    } \
  } while (0)

int mp_profile_read(mp_profile *p, const void *data, size_t len)
{
  mp_item buf[2][BATCH];
  size_t got[2] = { 0, 0 }, mark = CONSUMED_STEP, i;
  int cur = 0, rc = mp_reader_init(&p->r, data, len), prc = MP_OK;
  p->len = len;
  if (rc == MP_OK) {
    rc = mp_reader_read(&p->r, buf[0], BATCH, &got[0]);
    prefetch_batch(p, buf[0], got[0]);
  }
  /* Items are aggregated in stream order; decoding one batch ahead
  ** changes nothing but the cache misses. */
  while (got[cur]) {
    int nxt = cur ^ 1;
    got[nxt] = 0;
    if (rc == MP_OK) {
      rc = mp_reader_read(&p->r, buf[nxt], BATCH, &got[nxt]);
      prefetch_batch(p, buf[nxt], got[nxt]);
    }
    for (i = 0; i < got[cur]; i++)
      if ((prc = on_item(p, &buf[cur][i])) != MP_OK) goto out;
    if (p->consumed && buf[cur][i - 1].offset >= mark) {
      p->consumed(p->ctx, buf[cur][i - 1].offset);
      mark = buf[cur][i - 1].offset + CONSUMED_STEP;
    }
    cur = nxt;
  }
out:
  /* Totals from the sites: cheaper than counting them per event. */
  memset(p->nev, 0, sizeof(p->nev));
  p->alloc_bytes = p->free_bytes = 0;
  for (i = 0; i < p->nsite; i++) {
    const mp_site *s = &p->site[i];
    int k;
    for (k = 0; k < MP_EV__N; k++) {
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
