/*
** ljmp_api.c: public C API: start, stop, the VM layout check, exit safety.
**
** The profiler's state hangs off the allocator's ud pointer while it runs,
** so several VMs can be profiled at once. A list of running profilers
** exists so that process exit (os.exit() runs no finalisers) can finalise
** every stream, so that two profilers never write one file, and so that a
** profiler whose hook something else wrapped can still be stopped; it is
** never touched on the hot path.
**
** Process exit may come from any thread while other threads' VMs are in
** the hook: at_exit() clears their `recording` flags, makes every thread
** see that (membarrier), waits until no hook is inside an event (`busy`),
** and only then finalises. The hook pays two plain stores per event.
*/

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
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
#include "lj_frame.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "luajit.h"
#include "lauxlib.h"

#include "mp_agent.h"
#include "mp_check.h"
#include "mp_native.h"
#include "mp_sym.h"
#include "../format/mp_format.h"

#define MP_BUFSIZE_DEFAULT	((size_t)1 << 20)
#define MP_QUIESCE_NS		2000000000L	/* Longest wait at exit for a
						   hook in another thread. */

/* -- Running profilers ---------------------------------------------------- */

static pthread_mutex_t running_lock = PTHREAD_MUTEX_INITIALIZER;
static mp_state *running_list;
static int atexit_done;
/* Whether a thread other than the caller and the writer threads of the
** running profilers (see at_exit()) may exist: 1 unless /proc/self/task
** lists no other. */
static int other_threads(void)
{
  long self = (long)syscall(SYS_gettid);
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int other = 0;
  if (!d) return 1;
  while (!other && (e = readdir(d))) {
    long tid = strtol(e->d_name, NULL, 10);
    mp_state *s;
    if (tid <= 0 || tid == self) continue;
    for (s = running_list; s; s = s->next)
      if (__atomic_load_n(&s->writer_tid, __ATOMIC_ACQUIRE) == tid) break;
    other = !s;
  }
  closedir(d);
  return other;
}

/* Make every thread that may run a hook execute a full memory barrier,
** so that the flags stored before are seen by any hook that runs after.
** None is needed when no other thread exists (writer threads run no
** hook). Registering for the cheap private barrier takes the kernel a
** grace period (11 ms here), so it is only done then, at exit, not by
** every start. Call with running_lock held. */
static void barrier_all_threads(void)
{
  struct timespec ms10 = { 0, 10000000 };
  if (!other_threads()) return;
#ifdef __NR_membarrier
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
	      0, 0) == 0 &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
    return;
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0) return;
#endif
  nanosleep(&ms10, NULL);	/* No membarrier: a hook sees it by then. */
}

/* Wait until s's hook is not inside an event (another thread's VM may be
** encoding one); 1 when quiet, 0 after MP_QUIESCE_NS. */
static int quiesce(mp_state *s)
{
  struct timespec step = { 0, 100000 };
  long waited = 0;
  while (__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE)) {
    if (waited >= MP_QUIESCE_NS) return 0;
    nanosleep(&step, NULL);
    waited += step.tv_nsec;
  }
  return 1;
}

/* Finalise every stream still open when the process exits. The hooks stay
** installed, forwarding only, since the VMs may still allocate. A stream
** whose hook stays busy (a writer callback that blocks) is left cut short
** rather than corrupted. */
static void at_exit(void)
{
  mp_state *s;
  pthread_mutex_lock(&running_lock);
  for (s = running_list; s; s = s->next)
    __atomic_store_n(&s->recording, 0, __ATOMIC_SEQ_CST);
  barrier_all_threads();
  for (s = running_list; s; s = s->next)
    if (!s->finished && quiesce(s)) mp_sink_finish(s);
  pthread_mutex_unlock(&running_lock);
}

/* In a child after fork(): its streams belong to the parent. */
static void at_fork_child(void)
{
  mp_state *s;
  pthread_mutex_init(&running_lock, NULL);
  for (s = running_list; s; s = s->next) mp_sink_forked(s);
}

/* Arm the process-wide handlers once; call with running_lock held. */
static void arm_once(void)
{
  if (atexit_done) return;
  atexit_done = (atexit(at_exit) == 0);
  pthread_atfork(NULL, NULL, at_fork_child);
}

/* Forget a profiler. */
static void list_del(mp_state *s)
{
  mp_state **pp;
  pthread_mutex_lock(&running_lock);
  for (pp = &running_list; *pp; pp = &(*pp)->next)
    if (*pp == s) { *pp = s->next; break; }
  pthread_mutex_unlock(&running_lock);
}

