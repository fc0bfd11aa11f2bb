/*
** mp_check.h: does the running VM have the layout this module was built for?
*/
#ifndef MP_CHECK_H
#define MP_CHECK_H

#include "lua.h"

/* NULL if the VM of L matches the LuaJIT headers of this build, else what
** differs. from_call: L is inside a Lua call of a C function of ours, so
** the frame and the VM state can be checked too. jit: compare the JIT's
** state with jit.status() too (which makes a little garbage). Reads only
** fields whose addresses are derived from pointers already validated. */
const char *mp_check_vm(lua_State *L, lua_CFunction from_call, int jit);

#endif
