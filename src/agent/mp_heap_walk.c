/*
** mp_heap_walk.c: the heap snapshot's walker.
**
** Walks every object the collector would mark, from the roots it marks
** from (gc_mark_start() and the traversals of lj_gc.c, read for what they
** reach; see docs/DESIGN.md, "Heap snapshot"), and writes each object once
** with its self size and its named references (src/format/mp_snap.h)
** through the agent's sink. Breadth first, with an explicit queue: an
** object is numbered when first referenced and written in that order, so
** the file names references by number and a list of ten million nodes
** needs no C stack. Everything it keeps is malloc'd, never the VM's: the
** queue (8 bytes an object waiting to be written, in chunks of 256 KB
** reused as they are written through), the map of addresses to numbers
** (4 bytes per 32 bytes of the address space where objects lie, per 16
** with 32-bit references, in leaves of 1024 of them; a hash for cdata),
** a cache of metatables' weak modes, the fixed strings (bench/README.md,
** "Heap snapshot writer", measures it). A second thread scans half of a
** large string table, reading the VM only while the VM waits here. The
** snapshot makes no garbage and runs no collection step, so the program
** sees the same heap before and after it.
*/

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_str.h"
#include "lj_state.h"
#include "lj_tab.h"
#include "lj_trace.h"
#include "lj_debug.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "lj_buf.h"
#if LJ_HASFFI
#include "lj_ctype.h"
#endif
#if LJ_HASJIT
#include "lj_ir.h"
#endif

#include "lauxlib.h"
#include "mp_agent.h"
#include "mp_check.h"
#include "mp_options.h"
#include "mp_tab.h"
#include "mp_frame.h"
#include "mp_api.h"
#include "mp_proc.h"
#include "mp_sink.h"
#include "mp_stream.h"
#include "mp_sym.h"
#include "util/mp_array.h"
#include "../format/mp_format.h"
#include "../format/mp_snap.h"

/* The numbers of the objects met, by address: a radix tree over
** granules of 1 << H_GRAIN bytes, whose leaves hold 4-byte entries, the
** object's number with H_NAMED set once a string's bytes are in the file
** (0: not met). Neighbours in memory share a leaf, so a walk of objects
** allocated together touches few cache lines and pages, where a hash
** would scatter them; and nothing ever moves (no rehash). No two objects
** may share a granule. With 64-bit references every object but a cdata
** takes 25 bytes or more, so two at 8-byte boundaries (LuaJIT's
** alignment, and malloc's) start 32 bytes or more apart: the granule is
** 32 bytes, the map an eighth of the heap's span; an object at an
** address not 8-aligned (a host's odd allocator) goes to a hash. With
** 32-bit references objects take 16 bytes or more, and the granule is 16
** whatever the alignment. A cdata may be smaller and goes to the hash,
** as does an address beyond the tree's top (2^49 or 2^50 bytes: none on
** today's systems). Which way an object goes must not depend on the
** reference: the caller says whether it is a cdata (from the reference's
** type tag where there is one). A leaf covers 1024 granules (4 KB of
** entries), a middle node 2^17 leaves. */
#define H_LEAF_BITS	10
#define H_MID_BITS	17
#if LJ_GC64
#define H_GRAIN		5		/* log2 of the granule. */
#define H_ALIGN		7		/* Addresses that are not 8-aligned: the
					   hash. */
#define H_MINOBJ	25		/* Bytes every object but a cdata takes
					   (at 8-byte alignment, 25 keep two
					   starts 32 apart). */
#else
#define H_GRAIN		4
#define H_ALIGN		0
#define H_MINOBJ	16
#endif
#define H_TOP_BITS	18
#define H_LEAF		(1u << H_LEAF_BITS)
#define H_NAMED		0x80000000u	/* A string's bytes were written. */
#define H_IDMAX		0x7fffffffu	/* Numbers fit below H_NAMED. */
#define H_SLAB		256		/* Leaves allocated at once. */

/* What the granule relies on: every object but a cdata takes H_MINOBJ
** bytes or more of memory. */
_Static_assert(sizeof(GCstr) + 1 >= H_MINOBJ && sizeof(GCupval) >= H_MINOBJ &&
	       sizeof(lua_State) >= H_MINOBJ && sizeof(GCproto) >= H_MINOBJ &&
	       sizeCfunc(0) >= H_MINOBJ && sizeLfunc(0) >= H_MINOBJ &&
	       sizeof(GCtab) >= H_MINOBJ && sizeof(GCudata) >= H_MINOBJ,
	       "an object smaller than the address map's granule allows");
#if LJ_HASJIT
_Static_assert(sizeof(GCtrace) >= H_MINOBJ,
	       "a trace smaller than the granule allows");
#endif

typedef struct hids {
  uint32_t ***top;	/* top[i][j]: a leaf of H_LEAF entries, or NULL. */
  uint32_t *slab;	/* Leaves not yet used, from the last slab. */
  size_t slabfree;	/* How many. */
  void **slabs;		/* Every slab and middle node, to free them. */
  size_t nslabs, capslabs;
  uint64_t lastpage;	/* Granule >> H_LEAF_BITS of the last leaf... */
  uint32_t *lastleaf;	/* ...and the leaf (a walk stays near). */
  size_t leaves;	/* Leaves in use (1024 granules each). */
  mp_hash far;		/* Addresses beyond the tree: address -> entry. */
} hids;

/* Keep p, a slab or middle node, to free it with the map; 0 or -1. */
static int hids_keep(hids *m, void *p)
{
  if (m->nslabs == m->capslabs) {
    size_t cap = m->capslabs ? m->capslabs * 2 : 64;
    void **v = realloc(m->slabs, cap * sizeof(*v));
    if (!v) return -1;
    m->slabs = v;
    m->capslabs = cap;
  }
  m->slabs[m->nslabs++] = p;
  return 0;
}

