/*
** mp_report.c: sort the sites of a profile into sections and compute the
** heap summary (see mp_report.h for the accounting).
**
** Everything here is proportional to the number of sites and links, so it
** sorts with plain qsort over small keyed records.
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_sections.h"

#define LABEL_MAX	4096

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
static const mp_report *link_rep;	/* qsort has no context argument. */

static int cmp_link(const void *a, const void *b)
{
  const mp_link *x = &link_rep->p->link[*(const uint32_t *)a];
  const mp_link *y = &link_rep->p->link[*(const uint32_t *)b];
  int c;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->site != y->site) return x->site < y->site ? -1 : 1;
  if ((c = strcmp(link_rep->label[x->owner], link_rep->label[y->owner])))
    return c;
  return x->owner < y->owner ? -1 : x->owner > y->owner;
}

void mp_report_free(mp_report *rep)
{
  uint32_t i;
  for (i = 0; rep->label && i < rep->p->nsite; i++) free(rep->label[i]);
  free(rep->label);
  for (i = 0; i < MP_AEV_N; i++) free(rep->row[i]);
  free(rep->link);
  free(rep->held);
  memset(rep, 0, sizeof(*rep));
}

/* Sort the sites with events of kind k into rep->row[k]; 0 or -1. */
static int build_rows(mp_report *rep, int k, const mp_report_opts *o,
		      sortrec *rec)
{
  const mp_profile *p = rep->p;
  uint32_t i, n = 0, l = 0;
  for (i = 0; i < p->nsite; i++) {
    const mp_site *s = &p->site[i];
    uint64_t bytes = k == MP_AEV_FREE ? s->minus[k] : s->plus[k];
    if (!s->n[k]) continue;
    rec[n].k1 = o->sort == MP_SORT_COUNT ? s->n[k] : bytes;
    rec[n].k2 = o->sort == MP_SORT_COUNT ? bytes : s->n[k];
    rec[n].label = rep->label[i];
    rec[n].idx = i;
    n++;
  }
  qsort(rec, n, sizeof(*rec), cmp_rec);
  if (!(rep->row[k] = calloc(n ? n : 1, sizeof(mp_row)))) return -1;
  rep->nrow[k] = n;
  for (i = 0; i < n; i++) rep->row[k][i].site = rec[i].idx;
  if (k == MP_AEV_ALLOC) return 0;
  /* Links are sorted by kind then site: find each row's range. */
  {
    uint32_t *first = malloc((size_t)p->nsite * sizeof(*first) + 1);
    uint32_t *count = calloc((size_t)p->nsite + 1, sizeof(*count));
    if (!first || !count) { free(first); free(count); return -1; }
    for (l = 0; l < p->nlink; l++) {
      const mp_link *lk = &p->link[rep->link[l]];
      if (lk->kind != k) continue;
      if (!count[lk->site]) first[lk->site] = l;
      count[lk->site]++;
    }
    for (i = 0; i < n; i++) {
      mp_row *r = &rep->row[k][i];
      r->nlink = count[r->site];
      r->link0 = r->nlink ? first[r->site] : 0;
    }
    free(first);
    free(count);
  }
  return 0;
}

/* Heap summary: Tarantool's accounting per owner; 0 or -1. */
static int build_held(mp_report *rep, const mp_report_opts *o, sortrec *rec)
{
  const mp_profile *p = rep->p;
  mp_held *h = calloc(p->nsite ? p->nsite : 1, sizeof(*h));
  uint32_t i, n = 0;
  if (!h) return -1;
  for (i = 0; i < p->nsite; i++) {
    const mp_site *s = &p->site[i];
    h[i].site = i;
    if (s->plus[MP_AEV_ALLOC]) {
      h[i].bytes += s->plus[MP_AEV_ALLOC];
      h[i].nalloc += s->n[MP_AEV_ALLOC];
    }
  }
  for (i = 0; i < p->nlink; i++) {
    const mp_link *l = &p->link[i];
    mp_held *x = &h[l->owner];
    /* Bytes wrap modulo 2^64 on absurd data; read as signed below. */
    if (l->alloced) { x->bytes += l->alloced; x->nalloc += l->count; }
    if (l->freed) { x->bytes -= l->freed; x->nfree += l->count; }
  }
  for (i = 0; i < p->nsite; i++) {
    if ((int64_t)h[i].bytes <= 0) continue;
    rec[n].k1 = o->sort == MP_SORT_COUNT ? h[i].nalloc : h[i].bytes;
    rec[n].k2 = o->sort == MP_SORT_COUNT ? h[i].bytes : h[i].nalloc;
    rec[n].label = rep->label[i];
    rec[n].idx = i;
    n++;
  }
  qsort(rec, n, sizeof(*rec), cmp_rec);
  if (!(rep->held = calloc(n ? n : 1, sizeof(*rep->held)))) {
    free(h);
    return -1;
  }
  for (i = 0; i < n; i++) rep->held[i] = h[rec[i].idx];
  rep->nheld = n;
  free(h);
  return 0;
}

int mp_report_build(mp_report *rep, const mp_profile *p,
		    const mp_report_opts *o)
{
  char buf[LABEL_MAX];
  sortrec *rec = NULL;
  uint32_t i;
  int k;
  memset(rep, 0, sizeof(*rep));
  rep->p = p;
  if (!(rep->label = calloc(p->nsite ? p->nsite : 1, sizeof(char *))))
    goto err;
  for (i = 0; i < p->nsite; i++) {
    size_t n = mp_profile_label(p, i, buf, sizeof(buf));
    if (!(rep->label[i] = malloc(n + 1))) goto err;
    memcpy(rep->label[i], buf, n + 1);
  }
  if (!(rep->link = malloc(((size_t)p->nlink + 1) * sizeof(uint32_t))))
    goto err;
  for (i = 0; i < p->nlink; i++) rep->link[i] = i;
  link_rep = rep;
  qsort(rep->link, p->nlink, sizeof(uint32_t), cmp_link);
  if (!(rec = malloc(((size_t)p->nsite + 1) * sizeof(*rec)))) goto err;
  for (k = 1; k < MP_AEV_N; k++)
    if (build_rows(rep, k, o, rec) < 0) goto err;
  if (build_held(rep, o, rec) < 0) goto err;
  free(rec);
  return 0;
err:
  free(rec);
  mp_report_free(rep);
  return -1;
}
