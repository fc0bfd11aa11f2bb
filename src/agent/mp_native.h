/*
** mp_native.h: native memory, what C code allocates on behalf of Lua
** (mp_native.c): the malloc family and anonymous mmap/munmap of every
** loaded object, recorded beside the VM's heap.
*/

#ifndef MP_NATIVE_H
#define MP_NATIVE_H

#include "mp_agent.h"

/* Start recording s's native events (s is recording with stacks, its
** allocator not yet installed: its orig_f gets a guard, so that the VM's
** own allocations are never native ones). 0, LJMP_EBUSY (another native
** recording runs in this process) or LJMP_ENOMEM. */
int mp_native_start(mp_state *s);

/* Stop: the slots patched are put back, the events queued are written
** (the stream is still open), s's orig_f is the VM's allocator again. */
void mp_native_stop(mp_state *s);

/* Write the native events other threads queued (on the VM's thread,
** inside an event): s->drain while recording native memory. */
void mp_native_drain(mp_state *s);

#endif
