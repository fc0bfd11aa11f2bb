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

#define MP_NOINLINE	__attribute__((noinline))
#define MP_INLINE	inline __attribute__((always_inline))
#define MP_UNLIKELY(x)	__builtin_expect(!!(x), 0)
#define MP_LIKELY(x)	__builtin_expect(!!(x), 1)

/* A Lua name of a C function (see mp_names.c). */
typedef struct mp_name {
  const void *f;
  char *name;
  uint16_t parent;	/* Length of the name of the table holding it. */
  uint16_t parts;	/* Components of the name. */
  uint8_t std;		/* In the standard library: ranks first. */
  const void *cl;	/* The C closure found under the name, or NULL; for
			   a Lua function, its prototype's chunk name... */
  int32_t line;		/* ...and first line. */
} mp_name;

/* Candidate names, sorted by function and rank. */
typedef struct mp_names {
  mp_name *e;
  size_t n, cap;
  int sorted;		/* 0 while names are being added. */
  mp_hash modules;	/* Modules walked, by hash of their name... */
  mp_hash metas;	/* ...and registry tables, by address. */
  mp_hash shared;	/* C functions that two or three names of one
			   table share ("t.{a,b}"): their closures tell
			   which name ran (mp_cfunc_id()). */
} mp_names;

/* The name of a function, known from its parent's bytecode before its own
** symbol is written (mp_sym.c). */
#define MP_FNAME_MAX	64	/* Longer names are cut. */
typedef struct mp_fname {
  const void *chunk;		/* Its chunk name (a GCstr), and... */
  int32_t firstline;		/* ...first line: the same prototype still. */
  char name[MP_FNAME_MAX];
} mp_fname;

/* What was last written for a trace number. */
typedef struct mp_tracesym {
  const void *trace;		/* The GCtrace whose symbol was written. */
  uint32_t gen;			/* Symbols written for this number: tells
				   the stack nodes of the traces that bore
				   it apart (a flushed trace may still be
				   alive when its number is reused). */
} mp_tracesym;

/* A frame of a recorded call stack, and a node of the stack tree (see
** mp_node.h and the MP_X_NODE record in src/format/mp_ext.h). */
typedef struct mp_snode {
  uint64_t a;		/* Lua: prototype; C: function; trace: its number;
			   builtin: its ffid, or its prototype if LuaJIT
			   writes it in Lua; cut: the depth limit. */
  uint32_t parent;	/* Node of the frames below it (0: none). */
  uint32_t b;		/* Lua: line. */
  uint8_t kind;		/* MP_FK_*. */
} mp_snode;

#define MP_RECENT_BITS	10
#define MP_RETS_BITS	7	/* Sets of two. */

/* A frame of the stack being captured (scratch). */
typedef struct mp_wframe {
  mp_snode frame;	/* Kind 0: a Lua frame whose line is not looked up
			   yet (fn, pc, exact say where it is). */
  const void *slot;	/* TValue *: the frame's link slot. */
  const void *pc;	/* BCIns *: the pc a Lua frame's line is at, if it
			   is in its function's bytecode; else NULL. */
  const void *fn;	/* GCfunc *: a Lua frame's function. */
  int exact;		/* See lua_frame(), mp_stack_walk.h. */
  int cpc;		/* Its pc is from a C frame (mp_frame.cpc). */
} mp_wframe;

/* A frame of the last walked stack: its slot, what the slot held, and
** the node of the stack up to it. */
typedef struct mp_scache {
  const void *slot;	/* TValue *: the frame's link slot. */
  int64_t link;		/* Its link (frame_ftsz). */
  const void *fn;	/* Its function (frame_gc). */
  const void *pc;	/* As in mp_wframe: the same pc, the same line. */
  mp_snode frame;
  uint32_t id;
  uint32_t nwords;	/* Words of mp_stacks.words that say the frames
			   below it are in place (see still_there()). */
  int cpc;		/* Its line came from a C frame (a Lua function
			   that a hook, a finaliser or an FFI callback
			   interrupted): no frame is cached above it. */
} mp_scache;

/* A word of the VM stack and what it held when it was cached. */
typedef struct mp_sword {
  const uint64_t *at;
  uint64_t v;
} mp_sword;

#define MP_INLINED_MAX	6	/* Frames a trace inlined below the line's. */
#define MP_TCALLS	5	/* VM functions that tell what a trace made. */

