/*
** mp_stack.c: the hook of the stacks mode: every allocation and
** reallocation carries its call stack.
**
** The stack is walked with the one frame walker (mp_frame.c), innermost
** frame first, up to the depth asked for (deeper stacks end in a CUT frame
** so that nothing is silently merged). Stacks are interned as a tree of
** nodes (parent node, frame), root first: a new node is written into the
** stream once (MP_X_NODE, see src/format/mp_ext.h) and events carry the id
** of their innermost node. Consecutive events mostly share the frames
** below the top, so the walk is compared with the last one from the root
** up, and only frames past their common part are looked up in the node
** table. Addresses are written as differences to the previous address of
** the same role, which halves an event's bytes.
**
** Compiled code: the trace's node sits on the frames below the trace's
** base frame, and under it, when it can be found, the line the trace was
** executing: the return address into the trace's machine code is searched
** on the C stack (the first word that points into the trace's code, above
** the hook's own frame; the distances where it was found last are tried
** first, since one call path into the VM puts it at one distance), and
** mapped through the trace's snapshots (each knows where its machine code
** starts) to the bytecode the trace stood for there. This is exact at the
** granularity of snapshots: allocations between two snapshots are billed
** to the line of the earlier one.
**
** Nodes that name a prototype or a trace are not reused once that object
** dies (its address or number may come to name another): the node table
** starts afresh, new ids continue the old ones.
*/

#include <string.h>

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "lj_ir.h"

#include "mp_agent.h"
#include "mp_frame.h"
#include "mp_sym.h"

#define SCAN_BYTES	16384	/* C stack searched for a trace's code. */

/* -- Nodes ---------------------------------------------------------------- */

/* Hash of a node: its parent and its frame. */
static inline uint64_t node_hash(uint32_t parent, const mp_snode *f)
{
  return mp_hash_mix(((uint64_t)parent << 32 | f->b) ^
		     mp_hash_mix(f->a + ((uint64_t)f->kind << 58)));
}

static inline int same_frame(const mp_snode *x, const mp_snode *y)
{
  return x->a == y->a && x->b == y->b && x->kind == y->kind;
}

/* Write the name record of builtin ffid once. */
static void want_builtin(mp_state *s, uint64_t id)
{
  char name[256];
  size_t n;
  uint8_t *p, *len;
  if (id < 256) {	/* A fast function, by its ffid. */
    if (s->st.ffdone[id]) return;
    s->st.ffdone[id] = 1;
  } else if (mp_hash_add(&s->st.luabuiltins, id) <= 0) {
    return;	/* Written already (or no memory: its frames stay unnamed). */
  }
  n = mp_names_builtin(&s->builtins, id, name, sizeof(name));
  p = s->pos;
  *p++ = MP_XREC;
  *p++ = MP_X_BUILTIN;
  len = p++;	/* The payload is shorter than 128 + 16 bytes... */
  p = mp_put_uleb(p, id);
  p = mp_put_uleb(p, n);
  memcpy(p, name, n);
  p += n;
  if ((size_t)(p - len - 1) >= 0x80) {	/* ...or takes two length bytes. */
    memmove(len + 2, len + 1, (size_t)(p - len - 1));
    p++;
    len[0] = (uint8_t)(((size_t)(p - len - 2) & 0x7f) | 0x80);
    len[1] = (uint8_t)((size_t)(p - len - 2) >> 7);
  } else {
    *len = (uint8_t)(p - len - 1);
  }
  s->pos = p;
  mp_settle(s);
}

/* Write the symbol a frame refers to, if not written yet. */
static void want_symbol(mp_state *s, const mp_snode *f)
{
  switch (f->kind) {
  case MP_FK_LUA: mp_want_proto(s, (const GCproto *)(uintptr_t)f->a); break;
  case MP_FK_C: mp_sym_cfunc(s, (const void *)(uintptr_t)f->a); break;
  case MP_FK_TRACE:
    mp_want_trace(s, (global_State *)s->g, (TraceNo)f->a);
    break;
  case MP_FK_BUILTIN: want_builtin(s, f->a); break;
  }
}

