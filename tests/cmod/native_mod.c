/*
** native_mod.c: a Lua C module of the tests that allocates native memory
** of known sizes (tests/agent-native.t): malloc and free, calloc,
** realloc, mmap, mremap, a leak, calls through pointers taken at load time, and
** threads that allocate meanwhile.
*/

#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* mremap */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lua.h"
#include "lauxlib.h"

/* malloc(n) and free it: one allocation and one free of n bytes. */
static int churn(lua_State *L)
{
  size_t n = (size_t)luaL_checkinteger(L, 1);
  char *p = malloc(n);
  if (!p) return luaL_error(L, "out of memory");
  p[0] = 1;
  free(p);
  return 0;
}

/* malloc(n), never freed: a leak of n bytes. */
static int leak(lua_State *L)
{
  size_t n = (size_t)luaL_checkinteger(L, 1);
  char *p = malloc(n);
  if (!p) return luaL_error(L, "out of memory");
  memset(p, 1, n);
  lua_pushboolean(L, 1);
  return 1;
}

/* calloc(k, n), then realloc to m bytes, then free. */
static int resize(lua_State *L)
{
  size_t k = (size_t)luaL_checkinteger(L, 1);
  size_t n = (size_t)luaL_checkinteger(L, 2);
  size_t m = (size_t)luaL_checkinteger(L, 3);
  char *p = calloc(k, n), *q;
  if (!p) return luaL_error(L, "out of memory");
  q = realloc(p, m);
  if (!q) { free(p); return luaL_error(L, "out of memory"); }
  free(q);
  return 0;
}

/* An anonymous mapping of n bytes, unmapped. */
static int map(lua_State *L)
{
  size_t n = (size_t)luaL_checkinteger(L, 1);
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
  if (p == MAP_FAILED) return luaL_error(L, "mmap failed");
  munmap(p, n);
  return 0;
}

/* mremap of a known mapping of 4 pages: shrunk to 2 pages and grown
** back to 4 in place, grown to 16 with MREMAP_MAYMOVE, then shrunk to 3
** and kept (unmapped by remap_free): the addresses after each step, as
** numbers. */
static void *remapped;
static size_t remapped_n;

static int remap(lua_State *L)
{
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), i;
  static const size_t step[] = { 2, 4, 16, 3 };
  void *p = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  size_t n = 4 * pg;
  if (p == MAP_FAILED) return luaL_error(L, "mmap failed");
  lua_pushnumber(L, (lua_Number)(uintptr_t)p);
  for (i = 0; i < 4; i++) {
    void *q = mremap(p, n, step[i] * pg, step[i] == 16 ? MREMAP_MAYMOVE : 0);
    if (q == MAP_FAILED) return luaL_error(L, "mremap to %d pages failed",
					   (int)step[i]);
    p = q;
    n = step[i] * pg;
    memset(p, 1, n);
    lua_pushnumber(L, (lua_Number)(uintptr_t)p);
  }
  remapped = p;
  remapped_n = n;
  return 5;
}

/* Unmap what remap kept. */
static int remap_free(lua_State *L)
{
  (void)L;
  if (remapped) munmap(remapped, remapped_n);
  remapped = NULL;
  return 0;
}

/* malloc and free as pointers taken when the module was loaded (relocated
** data, not a slot patching rewrites): only the preload mode sees them. */
static void *(*volatile early_malloc)(size_t) = malloc;
static void (*volatile early_free)(void *) = free;

/* early_malloc(n) and early_free, k times. */
static int early(lua_State *L)
{
  size_t n = (size_t)luaL_checkinteger(L, 1);
  lua_Integer k = luaL_checkinteger(L, 2), i;
  for (i = 0; i < k; i++) {
    char *p = early_malloc(n);
    if (!p) return luaL_error(L, "out of memory");
    p[0] = 1;
    early_free(p);
  }
  return 0;
}

/* -- Threads that allocate while the VM runs ------------------------------ */

#define NTHREADS	4

static pthread_t threads[NTHREADS];
static int nthreads;
static volatile int quit;
static unsigned long done[NTHREADS];
static unsigned long bad;	/* Blocks whose bytes were changed. */

/* malloc, fill, check, realloc, free, until told to stop (exported: its
** dynamic symbol names the native caller of its events). */
void *native_mod_worker(void *arg);
void *native_mod_worker(void *arg)
{
  unsigned long *count = arg;
  unsigned char k = 0;
  while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE)) {
    size_t n = 16 + (k & 127);
    unsigned char *p = malloc(n), *q;
    size_t i;
    if (!p) continue;
    memset(p, k, n);
    q = realloc(p, 2 * n);
    if (q) p = q;
    for (i = 0; i < n; i++)
      if (p[i] != k) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
    free(p);
    k++;
    (*count)++;
  }
  return NULL;
}

/* Start the threads. */
static int threads_start(lua_State *L)
{
  int i;
  quit = 0;
  for (i = 0; i < NTHREADS; i++) {
    done[i] = 0;
    if (pthread_create(&threads[i], NULL, native_mod_worker, &done[i]) != 0)
      return luaL_error(L, "pthread_create failed");
  }
  nthreads = NTHREADS;
  return 0;
}

/* Stop them: the number of rounds made, and of bad blocks seen. */
static int threads_stop(lua_State *L)
{
  unsigned long sum = 0;
  int i;
  __atomic_store_n(&quit, 1, __ATOMIC_RELEASE);
  for (i = 0; i < nthreads; i++) {
    pthread_join(threads[i], NULL);
    sum += done[i];
  }
  nthreads = 0;
  lua_pushnumber(L, (lua_Number)sum);
  lua_pushnumber(L, (lua_Number)bad);
  return 2;
}

/* Each thread's rounds so far (to wait until they all run). */
static int threads_rounds(lua_State *L)
{
  unsigned long least = ~0ul;
  int i;
  for (i = 0; i < nthreads; i++) {
    unsigned long d = __atomic_load_n(&done[i], __ATOMIC_RELAXED);
    if (d < least) least = d;
  }
  lua_pushnumber(L, nthreads ? (lua_Number)least : 0);
  return 1;
}

int luaopen_native_mod(lua_State *L)
{
  static const luaL_Reg f[] = {
    { "churn", churn }, { "leak", leak }, { "resize", resize },
    { "map", map }, { "early", early }, { "threads_start", threads_start },
    { "threads_stop", threads_stop }, { "threads_rounds", threads_rounds },
    { "remap", remap }, { "remap_free", remap_free }, { NULL, NULL }
  };
  luaL_register(L, "native_mod", f);
  return 1;
}
