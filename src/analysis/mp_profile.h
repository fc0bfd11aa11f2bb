/*
** mp_profile.h: one pass over a profile into per-source aggregates.
**
** The model every analysis and renderer works from. A *site* is where
** events come from: a Lua function's line, a C function, a JIT trace, or
** the VM's internals, told apart by the code they name (mp_loc in
** mp_label.h): the same line of code run by several prototypes (a chunk
** loaded again) is one site, and a prototype address or trace number
** reused by different code makes a new one. For every site and event kind
** the pass
** sums the events' cost (mp_cost); for reallocations and frees it links
** the site to the sites that owned the blocks it resized or freed
** (Tarantool's "Overrides"). Memory grows with live blocks (mp_heap),
** distinct sites, distinct (site, owner) links and distinct names, never
** with the number of events or of symbols.
**
** Every pass finds the peak: the moment when the bytes allocated within
** the profile and not yet freed (the blocks of the heap table) were
** highest, after which event, and when (between the time marks around
** it). Asked for more (mp_profile.want), the pass keeps, per owner of
** blocks (a site, or a stack node), the blocks it holds as they change,
** which gives what it held at the peak without a snapshot per event: a
** new peak only bumps an epoch, and an owner saves its values the first
** time they change after that (a lazy snapshot, O(1) an event). It can
** also age blocks (temporaries: blocks freed within a window of
** allocations after their own) and follow the heap over time
** (mp_timeline.h). In a sampled profile (the agent's "sample" setting)
** every sum is weighted by what the recorded block stands for
** (mp_sample.h). The extra work is in other instances of the loop over
** events (one with the owners' records, one with the weights too), so a
** plain report does not pay for it.
**
** Errors: mp_profile_read() returns how the stream ended (MP_END) or why
** the pass stopped (MP_ERR_*); everything decoded before that is
** aggregated, and p->r says where and what was expected.
*/

#ifndef MP_PROFILE_H
#define MP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "format/mp_format.h"
#include "reader/mp_input.h"
#include "reader/mp_label.h"
#include "reader/mp_symtab.h"
#include "analysis/mp_cost.h"
#include "analysis/mp_heap.h"
#include "analysis/mp_timeline.h"

#define MP_ERR_NOMEM	(-3)	/* Out of memory for the aggregates. */
#define MP_SMALL_BITS	24	/* Sizes below 16 MiB: see big_plus. */

/* Where events come from, and what they cost there, by event kind: the
** fields of an mp_cost (mp_site_cost()) as three arrays, so that the pass
** reaches each with one scaled index. */
typedef struct mp_site {
  mp_loc loc;
  uint64_t n[MP_AEV_N];		/* Events. */
  uint64_t plus[MP_AEV_N];	/* New sizes (alloc, realloc). */
  uint64_t minus[MP_AEV_N];	/* Old sizes (realloc, free). */
} mp_site;

/* What the events of kind k cost at site s. */
static inline mp_cost mp_site_cost(const mp_site *s, int k)
{
  mp_cost c;
  c.n = s->n[k];
  c.plus = s->plus[k];
  c.minus = s->minus[k];
  return c;
}

/* Whether site s is a source the report lists: it allocated, resized or
** freed (a site made for a frame of a call stack may have no event of
** its own: a caller). */
static inline int mp_site_has_events(const mp_site *s)
{
  return (s->n[MP_AEV_ALLOC] | s->n[MP_AEV_REALLOC] | s->n[MP_AEV_FREE]) != 0;
}

/* Blocks owned by site `owner` that site `site` resized or freed. The sizes
** are those of the blocks as the owner left them (Tarantool's accounting):
** cost.n blocks, cost.plus their new sizes (realloc), cost.minus their
** sizes before the event. */
typedef struct mp_link {
  uint32_t site, owner;
  uint8_t kind;		/* MP_AEV_REALLOC or MP_AEV_FREE. */
  mp_cost cost;
} mp_link;