/* Write the record of a new node (its symbols first). */
static void write_node(mp_state *s, uint32_t parent, const mp_snode *f)
{
  uint8_t body[40], *q = body, *p;
  want_symbol(s, f);
  q = mp_put_uleb(q, parent);
  *q++ = f->kind;
  switch (f->kind) {
  case MP_FK_LUA: q = mp_put_uleb(q, f->a); q = mp_put_uleb(q, f->b); break;
  case MP_FK_BUILTIN: q = mp_put_uleb(q, f->a); break;
  case MP_FK_C: case MP_FK_TRACE: case MP_FK_CUT:
    q = mp_put_uleb(q, f->a);
    break;
  }
  p = s->pos;
  *p++ = MP_XREC;
  *p++ = MP_X_NODE;
  *p++ = (uint8_t)(q - body);	/* At most 33 bytes. */
  memcpy(p, body, (size_t)(q - body));
  s->pos = p + (q - body);
  mp_settle(s);
}

/* The id of node (parent, f), made and written if it is new; 0 when out
** of memory (the event then has no stack). */
static uint32_t node_of(mp_state *s, uint32_t parent, const mp_snode *f)
{
  mp_stacks *st = &s->st;
  uint64_t h = node_hash(parent, f);
  mp_hash_iter it;
  uint32_t *v, id, *recent = &st->recent[h >> (64 - MP_RECENT_BITS)];
  mp_snode *n;
  /* Most lookups are of a node met a few events ago: a direct-mapped
  ** cache of node indexes answers them without the hash table. */
  if (*recent < st->n) {
    n = &st->node[*recent];
    if (n->parent == parent && same_frame(n, f)) return st->base + *recent + 1;
  }
  for (v = mp_hash_first(&st->index, h, &it); v; v = mp_hash_next(&st->index, &it)) {
    n = &st->node[*v];
    if (n->parent == parent && same_frame(n, f)) {
      *recent = *v;
      return st->base + *v + 1;
    }
  }
  if (st->n == st->cap) {
    uint32_t cap = st->cap ? st->cap * 2 : 1024;
    mp_snode *a = realloc(st->node, (size_t)cap * sizeof(*a));
    if (!a) return 0;
    st->node = a;
    st->cap = cap;
  }
  if (mp_hash_insert(&st->index, h, st->n) < 0) return 0;
  *recent = st->n;
  n = &st->node[st->n++];
  *n = *f;
  n->parent = parent;
  id = st->base + st->n;	/* Ids start at 1. */
  write_node(s, parent, f);
  return id;
}

void mp_stack_forget(mp_state *s)
{
  mp_stacks *st = &s->st;
  st->base += st->n;
  st->ret = 0;
  st->n = 0;
  st->nc = 0;
  mp_hash_free(&st->index);
  mp_hash_init_map(&st->index);
}

/* -- Capture -------------------------------------------------------------- */

/* Frame fr (a Lua, C or builtin frame of a walk) as a node frame. */
static inline void frame_of(mp_state *s, const mp_frame *fr, mp_snode *f)
{
  if (fr->kind == MP_FR_LUA) {
    GCproto *pt = funcproto(fr->fn);
    int32_t pos = fr->pc ? mp_lua_pos(fr->fn, fr->pc, (global_State *)s->g)
			 : -1;
    f->kind = MP_FK_LUA;
    f->a = (uint64_t)(uintptr_t)pt;
    f->b = pos >= 0 ? (uint32_t)mp_proto_line(pt, (BCPos)pos)
		    : (uint32_t)pt->firstline;
  } else if (fr->kind == MP_FR_C) {
    f->kind = MP_FK_C;
    f->a = (uint64_t)(uintptr_t)fr->fn->c.f;
    f->b = 0;
  } else {
    f->kind = MP_FK_BUILTIN;	/* By ffid, or a Lua one by its prototype. */
    f->a = isluafunc(fr->fn) ? (uint64_t)(uintptr_t)funcproto(fr->fn)
			     : fr->fn->c.ffid;
    f->b = 0;
  }
}

