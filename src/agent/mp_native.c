/*
** mp_native.c: native memory: the malloc family and anonymous
** mmap/munmap/mremap as every loaded object calls them, recorded beside
** the VM's heap.
**
** How calls are seen: at start the relocation slots (JUMP_SLOT and
** GLOB_DAT, of DT_JMPREL and DT_RELA) that name a wrapped function in
** every loaded object but the dynamic linker and this one get the
** wrapper's address (RELRO pages made writable for the store); stop puts
** the old values back in the objects still loaded. Objects loaded later
** are patched when they load (dlopen is wrapped; dlclose too, so that a
** module unloaded is never written to). LuaJIT's FFI resolves ffi.C.name
** with dlsym and caches the address (compiled code calls it directly): in
** LuaJIT's object, dlsym is wrapped too and hands out the wrappers while
** recording. What none of this reaches: calls through addresses taken
** before start, objects loaded by something that is not patched, direct
** system calls; the preload mode (libljmemprof_preload.so in LD_PRELOAD,
** mp_preload.h) reaches all but the last: the library's malloc family
** calls the wrappers while recording.
**
** What is an event: a call made by a thread that is not inside a wrapper
** already, nor inside the VM's allocator (a guard around it: LuaJIT's own
** arena comes from mmap, a host's lua_Alloc may be malloc), nor inside the
** agent's own work (the hook, on the VM's thread). Frees (and resizes) of
** blocks not seen allocated are counted, not recorded (a table of the
** live blocks, under the lock).
**
** Where: on the VM's thread (the one that started the recording), the
** stack walker of the stacks mode gives the Lua stack, exactly as for the
** VM's own allocations (a C function, a builtin's caller, the line inside
** a trace from the return address), and the event's node is a native
** frame (the function) on top of it. Elsewhere, and when no Lua code runs,
** the native frame sits on the caller's address (a C frame named by its
** symbol and offset).
**
** Threads: the VM's thread writes the stream (it alone may: the hook
** writes without a lock) and keeps the live blocks; other threads append
** to a queue (under a lock) that the VM's thread applies and writes out
** before its next native event, at its time marks and at stop, in the
** lock's order. The VM's own malloc and free take no lock: a block
** another thread freed was queued before it was, so the queue is not
** empty when the VM's thread gets it; resizes, which free a block inside
** the call, run under the lock. A reader keeps native blocks apart from
** the VM's (MP_NATIVE_KEY), so that a queued event written after later
** VM events cannot mix the two. Stop waits for the wrappers inside a
** recording (inflight, vm_inside); this object is never unloaded once
** used, since a thread may still enter a wrapper.
*/

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mp_agent.h"
#include "mp_native.h"
#include "mp_preload.h"
#include "mp_sample.h"
#include "mp_stack.h"
#include "mp_sym.h"
#include "mp_sink.h"
#include "mp_stream.h"
#include "mp_where.h"

#if defined(__x86_64__)
#define R_SLOT	R_X86_64_JUMP_SLOT
#define R_GLOB	R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_SLOT	R_AARCH64_JUMP_SLOT
#define R_GLOB	R_AARCH64_GLOB_DAT
#endif

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4	/* Linux 5.7; older headers lack it. */
#endif

#define NATIVE_WAIT_NS	2000000000L	/* Longest wait at stop for wrappers
					   inside a recording. */
#define QUEUE_MAX	65536	/* Other threads' events queued at most (two
				   buffers of 3.5 MiB). */
#define QUEUE_WAIT_NS	20000000L	/* Longest wait of another thread for
					   room in the queue. */
/* > 0 while this thread must not record: inside a wrapper's recording or
** real call, or inside the VM's allocator. Initial-exec: no allocation
** on first use (which would come back here). */
static __thread int depth __attribute__((tls_model("initial-exec")));
/* This thread's id, once asked. */
static __thread uint32_t my_tid __attribute__((tls_model("initial-exec")));
/* The recording (nat.on) this thread is the VM's thread of: set by start
** on the thread that starts, so that wrappers tell it without a call. */
static __thread unsigned vm_gen __attribute__((tls_model("initial-exec")));
/* Sampling, on another thread: bytes to its next sampled byte, drawn
** for recording t_gen. */
static __thread int64_t t_left __attribute__((tls_model("initial-exec")));
static __thread unsigned t_gen __attribute__((tls_model("initial-exec")));

/* This thread's id (the kernel's, as ps and /proc show it). */
static uint32_t thread_id(void)
{
  if (!my_tid) my_tid = (uint32_t)syscall(SYS_gettid);
  return my_tid;
}

/* The functions wrapped, by index; W_MMAP64 is mmap's other name. The
** memory functions (those of the preload table) come first, up to
** W_MEM_LAST. */
enum {
  W_MALLOC, W_CALLOC, W_REALLOC, W_REALLOCARRAY, W_FREE, W_POSIX_MEMALIGN,
  W_ALIGNED_ALLOC, W_MEMALIGN, W_VALLOC, W_PVALLOC, W_MMAP, W_MMAP64,
  W_MUNMAP, W_MREMAP, W_DLOPEN, W_DLCLOSE, W_DLSYM, W_N,
  W_MEM_LAST = W_MREMAP
};
_Static_assert(W_MEM_LAST + 1 == MP_PL_N, "the preload table's order");
static const char *const wname[W_N] = {
  "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
  "aligned_alloc", "memalign", "valloc", "pvalloc", "mmap", "mmap64",
  "munmap", "mremap", "dlopen", "dlclose", "dlsym"
};

/* The real functions (their definitions, as dlsym finds them). */
static struct {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void *(*reallocarray)(void *, size_t, size_t);
  void (*free)(void *);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  void *(*mmap)(void *, size_t, int, int, int, off_t);
  void *(*mmap64)(void *, size_t, int, int, int, off_t);
  int (*munmap)(void *, size_t);
  void *(*mremap)(void *, size_t, size_t, int, ...);
  void *(*dlopen)(const char *, int);
  int (*dlclose)(void *);
  void *(*dlsym)(void *, const char *);
} real;

/* An event: made on the VM's thread, or queued by another. */
typedef struct nat_ev {
  uint64_t oaddr, osize, naddr, nsize;	/* munmap: osize is its length. */
  uintptr_t caller;	/* Return address of the wrapped call. */
  uint32_t tid;		/* Another thread's id (0: the VM's thread). */
  uint8_t ev;		/* MP_AEV_*. */
  uint8_t nf;		/* MP_NF_*. */
  uint8_t take;		/* Its new block is recorded (sampled, or not
			   sampling). */
  uint8_t jit;		/* An allocation of the JIT's assembler: its
			   machine code, not an event (see apply()). */
  int mflags;		/* mremap: its flags (MREMAP_*). */
} nat_ev;

typedef struct nat_q {
  nat_ev *e;
  size_t n, cap;	/* n: atomic (the VM's thread peeks at it). */
} nat_q;

/* A patched slot, and the object it is in. */
typedef struct nat_patch {
  void **slot;
  void *old;
  void *wrap;		/* What was stored. */
  uint32_t obj;
  uint8_t ro;		/* In a RELRO page. */
} nat_patch;

typedef struct nat_obj {
  uintptr_t base;
  uint64_t name;	/* Hash of its path. */
  int alive;
} nat_obj;

/* A live anonymous mapping (kept apart: a munmap may take part of one, or
** of several). */
typedef struct nat_map {
  uint64_t addr, size;
  int jit;		/* The JIT's machine code: its unmapping is no
			   event (JIT_OLD: an area mapped before the
			   start, see nat.premc). */
} nat_map;

#define JIT_OLD		2	/* nat_map.jit of an mcode area made before. */

#define FILTER_SLOTS	65536	/* Sampling's filter of live sampled blocks. */

