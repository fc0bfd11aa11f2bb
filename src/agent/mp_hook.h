/*
** mp_hook.h: the allocator hook of the one-frame stream (mp_hook.c).
*/

#ifndef MP_HOOK_H
#define MP_HOOK_H

#include "mp_agent.h"

/* The lua_Alloc installed while recording one frame per event. */
void *mp_hook_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

#endif