/* A node of a profile with call stacks (the extension's MP_X_NODE): a
** frame under its parent, resolved against the symbols in force when it
** was read, and what its events cost. */
typedef struct mp_pnode {
  mp_loc loc;		/* Lua, C, trace, host (a C location at 0): where;
			   builtin: id its ffid, name its name; cut: id the
			   depth limit (src 0 for both). */
  mp_cost alloc;	/* Self: allocation and reallocation events, their
			   new sizes. */
  uint32_t parent;	/* Parent's id, 0 if none. */
  uint32_t site;	/* The site its events are billed to: where the
			   one-frame mode would bill them. */
  uint8_t kind;		/* MP_FK_*. */
  uint8_t intrace;	/* A trace, or a frame it inlined or its line. */
} mp_pnode;

/* Owners in the heap table: a site, or a node (this bit, and its id). */
#define MP_OWNER_NODE	0x80000000u

/* Which heap a pass aggregates (mp_profile.heapsel, report --heap). */
#define MP_HEAPSEL_ALL		0
#define MP_HEAPSEL_VM		1	/* The VM's heap only. */
#define MP_HEAPSEL_NATIVE	2	/* Native memory only. */

/* What a pass computes beyond the report (mp_profile.want). */
#define MP_WANT_PEAK	1	/* Per owner: what it held at the peak. */
#define MP_WANT_TEMP	2	/* Per owner: temporary blocks. */
#define MP_WANT_TIMELINE 4	/* The heap over time. */

/* A block is temporary if it is freed (or resized) before this many more
** allocations or reallocations were made after it (mp_profile.window). */
#define MP_TEMP_WINDOW	10000

/* The blocks of one owner (a site, or a stack node): those it allocated,
** or resized last, that are live. */
typedef struct mp_live {
  uint64_t n, bytes;	/* Live now; after the pass, at the end. */
  uint64_t pn, pbytes;	/* At the peak: saved while stamp is the
			   profile's pepoch; after the pass, always. */
  uint64_t tn, tbytes;	/* Its blocks that were temporary. */
  uint64_t stamp;
} mp_live;

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

#define MP_SNAPMARKS	16	/* Snapshot marks kept (mp_profile.snaps). */