static struct {
  int ready;		/* The real functions are known. */
  unsigned on;		/* The recording's number while it runs, else 0
			   (atomic). */
  unsigned gen;		/* The last recording's number. */
  int inflight;		/* Other threads' wrappers inside a recording
			   (atomic). */
  int vm_inside;	/* The VM's thread is inside one (atomic, see
			   vm_begin()). */
  int membar;		/* membarrier() works: vm_inside needs no fence. */
  int resizing;		/* Another thread resizes under mu (atomic). */
  int sampled;		/* Native events are sampled (s->sm.mean). */
  uint8_t *filter;	/* Sampling: per slot the live sampled blocks
			   (atomic bytes, stuck at 255); kept once made. */
  mp_sampler osm;	/* Other threads' draws (under mu). */
  mp_state *s;		/* The recording profiler. */
  struct nat_vmalloc *vma;	/* The VM's allocator, behind the guard. */
  pthread_mutex_t mu;	/* Orders other threads' events: q, osm. */
  /* The VM's thread's alone (and stop's, once no wrapper runs): */
  mp_hash live;		/* Live blocks: address -> size (or BIG). */
  mp_hash big;		/* Sizes of 4 GiB or more: address -> index... */
  uint64_t *bigs;	/* ...into this. */
  size_t nbig, capbig;
  nat_map *maps;	/* Live mappings, by address. */
  size_t nmaps, capmaps;
  size_t premc;		/* Of them, the JIT's areas mapped before the
			   start (JIT_OLD). */
  uint32_t cparent[MP_NF_N], cid[MP_NF_N];	/* Last native node by
						   function and parent. */
  uint64_t unseen;	/* Frees of blocks not seen allocated. */
  uint64_t lost;	/* Events not kept (out of memory, or the queue full;
			   atomic). */
  nat_q q, spare;	/* Queued by other threads; written by the VM's. */
  pthread_cond_t room;	/* The queue was taken (with mu). */
  int waiting;		/* Threads waiting for room (under mu). */
  int full;		/* A wait for room timed out: until the queue is
			   taken, what does not fit is lost (under mu). */
  pthread_mutex_t pmu;	/* The patches. */
  nat_patch *patch;
  size_t npatch, cappatch;
  nat_obj *obj;
  size_t nobj, capobj;
  mp_preload *pl;	/* libljmemprof_preload.so's table, if loaded. */
  uintptr_t luajit;	/* Base of LuaJIT's object (its dlsym). */
  uintptr_t ldso;	/* Base of the dynamic linker. */
  uintptr_t page;
  /* Cold, last: among the fields above, it made bench's ffioff row
  ** about 7 % slower (bench/README.md). */
  mp_hash jit;		/* Live blocks of the JIT's assembler (its
			   unwind tables), the VM's thread's: address -> 0,
			   not events. */
} nat = { .mu = PTHREAD_MUTEX_INITIALIZER, .pmu = PTHREAD_MUTEX_INITIALIZER };

#define BIG	UINT32_MAX

static void *wrapper_of(int w);

/* -- Sampling's filter ------------------------------------------------------ */

/* Native events are sampled (set by start before nat.on). */
static inline int sampling(void)
{
  return __atomic_load_n(&nat.sampled, __ATOMIC_RELAXED);
}

/* The filter slot of block address a. */
static inline uint8_t *filter_slot(uint64_t a)
{
  return &nat.filter[(a >> 4) & (FILTER_SLOTS - 1)];
}

/* Whether block a may be a live sampled one (never wrong when it says
** no). */
static inline int filter_has(const void *a)
{
  return __atomic_load_n(filter_slot((uintptr_t)a), __ATOMIC_RELAXED) != 0;
}

