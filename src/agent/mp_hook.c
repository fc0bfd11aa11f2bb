/*
** mp_hook.c: the allocator hook: attribute, forward, encode.
**
** Every allocation, reallocation and free of the VM passes through
** mp_hook_alloc(). It reads the VM state *before* forwarding (a stack
** reallocation frees the stack that L->base points into) and encodes the
** event around the call to the original allocator: a free is recorded and
** then forwarded, an allocation counts only if the allocator succeeded. It never calls the Lua API or stdio, and its work is bounded: a
** symbol is written the first time an event refers to it.
**
** Attribution (see DESIGN.md for the LuaJIT facts behind it):
**   vmstate >= 0          -> the JIT trace with that number
**   INTERP, C or RECORD   -> the frame on top of g->cur_L:
**       Lua function      -> its prototype and the line of the saved pc
**       builtin (ffid>1)  -> the Lua line (or C function) that called it
**       C function        -> its address
**   anything else         -> internal (GC, trace exits, JIT compiler)
** Frees never look at frames (their saved pc may be stale): trace or
** internal by vmstate only.
*/

#include <string.h>

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_jit.h"
#include "lj_dispatch.h"

#include "mp_agent.h"
#include "mp_frame.h"
#include "mp_sym.h"

/* Where an event comes from. */
typedef struct loc {
  uint8_t src;		/* MP_SRC_*. */
  uint64_t id;		/* Proto or C function address, or trace number. */
  uint64_t line;
} loc;

/* -- Attribution ---------------------------------------------------------- */

/* Location of an event while the VM handles a trace exit (state EXIT):
** the trace that exited, known as J->parent from the exit handler on
** (objects the trace sank are rebuilt from its snapshot here, and the
** stack may grow), unless the JIT compiler is at work (a side trace
** starting at a hot exit): internal. */
static inline void exit_loc(mp_state *s, global_State *g, loc *l)
{
  jit_State *J = G2J(g);
  if (J->state == LJ_TRACE_IDLE && J->parent > 0) {
    mp_want_trace(s, g, J->parent);
    l->src = MP_SRC_TRACE;
    l->id = J->parent;
  }
}

/* Location of Lua function fn executing at pc (as saved by the VM: after
** the current instruction); internal if pc is unknown or not in fn. */
static inline void lua_loc(mp_state *s, loc *l, GCfunc *fn, const BCIns *pc)
{
  GCproto *pt = funcproto(fn);
  int32_t pos = mp_lua_pos(fn, pc, (global_State *)s->g);
  if (pos < 0) { l->src = MP_SRC_INTERNAL; return; }
  mp_want_proto(s, pt);
  l->src = MP_SRC_LFUNC;
  l->id = (uint64_t)(uintptr_t)pt;
  l->line = mp_proto_line(pt, (BCPos)pos);
}

/* Location of C function fn. */
static inline void c_loc(mp_state *s, loc *l, GCfunc *fn)
{
  l->id = mp_cfunc_id(s, fn);
  if (l->id == (uint64_t)(uintptr_t)fn->c.f)
    mp_sym_cfunc(s, (const void *)fn->c.f);
  l->src = MP_SRC_CFUNC;
}

/* Location of the host: code outside any Lua call (the program that
** embeds the VM calling the Lua API from C). A C function source at
** address 0, named after the program. */
static MP_NOINLINE void host_loc(mp_state *s, loc *l)
{
  mp_sym_host(s);
  l->src = MP_SRC_CFUNC;
  l->id = 0;
}