typedef struct mp_profile {
  mp_reader r;
  mp_symtab syms;
  mp_heap heap;
  mp_site *site;	/* Sites in order of first event. */
  uint32_t nsite, capsite;
  mp_hash smap;		/* Site records by hash of their location. */
  mp_link *link;
  uint32_t nlink, caplink;
  mp_hash lmap;		/* Packed (kind, site, owner) -> link. */
  /* The two caches start on cache lines, so that no entry straddles two
  ** (that alone cost a twentieth of the time of a binary-trees profile). */
  mp_lmru lmru[MP_LMRU] __attribute__((aligned(64)));	/* Recent links. */
  mp_lcache lcache[MP_LCACHE] __attribute__((aligned(64)));
  uint32_t epoch;	/* Bumped by every symbol: flushes lcache. */
  uint32_t internal;	/* Site of MP_SRC_INTERNAL + 1, 0 until known. */
  mp_pnode *node;	/* Stack nodes by id - 1 (the extension). */
  uint32_t nnode, capnode;
  unsigned stacks;	/* Frames the agent recorded at most (its "stacks"
			   setting), 0 without stacks. */
  double sample;	/* Mean bytes between samples (its "sample"
			   setting), 0 if every event was recorded; a
			   merge: of the last sampled profile. */
  double *rates;	/* A merge: the "sample" of each profile (0: not
			   sampled), in the order merged; else NULL. */
  /* Notes at the end (mp_ext.h). */
  int native;		/* 1: recorded with native memory (the setting
			   "native"; a merge: any profile was). */
  int collect;		/* 1: a full collection ran before the end. */
  int settled;		/* 1: none ran, but the heap at the end was as
			   a finished cycle left it, nothing allocated
			   since (the note "settled"; a merge: of every
			   profile, collected or settled). */
  int exited;		/* 1: a collection was asked for but the process
			   exited with the Lua state open (the note
			   "uncollected" = "exit"; a merge: any). */
  unsigned closefin;	/* Userdata finalisers lua_close() ran before the
			   recording ended (their frees are in it). */
  uint64_t native_unseen;	/* Frees and resizes of native blocks not
				   seen allocated (made before the start):
				   no event (0 when sampled: not counted);
				   a merge: the sum. */
  uint64_t native_lost;	/* Native events the agent could not keep
			   (out of memory, or the other threads' queue
			   full; the native figures are short by them);
			   a merge: the sum. */
  int gcstart;		/* 1: past the start of that collection (its
			   frees are no temporaries). */
  char stopped[64];	/* Why recording stopped early, or "". */
  /* What the final collection freed (the frees after its start) of the
  ** blocks made within the profile, by the site that made them: what was
  ** no longer reachable at the end, the main chunk's locals among it. */
  mp_cost *gcfree;	/* n blocks, plus bytes; by site, ngcfree of them
			   (sites past it freed none). */
  uint32_t ngcfree, capgcfree;
  /* Heap snapshots taken while recording (MP_X_INFO "snapshot"): after
  ** which event, and the numbers of the snapshot's trailer. */
  struct mp_snapmark {
    uint64_t ev, objects, bytes, total;
    int cut;
    char name[64];	/* The file's name, as the agent cut it. */
  } snaps[MP_SNAPMARKS];
  unsigned nsnap;	/* Marks met (those past MP_SNAPMARKS not kept). */
  /* Called at each mark, the events before it aggregated (the heap table
  ** as the snapshot saw the heap): mp_snapjoin.c. */
  void (*on_snap)(void *ctx, struct mp_profile *p,
		  const struct mp_snapmark *m);
  void *snap_ctx;
  /* What the pass computes beyond the report (set before it). */
  unsigned want;	/* MP_WANT_*. */
  unsigned heapsel;	/* MP_HEAPSEL_*: the events aggregated (the
			   others are skipped as if not in the stream). */
  uint64_t rss, rss_max;	/* The process's RSS: the last, the largest
				   (MP_X_RSS of native profiles)... */
  uint32_t nrss;		/* ...and how many the stream has. */
  uint64_t mcode;	/* The JIT's machine code mapped: the last
			   (MP_X_MCODE)... */
  uint32_t nmcode;	/* ...and how many the stream has. */
  uint32_t window;	/* Temporaries: MP_TEMP_WINDOW unless set. */
  int full;		/* The pass keeps blocks by owner (want or
			   sample). */
  mp_live *slive;	/* By site and by node (a full pass; after any
			   pass: n and bytes at the end). */
  mp_live *nlive;
  uint32_t capslive, capnlive;
  uint64_t live_n, live_bytes;	/* Live blocks (weighted when sampled). */
  uint64_t nev;		/* Events so far. */
  uint64_t recorded[MP_AEV_N];	/* A sampled profile: events recorded, by
				   kind (total[] has the estimates). */
  uint32_t nalloc;	/* Allocation events so far (estimated, if
			   sampled), modulo 2^32: the stamp of a block
			   (temporaries). */
  uint64_t pepoch;	/* Bumped at every new peak (lazy snapshots). */
  /* The peak: live_bytes at its highest, after the first event that
  ** reached it; the marks around that moment. */
  uint64_t peak_bytes, peak_blocks, peak_ev;
  mp_tmark peak_before, peak_after;
  int peak_wait;	/* peak_after not seen yet. */
  mp_tmark mark;	/* The last time mark; */
  uint64_t nmark;	/* marks seen. */
  mp_timeline *tl;	/* MP_WANT_TIMELINE, or NULL. */
  uint32_t merged;	/* Profiles merged into this one (mp_merge.h),
			   0 for one read from a stream. */
  /* Totals. */
  mp_cost total[MP_AEV_N];	/* By event kind. */
  uint64_t nsym[2][MP_SRC_N];	/* Symbols by source >> MP_SRC_SHIFT: [0] in
				   the symtab header, [1] inside events. */
  uint64_t net;		/* Running alloc - free (read it as int64_t). */
  int64_t peak;		/* Its maximum, at least 0. */
  /* Sizes of 2^MP_SMALL_BITS or more, summed exactly. Smaller ones cost
  ** one test an event: their sum is below their number times that, which
  ** is enough to prove that no byte counter wrapped (for fewer than 2^39
  ** events). */
  unsigned __int128 big_plus, big_minus;
  int overflow;		/* Sizes may sum to 2^63 or more: byte counters and
			   their differences may have wrapped. */
  /* Outcome of mp_profile_read(). */
  int rc;		/* MP_END or an MP_ERR_* code. */
  size_t len;		/* Bytes of the input read. */
} mp_profile;

void mp_profile_init(mp_profile *p);
void mp_profile_free(mp_profile *p);

