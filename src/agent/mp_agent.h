/*
** mp_agent.h: state of the in-process profiler, shared by its files.
**
** One mp_state per profiled VM, reached through the allocator's ud pointer
** while recording (no globals on the hot path). Its memory comes from
** malloc, never from the VM, so the profiler does not profile itself.
*/

#ifndef MP_AGENT_H
#define MP_AGENT_H

#include <pthread.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include "lua.h"
#include "ljmemprof.h"
#include "util/mp_hash.h"

/* A Lua name of a C function (see mp_names.c). */
typedef struct mp_name {
  const void *f;
  char *name;
  uint16_t parent;	/* Length of the name of the table holding it. */
  uint16_t parts;	/* Components of the name. */
} mp_name;

/* Candidate names, sorted by function and rank. */
typedef struct mp_names {
  mp_name *e;
  size_t n, cap;
  int sorted;		/* 0 while names are being added. */
} mp_names;

/* What was last written for a trace number. */
typedef struct mp_tracesym {
  const void *trace;		/* The GCtrace whose symbol was written. */
} mp_tracesym;

#define MP_NCHUNK	4		/* Buffers in flight (file sinks). */
#define MP_PAGE		4096		/* Chunk sizes and alignment. */
#define MP_SLACK	512		/* Spare bytes after a chunk: the most
					   one write puts past its end. */

typedef struct mp_state {
  /* Hot fields first: the hook reads these on every event. */
  uint8_t *pos;			/* Next free byte of the buffer. */
  uint8_t *lim;			/* End of the chunk: flush when pos reaches
				   it (MP_SLACK spare bytes follow). */
  int recording;		/* 1 while events are recorded (atomic: another
				   thread's exit() clears it, see at_exit()). */
  int busy;			/* 1 while the hook records an event (atomic). */
  void *g;			/* The VM's global_State. */
  lua_Alloc orig_f;		/* The allocator we wrap. */
  void *orig_ud;
  const void *last_proto;	/* Last prototype whose symbol is known. */
  uint64_t hi_key;		/* Address >> 28 whose ULEB128 is in hi_bytes. */
  uint64_t hi_bytes;
  unsigned hi_len;
  size_t sym_min;		/* Smaller frees are no proto or trace. */
  mp_hash protos;		/* Prototypes written since start. */
  mp_hash tracesyms;		/* Trace objects written since start. */
  mp_hash cfuncs;		/* C functions written since start. */
  mp_tracesym *traces;		/* By trace number. */
  mp_names names;		/* Lua names of C functions, made at start. */
  int host_written;		/* The host's symbol is in the stream. */
  char host_name[80];		/* "HOST (program)": see host_loc(). */
  size_t ntraces;
  /* Sink: the hook fills buf (one of the chunks); full chunks go to the
  ** writer thread (file sinks) or to the writer callback at once. */
  uint8_t *buf;
  size_t bufsize;
  uint8_t *chunk[MP_NCHUNK];	/* Ring: [tail, tail+queued) wait to be
				   written, buf is chunk[tail+queued]. */
  size_t chunk_len[MP_NCHUNK];
  unsigned tail, queued;
  pthread_t thread;
  int has_thread;
  int has_sync;			/* mu and the conditions are initialised. */
  int forked;			/* This is a child: the stream is not ours. */
  int quit;			/* Writer thread: exit when the queue is empty. */
  pthread_mutex_t mu;
  pthread_cond_t cv_ready, cv_free;
  int fd;			/* File sink, or -1. */
  int direct;			/* Writing the file with O_DIRECT. */
  ljmp_writer writer;		/* Callback sink, or NULL. */
  void *ctx;
  ljmp_on_stop on_stop;
  int err;			/* Sticky errno of the sink; 0 if none. */
  int finished;			/* Epilogue written (stop, close or exit). */
  char *path;			/* The file written, or NULL (callback). */
  dev_t dev;			/* Its identity, to refuse a second profiler */
  ino_t ino;			/* on the same file. */
  struct mp_state *next;	/* In the list of running profilers. */
} mp_state;

/* -- mp_hook.c ------------------------------------------------------------ */
void *mp_hook_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* -- ljmp_api.c ----------------------------------------------------------- */
void mp_sentinel_install(lua_State *L);
/* The live profiler of L's VM (its hook, or wrapped by something else),
** or NULL. */
mp_state *mp_state_find(lua_State *L);

/* -- mp_sink.c ------------------------------------------------------------ */
int mp_sink_prepare(mp_state *s, size_t bufsize, int threaded);
int mp_sink_begin(mp_state *s, const uint8_t *prologue, size_t len);
void mp_sink_close(mp_state *s);
void mp_sink_forked(mp_state *s);
void mp_sink_flush(mp_state *s);
void mp_sink_put(mp_state *s, const void *data, size_t len);
void mp_sink_finish(mp_state *s);

/* -- mp_names.c ---------------------------------------------------------- */
/* Collect the names of the C functions reachable from the globals and
** package.loaded. */
void mp_names_build(mp_names *t, lua_State *L);
/* Add those of the module (a table) at stack index idx, named name. */
int mp_names_module(mp_names *t, lua_State *L, int idx, const char *name);
/* The label of C function f into out (NUL-terminated); 0 if it has none. */
size_t mp_names_label(const mp_names *t, const void *f, char *out,
		      size_t size);
void mp_names_free(mp_names *t);
/* Make the VM's require wrapper (before recording: it is kept). */
void mp_names_prepare(lua_State *L);
/* Put the wrapper in _G.require (over whatever is there), and back. */
void mp_names_wrap_require(mp_names *t, lua_State *L);
void mp_names_unwrap_require(lua_State *L);


#endif