/* Are the frames c[0..j) of the last stack still in their slots, under
** frame c[j], which is (it was reached from the top, and holds what it
** held)? Below a frame that is in the current stack, a slot that holds the
** same link as before has the same caller at the same slot, and so on
** down. A frame's function needs no check when the frame above it was
** called from Lua: its link points into that function's bytecode (which
** cannot belong to another prototype: the cache is dropped when one
** dies). This runs for every allocation: one load per Lua frame. */
static inline int still_there(const mp_scache *c, unsigned j)
{
  unsigned i;
  for (i = 0; i < j; i++) {
    const TValue *f = (const TValue *)c[i].slot;
    if (frame_ftsz(f) != c[i].link) return 0;
    if ((c[i + 1].link & FRAME_TYPE) != FRAME_LUA &&
	(const void *)frame_gc(f) != c[i].fn)
      return 0;
  }
  return 1;
}

/* The node of the stack walked by w under the n frames already in
** st->walk[0..n) (a trace and its line, innermost first). Only the frames
** above the part of the last stack that is still in place are walked and
** looked up; the rest comes from the cache. 0 when out of memory. */
static uint32_t walk_stack(mp_state *s, mp_walk *w, unsigned n)
{
  mp_stacks *st = &s->st;
  mp_scache *c = st->c;
  mp_frame fr;
  unsigned top = n, keep = 0, i;
  int j = (int)st->nc - 1, cut = 0;
  uint32_t id = 0;
  while (mp_walk_next(w, &fr)) {
    mp_snode *f = &st->walk[n];
    if (n - top >= st->depth) {	/* Deeper than asked: cut, no cache. */
      f->kind = MP_FK_CUT;
      f->a = st->depth;
      f->b = 0;
      n++;
      cut = 1;
      break;
    }
    frame_of(s, &fr, f);
    st->wslot[n] = fr.slot;
    n++;
    while (j >= 0 && (const TValue *)c[j].slot > fr.slot) j--;
    if (j >= 0 && c[j].slot == fr.slot) {
      if (c[j].link == frame_ftsz(fr.slot) &&
	  c[j].fn == (const void *)frame_gc(fr.slot) &&
	  still_there(c, (unsigned)j)) {
	/* Frames 0..j are in place; frame j's line comes from the walk.
	** Unless they and the frames above them are too many: then the
	** walk goes on to the cut, without the cache. */
	if ((unsigned)j + n - top > st->depth) { j = -1; continue; }
	keep = (unsigned)j;
	if (same_frame(&c[j].frame, f)) { keep++; n--; }
	id = keep ? c[keep - 1].id : 0;
	break;
      }
      j--;
    }
  }
  /* Intern the frames above the kept part, outermost first, and remember
  ** the walked ones (not a trace and its line) for the next event. */
  for (i = n; i-- > 0; ) {
    const mp_snode *f = &st->walk[i];
    if (!(id = node_of(s, id, f))) { st->nc = 0; return 0; }
    if (i >= top && !cut) {
      mp_scache *e = &c[keep++];
      e->slot = st->wslot[i];
      e->link = frame_ftsz((const TValue *)e->slot);
      e->fn = (const void *)frame_gc((const TValue *)e->slot);
      e->frame = *f;
      e->id = id;
    }
  }
  st->nc = cut ? 0 : keep;
  return id;
}

/* The node of the n frames in st->walk (innermost first) that come from no
** walk (a trace alone, the host). */
static uint32_t intern(mp_state *s, unsigned n)
{
  uint32_t id = 0;
  while (n-- > 0)
    if (!(id = node_of(s, id, &s->st.walk[n]))) return 0;
  return id;
}

