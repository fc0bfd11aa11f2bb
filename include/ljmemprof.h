/*
** ljmemprof.h: public C API of the ljmemprof agent.
**
** For applications that embed LuaJIT: start and stop the memory profiler on
** a lua_State, sending the stream to a file or to a writer callback. The
** stream is the memprof format (docs/FORMAT.md); read it with `ljmemprof`.
**
** All functions return 0 or a negative LJMP_E* code; ljmp_strerror() turns a
** code into a message. An I/O error is reported as -(errno) < LJMP_E_BASE.
** A NULL lua_State or options pointer is LJMP_EARG (ljmp_running(): 0).
*/

#ifndef LJMEMPROF_H
#define LJMEMPROF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lua_State;

/* The version of ljmemprof: the Lua module's _VERSION and `ljmemprof
** --version` say "ljmemprof 0.1", its pkg-config file "Version: 0.1". */
#define LJMP_VERSION	"0.1"

#if defined(LJMP_BUILD) && defined(__GNUC__)
#define LJMP_API __attribute__((visibility("default")))
#else
#define LJMP_API
#endif

/* Error codes (negative). Codes above LJMP_E_BASE are -errno values. */
#define LJMP_E_BASE	(-10000)
#define LJMP_ERUNNING	(-10001)	/* The profiler is running already. */
#define LJMP_ENOTRUN	(-10002)	/* The profiler is not running. */
#define LJMP_EARG	(-10003)	/* Bad argument (see ljmp_options). */
#define LJMP_EVM	(-10004)	/* The VM does not match the build. */
#define LJMP_ENOMEM	(-10005)	/* Out of memory for the profiler. */
#define LJMP_EWRAPPED	(-10006)	/* Allocator was replaced meanwhile. */
#define LJMP_ETHREAD	(-10007)	/* The writer thread could not start
					   (errno says why). */
#define LJMP_EBUSY	(-10008)	/* Another profiler of this process
					   is writing that file. */
#define LJMP_ESIGNAL	(-10009)	/* The signal has a handler of the
					   program's, or another is armed. */
#define LJMP_ESYMLINK	(-10010)	/* The path's last component is a
					   symbolic link: never followed. */
#define LJMP_ENOREADER	(-10011)	/* The path is a FIFO that no
					   process opened for reading
					   within 5 s. */
#define LJMP_EFINALIZER	(-10012)	/* Stop's collection: a finaliser
					   raised an error (caught; the
					   profile is complete). */

/*
** Writer callback: consume len bytes at data. Return 0 on success or a
** positive errno value; the first failure stops recording (the program goes
** on) and is reported by ljmp_stop(). Called from inside the VM's allocator:
** it must not call into the Lua state being profiled.
*/
typedef int (*ljmp_writer)(void *ctx, const void *data, size_t len);

/* Called once when the stream has ended (stop, lua_close, exit); err is 0
** or the errno that ended recording early. May be NULL. */
typedef void (*ljmp_on_stop)(void *ctx, int err);

