/*
** mp_arm.h: arming a signal, and starting from LJMEMPROF (mp_arm.c).
*/

#ifndef MP_ARM_H
#define MP_ARM_H

#include "lua.h"

/* The number of a signal that may be armed, from its name ("USR2",
** "SIGUSR2", "RTMIN+3", "12"), or 0. */
int mp_signal_number(const char *name);
/* Whether signal signo may be armed. */
int mp_signal_ok(int signo);
/* Start (or arm) as the LJMEMPROF variable says, if it is set: 0, or -1
** with a message in err. */
int mp_env_start(lua_State *L, char *err, size_t errsize);

#endif