/* Count (d = 1) or uncount (-1) a live sampled block at a; a slot that
** reached 255 stays taken. */
static void filter_add(uint64_t a, int d)
{
  uint8_t *n = filter_slot(a), v = __atomic_load_n(n, __ATOMIC_RELAXED);
  while (v != 255 && (d > 0 || v) &&
	 !__atomic_compare_exchange_n(n, &v, (uint8_t)(v + d), 1,
				      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
}

/* -- The live blocks (the VM's thread) ------------------------------------ */

/* Note a live block; 0 or -1. */
static int live_put(uint64_t a, uint64_t size)
{
  if (size < BIG) return mp_hash_put(&nat.live, a, (uint32_t)size) < 0 ? -1 : 0;
  if (nat.nbig == nat.capbig) {
    size_t cap = nat.capbig ? 2 * nat.capbig : 16;
    uint64_t *b = real.realloc(nat.bigs, cap * sizeof(*b));
    if (!b) return -1;
    nat.bigs = b;
    nat.capbig = cap;
  }
  if (mp_hash_put(&nat.big, a, (uint32_t)nat.nbig) < 0 ||
      mp_hash_put(&nat.live, a, BIG) < 0)
    return -1;
  nat.bigs[nat.nbig++] = size;
  return 0;
}

/* Take a live block: its size into *size, 1; 0 if it is not one. */
static int live_take(uint64_t a, uint64_t *size)
{
  uint32_t v, i;
  if (!mp_hash_take(&nat.live, a, &v)) return 0;
  if (v == BIG) *size = mp_hash_take(&nat.big, a, &i) ? nat.bigs[i] : 0;
  else *size = v;
  return 1;
}

/* The index of the first live mapping that ends after a. */
static size_t map_find(uint64_t a)
{
  size_t lo = 0, hi = nat.nmaps;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (nat.maps[m].addr + nat.maps[m].size <= a) lo = m + 1;
    else hi = m;
  }
  return lo;
}

/* Note a live mapping (a, size; jit: of the JIT's machine code) at index
** i of the list; 0 or -1. */
static int map_insert(size_t i, uint64_t a, uint64_t size, int jit)
{
  if (nat.nmaps == nat.capmaps) {
    size_t cap = nat.capmaps ? 2 * nat.capmaps : 16;
    nat_map *m = real.realloc(nat.maps, cap * sizeof(*m));
    if (!m) return -1;
    nat.maps = m;
    nat.capmaps = cap;
  }
  memmove(&nat.maps[i + 1], &nat.maps[i], (nat.nmaps - i) * sizeof(*nat.maps));
  nat.maps[i].addr = a;
  nat.maps[i].size = size;
  nat.maps[i].jit = jit;
  nat.nmaps++;
  if (jit == JIT_OLD) nat.premc++;
  return 0;
}

/* Forget live mapping i. */
static void map_remove(size_t i)
{
  if (nat.maps[i].jit == JIT_OLD) nat.premc--;
  memmove(&nat.maps[i], &nat.maps[i + 1],
	  (nat.nmaps - i - 1) * sizeof(*nat.maps));
  nat.nmaps--;
}

/* Note the JIT's mcode areas mapped before the start (on the VM's
** thread), so that their unmapping by a flush is no free of a block not
** seen. Its list is walked once: a few areas (maxmcode / sizemcode), and
** only if their sizes add up to what the JIT says it has mapped. */
static void map_old_mcode(global_State *g)
{
  uint64_t sum = 0, size;
  size_t n = 0, i;
  void *a;
  for (a = mp_where_mcarea(g); a && n < 65536; n++) {
    a = mp_where_mcnext(a, &size);
    sum += size;
  }
  if (a || sum != mp_where_mcode(g)) return;	/* Not the list it seems. */
  for (a = mp_where_mcarea(g); a; ) {
    uint64_t at = (uint64_t)(uintptr_t)a;
    void *next = mp_where_mcnext(a, &size);
    i = map_find(at);
    if ((i < nat.nmaps && nat.maps[i].addr < at + size) ||
	map_insert(i, at, size, JIT_OLD) < 0)
      return;	/* Their munmaps are then counted, as before. */
    a = next;
  }
}

/* Whether a free of a block not seen is the JIT's as it unmaps its
** machine code (lj_mcode_free(): it empties its list of areas, then
** frees each area's unwind table and unmaps the area): on the VM's
** thread, while areas mapped before the start are, though the JIT lists
** none, which happens there alone. Asked only of frees not seen. */
static int mcode_freeing(mp_state *s, const nat_ev *e)
{
  return !e->tid && nat.premc && !mp_where_mcarea((global_State *)s->g);
}

/* -- Writing (the VM's thread) ---------------------------------------------- */

/* The node of a native caller: a C frame at the return address, named by
** the symbol it is in (the reader adds the offset), or "object+0x..." when
** it is in none; another thread's (tid) on a root naming the thread. */
static MP_NOINLINE uint32_t caller_node(mp_state *s, uintptr_t caller,
					uint32_t tid)
{
  mp_snode c;
  uint32_t root = 0;
  if (!mp_hash_has(&s->cfuncs, caller)) {
    Dl_info i;
    if (dladdr((void *)caller, &i) && i.dli_sname && i.dli_saddr) {
      mp_sym_cfunc(s, i.dli_saddr);
      mp_hash_add(&s->cfuncs, caller);	/* Named by the floor symbol. */
    } else {
      mp_sym_cfunc(s, (void *)caller);
    }
  }
  memset(&c, 0, sizeof(c));
  if (tid) {
    c.kind = MP_FK_THREAD;
    c.a = tid;
    if (!(root = mp_stack_child(s, 0, &c))) return 0;
  }
  c.kind = MP_FK_C;
  c.a = caller;
  return mp_stack_child(s, root, &c);
}

/* Write event e at node parent (0: at its native caller) with its native
** frame on top; the node of the last parent per function is kept while
** the stack nodes are (made since the last forget: above st.base). */
static MP_INLINE void put_event(mp_state *s, const nat_ev *e, uint32_t parent)
{
  mp_snode f;
  uint32_t id;
  if (!parent) parent = caller_node(s, e->caller, e->tid);
  if (!parent) return;
  if (parent == nat.cparent[e->nf] && nat.cid[e->nf] > s->st.base) {
    id = nat.cid[e->nf];
  } else {
    memset(&f, 0, sizeof(f));
    f.kind = MP_FK_NATIVE;
    f.a = e->nf;
    if (!(id = mp_stack_child(s, parent, &f))) return;
    nat.cparent[e->nf] = parent;
    nat.cid[e->nf] = id;
  }
  mp_stack_event(s, e->ev, id, e->oaddr, e->osize, e->naddr, e->nsize);
}

/* Write that the sampled native block at a left the sample (MP_X_DROP of
** its key in the readers' native heap). */
static void put_drop(mp_state *s, uint64_t a)
{
  s->pos = mp_put_xuleb(s->pos, MP_X_DROP, a ^ MP_NATIVE_KEY);
  mp_settle(s);
}

/* Write the pieces of the unmapping of e's range (oaddr, osize: a
** munmap's, or what a MAP_FIXED mmap replaced), page-rounded, at node: a
** mapping inside the range is freed, one that it cuts is resized to what
** is left (two pieces when the range is inside it: a resize and a new
** block). A munmap (unseen) of no mapping seen is counted. The JIT's
** machine code is no event: its mappings change without a word. */
static MP_NOINLINE void apply_unmap(mp_state *s, const nat_ev *e,
				    uint32_t node, int unseen)
{
  uint64_t a = e->oaddr, end = a + ((e->osize + nat.page - 1) & ~(uint64_t)(nat.page - 1));
  size_t i = map_find(a);
  int hit = 0;
  nat_ev p = *e;
  while (i < nat.nmaps && nat.maps[i].addr < end) {
    nat_map m = nat.maps[i];
    uint64_t mend = m.addr + m.size;
    uint64_t lo = a > m.addr ? a - m.addr : 0, hi = mend > end ? mend - end : 0;
    hit = 1;
    p.oaddr = m.addr;
    p.osize = m.size;
    if (!lo && !hi) {
      p.ev = MP_AEV_FREE;
      map_remove(i);
      if (!m.jit) put_event(s, &p, node);
      continue;
    }
    p.ev = MP_AEV_REALLOC;
    p.naddr = lo ? m.addr : end;
    p.nsize = lo ? lo : hi;
    nat.maps[i].addr = p.naddr;
    nat.maps[i].size = p.nsize;
    if (!m.jit) put_event(s, &p, node);
    i++;
    if (lo && hi) {	/* The part after the range: a block of its own. */
      if (map_insert(i, end, hi, m.jit) < 0) {
	__atomic_add_fetch(&nat.lost, 1, __ATOMIC_RELAXED);
	continue;
      }
      p.ev = MP_AEV_ALLOC;
      p.oaddr = p.osize = 0;
      p.naddr = end;
      p.nsize = hi;
      if (!m.jit) put_event(s, &p, node);
      i++;
    }
  }
  if (!hit && unseen && !sampling()) nat.unseen++;
}

/* Apply mremap event e (old range oaddr, osize; new naddr, nsize; its
** flags) at node: a recorded mapping it resizes or moves whole is one
** resize (the caller billed with what it adds, the block at its new
** address); a part of one is unmapped as by munmap and mapped anew;
** MREMAP_DONTUNMAP, or an old size of 0 (a copy of a shared mapping),
** leaves the old range mapped; MREMAP_FIXED replaces what was mapped at
** the new range first. A mapping not seen (made before the start, or of
** a file) is counted. */
static MP_NOINLINE void apply_remap(mp_state *s, nat_ev *e, uint32_t node)
{
  uint64_t pg = nat.page - 1, olen = (e->osize + pg) & ~pg;
  size_t i = map_find(e->oaddr);
  int hit = i < nat.nmaps && nat.maps[i].addr < e->oaddr + (olen ? olen : 1);
  int jit = hit ? nat.maps[i].jit : 0;
  int keep = (e->mflags & MREMAP_DONTUNMAP) || !olen;
  nat_ev u = *e;
  u.ev = MP_AEV_FREE;
  if (e->mflags & MREMAP_FIXED) {	/* What it replaces. */
    u.oaddr = e->naddr;
    u.osize = e->nsize;
    apply_unmap(s, &u, node, 0);
    i = map_find(e->oaddr);
    u = *e;
    u.ev = MP_AEV_FREE;
  }
  if (!hit) {
    if (!sampling()) nat.unseen++;
    return;
  }
  if (!keep && nat.maps[i].addr == e->oaddr &&
      ((nat.maps[i].size + pg) & ~pg) == olen) {	/* The whole mapping. */
    e->osize = nat.maps[i].size;
    map_remove(i);
    if (map_insert(map_find(e->naddr), e->naddr, e->nsize, jit) < 0) {
      __atomic_add_fetch(&nat.lost, 1, __ATOMIC_RELAXED);
      e->ev = MP_AEV_FREE;	/* Its old block is gone all the same. */
      e->naddr = e->nsize = 0;
    }
    if (!jit) put_event(s, e, node);
    return;
  }
  if (!keep) apply_unmap(s, &u, node, 0);
  if (map_insert(map_find(e->naddr), e->naddr, e->nsize, jit) < 0) {
    __atomic_add_fetch(&nat.lost, 1, __ATOMIC_RELAXED);
    return;
  }
  u = *e;
  u.ev = MP_AEV_ALLOC;
  u.oaddr = u.osize = 0;
  if (!jit) put_event(s, &u, node);
}

/* Apply event e to the live blocks and write what it makes, at node (0:
** its native caller): a free or resize of a block not seen is not written
** (counted when not sampling; a resize of one is an allocation), and a
** sampled block resized into one not taken leaves the sample. An mmap
** with an old range (MAP_FIXED) unmaps it first, and maps only if it is
** an allocation (anonymous, taken). An allocation of the JIT's assembler
** (e->jit) is kept apart and not written, nor is the end of one: the
** machine code is a figure of its own (MP_X_MCODE), not a C leak. */
static MP_INLINE void apply(mp_state *s, nat_ev *e, uint32_t node)
{
  int old = 0;
  uint32_t v;
  if (e->nf == MP_NF_MUNMAP) { apply_unmap(s, e, node, 1); return; }
  if (e->nf == MP_NF_MREMAP) { apply_remap(s, e, node); return; }
  if (e->nf == MP_NF_MMAP && e->osize) {
    apply_unmap(s, e, node, 0);
    if (e->ev != MP_AEV_ALLOC) return;
    e->oaddr = e->osize = 0;
  }
  if (e->ev & MP_AEV_FREE) {
    old = live_take(e->oaddr, &e->osize);
    if (old && sampling()) filter_add(e->oaddr, -1);
    else if (!old && mp_hash_take(&nat.jit, e->oaddr, &v)) e->jit = 1;
    else if (!old && !sampling() && !mcode_freeing(s, e)) nat.unseen++;
    if (e->ev == MP_AEV_FREE) {
      if (old) put_event(s, e, node);
      return;
    }
    if (!e->take) {
      if (old) put_drop(s, e->oaddr);
      return;
    }
    if (!old) e->ev = MP_AEV_ALLOC;
  }
  if (e->nf == MP_NF_MMAP) {
    size_t i = map_find(e->naddr);
    if (map_insert(i, e->naddr, e->nsize, e->jit) < 0) goto lost;
    if (e->jit) return;
  } else if (e->jit) {
    if (mp_hash_put(&nat.jit, e->naddr, 0) < 0) goto lost;
    return;
  } else if (live_put(e->naddr, e->nsize) < 0) {
    goto lost;
  }
  put_event(s, e, node);
  return;
lost:
  __atomic_add_fetch(&nat.lost, 1, __ATOMIC_RELAXED);
  if (old) {	/* Its old block is gone all the same. */
    e->ev = MP_AEV_FREE;
    put_event(s, e, node);
  }
}

/* Apply and write the events of queue b (taken from nat.q) and empty it. */
static void put_queued(mp_state *s, nat_q *b)
{
  size_t i;
  if (__atomic_load_n(&s->recording, __ATOMIC_RELAXED))
    for (i = 0; i < b->n; i++) apply(s, &b->e[i], 0);
  b->n = 0;
}

/* Take the queue out (under nat.mu): the spare becomes the queue. */
static nat_q *take_queue(void)
{
  nat_ev *e;
  size_t cap;
  if (!nat.q.n) return NULL;
  e = nat.spare.e;
  cap = nat.spare.cap;
  nat.spare = nat.q;
  nat.q.e = e;
  nat.q.cap = cap;
  __atomic_store_n(&nat.q.n, 0, __ATOMIC_RELAXED);
  nat.full = 0;
  if (nat.waiting) pthread_cond_broadcast(&nat.room);
  return &nat.spare;
}

/* Write what other threads queued (the VM's thread). */
static void drain_queue(mp_state *s)
{
  nat_q *b;
  pthread_mutex_lock(&nat.mu);
  b = take_queue();
  pthread_mutex_unlock(&nat.mu);
  if (b) put_queued(s, b);
}

/* Write the process's resident set size (MP_X_RSS), if it can be read,
** and the JIT's machine code beside it (MP_X_MCODE). */
static void put_rss(mp_state *s)
{
  char buf[64];
  unsigned long long size = 0, rss = 0;
  ssize_t n;
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  if (sscanf(buf, "%llu %llu", &size, &rss) != 2) return;
  s->pos = mp_put_xuleb(s->pos, MP_X_RSS, rss * nat.page);
  s->pos = mp_put_xuleb(s->pos, MP_X_MCODE,
			mp_where_mcode((global_State *)s->g));
  mp_settle(s);
}

void mp_native_drain(mp_state *s)
{
  if (s != nat.s) return;
  depth++;
  drain_queue(s);
  put_rss(s);	/* At each time mark. */
  depth--;
}

/* Wait (under nat.mu) until the queue has room for another event of a
** thread other than the VM's, of recording on: 1 if it has, else 0. The
** VM's thread takes the queue at its next native event or time mark, so
** it may not come for long (Lua idle in a poll, a long C call): a thread
** waits at most QUEUE_WAIT_NS, and once one timed out none waits again
** until the queue is taken. What has no room is lost (lost_one()). Bounded,
** the queue never makes the VM's thread apply more at once than it can
** keep up with, nor grows while Lua is idle. */
static int queue_room(unsigned on)
{
  struct timespec until;
  if (MP_LIKELY(nat.q.n < QUEUE_MAX)) return 1;
  if (!nat.full) {
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += QUEUE_WAIT_NS;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    nat.waiting++;
    while (nat.q.n >= QUEUE_MAX &&
	   __atomic_load_n(&nat.on, __ATOMIC_ACQUIRE) == on)
      if (pthread_cond_timedwait(&nat.room, &nat.mu, &until)) {
	nat.full = nat.q.n >= QUEUE_MAX;
	break;
      }
    nat.waiting--;
    if (nat.q.n < QUEUE_MAX) return 1;
  }
  return 0;
}

/* Count an event of recording on that had no room in the queue (none of
** a recording stopped since: its count is written). */
static void lost_one(unsigned on)
{
  if (__atomic_load_n(&nat.on, __ATOMIC_ACQUIRE) == on)
    __atomic_add_fetch(&nat.lost, 1, __ATOMIC_RELAXED);
}

/* Queue event e of another thread (under nat.mu, with room). */
static void enqueue(const nat_ev *e)
{
  if (nat.q.n == nat.q.cap) {
    size_t cap = nat.q.cap ? 2 * nat.q.cap : 256;
    nat_ev *a = real.realloc(nat.q.e, cap * sizeof(*a));
    if (!a) {
      __atomic_add_fetch(&nat.lost, 1, __ATOMIC_RELAXED);
      return;
    }
    nat.q.e = a;
    nat.q.cap = cap;
  }
  nat.q.e[nat.q.n] = *e;
  __atomic_store_n(&nat.q.n, nat.q.n + 1, __ATOMIC_RELAXED);
}

/* -- Recording ------------------------------------------------------------- */

/* The end of a wrapper's recording on the VM's thread. */
static inline void vm_end(void)
{
  __atomic_store_n(&nat.vm_inside, 0, __ATOMIC_RELEASE);
}

/* On the VM's thread of recording on: its state, vm_inside raised (stop
** waits for it to fall before it frees anything), or NULL when recording
** ended or the call is the agent's own (the hook runs: busy). Stop's
** membarrier() orders the store before the load of nat.on, as a fence
** here would (one per call); without it, the store is a fence. */
static MP_INLINE mp_state *vm_begin(unsigned on)
{
  mp_state *s;
  if (MP_LIKELY(nat.membar)) {
    __atomic_store_n(&nat.vm_inside, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  } else {
    __atomic_store_n(&nat.vm_inside, 1, __ATOMIC_SEQ_CST);
  }
  if (MP_LIKELY(__atomic_load_n(&nat.on, __ATOMIC_RELAXED) == on)) {
    s = __atomic_load_n(&nat.s, __ATOMIC_RELAXED);
    if (MP_LIKELY(!__atomic_load_n(&s->busy, __ATOMIC_RELAXED))) return s;
  }
  vm_end();
  return NULL;
}

/* Record event e of the VM's thread (an allocation made, a free about to
** be made) at its Lua stack: what other threads queued first (a block
** they freed may be the one e got). */
static MP_NOINLINE void vm_record(mp_state *s, nat_ev *e)
{
  uint32_t node;
  mp_enter(s);
  if (MP_LIKELY(__atomic_load_n(&s->recording, __ATOMIC_RELAXED))) {
    int own;
    node = mp_stack_here(s, __builtin_frame_address(0), &own);
    /* What the JIT's assembler allocates is its machine code (the mcode
    ** areas, their unwind tables): no other code runs meanwhile on this
    ** thread, and the VM's own heap is behind the guard. Asked only
    ** when the VM does its own work: no cost on the common path. */
    if (MP_UNLIKELY(own) && e->ev == MP_AEV_ALLOC &&
	mp_where_assembles((global_State *)s->g))
      e->jit = 1;
    if (MP_UNLIKELY(__atomic_load_n(&nat.resizing, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&nat.q.n, __ATOMIC_RELAXED)))
      drain_queue(s);
    if (sampling() && (e->ev & MP_AEV_ALLOC) && e->nf != MP_NF_MMAP &&
	!e->jit)
      filter_add(e->naddr, 1);
    apply(s, e, node);
  }
  mp_leave(s);
}

/* Queue event e of another thread (allocations made, frees about to be
** made); a sampled block counts in the filter before it is returned. */
static MP_NOINLINE void other_record(nat_ev *e)
{
  unsigned on;
  __atomic_add_fetch(&nat.inflight, 1, __ATOMIC_SEQ_CST);
  if ((on = __atomic_load_n(&nat.on, __ATOMIC_SEQ_CST))) {
    e->tid = thread_id();
    pthread_mutex_lock(&nat.mu);
    if (sampling() && (e->ev & MP_AEV_ALLOC) && e->nf != MP_NF_MMAP)
      filter_add(e->naddr, 1);
    if (queue_room(on)) enqueue(e);
    else lost_one(on);
    pthread_mutex_unlock(&nat.mu);
  }
  __atomic_sub_fetch(&nat.inflight, 1, __ATOMIC_RELEASE);
}

/* This thread's bytes to its next sampled byte, drawn anew from the
** native sampler (seeded from the VM's: the seed option fixes it). */
static MP_NOINLINE int64_t draw_gap(void)
{
  int64_t g;
  pthread_mutex_lock(&nat.mu);
  g = mp_sample_gap(&nat.osm);
  pthread_mutex_unlock(&nat.mu);
  return g;
}

/* Whether an allocation of n bytes is to be recorded: not sampling, all
** are; sampling, every byte has the same chance, counted down per thread
** (exponential gaps: a thread's count is as good as one for all). Asked
** before anything else, so that most allocations cost a decrement. */
static MP_INLINE int taken(unsigned on, uint64_t n)
{
  if (MP_LIKELY(!sampling())) return 1;
  if (MP_UNLIKELY(t_gen != on)) {
    t_gen = on;
    t_left = draw_gap();
  }
  if (MP_LIKELY((t_left -= (int64_t)n) >= 0)) return 0;
  t_left = draw_gap();
  return 1;
}

/* An event of function nf: kind ev, old block (o, os), new (n, ns). */
static MP_INLINE void ev_set(nat_ev *e, int ev, int nf, uint64_t o,
			     uint64_t os, uint64_t n, uint64_t ns,
			     uintptr_t caller)
{
  e->oaddr = o;
  e->osize = os;
  e->naddr = n;
  e->nsize = ns;
  e->caller = caller;
  e->tid = 0;
  e->ev = (uint8_t)ev;
  e->nf = (uint8_t)nf;
  e->take = 1;
  e->jit = 0;
}

#define CALLER	((uintptr_t)__builtin_return_address(0))

/* The start of a wrapper: the real call when not recording or inside a
** wrapper or the VM's allocator already; else on_ is the recording. */
#define WRAP_ON(call) \
  unsigned on_ = __atomic_load_n(&nat.on, __ATOMIC_ACQUIRE); \
  mp_state *s_ = NULL; \
  if (MP_LIKELY(!on_) || depth) return call

/* The call is to be recorded: on the VM's thread, s_ its state
** (vm_inside raised), or the real call if recording ended or the call is
** the agent's own; NULL on another thread. */
#define WRAP_VM(call) \
  if (vm_gen == on_ && !(s_ = vm_begin(on_))) return call

/* Record e on the thread it is on. */
#define WRAP_RECORD(e) \
  do { if (s_) vm_record(s_, (e)); else other_record(e); } while (0)

#define WRAP_END()	do { if (s_) vm_end(); } while (0)

/* An allocation wrapper: the real call, then its event, if taken. */
#define ALLOC_WRAP(nf, call, size) \
  do { \
    void *r_; \
    nat_ev e_; \
    WRAP_ON(call); \
    if (!taken(on_, (size))) return call; \
    WRAP_VM(call); \
    depth++; \
    r_ = call; \
    if (r_) { \
      ev_set(&e_, MP_AEV_ALLOC, nf, 0, 0, (uintptr_t)r_, (size), CALLER); \
      WRAP_RECORD(&e_); \
    } \
    depth--; \
    WRAP_END(); \
    return r_; \
  } while (0)

static MP_NOINLINE void *w_malloc(size_t n)
{
  ALLOC_WRAP(MP_NF_MALLOC, real.malloc(n), n);
}

static MP_NOINLINE void *w_calloc(size_t k, size_t n)
{
  ALLOC_WRAP(MP_NF_CALLOC, real.calloc(k, n), (uint64_t)k * n);
}

static MP_NOINLINE void *w_aligned_alloc(size_t a, size_t n)
{
  ALLOC_WRAP(MP_NF_ALIGNED_ALLOC, real.aligned_alloc(a, n), n);
}

static MP_NOINLINE void *w_memalign(size_t a, size_t n)
{
  ALLOC_WRAP(MP_NF_MEMALIGN, real.memalign(a, n), n);
}

static MP_NOINLINE void *w_valloc(size_t n)
{
  ALLOC_WRAP(MP_NF_VALLOC, real.valloc(n), n);
}

/* pvalloc rounds the size up to pages: the size the program got. */
static MP_NOINLINE void *w_pvalloc(size_t n)
{
  size_t pg = nat.page, sz = n ? (n + pg - 1) & ~(pg - 1) : pg;
  ALLOC_WRAP(MP_NF_PVALLOC, real.pvalloc(n), sz);
}

static MP_NOINLINE int w_posix_memalign(void **out, size_t a, size_t n)
{
  int rc;
  nat_ev e;
  WRAP_ON(real.posix_memalign(out, a, n));
  if (!taken(on_, n)) return real.posix_memalign(out, a, n);
  WRAP_VM(real.posix_memalign(out, a, n));
  depth++;
  rc = real.posix_memalign(out, a, n);
  if (!rc) {
    ev_set(&e, MP_AEV_ALLOC, MP_NF_POSIX_MEMALIGN, 0, 0, (uintptr_t)*out, n,
	   CALLER);
    WRAP_RECORD(&e);
  }
  depth--;
  WRAP_END();
  return rc;
}

static MP_NOINLINE void w_free(void *p)
{
  nat_ev e;
  WRAP_ON(real.free(p));
  /* Sampling: only a block the filter may hold can be a recorded one. */
  if (!p || (sampling() && !filter_has(p))) { real.free(p); return; }
  WRAP_VM(real.free(p));
  depth++;	/* Recorded before it is made: see resize(). */
  ev_set(&e, MP_AEV_FREE, MP_NF_FREE, (uintptr_t)p, 0, 0, 0, CALLER);
  WRAP_RECORD(&e);
  real.free(p);
  depth--;
  WRAP_END();
}

/* The real resize of function nf: realloc (p, n), reallocarray (p, k,
** n), or mremap (p, old size k, new size n, flags f, address to), whose
** failure (MAP_FAILED) is NULL here. */
static MP_INLINE void *resize_call(int nf, void *p, size_t k, size_t n,
				   int f, void *to)
{
  void *r;
  if (nf == MP_NF_REALLOC) return real.realloc(p, n);
  if (nf == MP_NF_REALLOCARRAY) return real.reallocarray(p, k, n);
  r = real.mremap(p, k, n, f, to);
  return r == MAP_FAILED ? NULL : r;
}

/* A resize, made under the lock: the block it frees must not be another
** thread's event before this one (the VM's thread writes what was queued
** before it; another's sets nat.resizing, which the VM's thread asks
** after its own allocations). take: its new block is recorded; else only
** its old block's end is. mremap (nf): a mapping moves (f, to: its flags
** and address), of which the event has the old size (k) and flags. */
static MP_NOINLINE void *resize(mp_state *s, int nf, void *p, size_t k,
				size_t n, int take, uintptr_t caller, int f,
				void *to)
{
  nat_ev e;
  void *r;
  nat_q *b = NULL;
  uint32_t node = 0;
  unsigned on;
  int remap = nf == MP_NF_MREMAP;
  ev_set(&e, MP_AEV_REALLOC, nf, (uintptr_t)p, remap ? k : 0, 0,
	 nf == MP_NF_REALLOCARRAY ? (uint64_t)k * n : n, caller);
  e.take = (uint8_t)take;
  e.mflags = f;
  take = take && !remap;	/* Mappings are not in the filter. */
  if (s) {
    mp_enter(s);
    if (!__atomic_load_n(&s->recording, __ATOMIC_RELAXED)) {
      mp_leave(s);
      return resize_call(nf, p, k, n, f, to);
    }
    node = mp_stack_here(s, __builtin_frame_address(0), NULL);
    pthread_mutex_lock(&nat.mu);
    r = resize_call(nf, p, k, n, f, to);
    b = take_queue();
    pthread_mutex_unlock(&nat.mu);
    if (b) put_queued(s, b);
    if (r) {
      e.naddr = (uintptr_t)r;
      if (sampling() && take) filter_add(e.naddr, 1);
      apply(s, &e, node);
    }
    mp_leave(s);
    return r;
  }
  __atomic_add_fetch(&nat.inflight, 1, __ATOMIC_SEQ_CST);
  if (!(on = __atomic_load_n(&nat.on, __ATOMIC_SEQ_CST))) {
    r = resize_call(nf, p, k, n, f, to);
  } else {
    int room;
    e.tid = thread_id();
    pthread_mutex_lock(&nat.mu);
    room = queue_room(on);	/* Before the resize: it may wait. */
    __atomic_store_n(&nat.resizing, 1, __ATOMIC_RELAXED);
    r = resize_call(nf, p, k, n, f, to);
    if (r) {
      e.naddr = (uintptr_t)r;
      if (sampling() && take) filter_add(e.naddr, 1);
      if (room) enqueue(&e);
      else lost_one(on);	/* Only an event made. */
    }
    __atomic_store_n(&nat.resizing, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&nat.mu);
  }
  __atomic_sub_fetch(&nat.inflight, 1, __ATOMIC_RELEASE);
  return r;
}

/* A resize wrapper's work once recording (on: WRAP_ON's), nf realloc or
** reallocarray of k * n bytes: a null p is an allocation; 0 bytes a free
** (glibc frees the block and returns NULL). Sampling: a resize neither
** into a sampled block nor of one the filter may hold is only made. */
static MP_INLINE void *resize_wrap(unsigned on, int nf, void *p, size_t k,
				   size_t n, uintptr_t caller)
{
  uint64_t size = nf == MP_NF_REALLOC ? n : (uint64_t)k * n;
  mp_state *s = NULL;
  nat_ev e;
  void *r;
  int take = 1;
  if (p && !size) {
    if (sampling() && !filter_has(p))
      return resize_call(nf, p, k, n, 0, NULL);
  } else {
    take = taken(on, size);
    if (!take && (!p || !filter_has(p)))
      return resize_call(nf, p, k, n, 0, NULL);
  }
  if (vm_gen == on && !(s = vm_begin(on)))
    return resize_call(nf, p, k, n, 0, NULL);
  depth++;
  if (p && !size) {
    ev_set(&e, MP_AEV_FREE, nf, (uintptr_t)p, 0, 0, 0, caller);
    if (s) vm_record(s, &e);
    else other_record(&e);
    r = resize_call(nf, p, k, n, 0, NULL);
  } else if (p) {
    r = resize(s, nf, p, k, n, take, caller, 0, NULL);
  } else if ((r = resize_call(nf, p, k, n, 0, NULL)) != NULL) {
    ev_set(&e, MP_AEV_ALLOC, nf, 0, 0, (uintptr_t)r, size, caller);
    if (s) vm_record(s, &e);
    else other_record(&e);
  }
  depth--;
  if (s) vm_end();
  return r;
}

static MP_NOINLINE void *w_realloc(void *p, size_t n)
{
  WRAP_ON(real.realloc(p, n));
  (void)s_;
  return resize_wrap(on_, MP_NF_REALLOC, p, 0, n, CALLER);
}

static MP_NOINLINE void *w_reallocarray(void *p, size_t k, size_t n)
{
  WRAP_ON(real.reallocarray(p, k, n));
  (void)s_;
  return resize_wrap(on_, MP_NF_REALLOCARRAY, p, k, n, CALLER);
}

/* Anonymous mappings are allocations (files mapped are not memory the
** program allocated); a MAP_FIXED one, of a file or not, replaces what
** was mapped in its range: the mappings seen there are unmapped first
** (its old range, see apply()), as by munmap. */
static MP_NOINLINE void *w_mmap(void *a, size_t n, int prot, int flags,
				int fd, off_t off)
{
  void *r;
  nat_ev e;
  int take, fixed = (flags & MAP_FIXED) != 0;
  WRAP_ON(real.mmap(a, n, prot, flags, fd, off));
  take = (flags & MAP_ANONYMOUS) && taken(on_, n);
  if (!take && !fixed) return real.mmap(a, n, prot, flags, fd, off);
  WRAP_VM(real.mmap(a, n, prot, flags, fd, off));
  depth++;
  r = real.mmap(a, n, prot, flags, fd, off);
  if (r != MAP_FAILED) {
    ev_set(&e, take ? MP_AEV_ALLOC : MP_AEV_FREE, MP_NF_MMAP,
	   fixed ? (uintptr_t)r : 0, fixed ? n : 0, take ? (uintptr_t)r : 0,
	   take ? n : 0, CALLER);
    WRAP_RECORD(&e);
  }
  depth--;
  WRAP_END();
  return r;
}

/* An unmapping: the mappings seen made that its range (page-rounded)
** takes are freed, or resized to what it leaves of them. */
static MP_NOINLINE int w_munmap(void *a, size_t n)
{
  int rc;
  nat_ev e;
  WRAP_ON(real.munmap(a, n));
  WRAP_VM(real.munmap(a, n));
  depth++;
  ev_set(&e, MP_AEV_FREE, MP_NF_MUNMAP, (uintptr_t)a, n, 0, 0, CALLER);
  WRAP_RECORD(&e);
  rc = real.munmap(a, n);
  depth--;
  WRAP_END();
  return rc;
}

/* A remapping (a recorded mapping grown, shrunk or moved: see
** apply_remap()), made under the lock as a resize is. */
static MP_NOINLINE void *w_mremap(void *a, size_t osz, size_t nsz, int flags,
				  ...)
{
  void *r, *to = NULL;
  va_list ap;
  if (flags & MREMAP_FIXED) {
    va_start(ap, flags);
    to = va_arg(ap, void *);
    va_end(ap);
  }
  {
    WRAP_ON(real.mremap(a, osz, nsz, flags, to));
    WRAP_VM(real.mremap(a, osz, nsz, flags, to));
    depth++;
    r = resize(s_, MP_NF_MREMAP, a, osz, nsz, 1, CALLER, flags, to);
    depth--;
    WRAP_END();
  }
  return r ? r : MAP_FAILED;
}

/* -- Patching -------------------------------------------------------------- */

/* Whether address a is in one of the loaded segments of object info. */
static int obj_has(const struct dl_phdr_info *info, uintptr_t a)
{
  int i;
  for (i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz) return 1;
  }
  return 0;
}

/* Store v in slot (ro: in a RELRO page, read-only but for the store). */
static void slot_set(void **slot, void *v, int ro)
{
  uintptr_t pg = (uintptr_t)slot & ~(nat.page - 1);
  if (ro && mprotect((void *)pg, nat.page, PROT_READ | PROT_WRITE) < 0)
    return;
  __atomic_store_n(slot, v, __ATOMIC_RELEASE);
  if (ro) mprotect((void *)pg, nat.page, PROT_READ);
}

/* The wrapped function named name, or -1; dlsym only in LuaJIT's object. */
static int wrapped(const char *name, int luajit)
{
  int w;
  for (w = 0; w < W_N; w++)
    if (!strcmp(name, wname[w])) return w != W_DLSYM || luajit ? w : -1;
  return -1;
}

/* The real function of wrapper index w. */
static void *real_of(int w)
{
  return ((void **)&real)[w];
}

/* Patch the slots of relocations rel[0..n) of an object (base, its
** symbols and names, RELRO from ro to roend), object index oi. */
static void patch_rels(uintptr_t base, const ElfW(Rela) *rel, size_t n,
		       const ElfW(Sym) *sym, const char *str, uintptr_t ro,
		       uintptr_t roend, int luajit, uint32_t oi)
{
  size_t i;
  for (i = 0; i < n; i++) {
    unsigned type = (unsigned)ELF64_R_TYPE(rel[i].r_info);
    size_t si = ELF64_R_SYM(rel[i].r_info);
    void **slot, *old;
    int w;
    if ((type != R_SLOT && type != R_GLOB) || !si) continue;
    if ((w = wrapped(str + sym[si].st_name, luajit)) < 0) continue;
    slot = (void **)(base + rel[i].r_offset);
    old = *slot;
    if (old == wrapper_of(w)) old = real_of(w);	/* A fork's child. */
    if (nat.npatch == nat.cappatch) {
      size_t cap = nat.cappatch ? 2 * nat.cappatch : 64;
      nat_patch *a = real.realloc(nat.patch, cap * sizeof(*a));
      if (!a) return;
      nat.patch = a;
      nat.cappatch = cap;
    }
    nat.patch[nat.npatch].slot = slot;
    nat.patch[nat.npatch].old = old;
    nat.patch[nat.npatch].wrap = wrapper_of(w);
    nat.patch[nat.npatch].obj = oi;
    nat.patch[nat.npatch].ro = (uintptr_t)slot >= ro &&
			       (uintptr_t)slot < roend;
    slot_set(slot, wrapper_of(w), nat.patch[nat.npatch].ro);
    nat.npatch++;
  }
}

/* d_ptr of a dynamic entry as an address (glibc relocates most of them
** in place, other loaders do not). */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
  return v < base ? base + v : v;
}

