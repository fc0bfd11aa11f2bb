/*
** mp_native.c: native memory: the malloc family and anonymous mmap/munmap
** as every loaded object calls them, recorded beside the VM's heap.
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
** system calls.
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
** Threads: one lock orders every native event. The VM's thread writes the
** stream (it alone may: the hook writes without a lock); other threads
** append to a queue that the VM's thread writes out before its next
** native event, at its time marks and at stop, in the lock's order. A
** reader keeps native blocks apart from the VM's (MP_NATIVE_KEY), so that
** a queued event written after later VM events cannot mix the two. Stop
** waits for the wrappers inside a recording (inflight); this object is
** never unloaded once used, since a thread may still enter a wrapper.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mp_agent.h"
#include "mp_native.h"
#include "mp_stack.h"
#include "mp_sym.h"
#include "mp_sink.h"
#include "mp_stream.h"

#if defined(__x86_64__)
#define R_SLOT	R_X86_64_JUMP_SLOT
#define R_GLOB	R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_SLOT	R_AARCH64_JUMP_SLOT
#define R_GLOB	R_AARCH64_GLOB_DAT
#endif

#define NATIVE_WAIT_NS	2000000000L	/* Longest wait at stop for wrappers
					   inside a recording. */

/* > 0 while this thread must not record: inside a wrapper's recording or
** real call, or inside the VM's allocator. Initial-exec: no allocation
** on first use (which would come back here). */
static __thread int depth __attribute__((tls_model("initial-exec")));
/* This thread's id, once asked. */
static __thread uint32_t my_tid __attribute__((tls_model("initial-exec")));

/* This thread's id (the kernel's, as ps and /proc show it). */
static uint32_t thread_id(void)
{
  if (!my_tid) my_tid = (uint32_t)syscall(SYS_gettid);
  return my_tid;
}

/* The functions wrapped, by index; W_MMAP64 is mmap's other name. */
enum {
  W_MALLOC, W_CALLOC, W_REALLOC, W_REALLOCARRAY, W_FREE, W_POSIX_MEMALIGN,
  W_ALIGNED_ALLOC, W_MEMALIGN, W_VALLOC, W_PVALLOC, W_MMAP, W_MMAP64,
  W_MUNMAP, W_DLOPEN, W_DLCLOSE, W_DLSYM, W_N
};
static const char *const wname[W_N] = {
  "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
  "aligned_alloc", "memalign", "valloc", "pvalloc", "mmap", "mmap64",
  "munmap", "dlopen", "dlclose", "dlsym"
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
  void *(*dlopen)(const char *, int);
  int (*dlclose)(void *);
  void *(*dlsym)(void *, const char *);
} real;

/* An event, as queued by another thread. */
typedef struct nat_ev {
  uint64_t oaddr, osize, naddr, nsize;
  uintptr_t caller;	/* Return address of the wrapped call. */
  uint32_t tid;		/* Another thread's id (0: the VM's thread). */
  uint8_t ev;		/* MP_AEV_*. */
  uint8_t nf;		/* MP_NF_*. */
} nat_ev;

