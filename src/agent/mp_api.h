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

void mp_sentinel_install(lua_State *L);
/* The live profiler of L's VM (its hook, or wrapped by something else),
** or NULL. */
mp_state *mp_state_find(lua_State *L);
/* ljmp_stop_with(), and for LJMP_EFINALIZER the first error of a
** finaliser in its collection into why (NULL: not wanted). */
int mp_stop(lua_State *L, unsigned flags, char *why, size_t size);

#define MP_BUFSIZE_MIN	((size_t)4096)	/* The least bufsize but 0. */
#define MP_PATH_MAX	4096	/* A profile's path, expanded, and its NUL. */

/* Copy the caller's options into *o (see ljmp_options.size) and check all
** ljmp_start() takes of them (one sink, the path and its % sequences,
** bufsize, mode, stacks, max_size); ljmp_arm() checks the same: 0, or
** LJMP_EARG with a one-line message into msg (NULL: none; cut to size). */
int mp_options_read(ljmp_options *o, const ljmp_options *user, char *msg,
		    size_t size);
/* 0 if the % sequences of a profile's path are all known (%p, %n, %%),
** -1 if not, -2 if the path expanded does not fit in MP_PATH_MAX. */
int mp_path_check(const char *path);
/* What is wrong with a path, for mp_path_check()'s -1 or -2. */
const char *mp_path_why(int rc);
#define MP_PATH_PCT	"% must be followed by p (the pid), n (the number " \
			"of the start) or %"

/* The directory of a profile's path (before its last '/'; "." if it has
** none) into dir, %% made %: 0, or -1 if it holds %p or %n (what a
** signal's recording would expand differently: the pid changes at fork)
** or does not fit. */
int mp_path_dir(const char *path, char *dir, size_t size);
#define MP_DIR_PCT	"the directory must not hold %p or %n: it is checked " \
			"when the signal is armed"

/* Why stacks = 0 is refused with sampling (Lua and LJMEMPROF). */
#define MP_SAMPLE_STACKS	"sampled profiles record call stacks (leave " \
				"stacks out for 64 frames, or give 1 to 10000)"

#endif
