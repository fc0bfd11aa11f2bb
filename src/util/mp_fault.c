/*
** mp_fault.c: the counter behind mp_fault.h (the fault build only): which
** allocation calls fail, from the environment, and how many were made.
*/

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/mp_fault.h"

#ifndef MP_FAULT
#error "mp_fault.c belongs to the fault build only (-DMP_FAULT)"
#endif

#undef malloc
#undef calloc
#undef realloc
#undef strdup
#undef strndup
#undef posix_memalign
#undef open_memstream

/* The sanitizers' stack printer (the fault build has them). */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

static struct {
  int read;		/* The environment was read (atomic). */
  uint64_t at;		/* The call that fails first; 0: none. */
  int persist;		/* Every call from at on fails. */
  int stack;		/* Print the stack of a failed call. */
  int sites;		/* MP_FAULT_SITES's file; -1: none. */
  uint64_t calls;	/* Calls counted so far (atomic). */
  uint64_t failed;	/* Calls failed so far (atomic). */
} fault;

/* Read the environment once (threads that race here read the same values;
** only the sites file could be opened twice, and a counting run has one
** allocating thread). */
static void fault_read(void)
{
  const char *v;
  if (__atomic_load_n(&fault.read, __ATOMIC_ACQUIRE)) return;
  v = getenv("MP_FAULT_AT");
  fault.at = v ? strtoull(v, NULL, 10) : 0;
  v = getenv("MP_FAULT_PERSIST");
  fault.persist = v && *v && strcmp(v, "0");
  v = getenv("MP_FAULT_STACK");
  fault.stack = v && *v && strcmp(v, "0");
  v = getenv("MP_FAULT_SITES");
  fault.sites = v && *v ? open(v, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			       0600) : -1;
  __atomic_store_n(&fault.read, 1, __ATOMIC_RELEASE);
}

/* Write call n's site: its caller and the three frames above, return
** addresses as they are in this process, so that one helper (a hash
** table's growth) is one site per table that calls it. */
static __attribute__((noinline)) void fault_site(uint64_t n)
{
  void *pc[8] = { 0 };	/* backtrace(), here, fault_hit, mp_fault_*, ... */
  char line[128];
  int k = backtrace(pc, 8), len;
  len = snprintf(line, sizeof(line), "%llu %p:%p:%p:%p\n",
		 (unsigned long long)n, pc[4], k > 5 ? pc[5] : NULL,
		 k > 6 ? pc[6] : NULL, k > 7 ? pc[7] : NULL);
  if (write(fault.sites, line, (size_t)len) < 0) {
    close(fault.sites);
    fault.sites = -1;
  }
}

/* Count one call; 1 if it is to fail (errno is then ENOMEM). */
static __attribute__((noinline)) int fault_hit(void)
{
  uint64_t n;
  fault_read();
  n = __atomic_add_fetch(&fault.calls, 1, __ATOMIC_RELAXED);
  if (fault.sites >= 0) fault_site(n);
  if (!fault.at || n < fault.at || (n > fault.at && !fault.persist))
    return 0;
  __atomic_add_fetch(&fault.failed, 1, __ATOMIC_RELAXED);
  if (fault.stack && __sanitizer_print_stack_trace) {
    fprintf(stderr, "mp_fault: call %llu fails here:\n", (unsigned long long)n);
    __sanitizer_print_stack_trace();
  }
  errno = ENOMEM;
  return 1;
}

/* The wrappers (mp_fault.h): the C library's call, unless this one fails. */

void *mp_fault_malloc(size_t n)
{
  return fault_hit() ? NULL : malloc(n);
}

void *mp_fault_calloc(size_t k, size_t n)
{
  return fault_hit() ? NULL : calloc(k, n);
}

/* A resize to 0 frees: it is passed on uncounted. */
void *mp_fault_realloc(void *p, size_t n)
{
  if (p && !n) return realloc(p, n);
  return fault_hit() ? NULL : realloc(p, n);
}

char *mp_fault_strdup(const char *s)
{
  return fault_hit() ? NULL : strdup(s);
}

char *mp_fault_strndup(const char *s, size_t n)
{
  return fault_hit() ? NULL : strndup(s, n);
}

int mp_fault_posix_memalign(void **out, size_t align, size_t n)
{
  return fault_hit() ? ENOMEM : posix_memalign(out, align, n);
}

FILE *mp_fault_open_memstream(char **buf, size_t *size)
{
  return fault_hit() ? NULL : open_memstream(buf, size);
}

/* At exit (after the atexit handlers, the agent's end of stream among
** them): the counts into MP_FAULT_REPORT, if set. */
__attribute__((destructor)) static void fault_report(void)
{
  const char *path = getenv("MP_FAULT_REPORT");
  FILE *f;
  if (!path || !*path || !(f = fopen(path, "w"))) return;
  fprintf(f, "calls %llu failed %llu\n",
	  (unsigned long long)__atomic_load_n(&fault.calls, __ATOMIC_RELAXED),
	  (unsigned long long)__atomic_load_n(&fault.failed, __ATOMIC_RELAXED));
  fclose(f);
}