typedef struct nat_q {
  nat_ev *e;
  size_t n, cap;
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

static struct {
  int ready;		/* The real functions are known. */
  int on;		/* Recording (atomic). */
  int inflight;		/* Wrappers inside a recording (atomic). */
  mp_state *s;		/* The recording profiler. */
  pthread_t vm;		/* Its VM's thread. */
  struct nat_vmalloc *vma;	/* The VM's allocator, behind the guard. */
  pthread_mutex_t mu;	/* Orders events: live, q, unseen. */
  mp_hash live;		/* Live blocks: address -> size (or BIG). */
  mp_hash big;		/* Sizes of 4 GiB or more: address -> index... */
  uint64_t *bigs;	/* ...into this. */
  size_t nbig, capbig;
  uint64_t unseen;	/* Frees of blocks not seen allocated. */
  uint64_t lost;	/* Events not queued (out of memory). */
  nat_q q, spare;	/* Queued by other threads; written by the VM's. */
  pthread_mutex_t pmu;	/* The patches. */
  nat_patch *patch;
  size_t npatch, cappatch;
  nat_obj *obj;
  size_t nobj, capobj;
  uintptr_t luajit;	/* Base of LuaJIT's object (its dlsym). */
  uintptr_t ldso;	/* Base of the dynamic linker. */
  uintptr_t page;
} nat = { .mu = PTHREAD_MUTEX_INITIALIZER, .pmu = PTHREAD_MUTEX_INITIALIZER };

#define BIG	UINT32_MAX

static void *wrapper_of(int w);

/* -- The live blocks (under nat.mu) ---------------------------------------- */

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
  uint32_t *v = mp_hash_get(&nat.live, a);
  if (!v) return 0;
  if (*v == BIG) {
    uint32_t *i = mp_hash_get(&nat.big, a);
    *size = i ? nat.bigs[*i] : 0;
    mp_hash_del(&nat.big, a);
  } else {
    *size = *v;
  }
  mp_hash_del(&nat.live, a);
  return 1;
}

/* Apply event e to the live blocks (in the lock's order): 1 if it is to
** be recorded (a free or a resize of a block not seen is not; a resize of
** one becomes an allocation), else 0. */
static int live_apply(nat_ev *e)
{
  if (e->ev & MP_AEV_FREE) {
    if (!live_take(e->oaddr, &e->osize)) {
      nat.unseen++;
      if (e->ev == MP_AEV_FREE) return 0;
      e->ev = MP_AEV_ALLOC;
    }
  }
  if ((e->ev & MP_AEV_ALLOC) && live_put(e->naddr, e->nsize) < 0) {
    nat.lost++;
    return 0;
  }
  return 1;
}

/* -- Writing (the VM's thread) ---------------------------------------------- */

/* The node of a native caller: a C frame at the return address, named by
** the symbol it is in (the reader adds the offset), or "object+0x..." when
** it is in none; another thread's (tid) on a root naming the thread. */
static uint32_t caller_node(mp_state *s, uintptr_t caller, uint32_t tid)
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
** frame on top. */
static void put_event(mp_state *s, const nat_ev *e, uint32_t parent)
{
  mp_snode f;
  uint32_t id;
  if (!parent) parent = caller_node(s, e->caller, e->tid);
  memset(&f, 0, sizeof(f));
  f.kind = MP_FK_NATIVE;
  f.a = e->nf;
  if (!parent || !(id = mp_stack_child(s, parent, &f))) return;
  mp_stack_event(s, e->ev, id, e->oaddr, e->osize, e->naddr, e->nsize);
}

/* Write the events of queue b (taken from nat.q) and empty it. */
static void put_queued(mp_state *s, nat_q *b)
{
  size_t i;
  if (__atomic_load_n(&s->recording, __ATOMIC_RELAXED))
    for (i = 0; i < b->n; i++) put_event(s, &b->e[i], 0);
  b->n = 0;
}

/* Take the queue out (under nat.mu): the spare becomes the queue. */
static nat_q *take_queue(void)
{
  nat_q t;
  if (!nat.q.n) return NULL;
  t = nat.spare;
  nat.spare = nat.q;
  nat.q = t;
  return &nat.spare;
}

/* Write the process's resident set size (MP_X_RSS), if it can be read. */
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
  mp_settle(s);
}

void mp_native_drain(mp_state *s)
{
  nat_q *b;
  if (s != nat.s) return;
  depth++;
  pthread_mutex_lock(&nat.mu);
  b = take_queue();
  pthread_mutex_unlock(&nat.mu);
  if (b) put_queued(s, b);
  put_rss(s);	/* At each time mark. */
  depth--;
}