/* The line trace T was executing when it called out to allocate: the
** return address into T's code, found on the C stack above `from`, mapped
** through T's snapshots. Fills *f with a Lua frame; 0 if not found. */
static int trace_line(mp_stacks *st, global_State *g, GCtrace *T,
		      const void *from, mp_snode *f)
{
  const uintptr_t *base = (const uintptr_t *)from, *w;
  const uintptr_t *end = base + SCAN_BYTES / sizeof(uintptr_t);
  uintptr_t lo = (uintptr_t)T->mcode, hi = lo + T->szmcode, ofs, ret;
  SnapNo a = 0, b = T->nsnap;
  SnapShot *snap;
  SnapEntry *map;
  const BCIns *pc;
  GCfunc *fn = NULL;
  GCproto *pt;
  BCPos pos;
  MSize i;
  int top = -1;
  if (!T->nsnap) return 0;
  /* The same call path into the VM puts the return address at the same
  ** distance from the hook's frame: try the last two distances first. */
  w = base + st->scan[0];
  if (!(*w > lo && *w <= hi)) {
    w = base + st->scan[1];
    if (!(*w > lo && *w <= hi)) {
      for (w = base; w < end; w++)
	if (*w > lo && *w <= hi) break;
      if (w == end) return 0;
    }
    st->scan[1] = st->scan[0];
    st->scan[0] = (uint32_t)(w - base);
  }
  ret = *w;
  if (ret == st->ret && T == st->ret_trace) {	/* As last time. */
    *f = st->ret_frame;
    return 1;
  }
  ofs = (uintptr_t)((MCode *)ret - T->mcode);
  do {	/* The last snapshot whose code starts at or before ofs. */
    SnapNo mid = (SnapNo)((a + b) >> 1);
    if (ofs < T->snap[mid].mcofs) b = mid; else a = mid + 1;
  } while (a < b);
  if (!b) return 0;
  snap = &T->snap[b - 1];
  map = &T->snapmap[snap->mapofs];
  pc = snap_pc(&map[snap->nent]);
  /* The innermost frame: the function of the highest frame slot. */
  for (i = 0; i < snap->nent; i++)
    if ((map[i] & SNAP_FRAME) && (int)snap_slot(map[i]) > top) {
      IRIns *ir = &T->ir[snap_ref(map[i])];
      if (ir->o == IR_KGC && irt_type(ir->t) == IRT_FUNC) {
	top = (int)snap_slot(map[i]);
	fn = ir_kfunc(ir);
      }
    }
  if (!fn) {	/* Still in the trace's base frame. */
    TValue *base = tvref(g->jit_base);
    if (!base) return 0;
    fn = frame_func(base - 1);
    if (fn->c.gct != ~LJ_TFUNC) return 0;
  }
  if (!isluafunc(fn)) return 0;
  pt = funcproto(fn);
  pos = proto_bcpos(pt, pc);
  if (pos >= pt->sizebc) return 0;
  f->kind = MP_FK_LUA;
  f->a = (uint64_t)(uintptr_t)pt;
  f->b = (uint32_t)mp_proto_line(pt, pos);
  st->ret = ret;
  st->ret_trace = T;
  st->ret_frame = *f;
  return 1;
}