/* Location of a builtin on top of L's stack, or of a frame the fast path
** cannot read: the walker finds the first frame that is not a builtin.
** A builtin is billed to the Lua line that called it (through pcall,
** metamethods and trace stitching too), or to the C function that did, or
** to the host when it was called from outside any Lua call (else it stays
** internal). */
static MP_NOINLINE void walk_loc(mp_state *s, loc *l, lua_State *L)
{
  mp_walk w;
  mp_frame fr;
  mp_walk_init(&w, L);
  while (mp_walk_next(&w, &fr)) {
    if (fr.kind == MP_FR_LUA) {
      if (fr.pc) lua_loc(s, l, fr.fn, fr.pc);
      return;	/* No pc: the JIT compiler's own (see attribute()). */
    }
    if (fr.kind == MP_FR_C) { c_loc(s, l, fr.fn); return; }
  }
  /* The bottom of the main thread's stack: called by the host. The bottom
  ** of a coroutine's: a builtin that is the coroutine's main function,
  ** whose resumer LuaJIT does not record: internal. */
  {
    global_State *g = (global_State *)s->g;
    if (L == mainthread(g)) host_loc(s, l);
  }
}

/* Attribute an allocation or reallocation about to happen. */
static inline void attribute(mp_state *s, loc *l)
{
  global_State *g = (global_State *)s->g;
  int32_t st = g->vmstate;
  lua_State *L;
  TValue *f;
  GCfunc *fn;
  void *cf;
  const BCIns *pc;
  int nopc;
  if (st > 0) {	/* Trace numbers start at 1. */
    mp_want_trace(s, g, (TraceNo)st);
    l->src = MP_SRC_TRACE;
    l->id = (uint64_t)st;
    return;
  }
  l->src = MP_SRC_INTERNAL;
  l->id = l->line = 0;
  if (st == ~LJ_VMST_EXIT) {	/* A trace exit: see exit_loc(). */
    exit_loc(s, g, l);
    return;
  }
  /* While a trace is recorded, the interpreter runs each instruction with
  ** the recorder's RECORD state still set: the frame tells the program's
  ** allocations from the recorder's own, which run in a C frame whose
  ** saved pc is the no-pc marker. A fresh VM that never ran has state 0. */
  if (st != ~LJ_VMST_INTERP && st != ~LJ_VMST_C && st != ~LJ_VMST_RECORD &&
      st != 0)
    return;
  L = (lua_State *)gcref(g->cur_L);
  if (!L) return;			/* The state is closing. */
  f = L->base - 1;
  if (f <= tvref(L->stack) + LJ_FR2) {	/* No function running. */
    if (st != ~LJ_VMST_RECORD) host_loc(s, l);
    return;
  }
  fn = frame_func(f);
  cf = cframe_raw(L->cframe);
  if (!cf) return;
  pc = cframe_pc(cf);
  nopc = (void *)pc == (void *)cframe_L(cf);
  if (fn->c.gct == ~LJ_TFUNC && isluafunc(fn) && !mp_lua_builtin(fn)) {
    if (!nopc) lua_loc(s, l, fn, pc);	/* The common case. */
  } else if (nopc && G2J(g)->state != LJ_TRACE_IDLE) {
    return;	/* The JIT compiler's own, e.g. recording a C call. */
  } else if (fn->c.gct == ~LJ_TFUNC && iscfunc(fn) &&
	     fn->c.f != (lua_CFunction)mp_require_wrapper) {
    c_loc(s, l, fn);
  } else {	/* A builtin (or the require wrapper, invisible). */
    walk_loc(s, l, L);
  }
}

/* Location of a free: the running trace, else internal. */
static inline void attribute_free(mp_state *s, loc *l)
{
  global_State *g = (global_State *)s->g;
  int32_t st = g->vmstate;
  if (st > 0) {
    mp_want_trace(s, g, (TraceNo)st);
    l->src = MP_SRC_TRACE;
    l->id = (uint64_t)st;
  } else {
    l->src = MP_SRC_INTERNAL;
    if (st == ~LJ_VMST_EXIT) exit_loc(s, g, l);
  }
}

/* -- Encoding ------------------------------------------------------------- */