/* Queue event e of another thread (under nat.mu). */
static void enqueue(const nat_ev *e)
{
  if (nat.q.n == nat.q.cap) {
    size_t cap = nat.q.cap ? 2 * nat.q.cap : 256;
    nat_ev *a = real.realloc(nat.q.e, cap * sizeof(*a));
    if (!a) { nat.lost++; return; }
    nat.q.e = a;
    nat.q.cap = cap;
  }
  nat.q.e[nat.q.n++] = *e;
}

/* -- Recording ------------------------------------------------------------- */

/* The VM's thread, not inside the hook (the agent's own allocations, when
** it is linked into the program) and recording: s, else NULL. */
static mp_state *vm_state(void)
{
  mp_state *s = __atomic_load_n(&nat.s, __ATOMIC_ACQUIRE);
  if (!s || !pthread_equal(pthread_self(), __atomic_load_n(&nat.vm,
							   __ATOMIC_RELAXED)))
    return NULL;
  return s;
}

/* Record event e, after the real call (a free before it: its block may
** be another thread's as soon as it returns); real() is made under the
** lock first when it is a resize (it frees a block too), with *res its
** result. from: the wrapper's frame, for the stack walker. */
static MP_NOINLINE void record(nat_ev *e, const void *from)
{
  mp_state *s;
  nat_q *b = NULL;
  int put;
  __atomic_add_fetch(&nat.inflight, 1, __ATOMIC_SEQ_CST);
  if (!__atomic_load_n(&nat.on, __ATOMIC_SEQ_CST)) goto out;
  if ((s = vm_state()) != NULL) {
    uint32_t node;
    mp_enter(s);
    if (!__atomic_load_n(&s->recording, __ATOMIC_RELAXED)) {
      mp_leave(s);
      goto out;
    }
    /* The stack is read before the lock: the walker may write nodes. */
    node = mp_stack_here(s, __builtin_frame_address(0));
    pthread_mutex_lock(&nat.mu);
    put = live_apply(e);
    b = take_queue();
    pthread_mutex_unlock(&nat.mu);
    if (b) put_queued(s, b);
    if (put) put_event(s, e, node);
    mp_leave(s);
  } else {
    e->tid = thread_id();
    pthread_mutex_lock(&nat.mu);
    if (live_apply(e)) enqueue(e);
    pthread_mutex_unlock(&nat.mu);
  }
out:
  __atomic_sub_fetch(&nat.inflight, 1, __ATOMIC_RELEASE);
}

/* Whether this call is to be recorded. On the VM's thread inside the hook
** (busy) it is the agent's own. */
static inline int wanted(void)
{
  mp_state *s;
  if (depth || !__atomic_load_n(&nat.on, __ATOMIC_ACQUIRE)) return 0;
  /* s only on the VM's thread: another may see it freed by a stop. */
  if (!pthread_equal(pthread_self(), __atomic_load_n(&nat.vm,
						     __ATOMIC_RELAXED)))
    return 1;
  s = __atomic_load_n(&nat.s, __ATOMIC_RELAXED);
  return !(s && __atomic_load_n(&s->busy, __ATOMIC_RELAXED));
}

/* Record an allocation made: nf, the block at p of n bytes. */
static MP_NOINLINE void note_alloc(int nf, void *p, uint64_t n,
				   uintptr_t caller)
{
  nat_ev e;
  memset(&e, 0, sizeof(e));
  e.ev = MP_AEV_ALLOC;
  e.nf = (uint8_t)nf;
  e.naddr = (uintptr_t)p;
  e.nsize = n;
  e.caller = caller;
  record(&e, NULL);
}

/* Record a free about to be made. */
static MP_NOINLINE void note_free(int nf, void *p, uintptr_t caller)
{
  nat_ev e;
  memset(&e, 0, sizeof(e));
  e.ev = MP_AEV_FREE;
  e.nf = (uint8_t)nf;
  e.oaddr = (uintptr_t)p;
  e.caller = caller;
  record(&e, NULL);
}

#define CALLER	((uintptr_t)__builtin_return_address(0))