/* Where an allocation happens, as a stack node; 0 for the VM itself (GC,
** JIT compiler), whose events carry no stack. */
static MP_NOINLINE uint32_t capture(mp_state *s, const void *from)
{
  mp_stacks *st = &s->st;
  global_State *g = (global_State *)s->g;
  int32_t vst = g->vmstate;
  lua_State *L;
  mp_walk w;
  unsigned n = 0;
  TValue *top;
  if (vst > 0 || vst == ~LJ_VMST_EXIT) {	/* Compiled code. */
    jit_State *J = G2J(g);
    TraceNo tn = vst > 0 ? (TraceNo)vst : J->parent;
    GCtrace *T;
    TValue *base = tvref(g->jit_base);
    if (vst < 0 && (J->state != LJ_TRACE_IDLE || !tn)) return 0;
    if (tn >= J->sizetrace || !(T = (GCtrace *)gcref(J->trace[tn])))
      return 0;
    if (vst > 0 && trace_line(st, g, T, from, &st->walk[n])) n++;
    st->walk[n].kind = MP_FK_TRACE;
    st->walk[n].a = tn;
    st->walk[n].b = 0;
    n++;
    /* The frames below the trace's base (not while an exit rebuilds
    ** them). The base frame runs the trace: shown at the trace's start. */
    L = (lua_State *)gcref(g->cur_L);
    if (vst > 0 && base && L && base - 1 > tvref(L->stack) + LJ_FR2 &&
	base <= L->top) {
      mp_walk_init_at(&w, L, base - 1, mref(T->startpc, const BCIns) + 1);
      return walk_stack(s, &w, n);
    }
    return intern(s, n);
  }
  if (vst != ~LJ_VMST_INTERP && vst != ~LJ_VMST_C &&
      vst != ~LJ_VMST_RECORD && vst != 0)
    return 0;	/* The garbage collector, the JIT compiler. */
  L = (lua_State *)gcref(g->cur_L);
  if (!L) return 0;
  top = L->base - 1;
  if (top <= tvref(L->stack) + LJ_FR2) {	/* No function running. */
    if (vst == ~LJ_VMST_RECORD) return 0;
    mp_sym_host(s);
    st->walk[0].kind = MP_FK_HOST;
    st->walk[0].a = st->walk[0].b = 0;
    return intern(s, 1);
  }
  {
    void *cf = cframe_raw(L->cframe);
    GCfunc *fn = frame_func(top);
    int nopc;
    if (!cf) return 0;
    nopc = (void *)cframe_pc(cf) == (void *)cframe_L(cf);
    /* The JIT compiler's own work (see attribute() in mp_hook.c). */
    if (nopc && (fn->c.gct != ~LJ_TFUNC || isluafunc(fn) ||
		 G2J(g)->state != LJ_TRACE_IDLE))
      return 0;
  }
  mp_walk_init(&w, L);
  return walk_stack(s, &w, 0);
}

/* -- Encoding ------------------------------------------------------------- */

/* Append address v as the difference to *last (zigzag ULEB128), in units
** of 8 when it is a multiple of 8 (the allocator's alignment makes it one
** nearly always): then the header at h gets flag. */
static MP_INLINE uint8_t *put_delta(uint8_t *p, uint8_t *h, unsigned flag,
				    uint64_t *last, uint64_t v)
{
  int64_t d = (int64_t)(v - *last);
  *last = v;
  if (!(d & 7)) { d >>= 3; *h |= (uint8_t)flag; }
  return mp_put_uleb_fast(p, mp_zigzag(d));
}

/* Append the header and location of an allocation or reallocation: the
** node, as the difference to the last stack event's. */
static MP_INLINE uint8_t *put_where(mp_stacks *st, uint8_t *p, int ev,
				    uint32_t node)
{
  if (!node) { *p++ = (uint8_t)(ev | MP_SRC_INTERNAL); return p; }
  *p++ = (uint8_t)(ev | MP_SRC_STACK);
  p = mp_put_uleb_fast(p, mp_zigzag((int64_t)node - (int64_t)st->last_node));
  st->last_node = node;
  return p;
}

/* -- The hook ------------------------------------------------------------- */

/* Append a free of ptr, billed to the running (or exiting) trace, else
** internal, as in version 3. */
static MP_INLINE void put_free(mp_state *s, void *ptr, size_t osize)
{
  global_State *g = (global_State *)s->g;
  int32_t vst = g->vmstate;
  TraceNo tn = 0;
  uint8_t *p, *h;
  if (vst > 0) tn = (TraceNo)vst;
  else if (vst == ~LJ_VMST_EXIT && G2J(g)->state == LJ_TRACE_IDLE)
    tn = G2J(g)->parent;
  if (tn) mp_want_trace(s, g, tn);
  h = p = s->pos;
  if (tn) {
    *p++ = MP_AEV_FREE | MP_SRC_TRACE;
    p = mp_put_uleb_fast(p, tn);
  } else {
    *p++ = MP_AEV_FREE | MP_SRC_INTERNAL;
  }
  p = put_delta(p, h, MP_EV_OLD8, &s->st.old_addr, (uint64_t)(uintptr_t)ptr);
  s->pos = mp_put_uleb_fast(p, osize);
  mp_settle(s);
}

/* A prototype or trace we named may be about to be freed: forget it. */
static MP_INLINE void sym_free(mp_state *s, void *ptr, size_t osize)
{
  if (osize >= s->sym_min && mp_sym_forget(s, ptr)) mp_stack_forget(s);
}