/* Patch the relocation slots of object info (index oi). */
static void patch_object(const struct dl_phdr_info *info, uint32_t oi)
{
  uintptr_t base = info->dlpi_addr, ro = 0, roend = 0;
  const ElfW(Dyn) *dyn = NULL, *d;
  const ElfW(Sym) *sym = NULL;
  const char *str = NULL;
  const ElfW(Rela) *jmprel = NULL, *rela = NULL;
  size_t pltsz = 0, relasz = 0;
  int i, luajit = base == nat.luajit;
  for (i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(base + ph->p_vaddr);
    if (ph->p_type == PT_GNU_RELRO) {	/* As the loader protects it. */
      ro = (base + ph->p_vaddr) & ~(nat.page - 1);
      roend = (base + ph->p_vaddr + ph->p_memsz) & ~(nat.page - 1);
    }
  }
  if (!dyn) return;
  for (d = dyn; d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
    case DT_SYMTAB: sym = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr); break;
    case DT_STRTAB: str = (const char *)dyn_ptr(base, d->d_un.d_ptr); break;
    case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
    case DT_PLTRELSZ: pltsz = d->d_un.d_val; break;
    case DT_RELA: rela = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
    case DT_RELASZ: relasz = d->d_un.d_val; break;
    case DT_PLTREL: if (d->d_un.d_val != DT_RELA) return; break;
    }
  }
  if (!sym || !str) return;
  if (jmprel)
    patch_rels(base, jmprel, pltsz / sizeof(*jmprel), sym, str, ro, roend,
	       luajit, oi);
  if (rela)
    patch_rels(base, rela, relasz / sizeof(*rela), sym, str, ro, roend,
	       luajit, oi);
}

