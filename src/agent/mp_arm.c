/*
** mp_arm.c: starting without code changes: the LJMEMPROF variable and a
** signal that toggles recording in a running process.
**
** A VM is armed for a signal (ljmp_arm) with the options of the
** recordings the signal starts. The signal handler only counts signals.
** Arming puts a thin allocator under everything else the VM's allocations
** go through (the recording hook included, when one starts); it forwards
** each call and compares the count with the last one it saw: at the first
** allocation after a signal while the JIT compiler is idle, it asks for a
** count hook (lua_sethook, as LuaJIT's own luajit.c does from its SIGINT
** handler). The hook runs
** before the next bytecode, a safe point for the Lua API: it puts back the
** program's own hook, if any, and starts or stops recording there. So the
** switch never happens inside the handler, nor inside the allocator.
**
** At lua_close() (the registry sentinel's __gc, before LuaJIT frees the
** VM's memory) the arm puts the VM's own allocator back and frees its
** record: LuaJIT destroys its arena only when it finds its own allocator
** there. The handler never reads the records, so freeing one is safe.
*/

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lj_obj.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "lauxlib.h"

#include "mp_agent.h"
#include "mp_proc.h"
#include "mp_sym.h"
#include "mp_api.h"
#include "mp_arm.h"
#include "mp_options.h"
#include "util/mp_size.h"

typedef struct mp_arm {
  void *g;			/* The VM's global_State. */
  lua_Alloc orig_f;		/* The allocator under ours. */
  void *orig_ud;
  unsigned seen;		/* The signal count last acted on. */
  int dead;			/* The VM was closed: only forward. */
  ljmp_options opt;		/* Options of the recordings it starts... */
  char path[4096];		/* ...their path... */
  char snap[4096];		/* ...and their snapshot's, or "". */
  unsigned starts;		/* Recordings the signal started. */
  lua_Hook saved_f;		/* The program's hook, put back after ours, */
  int saved_mask, saved_count;	/* its mask and count, */
  int32_t saved_left;		/* and what was left of its count. */
  struct mp_arm *next;
} mp_arm;

static pthread_mutex_t arm_lock = PTHREAD_MUTEX_INITIALIZER;
static mp_arm *arms;
static int arm_signo;		/* The signal armed (one per process). */
static unsigned sig_count;	/* Signals received (the handler's only
				   work; atomic). */

static void on_signal(int signo)
{
  (void)signo;
  __atomic_add_fetch(&sig_count, 1, __ATOMIC_RELAXED);
}

/* The live arm of VM g, or NULL (arm_lock held). */
static mp_arm *arm_of_locked(void *g)
{
  mp_arm *a;
  for (a = arms; a && (a->g != g || a->dead); a = a->next) {}
  return a;
}

static mp_arm *arm_of(void *g)
{
  mp_arm *a;
  pthread_mutex_lock(&arm_lock);
  a = arm_of_locked(g);
  pthread_mutex_unlock(&arm_lock);
  return a;
}

/* In a child after fork(): the lock may have been held by a lost thread.
** The arms stay: a child of an armed process (an nginx worker) toggles
** its own recordings at the signals sent to it. */
static void arm_fork_child(void)
{
  pthread_mutex_init(&arm_lock, NULL);
}