/*
** Options for ljmp_start(). Start from LJMP_OPTIONS_INIT (or zeroes), then
** set one sink. The struct grows with new options: `size` tells the
** library how much of it the caller knows (0 = all of this header's);
** options past that end count as 0, their default, and bytes past the end
** of the library's own struct must be 0 (else LJMP_EARG).
*/
typedef struct ljmp_options {
  size_t size;		/* sizeof(ljmp_options) at the caller's build, or 0. */
  const char *path;	/* File to write (created or truncated), or NULL;
			   "" is LJMP_EARG. */
  ljmp_writer writer;	/* Or: a callback that receives the stream. */
  void *ctx;		/* Passed to writer and on_stop. */
  ljmp_on_stop on_stop;	/* Optional end-of-stream notification. */
  size_t bufsize;	/* Chunk size: 0 = 1 MiB, else 4096 to
			   LJMP_BUFSIZE_MAX (1 GiB), rounded up to a
			   multiple of 4 KiB (4 chunks for a file). */
  unsigned mode;	/* Permissions of a file the profiler creates: 0 =
			   0600 (a profile reveals addresses and source
			   text), else e.g. 0644 (before the umask); at
			   most 0777 (no setuid, setgid or sticky bit),
			   else LJMP_EARG. */
  unsigned stacks;	/* Record each allocation's call stack, up to this
			   many frames (LJMP_STACKS_MAX at most); 0 = the
			   one-frame memprof stream of version 3. */
  int collect;		/* Non-zero: a full garbage collection, recorded,
			   just before the stream ends at ljmp_stop() or at
			   lua_close() (not at process exit), so that what
			   the profile says is still held is still
			   reachable. ljmp_stop_with() can ask for it too. */
  size_t sample;	/* Sample: record an allocation with probability
			   1 - exp(-size / sample), so that each allocated
			   byte is recorded with chance 1/sample, and the
			   frees of recorded blocks; `ljmemprof` scales the
			   counts back. Implies stacks: stacks = 0 here is
			   LJMP_STACKS_DEFAULT, since C cannot tell it from
			   unset (Lua, LJMEMPROF and `ljmemprof run` refuse
			   an explicit 0 with sampling). At most
			   LJMP_SAMPLE_MAX; 0 = record every event. */
  unsigned long long seed;	/* The sampler's random seed, at most
				   LJMP_SEED_MAX; 0 = one drawn from the
				   clock and the pid. */
  size_t max_size;	/* Stop recording before the profile grows past
			   this many bytes (LJMP_MAX_SIZE_MIN to
			   LJMP_MAX_SIZE_MAX),
			   with a complete stream that notes why; 0 = no
			   limit. */
  int native;		/* Non-zero: record native memory too: the
			   malloc family, free and anonymous mmap/munmap
			   as every loaded object calls them (see
			   docs/USAGE.md, "Native memory"). Implies
			   stacks, as sample does (stacks = 0 here is
			   LJMP_STACKS_DEFAULT); cannot
			   go with sample (LJMP_EARG). One native recording
			   per process at a time (LJMP_EBUSY). */
  const char *snapshot;	/* Or NULL: the path of a heap snapshot
			   (ljmp_snapshot(), %p and %n expanded, created
			   with mode) taken when the recording is stopped
			   by ljmp_stop(), a signal or lua_close(), after
			   the stop's collection and before the stream
			   ends; the stream marks it, so that `ljmemprof
			   snapshot --profile` can join the two. Not at
			   process exit without lua_close() (the VM may
			   be anywhere): one line on stderr says so. */
} ljmp_options;

#define LJMP_OPTIONS_INIT	{ sizeof(ljmp_options), 0, 0, 0, 0, 0, 0, 0, 0, \
				  0, 0, 0, 0, 0 }
#define LJMP_SAMPLE_DEFAULT	524288	/* What `sample = true` asks for. */
#define LJMP_MAX_SIZE_MIN	65536
#define LJMP_BUFSIZE_MAX	((size_t)1 << 30)	/* Also the cap of the
							   Lua and LJMEMPROF
							   bufsize. */
#define LJMP_STACKS_DEFAULT	64	/* What `stacks = true` asks for. */
#define LJMP_STACKS_MAX		10000
#define LJMP_SAMPLE_MAX		((size_t)1 << 40)	/* The largest sample. */
#define LJMP_SEED_MAX		(1ull << 53)	/* The largest seed... */
#define LJMP_MAX_SIZE_MAX	(1ull << 53)	/* ...and max_size. */

/* Start profiling the VM of L. Returns 0, LJMP_ERUNNING, LJMP_EARG,
** LJMP_EVM, LJMP_ENOMEM, LJMP_ETHREAD, LJMP_EBUSY, LJMP_ESYMLINK,
** LJMP_ENOREADER or -errno (the file could not be opened or written). A
** symbolic link as the path's last component is never followed (a link
** planted in a shared directory would redirect the profile), and a FIFO
** that no process opens for reading within 5 s fails instead of blocking
** start forever. On failure nothing is
** left behind: a file the call created is removed. */
LJMP_API int ljmp_start(struct lua_State *L, const ljmp_options *opt);

/* Check options as ljmp_start() checks them (ljmp_arm() too, which also
** wants a path), without a VM: 0, or LJMP_EARG with a one-line message in
** msg naming the field and what it must be, e.g. "bufsize must be 0 or
** from 4096 to 1073741824 (1 GiB), not 100". msg is NUL-terminated, cut to
** size; with msg NULL or size 0 only the code is returned. A NULL opt is
** LJMP_EARG. What only a start can find (a file that cannot be opened, a
** path too long once %n is a larger number) is not checked. */
LJMP_API int ljmp_options_check(const ljmp_options *opt, char *msg,
				size_t size);

