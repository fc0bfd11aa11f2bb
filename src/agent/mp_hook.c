/*
** mp_hook.c: the allocator hook: attribute, forward, encode.
**
** Every allocation, reallocation and free of the VM passes through
** mp_hook_alloc(). It reads the VM state *before* forwarding (a stack
** reallocation frees the stack that L->base points into) and encodes the
** event around the call to the original allocator: a free is recorded and
** then forwarded, an allocation counts only if the allocator succeeded.
** It never calls the Lua API or stdio, and its work is bounded: a symbol
** is written the first time an event refers to it.
**
** Attribution: where the VM is comes from mp_where.h (as for every
** hook); then
**   a trace running or exiting -> the trace
**   a Lua function     -> its prototype and the line of the saved pc
**   a builtin          -> the Lua line (or C function) that called it
**   a C function       -> its address
**   no function        -> the host
**   the VM's own work  -> internal
** Frees never look at frames: billed by mp_free_trace().
*/

#include <string.h>

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_jit.h"
#include "lj_dispatch.h"

#include "mp_agent.h"
#include "mp_frame.h"
#include "mp_sym.h"
#include "mp_where.h"
#include "mp_hook.h"
#include "mp_names.h"

/* Where an event comes from. */
typedef struct loc {
  uint8_t src;		/* MP_SRC_*. */
  uint64_t id;		/* Proto or C function address, or trace number. */
  uint64_t line;
} loc;

/* -- Attribution ---------------------------------------------------------- */

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
      return;	/* No pc: the JIT compiler's own (mp_where.h). */
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

/* Location of trace tn. */
static inline void trace_loc(mp_state *s, loc *l, TraceNo tn)
{
  mp_want_trace(s, (global_State *)s->g, tn);
  l->src = MP_SRC_TRACE;
  l->id = (uint64_t)tn;
}

/* Attribute an allocation or reallocation of nsize bytes about to happen,
** by where the VM is (mp_where.h). */
static inline void attribute(mp_state *s, loc *l, size_t nsize)
{
  global_State *g = (global_State *)s->g;
  mp_where w;
  GCfunc *fn;
  l->src = MP_SRC_INTERNAL;
  l->id = l->line = 0;
  s->alloc_est = g->gc.estimate;
  if (mp_strtab_grows(g, nsize)) return;
  switch (mp_where_is(g, g->vmstate, &w)) {
  case MP_AT_TRACE: case MP_AT_EXIT: trace_loc(s, l, w.tn); return;
  case MP_AT_HOST: host_loc(s, l); return;
  case MP_AT_FRAME: break;
  default: return;
  }
  fn = frame_func(w.top);
  if (fn->c.gct == ~LJ_TFUNC && isluafunc(fn) && !mp_lua_builtin(fn))
    lua_loc(s, l, fn, w.pc);	/* The common case. */
  else if (fn->c.gct == ~LJ_TFUNC && iscfunc(fn) &&
	   fn->c.f != (lua_CFunction)mp_require_wrapper)
    c_loc(s, l, fn);
  else	/* A builtin (or the require wrapper, invisible). */
    walk_loc(s, l, w.L);
}

/* Location of a free, by the free rule (mp_free_trace()). */
static inline void attribute_free(mp_state *s, loc *l)
{
  global_State *g = (global_State *)s->g;
  TraceNo tn = mp_free_trace(g, g->vmstate);
  if (tn) {
    trace_loc(s, l, tn);
  } else {
    l->src = MP_SRC_INTERNAL;
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
  attribute(s, &l, nsize);
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