/* The index of object (base, name) among those patched, or -1. */
static int obj_find(uintptr_t base, uint64_t name)
{
  size_t i;
  for (i = 0; i < nat.nobj; i++)
    if (nat.obj[i].base == base && nat.obj[i].name == name) return (int)i;
  return -1;
}

/* dl_iterate_phdr: patch each object not patched yet (ud: 1) or note
** which of the patched ones are still loaded (ud: 0). */
static int each_object(struct dl_phdr_info *info, size_t size, void *ud)
{
  const char *path = info->dlpi_name ? info->dlpi_name : "";
  uint64_t name = mp_hash_bytes(path, strlen(path));
  int oi = obj_find(info->dlpi_addr, name);
  (void)size;
  if (!ud) {
    if (oi >= 0) nat.obj[oi].alive = 1;
    return 0;
  }
  if (oi >= 0 && nat.obj[oi].alive) return 0;
  if (oi >= 0) {	/* Unloaded and loaded again at the same place. */
    nat.obj[oi].alive = 1;
    patch_object(info, (uint32_t)oi);
    return 0;
  }
  if (info->dlpi_addr == nat.ldso && nat.ldso) return 0;
  if (!strncmp(path, "linux-vdso", 10) || !strncmp(path, "linux-gate", 10))
    return 0;
  /* This object, when it is a module of its own: its calls are the
  ** agent's. Linked into the program, the program's are patched and the
  ** agent's own calls are told apart at run time (vm_begin()). */
  if (*path && obj_has(info, (uintptr_t)&mp_native_start)) return 0;
  if (nat.pl && obj_has(info, (uintptr_t)nat.pl)) return 0;	/* Forwards. */
  if (nat.nobj == nat.capobj) {
    size_t cap = nat.capobj ? 2 * nat.capobj : 32;
    nat_obj *a = real.realloc(nat.obj, cap * sizeof(*a));
    if (!a) return 0;
    nat.obj = a;
    nat.capobj = cap;
  }
  nat.obj[nat.nobj].base = info->dlpi_addr;
  nat.obj[nat.nobj].name = name;
  nat.obj[nat.nobj].alive = 1;
  patch_object(info, (uint32_t)nat.nobj++);
  return 0;
}

