/*
** mp_frame.h: the one walker over the frames of a LuaJIT stack.
**
** The hook uses it for the caller of a builtin; the call-stack recorder
** walks whole stacks with it. It knows every kind of frame LuaJIT 2.1
** makes (lj_frame.h), each by what its link says about the frame below:
**
**   Lua link (PC)   a call from a Lua function: the caller's pc is the link
**   continuation    a call made for the interpreter without a Lua call
**                   instruction: a metamethod, or a builtin that compiled
**                   code calls through trace stitching (gmatch, gsub, next,
**                   ...); the caller's pc is in the continuation slot below
**   FFI callback    a continuation too, but the slot holds no pc: C code
**                   called back into Lua, the caller's pc is in a C frame
**   C, cpcall       a call from C (lua_call, lua_pcall, the GC running a
**                   finaliser, a debug hook): when a Lua function lies below,
**                   its pc is in the C frame that was innermost while it ran
**   pcall, xpcall   a call from the pcall builtin, itself a frame below
**   vararg          a vararg function's own frame, moved above its
**                   arguments; the frame below is the same call, skipped
**   dummy           holds the thread, not a function (lj_err_optype_call):
**                   skipped
** The top frame of a Lua function has its pc in the innermost C frame,
** unless the VM saved none there (the JIT compiler works in a protected
** call whose C frame holds the "no pc" marker): then the pc is NULL.
** Coroutines: the walk covers the stack of one lua_State; the bottom of a
** coroutine's stack ends it.
**
** Cost: a few loads per frame. Every step moves strictly down the stack
** and is bounded, so even a stack in an unexpected state cannot loop.
*/

#ifndef MP_FRAME_H
#define MP_FRAME_H

#include "lj_obj.h"
#include "lj_frame.h"

#include "mp_names.h"	/* mp_require_wrapper: the walk skips its frames. */

/* What a frame runs. */
enum {
  MP_FR_LUA = 1,	/* A Lua function; pc says where. */
  MP_FR_BUILTIN,	/* A builtin of the standard library: a fast
			   function (ffid > 1), or one LuaJIT writes in Lua
			   (table.move: see mp_lua_builtin()). */
  MP_FR_C		/* A C function (lua_CFunction). */
};

/* Is Lua function fn one of LuaJIT's builtins written in Lua (table.move,
** table.insert's slow path, ...)? They have no line info and their first
** line says so (lj_debug.c shows them as "[builtin:NAME]"). */
static inline int mp_lua_builtin(const GCfunc *fn)
{
  return funcproto(fn)->firstline == ~(BCLine)0;
}

/* One frame, as the walker reports it. */
typedef struct mp_frame {
  GCfunc *fn;
  const BCIns *pc;	/* Lua: the pc saved for it (the instruction after
			   the one executing), or NULL when none is known. */
  TValue *slot;		/* The frame's slot holding its call's link (for a
			   vararg function, the slot it was called in). */
  int kind;		/* MP_FR_*. */
  int cpc;		/* Lua: its pc was read from a C frame (see
			   mp_pc_from_cframes()), not from a frame slot. */
} mp_frame;

typedef struct mp_walk {
  lua_State *L;
  TValue *f;		/* Next frame to report. */
  TValue *above;	/* The frame reported before it (its link tells f's
			   pc), or NULL while f is the top frame. */
  TValue *bot;		/* The stack's base: no frame at or below it. */
  const BCIns *toppc;	/* The top frame's pc if given, else NULL (then it
			   is read from the innermost C frame). */
  unsigned left;	/* Steps left: a bound against a broken chain. */
} mp_walk;

#define MP_WALK_MAX	100000	/* More frames than LuaJIT's stack limit. */

/* Start a walk at the top of L's stack (the running function). */
static inline void mp_walk_init(mp_walk *w, lua_State *L)
{
  w->L = L;
  w->f = L->base - 1;
  w->above = NULL;
  w->bot = tvref(L->stack) + LJ_FR2;
  w->toppc = NULL;
  w->left = MP_WALK_MAX;
}

/* Start a walk at frame f of L's stack, whose pc is toppc if it runs a Lua
** function (compiled code keeps no pc for the frame it runs in). */
static inline void mp_walk_init_at(mp_walk *w, lua_State *L, TValue *f,
				   const BCIns *toppc)
{
  mp_walk_init(w, L);
  w->f = f;
  w->toppc = toppc;
}