/* The entry of the object at a (cdata: the hash), made (zero) if make
** and missing; NULL if it is missing and not made, or out of memory (then
** *oom is set). */
static uint32_t *hids_slot_slow(hids *m, uintptr_t a, int cdata, int make,
				int *oom)
{
  uint64_t gi = (uint64_t)a >> H_GRAIN, page = gi >> H_LEAF_BITS;
  uint64_t t = page >> H_MID_BITS;
  uint32_t **mid, *leaf;
  if (cdata || t >= (1u << H_TOP_BITS) || (a & H_ALIGN)) {
    uint32_t *v = mp_hash_get(&m->far, a);
    if (v || !make) return v;
    if (mp_hash_put(&m->far, a, 0) < 0) { *oom = 1; return NULL; }
    return mp_hash_get(&m->far, a);
  }
  if (!m->top) {
    if (!make) return NULL;
    if (!(m->top = calloc((size_t)1 << H_TOP_BITS, sizeof(*m->top)))) {
      *oom = 1;
      return NULL;
    }
  }
  mid = m->top[t];
  if (!mid) {
    if (!make) return NULL;
    mid = calloc((size_t)1 << H_MID_BITS, sizeof(*mid));
    if (!mid || hids_keep(m, mid) < 0) { free(mid); *oom = 1; return NULL; }
    m->top[t] = mid;
  }
  leaf = mid[page & ((1u << H_MID_BITS) - 1)];
  if (!leaf) {
    if (!make) return NULL;
    if (!m->slabfree) {
      /* Written before it is read, so that each page is faulted in once,
      ** not first as the zero page and again when an entry is set. */
      uint32_t *slab = malloc((size_t)H_SLAB * H_LEAF * sizeof(*slab));
      if (!slab || hids_keep(m, slab) < 0) {
	free(slab);
	*oom = 1;
	return NULL;
      }
      memset(slab, 0, (size_t)H_SLAB * H_LEAF * sizeof(*slab));
      m->slab = slab;
      m->slabfree = H_SLAB;
    }
    leaf = m->slab;
    m->slab += H_LEAF;
    m->slabfree--;
    m->leaves++;
    mid[page & ((1u << H_MID_BITS) - 1)] = leaf;
  }
  m->lastpage = page;
  m->lastleaf = leaf;
  return &leaf[gi & (H_LEAF - 1)];
}

/* The entry of the object at a (see hids_slot_slow). */
static inline uint32_t *hids_slot(hids *m, uintptr_t a, int cdata, int make,
				  int *oom)
{
  uint64_t gi = (uint64_t)a >> H_GRAIN;
  if ((gi >> H_LEAF_BITS) == m->lastpage && m->lastleaf && !cdata &&
      !(a & H_ALIGN))
    return &m->lastleaf[gi & (H_LEAF - 1)];
  return hids_slot_slow(m, a, cdata, make, oom);
}

/* The number of object o, or 0 if it was not met. */
static uint32_t hids_get(hids *m, GCobj *o)
{
  int oom = 0;
  uint32_t *v = hids_slot(m, (uintptr_t)o, o->gch.gct == ~LJ_TCDATA, 0, &oom);
  return v ? *v & H_IDMAX : 0;
}

static void hids_free(hids *m)
{
  size_t i;
  for (i = 0; i < m->nslabs; i++) free(m->slabs[i]);
  free(m->slabs);
  free(m->top);
  mp_hash_free(&m->far);
  memset(m, 0, sizeof(*m));
}

/* A frame of a thread being walked, for the names of its slots. */
typedef struct hframe {
  TValue *f;		/* Its frame slot (the function is at f - LJ_FR2). */
  GCfunc *fn;		/* Its function, or NULL (a dummy frame). */
  int32_t pos;		/* Lua: the bytecode position it runs, or -1. */
} hframe;

#define H_QBITS		15	/* A queue chunk: 32768 objects, 256 KB. */
#define H_QCHUNK	(1u << H_QBITS)
#define H_QSPARE	64	/* Chunks kept for reuse (16 MB); more are
				   freed. */

typedef struct hwalk {
  mp_state *s;		/* The sink. */
  global_State *g;
  lua_State *L;		/* The thread taking the snapshot. */
  hids ids;		/* Address -> number of every object met. */
  mp_hash modes;	/* Metatable -> its weak mode + 1. */
  /* The queue of objects numbered and not yet written, in chunks of
  ** H_QCHUNK: qc[id >> H_QBITS][id & (H_QCHUNK - 1)] is the object
  ** numbered id (id 0: the root) until it is written; a chunk written
  ** through is kept in qspare for the numbers to come, so the queue holds
  ** no more than the objects waiting (a list's one at a time, not its
  ** ten million), and its pages are touched once. */
  GCobj ***qc;
  size_t nqc;		/* Entries of qc. */
  GCobj **qspare[H_QSPARE];	/* Chunks written through, to reuse... */
  unsigned nqspare;	/* ...how many. */
  uint32_t next;	/* Number of the next new object. */
  uint64_t last;	/* Address of the last object written. */
  uint64_t objects, bytes;	/* Written, and their self sizes. */
  uint64_t unreached, ubytes;	/* Listed by the VM but not reached. */
  uint64_t lstr, lbytes;	/* Strings in the VM's table, their bytes... */
  uint64_t rstr, rbytes;	/* ...and those of them written. */
  hframe *fr;		/* Scratch: a thread's frames, top first. */
  size_t frcap;
  int parts;		/* 1: a recording runs, write the parts. */
  int oom;
} hwalk;

/* -- Output ---------------------------------------------------------------- */

static void put_u(hwalk *w, uint64_t v)
{
  w->s->pos = mp_put_uleb(w->s->pos, v);
}

static void put_b(hwalk *w, unsigned b)
{
  *w->s->pos++ = (uint8_t)b;
}

/* An item is complete: hand a full chunk to the sink. Items are smaller
** than MP_SLACK, the room past the chunk's end. */
static void item_done(hwalk *w)
{
  if (w->s->pos >= w->s->lim) mp_sink_flush(w->s);
}

/* Whether the walk must stop: out of memory, a write error, max_size. */
static int stopped(const hwalk *w)
{
  return w->oom || w->s->err || w->s->limited;
}

