/*
** mp_stack.c: the hook of the stacks mode: every allocation and
** reallocation carries its call stack (see mp_stack.h).
**
** The stack is walked with the one frame walker (mp_frame.c), innermost
** frame first, up to the depth asked for (deeper stacks end in a CUT frame
** so that nothing is silently merged), and interned as a tree of nodes
** (mp_node.h). Where the VM is comes from mp_where.h, as for every hook.
** This file is one compilation unit with the headers it includes once,
** whose static functions the hook inlines:
**   mp_stack_cache.h  the cache of the last stack
**   mp_stack_memo.h   the memos of stacks met before
**   mp_stack_walk.h   the capture of the interpreter's frames
** and calls mp_traceline.c for the line inside a trace.
**
** What makes it cheap (each shortcut is checked against the long way by
** the build with MP_STACK_CHECK, tests/agent-stacks-check.t):
**   the last stack   consecutive events mostly share the frames below the
**                    top: the frames of the last stack are cached with the
**                    words of the VM stack that say they are still in
**                    place (links, functions), compared in one pass; only
**                    the frames above the part in place are walked
**   quick paths      a Lua frame called from Lua, the last stack's top or
**                    one frame above a frame of it, are read without the
**                    walker's generality (push_one(), quick_stack())
**   stacks met before  a memo by the top frame (slot, link, function, pc;
**                    no pc for a C function or builtin, whose saved pc
**                    is stale) holding the words that validate the
**                    frames below it, for loops whose stacks repeat
**                    without being consecutive (an FFI call from the
**                    interpreter, ffi.meta.__call on top); it rests when
**                    it seldom finds a stack
**   compiled code    a memo by (trace's base, return address into the
**                    trace, trace) holding the words that validate the
**                    base frame and the frames below it: an allocation
**                    of a trace whose frames are as they were costs one
**                    probe and those words (traced_again())
**   node lookups     a Lua frame's node by (parent node, pc), which spares
**                    the line lookup; other nodes through a direct-mapped
**                    cache before the hash table
** The frames below a frame are in place when their words hold what they
** held: a frame's link names its caller's slot and (called from Lua) its
** prototype and pc, so the words determine the stack, with one exception:
** a Lua function interrupted by a hook, a finaliser or an FFI callback has
** its pc in a C frame, and no frame is cached above it.
**
** Compiled code: the trace's node sits on the frames below the trace's
** base frame, and under it, when it can be found, the line the trace was
** executing: the return address into the trace's machine code is read
** where the VM's layout puts it (x64), or else searched on the C stack
** (see mp_trace_ret()), and mapped through the trace's snapshots (each knows
** where its machine code starts) to the bytecodes the trace stood for
** there: of those on the way to the next snapshot, the ones that can
** allocate and make the call the return address follows (map_ret()).
**
** Nodes that name a prototype or a trace are not reused once that object
** dies (its address or number may come to name another): the node table
** starts afresh, new ids continue the old ones.
*/

#include <string.h>
#ifdef MP_STACK_CHECK
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#endif

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_jit.h"
#include "lj_dispatch.h"

#include "mp_stack.h"
#include "mp_frame.h"
#include "mp_node.h"
#include "mp_traceline.h"
#include "mp_stack_cache.h"
#include "mp_stack_memo.h"
#include "mp_stack_walk.h"
#include "mp_names.h"
#include "mp_stream.h"

/* -- Nodes ---------------------------------------------------------------- */

/* See mp_stack.h. */
void mp_stack_forget(mp_state *s)
{
  mp_stacks *st = &s->st;
  unsigned i;
  st->base += st->n;
  for (i = 0; i < (2u << MP_RETS_BITS); i++) st->rets[i].ret = 0;
  memset(st->traced, 0, sizeof(st->traced));
  memset(st->pcnode, 0, sizeof(st->pcnode));
  if (st->memo)
    for (i = 0; i < (2u << MP_MEMO_BITS); i++) st->memo[i].top = NULL;
  if (st->jmemo)
    for (i = 0; i < (2u << MP_JMEMO_BITS); i++) st->jmemo[i].trace = NULL;
  st->n = 0;
  st->nc = 0;
  mp_hash_free(&st->index);
  mp_hash_init_map(&st->index);
}

