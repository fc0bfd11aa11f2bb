/*
** mp_preload.h: the table between the agent (mp_native.c) and
** libljmemprof_preload.so (src/preload/ljmp_preload.c), native memory's
** LD_PRELOAD mode: the library's malloc family calls the hook the agent
** set while it records, else the allocator's own function.
*/

#ifndef MP_PRELOAD_H
#define MP_PRELOAD_H

#include <stdint.h>

#define MP_PRELOAD_SYM		"ljmp_preload"	/* The table's symbol. */
#define MP_PRELOAD_VERSION	2	/* 2: mremap. */

/* The functions, in the order of mp_native.c's wrappers. */
enum {
  MP_PL_MALLOC, MP_PL_CALLOC, MP_PL_REALLOC, MP_PL_REALLOCARRAY, MP_PL_FREE,
  MP_PL_POSIX_MEMALIGN, MP_PL_ALIGNED_ALLOC, MP_PL_MEMALIGN, MP_PL_VALLOC,
  MP_PL_PVALLOC, MP_PL_MMAP, MP_PL_MMAP64, MP_PL_MUNMAP, MP_PL_MREMAP,
  MP_PL_N
};

typedef struct mp_preload {
  uint32_t version;	/* MP_PRELOAD_VERSION. */
  uint32_t n;		/* MP_PL_N. */
  void *hook[MP_PL_N];	/* The agent's wrapper, or NULL (atomic). */
  void *real[MP_PL_N];	/* The allocator's own functions. */
} mp_preload;

#endif