/* An allocation wrapper: the real call, then its event. */
#define ALLOC_WRAP(nf, call, size) \
  do { \
    void *r_; \
    if (!wanted()) return call; \
    depth++; \
    r_ = call; \
    if (r_) note_alloc(nf, r_, size, CALLER); \
    depth--; \
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
  if (!wanted()) return real.posix_memalign(out, a, n);
  depth++;
  rc = real.posix_memalign(out, a, n);
  if (!rc) note_alloc(MP_NF_POSIX_MEMALIGN, *out, n, CALLER);
  depth--;
  return rc;
}

static MP_NOINLINE void w_free(void *p)
{
  if (!p || !wanted()) { real.free(p); return; }
  depth++;
  note_free(MP_NF_FREE, p, CALLER);
  real.free(p);
  depth--;
}

/* A resize: made under the lock, so that the block it frees is not
** another thread's event before this one. */
static MP_NOINLINE void *resize(int nf, void *p, size_t k, size_t n,
				uintptr_t caller)
{
  nat_ev e;
  void *r;
  mp_state *s;
  nat_q *b = NULL;
  uint32_t node = 0;
  int put = 0;
  __atomic_add_fetch(&nat.inflight, 1, __ATOMIC_SEQ_CST);
  if (!__atomic_load_n(&nat.on, __ATOMIC_SEQ_CST)) {
    r = nf == MP_NF_REALLOC ? real.realloc(p, n) : real.reallocarray(p, k, n);
    goto out;
  }
  memset(&e, 0, sizeof(e));
  e.ev = MP_AEV_REALLOC;
  e.nf = (uint8_t)nf;
  e.oaddr = (uintptr_t)p;
  e.nsize = nf == MP_NF_REALLOC ? n : (uint64_t)k * n;
  e.caller = caller;
  if ((s = vm_state()) != NULL) {
    mp_enter(s);
    if (__atomic_load_n(&s->recording, __ATOMIC_RELAXED)) {
      node = mp_stack_here(s, __builtin_frame_address(0));
    } else {
      mp_leave(s);
      s = NULL;
    }
  }
  pthread_mutex_lock(&nat.mu);
  r = nf == MP_NF_REALLOC ? real.realloc(p, n) : real.reallocarray(p, k, n);
  if (r) {
    e.naddr = (uintptr_t)r;
    if (s) {
      put = live_apply(&e);
      b = take_queue();
    } else if (!vm_state()) {
      e.tid = thread_id();
      if (live_apply(&e)) enqueue(&e);
    }
  }
  pthread_mutex_unlock(&nat.mu);
  if (s) {
    if (b) put_queued(s, b);
    if (put) put_event(s, &e, node);
    mp_leave(s);
  }
out:
  __atomic_sub_fetch(&nat.inflight, 1, __ATOMIC_RELEASE);
  return r;
}

static MP_NOINLINE void *w_realloc(void *p, size_t n)
{
  void *r;
  if (!wanted()) return real.realloc(p, n);
  if (!p) ALLOC_WRAP(MP_NF_REALLOC, real.realloc(p, n), n);
  depth++;
  if (!n) {	/* glibc frees the block and returns NULL. */
    note_free(MP_NF_REALLOC, p, CALLER);
    r = real.realloc(p, n);
  } else {
    r = resize(MP_NF_REALLOC, p, 0, n, CALLER);
  }
  depth--;
  return r;
}

static MP_NOINLINE void *w_reallocarray(void *p, size_t k, size_t n)
{
  void *r;
  if (!wanted()) return real.reallocarray(p, k, n);
  if (!p) ALLOC_WRAP(MP_NF_REALLOCARRAY, real.reallocarray(p, k, n),
		     (uint64_t)k * n);
  depth++;
  r = resize(MP_NF_REALLOCARRAY, p, k, n, CALLER);
  depth--;
  return r;
}