/* Enter a profiler in the list, not yet live (finished is set), unless it
** writes a regular file that another one of this process writes: 0 or
** LJMP_EBUSY. */
static int list_enter(mp_state *s, int regular)
{
  mp_state *o;
  int rc = 0;
  pthread_mutex_lock(&running_lock);
  arm_once();
  for (o = running_list; o && regular; o = o->next)
    if (o->path && !o->forked && o->dev == s->dev && o->ino == s->ino) {
      rc = LJMP_EBUSY;
      break;
    }
  if (!rc) {
    s->finished = 1;	/* at_exit() leaves it alone until it is live. */
    s->next = running_list;
    running_list = s;
  }
  pthread_mutex_unlock(&running_lock);
  return rc;
}

/* Make a listed profiler live: from now on at_exit() finalises it. */
static void list_live(mp_state *s)
{
  pthread_mutex_lock(&running_lock);
  s->finished = 0;
  pthread_mutex_unlock(&running_lock);
}

/* -- State ------------------------------------------------------------- */

/* The profiler state whose hook is L's allocator, or NULL. */
static mp_state *state_of(lua_State *L)
{
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  return f == mp_hook_alloc || f == mp_hook_alloc_stacks ||
	 f == mp_hook_alloc_sampled ? (mp_state *)ud : NULL;
}

/* A live profiler of L's VM that is no longer its allocator (something
** wrapped or replaced the hook after start), or NULL. */
static mp_state *wrapped_state(lua_State *L)
{
  mp_state *s;
  void *g = G(L);
  pthread_mutex_lock(&running_lock);
  for (s = running_list; s; s = s->next)
    if (s->g == g && !s->finished && !s->forked) break;
  pthread_mutex_unlock(&running_lock);
  return s;
}

mp_state *mp_state_find(lua_State *L)
{
  mp_state *s = state_of(L);
  if (s && s->forked) return NULL;
  return s ? s : wrapped_state(L);
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
  list_del(s);
  state_free(s);
}

