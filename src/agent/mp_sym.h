/*
** mp_sym.h: what the hook and the stack recorder share: writing symbols
** into the stream, and the helpers around it.
**
** A symbol is written the first time an event or a stack node refers to
** it. The agent sees every free, so it knows when a prototype or a trace
** it wrote a symbol for dies (mp_sym_forget): an object that reuses the
** address or the trace number then gets a fresh symbol.
*/

#ifndef MP_SYM_H
#define MP_SYM_H

#include "lj_obj.h"
#include "lj_jit.h"
#include "lj_dispatch.h"

#include "mp_agent.h"
#include "mp_sink.h"
#include "format/mp_format.h"

/* After a write of at most MP_SLACK bytes (pos was below lim before it):
** hand the chunk over once it is full. */
static inline void mp_settle(mp_state *s)
{
  if (s->pos >= s->lim) mp_sink_flush(s);
}

/* Line of bytecode position pos in pt, like the VM's debug info does. */
static MP_INLINE uint64_t mp_proto_line(const GCproto *pt, BCPos pos)
{
  const void *li = proto_lineinfo(pt);
  if (pt->firstline < 0) return 0;	/* LuaJIT's builtins written in Lua. */
  if (!li || pos > pt->sizebc) return (uint64_t)pt->firstline;
  if (pos == pt->sizebc) return (uint64_t)(pt->firstline + pt->numline);
  if (pos == 0) return (uint64_t)pt->firstline;
  pos--;
  if (pt->numline < 256)
    return (uint64_t)(pt->firstline + ((const uint8_t *)li)[pos]);
  if (pt->numline < 65536)
    return (uint64_t)(pt->firstline + ((const uint16_t *)li)[pos]);
  return (uint64_t)(pt->firstline + ((const uint32_t *)li)[pos]);
}

/* The hook tells another thread's exit() when it is inside an event (see
** at_exit() in mp_proc.c): busy is set before recording is read and
** cleared, with release order, once the event is complete. Plain stores on
** this machine; the other side pays for the barrier. */
static MP_INLINE void mp_enter(mp_state *s)
{
  __atomic_store_n(&s->busy, 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* The end of an event (or of a call that recorded none). */
static MP_INLINE void mp_leave(mp_state *s)
{
  __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
}

/* Write the symbol of prototype pt unless it is in the set already. */
MP_NOINLINE void mp_sym_proto(mp_state *s, const GCproto *pt);

/* Write the symbol of C function f unless it is known already. */
MP_NOINLINE void mp_sym_cfunc(mp_state *s, const void *f);

/* The frame id of C closure fn: for a function in names.shared, its
** address with the place of the closure's own name above bit 56
** (cjson.safe.decode and cjson.safe.encode are one C function in two
** closures), its symbol written; else (or when no name is the
** closure's) the address alone. */
MP_NOINLINE uint64_t mp_sym_cclosure(mp_state *s, const GCfunc *fn);

/* The id of C function fn as an event or frame location: its address, or
** for a function several names share, its closure's (mp_sym_cclosure()).
** One load when no function is shared. */
static MP_INLINE uint64_t mp_cfunc_id(mp_state *s, const GCfunc *fn)
{
  if (MP_LIKELY(!s->names.shared.count))
    return (uint64_t)(uintptr_t)fn->c.f;
  return mp_sym_cclosure(s, fn);
}

/* Write the symbol of trace number n unless the same trace is known. */
MP_NOINLINE void mp_sym_trace(mp_state *s, global_State *g, TraceNo n);

/* A block of at least sym_min bytes is about to be freed: if it is a
** prototype or a trace we wrote a symbol for, forget it, so that an object
** reusing its address or number gets a fresh symbol. Returns 1 if it was
** one (stack nodes naming it must not be reused either). */
MP_NOINLINE int mp_sym_forget(mp_state *s, void *ptr);

/* Write the host's symbol (a C function at address 0) once. */
MP_NOINLINE void mp_sym_host(mp_state *s);

/* Write the marker of the final collection's start (mp_ext.h). */
void mp_sym_gcstart(mp_state *s);

/* Make sure the symbol of pt is written; the same prototype as last time
** is the common case and costs one comparison. */
static inline void mp_want_proto(mp_state *s, const GCproto *pt)
{
  if (pt != s->last_proto) mp_sym_proto(s, pt);
}

/* Make sure trace n's symbol is written. The trace object we wrote it for
** is forgotten when it is freed (see mp_sym_forget), so one comparison with
** the VM's trace array tells whether the symbol in force is still right. */
static inline void mp_want_trace(mp_state *s, global_State *g, TraceNo n)
{
  if (n < s->ntraces) {
    const void *T = s->traces[n].trace;
    if (T && T == (const void *)gcref(G2J(g)->trace[n])) return;
  }
  mp_sym_trace(s, g, n);
}

#endif