/* Note which patched objects are still loaded (under nat.pmu). */
static void rescan(void)
{
  size_t i;
  for (i = 0; i < nat.nobj; i++) nat.obj[i].alive = 0;
  dl_iterate_phdr(each_object, NULL);
}

/* Patch the objects loaded and not patched yet (under nat.pmu). */
static void patch_all(void)
{
  depth++;
  rescan();
  dl_iterate_phdr(each_object, (void *)1);
  depth--;
}

/* Put back every slot of a loaded object that still holds a wrapper
** (under nat.pmu), and forget them. */
static void unpatch_all(void)
{
  size_t i;
  depth++;
  rescan();
  for (i = nat.npatch; i-- > 0; ) {
    nat_patch *p = &nat.patch[i];
    if (nat.obj[p->obj].alive &&
	__atomic_load_n(p->slot, __ATOMIC_ACQUIRE) == p->wrap)
      slot_set(p->slot, p->old, p->ro);
  }
  nat.npatch = 0;
  nat.nobj = 0;
  depth--;
}

static MP_NOINLINE void *w_dlopen(const char *file, int flags)
{
  void *h = real.dlopen(file, flags);
  if (h && __atomic_load_n(&nat.on, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&nat.pmu);
    if (__atomic_load_n(&nat.on, __ATOMIC_ACQUIRE)) patch_all();
    pthread_mutex_unlock(&nat.pmu);
  }
  return h;
}