/* The chunk of the queue for number id, made (a spare one if any);
** NULL when out of memory. */
static GCobj **queue_chunk(hwalk *w, uint32_t id)
{
  size_t k = id >> H_QBITS;
  if (k >= w->nqc) {
    size_t n = w->nqc ? w->nqc * 2 : 64;
    GCobj ***v = realloc(w->qc, n * sizeof(*v));
    if (!v) return NULL;
    memset(v + w->nqc, 0, (n - w->nqc) * sizeof(*v));
    w->qc = v;
    w->nqc = n;
  }
  if (!w->qc[k])
    w->qc[k] = w->nqspare ? w->qspare[--w->nqspare]
			  : malloc(H_QCHUNK * sizeof(**w->qc));
  return w->qc[k];
}

/* The queue's slot of number id (its chunk made, not yet written
** through). */
static inline GCobj **queue_slot(const hwalk *w, uint32_t id)
{
  return &w->qc[id >> H_QBITS][id & (H_QCHUNK - 1)];
}

/* Object id was written: its chunk, if it was the last of it, is spare. */
static inline void queue_done(hwalk *w, uint32_t id)
{
  GCobj **c;
  if ((id & (H_QCHUNK - 1)) != H_QCHUNK - 1) return;
  c = w->qc[id >> H_QBITS];
  w->qc[id >> H_QBITS] = NULL;
  if (w->nqspare < H_QSPARE) w->qspare[w->nqspare++] = c;
  else free(c);
}

/* Number a new object o, whose entry is *v, and queue it; the target
** code of the reference (1). */
static uint64_t target_new(hwalk *w, GCobj *o, uint32_t *v)
{
  if (!w->oom && !(w->next & (H_QCHUNK - 1)) &&
      (w->next > H_IDMAX || !queue_chunk(w, w->next)))
    w->oom = 1;
  if (w->oom) {
    /* Out of memory: the walk stops and the snapshot is cut, so a new
    ** object that is never written is what this reference can be (a cut
    ** snapshot drops the references past its last object); 0 ("none")
    ** would damage the file, which allows it for a field's value only. */
    w->next++;
    return 1;
  }
  *v |= w->next;
  *queue_slot(w, w->next++) = o;
  return 1;
}

/* The entry of object o, a cdata or not (made if new), or NULL out of
** memory. */
static inline uint32_t *entry(hwalk *w, GCobj *o, int cdata)
{
  return hids_slot(&w->ids, (uintptr_t)o, cdata, 1, &w->oom);
}

/* The target code of a reference to the object whose entry is v, at o
** (see mp_snap.h), numbering o and queueing it if it is new. */
static inline uint64_t target_at(hwalk *w, GCobj *o, uint32_t *v)
{
  uint32_t id;
  if (!v) { w->next++; return 1; }	/* Out of memory: as target_new. */
  id = *v & H_IDMAX;
  if (id) return (uint64_t)(w->next - id) + 1;
  return target_new(w, o, v);
}

/* A reference to o, of any type (read from its header). */
static inline void put_t(hwalk *w, GCobj *o)
{
  put_u(w, target_at(w, o, entry(w, o, o->gch.gct == ~LJ_TCDATA)));
}

/* A reference to the object of tv (its type from the tag: the object is
** not read). */
static inline void put_tv(hwalk *w, cTValue *tv)
{
  GCobj *o = gcV(tv);
  put_u(w, target_at(w, o, entry(w, o, tviscdata(tv))));
}

/* A reference to string s whose bytes name it: MP_HE_NAMED in *flag if
** they have not been written yet (then they must follow the target), and
** the target code. */
static uint64_t target_named(hwalk *w, GCstr *s, unsigned *flag)
{
  uint32_t *v = entry(w, obj2gco(s), 0);
  *flag = 0;
  if (v && !(*v & H_NAMED)) {
    *v |= H_NAMED;
    *flag = MP_HE_NAMED;
  }
  return target_at(w, obj2gco(s), v);
}

static void put_name(hwalk *w, const char *p, size_t len)
{
  if (len > MP_SNAP_NAME_MAX) len = MP_SNAP_NAME_MAX;
  put_u(w, len);
  memcpy(w->s->pos, p, len);
  w->s->pos += len;
}

/* An edge of kind k to o, with no argument. */
static void edge(hwalk *w, unsigned k, GCobj *o)
{
  put_b(w, k);
  put_t(w, o);
  item_done(w);
}

/* An edge of kind k with one argument. */
static void edge_arg(hwalk *w, unsigned k, uint64_t arg, GCobj *o)
{
  put_b(w, k);
  put_u(w, arg);
  put_t(w, o);
  item_done(w);
}

/* An edge of kind k with one argument, to the object of tv. */
static void edge_arg_tv(hwalk *w, unsigned k, uint64_t arg, cTValue *tv)
{
  put_b(w, k);
  put_u(w, arg);
  put_tv(w, tv);
  item_done(w);
}

/* An edge to a string whose bytes name it (a chunk name): special code. */
static void edge_named(hwalk *w, unsigned code, GCstr *s)
{
  unsigned f;
  uint64_t t = target_named(w, s, &f);
  put_b(w, MP_HE_SPECIAL | f);
  put_u(w, code);
  put_u(w, t);
  if (f) put_name(w, strdata(s), s->len);
  item_done(w);
}

/* -- Sizes ------------------------------------------------------------------ */

