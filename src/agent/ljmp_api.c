/*
** ljmp_api.c: public C API: start, stop, the VM layout check, exit safety.
**
** The profiler's state hangs off the allocator's ud pointer while it runs,
** so several VMs can be profiled at once. A list of running profilers exists
** only so that process exit (os.exit() runs no finalisers) can finalise
** every stream; it is never touched on the hot path.
*/

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "luajit.h"
#include "lauxlib.h"

#include "mp_agent.h"
#include "mp_check.h"
#include "../format/mp_format.h"

#define MP_BUFSIZE_DEFAULT	((size_t)1 << 20)
#define MP_BUFSIZE_MIN		((size_t)4096)

/* -- Running profilers, for process exit ---------------------------------- */

static pthread_mutex_t running_lock = PTHREAD_MUTEX_INITIALIZER;
static mp_state *running_list;
static int atexit_done;

/* Finalise every stream still open when the process exits. The hooks stay
** installed, forwarding only, since the VMs may still allocate. */
static void at_exit(void)
{
  mp_state *s;
  pthread_mutex_lock(&running_lock);
  for (s = running_list; s; s = s->next) mp_sink_finish(s);
  pthread_mutex_unlock(&running_lock);
}

/* In a child after fork(): its streams belong to the parent. */
static void at_fork_child(void)
{
  mp_state *s;
  pthread_mutex_init(&running_lock, NULL);
  for (s = running_list; s; s = s->next) mp_sink_forked(s);
}

/* Remember a running profiler for process exit (and arm atexit once). */
static void list_add(mp_state *s)
{
  pthread_mutex_lock(&running_lock);
  if (!atexit_done) {
    atexit_done = (atexit(at_exit) == 0);
    pthread_atfork(NULL, NULL, at_fork_child);
  }
  s->next = running_list;
  running_list = s;
  pthread_mutex_unlock(&running_lock);
}

/* Forget a profiler that has stopped. */
static void list_del(mp_state *s)
{
  mp_state **pp;
  pthread_mutex_lock(&running_lock);
  for (pp = &running_list; *pp; pp = &(*pp)->next)
    if (*pp == s) { *pp = s->next; break; }
  pthread_mutex_unlock(&running_lock);
}

/* -- State ------------------------------------------------------------- */

/* The profiler state of L's VM, or NULL if it is not being profiled. */
static mp_state *state_of(lua_State *L)
{
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  return f == mp_hook_alloc ? (mp_state *)ud : NULL;
}

/* Free a profiler state whose stream is finished (or never started). */
static void state_free(mp_state *s)
{
  mp_ptrset_free(&s->protos);
  mp_ptrset_free(&s->cfuncs);
  mp_ptrset_free(&s->tracesyms);
  free(s->traces);
  mp_names_free(&s->names);
  mp_sink_close(s);
  free(s);
}

/* __gc of the registry sentinel: finalise a running profile at lua_close. */
static int sentinel_gc(lua_State *L)
{
  if (state_of(L)) ljmp_stop(L);
  return 0;
}

#define MP_SENTINEL	"ljmemprof.sentinel"

/* Anchor a userdata whose finaliser stops the profiler when the state
** closes. Made once per VM, at luaopen or at the first start: created after
** this module's library handle, it is finalised before the package library
** unloads the module (finalisers run newest first). */
void mp_sentinel_install(lua_State *L)
{
  lua_getfield(L, LUA_REGISTRYINDEX, MP_SENTINEL);
  if (lua_isnil(L, -1)) {
    lua_newuserdata(L, 1);
    lua_newtable(L);
    lua_pushcfunction(L, sentinel_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, MP_SENTINEL);
  }
  lua_pop(L, 1);
}

/* See ljmemprof.h. */
int ljmp_running(lua_State *L)
{
  mp_state *s = state_of(L);
  return s && !s->finished;
}

/* See ljmemprof.h: open the sink, write the prologues, install the hook. */
int ljmp_start(lua_State *L, const ljmp_options *opt)
{
  mp_state *s;
  size_t size;
  uint8_t head[2 * MP_PROLOGUE_SIZE + 1], *p;
  int fd = -1, err;
  if (!L || !opt || (!opt->path == !opt->writer)) return LJMP_EARG;
  if (state_of(L)) return LJMP_ERUNNING;
  if (mp_check_vm(L, NULL)) return LJMP_EVM;
  mp_sentinel_install(L);
  size = opt->bufsize ? opt->bufsize : MP_BUFSIZE_DEFAULT;
  if (size < MP_BUFSIZE_MIN) return LJMP_EARG;
  s = calloc(1, sizeof(*s));
  if (!s) return LJMP_ENOMEM;
  if (opt->path) {
    fd = open(opt->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { int e = errno; free(s); return -e; }
  }
  s->fd = fd;
  s->writer = opt->writer;
  s->ctx = opt->ctx;
  s->on_stop = opt->on_stop;
  s->g = G(L);
  s->sym_min = sizeof(GCproto) < sizeof(GCtrace) ? sizeof(GCproto)
						 : sizeof(GCtrace);
  s->hi_key = ~(uint64_t)0;
  s->orig_f = lua_getallocf(L, &s->orig_ud);
  snprintf(s->host_name, sizeof(s->host_name), "HOST (%s)",
	   program_invocation_short_name);
  mp_names_build(&s->names, L);
  /* Empty symtab (symbols follow in the stream), then the event prologue,
  ** written at once so that an unwritable sink fails here, not later. */
  p = mp_put_prologue(head, MP_LJS_MAGIC, MP_VERSION_WRITE);
  *p++ = MP_FINAL;
  p = mp_put_prologue(p, MP_LJM_MAGIC, MP_VERSION_WRITE);
  err = mp_sink_open(s, size, head, (size_t)(p - head));
  if (err) {
    if (fd >= 0) close(fd);
    s->fd = -1;
    state_free(s);
    return err == ENOMEM ? LJMP_ENOMEM : -err;
  }
  s->recording = 1;
  list_add(s);
  lua_setallocf(L, mp_hook_alloc, s);
  return 0;
}

/* See ljmemprof.h: restore the allocator, finish the stream, free. */
int ljmp_stop(lua_State *L)
{
  mp_state *s = state_of(L);
  int err;
  if (!s) return LJMP_ENOTRUN;
  lua_setallocf(L, s->orig_f, s->orig_ud);
  list_del(s);
  /* Finished already: the process is exiting and the stream is complete. */
  err = s->finished ? LJMP_ENOTRUN : 0;
  mp_sink_finish(s);
  if (!err && s->err) err = -s->err;
  state_free(s);
  return err;
}

/* See ljmemprof.h. */
const char *ljmp_strerror(int code)
{
  switch (code) {
  case 0: return "success";
  case LJMP_ERUNNING: return "profiler is running already";
  case LJMP_ENOTRUN: return "profiler is not running";
  case LJMP_EARG: return "bad profiler options";
  case LJMP_EVM: return "this LuaJIT does not match the one ljmemprof was "
			"built for";
  case LJMP_ENOMEM: return "not enough memory for the profiler";
  case LJMP_EWRAPPED: return "the allocator was replaced while profiling";
  }
  if (code < 0 && code > LJMP_E_BASE) return strerror(-code);
  return "unknown error";
}
