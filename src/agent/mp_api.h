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
/* What a stop says beyond its code. */
typedef struct mp_stopinfo {
  char why[512];	/* LJMP_EFINALIZER: the first error of a finaliser in
			   its collection. */
  int snaprc;		/* The snapshot's code (0: taken, or none)... */
  char snap[MP_PATH_MAX];	/* ...and its path, as given. */
} mp_stopinfo;

/* Not a flag of ljmp_stop_with()'s: the VM is closing (lua_close()). */
#define MP_STOP_CLOSING	0x100

/* ljmp_stop_with(): snap (NULL: the start's ljmp_options.snapshot, if
** any) is the snapshot taken after the collection; *info (NULL: not
** wanted) says more. */
int mp_stop(lua_State *L, unsigned flags, const char *snap,
	    mp_stopinfo *info);

#endif