/* -- Locating an event ---------------------------------------------------- */

/* The node of an event in compiled code: trace w->tn runs (at is
** MP_AT_TRACE) or exits (MP_AT_EXIT: its node alone, the exit rebuilds
** the frames). The caches are used unless slow; known: the return address
** into the trace if traced_again() found it, else 0. */
static MP_INLINE uint32_t locate_trace(mp_state *s, mp_at at,
				       const mp_where *w, const void *from,
				       int slow, uintptr_t known)
{
  global_State *g = (global_State *)s->g;
  jit_State *J = G2J(g);
  TraceNo tn = w->tn;
  GCtrace *T;
  TValue *base = tvref(g->jit_base);
  GCfunc *basefn = base ? frame_func(base - 1) : NULL;
  lua_State *L = at == MP_AT_TRACE ? w->L : NULL;
  mp_traced *memo = NULL;
  mp_snode line, tr, inl[MP_INLINED_MAX];
  unsigned ninl = 0, i;
  uintptr_t ret = 0;
  uint32_t id = 0, baseline = 0;
  int k;
  if (tn >= J->sizetrace || !(T = (GCtrace *)gcref(J->trace[tn])))
    return 0;
  if (at == MP_AT_TRACE && T->nsnap)
    ret = known ? known : L ? mp_trace_ret(&s->st, T, L, from) :
			      mp_scan_ret(&s->st, T, from);
  /* The frames below the trace's base (not while an exit rebuilds them).
  ** The base frame runs the trace: shown at the trace's start, unless the
  ** line inside the trace is its own (see below). */
  if (L && base && below_trace(L, base)) {
    mp_stacks *st = &s->st;
    if (!stack_from(s, L, base - 1, NULL, mref(T->startpc, const BCIns) + 1,
		    slow, &id))
      return 0;
    /* The same return address into the same trace, on the same frames
    ** with the base frame on top (whose function the line may be in): the
    ** same node as last time. */
    if (st->nc && st->c[st->nc - 1].slot == link_slot(base - 1) && ret &&
	!slow) {
      memo = &st->traced[((ret ^ id) * 0x9e3779b97f4a7c15ull) >>
			 (64 - MP_TRACED_BITS)];
      if (memo->ret == ret && memo->below == id && memo->trace == T &&
	  memo->id) {
	jmemo_add(st, base, ret, T, id, memo->id);
	return memo->id;
      }
      memo->ret = ret;
      memo->below = id;
      memo->trace = T;
      memo->id = 0;
    }
  }
  /* Its symbol first: a number that names another trace than the one we
  ** wrote (jit.flush() leaves the old one alive for a while) is another
  ** node. */
  mp_want_trace(s, g, tn);
  tr.kind = MP_FK_TRACE;
  tr.a = tn;
  tr.b = tn < s->ntraces ? s->traces[tn].gen : 0;
  k = ret ? mp_trace_line(s, T, tn, basefn, base, ret, &line, inl, &ninl,
			  &baseline, !slow) :
	    0;
  /* The base frame at its call into the functions the trace inlined,
  ** when told, rather than where the trace started. */
  if (k == 1 && baseline && id) {
    mp_snode b = *mp_node_at(&s->st, id);
    if (b.kind == MP_FK_LUA && b.a == (uint64_t)(uintptr_t)funcproto(basefn)) {
      b.b = baseline;
      if (!(id = mp_node_of(s, mp_node_at(&s->st, id)->parent, &b)))
	return 0;
    }
  }
  /* A line of the base frame itself stands for it above the trace: the
  ** base frame at the trace's start below would show the function twice
  ** (and at a line it is not at, when the trace started in a function
  ** that has returned since). */
  if (k == 2 && id) id = mp_node_at(&s->st, id)->parent;
  /* A tail call from the base frame: the interpreter bills it to the
  ** call that made the base frame (which the tail call replaced), so that
  ** line stands for both above the trace. Not known without a Lua frame
  ** below the base frame: the trace alone. */
  if (k == 3) {
    const mp_snode *b = id ? mp_node_at(&s->st, id) : NULL;
    const mp_snode *c = b && b->parent ? mp_node_at(&s->st, b->parent) : NULL;
    k = 0;
    if (c && c->kind == MP_FK_LUA) {
      line = *c;
      id = c->parent;
      k = 3;
    }
  }
  /* With no line told, the base frame is left out too: shown at the
  ** trace's start (often its function's first line), it would read as the
  ** line that allocated; the trace's label names where it started. */
  if (k == 0 && id) id = mp_node_at(&s->st, id)->parent;
  if (!(id = mp_node_of(s, id, &tr))) return 0;
  for (i = 0; k == 1 && i < ninl; i++)
    if (!(id = mp_node_of(s, id, &inl[i]))) return 0;
  if (k && !(id = mp_node_of(s, id, &line))) return 0;
  if (memo) {
    memo->id = id;
    jmemo_add(&s->st, base, ret, T, memo->below, id);
  }
  return id;
}