/* The pc saved in C frame cf, or NULL if it holds the "no pc" marker (a
** protected call of the VM's own, e.g. the JIT compiler) or nothing. */
const BCIns *mp_cframe_pc(void *cf);

/* The pc of the Lua frame below frame `above`, which was entered from C:
** walking the frames down from the top to `above`, step to the previous
** C frame at each frame entered from C; the C frame in force below `above`
** holds the pc. (Rare: hooks, finalisers, FFI callbacks.) */
const BCIns *mp_pc_from_cframes(lua_State *L, TValue *above);

/* The pc of the Lua frame w->f, from the frame above it (see the file
** header). */
static inline const BCIns *mp_walk_lua_pc(mp_walk *w)
{
  TValue *a = w->above;
  void *cf;
  if (!a) {	/* The top frame: its pc is in the innermost C frame. */
    if (w->toppc) return w->toppc;
    cf = cframe_raw(w->L->cframe);
    return cf ? mp_cframe_pc(cf) : NULL;
  }
  if (frame_islua(a)) return frame_pc(a);
  if (frame_iscont(a) && !frame_iscont_fficb(a)) return frame_contpc(a);
  return mp_pc_from_cframes(w->L, a);
}

/* The next frame down the stack into *fr: 1, or 0 at the bottom. Inline:
** the stack recorder walks for every allocation. */
static inline int mp_walk_next(mp_walk *w, mp_frame *fr)
{
  for (;;) {
    TValue *f = w->f, *link, *below;
    GCobj *o;
    if (f <= w->bot || !w->left) return 0;
    w->left--;
    o = frame_gc(f);
    fr->kind = 0;
    /* A dummy frame (no function) is skipped, and so is the require
    ** wrapper's; c.f is read only from a C function's object: a Lua
    ** closure without upvalues ends where c.f would be. */
    if (o->gch.gct == ~LJ_TFUNC &&
	(isluafunc(&o->fn) ||
	 o->fn.c.f != (lua_CFunction)mp_require_wrapper)) {
      GCfunc *fn = &o->fn;
      fr->fn = fn;
      fr->pc = NULL;
      fr->cpc = 0;
      if (isluafunc(fn) && !mp_lua_builtin(fn)) {
	fr->kind = MP_FR_LUA;
	fr->pc = mp_walk_lua_pc(w);
	fr->cpc = w->above && !frame_islua(w->above) &&
		  !(frame_iscont(w->above) && !frame_iscont_fficb(w->above));
      } else if (isluafunc(fn)) {
	fr->kind = MP_FR_BUILTIN;
      } else {
	fr->kind = iscfunc(fn) ? MP_FR_C : MP_FR_BUILTIN;
      }
    }
    /* A vararg function's frame was moved above its arguments; its call's
    ** link is in the frame it left, which is not reported again. */
    link = frame_isvarg(f) ? frame_prevd(f) : f;
    below = frame_islua(link) ? frame_prevl(link) : frame_prevd(link);
    fr->slot = link;
    if (link > f || below >= link) {	/* Not a frame chain: stop. */
      w->left = 0;
      w->f = w->bot;
    } else {
      w->above = link;
      w->f = below;
    }
    if (fr->kind) return 1;
  }
}

/* Slow half of mp_lua_pos(): a pc outside fn's bytecode. */
int32_t mp_lua_pos_outside(GCfunc *fn, const BCIns *pc, global_State *g);

/* The name of the local in register slot of prototype pt at bytecode
** position pos, from its debug info (as lua_getlocal finds it); NULL if
** none, one of the VM's own (for-loop state), or stripped. */
const char *mp_proto_varname(const GCproto *pt, BCPos pos, BCReg slot);

/* Bytecode position of the instruction before pc in the Lua function fn
** (the one executing), or -1 if pc is not in fn's bytecode. */
static inline __attribute__((always_inline)) int32_t
mp_lua_pos_in(GCfunc *fn, const BCIns *pc)
{
  GCproto *pt = funcproto(fn);
  BCPos pos = proto_bcpos(pt, pc) - 1;
  return pc && pos < pt->sizebc ? (int32_t)pos : -1;
}

/* The same, and a pc in the copy of a trace's first instruction (where a
** trace exit may leave the VM) maps to the trace's start. Inline: the
** hook asks for every Lua allocation. */
static inline int32_t mp_lua_pos(GCfunc *fn, const BCIns *pc,
				 global_State *g)
{
  int32_t pos = mp_lua_pos_in(fn, pc);
  return pos >= 0 ? pos : mp_lua_pos_outside(fn, pc, g);
}

#endif
