/*
** mp_sections.c: sort the sites of a profile into sections and compute the
** heap summary (see mp_sections.h for the accounting).
**
** Everything here is proportional to the number of sites and links, so it
** sorts with plain qsort over small keyed records.
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_sections.h"

/* A record to sort: two keys (descending), then the label, then index. */
typedef struct sortrec {
  uint64_t k1, k2;
  const char *label;
  uint32_t idx;
} sortrec;

static int cmp_rec(const void *a, const void *b)
{
  const sortrec *x = a, *y = b;
  int c;
  if (x->k1 != y->k1) return x->k1 > y->k1 ? -1 : 1;
  if (x->k2 != y->k2) return x->k2 > y->k2 ? -1 : 1;
  if ((c = strcmp(x->label, y->label)) != 0) return c;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Links in render order: kind, site, owner's label, owner. */
static const mp_sections *link_sec;	/* qsort has no context argument. */

static int cmp_link(const void *a, const void *b)
{
  const mp_link *x = &link_sec->p->link[*(const uint32_t *)a];
  const mp_link *y = &link_sec->p->link[*(const uint32_t *)b];
  int c;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->site != y->site) return x->site < y->site ? -1 : 1;
  if ((c = strcmp(link_sec->label[x->owner], link_sec->label[y->owner])))
    return c;
  return x->owner < y->owner ? -1 : x->owner > y->owner;
}

/* Links by weight: the owner's bytes resized or freed (or their number,
** by count), then the other measure, then render order. */
static int cmp_link_weight(const void *a, const void *b)
{
  const mp_cost *x = &link_sec->p->link[*(const uint32_t *)a].cost;
  const mp_cost *y = &link_sec->p->link[*(const uint32_t *)b].cost;
  int count = link_sec->sort == MP_SORT_COUNT;
  uint64_t x1 = count ? x->n : x->minus, y1 = count ? y->n : y->minus;
  uint64_t x2 = count ? x->minus : x->n, y2 = count ? y->minus : y->n;
  if (x1 != y1) return x1 > y1 ? -1 : 1;
  if (x2 != y2) return x2 > y2 ? -1 : 1;
  return cmp_link(a, b);
}

void mp_sections_free(mp_sections *sec)
{
  int k;
  free(sec->label);
  mp_strtab_free(&sec->labels);
  for (k = 0; k < MP_AEV_N; k++) free(sec->row[k]);
  free(sec->link);
  free(sec->live);
  free(sec->held);
  free(sec->peak);
  free(sec->temp);
  memset(sec, 0, sizeof(*sec));
}

/* Sort the sites with events of kind k into sec->row[k]; 0 or -1. */
static int build_rows(mp_sections *sec, int k, sortrec *rec)
{
  const mp_profile *p = sec->p;
  uint32_t i, n = 0, l = 0;
  for (i = 0; i < p->nsite; i++) {
    mp_cost c = mp_site_cost(&p->site[i], k);
    uint64_t bytes = k == MP_AEV_FREE ? c.minus : c.plus;
    if (!c.n) continue;
    rec[n].k1 = sec->sort == MP_SORT_COUNT ? c.n : bytes;
    rec[n].k2 = sec->sort == MP_SORT_COUNT ? bytes : c.n;
    rec[n].label = sec->label[i];
    rec[n].idx = i;
    n++;
  }
  qsort(rec, n, sizeof(*rec), cmp_rec);
  if (!(sec->row[k] = calloc(n ? n : 1, sizeof(mp_row)))) return -1;
  sec->nrow[k] = n;
  for (i = 0; i < n; i++) sec->row[k][i].site = rec[i].idx;
  if (k == MP_AEV_ALLOC) return 0;
  /* Links are sorted by kind then site: find each row's range. */
  {
    uint32_t *first = malloc((size_t)p->nsite * sizeof(*first) + 1);
    uint32_t *count = calloc((size_t)p->nsite + 1, sizeof(*count));
    if (!first || !count) { free(first); free(count); return -1; }
    for (l = 0; l < p->nlink; l++) {
      const mp_link *lk = &p->link[sec->link[l]];
      if (lk->kind != k) continue;
      if (!count[lk->site]) first[lk->site] = l;
      count[lk->site]++;
    }
    for (i = 0; i < n; i++) {
      mp_row *r = &sec->row[k][i];
      r->nlink = count[r->site];
      r->link0 = r->nlink ? first[r->site] : 0;
    }
    free(first);
    free(count);
  }
  return 0;
}