/* Bytes of the VM's allocations that belong to no object: the global
** state, the string table, the temporary buffer, the lightuserdata
** segments, the JIT compiler's buffers and trace array, the FFI's ctype
** table. Objects plus these are the VM's gc.total. */
static uint64_t vm_bytes(global_State *g)
{
  uint64_t n = sizeof(GG_State);
  n += (uint64_t)(g->str.mask + 1) * sizeof(GCRef);
  n += sbufsz(&g->tmpbuf);
#if LJ_64 && !LJ_GC64
#elif LJ_64
  if (mref(g->gc.lightudseg, uint32_t)) {
    unsigned num = g->gc.lightudnum;
    n += (uint64_t)(num ? 2u << (31 - __builtin_clz(num)) : 2u) *
	 sizeof(uint32_t);
  }
#endif
#if LJ_HASJIT
  {
    jit_State *J = G2J(g);
    n += (uint64_t)J->sizetrace * sizeof(GCRef);
    n += (uint64_t)J->sizesnap * sizeof(SnapShot);
    n += (uint64_t)J->sizesnapmap * sizeof(SnapEntry);
    if (J->irbuf) n += (uint64_t)(J->irtoplim - J->irbotlim) * sizeof(IRIns);
  }
#endif
#if LJ_HASFFI
  {
    CTState *cts = ctype_ctsG(g);
    if (cts) {
      n += sizeof(CTState) + (uint64_t)cts->sizetab * sizeof(CType);
      n += (uint64_t)cts->cb.sizeid * sizeof(CTypeID1);
    }
  }
#endif
  return n;
}

/* An object's self size, as LuaJIT's allocator was asked for it (what
** freeing it gives back). */
/* Whether table t's array part is a block of its own (not inside t's). */
static inline int array_apart(const GCtab *t)
{
  return t->asize > 0 && t->colo <= 0;
}

static uint64_t obj_size(hwalk *w, GCobj *o)
{
  switch (o->gch.gct) {
  case ~LJ_TSTR:
    return o == obj2gco(&w->g->strempty) ? 0 : lj_str_size(o->str.len);
  case ~LJ_TUPVAL: return sizeof(GCupval);
  case ~LJ_TTHREAD:
    return (o == obj2gco(mainthread(w->g)) ? 0 : sizeof(lua_State)) +
	   (uint64_t)o->th.stacksize * sizeof(TValue);
  case ~LJ_TPROTO: return o->pt.sizept;
  case ~LJ_TFUNC:
    return isluafunc(&o->fn) ? sizeLfunc((MSize)o->fn.l.nupvalues)
			     : sizeCfunc((MSize)o->fn.c.nupvalues);
#if LJ_HASJIT
  case ~LJ_TTRACE: {
    GCtrace *T = gco2trace(o);
    return ((sizeof(GCtrace) + 7) & ~7) + (T->nins - T->nk) * sizeof(IRIns) +
	   T->nsnap * sizeof(SnapShot) + T->nsnapmap * sizeof(SnapEntry);
  }
#endif
#if LJ_HASFFI
  case ~LJ_TCDATA: {
    GCcdata *cd = gco2cd(o);
    CType *ct;
    if (cdataisv(cd)) return sizecdatav(cd);
    ct = ctype_raw(ctype_ctsG(w->g), cd->ctypeid);
    return sizeof(GCcdata) + (ctype_hassize(ct->info) ? ct->size
						      : CTSIZE_PTR);
  }
#endif
  case ~LJ_TTAB: {
    GCtab *t = gco2tab(o);
    uint64_t n = t->colo ? sizetabcolo((uint32_t)t->colo & 0x7f)
			 : sizeof(GCtab);
    if (array_apart(t)) n += (uint64_t)t->asize * sizeof(TValue);
    if (t->hmask > 0) n += (uint64_t)(t->hmask + 1) * sizeof(Node);
    return n;
  }
  case ~LJ_TUDATA: {
    GCudata *ud = gco2ud(o);
    uint64_t n = sizeudata(ud);
#if LJ_HASBUFFER
    if (ud->udtype == UDTYPE_BUFFER) {
      SBufExt *sbx = (SBufExt *)uddata(ud);
      if (!sbufiscoworborrow(sbx)) n += sbufsz(sbx);
    }
#endif
    return n;
  }
  }
  return 0;
}

/* -- Objects ---------------------------------------------------------------- */

/* Weak mode of tables with metatable mt: 1 keys, 2 values (as the
** collector reads __mode; cached per metatable). */
static int weak_mode(hwalk *w, GCtab *mt)
{
  uint32_t *c;
  const TValue *v;
  int weak = 0;
  if (mt->nomm & (1u << MM_mode)) return 0;
  if ((c = mp_hash_get(&w->modes, (uintptr_t)mt)) != NULL)
    return (int)*c - 1;
  v = mp_tab_str(mt, mmname_str(w->g, MM_mode));
  if (v && tvisstr(v)) {
    const char *p = strVdata(v);
    for (; *p; p++) {
      if (*p == 'k') weak |= 1;
      else if (*p == 'v') weak |= 2;
    }
  }
  if (mp_hash_put(&w->modes, (uintptr_t)mt, (uint32_t)weak + 1) < 0)
    w->oom = 1;
  return weak;
}

static void walk_tab(hwalk *w, GCtab *t)
{
  GCtab *mt = tabref(t->metatable);
  int weak = mt ? weak_mode(w, mt) : 0;
  unsigned wk, wv = weak & 2 ? MP_HE_WEAKV : 0;
  MSize i;
  if (mt) edge(w, MP_HE_META, obj2gco(mt));
  for (i = 0; i < t->asize && !stopped(w); i++) {
    TValue *tv = arrayslot(t, i);
    if (tvisgcv(tv))
      edge_arg_tv(w, MP_HE_IDX | (tvisstr(tv) ? 0 : wv), i, tv);
  }
  for (i = 0; t->hmask && i <= t->hmask && !stopped(w); i++) {
    Node *n = &noderef(t->node)[i];
    TValue *k = &n->key, *v = &n->val;
    int vgc;
    if (tvisnil(v)) continue;
    vgc = tvisgcv(v);
    /* Strings are never weak references (gc_mayclear() keeps them). */
    wk = weak & 1 && !tvisstr(k) ? MP_HE_WEAKK : 0;
    wv = weak & 2 && !tvisstr(v) ? MP_HE_WEAKV : 0;
    if (tvisstr(k)) {
      GCstr *ks = strV(k);
      unsigned f;
      uint64_t t = target_named(w, ks, &f);
      put_b(w, MP_HE_FIELD | f | wk | wv);
      put_u(w, t);
      if (f) put_name(w, strdata(ks), ks->len);
      if (vgc) put_tv(w, v);
      else put_u(w, 0);
    } else if (tvisgcv(k)) {
      put_b(w, MP_HE_KEY | wk | wv);
      put_tv(w, k);
      if (vgc) put_tv(w, v);
      else put_u(w, 0);
    } else if (!vgc) {
      continue;
    } else if (tvisnumber(k)) {
      lua_Number x = numberVnum(k);
      if (x >= 0 && x < 9007199254740992.0 && x == (lua_Number)(uint64_t)x) {
	put_b(w, MP_HE_IDX | wv);
	put_u(w, (uint64_t)x);
      } else {
	TValue c;
	setnumV(&c, x);
	put_b(w, MP_HE_NUMKEY | wv);
	put_u(w, c.u64);
      }
      put_tv(w, v);
    } else if (tvisbool(k)) {
      put_b(w, MP_HE_BOOLKEY | wv);
      put_u(w, tvistrue(k));
      put_tv(w, v);
    } else {	/* Light userdata. */
      put_b(w, MP_HE_LUDKEY | wv);
      put_u(w, k->u64);
      put_tv(w, v);
    }
    item_done(w);
  }
}

