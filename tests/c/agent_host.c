/*
** agent_host.c: a program that embeds LuaJIT and profiles it through the C
** API (include/ljmemprof.h), for the tests of what the Lua module cannot
** show: the host's own allocations, several VMs in one process, a hook
** wrapped by another allocator, exit() from another thread.
**
**   agent_host host FILE           allocations from C outside any Lua call
**   agent_host fresh FILE          start before the VM has ever run
**   agent_host tail FILE STACKS    builtins the host calls, directly and as
**                                  a Lua function's tail call
**   agent_host samepath FILE OTHER two VMs on one file: the second refused
**   agent_host wrap FILE           something wraps the hook after start
**   agent_host threads N PREFIX MS N threads, each a VM profiled into
**                                  PREFIX-i.ljm, allocating until the main
**                                  thread calls exit() after MS ms
**   agent_host shared N PREFIX     N threads, each a VM, one writer callback
**                                  that serialises (PREFIX-i.ljm at the end)
**   agent_host files N PREFIX      N threads, each a VM into PREFIX-i.ljm
**   agent_host sysalloc malloc|guard|packed FILE STACKS on|off SCRIPT [ARG]
**                                  a VM of lua_newstate() whose allocator
**                                  is malloc's (ASan checks every byte the
**                                  agent reads of VM objects) or puts each
**                                  block against an unmapped page (guard)
**                                  or packs blocks at 8-byte boundaries,
**                                  never reused (packed); runs
**                                  SCRIPT profiled, JIT on or off
** shared and files print "delta i BYTES": the change of VM i's own counter
** between start and stop, which its profile's net bytes must equal.
**
** Prints one line per check ("ok ..." / "not ok ..."), which the .t files
** turn into TAP, and exits 0 unless something could not be run at all.
*/

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "ljmemprof.h"

static int failed;

/* Print one check; on failure both values. */
static void check(long long got, long long want, const char *what)
{
  if (got == want) {
    printf("ok - %s\n", what);
  } else {
    printf("not ok - %s (expected %lld, got %lld)\n", what, want, got);
    failed = 1;
  }
}

/* Start profiling L into path with the default options. */
static int start_file(lua_State *L, const char *path)
{
  ljmp_options o = LJMP_OPTIONS_INIT;
  o.path = path;
  return ljmp_start(L, &o);
}

/* A new VM with the standard library. */
static lua_State *new_vm(void)
{
  lua_State *L = luaL_newstate();
  if (!L) { fprintf(stderr, "agent_host: no memory for a VM\n"); exit(2); }
  luaL_openlibs(L);
  return L;
}

/* Allocate from C, outside any Lua call: 5 tables and 3 strings. */
static void host_work(lua_State *L)
{
  int i;
  for (i = 0; i < 5; i++) lua_newtable(L);
  for (i = 0; i < 3; i++) lua_pushfstring(L, "host string %d of agent_host", i);
  lua_settop(L, 0);
}

/* host: allocations outside any Lua call go to the host, then a chunk's to
** its line. */
static void mode_host(const char *path)
{
  lua_State *L = new_vm();
  check(start_file(L, path), 0, "start");
  host_work(L);
  check(luaL_dostring(L, "local t = {}\nlocal u = { t }\nreturn u"), 0,
	"a chunk runs");
  check(ljmp_stop(L), 0, "stop");
  lua_close(L);
}

/* tail: the host calls string.rep itself, and a Lua function whose tail
** call it is, 100 times each (JIT off: one event a string); nothing but
** the builtin is on the stack then. */
static void mode_tail(const char *path, unsigned stacks)
{
  lua_State *L = new_vm();
  ljmp_options o = LJMP_OPTIONS_INIT;
  int i;
  check(luaL_dostring(L, "jit.off() function f(n) return string.rep('x', n) end"),
	0, "f is defined");
  o.path = path;
  o.stacks = stacks;
  check(ljmp_start(L, &o), 0, "start");
  for (i = 0; i < 100; i++) {
    lua_getglobal(L, "f");
    lua_pushinteger(L, 1000 + i);
    lua_call(L, 1, 0);
    lua_getglobal(L, "string");
    lua_getfield(L, -1, "rep");
    lua_pushliteral(L, "y");
    lua_pushinteger(L, 1000 + i);
    lua_call(L, 2, 0);
    lua_settop(L, 0);
  }
  check(ljmp_stop(L), 0, "stop");
  lua_close(L);
}

/* fresh: start before the VM has run anything (its state says 0, which is
** no trace), then open the libraries while recording. */
static void mode_fresh(const char *path)
{
  lua_State *L = luaL_newstate();
  check(start_file(L, path), 0, "start on a VM that never ran");
  luaL_openlibs(L);
  check(ljmp_stop(L), 0, "stop");
  lua_close(L);
}