/* The node of an event in the frame w->top (MP_AT_FRAME). The memo and the
** caches are used unless slow; probed: met_again() asked the memo and did
** not find the stack. */
static MP_INLINE uint32_t locate_frame(mp_state *s, const mp_where *w,
				       int slow, int probed)
{
  mp_stacks *st = &s->st;
  const BCIns *kpc;
  uint32_t id = 0;
  if (!slow && !st->memo_use.rest && (kpc = memo_pc(w))) {
    if (!probed) {	/* A stack met before? */
      uint32_t met = memo_find(st, w->top, kpc, tvref(w->L->stack));
      st->memo_use.probes++;
      if (met) return met;
    }
    if (stack_from(s, w->L, w->top, w->pc, NULL, 0, &id))
      memo_add(st, w->top, kpc, id);
    return id;
  }
  stack_from(s, w->L, w->top, w->pc, NULL, slow, &id);
  return id;
}

/* The node of the host (MP_AT_HOST). */
static MP_NOINLINE uint32_t host_node(mp_state *s)
{
  mp_snode host;
  mp_sym_host(s);
  host.kind = MP_FK_HOST;
  host.a = host.b = 0;
  return mp_node_of(s, 0, &host);
}

/* Where an allocation happens (at, *w: mp_where_is()), as a stack node; 0
** for the VM itself (GC, JIT compiler), whose events carry no stack. */
static MP_INLINE uint32_t locate(mp_state *s, mp_at at, const mp_where *w,
				 const void *from, int slow, int probed,
				 uintptr_t known)
{
  switch (at) {
  case MP_AT_TRACE: case MP_AT_EXIT:
    return locate_trace(s, at, w, from, slow, known);
  case MP_AT_FRAME: return locate_frame(s, w, slow, probed);
  case MP_AT_HOST: return host_node(s);
  default: return 0;
  }
}