static void walk_func(hwalk *w, GCfunc *fn)
{
  uint32_t i;
  if (tabref(fn->c.env)) edge(w, MP_HE_ENV, obj2gco(tabref(fn->c.env)));
  if (isluafunc(fn)) {
    edge(w, MP_HE_PROTO, obj2gco(funcproto(fn)));
    for (i = 0; i < fn->l.nupvalues; i++)
      edge_arg(w, MP_HE_UPVAL, i, gcref(fn->l.uvptr[i]));
  } else {
    for (i = 0; i < fn->c.nupvalues; i++)
      if (tvisgcv(&fn->c.upvalue[i]))
	edge_arg_tv(w, MP_HE_UPVAL, i, &fn->c.upvalue[i]);
  }
}

static void walk_proto(hwalk *w, GCproto *pt)
{
  ptrdiff_t i;
  edge_named(w, MP_HS_CHUNK, proto_chunkname(pt));
  for (i = -(ptrdiff_t)pt->sizekgc; i < 0 && !stopped(w); i++)
    edge(w, MP_HE_CONST, proto_kgc(pt, i));
#if LJ_HASJIT
  if (pt->trace)
    edge_arg(w, MP_HE_SPECIAL, MP_HS_TRACE,
	     obj2gco(traceref(G2J(w->g), pt->trace)));
#endif
}

#if LJ_HASJIT
static void walk_trace(hwalk *w, GCtrace *T)
{
  jit_State *J = G2J(w->g);
  IRRef ref;
  if (T->traceno == 0) return;
  for (ref = T->nk; ref < REF_TRUE && !stopped(w); ref++) {
    IRIns *ir = &T->ir[ref];
    if (ir->o == IR_KGC) edge_arg(w, MP_HE_SPECIAL, MP_HS_KGC, ir_kgc(ir));
    if (irt_is64(ir->t) && ir->o != IR_KNULL) ref++;
  }
  if (T->link)
    edge_arg(w, MP_HE_SPECIAL, MP_HS_LINK, obj2gco(traceref(J, T->link)));
  if (T->nextroot)
    edge_arg(w, MP_HE_SPECIAL, MP_HS_LINK, obj2gco(traceref(J, T->nextroot)));
  if (T->nextside)
    edge_arg(w, MP_HE_SPECIAL, MP_HS_LINK, obj2gco(traceref(J, T->nextside)));
  if (gcref(T->startpt))
    edge_arg(w, MP_HE_SPECIAL, MP_HS_STARTPT, gcref(T->startpt));
}
#endif

static void walk_udata(hwalk *w, GCudata *ud)
{
  GCtab *mt = tabref(ud->metatable);
  if (mt) edge(w, MP_HE_META, obj2gco(mt));
  if (tabref(ud->env)) edge(w, MP_HE_ENV, obj2gco(tabref(ud->env)));
#if LJ_HASBUFFER
  if (ud->udtype == UDTYPE_BUFFER) {
    SBufExt *sbx = (SBufExt *)uddata(ud);
    if (sbufiscow(sbx) && gcref(sbx->cowref))
      edge_arg(w, MP_HE_SPECIAL, MP_HS_BUFREF, gcref(sbx->cowref));
    if (gcref(sbx->dict_str))
      edge_arg(w, MP_HE_SPECIAL, MP_HS_BUFREF, gcref(sbx->dict_str));
    if (gcref(sbx->dict_mt))
      edge_arg(w, MP_HE_SPECIAL, MP_HS_BUFREF, gcref(sbx->dict_mt));
  }
#endif
}

/* Collect th's frames, top first, into w->fr; their number. */
static size_t thread_frames(hwalk *w, lua_State *th)
{
  TValue *bot = tvref(th->stack) + LJ_FR2, *f, *above = NULL;
  size_t n = 0;
  mp_walk wk;
  mp_walk_init(&wk, th);
  for (f = th->base - 1; f > bot && n < MP_WALK_MAX; ) {
    GCobj *o = frame_gc(f);
    TValue *prev = frame_prev(f);
    hframe *h;
    if (n == w->frcap) {
      size_t cap = w->frcap ? w->frcap * 2 : 64;
      hframe *fr = realloc(w->fr, cap * sizeof(*fr));
      if (!fr) { w->oom = 1; return 0; }
      w->fr = fr;
      w->frcap = cap;
    }
    h = &w->fr[n++];
    h->f = f;
    h->fn = o->gch.gct == ~LJ_TFUNC ? &o->fn : NULL;
    h->pos = -1;
    /* Below a vararg frame lies the same call (its varargs): no locals. */
    if (h->fn && isluafunc(h->fn) && !(above && frame_isvarg(above))) {
      wk.above = above;
      h->pos = mp_lua_pos_in(h->fn, mp_walk_lua_pc(&wk));
    }
    if (prev >= f) break;
    above = f;
    f = prev;
  }
  return n;
}