/* Heap summary: Tarantool's accounting per owner; 0 or -1. */
static int build_held(mp_sections *sec, sortrec *rec)
{
  const mp_profile *p = sec->p;
  mp_held *h = calloc(p->nsite ? p->nsite : 1, sizeof(*h));
  uint32_t i, n = 0;
  if (!h) return -1;
  for (i = 0; i < p->nsite; i++) {
    mp_cost a = mp_site_cost(&p->site[i], MP_AEV_ALLOC);
    h[i].site = i;
    if (a.plus) {
      h[i].cost.plus += a.plus;
      h[i].cost.n += a.n;
    }
  }
  for (i = 0; i < p->nlink; i++) {
    const mp_link *l = &p->link[i];
    mp_held *x = &h[l->owner];
    if (l->cost.plus) { x->cost.plus += l->cost.plus; x->cost.n += l->cost.n; }
    if (l->cost.minus) { x->cost.minus += l->cost.minus; x->nfree += l->cost.n; }
  }
  for (i = 0; i < p->nsite; i++) {
    uint64_t bytes = mp_held_bytes(&h[i]);
    if ((int64_t)bytes <= 0) continue;
    rec[n].k1 = sec->sort == MP_SORT_COUNT ? h[i].cost.n : bytes;
    rec[n].k2 = sec->sort == MP_SORT_COUNT ? bytes : h[i].cost.n;
    rec[n].label = sec->label[i];
    rec[n].idx = i;
    n++;
  }
  qsort(rec, n, sizeof(*rec), cmp_rec);
  if (!(sec->held = calloc(n ? n : 1, sizeof(*sec->held)))) {
    free(h);
    return -1;
  }
  for (i = 0; i < n; i++) sec->held[i] = h[rec[i].idx];
  sec->nheld = n;
  free(h);
  return 0;
}

/* Sort the n rows of r (into *out, n of them) by cost, by the sort. */
static int sort_rows(mp_sections *sec, mp_srow *r, uint32_t n,
		     mp_srow **out, sortrec *rec)
{
  uint32_t i;
  for (i = 0; i < n; i++) {
    rec[i].k1 = sec->sort == MP_SORT_COUNT ? r[i].cost.n : r[i].cost.plus;
    rec[i].k2 = sec->sort == MP_SORT_COUNT ? r[i].cost.plus : r[i].cost.n;
    rec[i].label = sec->label[r[i].site];
    rec[i].idx = i;
  }
  qsort(rec, n, sizeof(*rec), cmp_rec);
  if (!(*out = calloc(n ? n : 1, sizeof(**out)))) return -1;
  for (i = 0; i < n; i++) (*out)[i] = r[rec[i].idx];
  return 0;
}

/* HEAP SUMMARY, and PEAK and TEMPORARY if the pass kept them, from the
** owners' records: a site's and its stack nodes'. 0 or -1. */
static int build_owned(mp_sections *sec, sortrec *rec)
{
  const mp_profile *p = sec->p;
  mp_live *by = mp_profile_by_site(p);
  mp_srow *r = calloc((size_t)p->nsite + 1, sizeof(*r));
  uint32_t i, n;
  int rc = -1;
  if (!by || !r) goto done;
  for (i = n = 0; i < p->nsite; i++)
    if (by[i].n) {
      r[n].site = i;
      r[n].cost.n = by[i].n;
      r[n++].cost.plus = by[i].bytes;
    }
  if (sort_rows(sec, r, n, &sec->live, rec) < 0) goto done;
  sec->nlive = n;
  if (!p->full || !p->slive) { rc = 0; goto done; }
  if (p->want & MP_WANT_PEAK) {
    for (i = n = 0; i < p->nsite; i++)
      if (by[i].pn) {
	r[n].site = i;
	r[n].cost.n = by[i].pn;
	r[n++].cost.plus = by[i].pbytes;
      }
    if (sort_rows(sec, r, n, &sec->peak, rec) < 0) goto done;
    sec->npeak = n;
  }
  if (p->want & MP_WANT_TEMP) {
    for (i = n = 0; i < p->nsite; i++) {
      mp_cost a = mp_site_cost(&p->site[i], MP_AEV_ALLOC);
      mp_cost b = mp_site_cost(&p->site[i], MP_AEV_REALLOC);
      mp_cost_add(&a, &b);
      a.minus = 0;
      mp_cost_add(&sec->made_total, &a);
      if (!by[i].tn) continue;
      r[n].site = i;
      r[n].cost.n = by[i].tn;
      r[n].cost.plus = by[i].tbytes;
      r[n].made = a;
      mp_cost_add(&sec->temp_total, &r[n].cost);
      n++;
    }
    if (sort_rows(sec, r, n, &sec->temp, rec) < 0) goto done;
    sec->ntemp = n;
  }
  rc = 0;
done:
  free(by);
  free(r);
  return rc;
}