/* Append address v as ULEB128. For v >= 2^28 the encoding is the low 28
** bits as four 7-bit groups (each with its continuation bit), then the
** ULEB128 of v >> 28. Heap and code addresses of a process share their
** high bits, so the bytes of v >> 28 are cached: the common case is a few
** shifts and one 8-byte store. hi_key starts as an impossible value, so
** small values (NULL) always take the general path. */
static MP_INLINE uint8_t *put_addr(mp_state *s, uint8_t *p, uint64_t v)
{
  uint64_t hi = v >> 28, x;
  uint32_t lo;
  if (MP_UNLIKELY(hi != s->hi_key)) {
    uint8_t *e;
    if (!hi || (hi >> 28)) return mp_put_uleb_fast(p, v);
    e = mp_put_uleb_fast(p + 4, hi);	/* Fills the cache. */
    s->hi_len = (unsigned)(e - (p + 4));
    s->hi_bytes = 0;
    memcpy(&s->hi_bytes, p + 4, s->hi_len);
    s->hi_key = hi;
  }
  lo = (uint32_t)v;
  x = (lo & 0x7fu) | ((lo << 1) & 0x7f00u) | ((lo << 2) & 0x7f0000u) |
      ((lo << 3) & 0x7f000000u) | 0x80808080u | (s->hi_bytes << 32);
  memcpy(p, &x, 8);
  return p + 4 + s->hi_len;
}

/* Append the header and location of one event. */
static inline uint8_t *put_loc(mp_state *s, uint8_t *p, int ev, const loc *l)
{
  *p++ = (uint8_t)(ev | l->src);
  if (l->src == MP_SRC_LFUNC) {
    p = put_addr(s, p, l->id);
    p = mp_put_uleb_fast(p, l->line);
  } else if (l->src != MP_SRC_INTERNAL) {
    p = mp_put_uleb_fast(p, l->id);
  }
  return p;
}

/* -- The hook ------------------------------------------------------------- */

/* A free: attributed and encoded first, then forwarded as a tail call (a
** free cannot fail), so half of all events save no registers around it. */
static MP_INLINE void *hook_free(mp_state *s, void *ptr, size_t osize)
{
  loc l;
  uint8_t *p;
  attribute_free(s, &l);
  if (osize >= s->sym_min) mp_sym_forget(s, ptr);
  p = put_loc(s, s->pos, MP_AEV_FREE, &l);
  p = put_addr(s, p, (uint64_t)(uintptr_t)ptr);
  s->pos = mp_put_uleb_fast(p, osize);
  mp_settle(s);
  mp_leave(s);
  return s->orig_f(s->orig_ud, ptr, osize, 0);
}

/* The lua_Alloc installed while profiling; ud is the mp_state. */
void *mp_hook_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  mp_state *s = (mp_state *)ud;
  void *res;
  loc l;
  uint8_t *p;
  mp_enter(s);
  if (MP_UNLIKELY(!__atomic_load_n(&s->recording, __ATOMIC_RELAXED))) {
    mp_sink_limited(s);
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, nsize);
  }
  if (nsize == 0) return hook_free(s, ptr, osize);
  /* Attribute and encode all but the new address before forwarding; the
  ** event only counts (pos moves) if the allocation succeeded. */
  attribute(s, &l);
  if (ptr == NULL) {
    p = put_loc(s, s->pos, MP_AEV_ALLOC, &l);
  } else {
    p = put_loc(s, s->pos, MP_AEV_REALLOC, &l);
    p = put_addr(s, p, (uint64_t)(uintptr_t)ptr);
    p = mp_put_uleb_fast(p, osize);
  }
  res = s->orig_f(s->orig_ud, ptr, osize, nsize);
  if (MP_LIKELY(res != NULL)) {	/* Else it failed: nothing changed. */
    p = put_addr(s, p, (uint64_t)(uintptr_t)res);
    s->pos = mp_put_uleb_fast(p, nsize);
    mp_settle(s);
  }
  mp_leave(s);
  return res;
}
