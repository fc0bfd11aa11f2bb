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
** needs no C stack. Everything it keeps is malloc'd (the queue, a map of
** addresses to numbers, a set of strings whose bytes were written, a cache
** of metatables' weak modes: about 40 bytes per object), never the VM's:
** the snapshot makes no garbage and runs no collection step, so the
** program sees the same heap before and after it.
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
#include "mp_frame.h"
#include "mp_api.h"
#include "mp_proc.h"
#include "mp_sink.h"
#include "mp_stream.h"
#include "mp_sym.h"
#include "../format/mp_format.h"
#include "../format/mp_snap.h"

/* A frame of a thread being walked, for the names of its slots. */
typedef struct hframe {
  TValue *f;		/* Its frame slot (the function is at f - LJ_FR2). */
  GCfunc *fn;		/* Its function, or NULL (a dummy frame). */
  int32_t pos;		/* Lua: the bytecode position it runs, or -1. */
} hframe;

typedef struct hwalk {
  mp_state *s;		/* The sink. */
  global_State *g;
  lua_State *L;		/* The thread taking the snapshot. */
  mp_hash ids;		/* Address -> number of every object met. */
  mp_hash named;	/* Strings whose bytes are in the file. */
  mp_hash modes;	/* Metatable -> its weak mode + 1. */
  GCobj **q;		/* q[id]: the object numbered id (q[0]: root). */
  size_t qcap;
  uint32_t next;	/* Number of the next new object. */
  uint64_t last;	/* Address of the last object written. */
  uint64_t objects, bytes;	/* Written, and their self sizes. */
  uint64_t unreached, ubytes;	/* Listed by the VM but not reached. */
  hframe *fr;		/* Scratch: a thread's frames, top first. */
  size_t frcap;
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

/* The target code of a reference to o (see mp_snap.h), numbering o and
** queueing it if it is new. */
static uint64_t target(hwalk *w, GCobj *o)
{
  uint32_t *v = mp_hash_get(&w->ids, (uintptr_t)o);
  if (v) return (uint64_t)(w->next - *v) + 1;
  if (w->next == w->qcap) {
    size_t cap = w->qcap * 2;
    GCobj **q = realloc(w->q, cap * sizeof(*q));
    if (!q || cap > UINT32_MAX) { w->oom = 1; return 0; }
    w->q = q;
    w->qcap = cap;
  }
  if (mp_hash_put(&w->ids, (uintptr_t)o, w->next) < 0) {
    w->oom = 1;
    return 0;
  }
  w->q[w->next++] = o;
  return 1;
}

static void put_t(hwalk *w, GCobj *o)
{
  put_u(w, target(w, o));
}

/* MP_HE_NAMED if string s has not had its bytes written yet (then they
** must follow), else 0. */
static unsigned name_flag(hwalk *w, GCstr *s)
{
  int r = mp_hash_add(&w->named, (uintptr_t)s);
  if (r < 0) w->oom = 1;
  return r > 0 ? MP_HE_NAMED : 0;
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

/* An edge to a string whose bytes name it (a chunk name): special code. */
static void edge_named(hwalk *w, unsigned code, GCstr *s)
{
  unsigned f = name_flag(w, s);
  put_b(w, MP_HE_SPECIAL | f);
  put_u(w, code);
  put_t(w, obj2gco(s));
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
    if (t->asize > 0 && t->colo <= 0) n += (uint64_t)t->asize * sizeof(TValue);
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
  GCstr *mode = mmname_str(w->g, MM_mode);
  int weak = 0;
  MSize i;
  if (mt->nomm & (1u << MM_mode)) return 0;
  if ((c = mp_hash_get(&w->modes, (uintptr_t)mt)) != NULL)
    return (int)*c - 1;
  for (i = 0; mt->hmask && i <= mt->hmask; i++) {
    Node *n = &noderef(mt->node)[i];
    if (tvisstr(&n->key) && strV(&n->key) == mode && tvisstr(&n->val)) {
      const char *p = strVdata(&n->val);
      for (; *p; p++) {
	if (*p == 'k') weak |= 1;
	else if (*p == 'v') weak |= 2;
      }
      break;
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
      edge_arg(w, MP_HE_IDX | (tvisstr(tv) ? 0 : wv), i, gcV(tv));
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
      unsigned f = name_flag(w, ks);
      put_b(w, MP_HE_FIELD | f | wk | wv);
      put_t(w, obj2gco(ks));
      if (f) put_name(w, strdata(ks), ks->len);
      if (vgc) put_t(w, gcV(v));
      else put_u(w, 0);
    } else if (tvisgcv(k)) {
      put_b(w, MP_HE_KEY | wk | wv);
      put_t(w, gcV(k));
      if (vgc) put_t(w, gcV(v));
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
      put_t(w, gcV(v));
    } else if (tvisbool(k)) {
      put_b(w, MP_HE_BOOLKEY | wv);
      put_u(w, tvistrue(k));
      put_t(w, gcV(v));
    } else {	/* Light userdata. */
      put_b(w, MP_HE_LUDKEY | wv);
      put_u(w, k->u64);
      put_t(w, gcV(v));
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
	edge_arg(w, MP_HE_UPVAL, i, gcV(&fn->c.upvalue[i]));
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
      edge_arg(w, MP_HE_FRAME, cur, gcV(o));
      continue;
    }
    if (h && o > h->f && h->pos >= 0)
      name = mp_proto_varname(funcproto(h->fn), (BCPos)h->pos,
			(BCReg)(o - h->f - 1));
    if (name) {
      put_b(w, MP_HE_LOCAL | MP_HE_NAMED);
      put_u(w, cur);
      put_t(w, gcV(o));
      put_name(w, name, strlen(name));
      item_done(w);
    } else {
      edge_arg(w, MP_HE_SLOT, (uint64_t)(o - stack), gcV(o));
    }
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
  switch (type) {
  case MP_HT_UPVAL:
    if (tvisgcv(uvval(&o->uv))) edge(w, MP_HE_VALUE, gcV(uvval(&o->uv)));
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
  root(w, MP_HS_CURRENT, obj2gco(w->L));
  /* Strings the VM fixed (the lexer's reserved words) are never freed. */
  for (i = 0; (MSize)i <= g->str.mask && !stopped(w); i++) {
    GCobj *o = (GCobj *)(gcrefu(g->str.tab[i]) & ~(uintptr_t)1);
    for (; o; o = gcref(o->gch.nextgc))
      if (o->gch.marked & LJ_GC_FIXED) root(w, MP_HS_FIXED, o);
  }
  put_b(w, MP_HE_END);
  item_done(w);
}

/* Count the objects the VM lists (every object but strings is on the
** gc.root list, strings are in the string table) that the walk did not
** reach: garbage not yet swept, or a root the walk misses. */
static void count_unreached(hwalk *w)
{
  global_State *g = w->g;
  GCobj *o;
  MSize i;
  for (o = gcref(g->gc.root); o; o = gcref(o->gch.nextgc))
    if (!mp_hash_get(&w->ids, (uintptr_t)o)) {
      w->unreached++;
      w->ubytes += obj_size(w, o);
    }
  for (i = 0; i <= g->str.mask; i++)
    for (o = (GCobj *)(gcrefu(g->str.tab[i]) & ~(uintptr_t)1); o;
	 o = gcref(o->gch.nextgc))
      if (!mp_hash_get(&w->ids, (uintptr_t)o)) {
	w->unreached++;
	w->ubytes += obj_size(w, o);
      }
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
  mp_hash_free(&w->ids);
  mp_hash_free(&w->named);
  mp_hash_free(&w->modes);
  free(w->q);
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
  w.qcap = 1024;
  w.q = malloc(w.qcap * sizeof(*w.q));
  if (!w.q) { rc = LJMP_ENOMEM; goto out; }
  mp_hash_init_map(&w.ids);
  mp_hash_init_map(&w.modes);
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
  mp_put_prologue(head, MP_SNAP_MAGIC, MP_SNAP_VERSION);
  if ((rc = mp_sink_begin(s, head, sizeof(head))) != 0) {
    rc = rc == ENOMEM ? LJMP_ENOMEM : -rc;
    if (created) unlink(path);
    goto out;
  }
  /* Breadth first: objects are written in the order they are numbered. */
  w.q[0] = NULL;
  w.next = 1;
  walk_roots(&w);
  for (id = 1; id < w.next && !stopped(&w); id++) walk_obj(&w, w.q[id]);
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
