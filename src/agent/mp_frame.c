/*
** mp_frame.c: the frame walker (see mp_frame.h for the frame kinds).
*/

#include <string.h>

#include "lj_obj.h"
#include "lj_debug.h"
#include "lj_frame.h"
#include "lj_state.h"
#include "lj_jit.h"
#include "lj_dispatch.h"

#include "mp_frame.h"

/* See mp_frame.h. */
const BCIns *mp_cframe_pc(void *cf)
{
  const BCIns *pc = cframe_pc(cf);
  if ((const void *)pc == (const void *)cframe_L(cf)) return NULL;
  return pc;
}

/* See mp_frame.h. The pc of the Lua frame below frame `above`, which was
** entered from C.
** Every frame entered from C (a C call, an FFI callback) has a C frame of
** its own, and protected calls made by the VM push C frames that stand
** for the stack above the top they saved: walking the frames down from the
** top to `above`, step to the previous C frame at each of them; the one in
** force below `above` holds the pc of the Lua function there. */
const BCIns *mp_pc_from_cframes(lua_State *L, TValue *above)
{
  void *cf = cframe_raw(L->cframe);
  TValue *f = L->base - 1, *bot = tvref(L->stack) + LJ_FR2;
  unsigned left = MP_WALK_MAX;
  for (;;) {
    if (!cf || !left--) return NULL;
    while (cframe_nres(cf) < 0) {	/* A C frame of a protected call. */
      if (f >= restorestack(L, -cframe_nres(cf))) break;
      cf = cframe_raw(cframe_prev(cf));
      if (!cf) return NULL;
    }
    if (f < above) break;
    if (f <= bot) return NULL;
    if (frame_islua(f)) {
      f = frame_prevl(f);
    } else {
      if (frame_isc(f) || (frame_iscont(f) && frame_iscont_fficb(f)))
	cf = cframe_raw(cframe_prev(cf));
      f = frame_prevd(f);
    }
  }
  return mp_cframe_pc(cf);
}

/* Is pc - 1 the copy of the first instruction of one of the traces? The
** VM resumes there after some trace exits (lj_trace_exit); if so, the
** trace's start pc. Scans the trace array: rare, and it never follows a
** pointer it has not found there. */
static const BCIns *trace_start_pc(global_State *g, const BCIns *pc)
{
#if LJ_HASJIT
  jit_State *J = G2J(g);
  TraceNo n;
  for (n = 1; n < J->sizetrace; n++) {
    GCtrace *T = (GCtrace *)gcref(J->trace[n]);
    if (T && &T->startins == pc - 1) return mref(T->startpc, const BCIns);
  }
#endif
  (void)g;
  (void)pc;
  return NULL;
}

int32_t mp_lua_pos_outside(GCfunc *fn, const BCIns *pc, global_State *g)
{
  GCproto *pt = funcproto(fn);
  BCPos pos;
  if (!pc) return -1;
  pc = trace_start_pc(g, pc);
  if (!pc) return -1;
  pos = proto_bcpos(pt, pc);
  return pos < pt->sizebc ? (int32_t)pos : -1;
}

/* -- Debug info of prototypes -------------------------------------------- */

/* Read a ULEB128 number of debug info at *pp (at most 32 bits). */
static uint32_t read_uleb(const uint8_t **pp)
{
  const uint8_t *p = *pp;
  uint32_t v = *p++;
  if (v >= 0x80) {
    int sh = 0;
    v &= 0x7f;
    do { v |= (uint32_t)(*p & 0x7f) << (sh += 7); } while (*p++ >= 0x80 && sh < 28);
  }
  *pp = p;
  return v;
}

/* See mp_frame.h. The varinfo is a list of variables in the order they
** become active (name or internal code, start as a difference to the
** previous start, length), as lua_getlocal reads it: the k-th variable
** active at pos is register k. */
const char *mp_proto_varname(const GCproto *pt, BCPos pos, BCReg slot)
{
  const uint8_t *p = proto_varinfo(pt);
  BCPos start = 0;
  if (!p) return NULL;
  for (;;) {
    const uint8_t *name = p;
    uint32_t code = *p;
    BCPos end;
    if (code == VARNAME_END) return NULL;
    if (code >= VARNAME__MAX) p += strlen((const char *)p);
    p++;
    start += read_uleb(&p);
    if (start > pos) return NULL;
    end = start + read_uleb(&p);
    if (pos < end && slot-- == 0)
      return code >= VARNAME__MAX ? (const char *)name : NULL;
  }
}
