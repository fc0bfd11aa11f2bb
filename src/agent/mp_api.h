/*
** mp_api.h: what the public C API (ljmp_api.c) gives the other files:
** stopping with a finaliser's error, finding a VM's profiler, the
** registry sentinel, and the rules of options and paths.
*/

#ifndef MP_API_H
#define MP_API_H

#include "lua.h"
#include "ljmemprof.h"
#include "mp_agent.h"
#include "mp_options.h"

void mp_sentinel_install(lua_State *L);
/* The live profiler of L's VM (its hook, or wrapped by something else),
** or NULL. */
mp_state *mp_state_find(lua_State *L);
/* ljmp_stop_with(), and for LJMP_EFINALIZER the first error of a
** finaliser in its collection into why (NULL: not wanted). */
int mp_stop(lua_State *L, unsigned flags, char *why, size_t size);

#endif