/* samepath: a second VM is refused the file the first one writes, also
** under another name (a hard link), and gets another file. */
static void mode_samepath(const char *path, const char *other)
{
  lua_State *a = new_vm(), *b = new_vm();
  char alias[4096];
  check(start_file(a, path), 0, "first VM starts");
  check(start_file(b, path), LJMP_EBUSY, "second VM on the same file");
  snprintf(alias, sizeof(alias), "%s.link", path);
  unlink(alias);
  check(link(path, alias) == 0, 1, "hard link made");
  check(start_file(b, alias), LJMP_EBUSY, "second VM on a hard link to it");
  unlink(alias);
  check(start_file(b, other), 0, "second VM on another file");
  (void)luaL_dostring(a, "local t = {} for i = 1, 100 do t[i] = {} end");
  (void)luaL_dostring(b, "local t = {} for i = 1, 100 do t[i] = {} end");
  check(ljmp_stop(a), 0, "first stops");
  check(start_file(b, path), LJMP_ERUNNING, "second still running");
  check(ljmp_stop(b), 0, "second stops");
  check(start_file(b, path), 0, "the file is free again");
  check(ljmp_stop(b), 0, "and stops");
  lua_close(a);
  lua_close(b);
}

/* -- wrap ----------------------------------------------------------------- */

static lua_Alloc wrapped_f;
static void *wrapped_ud;
static long wrap_calls;

/* An allocator that wraps whatever was installed (the profiler's hook). */
static void *wrapper(void *ud, void *ptr, size_t osize, size_t nsize)
{
  (void)ud;
  wrap_calls++;
  return wrapped_f(wrapped_ud, ptr, osize, nsize);
}

/* wrap: the hook wrapped after start: stop reports it and finalises the
** stream; the VM goes on; profiling can start again over the wrapper. */
static void mode_wrap(const char *path)
{
  lua_State *L = new_vm();
  char again[4096];
  check(start_file(L, path), 0, "start");
  wrapped_f = lua_getallocf(L, &wrapped_ud);
  lua_setallocf(L, wrapper, NULL);
  check(luaL_dostring(L, "local t = {} for i = 1, 50 do t[i] = {i} end"), 0,
	"runs wrapped");
  check(ljmp_running(L), 1, "running behind the wrapper");
  check(start_file(L, "/nonexistent/x"), LJMP_ERUNNING,
	"start while running behind the wrapper");
  check(ljmp_stop(L), LJMP_EWRAPPED, "stop says the allocator was replaced");
  check(ljmp_running(L), 0, "not running after that");
  check(ljmp_stop(L), LJMP_ENOTRUN, "a second stop: not running");
  check(luaL_dostring(L, "local t = {} for i = 1, 50 do t[i] = {i} end"), 0,
	"the VM goes on");
  check(wrap_calls > 0, 1, "through the wrapper and the idle hook");
  snprintf(again, sizeof(again), "%s.again", path);
  check(start_file(L, again), 0, "start again, over the wrapper");
  check(luaL_dostring(L, "local t = {}"), 0, "runs");
  check(ljmp_stop(L), 0, "stop");
  lua_close(L);
}

/* -- threads -------------------------------------------------------------- */

typedef struct worker {
  pthread_t tid;
  lua_State *L;
  char path[4096];
} worker;

static const char *const churn =
  "local keep = {}\n"
  "local i = 0\n"
  "while true do\n"
  "  i = i + 1\n"
  "  local t = { i, tostring(i), string.rep('x', i % 50) }\n"
  "  keep[i % 1000] = t\n"
  "end\n";

/* A thread that allocates forever in its own profiled VM. */
static void *work(void *arg)
{
  worker *w = arg;
  (void)luaL_dostring(w->L, churn);
  return NULL;
}