/* The node of an event in compiled code (MP_AT_TRACE) if its stack was
** met before (see mp_jmemo), else 0: the trace's base, the return address
** into the trace and the trace name the entry, the words it holds say
** that the frames from the base frame down are as they were. The
** conditions are those under which locate_trace() puts frames below the
** trace. Only the words at or above the running coroutine's stack are
** read (a stack met in another coroutine may lie in memory the VM has
** freed since). */
static MP_INLINE uint32_t traced_again(mp_state *s, const mp_where *w,
				       const void *from, uintptr_t *known)
{
  global_State *g = (global_State *)s->g;
  mp_stacks *st = &s->st;
  jit_State *J = G2J(g);
  lua_State *L = w->L;
  GCtrace *T;
  TValue *base;
  uintptr_t ret;
  mp_jmemo *m;
  unsigned i;
  if (st->jmemo_use.rest || w->tn >= J->sizetrace ||
      !(T = (GCtrace *)gcref(J->trace[w->tn])))
    return 0;
  base = tvref(g->jit_base);
  if (!base || !L || !below_trace(L, base) ||
      !(ret = mp_trace_ret(st, T, L, from)))
    return 0;
  *known = ret;
  st->jmemo_use.probes++;
  m = jmemo_set(st, base, ret);
  for (i = 0; i < 2; i++, m++)
    if (m->ret == ret && m->base == (const void *)base &&
	m->trace == (const void *)T && m->low >= (const void *)tvref(L->stack) &&
	still_same(m->w, m->n)) {
      st->jmemo_use.hits++;
      return m->id;
    }
  return 0;
}

/* The node of an event in a frame (MP_AT_FRAME) if its stack was met
** before (see mp_memo), else 0; *probed: the memo was asked. */
static MP_INLINE uint32_t met_again(mp_state *s, const mp_where *w,
				    int *probed)
{
  mp_stacks *st = &s->st;
  const BCIns *kpc;
  if (st->memo_use.rest || !(kpc = memo_pc(w))) return 0;
  *probed = 1;
  st->memo_use.probes++;
  return memo_find(st, w->top, kpc, tvref(w->L->stack));
}

/* locate() with the caches, past traced_again() and met_again(). */
static MP_NOINLINE uint32_t located(mp_state *s, mp_at at, const mp_where *w,
				    const void *from, int probed,
				    uintptr_t known)
{
  return locate(s, at, w, from, 0, probed, known);
}

#ifdef MP_STACK_CHECK
/* The checked build: events in a frame or a trace whose stack no memo
** found (tests/agent-stacks-check.t reads it through the FFI). */
__attribute__((visibility("default"))) uint32_t mp_check_unmet;

/* The checked build: find the stack again without the caches, abort if
** it is not node id. */
static MP_NOINLINE void check_stack(mp_state *s, const void *from,
				    uint32_t id)
{
  global_State *g = (global_State *)s->g;
  mp_stacks *st = &s->st;
  unsigned nc = st->nc, nw = nc ? st->c[nc - 1].nwords : 0;
  const void *cbelow = st->cbelow;
  uint32_t cparent = st->cparent;
  mp_scache *c = malloc((nc + 1) * sizeof(*c));
  mp_sword *words = malloc((nw + 1) * sizeof(*words));
  mp_where w;
  mp_at at;
  uint32_t want;
  if (!c || !words) abort();
  memcpy(c, st->c, nc * sizeof(*c));
  memcpy(words, st->words, nw * sizeof(*words));
  st->nc = 0;
  at = mp_where_is(g, g->vmstate, &w);
  want = locate(s, at, &w, from, 1, 0, 0);
  if (want != id) {
    mp_node_print(st, "got ", id);
    mp_node_print(st, "want", want);
    mp_stack_check_failed("stack node", id, want);
  }
  memcpy(st->c, c, nc * sizeof(*c));
  memcpy(st->words, words, nw * sizeof(*words));
  st->nc = nc;
  st->cbelow = cbelow;
  st->cparent = cparent;
  free(c);
  free(words);
}
#endif