/* Note the line of location l if it is a Lua function's; 0 or -1. */
static int note_line(mp_strtab *names, const mp_loc *l)
{
  return l->src == MP_SRC_LFUNC && l->name ?
	 mp_strtab_lua_line(names, l->name, l->line, l->aux) : 0;
}

/* Note the Lua lines of the sites and of the stack frames, so that labels
** of a line two functions have say which (mp_label.h): the labels of
** distinct sources are distinct. 0 or -1. */
static int note_lines(mp_profile *p)
{
  uint32_t i;
  for (i = 0; i < p->nsite; i++)
    if (note_line(&p->syms.names, &p->site[i].loc) < 0) return -1;
  for (i = 0; i < p->nnode; i++)
    if (p->node[i].kind == MP_FK_LUA &&
	note_line(&p->syms.names, &p->node[i].loc) < 0)
      return -1;
  return 0;
}

/* Label every site into label, in site order (which numbers the aliases
** in the order their chunks first had events). Sites of one chunk loaded
** many times have one label: a small cache of recent labels by hash lets
** them share a copy, so memory is a copy per label that did not repeat
** recently (a table of all of them would cost more than it saves when
** they are all different). 0 or -1. */
static int make_labels(mp_profile *p, mp_strtab *store, const char **label)
{
  enum { CACHE = 4096 };
  const char **recent = calloc(CACHE, sizeof(*recent));
  char buf[MP_LABEL_MAX];
  uint32_t i;
  if (!recent) return -1;
  for (i = 0; i < p->nsite; i++) {
    size_t n = mp_label(&p->syms.names, &p->site[i].loc, buf, sizeof(buf));
    const char **c = &recent[mp_hash_bytes(buf, n) % CACHE];
    if (!*c || strcmp(*c, buf))
      if (!(*c = mp_strtab_copy(store, buf, n + 1))) break;
    label[i] = *c;
  }
  free(recent);
  return i == p->nsite ? 0 : -1;
}

int mp_site_labels(mp_profile *p, mp_strtab *store, const char ***label)
{
  if (!(*label = calloc(p->nsite ? p->nsite : 1, sizeof(**label))))
    return -1;
  if (note_lines(p) < 0 || make_labels(p, store, *label) < 0) {
    free(*label);
    *label = NULL;
    return -1;
  }
  return 0;
}

int mp_sections_build(mp_sections *sec, mp_profile *p, mp_sort sort)
{
  sortrec *rec = NULL;
  uint32_t i;
  int k;
  memset(sec, 0, sizeof(*sec));
  sec->p = p;
  sec->sort = sort;
  mp_strtab_init(&sec->labels);
  if (mp_site_labels(p, &sec->labels, &sec->label) < 0) goto err;
  if (!(sec->link = malloc(((size_t)p->nlink + 1) * sizeof(uint32_t))))
    goto err;
  for (i = 0; i < p->nlink; i++) sec->link[i] = i;
  link_sec = sec;
  qsort(sec->link, p->nlink, sizeof(uint32_t), cmp_link);
  if (!(rec = malloc(((size_t)p->nsite + 1) * sizeof(*rec)))) goto err;
  for (k = MP_AEV_ALLOC; k < MP_AEV_N; k++)
    if (build_rows(sec, k, rec) < 0) goto err;
  if (build_held(sec, rec) < 0) goto err;
  if (build_owned(sec, rec) < 0) goto err;
  free(rec);
  return 0;
err:
  free(rec);
  mp_sections_free(sec);
  return -1;
}

uint32_t mp_row_links(const mp_sections *sec, const mp_row *r,
		      uint64_t top, uint32_t *idx)
{
  uint32_t n = r->nlink;
  memcpy(idx, sec->link + r->link0, (size_t)n * sizeof(*idx));
  if (!top || top >= n) return n;
  link_sec = sec;	/* The top heaviest, back in render order. */
  qsort(idx, n, sizeof(*idx), cmp_link_weight);
  n = (uint32_t)top;
  qsort(idx, n, sizeof(*idx), cmp_link);
  return n;
}

/* See mp_sections.h. */
uint32_t mp_site_alias(const mp_sections *sec, uint32_t i)
{
  const mp_loc *l = &sec->p->site[i].loc;
  if (!l->name || l->src == MP_SRC_CFUNC) return 0;
  return mp_strtab_get(&sec->p->syms.names, l->name)->alias;
}
