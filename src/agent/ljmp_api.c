/*
** ljmp_api.c: public C API: start, stop, the VM layout check.
**
** The profiler's state hangs off the allocator's ud pointer while it runs,
** so several VMs can be profiled at once; the list of running profilers,
** and what exit and fork do to them, is in mp_proc.c.
*/

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lj_obj.h"
#include "lj_tab.h"
#include "lj_frame.h"
#include "lj_gc.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "luajit.h"
#include "lauxlib.h"

#include "mp_agent.h"
#include "mp_check.h"
#include "mp_native.h"
#include "mp_options.h"
#include "mp_proc.h"
#include "mp_sample.h"
#include "mp_stack.h"
#include "mp_sym.h"
#include "mp_traceline.h"
#include "mp_api.h"
#include "mp_hook.h"
#include "mp_names.h"
#include "mp_sink.h"
#include "mp_tab.h"
#include "mp_stream.h"
#include "../format/mp_format.h"

#define MP_BUFSIZE_DEFAULT	((size_t)1 << 20)

/* -- State ------------------------------------------------------------- */

/* The profiler state whose hook is L's allocator, or NULL. */
static mp_state *state_of(lua_State *L)
{
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  return f == mp_hook_alloc || f == mp_hook_alloc_stacks ||
	 f == mp_hook_alloc_sampled ? (mp_state *)ud : NULL;
}

mp_state *mp_state_find(lua_State *L)
{
  mp_state *s = state_of(L);
  if (s && s->forked) return NULL;
  return s ? s : mp_proc_find(G(L));
}

/* Free what a profiler state holds, but the state itself, whose stream
** is finished (or never started): a hook left wrapped by something else
** reads only the forwarding fields. */
static void state_strip(mp_state *s)
{
  mp_hash_free(&s->protos);
  mp_hash_free(&s->fnames);
  free(s->fname);
  s->fname = NULL;
  s->nfname = s->capfname = 0;
  mp_hash_free(&s->cfuncs);
  mp_hash_free(&s->tracesyms);
  free(s->traces);
  s->traces = NULL;
  s->ntraces = 0;
  mp_names_free(&s->names);
  mp_names_free(&s->builtins);
  mp_names_free(&s->luanames);
  free(s->st.node);
  free(s->st.walk);
  free(s->st.c);
  free(s->st.memo);
  free(s->st.jmemo);
  free(s->st.words);
  mp_hash_free(&s->st.index);
  mp_hash_free(&s->st.luabuiltins);
  memset(&s->st, 0, sizeof(s->st));
  mp_sample_free(&s->sm);
  mp_sink_close(s);
  free(s->path);
  s->path = NULL;
  free(s->snap);
  s->snap = NULL;
}

/* Free a profiler state whose stream is finished (or never started). */
static void state_free(mp_state *s)
{
  state_strip(s);
  free(s);
}

/* A child's copy of its parent's profiler, hooked into a VM the child
** owns now: unhook it and free it (the stream is the parent's). */
static void discard_forked(lua_State *L, mp_state *s)
{
  lua_setallocf(L, s->orig_f, s->orig_ud);
  mp_names_unwrap_require(L);
  mp_proc_del(s);
  state_free(s);
}

/* Whether userdata u has a __gc metamethod (read as the VM reads it,
** without its cache of absent ones). */
static int has_gc(global_State *g, const GCudata *u)
{
  const TValue *v = mp_tab_str(tabref(u->metatable), mmname_str(g, MM_gc));
  return v && !tvisnil(v);
}

/* Whether userdata u's finaliser is the program's: neither a closed or
** standard file's (io's, which then does nothing) nor the package
** library's handle of a C module (which unloads it; lib its metatable). */
static int program_fin(global_State *g, const GCudata *u, const GCtab *lib)
{
  if (!has_gc(g, u)) return 0;
  if (u->udtype == UDTYPE_IO_FILE) {	/* lib_io.c's IOFileUD: */
    const struct { void *fp; uint32_t type; } *f = uddata(u);
    if (!f->fp || (f->type & 3) == 2) return 0;	/* closed, or stdio's */
  }
  return !lib || tabref(u->metatable) != lib;
}