static void walk_thread(hwalk *w, lua_State *th)
{
  TValue *o, *top = th->top, *stack = tvref(th->stack);
  size_t n = thread_frames(w, th), cur = n;
  if (tabref(th->env)) edge(w, MP_HE_ENV, obj2gco(tabref(th->env)));
  for (o = stack + 1 + LJ_FR2; o < top && !stopped(w); o++) {
    hframe *h;
    const char *name = NULL;
    while (cur > 0 && o >= w->fr[cur - 1].f - LJ_FR2) cur--;
    if (!tvisgcv(o)) continue;
    h = cur < n ? &w->fr[cur] : NULL;
    if (h && o == h->f - LJ_FR2) {
      edge_arg_tv(w, MP_HE_FRAME, cur, o);
      continue;
    }
    if (h && o > h->f && h->pos >= 0)
      name = mp_proto_varname(funcproto(h->fn), (BCPos)h->pos,
			(BCReg)(o - h->f - 1));
    if (name) {
      put_b(w, MP_HE_LOCAL | MP_HE_NAMED);
      put_u(w, cur);
      put_tv(w, o);
      put_name(w, name, strlen(name));
      item_done(w);
    } else {
      edge_arg_tv(w, MP_HE_SLOT, (uint64_t)(o - stack), o);
    }
  }
}

/* A part of object o: a block of its own at p, allocated apart from it. */
static void put_part(hwalk *w, GCobj *o, const void *p)
{
  put_b(w, MP_HE_PART);
  put_u(w, mp_zigzag((int64_t)((uint64_t)(uintptr_t)p - (uintptr_t)o)));
  item_done(w);
}

/* The parts of o, if it has any (see MP_HE_PART), while a recording
** runs: the join credits each to the line that allocated it. */
static void walk_parts(hwalk *w, GCobj *o)
{
  switch (o->gch.gct) {
  case ~LJ_TTAB: {
    GCtab *t = gco2tab(o);
    if (array_apart(t)) put_part(w, o, tvref(t->array));
    if (t->hmask > 0) put_part(w, o, noderef(t->node));
    break;
  }
  case ~LJ_TTHREAD:
    put_part(w, o, tvref(o->th.stack));
    break;
#if LJ_HASBUFFER
  case ~LJ_TUDATA: {
    SBufExt *sbx = (SBufExt *)uddata(&o->ud);
    if (o->ud.udtype == UDTYPE_BUFFER && !sbufiscoworborrow(sbx) &&
	sbufsz(sbx))
      put_part(w, o, sbx->b);
    break;
  }
#endif
  }
}

/* Write object o (numbered id): head, address, size, extra, edges. */
static void walk_obj(hwalk *w, GCobj *o)
{
  unsigned type;
  uint64_t size = obj_size(w, o);
  switch (o->gch.gct) {
  case ~LJ_TSTR: type = MP_HT_STR; break;
  case ~LJ_TUPVAL: type = MP_HT_UPVAL; break;
  case ~LJ_TTHREAD: type = MP_HT_THREAD; break;
  case ~LJ_TPROTO: type = MP_HT_PROTO; break;
  case ~LJ_TFUNC:
    type = isluafunc(&o->fn) ? MP_HT_LFUNC : iscfunc(&o->fn) ? MP_HT_CFUNC
							     : MP_HT_BUILTIN;
    break;
  case ~LJ_TTRACE: type = MP_HT_TRACE; break;
  case ~LJ_TCDATA: type = MP_HT_CDATA; break;
  case ~LJ_TTAB: type = MP_HT_TAB; break;
  default: type = MP_HT_UDATA; break;
  }
  put_b(w, type);
  put_u(w, mp_zigzag((int64_t)((uint64_t)(uintptr_t)o - w->last)));
  w->last = (uintptr_t)o;
  put_u(w, size);
  w->objects++;
  /* Every string but the empty one is in the string table. */
  if (type == MP_HT_STR && o != obj2gco(&w->g->strempty)) {
    w->rstr++;
    w->rbytes += size;
  }
  w->bytes += size;
  switch (type) {
  case MP_HT_PROTO: {
    GCproto *pt = gco2pt(o);
    const char *p = (const char *)proto_uvinfo(pt);
    uint32_t i;
    put_u(w, pt->firstline);
    put_u(w, pt->numline);
    put_u(w, pt->sizeuv);
    item_done(w);
    for (i = 0; i < pt->sizeuv; i++) {
      size_t len = p ? strlen(p) : 0;
      put_name(w, p ? p : "", len);
      if (p) p += len + 1;
      item_done(w);
    }
    break;
  }
  case MP_HT_BUILTIN: put_u(w, o->fn.c.ffid); break;
#if LJ_HASFFI
  case MP_HT_CDATA: put_u(w, o->cd.ctypeid); break;
#endif
#if LJ_HASJIT
  case MP_HT_TRACE: put_u(w, gco2trace(o)->traceno); break;
#endif
  }
  item_done(w);
  if (type == MP_HT_STR) return;
  if (w->parts) walk_parts(w, o);
  switch (type) {
  case MP_HT_UPVAL:
    if (tvisgcv(uvval(&o->uv))) {
      put_b(w, MP_HE_VALUE);
      put_tv(w, uvval(&o->uv));
      item_done(w);
    }
    break;
  case MP_HT_THREAD: walk_thread(w, &o->th); break;
  case MP_HT_PROTO: walk_proto(w, &o->pt); break;
  case MP_HT_LFUNC: case MP_HT_CFUNC: case MP_HT_BUILTIN:
    walk_func(w, &o->fn);
    break;
#if LJ_HASJIT
  case MP_HT_TRACE: walk_trace(w, gco2trace(o)); break;
#endif
  case MP_HT_TAB: walk_tab(w, &o->tab); break;
  case MP_HT_UDATA: walk_udata(w, &o->ud); break;
  }
  put_b(w, MP_HE_END);
  item_done(w);
}

/* -- Roots ------------------------------------------------------------------ */

static void root(hwalk *w, unsigned code, GCobj *o)
{
  if (o) edge_arg(w, MP_HE_SPECIAL, code, o);
}

/* -- The string table ------------------------------------------------------ */

