/*
** mp_sections.h: the sections of a report, from one mp_profile.
**
** By site: ALLOCATIONS, REALLOCATIONS and DEALLOCATIONS, each sorted, each
** reallocating or freeing site with the sites whose blocks it resized or
** freed; and the HEAP SUMMARY: per site, the blocks live at the end that
** it allocated, or resized last (the owners of the heap table), with
** their bytes, which add up to the profile's live heap exactly. Beside it,
** the summary of Tarantool's memprof parser (--accounting tarantool), so
** that both tools can print the same numbers: a site is charged with its
** allocations and with the growth of its blocks by reallocations
** anywhere, and credited with its blocks' sizes when they are freed or
** resized anywhere; a reallocated block belongs afterwards to the
** reallocating site. That one does not add up per site once a site
** resizes another's blocks (the owner is charged the growth, the resizer
** credited the free of a block it never owned).
**
** When the pass kept them (mp_profile.want), two more: PEAK, what each
** site held when the live heap was highest (blocks it allocated or
** resized last, with their bytes), and TEMPORARY, each site's blocks
** freed or resized within the window of allocations after their own
** (mp_profile.window), beside all the blocks it made. A site's stack
** nodes count for it.
*/

#ifndef MP_SECTIONS_H
#define MP_SECTIONS_H

#include <stdint.h>

#include "analysis/mp_profile.h"
#include "reader/mp_strtab.h"

typedef enum mp_sort { MP_SORT_BYTES, MP_SORT_COUNT } mp_sort;

/* A site in a section, with its links in [link0, link0 + nlink). */
typedef struct mp_row {
  uint32_t site;
  uint32_t link0, nlink;
} mp_row;

/* A line of Tarantool's heap summary: what a site was charged (cost.n allocations,
** cost.plus bytes) and credited (nfree frees, cost.minus bytes); it holds
** the difference, more than 0. */
typedef struct mp_held {
  uint32_t site;
  uint64_t nfree;
  mp_cost cost;
} mp_held;

/* A HEAP SUMMARY line: what site holds at the end (cost.n blocks of
** cost.plus bytes); a PEAK line: what it held at the peak; a TEMPORARY line: its temporary blocks (cost) and the blocks
** it allocated or resized in all (made). */
typedef struct mp_srow {
  uint32_t site;
  mp_cost cost;
  mp_cost made;
} mp_srow;

typedef struct mp_sections {
  mp_profile *p;
  mp_sort sort;
  const char **label;	/* By site; stored in labels. */
  mp_strtab labels;
  mp_row *row[MP_AEV_N];	/* Sections by event kind. */
  uint32_t nrow[MP_AEV_N];
  uint32_t *link;	/* Link indexes by kind, site, owner's label. */
  mp_srow *live;	/* HEAP SUMMARY: live at the end, by owner. */
  uint32_t nlive;
  mp_held *held;	/* Tarantool's heap summary. */
  uint32_t nheld;
  mp_srow *peak;	/* PEAK, if the pass kept it (else NULL). */
  uint32_t npeak;
  mp_srow *temp;	/* TEMPORARY, if the pass kept it (else NULL). */
  uint32_t ntemp;
  mp_cost temp_total;	/* Temporary blocks and bytes in all... */
  mp_cost made_total;	/* ...of all those made. */
} mp_sections;

/* Build the sections of p (which must outlive them), sorted by sort. Labels
** are made here (and aliases numbered) in site order. Returns 0, or -1
** when out of memory. */
int mp_sections_build(mp_sections *sec, mp_profile *p, mp_sort sort);
void mp_sections_free(mp_sections *sec);

/* The label of every site of p as the report writes it (the Lua lines of
** the sites and frames noted first, so that a line two functions have
** says which; aliases numbered in site order): (*label)[i] of site i,
** stored in store (mp_strtab_init()ed); *label malloc'd. What the report
** and every other view of the profile's sites (a snapshot's join) name
** them by. 0 or -1 (out of memory). */
int mp_site_labels(mp_profile *p, mp_strtab *store, const char ***label);

/* The links of row r to show when at most top are (0: all) into idx
** (room for r->nlink): their indexes into p->link, in render order (by
** owner's label). When there are more, the top heaviest are kept: by the
** bytes of the owner's blocks that r's site resized or freed (or by their
** number, sorted by count), then the other measure, then render order.
** Returns how many. */
uint32_t mp_row_links(const mp_sections *sec, const mp_row *r,
		      uint64_t top, uint32_t *idx);

/* Alias number of the chunk in site i's label, 0 if none. */
uint32_t mp_site_alias(const mp_sections *sec, uint32_t i);

/* Bytes a line of Tarantool's heap summary holds. */
static inline uint64_t mp_held_bytes(const mp_held *h)
{
  return h->cost.plus - h->cost.minus;
}

#endif