/* The table under string key name in the registry of g, or NULL (found
** without making the key: nothing is allocated in the VM). */
static const GCtab *registry_table(global_State *g, const char *name)
{
  const GCtab *r = tabV(&g->registrytv);
  size_t len = strlen(name);
  MSize i;
  const Node *node = noderef(r->node);
  if (!tvistab(&g->registrytv) || !r->hmask) return NULL;
  for (i = 0; i <= r->hmask; i++) {
    const Node *n = &node[i];
    if (tvisstr(&n->key) && strV(&n->key)->len == len &&
	!memcmp(strdata(strV(&n->key)), name, len))
      return tvistab(&n->val) ? tabV(&n->val) : NULL;
  }
  return NULL;
}

/* The finalisers of userdata lua_close() runs while recording, as seen
** from the sentinel's (self): lua_close() runs them all, newest first,
** so those of the userdata made after the sentinel ran before it (each
** back in the list of userdata), and those still waiting run in the
** stop's collection. Only a count: which is not known. */
static unsigned close_finalisers(lua_State *L, const GCudata *self)
{
  global_State *g = G(L);
  const GCtab *lib = registry_table(g, "_LOADLIB");
  GCobj *o, *first;
  unsigned n = 0;
  for (o = gcref(mainthread(g)->nextgc); o; o = gcnext(o))
    if (o != obj2gco(self) && o->gch.gct == ~LJ_TUDATA &&
	program_fin(g, gco2ud(o), lib))
      n++;
  if ((first = gcref(g->gc.mmudata)) != NULL) {
    o = first;
    do {
      o = gcnext(o);
      if (o->gch.gct == ~LJ_TUDATA && program_fin(g, gco2ud(o), lib)) n++;
    } while (o != first);
  }
  return n;
}

/* __gc of the registry sentinel: finalise a running profile at lua_close,
** then un-arm (the stop puts back the allocator it wrapped, which may be
** the arm's). The profile notes how many other finalisers ran meanwhile:
** what they freed was held when the program ended. The recording's
** snapshot is taken then: lua_close() runs the finalisers (this among
** them) before it frees anything, the VM still whole; no caller hears its
** error, so stderr does. */
static int sentinel_gc(lua_State *L)
{
  mp_state *s = state_of(L);
  mp_stopinfo info;
  if (s && tvisudata(L->base))
    s->closefin = close_finalisers(L, udataV(L->base));
  if (s || mp_proc_find(G(L))) {
    mp_stop(L, MP_STOP_CLOSING, NULL, &info);
    if (info.snaprc)
      fprintf(stderr, "ljmemprof: the snapshot at lua_close (%s): %s\n",
	      info.snap, info.snaprc == -EFBIG ? "it reached max_size: it "
	      "is cut short" : ljmp_strerror(info.snaprc));
  }
  mp_proc_closed(L);
  return 0;
}

#define MP_SENTINEL	"ljmemprof.sentinel"

static int collect_cp(lua_State *L);

/* Is the sentinel in place (this VM was checked and prepared before)? */
static int has_sentinel(lua_State *L)
{
  int has;
  lua_getfield(L, LUA_REGISTRYINDEX, MP_SENTINEL);
  has = !lua_isnil(L, -1);
  lua_pop(L, 1);
  return has;
}

/* Anchor a userdata whose finaliser stops the profiler when the state
** closes. Made once per VM, at luaopen or at the first start: created after
** this module's library handle, it is finalised before the package library
** unloads the module (finalisers run newest first). */
void mp_sentinel_install(lua_State *L)
{
  if (has_sentinel(L)) return;
  lua_newuserdata(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, sentinel_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, collect_cp);	/* See collect_caught(). */
  lua_setfield(L, -2, "collect");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, MP_SENTINEL);
}