/* Where a return address into a trace's code was mapped to a line. */
typedef struct mp_retline {
  uintptr_t ret;	/* The return address... */
  const void *trace;	/* ...into this trace... */
  const void *base;	/* ...with this prototype in the trace's base
			   frame (NULL: not a Lua function)... */
  mp_snode frame;	/* ...and the line (kind 0: none known), */
  int inbase;		/* ...which is in the base frame, */
  int incaller;		/* ...or is the call of the base frame (frame:
			   a placeholder): a tail call from it, */
  unsigned ninl;	/* ...below it the frames the trace inlined between
			   its base frame and the line's, outermost first,
			   each at the line of its call (0 if unknown), */
  mp_snode inl[MP_INLINED_MAX];
  uint32_t baseline;	/* ...and the line of the base frame's call into
			   the first of them (0: not known). */
} mp_retline;

/* The node of an event in a trace: by the node of the frames below the
** trace (its base frame on top) and the return address into it. */
typedef struct mp_traced {
  uintptr_t ret;
  const void *trace;
  uint32_t below;
  uint32_t id;		/* 0: none. */
} mp_traced;

#define MP_TRACED_BITS	8

#define MP_JMEMO_BITS	7	/* Sets of two stacks of compiled code... */
#define MP_JMEMO_WORDS	16	/* ...of at most this many words. */

/* The node of an event in compiled code, by the trace's base frame, the
** return address into the trace and the trace: the same while the words
** that held the base frame's link and function, and the words that
** validate the frames below it, hold what they held (see traced_again()
** in mp_stack.c). 2 << MP_JMEMO_BITS of them: 78 KB. */
typedef struct mp_jmemo {
  uintptr_t ret;	/* The return address into the trace's code... */
  const void *base;	/* ...TValue *: the trace's base (g->jit_base)... */
  const void *trace;	/* ...and the GCtrace; NULL: empty. */
  const void *low;	/* The lowest word compared. */
  uint32_t id;		/* The event's node. */
  uint32_t n;		/* Words in w. */
  mp_sword w[MP_JMEMO_WORDS];
} mp_jmemo;

/* The node of a Lua frame by its parent node and its pc (which names one
** line of one prototype), see lua_node() in mp_stack_walk.h. */
typedef struct mp_pcnode {
  const void *pc;	/* BCIns *, in pt's bytecode; NULL: empty. */
  const void *pt;	/* GCproto *. */
  uint32_t parent;
  uint32_t id;
  uint32_t line;
} mp_pcnode;

#define MP_PCNODE_BITS	11

#define MP_MEMO_BITS	7	/* Sets of two stacks met before... */
#define MP_MEMO_WORDS	32	/* ...of at most this many words. */
#define MP_MEMO_REST	32	/* Most time marks the memo rests. */

/* A stack met before, by its top frame: the stack is the same while the
** words that held the top frame's link and function, and the words that
** validated the frames below it in the cache of the last stack, hold what
** they held (see memo_find() in mp_stack_memo.h). */
typedef struct mp_memo {
  const void *top;	/* TValue *: the top frame's slot; NULL: empty. */
  uint64_t link;	/* Its link word... */
  uint64_t fn;		/* ...its function word... */
  const void *pc;	/* ...and its pc (in its function's bytecode;
			   MP_MEMO_NOPC: it runs none). */
  const void *low;	/* The lowest word below it that is compared. */
  uint32_t id;		/* The stack's node. */
  uint32_t n;		/* Words in w. */
  mp_sword w[MP_MEMO_WORDS];
} mp_memo;

/* How well a memo of stacks finds them: it rests while it seldom does
** (see memo_window() in mp_stack_memo.h). */
typedef struct mp_memouse {
  uint32_t probes;	/* Stacks looked for since the last time mark... */
  uint32_t hits;	/* ...and found. */
  uint32_t rest;	/* Time marks until the memo is used again; 0: in
			   use... */
  uint32_t fails;	/* ...and how often in a row it failed. */
} mp_memouse;

/* Builtins walked past the depth of stacks = N to reach the frame that
** called them, which the one-frame stream bills (the site). */
#define MP_SITE_SLACK	8