/* A time mark every MP_TICK events (or fewer, see mp_stacks.tick). */
static MP_INLINE void tick(mp_state *s)
{
  mp_stacks *st = &s->st;
  if (MP_UNLIKELY(--st->tick == 0)) {
    st->tick = st->ticks;
    s->pos = mp_put_time(s, s->pos);
    mp_settle(s);
  }
}

/* A free: recorded, then forwarded as a tail call. */
static MP_INLINE void *stack_free(mp_state *s, void *ptr, size_t osize)
{
  sym_free(s, ptr, osize);
  put_free(s, ptr, osize);
  mp_leave(s);
  return s->orig_f(s->orig_ud, ptr, osize, 0);
}

/* The lua_Alloc installed while profiling with stacks; ud is the state. */
void *mp_hook_alloc_stacks(void *ud, void *ptr, size_t osize, size_t nsize)
{
  mp_state *s = (mp_state *)ud;
  mp_stacks *st = &s->st;
  void *res;
  uint32_t node, last_node;
  uint64_t old;
  uint8_t *p, *h;
  mp_enter(s);
  if (MP_UNLIKELY(!__atomic_load_n(&s->recording, __ATOMIC_RELAXED))) {
    mp_sink_limited(s);
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, nsize);
  }
  tick(s);
  if (nsize == 0) return stack_free(s, ptr, osize);
  /* The stack is read before forwarding (a stack reallocation frees the
  ** stack the frames are in); the event counts if the allocator succeeds,
  ** else the registers the encoding moved go back. */
  node = capture(s, __builtin_frame_address(0));
  old = st->old_addr;
  last_node = st->last_node;
  h = s->pos;
  if (ptr == NULL) {
    p = put_where(st, h, MP_AEV_ALLOC, node);
  } else {
    p = put_where(st, h, MP_AEV_REALLOC, node);
    p = put_delta(p, h, MP_EV_OLD8, &st->old_addr, (uint64_t)(uintptr_t)ptr);
    p = mp_put_uleb_fast(p, osize);
  }
  res = s->orig_f(s->orig_ud, ptr, osize, nsize);
  if (MP_LIKELY(res != NULL)) {
    p = put_delta(p, h, MP_EV_NEW8, &st->new_addr, (uint64_t)(uintptr_t)res);
    s->pos = mp_put_uleb_fast(p, nsize);
    mp_settle(s);
  } else {
    st->old_addr = old;
    st->last_node = last_node;
  }
  mp_leave(s);
  return res;
}

/* -- The sampled hook ----------------------------------------------------- */

/* -ln(u) for u in (0, 1], to about 1e-7: u = m 2^e with m in [1, 2), and
** ln m = 2 atanh((m-1)/(m+1)) by its series (no libm in the agent). */
static double neg_log(double u)
{
  union { double d; uint64_t b; } x = { u };
  int e = (int)((x.b >> 52) & 0x7ff) - 1023;
  double m, t, t2;
  x.b = (x.b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  m = x.d;
  t = (m - 1) / (m + 1);
  t2 = t * t;
  return -(e * 0.6931471805599453 +
	   2 * t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 +
	   t2 * (1.0 / 9 + t2 * (1.0 / 11 + t2 / 13)))))));
}

/* Bytes to the next sample: exponentially distributed with mean
** sm->mean (xorshift64* for the uniform draw). */
static int64_t next_gap(mp_sampler *sm)
{
  uint64_t x = sm->rng;
  double u, gap;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  sm->rng = x;
  u = (double)(((x * 0x2545f4914f6cdd1dull) >> 11) + 1) * 0x1p-53;
  gap = neg_log(u) * (double)sm->mean;
  return gap < 0x1p62 ? (int64_t)gap : (int64_t)1 << 62;
}

void mp_sample_init(mp_sampler *sm, uint64_t mean, uint64_t seed)
{
  sm->mean = mean;
  sm->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
  sm->left = next_gap(sm);
}

