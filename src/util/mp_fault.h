/*
** mp_fault.h: allocation failure on demand, for the fault loops of the
** tests (tests/agent-fault.t, tests/report-fault.t), as SQLite's tests do.
**
** Only the fault build includes it: the compiler is given
** `-DMP_FAULT -include src/util/mp_fault.h` (Makefile, $(BUILD)/fault/),
** and malloc, calloc, realloc, strdup, strndup, posix_memalign and
** open_memstream in every file of the agent and the reader then go through
** a counter (util/mp_fault.c). The environment says which calls fail:
**
**   MP_FAULT_AT=N       the Nth call fails (1 is the first); 0 or unset: none
**   MP_FAULT_PERSIST=1  every call from the Nth on fails, not only the Nth
**   MP_FAULT_REPORT=F   at exit, "calls C failed K" is written to file F:
**                       C calls were counted, K of them failed
**   MP_FAULT_SITES=F   each call's number and site on a line of file F:
**                       "N PC:PC:PC:PC", the caller and three frames above
**                       (the loops choose the Ns to fail from it)
**   MP_FAULT_STACK=1    the stack of each failed call on stderr (to find
**                       the site of a defect the loop found)
**
** A failed call returns NULL (posix_memalign ENOMEM) with errno ENOMEM,
** as the C library does. The macros are function-like, so a function
** pointer or a struct field of the same name is left alone; the file that
** defines the native wrappers (agent/mp_native.c, whose real.malloc() must
** reach the C library) is built without this header, and so are the
** allocations of the C library itself (stdio, qsort) and of zlib.
*/

#ifndef MP_FAULT_H
#define MP_FAULT_H

#ifdef MP_FAULT

/* Included first, before a file can ask for the GNU interfaces (the
** agent and cmd_events.c do): asked for here, for every file alike. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *mp_fault_malloc(size_t n);
void *mp_fault_calloc(size_t k, size_t n);
void *mp_fault_realloc(void *p, size_t n);
char *mp_fault_strdup(const char *s);
char *mp_fault_strndup(const char *s, size_t n);
int mp_fault_posix_memalign(void **out, size_t align, size_t n);
FILE *mp_fault_open_memstream(char **buf, size_t *size);

#define malloc(n)		mp_fault_malloc(n)
#define calloc(k, n)		mp_fault_calloc(k, n)
#define realloc(p, n)		mp_fault_realloc(p, n)
#define strdup(s)		mp_fault_strdup(s)
#define strndup(s, n)		mp_fault_strndup(s, n)
#define posix_memalign(o, a, n)	mp_fault_posix_memalign(o, a, n)
#define open_memstream(b, s)	mp_fault_open_memstream(b, s)

#endif
#endif