/* The node of the stack of an allocation of nsize bytes (from: the frame
** of the hook's function that calls this; nsize 0: a native event's),
** and where the VM is into *where (MP_AT_VM for its string table); the
** checked build finds every stack again the long way. */
static MP_INLINE uint32_t capture_at(mp_state *s, const void *from,
				     size_t nsize, mp_at *where)
{
  global_State *g = (global_State *)s->g;
  mp_where w;
  mp_at at;
  int probed = 0;
  uintptr_t known = 0;
  uint32_t id = 0;
  *where = MP_AT_VM;
  if (mp_strtab_grows(g, nsize)) return 0;	/* The VM's own. */
  *where = at = mp_where_is(g, g->vmstate, &w);
  if (at == MP_AT_TRACE) id = traced_again(s, &w, from, &known);
  else if (at == MP_AT_FRAME) id = met_again(s, &w, &probed);
#ifdef MP_STACK_CHECK
  if (!id && (at == MP_AT_TRACE || at == MP_AT_FRAME)) mp_check_unmet++;
#endif
  if (!id) id = located(s, at, &w, from, probed, known);
#ifdef MP_STACK_CHECK
  check_stack(s, from, id);
#endif
  return id;
}

/* capture_at() for a VM event. */
static MP_INLINE uint32_t capture(mp_state *s, const void *from,
				  size_t nsize)
{
  mp_at at;
  return capture_at(s, from, nsize, &at);
}

/* See mp_stack.h. */
uint32_t mp_stack_capture(mp_state *s, const void *from, size_t nsize)
{
  return capture(s, from, nsize);
}

/* -- The hook ------------------------------------------------------------- */

/* See mp_stack.h. */
void mp_stack_time_mark(mp_state *s)
{
  mp_stacks *st = &s->st;
  st->tick = st->ticks;
  memo_window(&st->memo_use, 3);
  memo_window(&st->jmemo_use, 2);
  s->pos = mp_put_time(s, s->pos);
  mp_settle(s);
  if (s->drain) s->drain(s);	/* Other threads' native events. */
}

/* A free: recorded, then forwarded as a tail call. */
static MP_NOINLINE void *stack_free(mp_state *s, void *ptr, size_t osize)
{
  mp_stack_sym_free(s, ptr, osize);
  mp_stack_put_free(s, ptr, osize);
  mp_leave(s);
  return s->orig_f(s->orig_ud, ptr, osize, 0);
}

/* The end of a free whose record filled the chunk: hand it over. */
static MP_NOINLINE void *free_flush(mp_state *s, void *ptr, size_t osize)
{
  mp_sink_flush(s);
  mp_leave(s);
  return s->orig_f(s->orig_ud, ptr, osize, 0);
}

/* An allocation or reallocation (nsize > 0), recorded around forwarding.
** Apart from the hook, so that frees save no registers. */
static MP_NOINLINE void *stack_alloc(mp_state *s, void *ptr, size_t osize,
				     size_t nsize)
{
  mp_stacks *st = &s->st;
  void *res;
  uint32_t node, last_node;
  uint64_t old;
  uint8_t *p, *h;
  /* The stack is read before forwarding (a stack reallocation frees the
  ** stack the frames are in); the event counts if the allocator succeeds,
  ** else the registers the encoding moved go back. */
  node = capture(s, __builtin_frame_address(0), nsize);
  s->alloc_est = ((global_State *)s->g)->gc.estimate;	/* settled() */
  old = st->old_addr;
  last_node = st->last_node;
  h = s->pos;
  if (ptr == NULL) {
    p = mp_put_where(st, h, MP_AEV_ALLOC, node);
  } else {
    p = mp_put_where(st, h, MP_AEV_REALLOC, node);
    p = mp_put_delta(p, h, MP_EV_OLD8, &st->old_addr, (uint64_t)(uintptr_t)ptr);
    p = mp_put_uleb_near(p, osize);
  }
  res = s->orig_f(s->orig_ud, ptr, osize, nsize);
  if (MP_LIKELY(res != NULL)) {
    p = mp_put_delta(p, h, MP_EV_NEW8, &st->new_addr, (uint64_t)(uintptr_t)res);
    s->pos = mp_put_uleb_near(p, nsize);
    mp_settle(s);
  } else {
    st->old_addr = old;
    st->last_node = last_node;
  }
  mp_leave(s);
  return res;
}

