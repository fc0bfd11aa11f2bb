/*
** mp_heap_walk.h: the heap snapshot (what is live now, and what holds it).
**
** The only interface between the walker (mp_heap_walk.c) and the rest of
** the agent: the C API's ljmp_snapshot() and the Lua binding's snapshot.
*/

#ifndef MP_HEAP_WALK_H
#define MP_HEAP_WALK_H

#include "lua.h"
#include "ljmemprof.h"

/* Lua: mp.snapshot(path | {path =, mode =, max_size =, bufsize =,
** collect =}) -> true, or nil, message, errno. */
int mp_lua_snapshot(lua_State *L);

#endif