static MP_NOINLINE int w_dlclose(void *h)
{
  int rc = real.dlclose(h);
  pthread_mutex_lock(&nat.pmu);
  if (nat.npatch) {
    depth++;
    rescan();
    depth--;
  }
  pthread_mutex_unlock(&nat.pmu);
  return rc;
}

/* LuaJIT's dlsym: the wrappers for the functions wrapped, while
** recording (the FFI caches what it gets). */
static MP_NOINLINE void *w_dlsym(void *h, const char *name)
{
  void *p = real.dlsym(h, name);
  int w;
  if (!p || !__atomic_load_n(&nat.on, __ATOMIC_ACQUIRE)) return p;
  for (w = 0; w <= W_MEM_LAST; w++)
    if (p == real_of(w)) return wrapper_of(w);
  return p;
}

static void *wrapper_of(int w)
{
  static void *const wrap[W_N] = {
    (void *)w_malloc, (void *)w_calloc, (void *)w_realloc,
    (void *)w_reallocarray, (void *)w_free, (void *)w_posix_memalign,
    (void *)w_aligned_alloc, (void *)w_memalign, (void *)w_valloc,
    (void *)w_pvalloc, (void *)w_mmap, (void *)w_mmap, (void *)w_munmap,
    (void *)w_mremap, (void *)w_dlopen, (void *)w_dlclose, (void *)w_dlsym
  };
  return wrap[w];
}

/* -- Start and stop -------------------------------------------------------- */

/* The VM's allocator behind the guard (kept by a fork's child whose VM
** has the guard still). */
typedef struct nat_vmalloc {
  lua_Alloc f;
  void *ud;
} nat_vmalloc;

/* The VM's allocator, called by the hook: nothing in it is native. */
static void *guard(void *ud, void *p, size_t osize, size_t nsize)
{
  nat_vmalloc *a = (nat_vmalloc *)ud;
  void *r;
  depth++;
  r = a->f(a->ud, p, osize, nsize);
  depth--;
  return r;
}

/* Fork: no lock may be held in the child; it records nothing (its
** profile is not the parent's), its slots stay patched, forwarding. */
static void fork_prepare(void)
{
  pthread_mutex_lock(&nat.pmu);
  pthread_mutex_lock(&nat.mu);
}

static void fork_parent(void)
{
  pthread_mutex_unlock(&nat.mu);
  pthread_mutex_unlock(&nat.pmu);
}

/* The queue's condition, on the monotonic clock (a wait's timeout does
** not move with the time of day). */
static void room_init(void)
{
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&nat.room, &a);
  pthread_condattr_destroy(&a);
}