/* See ljmemprof.h. */
int ljmp_running(lua_State *L)
{
  mp_state *s = L ? mp_state_find(L) : NULL;
  return s && !s->finished && !s->limited &&
	 !__atomic_load_n(&s->err, __ATOMIC_RELAXED);
}

/* Recordings started in this process: the %n of a path. */
static unsigned long starts;

/* Open the profile file for s (mp_path_open()), and enter s in the list
** of running profilers: a regular file is truncated once no other
** profiler of this process is found writing it. Returns 0, -errno,
** LJMP_EBUSY, LJMP_ESYMLINK or LJMP_ENOREADER; *created says whether this
** call made the file. */
static int open_file(mp_state *s, const char *path, unsigned mode,
		     int *created)
{
  struct stat st;
  int fd = mp_path_open(path, mode, created), rc;
  if (fd < 0) return fd;
  if (fstat(fd, &st) < 0 || !(s->path = strdup(path))) {
    rc = errno == ENOMEM ? LJMP_ENOMEM : -errno;
    goto fail;
  }
  s->dev = st.st_dev;
  s->ino = st.st_ino;
  if ((rc = mp_proc_enter(s, S_ISREG(st.st_mode))) != 0) goto fail;
  if (S_ISREG(st.st_mode) && !*created && ftruncate(fd, 0) < 0) {
    rc = -errno;
    mp_proc_del(s);
    goto fail;
  }
  s->fd = fd;
  return 0;
fail:
  if (*created) unlink(path);
  close(fd);
  return rc;
}

#define MP_COMM_MAX	15	/* The kernel keeps this much of a name. */

/* "HOST (program)": the program's name from the kernel (/proc/self/comm),
** which programs that rewrite their argv for a process title (nginx:
** "worker process") leave alone; else the name it was run by. comm is
** cut to 15 bytes: a name that long is completed from the executable's
** (/proc/self/exe) when that begins with it. */
static void host_label(char *out, size_t size)
{
  char comm[64], exe[4096];
  const char *name = program_invocation_short_name, *base;
  ssize_t n = 0, m;
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    n = read(fd, comm, sizeof(comm) - 1);
    close(fd);
  }
  while (n > 0 && (comm[n - 1] == '\n' || comm[n - 1] == '\0')) n--;
  if (n > 0) {
    comm[n] = '\0';
    name = comm;
  }
  if (n >= MP_COMM_MAX &&
      (m = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
    exe[m] = '\0';
    base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (!strncmp(base, comm, (size_t)n)) name = base;
  }
  snprintf(out, size, "HOST (%.*s)", (int)(size - sizeof("HOST ()")), name);
}

/* Allocate the stacks mode's tables for stacks of up to depth frames; 0
** or -1 when out of memory. */
static int stacks_prepare(mp_stacks *st, unsigned depth)
{
  size_t n = (size_t)depth + 1;	/* And a cut. */
  st->depth = depth;
  st->walk = malloc((n + MP_SITE_SLACK) * sizeof(*st->walk));
  st->c = malloc(n * sizeof(*st->c));
  st->words = malloc(4 * n * sizeof(*st->words));	/* Four per frame. */
  st->memo = calloc((size_t)2 << MP_MEMO_BITS, sizeof(*st->memo));
  st->jmemo = calloc((size_t)2 << MP_JMEMO_BITS, sizeof(*st->jmemo));
  mp_hash_init_map(&st->index);
  return st->walk && st->c && st->words && st->memo && st->jmemo ? 0 : -1;
}

/* Write an MP_X_INFO record key = value (a number) at the start. */
static void put_info(mp_state *s, const char *key, unsigned long value)
{
  char v[24];
  snprintf(v, sizeof(v), "%lu", value);
  s->pos = mp_put_info(s->pos, key, v);
  if (s->pos >= s->lim) mp_sink_flush(s);
}