/* Signals that may toggle recording: those no library or runtime gives a
** meaning to by default. */
static const struct { const char *name; int signo; } sig_names[] = {
  { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
  { "WINCH", SIGWINCH }, { "URG", SIGURG }, { "PWR", SIGPWR },
};

int mp_signal_number(const char *name)
{
  size_t i;
  char *end;
  long n;
  if (!strncmp(name, "SIG", 3)) name += 3;
  for (i = 0; i < sizeof(sig_names) / sizeof(sig_names[0]); i++)
    if (!strcmp(name, sig_names[i].name)) return sig_names[i].signo;
  if (!strncmp(name, "RTMIN+", 6) || !strncmp(name, "RTMAX-", 6)) {
    n = strtol(name + 6, &end, 10);
    if (*end || end == name + 6 || n < 0 || n > SIGRTMAX - SIGRTMIN) return 0;
    return name[3] == 'I' ? SIGRTMIN + (int)n : SIGRTMAX - (int)n;
  }
  if (!strcmp(name, "RTMIN")) return SIGRTMIN;
  if (!strcmp(name, "RTMAX")) return SIGRTMAX;
  n = strtol(name, &end, 10);
  if (*end || end == name || n <= 0 || n > SIGRTMAX) return 0;
  return mp_signal_ok((int)n) ? (int)n : 0;
}

int mp_signal_ok(int signo)
{
  size_t i;
  if (signo >= SIGRTMIN && signo <= SIGRTMAX) return 1;
  for (i = 0; i < sizeof(sig_names) / sizeof(sig_names[0]); i++)
    if (signo == sig_names[i].signo) return 1;
  return 0;
}

/* -- The switch ------------------------------------------------------------ */

/* Start or stop recording in the VM of L. */
static void toggle(lua_State *L, mp_arm *a)
{
  char tmpl[MP_PATH_MAX + 4], stmpl[MP_PATH_MAX + 4];
  ljmp_options opt = a->opt;
  mp_state *s = mp_state_find(L);
  int rc;
  /* A recording that a write error ended is stopped too. The error of
  ** one that a signal or LJMEMPROF started was said on stderr when it
  ** happened; one that the program started is said here. */
  if (s && !s->finished && !s->limited) {
    int said = __atomic_load_n(&s->announce, __ATOMIC_RELAXED);
    mp_stopinfo info;
    rc = mp_stop(L, a->opt.collect ? LJMP_STOP_COLLECT : 0, NULL, &info);
    if (rc && rc != LJMP_ENOTRUN && !(said && rc < 0 && rc > LJMP_E_BASE))
      fprintf(stderr, "ljmemprof: stopping at a signal: %s%s%s\n",
	      ljmp_strerror(rc), *info.why ? ": " : "", info.why);
    if (info.snaprc)
      fprintf(stderr, "ljmemprof: the snapshot at a signal (%s): %s\n",
	      info.snap, info.snaprc == -EFBIG ? "it reached max_size: it "
	      "is cut short" : ljmp_strerror(info.snaprc));
    return;
  }
  /* A later recording must not overwrite an earlier one: without %n in
  ** the path, the second and later get ".N" (the start's number). */
  snprintf(tmpl, sizeof(tmpl), "%s%s", a->path,
	   a->starts && !strstr(a->path, "%n") ? ".%n" : "");
  opt.path = tmpl;
  if (*a->snap) {	/* Numbered as the recordings are. */
    snprintf(stmpl, sizeof(stmpl), "%s%s", a->snap,
	     a->starts && !strstr(a->snap, "%n") ? ".%n" : "");
    opt.snapshot = stmpl;
  }
  rc = ljmp_start(L, &opt);
  if (!rc)	/* No code of the program's stops it: none hears its errors. */
    __atomic_store_n(&mp_state_find(L)->announce, 1, __ATOMIC_RELAXED);
  if (rc)
    fprintf(stderr, "ljmemprof: starting at a signal (%s): %s%s%s\n",
	    a->path, ljmp_strerror(rc), rc == LJMP_ETHREAD ? ": " : "",
	    rc == LJMP_ETHREAD ? strerror(errno) : "");
  else
    a->starts++;
}

/* The count hook asked for after a signal: put the program's hook back
** with what is left of its count, switch, and pass the event on to the
** program's hook if it wanted it. lua_sethook() restarts a count, so
** the countdown is put back as it would stand without ours: less the
** instructions counted since request() (ours ran down from 1: one when
** it fired, else what it counted); at 0 the program's count hook is due
** now, and runs after the switch. Without that, a watchdog built on a
** count hook never fired while signals came more often than its count. */
static void toggle_hook(lua_State *L, lua_Debug *ar)
{
  mp_arm *a = arm_of(G(L));
  global_State *g = G(L);
  lua_Hook f;
  int mask, due = 0;
  int32_t ran;
  if (!a) { lua_sethook(L, NULL, 0, 0); return; }
  f = a->saved_f;
  mask = a->saved_mask;
  ran = ar->event == LUA_HOOKCOUNT ? 1 : g->hookcount < 1 ? 1 - g->hookcount : 0;
  lua_sethook(L, f, mask, a->saved_count);
  if (f && (mask & LUA_MASKCOUNT)) {
    int32_t left = (int32_t)((uint32_t)a->saved_left - (uint32_t)ran);
    if (left == 0 && ar->event == LUA_HOOKCOUNT)
      due = 1;	/* Left at the count, as the VM resets it. */
    else g->hookcount = left;
  }
  toggle(L, a);
  if (due || (f && ar->event != LUA_HOOKCOUNT && (mask & (1 << ar->event))))
    f(L, ar);
}

/* A signal came: ask for the count hook, unless the JIT compiler is at
** work (lua_sethook() aborts a recording, which the recorder must not see
** happen under it): then a later allocation asks. Elsewhere, in the
** interpreter, in compiled code or in the collector, only the dispatch
** table changes, as when LuaJIT's own SIGINT handler does it. */
static MP_NOINLINE void request(mp_arm *a, unsigned n)
{
  global_State *g = (global_State *)a->g;
  lua_State *L = (lua_State *)gcref(g->cur_L);
  if (a->dead || !L || G2J(g)->state != LJ_TRACE_IDLE) return;
  a->seen = n;
  if (lua_gethook(L) == toggle_hook) return;	/* Asked already. */
  a->saved_f = lua_gethook(L);
  a->saved_mask = lua_gethookmask(L);
  a->saved_count = lua_gethookcount(L);
  a->saved_left = g->hookcount;
  lua_sethook(L, toggle_hook, a->saved_mask | LUA_MASKCOUNT, 1);
}

/* The allocator of an armed VM: forward, and notice signals. */
static void *armed_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  mp_arm *a = (mp_arm *)ud;
  unsigned n = __atomic_load_n(&sig_count, __ATOMIC_RELAXED);
  if (MP_UNLIKELY(n != a->seen)) request(a, n);
  return a->orig_f(a->orig_ud, ptr, osize, nsize);
}