/* threads: exit() from the main thread while the others are in their
** hooks: every profile must be complete. */
static void mode_threads(int n, const char *prefix, int ms)
{
  worker *w = calloc((size_t)n, sizeof(*w));
  struct timespec ts;
  int i;
  for (i = 0; i < n; i++) {
    w[i].L = new_vm();
    snprintf(w[i].path, sizeof(w[i].path), "%s-%d.ljm", prefix, i);
    if (start_file(w[i].L, w[i].path) != 0) {
      fprintf(stderr, "agent_host: cannot start %s\n", w[i].path);
      exit(2);
    }
  }
  for (i = 0; i < n; i++) pthread_create(&w[i].tid, NULL, work, &w[i]);
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (long)(ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
  fflush(stdout);
  exit(0);
}

/* -- shared callback ------------------------------------------------------ */

/* One writer callback for several VMs: each stream goes to its own buffer
** under one lock (so the callback serialises), then to FILE-i.ljm. */
typedef struct sink {
  unsigned char *data;
  size_t len, cap;
  int stopped;
} sink;

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

static int sink_write(void *ctx, const void *data, size_t len)
{
  sink *s = ctx;
  int err = 0;
  pthread_mutex_lock(&sink_lock);
  if (s->len + len > s->cap) {
    size_t cap = (s->len + len) * 2;
    unsigned char *d = realloc(s->data, cap);
    if (!d) err = ENOMEM;
    else { s->data = d; s->cap = cap; }
  }
  if (!err) {
    memcpy(s->data + s->len, data, len);
    s->len += len;
  }
  pthread_mutex_unlock(&sink_lock);
  return err;
}

static void sink_stop(void *ctx, int err)
{
  sink *s = ctx;
  (void)err;
  s->stopped++;
}

typedef struct sworker {
  pthread_t tid;
  sink out;
  char path[4096];	/* A file sink, or "" for the shared callback. */
  int rc_start, rc_stop;
  long long delta;	/* Change of the VM's byte count while profiled. */
} sworker;

static const char *const finite =
  "local keep = {}\n"
  "for i = 1, 20000 do\n"
  "  keep[i % 500] = { i, tostring(i) }\n"
  "end\n"
  "keep = nil\n"
  "collectgarbage()\n";

/* Bytes the VM of L holds, by its own count. */
static long long vm_bytes(lua_State *L)
{
  return (long long)lua_gc(L, LUA_GCCOUNT, 0) * 1024 +
	 lua_gc(L, LUA_GCCOUNTB, 0);
}

/* A thread with its own VM, profiled into its file or the shared
** callback. */
static void *swork(void *arg)
{
  sworker *w = arg;
  lua_State *L = new_vm();
  ljmp_options o = LJMP_OPTIONS_INIT;
  long long before;
  if (w->path[0]) {
    o.path = w->path;
  } else {
    o.writer = sink_write;
    o.ctx = &w->out;
    o.on_stop = sink_stop;
    o.bufsize = 4096;
  }
  w->rc_start = ljmp_start(L, &o);
  before = vm_bytes(L);
  (void)luaL_dostring(L, finite);
  w->delta = vm_bytes(L) - before;
  w->rc_stop = ljmp_stop(L);
  lua_close(L);
  return NULL;
}

/* shared, files: N VMs in N threads at once, each stopped by its thread. */
static void mode_parallel(int n, const char *prefix, int shared)
{
  sworker *w = calloc((size_t)n, sizeof(*w));
  int i;
  for (i = 0; i < n; i++) {
    if (!shared) snprintf(w[i].path, sizeof(w[i].path), "%s-%d.ljm", prefix, i);
    pthread_create(&w[i].tid, NULL, swork, &w[i]);
  }
  for (i = 0; i < n; i++) {
    pthread_join(w[i].tid, NULL);
    check(w[i].rc_start, 0, "thread starts");
    check(w[i].rc_stop, 0, "thread stops");
    printf("delta %d %lld\n", i, w[i].delta);
    if (shared) {
      char path[4096];
      FILE *f;
      check(w[i].out.stopped, 1, "its stream ended once");
      snprintf(path, sizeof(path), "%s-%d.ljm", prefix, i);
      f = fopen(path, "wb");
      if (!f || fwrite(w[i].out.data, 1, w[i].out.len, f) != w[i].out.len) {
	fprintf(stderr, "agent_host: cannot write %s\n", path);
	exit(2);
      }
      fclose(f);
    }
    free(w[i].out.data);
  }
  free(w);
}

/* -- sysalloc ------------------------------------------------------------- */

/* The C library's allocator for a VM: each object is a block of its own,
** so that AddressSanitizer sees a read past its end (LuaJIT's allocator
** carves objects out of its own arenas, where it sees none). */
static void *malloc_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  (void)ud;
  (void)osize;
  if (!nsize) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
}

#define GUARD_PAGE	4096

/* Pages of a guard block of size n (8-byte aligned, at the end of its
** pages), not counting the unmapped page after them. */
static size_t guard_pages(size_t n)
{
  return ((n + 7) / 8 * 8 + GUARD_PAGE - 1) / GUARD_PAGE;
}

