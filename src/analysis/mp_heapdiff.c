/*
** mp_heapdiff.c: what changed between two heap snapshots (see
** mp_heapdiff.h).
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_heapdiff.h"
#include "util/mp_hash.h"

#define NONE	MP_SNAP_NONE
#define PATH_MAX_	1024

void mp_heapdiff_free(mp_heapdiff *d)
{
  uint32_t i;
  for (i = 0; i < d->ncls; i++) free(d->cls[i].path);
  free(d->cls);
  memset(d, 0, sizeof(*d));
}

/* A class of one side, while summing. */
typedef struct side {
  mp_heapcount live, added, gone;	/* added: B; gone: A. */
  int64_t resized;	/* B: the change of its kept members. */
  uint32_t kept;	/* A member the other side holds too, or NONE. */
  uint32_t pair;	/* The entry it went into, or NONE. */
  uint8_t type, seen;
} side;

/* One snapshot's classes. */
typedef struct sideset {
  const mp_heapsnap *h;
  uint32_t *cls, *rep, nc;
  side *c;
} sideset;

static int sides(sideset *s, const mp_heapsnap *h, unsigned fold)
{
  uint32_t i;
  s->h = h;
  if (mp_heapsnap_class_map(h, fold, &s->cls, &s->rep, &s->nc) < 0)
    return -1;
  if (!(s->c = calloc(s->nc ? s->nc : 1, sizeof(*s->c)))) return -1;
  for (i = 0; i < s->nc; i++) s->c[i].kept = s->c[i].pair = NONE;
  for (i = 1; i < h->sn->n; i++) {
    side *x;
    if (s->cls[i] == NONE) continue;
    x = &s->c[s->cls[i]];
    if (!x->seen) x->type = h->sn->type[i];
    else if (x->type != h->sn->type[i]) x->type = 0;
    x->seen = 1;
    x->live.count++;
    x->live.bytes += h->sn->size[i];
  }
  return 0;
}

static void sides_free(sideset *s)
{
  free(s->cls);
  free(s->rep);
  free(s->c);
}

/* Entries: changed classes, paired across the sides. */
typedef struct entries {
  mp_heapdiff_class *e;
  uint32_t n, cap;
  mp_hash bypath;	/* Hash of a path -> entry. */
} entries;

/* The entry of path (made if new, or NONE out of memory). */
static uint32_t entry(entries *t, const char *path, uint8_t type)
{
  uint64_t hk = mp_hash_bytes(path, strlen(path));
  mp_hash_iter it;
  uint32_t *v;
  for (v = mp_hash_first(&t->bypath, hk, &it); v;
       v = mp_hash_next(&t->bypath, &it))
    if (!strcmp(t->e[*v].path, path)) return *v;
  if (t->n == t->cap) {
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    mp_heapdiff_class *q = realloc(t->e, (size_t)cap * sizeof(*q));
    if (!q) return NONE;
    t->e = q;
    t->cap = cap;
  }
  memset(&t->e[t->n], 0, sizeof(t->e[t->n]));
  if (!(t->e[t->n].path = strdup(path)) ||
      mp_hash_insert(&t->bypath, hk, t->n) < 0) {
    free(t->e[t->n].path);
    return NONE;
  }
  t->e[t->n].type = type;
  return t->n++;
}

/* Put class c of side s (0: A, 1: B) into the entry of its path. */
static int put(entries *t, sideset *s, int which, uint32_t c, unsigned fold)
{
  char path[PATH_MAX_];
  side *x = &s->c[c];
  mp_heapdiff_class *e;
  uint32_t k;
  if (x->pair != NONE) return 0;
  mp_heapsnap_path(s->h, s->rep[c], fold, path, sizeof(path));
  if ((k = entry(t, path, x->type)) == NONE) return -1;
  x->pair = k;
  e = &t->e[k];
  /* Paths cut in the middle may meet: sums, not copies. */
  e->live[which].count += x->live.count;
  e->live[which].bytes += x->live.bytes;
  if (which) {
    e->added.count += x->added.count;
    e->added.bytes += x->added.bytes;
  } else {
    e->gone.count += x->gone.count;
    e->gone.bytes += x->gone.bytes;
  }
  if (e->type != x->type) e->type = 0;
  return 0;
}

/* Net bytes of an entry, B less A. */
static int64_t net(const mp_heapdiff_class *e)
{
  return (int64_t)(e->live[1].bytes - e->live[0].bytes);
}

static const mp_heapdiff_class *by_growth_e;	/* qsort's context; the
						   reader is one thread. */

/* Entries by the growth of their bytes, then by new members, then in the
** order they were made. */
static int by_growth(const void *pa, const void *pb)
{
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  const mp_heapdiff_class *x = &by_growth_e[a], *y = &by_growth_e[b];
  if (net(x) != net(y)) return net(x) > net(y) ? -1 : 1;
  if (x->added.count != y->added.count)
    return x->added.count > y->added.count ? -1 : 1;
  return a < b ? -1 : a > b;
}