static void fork_child(void)
{
  pthread_mutex_init(&nat.mu, NULL);
  pthread_mutex_init(&nat.pmu, NULL);
  room_init();
  nat.on = 0;
  nat.inflight = nat.vm_inside = nat.resizing = 0;
  nat.waiting = nat.full = 0;
  nat.s = NULL;
  nat.npatch = nat.nobj = 0;
  memset(&nat.live, 0, sizeof(nat.live));	/* The parent's: left. */
  memset(&nat.big, 0, sizeof(nat.big));
  memset(&nat.jit, 0, sizeof(nat.jit));
  memset(&nat.q, 0, sizeof(nat.q));
  memset(&nat.spare, 0, sizeof(nat.spare));
  nat.bigs = NULL;
  nat.nbig = nat.capbig = 0;
  nat.maps = NULL;
  nat.nmaps = nat.capmaps = 0;
}

/* Find the real functions, once: their definitions (not a program's PLT
** entry, which would call back here once patched); 0 or -1. */
static int prepare(void)
{
  int w;
  Dl_info i;
  if (nat.ready) return 0;
  for (w = 0; w < W_N; w++) {
    void *p = dlsym(RTLD_DEFAULT, wname[w]);
    if (!p || !dladdr(p, &i) || i.dli_saddr != p) return -1;
    ((void **)&real)[w] = p;
  }
  /* Preload mode: what dlsym found is the preload library's malloc
  ** family, which will forward to the wrappers; the real functions are
  ** those it forwards to otherwise. */
  nat.pl = dlsym(RTLD_DEFAULT, MP_PRELOAD_SYM);
  if (nat.pl && (nat.pl->version != MP_PRELOAD_VERSION ||
		 nat.pl->n != MP_PL_N))
    return -1;
  if (nat.pl)
    for (w = 0; w <= W_MEM_LAST; w++) ((void **)&real)[w] = nat.pl->real[w];
  nat.page = (uintptr_t)sysconf(_SC_PAGESIZE);
  nat.ldso = (uintptr_t)getauxval(AT_BASE);
  if (dladdr((void *)lua_getallocf, &i)) nat.luajit = (uintptr_t)i.dli_fbase;
  /* Never unloaded from now on: a thread may be about to enter a wrapper
  ** whatever stop does. */
  if (dladdr((void *)&mp_native_start, &i) && i.dli_fname && *i.dli_fname)
    real.dlopen(i.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  room_init();
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  /* Stop's barrier on the VM's thread (see vm_begin()). */
  nat.membar = syscall(SYS_membarrier,
		       MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  nat.ready = 1;
  return 0;
}

int mp_native_start(mp_state *s)
{
#ifndef R_SLOT
  (void)s;
  return LJMP_EARG;
#else
  pthread_mutex_lock(&nat.pmu);
  if (nat.s) {
    pthread_mutex_unlock(&nat.pmu);
    return LJMP_EBUSY;
  }
  if (prepare() < 0) {
    pthread_mutex_unlock(&nat.pmu);
    return LJMP_EVM;
  }
  if (s->orig_f != guard) {	/* A fork's child may have it still. */
    nat_vmalloc *a = real.malloc(sizeof(*a));
    if (!a) {
      pthread_mutex_unlock(&nat.pmu);
      return LJMP_ENOMEM;
    }
    a->f = s->orig_f;
    a->ud = s->orig_ud;
    s->orig_f = guard;
    s->orig_ud = a;
    nat.vma = a;
  } else {
    nat.vma = NULL;	/* Not ours to free. */
  }
  __atomic_store_n(&nat.sampled, s->sm.mean > 0, __ATOMIC_RELAXED);
  if (s->sm.mean) {	/* Kept once made: other threads may read it. */
    size_t i;
    if (!nat.filter && !(nat.filter = real.calloc(FILTER_SLOTS, 1))) {
      if (nat.vma) {
	s->orig_f = nat.vma->f;
	s->orig_ud = nat.vma->ud;
	real.free(nat.vma);
	nat.vma = NULL;
      }
      pthread_mutex_unlock(&nat.pmu);
      return LJMP_ENOMEM;
    }
    for (i = 0; i < FILTER_SLOTS; i++)	/* Read without a lock. */
      __atomic_store_n(&nat.filter[i], 0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&nat.mu);
    mp_sample_init(&nat.osm, s->sm.mean, s->sm.rng ^ 0x5851f42d4c957f2dull);
    pthread_mutex_unlock(&nat.mu);
  }
  mp_hash_init_map(&nat.live);
  mp_hash_init_map(&nat.big);
  mp_hash_init_map(&nat.jit);
  nat.nmaps = nat.premc = 0;
  map_old_mcode((global_State *)s->g);
  memset(nat.cparent, 0, sizeof(nat.cparent));
  memset(nat.cid, 0, sizeof(nat.cid));
  nat.unseen = nat.lost = 0;
  nat.full = 0;
  if (!++nat.gen) nat.gen = 1;
  vm_gen = nat.gen;	/* This thread is the VM's. */
  __atomic_store_n(&nat.s, s, __ATOMIC_RELEASE);
  s->native = 1;
  __atomic_store_n(&nat.on, nat.gen, __ATOMIC_SEQ_CST);
  patch_all();
  if (nat.pl) {	/* Every call reaches a wrapper, once. */
    int w;
    for (w = 0; w <= W_MEM_LAST; w++)
      __atomic_store_n(&nat.pl->hook[w], wrapper_of(w), __ATOMIC_RELEASE);
    s->pos = mp_put_info(s->pos, "native_preload", "1");
    mp_settle(s);
  }
  pthread_mutex_unlock(&nat.pmu);
  return 0;
#endif
}

/* Write an MP_X_INFO note key = n. */
static void put_count(mp_state *s, const char *key, uint64_t n)
{
  char v[24];
  snprintf(v, sizeof(v), "%llu", (unsigned long long)n);
  s->pos = mp_put_info(s->pos, key, v);
  mp_settle(s);
}

void mp_native_stop(mp_state *s)
{
  struct timespec step = { 0, 100000 };
  long waited = 0;
  if (!s->native || nat.s != s) return;
  __atomic_store_n(&nat.on, 0, __ATOMIC_SEQ_CST);
  if (nat.pl) {
    int w;
    for (w = 0; w <= W_MEM_LAST; w++)
      __atomic_store_n(&nat.pl->hook[w], NULL, __ATOMIC_RELEASE);
  }
  pthread_mutex_lock(&nat.pmu);
  unpatch_all();
  pthread_mutex_unlock(&nat.pmu);
  pthread_mutex_lock(&nat.mu);	/* No thread waits for room any more. */
  pthread_cond_broadcast(&nat.room);
  pthread_mutex_unlock(&nat.mu);
  /* The VM's thread raised vm_inside before it read nat.on: either it is
  ** seen raised now, or that thread saw nat.on fall. */
  if (nat.membar)
    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  while ((__atomic_load_n(&nat.inflight, __ATOMIC_ACQUIRE) ||
	  __atomic_load_n(&nat.vm_inside, __ATOMIC_ACQUIRE)) &&
	 waited < NATIVE_WAIT_NS) {
    nanosleep(&step, NULL);
    waited += step.tv_nsec;
  }
  depth++;
  mp_enter(s);
  drain_queue(s);
  if (__atomic_load_n(&s->recording, __ATOMIC_RELAXED)) {
    put_rss(s);
    if (!sampling()) put_count(s, "native_unseen", nat.unseen);
    if (nat.lost) put_count(s, "native_lost", nat.lost);
  }
  mp_leave(s);
  if (!__atomic_load_n(&nat.inflight, __ATOMIC_ACQUIRE) &&
      !__atomic_load_n(&nat.vm_inside, __ATOMIC_ACQUIRE)) {
    mp_hash_free(&nat.live);
    mp_hash_free(&nat.big);
    mp_hash_free(&nat.jit);
    real.free(nat.bigs);
    real.free(nat.q.e);
    real.free(nat.spare.e);
    real.free(nat.maps);
    nat.maps = NULL;
    nat.nmaps = nat.capmaps = nat.premc = 0;
    nat.bigs = NULL;
    nat.nbig = nat.capbig = 0;
    memset(&nat.q, 0, sizeof(nat.q));
    memset(&nat.spare, 0, sizeof(nat.spare));
  }
  depth--;
  if (nat.vma) {
    s->orig_f = nat.vma->f;
    s->orig_ud = nat.vma->ud;
    real.free(nat.vma);
    nat.vma = NULL;
  }
  s->native = 0;
  __atomic_store_n(&nat.s, NULL, __ATOMIC_RELEASE);
}