/* -- Arming --------------------------------------------------------------- */

/* Un-arm the closing VM of L (its profiler is stopped already, else its
** stop would put armed_alloc back): restore the allocator under the arm
** and free the record. If something else wrapped armed_alloc since, the
** record stays, forwarding only, for whatever still calls it. */
static void arm_closed(lua_State *L)
{
  mp_arm **pp, *a;
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  pthread_mutex_lock(&arm_lock);
  for (pp = &arms; (a = *pp) != NULL; ) {
    if (a->g != G(L) || a->dead) { pp = &a->next; continue; }
    if (f == armed_alloc && ud == a) {
      lua_setallocf(L, a->orig_f, a->orig_ud);
      *pp = a->next;
      free(a);
    } else {
      a->dead = 1;
      pp = &a->next;
    }
  }
  pthread_mutex_unlock(&arm_lock);
}

/* See ljmemprof.h. */
int ljmp_arm(lua_State *L, int signo, const ljmp_options *user)
{
  ljmp_options opt;
  struct sigaction sa, old;
  mp_arm *a;
  char dir[MP_PATH_MAX], probe[MP_PATH_MAX + 2];
  int rc = 0;
  if (!L || !user || mp_options_read(&opt, user, NULL, 0) < 0 ||
      !opt.path || strlen(opt.path) >= sizeof(a->path) ||
      (opt.snapshot && strlen(opt.snapshot) >= sizeof(a->snap)) ||
      !mp_signal_ok(signo) || mp_path_dir(opt.path, dir, sizeof(dir)) < 0)
    return LJMP_EARG;
  /* A start at a signal can only report to stderr: find out now ("/."
  ** makes a file that is no directory ENOTDIR). */
  snprintf(probe, sizeof(probe), "%s/.", dir);
  if (access(probe, W_OK | X_OK) < 0) return -errno;
  if (!(a = calloc(1, sizeof(*a)))) return LJMP_ENOMEM;
  mp_proc_on_close(arm_closed);
  a->g = G(L);
  a->opt = opt;
  memcpy(a->path, opt.path, strlen(opt.path) + 1);
  a->opt.path = NULL;
  if (opt.snapshot) memcpy(a->snap, opt.snapshot, strlen(opt.snapshot) + 1);
  a->opt.snapshot = NULL;
  pthread_mutex_lock(&arm_lock);
  if (arm_of_locked(G(L))) {
    rc = LJMP_ERUNNING;
  } else if (arm_signo && arm_signo != signo) {
    rc = LJMP_ESIGNAL;
  } else if (!arm_signo) {
    /* The program's own handler is never replaced. */
    if (sigaction(signo, NULL, &old) < 0 || (old.sa_flags & SA_SIGINFO) ||
	(old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
      rc = LJMP_ESIGNAL;
    } else {
      memset(&sa, 0, sizeof(sa));
      sa.sa_handler = on_signal;
      sa.sa_flags = SA_RESTART;
      sigemptyset(&sa.sa_mask);
      if (sigaction(signo, &sa, NULL) < 0) {
	rc = LJMP_ESIGNAL;
      } else {
	arm_signo = signo;
	pthread_atfork(NULL, NULL, arm_fork_child);
      }
    }
  }
  if (!rc) {
    /* Under everything else: below the recording hook if one runs. */
    mp_state *s = mp_state_find(L);
    a->seen = __atomic_load_n(&sig_count, __ATOMIC_RELAXED);
    if (s) {
      a->orig_f = s->orig_f;
      a->orig_ud = s->orig_ud;
      s->orig_f = armed_alloc;
      s->orig_ud = a;
    } else {
      a->orig_f = lua_getallocf(L, &a->orig_ud);
      lua_setallocf(L, armed_alloc, a);
    }
    a->next = arms;
    arms = a;
  }
  pthread_mutex_unlock(&arm_lock);
  if (rc) { free(a); return rc; }
  mp_sentinel_install(L);
  return 0;
}

/* -- LJMEMPROF -------------------------------------------------------------- */

/* A yes/no value: 1, 0, or -1 if neither. */
static int parse_bool(const char *v)
{
  if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true")) return 1;
  if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false")) return 0;
  return -1;
}

/* The value v of LJMEMPROF's key d as a number, or -1 if it is bad. */
static long long env_value(const mp_optdef *d, const char *v)
{
  long long n = -1;
  char *end;
  int b = *v >= '0' && *v <= '9' ? -1 : parse_bool(v);
  switch (d->kind) {
  case MP_OK_BOOL:
    return parse_bool(v);
  case MP_OK_SIGNAL:
    return mp_signal_number(v) ? mp_signal_number(v) : -1;
  case MP_OK_MODE:
    if (*v < '0' || *v > '7') return -1;
    n = strtoll(v, &end, 8);
    if (*end) return -1;
    break;
  default:	/* Sizes, frames, numbers; yes/no where they mean one. */
    if (b >= 0 && d->yes >= 0) return b ? d->yes : 0;
    n = mp_parse_size(v);
    break;
  }
  if (n < 0 || !mp_opt_within(d, n, 1)) return -1;
  return n;
}

/* Parse LJMEMPROF's value "path[,key=value]..." into *opt (path into buf),
** the signal to arm (0: none) and whether to start now. 0, or -1 with a
** message in err. */
static int env_parse(const char *env, char *buf, size_t size,
		     ljmp_options *opt, int *signo, int *start, char *err,
		     size_t errsize)
{
  char *p, *item, *save = NULL;
  unsigned given = 0;	/* Keys seen, by index in mp_optdefs. */
  int no_stacks = 0;	/* stacks=0 or stacks=no was given. */
  const mp_optclash *c;
  int rc;
  if (strlen(env) >= size) {
    snprintf(err, errsize, "the value is too long");
    return -1;
  }
  memcpy(buf, env, strlen(env) + 1);
  p = strchr(buf, ',');
  if (p) *p++ = '\0';
  if (!*buf) {
    snprintf(err, errsize, "no path before the first ','; the form is "
	     "path[,key=value]...");
    return -1;
  }
  if ((rc = mp_path_check(buf)) != 0) {
    snprintf(err, errsize, "path '%s': %s", buf, mp_path_why(rc));
    return -1;
  }
  opt->path = buf;
  *signo = 0;
  *start = 1;
  for (item = p ? strtok_r(p, ",", &save) : NULL; item;
       item = strtok_r(NULL, ",", &save)) {
    const mp_optdef *k;
    char *v = strchr(item, '=');
    char names[160];
    long long n;
    if (!v) {
      snprintf(err, errsize, "'%s' is not key=value", item);
      return -1;
    }
    *v++ = '\0';
    if (!(k = mp_opt_find(item, MP_OF_ENV))) {
      snprintf(err, errsize, "unknown key '%s' (keys: %s)", item,
	       mp_opt_names(MP_OF_ENV, names, sizeof(names)));
      return -1;
    }
    /* The last one would win unnoticed: which did the user mean? */
    if (given & 1u << (k - mp_optdefs)) {
      snprintf(err, errsize, "key '%s' is given twice", item);
      return -1;
    }
    given |= 1u << (k - mp_optdefs);
    if (k->kind == MP_OK_PATH) {	/* snapshot=PATH */
      if (!*v || (rc = mp_path_check(v)) != 0) {
	snprintf(err, errsize, "%s=%s: %s", item, v,
		 *v ? mp_path_why(rc) : "a path must follow '='");
	return -1;
      }
      mp_opt_store_path(opt, k, v);
      continue;
    }
    if ((n = env_value(k, v)) < 0) {
      snprintf(err, errsize, "%s=%s: %s", item, v, k->want);
      return -1;
    }
    if (k->width) mp_opt_store(opt, k, n);
    if (k->kind == MP_OK_FRAMES) no_stacks = !n;
    else if (k->kind == MP_OK_SIGNAL) *signo = (int)n;
    else if (!k->width) *start = (int)n;	/* The key start. */
  }
  /* ljmp_options cannot say "0 given": it would mean 64 frames. */
  if ((c = mp_opt_clash(opt, no_stacks)) != NULL) {
    snprintf(err, errsize, "%s%s cannot go with %s: %s", c->a,
	     c->a_zero ? "=0" : "", c->b, c->why);
    return -1;
  }
  return 0;
}

int mp_env_start(lua_State *L, char *err, size_t errsize)
{
  static char buf[8192];
  const char *env = getenv("LJMEMPROF");
  ljmp_options opt = LJMP_OPTIONS_INIT;
  int signo, start, rc;
  if (!env || !*env) return 0;
  if (env_parse(env, buf, sizeof(buf), &opt, &signo, &start, err,
		errsize) < 0)
    return -1;
  if (signo && (rc = ljmp_arm(L, signo, &opt)) != 0) {
    char dir[MP_PATH_MAX];
    if (rc == LJMP_ERUNNING) return 0;	/* Loaded again: done before. */
    if (mp_path_dir(opt.path, dir, sizeof(dir)) < 0)
      snprintf(err, errsize, "path '%s': %s", opt.path, MP_DIR_PCT);
    else if (rc < 0 && rc > LJMP_E_BASE)
      snprintf(err, errsize, "directory %s: %s", dir, ljmp_strerror(rc));
    else
      snprintf(err, errsize, "signal %s: %s", strsignal(signo),
	       ljmp_strerror(rc));
    return -1;
  }
  if (!start || ljmp_running(L)) return 0;
  rc = ljmp_start(L, &opt);
  if (!rc)	/* No code of the program's stops it: none hears its errors. */
    __atomic_store_n(&mp_state_find(L)->announce, 1, __ATOMIC_RELAXED);
  if (rc == LJMP_ETHREAD)
    snprintf(err, errsize, "%s: %s", ljmp_strerror(rc), strerror(errno));
  else if (rc)
    snprintf(err, errsize, "%s: %s%s", opt.path, ljmp_strerror(rc),
	     rc == LJMP_EBUSY ? " (put %n in the path: one file per VM)" : "");
  return rc ? -1 : 0;
}
