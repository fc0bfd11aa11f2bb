/*
** mp_sections.h: the sections of a report, from one mp_profile.
**
** By site: ALLOCATIONS, REALLOCATIONS and DEALLOCATIONS, each sorted, each
** reallocating or freeing site with the sites whose blocks it resized or
** freed; and the HEAP SUMMARY: per site, what it allocated and what of it
** was not freed within the profile. The summary keeps the accounting of
** Tarantool's memprof parser so both tools print the same numbers: a site
** is charged with its allocations and with the growth of its blocks by
** reallocations anywhere, and credited with its blocks' sizes when they
** are freed or resized anywhere; a reallocated block belongs afterwards to
** the reallocating site.
*/

#ifndef MP_SECTIONS_H
#define MP_SECTIONS_H

#include <stdint.h>

#include "analysis/mp_profile.h"

typedef enum mp_sort { MP_SORT_BYTES, MP_SORT_COUNT } mp_sort;

typedef struct mp_report_opts {
  mp_sort sort;		/* Bytes (default) or number of events. */
  uint64_t top;		/* Rows per section; 0 = all. */
  int leak_only;	/* Only the heap summary. */
  int human;		/* Sizes as KiB, MiB, ... (text only). */
} mp_report_opts;

/* A site in a section, with its links in [link0, link0 + nlink). */
typedef struct mp_row {
  uint32_t site;
  uint32_t link0, nlink;
} mp_row;

/* A heap summary line: bytes > 0. */
typedef struct mp_held {
  uint32_t site;
  uint64_t bytes;
  uint64_t nalloc, nfree;
} mp_held;

typedef struct mp_report {
  const mp_profile *p;
  char **label;		/* By site. */
  mp_row *row[MP_AEV_N];	/* Sections by event kind. */
  uint32_t nrow[MP_AEV_N];
  uint32_t *link;	/* Link indexes by kind, site, owner's label. */
  mp_held *held;
  uint32_t nheld;
} mp_report;

/* Build the report of p (which must outlive it). Returns 0, or -1 when out
** of memory. */
int mp_report_build(mp_report *rep, const mp_profile *p,
		    const mp_report_opts *o);
void mp_report_free(mp_report *rep);

#endif