/* Buckets [lo, hi) of the string table: their strings counted, and the
** fixed ones (roots) in the order of the buckets and chains. */
typedef struct hscan {
  global_State *g;
  MSize lo, hi;
  uint64_t n, bytes;
  GCobj **fixed;
  uint32_t nfixed, capfixed;
  int oom;
} hscan;

#define H_SCANB		64	/* Buckets scanned at once. */
#define H_SCANMIN	65536	/* Buckets worth a second thread. */

/* Scan sc's buckets. Every string is a cache miss, at a place of its
** own: a batch's heads are read in one tight loop, then the next strings
** of their chains, so that the misses overlap. A batch with a fixed
** string is read again in order, for the order of the roots. */
static void scan_buckets(hscan *sc)
{
  GCRef *tab = sc->g->str.tab;
  GCobj *o[H_SCANB];
  MSize b, j, k, n;
  for (b = sc->lo; b < sc->hi && !sc->oom; b += H_SCANB) {
    MSize e = sc->hi - b < H_SCANB ? sc->hi - b : H_SCANB;
    int fixed = 0;
    for (j = n = 0; j < e; j++) {
      GCobj *p = (GCobj *)(gcrefu(tab[b + j]) & ~(uintptr_t)1);
      if (p) o[n++] = p;
    }
    while (n) {
      for (j = k = 0; j < n; j++) {
	GCobj *p = o[j];
	sc->n++;
	sc->bytes += lj_str_size(p->str.len);
	fixed |= p->gch.marked & LJ_GC_FIXED;
	if (gcref(p->gch.nextgc)) o[k++] = gcref(p->gch.nextgc);
      }
      n = k;
    }
    for (j = 0; fixed && j < e; j++) {
      GCobj *p = (GCobj *)(gcrefu(tab[b + j]) & ~(uintptr_t)1);
      for (; p; p = gcref(p->gch.nextgc)) {
	if (!(p->gch.marked & LJ_GC_FIXED)) continue;
	if (mp_array_grow((void **)&sc->fixed, sc->nfixed, &sc->capfixed,
			  sizeof(*sc->fixed)) < 0) {
	  sc->oom = 1;
	  break;
	}
	sc->fixed[sc->nfixed++] = p;
      }
    }
  }
}

static void *scan_main(void *arg)
{
  scan_buckets(arg);
  return NULL;
}

/* The string table: its strings counted (for count_unreached()), the
** fixed ones roots. A large table is scanned by two threads, the second
** taking the upper half: the VM waits in the snapshot meanwhile, so
** nothing changes the table. */
static void scan_strings(hwalk *w)
{
  global_State *g = w->g;
  MSize size = g->str.mask + 1, half = size / 2;
  hscan sc[2];
  pthread_t t;
  int two;
  uint32_t i, k;
  memset(sc, 0, sizeof(sc));
  sc[0].g = sc[1].g = g;
  sc[0].hi = sc[1].lo = half;
  sc[1].hi = size;
  two = size >= H_SCANMIN && mp_thread_start(&t, scan_main, &sc[1]) == 0;
  scan_buckets(&sc[0]);
  if (two) pthread_join(t, NULL);
  else scan_buckets(&sc[1]);
  for (k = 0; k < 2; k++) {
    w->lstr += sc[k].n;
    w->lbytes += sc[k].bytes;
    w->oom |= sc[k].oom;
    for (i = 0; i < sc[k].nfixed && !stopped(w); i++)
      root(w, MP_HS_FIXED, sc[k].fixed[i]);
    free(sc[k].fixed);
  }
}

/* The pseudo-object 0, whose edges are the collector's roots. */
static void walk_roots(hwalk *w)
{
  global_State *g = w->g;
  lua_State *main = mainthread(g);
  int i;
  put_b(w, MP_HT_ROOT);
  put_u(w, 0);
  put_u(w, 0);
  root(w, MP_HS_MAIN, obj2gco(main));
  root(w, MP_HS_GLOBALS, obj2gco(tabref(main->env)));
  if (tvisgcv(&g->registrytv)) root(w, MP_HS_REGISTRY, gcV(&g->registrytv));
  for (i = 0; i < GCROOT_MAX; i++) {
    unsigned code = i < GCROOT_BASEMT ? MP_HS_MMNAME :
		    i < GCROOT_IO_INPUT ? MP_HS_BASEMT : MP_HS_IO;
    root(w, code, gcref(g->gcroot[i]));
  }
  if (gcref(g->gc.mmudata)) {
    GCobj *first = gcref(g->gc.mmudata), *u = first;
    do {
      u = gcnext(u);
      root(w, MP_HS_MMUDATA, u);
    } while (u != first && !stopped(w));
  }
#if LJ_HASFFI
  if (ctype_ctsG(g)) {
    root(w, MP_HS_FFI_FIN, obj2gco(ctype_ctsG(g)->finalizer));
    root(w, MP_HS_FFI_MISC, obj2gco(ctype_ctsG(g)->miscmap));
  }
#endif
  /* The thread that took the snapshot, when it is a coroutine: the main
  ** thread has its root already, and one edge names it. */
  if (w->L != main) root(w, MP_HS_CURRENT, obj2gco(w->L));
  /* Strings the VM fixed (the lexer's reserved words, C type names) are
  ** never freed. */
  scan_strings(w);
  put_b(w, MP_HE_END);
  item_done(w);
}

/* Count the objects the VM lists (every object but strings is on the
** gc.root list, strings are in the string table) that the walk did not
** reach: garbage not yet swept, or a root the walk misses. The strings:
** those walk_roots() counted in the table less those written, which are
** all in it. */
static void count_unreached(hwalk *w)
{
  global_State *g = w->g;
  GCobj *o;
  /* Every string written and every byte the VM counts accounted for: no
  ** object it lists can be left (each takes bytes), and the list need not
  ** be read. */
  if (w->lstr == w->rstr && w->bytes + vm_bytes(g) == g->gc.total) return;
  for (o = gcref(g->gc.root); o; o = gcref(o->gch.nextgc))
    if (!hids_get(&w->ids, o)) {
      w->unreached++;
      w->ubytes += obj_size(w, o);
    }
  w->unreached += w->lstr - w->rstr;
  w->ubytes += w->lbytes - w->rbytes;
}