/* See ljmemprof.h: check the VM, prepare the sink (writer thread first:
** if it fails, nothing was created), open the file, write the prologues,
** install the hook. */
int ljmp_start(lua_State *L, const ljmp_options *user)
{
  ljmp_options opt;
  mp_state *s;
  size_t size;
  uint8_t head[2 * MP_PROLOGUE_SIZE + 1], *p;
  char path[MP_PATH_MAX];
  int rc, created = 0;
  if (!L || !user || mp_options_read(&opt, user, NULL, 0) < 0)
    return LJMP_EARG;
  if ((opt.sample || opt.native) && !opt.stacks)
    opt.stacks = LJMP_STACKS_DEFAULT;
  if ((s = state_of(L)) != NULL) {
    if (s->limited && !s->forked) ljmp_stop(L);	/* Ended at max_size. */
    else if (!s->forked) return LJMP_ERUNNING;
    else discard_forked(L, s);
  }
  if (mp_state_find(L)) return LJMP_ERUNNING;	/* Live behind a wrapper. */
  /* The full check calls jit.status(), which makes garbage: only for a VM
  ** seen for the first time (luaopen did it for Lua callers). */
  if (mp_check_vm(L, NULL, !has_sentinel(L))) return LJMP_EVM;
  mp_sentinel_install(L);
  size = opt.bufsize ? opt.bufsize : MP_BUFSIZE_DEFAULT;
  if (opt.path) {
    if (mp_path_expand(opt.path, path, sizeof(path),
		    __atomic_add_fetch(&starts, 1, __ATOMIC_RELAXED)) < 0)
      return LJMP_EARG;
    opt.path = path;
  }
  if (posix_memalign((void **)&s, 64, sizeof(*s))) return LJMP_ENOMEM;
  memset(s, 0, sizeof(*s));	/* Aligned: see mp_state. */
  s->fd = -1;
  s->writer = opt.writer;
  s->ctx = opt.ctx;
  s->on_stop = opt.on_stop;
  s->g = G(L);
  s->alloc_est = (uint64_t)G(L)->gc.estimate;	/* As if one at start. */
  s->sym_min = sizeof(GCproto) < sizeof(GCtrace) ? sizeof(GCproto)
						 : sizeof(GCtrace);
  s->hi_key = ~(uint64_t)0;
  s->orig_f = lua_getallocf(L, &s->orig_ud);
  host_label(s->host_name, sizeof(s->host_name));
  if (opt.stacks && stacks_prepare(&s->st, opt.stacks) < 0) {
    rc = LJMP_ENOMEM;
    goto fail;
  }
  s->ext = opt.stacks != 0;
  s->collect = opt.collect != 0;
  s->mode = opt.mode;
  if (opt.snapshot && !(s->snap = strdup(opt.snapshot))) {
    rc = LJMP_ENOMEM;
    goto fail;
  }
  s->max_size = opt.max_size;
  s->t0 = mp_now();
  s->st.tick = s->st.ticks = opt.sample ? MP_TICK_SAMPLED : MP_TICK;
  if (opt.sample)
    mp_sample_init(&s->sm, opt.sample, opt.seed ? opt.seed :
		   s->t0 ^ (uint64_t)getpid() << 32 ^ (uintptr_t)s);
  rc = mp_sink_prepare(s, size, opt.path != NULL);
  if (rc) {
    if (rc < 0) errno = -rc;
    rc = rc == ENOMEM ? LJMP_ENOMEM : LJMP_ETHREAD;
    goto fail;
  }
  if (opt.path && (rc = open_file(s, opt.path, opt.mode, &created)) != 0)
    goto fail;
  if (!opt.path && (rc = mp_proc_enter(s, 0)) != 0) goto fail;
  /* Empty symtab (symbols follow in the stream), then the event prologue,
  ** written at once so that an unwritable sink fails here, not later. With
  ** stacks, the event stream is the ljmemprof extension (mp_ext.h). */
  p = mp_put_prologue(head, MP_LJS_MAGIC, MP_VERSION_WRITE);
  *p++ = MP_FINAL;
  p = mp_put_prologue(p, MP_LJM_MAGIC,
		      opt.stacks ? MP_VERSION_EXT : MP_VERSION_WRITE);
  if (opt.stacks) p[-3] = opt.native ? MP_EXT_MINOR_NATIVE : MP_EXT_MINOR;
  rc = mp_sink_begin(s, head, (size_t)(p - head));
  if (rc) {
    mp_proc_del(s);
    if (created) unlink(opt.path);
    rc = rc == ENOMEM ? LJMP_ENOMEM : -rc;
    goto fail;
  }
  s->host_entry = mp_names_host_entry(L);
  mp_names_build(&s->names, &s->builtins, &s->luanames, L);
  mp_names_prepare(L);
  mp_names_wrap_require(&s->names, L);
  if (opt.stacks) put_info(s, "stacks", opt.stacks);
  if (opt.stacks) mp_stack_jit_calls(&s->st, L);
  if (opt.sample) put_info(s, "sample", opt.sample);
  if (opt.native) {
    put_info(s, "native", 1);
    if ((rc = mp_native_start(s)) != 0) {	/* Another runs. */
      mp_names_unwrap_require(L);
      mp_proc_del(s);
      if (created) unlink(opt.path);
      goto fail;
    }
    s->drain = mp_native_drain;
  }
  s->recording = 1;
  mp_proc_live(s);
  lua_setallocf(L, opt.sample ? mp_hook_alloc_sampled :
		   opt.stacks ? mp_hook_alloc_stacks : mp_hook_alloc, s);
  return 0;
fail:
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  state_free(s);
  return rc;
}