/* A sampled event: the allocation was chosen (take), or its old block was
** (old), or both. The stack is captured before forwarding, as in the
** full hook; the event is written once the allocator succeeded. */
static MP_NOINLINE void *sampled(mp_state *s, void *ptr, size_t osize,
				 size_t nsize, int take, int old)
{
  mp_stacks *st = &s->st;
  mp_sampler *sm = &s->sm;
  uint32_t node = 0;
  uint8_t *p, *h;
  void *res;
  if (take) {
    sm->left = next_gap(sm);
    /* A block whose free could not be followed is not sampled. */
    if (mp_hash_reserve(&sm->live, 1) < 0) take = 0;
    else node = capture(s, __builtin_frame_address(0));
  }
  res = s->orig_f(s->orig_ud, ptr, osize, nsize);
  if (MP_UNLIKELY(res == NULL)) {	/* Nothing changed. */
    mp_leave(s);
    return NULL;
  }
  tick(s);
  if (old) mp_hash_del(&sm->live, (uintptr_t)ptr);
  if (!take) {	/* The sampled block moved to one that is not. */
    put_free(s, ptr, osize);
    mp_leave(s);
    return res;
  }
  h = s->pos;
  if (old) {
    p = put_where(st, h, MP_AEV_REALLOC, node);
    p = put_delta(p, h, MP_EV_OLD8, &st->old_addr, (uint64_t)(uintptr_t)ptr);
    p = mp_put_uleb_fast(p, osize);
  } else {	/* A new block, or one that was not sampled moved. */
    p = put_where(st, h, MP_AEV_ALLOC, node);
  }
  p = put_delta(p, h, MP_EV_NEW8, &st->new_addr, (uint64_t)(uintptr_t)res);
  s->pos = mp_put_uleb_fast(p, nsize);
  mp_hash_add(&sm->live, (uintptr_t)res);	/* Room was reserved. */
  mp_settle(s);
  mp_leave(s);
  return res;
}

/* The sampling hook's work beyond forwarding: a free of a sampled block
** or one that may be a prototype or trace, an allocation that is taken,
** the reallocation of a sampled block. */
static MP_NOINLINE void *sample_slow(mp_state *s, void *ptr, size_t osize,
				     size_t nsize, int take)
{
  mp_sampler *sm = &s->sm;
  int old;
  mp_enter(s);
  if (MP_UNLIKELY(!__atomic_load_n(&s->recording, __ATOMIC_RELAXED))) {
    mp_sink_limited(s);
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, nsize);
  }
  if (nsize == 0) {
    sym_free(s, ptr, osize);
    if (!sm->live.count || !mp_hash_del(&sm->live, (uintptr_t)ptr)) {
      mp_leave(s);
      return s->orig_f(s->orig_ud, ptr, osize, 0);
    }
    tick(s);
    put_free(s, ptr, osize);
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, 0);
  }
  old = ptr && mp_hash_has(&sm->live, (uintptr_t)ptr);
  if (!take && !old) {
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, nsize);
  }
  return sampled(s, ptr, osize, nsize, take, old);
}

/* The lua_Alloc installed while sampling; ud is the state. Most calls
** only count bytes (allocations) or look for the block in the small set
** of live sampled ones (frees), then forward as a tail call: no register
** is saved, no event flag is set, as nothing is recorded. Whether
** recording goes on is only asked when something would be. */
void *mp_hook_alloc_sampled(void *ud, void *ptr, size_t osize, size_t nsize)
{
  mp_state *s = (mp_state *)ud;
  mp_sampler *sm = &s->sm;
  if (nsize) {
    int64_t left = sm->left - (int64_t)nsize;
    sm->left = left;
    if (MP_LIKELY(left >= 0) &&
	(!ptr || !mp_hash_has(&sm->live, (uintptr_t)ptr)))
      return s->orig_f(s->orig_ud, ptr, osize, nsize);
    return sample_slow(s, ptr, osize, nsize, left < 0);
  }
  if (MP_LIKELY(osize < s->sym_min) && ptr &&
      !mp_hash_has(&sm->live, (uintptr_t)ptr))
    return s->orig_f(s->orig_ud, ptr, osize, 0);
  return sample_slow(s, ptr, osize, 0, 0);
}