int mp_heapdiff_build(mp_heapdiff *d, const mp_heapsnap *ha,
		      const mp_heapsnap *hb, unsigned fold, uint32_t n)
{
  const mp_snapshot *a = ha->sn, *b = hb->sn;
  mp_hash byaddr;
  uint32_t *ab = malloc((size_t)(a->n ? a->n : 1) * sizeof(*ab));
  uint32_t i, j, *top = NULL, got = 0;
  sideset sa, sb;
  entries t;
  int rc = -1;
  memset(d, 0, sizeof(*d));
  memset(&sa, 0, sizeof(sa));
  memset(&sb, 0, sizeof(sb));
  memset(&t, 0, sizeof(t));
  mp_hash_init_map(&byaddr);
  mp_hash_init_map(&t.bypath);
  if (!ab || mp_hash_reserve(&byaddr, a->n) < 0 || sides(&sa, ha, fold) < 0 ||
      sides(&sb, hb, fold) < 0)
    goto out;
  for (i = 0; i < a->n; i++) ab[i] = NONE;
  for (i = 1; i < a->n; i++) {
    d->live[0][a->type[i]].count++;
    d->live[0][a->type[i]].bytes += a->size[i];
    /* Two objects at one address: a damaged file; the first counts. */
    if (mp_hash_put(&byaddr, a->addr[i], i) < 0) goto out;
  }
  /* Match B's objects with A's, summing what is new and resized. */
  for (i = 1; i < b->n; i++) {
    uint32_t *v = mp_hash_get(&byaddr, b->addr[i]), t_ = b->type[i];
    side *x = sb.cls[i] != NONE ? &sb.c[sb.cls[i]] : NULL;
    int64_t delta;
    d->live[1][t_].count++;
    d->live[1][t_].bytes += b->size[i];
    if (!v || ab[*v] != NONE || a->type[*v] != t_) {
      d->added[t_].count++;
      d->added[t_].bytes += b->size[i];
      if (x) { x->added.count++; x->added.bytes += b->size[i]; }
      continue;
    }
    ab[*v] = i;
    if (x && x->kept == NONE) x->kept = *v;
    if (sa.cls[*v] != NONE && sa.c[sa.cls[*v]].kept == NONE)
      sa.c[sa.cls[*v]].kept = i;
    delta = (int64_t)b->size[i] - (int64_t)a->size[*v];
    if (delta) {
      d->resized++;
      d->resized_bytes += delta;
      if (x) x->resized += delta;
    }
  }
  for (i = 1; i < a->n; i++)
    if (ab[i] == NONE) {
      d->gone[a->type[i]].count++;
      d->gone[a->type[i]].bytes += a->size[i];
      if (sa.cls[i] != NONE) {
	sa.c[sa.cls[i]].gone.count++;
	sa.c[sa.cls[i]].gone.bytes += a->size[i];
      }
    }
  for (i = 0; i < MP_HT__MAX; i++) {
    d->total[0].count += d->live[0][i].count;
    d->total[0].bytes += d->live[0][i].bytes;
    d->total[1].count += d->live[1][i].count;
    d->total[1].bytes += d->live[1][i].bytes;
    d->added_all.count += d->added[i].count;
    d->added_all.bytes += d->added[i].bytes;
    d->gone_all.count += d->gone[i].count;
    d->gone_all.bytes += d->gone[i].bytes;
  }
  /* The changed classes of each side, each with the other side's class
  ** of the same path: through a member both hold (then its class on the
  ** other side, if its path is the same: the entry by path joins them),
  ** else by the path alone. */
  for (i = 0; i < sb.nc; i++) {
    side *x = &sb.c[i];
    if (!x->added.count && !x->resized) continue;
    if (put(&t, &sb, 1, i, fold) < 0) goto out;
    if (x->kept != NONE && sa.cls[x->kept] != NONE &&
	put(&t, &sa, 0, sa.cls[x->kept], fold) < 0)
      goto out;
  }
  for (i = 0; i < sa.nc; i++) {
    side *x = &sa.c[i];
    if (!x->gone.count) continue;
    if (put(&t, &sa, 0, i, fold) < 0) goto out;
    if (x->kept != NONE && sb.cls[x->kept] != NONE &&
	put(&t, &sb, 1, sb.cls[x->kept], fold) < 0)
      goto out;
  }
  /* A class put from a kept member whose path differs made an entry of
  ** its own that did not change: drop those. The n that grew most (a
  ** sort: n may be all of a million). */
  if (!(top = malloc((size_t)(t.n ? t.n : 1) * sizeof(*top)))) goto out;
  for (i = 0, j = 0; i < t.n; i++) {
    const mp_heapdiff_class *e = &t.e[i];
    if (e->added.count || e->gone.count ||
	e->live[0].bytes != e->live[1].bytes)
      top[j++] = i;
  }
  by_growth_e = t.e;
  qsort(top, j, sizeof(*top), by_growth);
  got = j < n ? j : n;
  d->morecls = j - got;
  if (!(d->cls = calloc(got ? got : 1, sizeof(*d->cls)))) goto out;
  for (i = 0; i < got; i++) {
    d->cls[i] = t.e[top[i]];
    t.e[top[i]].path = NULL;	/* Now d's. */
  }
  d->ncls = got;
  rc = 0;
out:
  for (i = 0; i < t.n; i++) free(t.e[i].path);
  free(t.e);
  mp_hash_free(&t.bypath);
  if (rc < 0) mp_heapdiff_free(d);
  mp_hash_free(&byaddr);
  sides_free(&sa);
  sides_free(&sb);
  free(ab);
  free(top);
  return rc;
}
