/*
** mp_proc.h: the process-wide state of the agent (mp_proc.c): the list of
** running profilers, process exit and fork. A leaf: it calls only the
** sink, so every other file may use it.
*/

#ifndef MP_PROC_H
#define MP_PROC_H

#include "lua.h"

#include "mp_agent.h"

/* Enter a profiler in the list, not yet live (finished is set), unless it
** writes a regular file that another one of this process writes: 0 or
** LJMP_EBUSY. */
int mp_proc_enter(mp_state *s, int regular);
/* Make a listed profiler live: from now on at_exit() finalises it. */
void mp_proc_live(mp_state *s);
/* Forget a profiler. */
void mp_proc_del(mp_state *s);
/* The live profiler of the VM whose global_State is g (listed, not
** finished, not a forked child's copy), or NULL. */
mp_state *mp_proc_find(void *g);
/* What to do when a VM closes, after its profiler stopped (mp_arm.c
** un-arms it), and doing it (the registry sentinel's finaliser). */
void mp_proc_on_close(void (*f)(lua_State *L));
void mp_proc_closed(lua_State *L);

#endif