/* The stacks mode's state. */
typedef struct mp_stacks {
  unsigned depth;	/* Frames recorded: the N of stacks = N; 0 = off. */
  mp_snode *node;	/* Nodes made since the last forget: node[i] has id
			   base + i + 1 (ids go on across forgets). */
  uint32_t n, cap;
  uint32_t base;
  mp_hash index;	/* Hash of (parent, frame) -> index in node. */
  uint32_t recent[1 << MP_RECENT_BITS];	/* Index of a node by the top
					   bits of its hash (see mp_node_of). */
  mp_wframe *walk;	/* Scratch: the frames walked for this event,
			   innermost first (depth + 1: and the cut; and
			   MP_SITE_SLACK builtins past the depth). */
  /* The frames of the last walked stack, outermost first, with what each
  ** frame's slot held (see walk_stack() in mp_stack_walk.h), and the words of
  ** the stack they rely on. */
  mp_scache *c;
  unsigned nc;
  mp_sword *words;
  /* A stack deeper than depth is cached too, its top depth frames: then
  ** cbelow is the frame slot below c[0] (what the walk reads there is the
  ** first of the frames cut off, whose function word words[0] holds) and
  ** cparent the CUT node under c[0]; for a whole stack, NULL and 0. */
  const void *cbelow;
  uint32_t cparent;
  uint64_t new_addr;	/* Last new address written (deltas)... */
  uint64_t old_addr;	/* ...and last old address... */
  uint32_t last_node;	/* ...and node of the last stack event. */
  uint32_t tick;	/* Events until the next time mark... */
  uint32_t ticks;	/* ...and between two (fewer when sampling). */
  uint32_t scan[2];	/* Where (in words above the hook's frame) the
			   return address into a trace was found last. */
  mp_retline rets[2 << MP_RETS_BITS];	/* By return address (see
					   mp_trace_line()). */
  uintptr_t tcall[MP_TCALLS];	/* VM functions traces call (mp_traceline.c). */
  uint8_t iterff[2];	/* The builtins next and the ipairs iterator
			   (their ffids; 0: not known). */
  mp_traced traced[1 << MP_TRACED_BITS];	/* By both keys. */
  mp_pcnode pcnode[1 << MP_PCNODE_BITS];	/* By parent and pc. */
  mp_memo *memo;	/* 2 << MP_MEMO_BITS: two per set. */
  mp_jmemo *jmemo;	/* 2 << MP_JMEMO_BITS: two per set. */
  uint8_t jmemo_next[1 << MP_JMEMO_BITS];	/* The way to fill next. */
  uint8_t memo_next[1 << MP_MEMO_BITS];	/* The way of a set to fill next. */
  mp_memouse memo_use;	/* How well the memo does... */
  mp_memouse jmemo_use;	/* ...and the memo of compiled code. */
  uint8_t ffdone[256];	/* The name record of builtin ffid is written... */
  mp_hash luabuiltins;	/* ...and of these builtins written in Lua. */
} mp_stacks;

/* The sampler: every allocated byte has the same chance to be sampled,
** 1 in mean; an allocation is recorded when it holds a sampled byte (see
** mp_hook_alloc_sampled, mp_sample.c). */
#define MP_SEEN_MIN	256	/* Slots of the sampler's filter at first... */
#define MP_SEEN_MAX	(1u << 20)	/* ...and at most. */

typedef struct mp_sampler {
  int64_t left;		/* Bytes until the next sampled byte. */
  /* A filter asked by every free and reallocation: per slot
  ** (mp_seen()), the number of blocks whose end the hook must see (live
  ** sampled blocks, prototypes and traces the stream names), stuck once
  ** at 255. 0 says "none of them" in a few instructions; anything else
  ** takes the slow path, which asks live and the symbol sets. A slot is
  ** 16 bytes of address space, and live blocks are at least that far
  ** apart (the smallest chunk of LuaJIT's allocator or malloc is 32
  ** bytes), so neighbours take different slots. The filter keeps at
  ** least 16 slots per counted block (any other free then finds its slot
  ** taken less than once in 16): from 256 slots (seen0), it grows at
  ** least fourfold when it would be fuller, up to 1 Mi, and never
  ** shrinks. A small filter stays in the L1 cache. */
  uint8_t *seen;
  uintptr_t seen_mask;	/* Slots - 1. */
  uint64_t mean;	/* The mean gap: the sample option. */
  uint64_t rng;		/* Random state. */
  mp_hash live;		/* Addresses of sampled blocks not freed yet. */
  uint8_t seen0[MP_SEEN_MIN];
} mp_sampler;

/* The filter slot of block address a. */
static inline uint8_t *mp_seen(const mp_sampler *sm, uintptr_t a)
{
  return &sm->seen[(a >> 4) & sm->seen_mask];
}

#define MP_NCHUNK	4		/* Buffers in flight (file sinks). */

