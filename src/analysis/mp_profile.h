/*
** mp_profile.h: one pass over a profile into per-source aggregates.
**
** The model every renderer works from. A *site* is where events come from:
** a Lua function's line, a C function, a JIT trace, or the VM's internals,
** identified by the raw location plus the symbol definition in force (so a
** prototype or trace number reused by a different object is a new site).
** For every site and event kind the pass counts events and bytes; for
** reallocations and frees it links the site to the sites that owned the
** blocks it resized or freed (Tarantool's "Overrides"). Memory grows with
** live blocks (mp_heap), distinct sites and distinct (site, owner) links,
** never with the number of events.
*/

#ifndef MP_PROFILE_H
#define MP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "format/mp_format.h"
#include "analysis/mp_heap.h"
#include "reader/mp_symtab.h"

/* mp_profile_read() result beyond the reader's codes. */
#define MP_ERR_NOMEM	(-3)	/* Out of memory for the aggregates. */

/* Where events come from, and what they did there. */
typedef struct mp_site {
  uint64_t id;		/* Raw location: proto/C address or trace number. */
  uint64_t line;	/* Lua line, else 0. */
  uint64_t off;		/* C function: offset from its symbol (floor). */
  uint32_t sym;		/* Serial of the symbol in force, 0 if none. */
  uint32_t alias;	/* Alias number of the chunk in the label, or 0. */
  uint8_t src;		/* MP_SRC_*. */
  uint64_t n[MP_AEV_N];		/* Events by kind (MP_AEV_*). */
  uint64_t plus[MP_AEV_N];	/* New sizes (alloc, realloc). */
  uint64_t minus[MP_AEV_N];	/* Old sizes (realloc, free). */
} mp_site;

/* Blocks owned by site `owner` that site `site` resized or freed. The sizes
** are those of the blocks as the owner left them (Tarantool's accounting). */
typedef struct mp_link {
  uint32_t site, owner;
  uint8_t kind;		/* MP_AEV_REALLOC or MP_AEV_FREE. */
  uint64_t count;	/* Blocks. */
  uint64_t alloced;	/* Their new sizes (realloc). */
  uint64_t freed;	/* Their sizes before the event. */
} mp_link;

/* A chunk name that is source text, shown as "function_alias_N". */
typedef struct mp_alias {
  const char *text;	/* Points into the stream's bytes. */
  size_t len;
  uint32_t hash;
} mp_alias;

/* Location -> site cache entry. */
typedef struct mp_lcache {
  uint64_t id, line;
  uint64_t tag;		/* epoch << 8 | src; 0 = empty (epochs start at 1). */
  uint32_t site;
} mp_lcache;

#define MP_LCACHE	256

/* Link key -> link cache entry (direct-mapped). */
typedef struct mp_lmru {
  uint64_t key;		/* See link_note(); 0 = empty. */
  uint32_t link;	/* Index in link[]. */
} mp_lmru;

#define MP_LMRU		64

typedef struct mp_profile {
  mp_reader r;
  mp_symtab syms;
  mp_heap heap;
  mp_site *site;	/* Sites in order of first event. */
  uint32_t nsite, capsite;
  uint32_t *smap;	/* Site hash: index + 1, 0 = empty. */
  size_t smask;
  mp_link *link;
  uint32_t nlink, caplink;
  uint64_t *lkey;	/* Link hash: packed key, 0 = empty. */
  uint32_t *lval;
  size_t lmask;
  mp_lmru lmru[MP_LMRU];	/* Recently used links. */
  mp_alias *alias;	/* alias[0] unused; numbers start at 1. */
  uint32_t nalias, capalias;
  uint32_t *amap;	/* Alias hash: number, 0 = empty. */
  size_t amask;
  mp_lcache lcache[MP_LCACHE];
  uint32_t epoch;	/* Bumped by every symbol: flushes lcache. */
  uint32_t internal;	/* Site of MP_SRC_INTERNAL + 1, 0 until known. */
  /* Totals. */
  uint64_t nev[MP_AEV_N];	/* Events by kind. */
  uint64_t nsym[2][MP_SRC_N];	/* Symbols by source >> MP_SRC_SHIFT: [0] in
				   the symtab header, [1] inside events. */
  uint64_t alloc_bytes;	/* Sum of new sizes. */
  uint64_t free_bytes;	/* Sum of old sizes. */
  uint64_t net;		/* Running alloc - free (read it as int64_t). */
  int64_t peak;		/* Its maximum, at least 0. */
  /* Outcome of mp_profile_read(). */
  int rc;		/* MP_END, MP_ERR_TRUNC, MP_ERR_DATA, MP_ERR_NOMEM. */
  size_t len;		/* Bytes in the stream. */
  /* Called with the offset read so far every few MiB (may be NULL), e.g.
  ** to let the kernel drop mapped pages already read. */
  void (*consumed)(void *ctx, size_t off);
  void *ctx;
} mp_profile;

void mp_profile_init(mp_profile *p);
void mp_profile_free(mp_profile *p);

/* Read a whole stream of len bytes at data (which must outlive p: names
** point into it). Returns and stores in p->rc: MP_END (complete),
** MP_ERR_TRUNC (everything before p->r.err_offset is aggregated),
** MP_ERR_DATA or MP_ERR_NOMEM; p->r.err_offset and p->r.err say where
** and what was expected. */
int mp_profile_read(mp_profile *p, const void *data, size_t len);

/* Write the label of site i into out (NUL-terminated, truncated to size):
** "INTERNAL", "@app.lua:12", "function_alias_1:3", "TRACE [3] started at
** @app.lua:41", "json_encode", "lj_tab_new+0x1c", "CFUNC 0x7f00...". */
size_t mp_profile_label(const mp_profile *p, uint32_t i, char *out,
			size_t size);

/* Non-zero if a chunk name is source text that gets an alias: it does not
** start with '@' (a file) or '=' (a description), or has a newline. */
int mp_chunk_is_text(const char *name, size_t len);

#endif
