/*
** mp_where.h: where the VM is when its allocator is called, and the rule
** that bills a free. Every hook asks these two (mp_hook.c for the
** one-frame stream; mp_stack.c, whose capture the sampled hook and the
** native hooks share), so that a fix is made once.
**
** The VM says where it is in g->vmstate (see DESIGN.md for the LuaJIT
** facts behind it):
**   >= 1                 compiled code: the trace with that number
**   EXIT                 a trace exit: the trace that exits, known as
**                        J->parent from the exit handler on, unless the
**                        JIT compiler is at work (a side trace starting)
**   INTERP, C, RECORD, 0 the frame on top of g->cur_L (RECORD: the
**                        interpreter runs each instruction while the
**                        recorder watches; 0: a VM that never ran); the
**                        recorder's own allocations run in a C frame
**                        whose saved pc is the no-pc marker
**   anything else        the VM's own work: the collector, the compiler
*/

#ifndef MP_WHERE_H
#define MP_WHERE_H

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_jit.h"
#include "lj_dispatch.h"

#include "mp_sym.h"

/* Where the VM is. */
typedef enum mp_at {
  MP_AT_VM,	/* Its own work (collector, JIT compiler, a closing state):
		   billed INTERNAL, no stack. */
  MP_AT_TRACE,	/* Trace tn runs. */
  MP_AT_EXIT,	/* Trace tn exits (objects it sank are rebuilt, the stack
		   may grow): billed to the trace, with no frames. */
  MP_AT_HOST,	/* No function runs: the program that embeds the VM calls
		   the Lua API from C. */
  MP_AT_FRAME	/* Function fn runs in frame top of L; pc is the pc saved
		   for it (after the current instruction), NULL when a C
		   function or builtin runs in a C frame that has none. */
} mp_at;

typedef struct mp_where {
  TraceNo tn;		/* MP_AT_TRACE, MP_AT_EXIT. */
  lua_State *L;		/* g->cur_L (MP_AT_TRACE, MP_AT_FRAME). */
  TValue *top;		/* MP_AT_FRAME: the frame's slot... */
  GCfunc *fn;		/* ...its function... */
  const BCIns *pc;	/* ...and its pc. */
} mp_where;

/* Where the VM of g is (its vmstate vst, read once by the caller), into
** *w. */
static MP_INLINE mp_at mp_where_is(global_State *g, int32_t vst, mp_where *w)
{
  lua_State *L;
  void *cf;
  if (vst > 0) {	/* Trace numbers start at 1. */
    w->tn = (TraceNo)vst;
    w->L = (lua_State *)gcref(g->cur_L);
    return MP_AT_TRACE;
  }
  if (vst == ~LJ_VMST_EXIT) {
    jit_State *J = G2J(g);
    if (J->state != LJ_TRACE_IDLE || J->parent == 0) return MP_AT_VM;
    w->tn = J->parent;
    return MP_AT_EXIT;
  }
  if (vst != ~LJ_VMST_INTERP && vst != ~LJ_VMST_C &&
      vst != ~LJ_VMST_RECORD && vst != 0)
    return MP_AT_VM;
  if (!(w->L = L = (lua_State *)gcref(g->cur_L))) return MP_AT_VM;
  w->top = L->base - 1;
  if (w->top <= tvref(L->stack) + LJ_FR2)	/* No function running. */
    return vst == ~LJ_VMST_RECORD ? MP_AT_VM : MP_AT_HOST;
  if (!(cf = cframe_raw(L->cframe))) return MP_AT_VM;
  w->fn = frame_func(w->top);
  w->pc = cframe_pc(cf);
  if ((void *)w->pc == (void *)cframe_L(cf)) {	/* No pc saved. */
    if (w->fn->c.gct != ~LJ_TFUNC || isluafunc(w->fn) ||
	G2J(g)->state != LJ_TRACE_IDLE)
      return MP_AT_VM;	/* The JIT compiler's own, e.g. recording a call. */
    w->pc = NULL;
  }
  return MP_AT_FRAME;
}

/* The trace a free is billed to, 0 for INTERNAL: the running trace, or
** the one exiting, as version 3 bills frees. A free never looks at
** frames: the pc saved for the top frame may be stale. */
static MP_INLINE TraceNo mp_free_trace(global_State *g, int32_t vst)
{
  if (vst > 0) return (TraceNo)vst;
  if (vst == ~LJ_VMST_EXIT && G2J(g)->state == LJ_TRACE_IDLE)
    return G2J(g)->parent;
  return 0;
}

/* Whether mp_free_trace() may bill a trace: the hooks' cheap test before
** it. */
static MP_INLINE int mp_free_may_trace(int32_t vst)
{
  return vst > 0 || vst == ~LJ_VMST_EXIT;
}

#endif