/* Notes written at the end of the stream (MP_X_INFO, see mp_ext.h). */
#define MP_NOTE_COLLECT	1	/* A full collection ran just before. */
#define MP_NOTE_SIZE	2	/* Recording stopped at max_size. */
#define MP_NOTE_SETTLED	4	/* No collection by the stop, but the heap
				   was as a finished cycle left it. */
#define MP_NOTE_EXITED	8	/* The collection asked for could not run:
				   the process exited, the state open. */

#define MP_TICK		4096	/* Events between time marks... */
#define MP_TICK_SAMPLED	16	/* ...and sampled events between them. */
#define MP_PAGE		4096		/* Chunk sizes and alignment. */
#define MP_SLACK	512		/* Spare bytes after a chunk: the most
					   one write puts past its end. */

typedef struct mp_state {
  /* Hot fields first. The state is aligned to a cache line, and the
  ** sampled hook reads only its first one on most calls: the allocator
  ** and the sampler's first fields. */
  lua_Alloc orig_f;		/* The allocator we wrap. */
  void *orig_ud;
  mp_sampler sm;		/* Sampling (sm.mean > 0, stacks on). */
  /* What the other hooks read on every event. */
  uint8_t *pos;			/* Next free byte of the buffer. */
  uint8_t *lim;			/* End of the chunk: flush when pos reaches
				   it (MP_SLACK spare bytes follow). */
  int recording;		/* 1 while events are recorded (atomic: another
				   thread's exit() clears it, see at_exit()). */
  int busy;			/* 1 while the hook records an event (atomic). */
  void *g;			/* The VM's global_State. */
  uint64_t alloc_est;		/* The collector's estimate at the last VM
				   allocation recorded (the full hooks): one
				   that differs at stop, between cycles,
				   says a cycle ran after it (settled()). */
  const void *last_proto;	/* Last prototype whose symbol is known. */
  uint64_t hi_key;		/* Address >> 28 whose ULEB128 is in hi_bytes. */
  uint64_t hi_bytes;
  unsigned hi_len;
  size_t sym_min;		/* Smaller frees are no proto or trace. */
  mp_hash protos;		/* Prototypes written since start. */
  mp_hash fnames;		/* Prototype -> index in fname: the names of
				   functions whose parent was written before
				   them (mp_sym.c). */
  struct mp_fname *fname;
  uint32_t nfname, capfname;
  mp_hash tracesyms;		/* Trace objects written since start. */
  mp_hash cfuncs;		/* C functions written since start. */
  mp_tracesym *traces;		/* By trace number. */
  mp_names names;		/* Lua names of C functions, made at start. */
  mp_names builtins;		/* Names of builtins, keyed by ffid... */
  mp_names luanames;		/* ...and of Lua functions made before the
				   start, keyed by prototype. */
  mp_stacks st;			/* Stacks mode (st.depth > 0). */
  int host_written;		/* The host's symbol is in the stream. */
  const void *host_entry;	/* The C function at the bottom of the main
				   thread's stack at start (named "luajit
				   (main)" when it has no symbol). */
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
  long writer_tid;		/* Its thread id, once it runs (atomic). */
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
  int announce;			/* Say on stderr when err ends recording
				   (atomic): no caller's stop() reports it
				   (LJMEMPROF started the recording). */
  int finished;			/* Epilogue written (stop, close or exit). */
  size_t max_size;		/* The size limit of the profile, or 0... */
  size_t sent;			/* ...bytes handed to the sink before buf... */
  int limited;			/* ...and 1 once it was reached. */
  int ext;			/* The stream is the ljmemprof extension. */
  unsigned notes;		/* MP_NOTE_*: written at the end. */
  unsigned closefin;		/* Finalisers of userdata lua_close() ran while
				   recording (the sentinel's stop), or 0. */
  int collect;			/* Collect garbage fully before the end. */
  int native;			/* Native memory is recorded (mp_native.c)... */
  void (*drain)(struct mp_state *s);	/* ...and its events queued by other
				   threads are written at time marks. */
  uint64_t t0;			/* Monotonic ns at start (time marks). */
  char *path;			/* The file written, or NULL (callback)... */
  unsigned mode;		/* ...its mode, as given... */
  char *snap;			/* ...and the snapshot to take at the stop
				   (ljmp_options.snapshot), or NULL. */
  dev_t dev;			/* Its identity, to refuse a second profiler */
  ino_t ino;			/* on the same file. */
  struct mp_state *next;	/* In the list of running profilers. */
} mp_state;

#endif