/* A block of n bytes that ends 8-byte aligned right below a page that is
** never mapped: a read past the block's end (beyond its alignment) dies
** of SIGSEGV at once. */
static void *guard_new(size_t n)
{
  size_t pages = guard_pages(n);
  char *base = mmap(NULL, (pages + 1) * GUARD_PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  if (mprotect(base + pages * GUARD_PAGE, GUARD_PAGE, PROT_NONE) < 0) {
    munmap(base, (pages + 1) * GUARD_PAGE);
    return NULL;
  }
  return base + pages * GUARD_PAGE - (n + 7) / 8 * 8;
}

/* Unmap the guard block at p of n bytes (LuaJIT passes every block's
** size back). */
static void guard_del(void *p, size_t n)
{
  size_t pages = guard_pages(n);
  char *base = (char *)p + (n + 7) / 8 * 8 - pages * GUARD_PAGE;
  munmap(base, (pages + 1) * GUARD_PAGE);
}

static void *guard_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  void *p = NULL;
  (void)ud;
  if (nsize) {
    if (!(p = guard_new(nsize))) return NULL;
    if (ptr) memcpy(p, ptr, osize < nsize ? osize : nsize);
  }
  if (ptr) guard_del(ptr, osize);
  return p;
}

/* A bump allocator at 8-byte boundaries (LuaJIT's alignment: at 4 it
** crashes loading a chunk): blocks packed end to end, never reused, as
** densely as any allocator can place them (the heap snapshot's map of
** 32-byte granules must still tell every object apart). 1 GiB of address
** space, touched as used. */
static char *packed_base, *packed_top, *packed_end;

static void *packed_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  char *p;
  (void)ud;
  if (!nsize) return NULL;	/* Freed: never reused. */
  if (!packed_base) {
    size_t span = (size_t)1 << 30;
    packed_base = mmap(NULL, span, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (packed_base == MAP_FAILED) return packed_base = NULL;
    packed_top = packed_base;
    packed_end = packed_base + span;
  }
  if ((size_t)(packed_end - packed_top) < nsize + 8) return NULL;
  p = packed_top;
  packed_top += (nsize + 7) / 8 * 8;
  if (ptr) memcpy(p, ptr, osize < nsize ? osize : nsize);
  return p;
}

/* sysalloc: SCRIPT profiled (stacks frames, 0: one frame) in a VM of
** lua_newstate() on one of the allocators above: the walk over frames,
** symbols and traces reads VM objects at their exact sizes. */
static void mode_sysalloc(const char *alloc, const char *path, unsigned stacks,
			  const char *jit, const char *script, const char *arg)
{
  lua_State *L = lua_newstate(!strcmp(alloc, "guard") ? guard_alloc :
			      !strcmp(alloc, "packed") ? packed_alloc :
			      malloc_alloc, NULL);
  ljmp_options o = LJMP_OPTIONS_INIT;
  if (!L) {
    fprintf(stderr, "agent_host: lua_newstate failed\n");
    exit(2);
  }
  luaL_openlibs(L);
  lua_pushstring(L, arg ? arg : "");
  lua_setglobal(L, "ARG");
  check(luaL_dostring(L, strcmp(jit, "off") ? "jit.on()" : "jit.off()"), 0,
	"jit set");
  o.path = path;
  o.stacks = stacks;
  check(ljmp_start(L, &o), 0, "start");
  check(luaL_dostring(L, "return #(('x'):rep(100))"), 0,
	"a builtin called by a closure without upvalues");
  if (luaL_dofile(L, script)) {
    printf("not ok - %s runs: %s\n", script, lua_tostring(L, -1));
    failed = 1;
  } else {
    printf("ok - %s runs\n", script);
  }
  check(ljmp_stop(L), 0, "stop");
  lua_close(L);
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "host") && argc == 3) mode_host(argv[2]);
  else if (!strcmp(mode, "fresh") && argc == 3) mode_fresh(argv[2]);
  else if (!strcmp(mode, "tail") && argc == 4)
    mode_tail(argv[2], (unsigned)atoi(argv[3]));
  else if (!strcmp(mode, "samepath") && argc == 4)
    mode_samepath(argv[2], argv[3]);
  else if (!strcmp(mode, "wrap") && argc == 3) mode_wrap(argv[2]);
  else if (!strcmp(mode, "threads") && argc == 5)
    mode_threads(atoi(argv[2]), argv[3], atoi(argv[4]));
  else if (!strcmp(mode, "shared") && argc == 4)
    mode_parallel(atoi(argv[2]), argv[3], 1);
  else if (!strcmp(mode, "files") && argc == 4)
    mode_parallel(atoi(argv[2]), argv[3], 0);
  else if (!strcmp(mode, "sysalloc") && (argc == 7 || argc == 8))
    mode_sysalloc(argv[2], argv[3], (unsigned)atoi(argv[4]), argv[5], argv[6],
		  argc == 8 ? argv[7] : NULL);
  else {
    fprintf(stderr, "usage: agent_host host|fresh|wrap FILE | samepath FILE "
	    "OTHER | tail FILE STACKS | threads N PREFIX MS | shared|files N PREFIX"
	    " | sysalloc malloc|guard|packed FILE STACKS on|off SCRIPT [ARG]\n");
    return 2;
  }
  return failed;
}
