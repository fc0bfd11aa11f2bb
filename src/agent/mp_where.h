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
  MP_AT_FRAME	/* A function runs in frame top of L; pc is the pc saved
		   for it (after the current instruction), NULL when a C
		   function or builtin runs in a C frame that has none. */
} mp_at;

typedef struct mp_where {
  TraceNo tn;		/* MP_AT_TRACE, MP_AT_EXIT. */
  lua_State *L;		/* g->cur_L (MP_AT_TRACE, MP_AT_FRAME). */
  TValue *top;		/* MP_AT_FRAME: the frame's slot (its function:
			   frame_func(top))... */
  const BCIns *pc;	/* ...and its pc. */
} mp_where;

/* Where the VM of g is (its vmstate vst, read once by the caller), into
** *w. The interpreter's states come first: most allocations happen there,
** and a hook pays for every test before its case. */
static MP_INLINE mp_at mp_where_is(global_State *g, int32_t vst, mp_where *w)
{
  lua_State *L;
  void *cf;
  if (MP_LIKELY(vst == ~LJ_VMST_INTERP || vst == ~LJ_VMST_C) ||
      vst == ~LJ_VMST_RECORD || vst == 0) {
    if (!(w->L = L = (lua_State *)gcref(g->cur_L))) return MP_AT_VM;
    w->top = L->base - 1;
    if (w->top <= tvref(L->stack) + LJ_FR2)	/* No function running. */
      return vst == ~LJ_VMST_RECORD ? MP_AT_VM : MP_AT_HOST;
    if (!(cf = cframe_raw(L->cframe))) return MP_AT_VM;
    w->pc = cframe_pc(cf);
    if (MP_UNLIKELY((void *)w->pc == (void *)cframe_L(cf))) {	/* No pc. */
      GCfunc *fn = frame_func(w->top);
      if (fn->c.gct != ~LJ_TFUNC || isluafunc(fn) ||
	  G2J(g)->state != LJ_TRACE_IDLE)
	return MP_AT_VM;	/* The JIT compiler's own, e.g. recording a call. */
      w->pc = NULL;
    }
    return MP_AT_FRAME;
  }
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
  return MP_AT_VM;	/* The collector, the JIT compiler. */
}

/* Whether the JIT's assembler runs (it makes machine code): what the VM's
** thread allocates natively then, outside the VM's allocator, is the
** JIT's mcode areas (lj_mcode.c mmaps them only from the assembler) and
** their unwind tables. */
static MP_INLINE int mp_where_assembles(const global_State *g)
{
  return g->vmstate == ~LJ_VMST_ASM;
}

/* The bytes of machine code the JIT has mapped (every mcode area, those
** made before a recording started too); 0 without a JIT. */
static MP_INLINE uint64_t mp_where_mcode(global_State *g)
{
#if LJ_HASJIT
  return G2J(g)->szallmcarea;
#else
  (void)g;
  return 0;
#endif
}

/* The JIT's newest mcode area, NULL if none, and while lj_mcode_free()
** unmaps them (it empties the list first, then unmaps each area). */
static MP_INLINE void *mp_where_mcarea(global_State *g)
{
#if LJ_HASJIT
  return G2J(g)->mcarea;
#else
  (void)g;
  return NULL;
#endif
}

/* The mcode area made before area (mp_where_mcarea()), NULL if none, and
** into *size the bytes area has mapped. */
static MP_INLINE void *mp_where_mcnext(void *area, uint64_t *size)
{
#if LJ_HASJIT
  *size = ((MCLink *)area)->size;
  return ((MCLink *)area)->next;
#else
  *size = 0;
  return NULL;
#endif
}

/* Whether an allocation of nsize bytes is the VM's string table growing
** (lj_str_resize(), called by whatever code interned the string that
** filled it): its owner is the VM, not the line that happened to make the
** string, which would otherwise hold a table of every string as a leak.
** LuaJIT grows the table when an insertion leaves more strings than slots
** (g->str.num > mask + 1, which holds only until the new table is in),
** to twice its slots. */
static MP_INLINE int mp_strtab_grows(global_State *g, size_t nsize)
{
  return MP_UNLIKELY(g->str.num > g->str.mask + 1) &&
	 nsize == ((size_t)g->str.mask + 1) * 2 * sizeof(GCRef);
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