/* Anonymous mappings only (files mapped are not memory the program
** allocated). */
static MP_NOINLINE void *w_mmap(void *a, size_t n, int prot, int flags,
				int fd, off_t off)
{
  void *r;
  if (!(flags & MAP_ANONYMOUS) || !wanted())
    return real.mmap(a, n, prot, flags, fd, off);
  depth++;
  r = real.mmap(a, n, prot, flags, fd, off);
  if (r != MAP_FAILED) note_alloc(MP_NF_MMAP, r, n, CALLER);
  depth--;
  return r;
}

/* A mapping's end: recorded when it starts a mapping seen made (the whole
** of it; a part unmapped is not followed). */
static MP_NOINLINE int w_munmap(void *a, size_t n)
{
  int rc;
  if (!wanted()) return real.munmap(a, n);
  depth++;
  note_free(MP_NF_MUNMAP, a, CALLER);
  rc = real.munmap(a, n);
  depth--;
  return rc;
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
  ** agent's own calls are told apart at run time (wanted()). */
  if (*path && obj_has(info, (uintptr_t)&mp_native_start)) return 0;
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
  for (w = 0; w <= W_MUNMAP; w++)
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
    (void *)w_dlopen, (void *)w_dlclose, (void *)w_dlsym
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

static void fork_child(void)
{
  pthread_mutex_init(&nat.mu, NULL);
  pthread_mutex_init(&nat.pmu, NULL);
  nat.on = 0;
  nat.inflight = 0;
  nat.s = NULL;
  nat.npatch = nat.nobj = 0;
  memset(&nat.live, 0, sizeof(nat.live));	/* The parent's: left. */
  memset(&nat.big, 0, sizeof(nat.big));
  memset(&nat.q, 0, sizeof(nat.q));
  memset(&nat.spare, 0, sizeof(nat.spare));
  nat.bigs = NULL;
  nat.nbig = nat.capbig = 0;
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
  nat.page = (uintptr_t)sysconf(_SC_PAGESIZE);
  nat.ldso = (uintptr_t)getauxval(AT_BASE);
  if (dladdr((void *)lua_getallocf, &i)) nat.luajit = (uintptr_t)i.dli_fbase;
  /* Never unloaded from now on: a thread may be about to enter a wrapper
  ** whatever stop does. */
  if (dladdr((void *)&mp_native_start, &i) && i.dli_fname && *i.dli_fname)
    real.dlopen(i.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
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
  mp_hash_init_map(&nat.live);
  mp_hash_init_map(&nat.big);
  nat.unseen = nat.lost = 0;
  __atomic_store_n(&nat.vm, pthread_self(), __ATOMIC_RELAXED);
  __atomic_store_n(&nat.s, s, __ATOMIC_RELEASE);
  s->native = 1;
  __atomic_store_n(&nat.on, 1, __ATOMIC_SEQ_CST);
  patch_all();
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
  nat_q *b;
  if (!s->native || nat.s != s) return;
  __atomic_store_n(&nat.on, 0, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&nat.pmu);
  unpatch_all();
  pthread_mutex_unlock(&nat.pmu);
  while (__atomic_load_n(&nat.inflight, __ATOMIC_ACQUIRE) &&
	 waited < NATIVE_WAIT_NS) {
    nanosleep(&step, NULL);
    waited += step.tv_nsec;
  }
  depth++;
  mp_enter(s);
  pthread_mutex_lock(&nat.mu);
  b = take_queue();
  pthread_mutex_unlock(&nat.mu);
  if (b) put_queued(s, b);
  if (__atomic_load_n(&s->recording, __ATOMIC_RELAXED)) {
    put_rss(s);
    put_count(s, "native_unseen", nat.unseen);
    if (nat.lost) put_count(s, "native_lost", nat.lost);
  }
  mp_leave(s);
  if (!__atomic_load_n(&nat.inflight, __ATOMIC_ACQUIRE)) {
    mp_hash_free(&nat.live);
    mp_hash_free(&nat.big);
    real.free(nat.bigs);
    real.free(nat.q.e);
    real.free(nat.spare.e);
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
