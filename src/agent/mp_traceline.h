/*
** mp_traceline.h: where compiled code was when it allocated: the return
** address into a trace's machine code (inline, on the hot path of the
** stacks mode), and the line it stands for (mp_traceline.c).
*/

#ifndef MP_TRACELINE_H
#define MP_TRACELINE_H

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_jit.h"

#include "mp_agent.h"
#include "mp_node.h"

#define MP_SCAN_BYTES	16384	/* C stack searched for a trace's code. */


/* The first word on the C stack above `from` that points into trace T's
** code, or 0. The same call path into the VM puts it at the same distance
** from the hook's frame: the last two distances are tried first. This
** may find a stale word in the frame of a C function the trace called
** (the strings benchmark has one: an earlier call's return address, 43
** words below the real one), which trace_ret() does not. */
uintptr_t mp_scan_ret(mp_stacks *st, const GCtrace *T, const void *from);

/* The return address into trace T's code of the call that led to the
** hook (from: the hook's frame), or 0. On x64 it is in a known word: the
** VM's C frame starts at L->cframe; a trace runs below it, lowered by
** what the VM adds for compiled code (CFRAME_SIZE_JIT - CFRAME_SIZE: the
** registers only traces use) and by T->spadjust (which includes a parent
** trace's), and calls C with the stack pointer there, so the call puts
** its return address just below (the checked build aborts if that word
** does not point into T's code). Elsewhere, the C stack is searched
** (mp_scan_ret()). */
static MP_INLINE uintptr_t mp_trace_ret(mp_stacks *st, const GCtrace *T,
					const lua_State *L, const void *from)
{
#if LJ_TARGET_X64
  const uintptr_t *w = (const uintptr_t *)
    ((const char *)cframe_raw(L->cframe) - T->spadjust -
     (CFRAME_SIZE_JIT - CFRAME_SIZE)) - 1;
  /* (Unsigned: w is above from, within MP_SCAN_BYTES; *w is above the
  ** trace's first byte, at most at its end.) */
  if ((uintptr_t)w - (uintptr_t)from - 1 < MP_SCAN_BYTES - 1) {
    if (*w - (uintptr_t)T->mcode - 1 < (uintptr_t)T->szmcode) return *w;
#ifdef MP_STACK_CHECK
    /* The layout above is wrong for this VM. */
    mp_stack_check_failed("a return address into the trace where the VM puts it",
		 *w, mp_scan_ret(st, T, from));
#endif
  }
#endif
  return mp_scan_ret(st, T, from);
}

/* The line trace T (number tn, base frame function basefn or NULL) was
** executing at return address ret into its code, mapped through T's
** snapshots, into *f, and the frames the trace inlined below it into
** inl[0..*ninl). Each return address is mapped once (if cached: else
** every time). 0 if no line is known, 2 if it is in the trace's base
** frame itself, 3 if it is the line of the call that made the base frame
** (a tail call from the base frame: *f is then not set), else 1 (a frame
** the trace inlined; then *baseline is the line of the base frame's call
** into the frames inlined, 0 if not known). */
int mp_trace_line(mp_state *s, GCtrace *T, TraceNo tn, const GCfunc *basefn,
		  const TValue *slots, uintptr_t ret, mp_snode *f, mp_snode *inl,
		  unsigned *ninl, uint32_t *baseline, int cached);

/* Learn, before recording, the addresses of the VM functions whose calls
** from compiled code say what a trace allocated (the trace-line map). */
void mp_stack_jit_calls(mp_stacks *st, lua_State *L);

#endif
