/*
** mp_check.c: the load-time check that the running VM matches our headers.
**
** The agent reads internal fields of global_State, lua_State, the frames and
** jit_State. Built against another LuaJIT (OpenResty's structs are larger),
** those reads would be garbage, and garbage followed as pointers corrupts
** memory. So each step below validates a field against something the public
** API says, before any pointer read from it is followed.
*/

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "luajit.h"
#include "lauxlib.h"

#include "mp_check.h"

/* Is [p, p+size) mapped memory? Asks the kernel (mincore fails with
** ENOMEM on unmapped pages), so a wrong guess is never dereferenced. */
static int readable(const void *p, size_t size)
{
  uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = (uintptr_t)p & ~(pg - 1);
  uintptr_t e = ((uintptr_t)p + size + pg - 1) & ~(pg - 1);
  unsigned char vec[64];
  if (!p || (uintptr_t)p + size < (uintptr_t)p) return 0;
  for (; a < e; a += 64 * pg) {
    size_t len = e - a < 64 * pg ? e - a : 64 * pg;
    if (mincore((void *)a, len, vec) != 0) return 0;
  }
  return 1;
}

/* Does J->flags give the same strings as jit.status() (on the Lua stack
** from index first on)? names is a length-prefixed list as in lj_jit.h. */
static int flags_match(lua_State *L, int *idx, uint32_t flags, uint32_t bit,
		       const char *names)
{
  const uint8_t *p = (const uint8_t *)names;
  for (; *p; p += *p + 1, bit <<= 1) {
    if (!(flags & bit)) continue;
    if (lua_type(L, *idx) != LUA_TSTRING) return 0;
    if (lua_objlen(L, *idx) != *p ||
	memcmp(lua_tostring(L, *idx), p + 1, *p) != 0)
      return 0;
    (*idx)++;
  }
  return 1;
}

/* Compare the JIT state with jit.status(); NULL if it matches. */
static const char *check_jit(lua_State *L, global_State *g)
{
  const char *why = NULL;
  int top = lua_gettop(L), idx;
  jit_State *J = G2J(g);
  if (!readable(J, sizeof(*J))) return "jit_State is not in mapped memory";
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  if (!lua_istable(L, -1)) goto done;	/* No library opened yet. */
  lua_getfield(L, -1, "jit");
  if (!lua_istable(L, -1)) goto done;	/* No jit library: nothing to compare. */
  lua_getfield(L, -1, "version");
  if (!lua_isstring(L, -1) || strcmp(lua_tostring(L, -1), LUAJIT_VERSION)) {
    why = "jit.version differs from the LuaJIT version of the build";
    goto done;
  }
  lua_pop(L, 1);
  lua_getfield(L, -1, "status");
  if (!lua_isfunction(L, -1)) goto done;
  idx = lua_gettop(L);
  if (lua_pcall(L, 0, LUA_MULTRET, 0) != 0) {
    why = "jit.status() failed";
    goto done;
  }
  if (lua_toboolean(L, idx) != !!(J->flags & JIT_F_ON)) {
    why = "jit_State flags differ from jit.status()";
    goto done;
  }
  idx++;
  if (!flags_match(L, &idx, J->flags, JIT_F_CPU, JIT_F_CPUSTRING) ||
      !flags_match(L, &idx, J->flags, JIT_F_OPT, JIT_F_OPTSTRING) ||
      idx != lua_gettop(L) + 1) {
    why = "jit_State flags differ from jit.status()";
    goto done;
  }
  if (J->sizetrace > 65536 || (J->sizetrace == 0) != (J->trace == NULL) ||
      J->freetrace > J->sizetrace || J->state > LJ_TRACE_ERR) {
    why = "jit_State trace array is implausible";
    goto done;
  }
done:
  lua_settop(L, top);
  return why;
}

/* See mp_check.h. Each pointer is checked before it is followed. */
const char *mp_check_vm(lua_State *L, lua_CFunction from_call, int jit)
{
  global_State *g;
  lua_State *main;
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  /* L itself is a real lua_State; a smaller or larger guess of its layout
  ** only reads inside it or a few words past it (same allocation chunk). */
  if (L->gct != ~LJ_TTHREAD)
    return "lua_State header differs";
  g = G(L);
  if (!readable(g, sizeof(*g)))
    return "lua_State.glref does not point to mapped memory";
  if (g->allocf != f || g->allocd != ud)
    return "global_State.allocf differs from lua_getallocf()";
  main = mainthread(g);
  if (!readable(main, sizeof(*main)) || main->gct != ~LJ_TTHREAD ||
      G(main) != g)
    return "global_State main thread is not a thread of this state";
  if (!readable(tvref(L->stack), L->stacksize * sizeof(TValue)) ||
      L->base < tvref(L->stack) || L->top < L->base ||
      L->top > tvref(L->stack) + L->stacksize)
    return "lua_State stack fields differ";
  if (from_call) {
    TValue *frame = L->base - 1;
    GCfunc *fn;
    if ((lua_State *)gcref(g->cur_L) != L)
      return "global_State.cur_L is not the running thread";
    if (g->vmstate != ~LJ_VMST_C)
      return "global_State.vmstate is not C inside a C function";
    if (L->base <= tvref(L->stack) + LJ_FR2 || L->base > L->top)
      return "lua_State.base is outside the stack";
    fn = frame_func(frame);
    if (!readable(fn, sizeof(GCfuncC)))
      return "the calling frame does not hold a function";
    if (fn->c.gct != ~LJ_TFUNC || !iscfunc(fn) || fn->c.f != from_call)
      return "the calling frame does not hold the called C function";
  }
  if (!readable(G2J(g), sizeof(jit_State)))
    return "jit_State is not in mapped memory";
  return jit ? check_jit(L, g) : NULL;
}