/* Stop profiling and finalise the stream. Returns 0, LJMP_ENOTRUN, the
** -errno of the write error that ended recording early, or LJMP_EWRAPPED
** when something else replaced the VM's allocator after ljmp_start() (the
** stream is finalised; the hook stays behind whatever wraps it, forwarding
** every call unrecorded). */
LJMP_API int ljmp_stop(struct lua_State *L);

/* ljmp_stop() with flags: LJMP_STOP_COLLECT runs a full garbage
** collection, recorded like any other frees, before the stream ends; the
** profile then says so (a note that `ljmemprof report` shows). An error
** that a finaliser raises in that collection (or in the one of
** ljmp_options.collect, also at lua_close()) is caught, never raised
** through the caller; the collection goes on with the other finalisers
** and the recording ends all the same: the stop returns LJMP_EFINALIZER
** (after a write error's -errno, which comes first). The snapshot of
** ljmp_options.snapshot is taken after that collection; when the stop
** itself succeeds, its failure is returned (the profile is complete). */
#define LJMP_STOP_COLLECT	1
LJMP_API int ljmp_stop_with(struct lua_State *L, unsigned flags);

/* Non-zero while the VM of L is being profiled. 0 once recording stopped
** at max_size: the profile is complete, ljmp_stop() returns 0 and
** ljmp_start() may begin another. 0 too once a write error ended
** recording: ljmp_stop() returns its -errno, and until it is called
** ljmp_start() says LJMP_ERUNNING. After fork(), a child does not inherit
** the recording: running() is 0 there, stop() says LJMP_ENOTRUN, start()
** begins a profile of the child's own; the parent's file is left to the
** parent. */
LJMP_API int ljmp_running(struct lua_State *L);

/* Arm signal signo (SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH, SIGURG, SIGPWR or
** a real-time signal) to toggle recording of L's VM: each signal starts a
** recording with the options opt (a path is required; "%n" in it numbers
** the recordings, else the second and later get ".N" appended), or stops
** the one running (with a collection first if opt->collect). The handler
** only counts signals; the switch happens at a safe point soon after,
** when the VM next allocates while running Lua code (never in compiled
** code or the garbage collector). One signal per process; the options
** are checked as ljmp_start() checks them when the VM is armed, and so
** is the directory of the path: it must exist and be writable and
** searchable by this process (access(W_OK | X_OK)), and hold no %p or %n.
** Errors of a start or stop at a signal (a file that cannot be created
** there all the same) go to stderr. Returns 0, LJMP_EARG (also: %p or %n
** in the directory), -errno (the directory's access() failed: -ENOENT,
** -EACCES, ...), LJMP_ENOMEM, LJMP_ERUNNING (armed already) or
** LJMP_ESIGNAL (the program handles that signal itself, or another
** signal is armed). */
LJMP_API int ljmp_arm(struct lua_State *L, int signo, const ljmp_options *opt);

/* Message for an error code returned above (never NULL). For LJMP_EARG
** it is "bad profiler options": call ljmp_options_check for which
** option. */
LJMP_API const char *ljmp_strerror(int code);

/* Write a heap snapshot of L's VM: every live object, its self size and
** its references, from the collector's roots (docs/FORMAT.md, "Heap
** snapshots"; read it with `ljmemprof snapshot FILE`). Takes of opt: path
** (%p and %n expanded; created 0600 unless mode says otherwise) or
** writer/ctx, bufsize, max_size, mode, and collect (a full collection
** first); stacks, sample and seed must be 0. It runs in the calling
** thread and allocates nothing in the VM. Returns 0, LJMP_EARG, LJMP_EVM,
** LJMP_ENOMEM, LJMP_ETHREAD, -errno (the file could not be opened or
** written), or -EFBIG when the snapshot reached max_size (the file is a
** complete snapshot that says it is cut short). snapshot must be NULL.
** A recording may run meanwhile: it records no event of the snapshot's
** (there is none: the VM's heap does not change), and a stream of the
** extension (stacks, sample or native) is marked where the snapshot was
** taken (an MP_X_INFO record "snapshot", see docs/FORMAT.md). */
LJMP_API int ljmp_snapshot(struct lua_State *L, const ljmp_options *opt);

/* Lua entry point: require("ljmemprof"). */
LJMP_API int luaopen_ljmemprof(struct lua_State *L);

#ifdef __cplusplus
}
#endif

#endif
