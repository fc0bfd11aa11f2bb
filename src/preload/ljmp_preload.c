/*
** ljmp_preload.c: libljmemprof_preload.so, native memory's LD_PRELOAD
** mode. Loaded first, its malloc family is what every call in the
** process reaches, whatever resolved it and when (a pointer taken before
** the start, a call bound before it): each calls the agent's wrapper
** while the agent has set it (mp_native.c, through the table
** ljmp_preload), and the allocator's own function otherwise (glibc's
** __libc_* entry points; mmap, munmap and mremap as system calls). Nothing here
** allocates or records: the agent's wrappers do, once per call.
*/

#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "agent/mp_preload.h"

#define EXPORT	__attribute__((visibility("default")))

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* -- The allocator's own ---------------------------------------------------- */

/* Whether a is a power of two. */
static int pow2(size_t a)
{
  return a && !(a & (a - 1));
}

static void *real_reallocarray(void *p, size_t k, size_t n)
{
  size_t b;
  if (__builtin_mul_overflow(k, n, &b)) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_realloc(p, b);
}

static int real_posix_memalign(void **out, size_t a, size_t n)
{
  void *p;
  if (!pow2(a) || a % sizeof(void *)) return EINVAL;
  if (!(p = __libc_memalign(a, n))) return ENOMEM;
  *out = p;
  return 0;
}

static void *real_aligned_alloc(size_t a, size_t n)
{
  if (!pow2(a)) {
    errno = EINVAL;
    return NULL;
  }
  return __libc_memalign(a, n);
}

static void *real_mmap(void *a, size_t n, int prot, int flags, int fd,
		       off_t off)
{
  return (void *)syscall(SYS_mmap, a, n, prot, flags, fd, off);
}

static int real_munmap(void *a, size_t n)
{
  return (int)syscall(SYS_munmap, a, n);
}

static void *real_mremap(void *a, size_t o, size_t n, int flags, ...)
{
  void *na = NULL;
  va_list ap;
  if (flags & MREMAP_FIXED) {
    va_start(ap, flags);
    na = va_arg(ap, void *);
    va_end(ap);
  }
  return (void *)syscall(SYS_mremap, a, o, n, flags, na);
}

EXPORT mp_preload ljmp_preload = {
  MP_PRELOAD_VERSION, MP_PL_N, { 0 },
  {
    (void *)__libc_malloc, (void *)__libc_calloc, (void *)__libc_realloc,
    (void *)real_reallocarray, (void *)__libc_free,
    (void *)real_posix_memalign, (void *)real_aligned_alloc,
    (void *)__libc_memalign, (void *)__libc_valloc, (void *)__libc_pvalloc,
    (void *)real_mmap, (void *)real_mmap, (void *)real_munmap,
    (void *)real_mremap
  }
};

/* The function to call for index w: the agent's wrapper, or the real one. */
static inline void *to(int w)
{
  void *h = __atomic_load_n(&ljmp_preload.hook[w], __ATOMIC_ACQUIRE);
  return h ? h : ljmp_preload.real[w];
}

#define TO(w)	to(w)

/* -- What the process calls --------------------------------------------------- */

EXPORT void *malloc(size_t n)
{
  return ((void *(*)(size_t))TO(MP_PL_MALLOC))(n);
}

EXPORT void *calloc(size_t k, size_t n)
{
  return ((void *(*)(size_t, size_t))TO(MP_PL_CALLOC))(k, n);
}

EXPORT void *realloc(void *p, size_t n)
{
  return ((void *(*)(void *, size_t))TO(MP_PL_REALLOC))(p, n);
}

EXPORT void *reallocarray(void *p, size_t k, size_t n)
{
  return ((void *(*)(void *, size_t, size_t))TO(MP_PL_REALLOCARRAY))(p, k, n);
}

EXPORT void free(void *p)
{
  ((void (*)(void *))TO(MP_PL_FREE))(p);
}

EXPORT int posix_memalign(void **out, size_t a, size_t n)
{
  return ((int (*)(void **, size_t, size_t))TO(MP_PL_POSIX_MEMALIGN))(out, a, n);
}

EXPORT void *aligned_alloc(size_t a, size_t n)
{
  return ((void *(*)(size_t, size_t))TO(MP_PL_ALIGNED_ALLOC))(a, n);
}

EXPORT void *memalign(size_t a, size_t n)
{
  return ((void *(*)(size_t, size_t))TO(MP_PL_MEMALIGN))(a, n);
}

EXPORT void *valloc(size_t n)
{
  return ((void *(*)(size_t))TO(MP_PL_VALLOC))(n);
}

EXPORT void *pvalloc(size_t n)
{
  return ((void *(*)(size_t))TO(MP_PL_PVALLOC))(n);
}

EXPORT void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
  return ((void *(*)(void *, size_t, int, int, int, off_t))TO(MP_PL_MMAP))(
    a, n, prot, flags, fd, off);
}

EXPORT void *mmap64(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
  return ((void *(*)(void *, size_t, int, int, int, off_t))TO(MP_PL_MMAP64))(
    a, n, prot, flags, fd, off);
}

EXPORT int munmap(void *a, size_t n)
{
  return ((int (*)(void *, size_t))TO(MP_PL_MUNMAP))(a, n);
}

EXPORT void *mremap(void *a, size_t o, size_t n, int flags, ...)
{
  void *na = NULL;
  va_list ap;
  if (flags & MREMAP_FIXED) {	/* The new address, only then passed. */
    va_start(ap, flags);
    na = va_arg(ap, void *);
    va_end(ap);
  }
  return ((void *(*)(void *, size_t, size_t, int, ...))TO(MP_PL_MREMAP))(
    a, o, n, flags, na);
}