/* -- Snapshot --------------------------------------------------------------- */

/* Mark the snapshot in the stream of the VM's recording, if one runs in
** the extension (a version-3 stream stays what Tarantool's parser reads):
** a time mark, then MP_X_INFO "snapshot" = "OBJECTS BYTES TOTAL CUT PATH"
** (the snapshot's trailer has the same numbers, which joins the two; of
** the path, the file's name, cut to 60 bytes). The heap did not change since the walk:
** the snapshot made no allocation in the VM. Written as the hook writes
** (another thread's exit may end the stream meanwhile). */
static void mark_recording(hwalk *w, const char *path, int cut)
{
  mp_state *r = mp_proc_find(w->g);
  const char *base = strrchr(path, '/');
  char v[128];
  if (!r || !r->ext) return;
  snprintf(v, sizeof(v), "%llu %llu %llu %d %.60s",
	   (unsigned long long)w->objects, (unsigned long long)w->bytes,
	   (unsigned long long)w->g->gc.total, cut, base ? base + 1 : path);
  mp_enter(r);
  if (__atomic_load_n(&r->recording, __ATOMIC_RELAXED)) {
    r->pos = mp_put_time(r, r->pos);
    r->pos = mp_put_info(r->pos, "snapshot", v);
    mp_settle(r);
  }
  mp_leave(r);
}

static void walk_free(hwalk *w)
{
  size_t k;
  hids_free(&w->ids);
  mp_hash_free(&w->modes);
  for (k = 0; k < w->nqc; k++) free(w->qc[k]);
  free(w->qc);
  while (w->nqspare) free(w->qspare[--w->nqspare]);
  free(w->fr);
}

/* See ljmemprof.h. */
int ljmp_snapshot(lua_State *L, const ljmp_options *user)
{
  static unsigned count;
  ljmp_options opt;
  hwalk w;
  mp_state *s;
  char path[MP_PATH_MAX];
  uint8_t head[MP_PROLOGUE_SIZE];
  int rc = 0, created = 0, cut;
  uint32_t id;
  if (!L || !user || mp_options_read(&opt, user, NULL, 0) < 0 ||
      opt.stacks || opt.sample || opt.seed)
    return LJMP_EARG;
  if (mp_check_vm(L, NULL, 0)) return LJMP_EVM;
  if (opt.collect) lua_gc(L, LUA_GCCOLLECT, 0);
  memset(&w, 0, sizeof(w));
  if (posix_memalign((void **)&s, 64, sizeof(*s))) return LJMP_ENOMEM;
  memset(s, 0, sizeof(*s));
  s->fd = -1;
  s->writer = opt.writer;
  s->ctx = opt.ctx;
  s->g = G(L);
  s->max_size = opt.max_size;
  w.s = s;
  w.g = G(L);
  w.L = L;
  if (!queue_chunk(&w, 0)) { rc = LJMP_ENOMEM; goto out; }
  mp_hash_init_map(&w.ids.far);
  mp_hash_init_map(&w.modes);
  {
    mp_state *r = mp_proc_find(w.g);
    w.parts = r && r->ext && __atomic_load_n(&r->recording, __ATOMIC_RELAXED);
  }
  rc = mp_sink_prepare(s, opt.bufsize ? opt.bufsize : (size_t)1 << 20,
		       opt.path != NULL);
  if (rc) {
    if (rc < 0) errno = -rc;
    rc = rc == ENOMEM ? LJMP_ENOMEM : LJMP_ETHREAD;
    goto out;
  }
  if (opt.path) {
    struct stat st;
    if (mp_path_expand(opt.path, path, sizeof(path),
		       __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED)) < 0) {
      rc = LJMP_EARG;
      goto out;
    }
    if ((s->fd = mp_path_open(path, opt.mode, &created)) < 0) {
      rc = s->fd;
      s->fd = -1;
      goto out;
    }
    if (!created && fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode) &&
	ftruncate(s->fd, 0) < 0) {
      rc = -errno;
      goto out;
    }
  }
  /* Version 1 without parts: what every reader of snapshots reads. */
  mp_put_prologue(head, MP_SNAP_MAGIC, w.parts ? MP_SNAP_VERSION : 1);
  if ((rc = mp_sink_begin(s, head, sizeof(head))) != 0) {
    rc = rc == ENOMEM ? LJMP_ENOMEM : -rc;
    if (created) unlink(path);
    goto out;
  }
  /* Breadth first: objects are written in the order they are numbered. */
  *queue_slot(&w, 0) = NULL;
  w.next = 1;
  walk_roots(&w);
  for (id = 1; id < w.next && !stopped(&w); id++) {
    /* The objects ahead are fetched while this one is written. */
    if (id + 8 < w.next) __builtin_prefetch(*queue_slot(&w, id + 8));
    walk_obj(&w, *queue_slot(&w, id));
    queue_done(&w, id);
  }
  cut = stopped(&w);
  if (!cut) count_unreached(&w);
  put_b(&w, MP_SNAP_TRAILER);
  put_u(&w, w.objects);
  put_u(&w, w.bytes);
  put_u(&w, w.g->gc.total);
  put_u(&w, vm_bytes(w.g));
  put_u(&w, w.unreached);
  put_u(&w, w.ubytes);
  put_u(&w, cut ? MP_SNAP_CUT : 0);
  s->notes = 0;		/* The end is the epilogue byte alone. */
  s->limited = 0;
  mp_sink_finish(s);	/* Writes MP_FINAL, drains, closes. */
  if (s->err) rc = -s->err;
  else if (w.oom) rc = LJMP_ENOMEM;
  else if (cut) rc = -EFBIG;
  if (!s->err && !w.oom) mark_recording(&w, opt.path ? path : "", cut);
out:
  if (rc && s->fd >= 0) {
    close(s->fd);
    s->fd = -1;
  }
  if (s->buf || s->chunk[0]) mp_sink_close(s);
  free(s);
  walk_free(&w);
  return rc;
}

/* -- Lua binding ------------------------------------------------------------ */
