/*
** mp_proc.c: the process-wide state of the agent: the list of running
** profilers, and what process exit, fork and a VM's closing do to them.
**
** The list exists so that process exit (os.exit() runs no finalisers) can
** finalise every stream, so that two profilers never write one file, and
** so that a profiler whose hook something else wrapped can still be
** found; it is never touched on the hot path.
**
** Process exit may come from any thread while other threads' VMs are in
** the hook: at_exit() clears their `recording` flags, makes every thread
** see that (membarrier), waits until no hook is inside an event (`busy`),
** and only then finalises. The hook pays two plain stores per event.
*/

#include <dirent.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mp_proc.h"
#include "mp_sink.h"

#define MP_QUIESCE_NS		2000000000L	/* Longest wait at exit for a
						   hook in another thread. */

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

/* The snapshot a recording ending at exit was to take cannot be: the VM
** may be anywhere in its code, or in another thread. Say so on stderr
** (one write(2), as the sink's announcements), so that nothing is missing
** silently. */
static void say_no_snapshot(const mp_state *s)
{
  char line[2 * 4096 + 256];
  int n = snprintf(line, sizeof(line), "ljmemprof: %s: no heap snapshot "
		   "written: the process exits without closing the Lua state "
		   "(os.exit() without close); it is taken at stop(), a "
		   "signal's stop or lua_close()\n", s->snap);
  if (n > (int)sizeof(line) - 1) n = (int)sizeof(line) - 1;
  if (write(STDERR_FILENO, line, (size_t)n) < 0) {}	/* Nowhere else. */
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
    if (!s->finished && quiesce(s)) {
      if (s->snap && !s->limited) say_no_snapshot(s);
      /* Its collection runs at a stop or lua_close(), on the VM's
      ** thread: not here. The stream says so. */
      if (s->collect && !s->limited) s->notes |= MP_NOTE_EXITED;
      mp_sink_finish(s);
    }
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

/* See mp_proc.h. */
void mp_proc_del(mp_state *s)
{
  mp_state **pp;
  pthread_mutex_lock(&running_lock);
  for (pp = &running_list; *pp; pp = &(*pp)->next)
    if (*pp == s) { *pp = s->next; break; }
  pthread_mutex_unlock(&running_lock);
}

/* See mp_proc.h. */
int mp_proc_enter(mp_state *s, int regular)
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

/* See mp_proc.h. */
void mp_proc_live(mp_state *s)
{
  pthread_mutex_lock(&running_lock);
  s->finished = 0;
  pthread_mutex_unlock(&running_lock);
}

/* See mp_proc.h. */
mp_state *mp_proc_find(void *g)
{
  mp_state *s;
  pthread_mutex_lock(&running_lock);
  for (s = running_list; s; s = s->next)
    if (s->g == g && !s->finished && !s->forked) break;
  pthread_mutex_unlock(&running_lock);
  return s;
}

static void (*closed_hook)(lua_State *L);

/* See mp_proc.h. */
void mp_proc_on_close(void (*f)(lua_State *L))
{
  __atomic_store_n(&closed_hook, f, __ATOMIC_RELEASE);
}

/* See mp_proc.h. */
void mp_proc_closed(lua_State *L)
{
  void (*f)(lua_State *) = __atomic_load_n(&closed_hook, __ATOMIC_ACQUIRE);
  if (f) f(L);
}