/* Read the stream of in to its end or to the first error. Returns and
** stores in p->rc: MP_END (complete), MP_ERR_TRUNC (the data ends early),
** MP_ERR_DATA (bytes that are not a stream), MP_ERR_IO (a read failed),
** MP_ERR_NOMEM; in every case what came before p->r.err_offset is
** aggregated, and p->r.err says what was expected there. The stream is a
** profile at all only if mp_reader_is_profile(&p->r). */
int mp_profile_read_input(mp_profile *p, mp_input *in);

/* The same over len bytes in memory at data. */
int mp_profile_read(mp_profile *p, const void *data, size_t len);

/* The site that owns a block, from its owner in the heap table. */
static inline uint32_t mp_owner_site(const mp_profile *p, uint32_t owner)
{
  return owner & MP_OWNER_NODE ? p->node[(owner & ~MP_OWNER_NODE) - 1].site
			       : owner;
}

/* The owners' records by site (calloc'd, nsite of them; free it): a
** site's own with those of the stack nodes billed to it. NULL when out of
** memory. */
mp_live *mp_profile_by_site(const mp_profile *p);

/* The site of location l in p, made if it is new (with its owner record
** if p->full); UINT32_MAX when out of memory. */
uint32_t mp_profile_site(mp_profile *p, const mp_loc *l);

/* Add cost c to the link of kind (MP_AEV_REALLOC or _FREE) from site to
** owner (a site), made if new; 0, or -1 when out of memory. */
int mp_profile_add_link(mp_profile *p, int kind, uint32_t site,
			uint32_t owner, const mp_cost *c);

/* Note that the final collection freed n blocks of bytes made by site;
** 0, or -1 when out of memory. */
int mp_profile_gc_freed(mp_profile *p, uint32_t site, uint64_t n,
			uint64_t bytes);

/* What the final collection freed of the blocks the program made (every
** site's but INTERNAL's) into *all, and the site that made the most bytes
** of them; UINT32_MAX when it freed none. */
uint32_t mp_profile_gc_top(const mp_profile *p, mp_cost *all);

/* The sites of p that are sources the report lists (mp_site_has_events),
** after the pass; the others are callers in its call stacks. */
uint32_t mp_profile_sources(const mp_profile *p);

/* Bytes allocated (new sizes of allocations and reallocations) and freed
** (old sizes of reallocations and frees), after the pass. */
static inline uint64_t mp_profile_allocated(const mp_profile *p)
{
  return p->total[MP_AEV_ALLOC].plus + p->total[MP_AEV_REALLOC].plus;
}

static inline uint64_t mp_profile_freed(const mp_profile *p)
{
  return p->total[MP_AEV_REALLOC].minus + p->total[MP_AEV_FREE].minus;
}

/* Events by kind counted so far (cheap enough for a progress line). */
uint64_t mp_profile_events(const mp_profile *p);

/* The time of the peak in nanoseconds since the start, interpolated
** between the marks around it; UINT64_MAX if the profile has no marks. */
uint64_t mp_profile_peak_ns(const mp_profile *p);

/* Where a process's memory was at the end of a profile with RSS records
** (native ones, MP_X_RSS): its RSS, the largest at a time mark, the bytes
** live of the VM's heap and of native memory (allocated within the
** profile), the JIT's machine code mapped (MP_X_MCODE, when the stream
** has it: else it is in the rest), and the rest (allocator caches and
** fragmentation, stacks, mapped files, what was allocated before the
** start). */
typedef struct mp_memory {
  uint64_t rss, rss_max;
  uint64_t vm, native;
  uint64_t mcode;	/* The JIT's machine code, if has_mcode. */
  int has_mcode;
  uint64_t rest;	/* rss - vm - native - mcode, or 0 if they exceed
			   it. */
} mp_memory;

/* Fill *m for p after the pass: 1; 0 if p has no such figures (no RSS
** record, a merge of several, or a pass that skipped a heap: --heap);
** -1 when out of memory. */
int mp_profile_memory(const mp_profile *p, mp_memory *m);

/* Whether the pass kept what owners held at the peak (want MP_WANT_PEAK,
** and a stream with a timeline: not a merge of several). */
static inline int mp_profile_has_peak(const mp_profile *p)
{
  return p->full && (p->want & MP_WANT_PEAK);
}

#endif