/* See ljmemprof.h. */
int ljmp_stop(lua_State *L)
{
  return ljmp_stop_with(L, 0);
}

#define MP_COLLECT_TRIES	64	/* Collections tried while finalisers
					   raise errors. */

/* A full collection, for lua_pcall(). */
static int collect_cp(lua_State *L)
{
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}

/* A full collection whose finalisers' errors are caught, not raised
** through the caller (stop() must end the recording, a signal's or
** lua_close()'s stop must not throw into the program): after an error
** the collection is run again, for the finalisers it did not reach, up to
** MP_COLLECT_TRIES times (a finaliser may make more garbage that fails).
** The first error's message into why. Returns 0 (collected), 1
** (collected, a finaliser failed) or -1 (failures until the last try).
** The function called is made before recording, in the sentinel's
** metatable (mp_sentinel_install(); not in the registry, whose growth
** would move the profiles of every program): making it here would be an
** allocation of the profiler's in the profile, after the mark of the
** final collection. */
static int collect_caught(lua_State *L, char *why, size_t size)
{
  int tries, failed = 0, top = lua_gettop(L);
  for (tries = 0; tries < MP_COLLECT_TRIES; tries++) {
    lua_getfield(L, LUA_REGISTRYINDEX, MP_SENTINEL);
    if (lua_getmetatable(L, -1)) lua_getfield(L, -1, "collect");
    if (!lua_isfunction(L, -1)) {	/* Never: the sentinel holds it. */
      lua_settop(L, top);
      lua_pushcfunction(L, collect_cp);
    } else {
      lua_replace(L, top + 1);
      lua_settop(L, top + 1);
    }
    if (lua_pcall(L, 0, 0, 0) == 0) {
      lua_settop(L, top);
      return failed;
    }
    if (!failed && why && size) {
      if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER)
	snprintf(why, size, "%s", lua_tostring(L, -1));
      else
	snprintf(why, size, "(error object is a %s value)",
		 luaL_typename(L, -1));
    }
    lua_settop(L, top);
    failed = 1;
  }
  return -1;
}