/* The hook's calls that are not recorded (recording stopped). */
static MP_NOINLINE void *not_recording(mp_state *s, void *ptr, size_t osize,
				       size_t nsize)
{
  mp_sink_limited(s);
  mp_leave(s);
  return s->orig_f(s->orig_ud, ptr, osize, nsize);
}

/* The hook's event after a time mark is due: the mark, then the event. */
static MP_NOINLINE void *tick_then(mp_state *s, void *ptr, size_t osize,
				   size_t nsize)
{
  mp_stack_time_mark(s);
  if (nsize == 0) return stack_free(s, ptr, osize);
  return stack_alloc(s, ptr, osize, nsize);
}

/* The lua_Alloc installed while profiling with stacks; ud is the state.
** Every call out of it is a tail call, so that the common free (outside
** compiled code, of no block that may be a prototype or a trace: billed
** to INTERNAL) is recorded and forwarded without saving a register. */
void *mp_hook_alloc_stacks(void *ud, void *ptr, size_t osize, size_t nsize)
{
  mp_state *s = (mp_state *)ud;
  int32_t vst;
  uint8_t *p, *h;
  mp_enter(s);
  if (MP_UNLIKELY(!__atomic_load_n(&s->recording, __ATOMIC_RELAXED)))
    return not_recording(s, ptr, osize, nsize);
  if (MP_UNLIKELY(--s->st.tick == 0)) return tick_then(s, ptr, osize, nsize);
  if (nsize) return stack_alloc(s, ptr, osize, nsize);
  vst = ((global_State *)s->g)->vmstate;
  if (MP_UNLIKELY(osize >= s->sym_min || mp_free_may_trace(vst)))
    return stack_free(s, ptr, osize);
  h = p = s->pos;	/* As mp_stack_put_free() writes it: INTERNAL. */
  *p++ = MP_AEV_FREE | MP_SRC_INTERNAL;
  p = mp_put_delta(p, h, MP_EV_OLD8, &s->st.old_addr, (uint64_t)(uintptr_t)ptr);
  s->pos = mp_put_uleb_near(p, osize);
  if (MP_UNLIKELY(s->pos >= s->lim)) return free_flush(s, ptr, osize);
  mp_leave(s);
  return s->orig_f(s->orig_ud, ptr, osize, 0);
}

/* -- Native events (mp_native.c) ------------------------------------------ */

/* See mp_stack.h. */
uint32_t mp_stack_here(mp_state *s, const void *from, int *own)
{
  mp_at at;
  uint32_t id = capture_at(s, from, 0, &at);
  if (own) *own = at == MP_AT_VM;
  return at == MP_AT_HOST ? 0 : id;	/* Only there is the host on top
					   (not read from the node: one
					   cache miss less per event). */
}

/* See mp_stack.h. */
uint32_t mp_stack_child(mp_state *s, uint32_t parent, const mp_snode *f)
{
  return mp_node_of(s, parent, f);
}

/* See mp_stack.h. */
void mp_stack_event(mp_state *s, int ev, uint32_t node, uint64_t oaddr,
		    uint64_t osize, uint64_t naddr, uint64_t nsize)
{
  mp_stacks *st = &s->st;
  uint8_t *h = s->pos, *p = mp_put_where(st, h, ev, node);
  if (ev & MP_AEV_FREE) {
    p = mp_put_delta(p, h, MP_EV_OLD8, &st->old_addr, oaddr);
    p = mp_put_uleb_fast(p, osize);
  }
  if (ev & MP_AEV_ALLOC) {
    p = mp_put_delta(p, h, MP_EV_NEW8, &st->new_addr, naddr);
    p = mp_put_uleb_fast(p, nsize);
  }
  s->pos = p;
  mp_settle(s);
}