/* __gc of the registry sentinel: finalise a running profile at lua_close,
** then un-arm (the stop puts back the allocator it wrapped, which may be
** the arm's). */
static int sentinel_gc(lua_State *L)
{
  if (state_of(L) || wrapped_state(L)) ljmp_stop(L);
  mp_arm_closed(L);
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

/* Say in msg (if it has room; cut to fit) why options are bad: returns
** LJMP_EARG. */
static int bad_option(char *msg, size_t size, const char *fmt, ...)
{
  va_list ap;
  if (msg && size) {
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
  }
  return LJMP_EARG;
}

/* Copy the caller's options into *o, whatever the size of the struct it
** was built with, and check everything ljmp_start() takes of them: the
** one definition of good options (ljmp_options_check() says it, start and
** arm obey it); 0 or LJMP_EARG with why in msg. */
int mp_options_read(ljmp_options *o, const ljmp_options *user, char *msg,
		    size_t size)
{
  size_t n = user->size ? user->size : sizeof(*o), i;
  int rc;
  memset(o, 0, sizeof(*o));
  if (n < offsetof(ljmp_options, path))
    return bad_option(msg, size, "size must be 0 or at least %zu, not %zu",
		      offsetof(ljmp_options, path), n);
  for (i = sizeof(*o); i < n; i++)	/* Options this library lacks. */
    if (((const unsigned char *)user)[i])
      return bad_option(msg, size, "size %zu is past this library's "
			"ljmp_options (%zu bytes): the options it lacks must "
			"be 0, and byte %zu is 0x%02x", n, sizeof(*o), i,
			((const unsigned char *)user)[i]);
  memcpy(o, user, n < sizeof(*o) ? n : sizeof(*o));
  o->size = sizeof(*o);
  if (!o->path == !o->writer)
    return bad_option(msg, size, o->path ? "path and writer must not both "
		      "be set" : "path or writer must be set");
  if (o->path && !*o->path)
    return bad_option(msg, size, "path must not be empty");
  if (o->path && (rc = mp_path_check(o->path)) != 0)
    return bad_option(msg, size, "path '%s': %s", o->path, mp_path_why(rc));
  if (o->bufsize && (o->bufsize < MP_BUFSIZE_MIN ||
		     o->bufsize > LJMP_BUFSIZE_MAX))
    return bad_option(msg, size, "bufsize must be 0 or from %zu to %zu "
		      "(1 GiB), not %zu", MP_BUFSIZE_MIN, LJMP_BUFSIZE_MAX,
		      o->bufsize);
  if (o->mode > 0777)
    return bad_option(msg, size, "mode must be at most 0777 (no setuid, "
		      "setgid or sticky bit), not %#o", o->mode);
  if (o->stacks > LJMP_STACKS_MAX)
    return bad_option(msg, size, "stacks must be from 0 to %u, not %u",
		      (unsigned)LJMP_STACKS_MAX, o->stacks);
  if (o->max_size && o->max_size < LJMP_MAX_SIZE_MIN)
    return bad_option(msg, size, "max_size must be 0 or at least %u, not "
		      "%zu", (unsigned)LJMP_MAX_SIZE_MIN, o->max_size);
  return 0;
}

/* Recordings started in this process: the %n of a path. */
static unsigned long starts;

/* Path with %p (the process id), %n (the number of this start in the
** process: 1, 2, ...: n) and %% replaced, into out; 0, -1 if the path
** has another % sequence, -2 if it does not fit. */
static int path_expand(const char *path, char *out, size_t size,
		       unsigned long n)
{
  size_t k = 0;
  for (; *path; path++) {
    char num[24];
    const char *add = num;
    if (*path != '%') {
      num[0] = *path;
      num[1] = '\0';
    } else if (path[1] == 'p') {
      snprintf(num, sizeof(num), "%ld", (long)getpid());
      path++;
    } else if (path[1] == 'n') {
      snprintf(num, sizeof(num), "%lu", n);
      path++;
    } else if (path[1] == '%') {
      add = "%";
      path++;
    } else {
      return -1;
    }
    for (; *add; add++) {
      if (k + 1 >= size) return -2;
      out[k++] = *add;
    }
  }
  out[k] = '\0';
  return 0;
}

int mp_path_check(const char *path)
{
  char out[MP_PATH_MAX];
  return path_expand(path, out, sizeof(out), 0);
}

const char *mp_path_why(int rc)
{
  return rc == -1 ? MP_PATH_PCT : "it must be shorter than 4096 bytes with "
				  "%p and %n expanded";
}

int mp_path_dir(const char *path, char *dir, size_t size)
{
  const char *slash = strrchr(path, '/'), *p;
  size_t k = 0;
  if (!slash) {
    snprintf(dir, size, ".");
    return 0;
  }
  for (p = path; p < slash || (p == path && p == slash); p++) {
    if (*p == '%' && p[1] != '%') return -1;
    if (k + 1 >= size) return -1;
    dir[k++] = *p;
    if (*p == '%') p++;
  }
  dir[k] = '\0';
  return 0;
}

/* Why open() of a profile's path failed with errno e: LJMP_ESYMLINK for
** a symbolic link in its last component (O_NOFOLLOW's ELOOP; a loop of
** links in the directories stays -ELOOP), LJMP_ENOREADER for a FIFO that
** no one reads (O_NONBLOCK's ENXIO), else -e. */
static int open_error(const char *path, int e)
{
  struct stat st;
  if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
    return LJMP_ESYMLINK;
  if (e == ENXIO && lstat(path, &st) == 0 && S_ISFIFO(st.st_mode))
    return LJMP_ENOREADER;
  return -e;
}

#define MP_FIFO_TRIES	500	/* Opens of a FIFO without a reader, 10 ms
				   apart: 5 s for its reader to come. */

/* Open the profile file for s: created with mode (0600 unless given) or,
** if it exists, truncated once no other profiler of this process is found
** writing it. A symbolic link in the last component is never followed,
** by either open (one planted in a shared sticky directory would make
** the profile overwrite its target, or create a file where a dangling
** one points). O_NONBLOCK makes the open of a FIFO without a reader fail
** instead of blocking start() forever: it is tried again for 5 s (a
** reader started at about the same time, `cat fifo &`, opens it a little
** later), then refused; O_NONBLOCK is cleared after the open, so the
** writes block as any file's do. Returns 0, -errno, LJMP_EBUSY,
** LJMP_ESYMLINK or LJMP_ENOREADER; *created says whether this call made
** the file. */
static int open_file(mp_state *s, const char *path, unsigned mode,
		     int *created)
{
  struct stat st;
  int fd, rc, fl, tries;
  int how = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  mode_t m = mode ? (mode_t)mode : 0600;
  struct timespec ms10 = { 0, 10000000 };
  *created = 0;
  for (tries = 1;; tries++) {
    fd = open(path, how | O_EXCL, m);
    if (fd >= 0) *created = 1;
    else if (errno == EEXIST) fd = open(path, how, m);
    if (fd >= 0) break;
    rc = open_error(path, errno);
    if (rc != LJMP_ENOREADER || tries >= MP_FIFO_TRIES) return rc;
    nanosleep(&ms10, NULL);
  }
  if ((fl = fcntl(fd, F_GETFL)) < 0 ||
      fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
    rc = -errno;
    goto fail;
  }
  if (fstat(fd, &st) < 0 || !(s->path = strdup(path))) {
    rc = errno == ENOMEM ? LJMP_ENOMEM : -errno;
    goto fail;
  }
  s->dev = st.st_dev;
  s->ino = st.st_ino;
  if ((rc = list_enter(s, S_ISREG(st.st_mode))) != 0) goto fail;
  if (S_ISREG(st.st_mode) && !*created && ftruncate(fd, 0) < 0) {
    rc = -errno;
    list_del(s);
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
    if (path_expand(opt.path, path, sizeof(path),
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
  if (!opt.path && (rc = list_enter(s, 0)) != 0) goto fail;
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
    list_del(s);
    if (created) unlink(opt.path);
    rc = rc == ENOMEM ? LJMP_ENOMEM : -rc;
    goto fail;
  }
  s->host_entry = mp_names_host_entry(L);
  mp_names_build(&s->names, &s->builtins, L);
  mp_names_prepare(L);
  mp_names_wrap_require(&s->names, L);
  if (opt.stacks) put_info(s, "stacks", opt.stacks);
  if (opt.stacks) mp_stack_jit_calls(&s->st, L);
  if (opt.sample) put_info(s, "sample", opt.sample);
  if (opt.native) {
    put_info(s, "native", 1);
    if ((rc = mp_native_start(s)) != 0) {	/* Another runs. */
      mp_names_unwrap_require(L);
      list_del(s);
      if (created) unlink(opt.path);
      goto fail;
    }
  }
  s->recording = 1;
  list_live(s);
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

/* ljmp_stop_with(), and the first error of a finaliser in its collection
** into why (for LJMP_EFINALIZER; why may be NULL). */
int mp_stop(lua_State *L, unsigned flags, char *why, size_t size)
{
  mp_state *s;
  int err, gc = 0;
  if (why && size) *why = '\0';
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
  }
  if (s && s->forked) {	/* A child's copy of the parent's profiler. */
    discard_forked(L, s);
    return LJMP_ENOTRUN;
  }
  if (!s) {
    /* Still listed for this VM but no longer its allocator: something
    ** wrapped or replaced the hook. Finalise the stream; the state stays
    ** allocated (forwarding only) for whatever still calls it. */
    if (!(s = wrapped_state(L))) return LJMP_ENOTRUN;
    mp_names_unwrap_require(L);
    list_del(s);
    mp_native_stop(s);
    mp_sink_finish(s);
    state_strip(s);
    return LJMP_EWRAPPED;
  }
  mp_native_stop(s);
  lua_setallocf(L, s->orig_f, s->orig_ud);
  mp_names_unwrap_require(L);
  list_del(s);
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
  return mp_stop(L, flags, NULL, 0);
}

/* See ljmemprof.h. */
int ljmp_options_check(const ljmp_options *opt, char *msg, size_t size)
{
  ljmp_options o;
  if (msg && size) *msg = '\0';
  if (!opt) return bad_option(msg, size, "options are NULL");
  return mp_options_read(&o, opt, msg, size);
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
  case LJMP_EWRAPPED: return "the allocator was replaced while profiling; "
			     "recording stopped and the profile is finalised";
  case LJMP_ETHREAD: return "cannot start the profiler's writer thread";
  case LJMP_EBUSY: return "another profiler in this process is writing "
			  "this file";
  case LJMP_ESIGNAL: return "that signal cannot toggle the profiler: the "
			    "program handles it, or another signal is armed";
  case LJMP_ESYMLINK: return "is a symbolic link, which the profiler never "
			     "follows (give the path of the file itself)";
  case LJMP_ENOREADER: return "is a FIFO that no process read within 5 s "
			      "(start the reader first)";
  case LJMP_EFINALIZER: return "a finaliser raised an error in the "
			       "collection before the end (caught; the "
			       "profile is complete)";
  }
  if (code < 0 && code > LJMP_E_BASE) return strerror(-code);
  return "unknown error";
}