/* Whether the heap of s is as a finished collection cycle left it: the
** collector is between cycles, and one ran after the last allocation
** recorded, which the hooks that see every allocation (not the sampled
** one) tell: only a cycle changes the estimate (its atomic phase sets
** it to what survived, its sweep lowers it), and they keep the estimate
** of each allocation. Between cycles, an allocation leaves the same
** estimate as at stop. (The total tells nothing: the string table's
** shrink at the end of a sweep and a table's resize lower it.) */
static int settled(const mp_state *s, const global_State *g)
{
  return !s->sm.mean && g->gc.state == GCSpause &&
	 (uint64_t)g->gc.estimate != s->alloc_est;
}

/* See mp_api.h. */
int mp_stop(lua_State *L, unsigned flags, const char *snap,
	    mp_stopinfo *info)
{
  mp_state *s;
  int err, gc = 0, snaprc;
  char *why = info ? info->why : NULL;
  size_t size = info ? sizeof(info->why) : 0;
  if (info) {
    info->why[0] = info->snap[0] = '\0';
    info->snaprc = 0;
  }
  if (!L) return LJMP_EARG;
  s = state_of(L);
  if (s && !s->forked && !s->finished && !s->limited &&
      (s->collect || (flags & LJMP_STOP_COLLECT))) {
    /* Recorded, as the hook is still in; readers learn where it starts
    ** (written as the hook writes: another thread's exit may end the
    ** stream meanwhile). */
    mp_enter(s);
    if (__atomic_load_n(&s->recording, __ATOMIC_RELAXED)) mp_sym_gcstart(s);
    mp_leave(s);
    gc = collect_caught(L, why, size);
    if (gc >= 0) s->notes |= MP_NOTE_COLLECT;
  } else if (s && !s->forked && !s->finished && !s->limited &&
	     settled(s, G(L))) {
    s->notes |= MP_NOTE_SETTLED;
  }
  /* The snapshot, after the collection and before the end: the stream
  ** marks it (ljmp_snapshot()). */
  if (!snap && s) snap = s->snap;
  if (s && snap && !s->forked && !s->finished && !s->limited) {
    ljmp_options so = LJMP_OPTIONS_INIT;
    so.path = snap;
    so.mode = s->mode;
    snaprc = ljmp_snapshot(L, &so);
    if (info) {
      info->snaprc = snaprc;
      snprintf(info->snap, sizeof(info->snap), "%s", snap);
    }
  }
  if (s && s->forked) {	/* A child's copy of the parent's profiler. */
    discard_forked(L, s);
    return LJMP_ENOTRUN;
  }
  if (!s) {
    /* Still listed for this VM but no longer its allocator: something
    ** wrapped or replaced the hook. Finalise the stream; the state stays
    ** allocated (forwarding only) for whatever still calls it. */
    if (!(s = mp_proc_find(G(L)))) return LJMP_ENOTRUN;
    mp_names_unwrap_require(L);
    mp_proc_del(s);
    mp_native_stop(s);
    mp_sink_finish(s);
    state_strip(s);
    return LJMP_EWRAPPED;
  }
  mp_native_stop(s);
  lua_setallocf(L, s->orig_f, s->orig_ud);
  mp_names_unwrap_require(L);
  mp_proc_del(s);
  /* Finished already: the process is exiting and the stream is complete
  ** (or it ended at its size limit, a success). */
  err = s->finished && !s->limited ? LJMP_ENOTRUN : 0;
  mp_sink_finish(s);
  if (!err && s->err) err = -s->err;
  if (!err && gc) err = LJMP_EFINALIZER;
  state_free(s);
  return err;
}

/* See ljmemprof.h: collect if asked, restore the allocator, finish the
** stream, free. */
int ljmp_stop_with(lua_State *L, unsigned flags)
{
  mp_stopinfo info;
  int rc = mp_stop(L, flags & LJMP_STOP_COLLECT, NULL, &info);
  return rc ? rc : info.snaprc;
}
