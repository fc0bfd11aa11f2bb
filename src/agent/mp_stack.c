/*
** mp_stack.c: the hook of the stacks mode: every allocation and
** reallocation carries its call stack.
**
** The stack is walked with the one frame walker (mp_frame.c), innermost
** frame first, up to the depth asked for (deeper stacks end in a CUT frame
** so that nothing is silently merged). Stacks are interned as a tree of
** nodes (parent node, frame), root first: a new node is written into the
** stream once (MP_X_NODE, see src/format/mp_ext.h) and events carry the id
** of their innermost node. Addresses are written as differences to the
** previous address of the same role, which halves an event's bytes.
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
**   stacks met before  a memo by the top frame (slot, link, function, pc)
**                    holding the words that validate the frames below it,
**                    for loops whose stacks repeat without being
**                    consecutive; it rests when it seldom finds a stack
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
** (see trace_ret()), and mapped through the trace's snapshots (each knows
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
#include "lj_ir.h"
#include "lj_ircall.h"
#include "lj_tab.h"

#include "mp_agent.h"
#include "mp_frame.h"
#include "mp_sym.h"

#define SCAN_BYTES	16384	/* C stack searched for a trace's code. */

/* -- Nodes ---------------------------------------------------------------- */

/* Hash of a node: its parent and its frame. */
static inline uint64_t node_hash(uint32_t parent, const mp_snode *f)
{
  return mp_hash_mix(((uint64_t)parent << 32 | f->b) ^
		     mp_hash_mix(f->a + ((uint64_t)f->kind << 58)));
}

static inline int same_frame(const mp_snode *x, const mp_snode *y)
{
  return x->a == y->a && x->b == y->b && x->kind == y->kind;
}

/* Write the name record of builtin ffid once. */
static void want_builtin(mp_state *s, uint64_t id)
{
  char name[256];
  size_t n;
  uint8_t *p, *len;
  if (id < 256) {	/* A fast function, by its ffid. */
    if (s->st.ffdone[id]) return;
    s->st.ffdone[id] = 1;
  } else if (mp_hash_add(&s->st.luabuiltins, id) <= 0) {
    return;	/* Written already (or no memory: its frames stay unnamed). */
  }
  n = mp_names_builtin(&s->builtins, id, name, sizeof(name));
  p = s->pos;
  *p++ = MP_XREC;
  *p++ = MP_X_BUILTIN;
  len = p++;	/* The payload is shorter than 128 + 16 bytes... */
  p = mp_put_uleb(p, id);
  p = mp_put_uleb(p, n);
  memcpy(p, name, n);
  p += n;
  if ((size_t)(p - len - 1) >= 0x80) {	/* ...or takes two length bytes. */
    memmove(len + 2, len + 1, (size_t)(p - len - 1));
    p++;
    len[0] = (uint8_t)(((size_t)(p - len - 2) & 0x7f) | 0x80);
    len[1] = (uint8_t)((size_t)(p - len - 2) >> 7);
  } else {
    *len = (uint8_t)(p - len - 1);
  }
  s->pos = p;
  mp_settle(s);
}

/* Write the symbol a frame refers to, if not written yet. */
static void want_symbol(mp_state *s, const mp_snode *f)
{
  switch (f->kind) {
  case MP_FK_LUA: mp_want_proto(s, (const GCproto *)(uintptr_t)f->a); break;
  case MP_FK_C: mp_sym_cfunc(s, (const void *)(uintptr_t)f->a); break;
  case MP_FK_TRACE:
    mp_want_trace(s, (global_State *)s->g, (TraceNo)f->a);
    break;
  case MP_FK_BUILTIN: want_builtin(s, f->a); break;
  }
}

/* Write the record of a new node (its symbols first). */
static void write_node(mp_state *s, uint32_t parent, const mp_snode *f)
{
  uint8_t body[40], *q = body, *p;
  want_symbol(s, f);
  q = mp_put_uleb(q, parent);
  *q++ = f->kind;
  switch (f->kind) {
  case MP_FK_LUA: q = mp_put_uleb(q, f->a); q = mp_put_uleb(q, f->b); break;
  case MP_FK_BUILTIN: q = mp_put_uleb(q, f->a); break;
  case MP_FK_C: case MP_FK_TRACE: case MP_FK_CUT: case MP_FK_NATIVE:
  case MP_FK_THREAD:
    q = mp_put_uleb(q, f->a);
    break;
  }
  p = s->pos;
  *p++ = MP_XREC;
  *p++ = MP_X_NODE;
  *p++ = (uint8_t)(q - body);	/* At most 33 bytes. */
  memcpy(p, body, (size_t)(q - body));
  s->pos = p + (q - body);
  mp_settle(s);
}

/* Where node (parent, f) is looked for first in st->recent: cheaper to
** compute than node_hash(), and the kind rarely tells nodes apart. */
static MP_INLINE uint32_t recent_slot(uint32_t parent, const mp_snode *f)
{
  uint64_t k = f->a ^ ((uint64_t)f->b << 40) ^
	       ((uint64_t)parent * 0x9e3779b97f4a7c15ull);
  return (uint32_t)((k * 0xff51afd7ed558ccdull) >> (64 - MP_RECENT_BITS));
}

/* node_of() past st->recent: the node table, or a new node. */
static MP_NOINLINE uint32_t node_find(mp_state *s, uint32_t parent,
				      const mp_snode *f)
{
  mp_stacks *st = &s->st;
  uint64_t h = node_hash(parent, f);
  mp_hash_iter it;
  uint32_t *v, id, *recent = &st->recent[recent_slot(parent, f)];
  mp_snode *n;
  for (v = mp_hash_first(&st->index, h, &it); v; v = mp_hash_next(&st->index, &it)) {
    n = &st->node[*v];
    if (n->parent == parent && same_frame(n, f)) {
      *recent = *v;
      return st->base + *v + 1;
    }
  }
  if (st->n == st->cap) {
    uint32_t cap = st->cap ? st->cap * 2 : 1024;
    mp_snode *a = realloc(st->node, (size_t)cap * sizeof(*a));
    if (!a) return 0;
    st->node = a;
    st->cap = cap;
  }
  if (mp_hash_insert(&st->index, h, st->n) < 0) return 0;
  *recent = st->n;
  n = &st->node[st->n++];
  *n = *f;
  n->parent = parent;
  id = st->base + st->n;	/* Ids start at 1. */
  write_node(s, parent, f);
  return id;
}

/* The id of node (parent, f), made and written if it is new; 0 when out
** of memory (the event then has no stack). Most lookups are of a node met
** a few events ago: a direct-mapped cache of node indexes answers them
** inline, without the hash table. */
static MP_INLINE uint32_t node_of(mp_state *s, uint32_t parent,
				  const mp_snode *f)
{
  mp_stacks *st = &s->st;
  uint32_t r = st->recent[recent_slot(parent, f)];
  if (r < st->n) {
    const mp_snode *n = &st->node[r];
    if (n->parent == parent && same_frame(n, f)) return st->base + r + 1;
  }
  return node_find(s, parent, f);
}

/* Node id, made since the last forget (id > st->base). */
static inline const mp_snode *node_at(const mp_stacks *st, uint32_t id)
{
  return &st->node[id - st->base - 1];
}

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

/* -- The cache of the last stack ----------------------------------------- */

/* The words of frame slot f that hold its link and its function (with
** one-slot frames, one word holds both). */
static inline const uint64_t *link_word(const TValue *f)
{
  return &f->u64;
}

static inline const uint64_t *func_word(const TValue *f)
{
  return &(f - LJ_FR2)->u64;
}

/* The word of continuation frame f that holds the pc its caller called it
** from (frame_contpc). */
static inline const uint64_t *cont_pc_word(const TValue *f)
{
  return &(f - 1 - LJ_FR2)->u64;
}

/* Are the frames c[0..j) of the last stack still in their slots, under
** frame c[j], which is (it was reached from the top, and holds what it
** held)? Below a frame that is in the current stack, a slot that holds the
** same link as before has the same caller at the same slot, and so on
** down. A frame's function needs no check when the frame above it was
** called from Lua: its link points into that function's bytecode (which
** cannot belong to another prototype: the cache is dropped when one
** dies). The words to compare are listed when the frames are cached (see
** remember()): this runs for every allocation, one load per Lua frame.
** The callers make sure that c[0] is in the running coroutine's stack:
** the last stack may have been another one's, in memory the VM has freed
** since, which is not read. */
static MP_INLINE int still_same(const mp_sword *w, unsigned n)
{
  const mp_sword *end = w + n;
  for (; end - w >= 4; w += 4)	/* One branch for four words. */
    if ((*w[0].at ^ w[0].v) | (*w[1].at ^ w[1].v) |
	(*w[2].at ^ w[2].v) | (*w[3].at ^ w[3].v))
      return 0;
  for (; w < end; w++)
    if (*w->at != w->v) return 0;
  return 1;
}

static MP_INLINE int still_there(const mp_stacks *st, unsigned j)
{
  return still_same(st->words, st->c[j].nwords);
}

/* Is frame slot f, reached from the top, frame c[j] of the last stack,
** with the frames below it in place? */
static MP_INLINE int in_place(const mp_stacks *st, unsigned j,
			      const TValue *f)
{
  const mp_scache *e = &st->c[j];
  return e->link == frame_ftsz(f) && e->fn == (const void *)frame_gc(f) &&
	 still_there(st, j);
}

/* The lowest slot the cache of the last stack reads: c[0]'s, or for a
** cut stack the one below it. A cache whose bot is at or below a stack's
** base (bot) is another coroutine's: not read. */
static MP_INLINE const TValue *cache_bot(const mp_stacks *st)
{
  return (const TValue *)(st->cbelow ? st->cbelow : st->c[0].slot);
}

/* Whether a stack of n frames may come from the cache of the last stack:
** n frames are within the depth, and for a cut stack exactly the depth
** (the walk cuts there because a frame follows c[0]; a shorter stack
** goes on below it, a longer one is cut higher). */
static MP_INLINE int cache_fits(const mp_stacks *st, unsigned n)
{
  return st->cbelow ? n == st->depth : n <= st->depth;
}

/* Cache walked frame w (node id) as frame c[i] of the last stack, c[0..i)
** being set, with the words that say frame c[i-1] is in place: its link,
** its function unless w was called from Lua, for a vararg frame the link
** above its arguments, which says where its call's link is, and for a
** frame called through a continuation (a stitched builtin, a metamethod)
** the continuation's pc, which says c[i-1]'s line (seed 63 of the stack
** check: the iterators of two gmatch loops of one function, at one slot
** and one address, the second billed to the first loop's line). */
static MP_INLINE void remember(mp_stacks *st, unsigned i, const mp_wframe *w,
			       uint32_t id)
{
  mp_scache *e = &st->c[i];
  const TValue *f = (const TValue *)w->slot;
  unsigned k = 0;
  e->slot = f;
  e->link = frame_ftsz(f);
  e->fn = (const void *)frame_gc(f);
  e->pc = w->pc;
  e->frame = w->frame;
  e->id = id;
  e->cpc = w->cpc;
  if (i == 0 && st->cbelow) {	/* A cut stack: the frame below c[0] is
				   the same object, so it is still there to
				   cut (see cache_bot()). */
    st->words[0].at = func_word((const TValue *)st->cbelow);
    st->words[k++].v = *func_word((const TValue *)st->cbelow);
  }
  if (i > 0) {
    const TValue *below = (const TValue *)st->c[i - 1].slot;
    const TValue *m = (e->link & FRAME_TYPE) == FRAME_LUA ? frame_prevl(f) :
							   frame_prevd(f);
    k = st->c[i - 1].nwords;
    st->words[k].at = link_word(below);
    st->words[k++].v = *link_word(below);
    if ((e->link & FRAME_TYPE) != FRAME_LUA) {
      st->words[k].at = func_word(below);
      st->words[k++].v = *func_word(below);
    }
    if (m != below) {	/* A vararg frame: its link above its arguments
			   says where its call's link is. */
      st->words[k].at = link_word(m);
      st->words[k++].v = *link_word(m);
    }
    if (frame_iscont(f)) {	/* Called through a continuation: the pc
				   of its caller, c[i-1], is in it. */
      st->words[k].at = cont_pc_word(f);
      st->words[k++].v = *cont_pc_word(f);
    }
  }
  e->nwords = k;
}

/* -- Stacks met before --------------------------------------------------- */

/* The slot of frame f that holds its call's link (a vararg function's
** frame was moved above its arguments), as the walker reports it. */
static MP_INLINE const TValue *link_slot(const TValue *f)
{
  return frame_isvarg(f) ? frame_prevd(f) : f;
}

/* The way to fill next in two-way set number set (its ways take turns;
** next holds each set's). */
static MP_INLINE unsigned set_turn(uint8_t *next, size_t set)
{
  unsigned way = next[set];
  next[set] ^= 1;
  return way;
}

/* Copy the n words of the last stack to w; the lowest address among
** theirs and low. */
static MP_INLINE const void *copy_words(mp_sword *w, const mp_sword *words,
					unsigned n, const void *low)
{
  unsigned i;
  for (i = 0; i < n; i++) {
    w[i] = words[i];
    if ((const void *)words[i].at < low) low = words[i].at;
  }
  return low;
}

/* The set of the memo where a stack with top frame t at pc goes. */
static MP_INLINE mp_memo *memo_set(mp_stacks *st, const TValue *t,
				   const BCIns *pc, uint64_t link)
{
  uint64_t k = ((uint64_t)(uintptr_t)t ^ link ^
		((uint64_t)(uintptr_t)pc << 17)) * 0x9e3779b97f4a7c15ull;
  return &st->memo[(k >> (64 - MP_MEMO_BITS)) * 2];
}

/* The node of the stack whose top frame t runs at pc, if it was met
** before (see mp_memo), else 0. Only the words at or above stack, the
** running coroutine's stack, are read: a stack met in another coroutine
** may lie in memory the VM has freed since. */
static MP_INLINE uint32_t memo_find(mp_stacks *st, const TValue *t,
				    const BCIns *pc, const TValue *stack)
{
  uint64_t link = *link_word(t), fn = *func_word(t);
  mp_memo *m = memo_set(st, t, pc, link);
  unsigned i;
  for (i = 0; i < 2; i++, m++)
    if (m->top == (const void *)t && m->link == link && m->fn == fn &&
	m->pc == (const void *)pc && m->low >= (const void *)stack &&
	still_same(m->w, m->n)) {
      st->memo_use.hits++;
      return m->id;
    }
  return 0;
}

/* Remember the stack just captured, node id, whose top frame t runs at
** pc, if the cache of the last stack holds it whole (down to its bottom,
** or to its CUT with the word below: see mp_stacks.cbelow; t at its top
** at that pc) and its words fit. A vararg frame (every main chunk is
** one) is held by the slot of its call: the link there is compared too
** (the function there is not: the walk reads the one above its
** arguments, which memo_find() compares). */
static MP_INLINE void memo_add(mp_stacks *st, const TValue *t,
			       const BCIns *pc, uint32_t id)
{
  const TValue *ls = link_slot(t);
  const mp_scache *e;
  mp_memo *m;
  const void *low = t;
  unsigned n, k = ls != t;	/* A vararg frame: the word of the slot of
				   its call too. */
  if (!st->nc) return;
  e = &st->c[st->nc - 1];
  n = e->nwords;
  if (e->id != id || e->pc != (const void *)pc || !pc ||
      e->slot != (const void *)ls || n + k > MP_MEMO_WORDS)
    return;
  m = memo_set(st, t, pc, *link_word(t));
  m += set_turn(st->memo_next, (size_t)(m - st->memo) / 2);
  if (k) {
    m->w[0].at = link_word(ls);
    m->w[0].v = *link_word(ls);
    low = link_word(ls);
  }
  low = copy_words(m->w + k, st->words, n, low);
  n += k;
  m->top = t;
  m->link = *link_word(t);
  m->fn = *func_word(t);
  m->pc = pc;
  m->low = low;
  m->id = id;
  m->n = n;
}

/* At a time mark: a memo that found less than 1/k of the stacks it was
** asked for since the last one costs more than it saves (adding a stack
** costs about what a walk does, and a program whose stacks seldom repeat,
** such as a recursion that visits every path of a tree once, would pay
** for each event): it rests, for one mark after one such failure, for
** twice as many after each next one (up to MP_MEMO_REST), then tries
** again. The memo of stacks met before breaks even at about a third; the
** memo of compiled code at about a half, as a miss there is followed by
** the whole capture (binary-trees with the JIT found 36 % of its stacks
** there, and lost 4 % of the agent's instructions to it at k = 3). */
static MP_INLINE void memo_window(mp_memouse *u, uint32_t k)
{
  if (u->rest) {
    u->rest--;
  } else if (u->hits * k < u->probes) {
    u->rest = u->fails < 5 ? 1u << u->fails : MP_MEMO_REST;
    u->fails++;
  } else {
    u->fails = 0;
  }
  u->probes = u->hits = 0;
}

/* -- Capture -------------------------------------------------------------- */

#ifdef MP_STACK_CHECK
/* The checked build (make all: build/stackcheck/): what a shortcut finds
** is found again the long way, and a difference aborts. */
static MP_NOINLINE void check_failed(const char *what, uint64_t got,
				     uint64_t want)
{
  char msg[200];
  int n = snprintf(msg, sizeof(msg),
		   "ljmemprof stack check: %s: %llu, the long way: %llu\n",
		   what, (unsigned long long)got, (unsigned long long)want);
  if (write(2, msg, (size_t)n) < 0) abort();
  abort();
}

/* Print the frames of node id, innermost first. */
static void print_node(const mp_stacks *st, const char *what, uint32_t id)
{
  fprintf(stderr, "%s:", what);
  while (id > st->base && id - st->base - 1 < st->n) {
    const mp_snode *n = node_at(st, id);
    fprintf(stderr, " %u=%d:%llx:%u", id, n->kind, (unsigned long long)n->a, n->b);
    id = n->parent;
  }
  fprintf(stderr, "\n");
}
#endif

/* Node frame of Lua function fn running at pc (the pc saved for it; NULL
** if none is known) into *f. A pc outside fn's bytecode may be in the
** copy of a trace's first instruction (see mp_lua_pos()), unless the
** caller knows it points into a prototype's bytecode (exact): then it
** names no line, which spares the search. Returns pc if it is in fn's
** bytecode (the same pc in the same function is the same line), else
** NULL. */
static MP_INLINE const BCIns *lua_frame(mp_state *s, GCfunc *fn,
					const BCIns *pc, int exact,
					mp_snode *f)
{
  GCproto *pt = funcproto(fn);
  int32_t pos = mp_lua_pos_in(fn, pc);
  const BCIns *in = pos >= 0 ? pc : NULL;
  if (pos < 0 && !exact) pos = mp_lua_pos_outside(fn, pc, (global_State *)s->g);
#ifdef MP_STACK_CHECK
  else if (pos < 0 && mp_lua_pos_outside(fn, pc, (global_State *)s->g) >= 0)
    check_failed("an exact pc in a trace's copy", (uintptr_t)pc, 0);
#endif
  f->kind = MP_FK_LUA;
  f->a = (uint64_t)(uintptr_t)pt;
  f->b = pos >= 0 ? (uint32_t)mp_proto_line(pt, (BCPos)pos)
		  : (uint32_t)pt->firstline;
  return in;
}

/* Frame fr (a Lua, C or builtin frame of a walk) as a node frame into
** *w (exact: see lua_frame()). */
static inline void frame_of(mp_state *s, const mp_frame *fr, int exact,
			    mp_wframe *w)
{
  mp_snode *f = &w->frame;
  w->slot = fr->slot;
  w->pc = NULL;
  w->cpc = fr->kind == MP_FR_LUA && fr->cpc;
  if (fr->kind == MP_FR_LUA) {
    w->pc = lua_frame(s, fr->fn, fr->pc, exact, f);
  } else if (fr->kind == MP_FR_C) {
    f->kind = MP_FK_C;
    f->a = mp_cfunc_id(s, fr->fn);	/* cjson.safe.decode's closure. */
    f->b = 0;
  } else {
    f->kind = MP_FK_BUILTIN;	/* By ffid, or a Lua one by its prototype. */
    f->a = isluafunc(fr->fn) ? (uint64_t)(uintptr_t)funcproto(fr->fn)
			     : fr->fn->c.ffid;
    f->b = 0;
  }
}

/* The node of Lua function fn at pc (exact: see lua_frame()) on node
** parent, and its frame into *f; *in as lua_frame() returns; 0 when out of
** memory. A pc in a prototype's bytecode is one line of it, so the node
** of (parent, pc) is kept in a direct-mapped cache, which spares the line
** lookup and the node table. Its entries name prototypes whose symbols
** are written (they are in nodes): when one dies, mp_stack_forget()
** empties the cache with the nodes. */
static MP_INLINE uint32_t lua_node(mp_state *s, uint32_t parent, GCfunc *fn,
				   const BCIns *pc, int exact, mp_snode *f,
				   const BCIns **in)
{
  mp_stacks *st = &s->st;
  const GCproto *pt = funcproto(fn);
  uint64_t k = ((uint64_t)(uintptr_t)pc ^ parent) * 0x9e3779b97f4a7c15ull;
  mp_pcnode *e = &st->pcnode[k >> (64 - MP_PCNODE_BITS)];
  uint32_t id;
  if (e->pc == (const void *)pc && e->parent == parent && e->pt == pt && pc) {
    f->kind = MP_FK_LUA;
    f->a = (uint64_t)(uintptr_t)pt;
    f->b = e->line;
    *in = pc;
    return e->id;
  }
  *in = lua_frame(s, fn, pc, exact, f);
  id = node_of(s, parent, f);
  if (id && *in) {
    e->pc = pc;
    e->pt = pt;
    e->parent = parent;
    e->id = id;
    e->line = f->b;
  }
  return id;
}

/* Intern the n walked frames st->walk[0..n) (innermost first) on node
** `node`, outermost first, and cache them above c[0..keep) unless the walk
** was cut: the node of the whole stack into *id; 0 when out of memory
** (then the cache is dropped), else 1. A frame that the last stack had at
** the same depth on the same node (same: node is c[keep-1]'s, as it was)
** is that node again, without a lookup; a Lua frame at the pc the last
** stack's frame there had in the same function is at its line. A walk cut
** at the depth, below (walk[n-1] is the CUT, keep 0) the frame slot after
** the deepest frame kept (see mp_stacks.cbelow), is cached above its CUT:
** the stack at that depth, whatever lies below, costs no walk again. */
static MP_INLINE int intern_walked(mp_state *s, unsigned n, uint32_t node,
				   unsigned keep, int same, int cut,
				   const TValue *below, uint32_t *id)
{
  mp_stacks *st = &s->st;
  unsigned old;
  /* Frames are cached up to the first whose line the stack does not say
  ** (see mp_scache.cpc): the words that validate the frames above it
  ** would not tell that its line moved. */
  int hold = !cut && !(keep && st->c[keep - 1].cpc);
  if (!keep) {	/* A new cache: of a whole stack, unless cut... */
    uint32_t was_parent = st->cparent;
    st->cbelow = NULL;
    st->cparent = 0;
    if (cut && below && n > 1) {	/* ...and cached above its CUT. */
      if (!(node = node_of(s, node, &st->walk[--n].frame))) {
	st->nc = 0;
	*id = 0;
	return 0;
      }
      st->cbelow = below;
      st->cparent = node;
      hold = 1;
      cut = 0;
    }
    same = same && node == was_parent;	/* The last stack's c[0] was on
					   it. */
  }
  old = cut ? 0 : st->nc;
  while (n-- > 0) {
    mp_wframe *w = &st->walk[n];
    const mp_scache *e = &st->c[keep];
    uint32_t was = keep < old ? e->id : 0;
    if (!w->frame.kind &&	/* Its line, unless the last stack had it. */
	!(keep < old && e->pc == w->pc && w->pc && e->fn == w->fn)) {
      const BCIns *in;
      node = lua_node(s, node, (GCfunc *)w->fn, (const BCIns *)w->pc,
		      w->exact, &w->frame, &in);
      w->pc = in;
    } else {
      if (!w->frame.kind) w->frame = e->frame;
      node = same && keep < old && same_frame(&e->frame, &w->frame) ? was :
	     node_of(s, node, &w->frame);
    }
    if (!node) {
      st->nc = 0;
      *id = 0;
      return 0;
    }
    same = node == was;
    if (hold) {
      remember(st, keep++, w, node);
      hold = !w->cpc;
    }
  }
  st->nc = cut ? 0 : keep;
  *id = node;
  return 1;
}

/* The node of the stack walked by w into *id (0: no frames). Only the
** frames above the part of the last stack that is still in place are
** walked and looked up; the rest comes from the cache. 0 when out of
** memory, else 1. */
static MP_NOINLINE int walk_stack(mp_state *s, mp_walk *w, uint32_t *id)
{
  mp_stacks *st = &s->st;
  mp_scache *c = st->c;
  mp_frame fr;
  unsigned n = 0, keep = 0;
  int j = (int)st->nc - 1, cut = 0, all_builtins = 1;
  const TValue *below = NULL;	/* A cut stack's cbelow. */
  if (j >= 0 && cache_bot(st) <= w->bot) j = -1;	/* Another stack. */
  for (;;) {
    mp_wframe *f = &st->walk[n];
    const TValue *next = w->f;	/* Where the walk looks next. */
    if (!mp_walk_next(w, &fr)) {
      /* Builtins alone on the main thread's stack were called by the
      ** host, directly or as a tail call of a Lua function it called:
      ** the host is below them, as in the one-frame stream (walk_loc()
      ** in mp_hook.c). Such a stack is not cached (its host frame has no
      ** slot). */
      if (n && all_builtins && w->left && w->L == mainthread(G(w->L))) {
	mp_sym_host(s);
	f->frame.kind = MP_FK_HOST;
	f->frame.a = 0;
	f->frame.b = 0;
	n++;
	cut = 1;
      }
      break;
    }
    /* Deeper than asked: cut; but not before the frame that the
    ** one-frame stream bills (the first that is not a builtin, within
    ** MP_SITE_SLACK more frames), so that a stack profile's sites are the
    ** same at any depth. Cached when it is cut at the depth itself below
    ** a frame that is not a builtin (then a stack of depth frames from the
    ** cache is cut there: see cache_fits()), and the frame cut off is the
    ** one right below (no frame the walk skips between). */
    if (n >= st->depth &&
	(!all_builtins || n >= st->depth + MP_SITE_SLACK)) {
      if (n == st->depth && st->walk[n - 1].frame.kind != MP_FK_BUILTIN &&
	  fr.slot == link_slot(next) && next > w->bot)
	below = next;
      f->frame.kind = MP_FK_CUT;
      f->frame.a = st->depth;
      f->frame.b = 0;
      n++;
      cut = 1;
      break;
    }
    /* A pc the walk was given is in a prototype's bytecode (a trace's
    ** start: see locate()), and so is any frame's that equals it. */
    frame_of(s, &fr, fr.pc == w->toppc, f);
    all_builtins &= f->frame.kind == MP_FK_BUILTIN;
    n++;
    while (j >= 0 && (const TValue *)c[j].slot > fr.slot) j--;
    if (j >= 0 && c[j].slot == fr.slot) {
      if (in_place(st, (unsigned)j, fr.slot)) {
	/* Frames 0..j are in place; frame j's line comes from the walk.
	** Unless they and the frames above them are too many (or, below a
	** cut, too few): then the walk goes on, without the cache. */
	if (!cache_fits(st, (unsigned)j + n) ||
	    (!j && st->cbelow && !same_frame(&c[0].frame, &f->frame))) {
	  j = -1;	/* (A new c[0] of a cut stack: walked to the cut.) */
	  continue;
	}
	keep = (unsigned)j;
	if (same_frame(&c[j].frame, &f->frame)) {
	  c[j].cpc = f->cpc;	/* Its line may come from elsewhere now. */
	  keep++;
	  n--;
	}
	break;
      }
      j--;
    }
  }
  if (n > st->depth) cut = 1;	/* Past the depth: not cached either. */
  return intern_walked(s, n, keep ? c[keep - 1].id : 0, keep, 1, cut,
		       below, id);
}


/* quick_stack()'s commonest case, by itself: Lua frame t (not a vararg
** one), running fn at pc, was called from Lua by frame c[k] of the last
** stack, which is still in place (perhaps at another line): its caller's
** node, then t's, each looked up only if its line changed, and t becomes
** the top of the cache. The recursion that builds a tree takes this path
** for nearly every allocation (a sibling replaces the last top, or a
** child is called by it). 0 when the stack is not of that shape or is to
** be cut, else 1 (*id = 0: out of memory). */
static MP_INLINE int push_one(mp_state *s, const TValue *t, GCfunc *fn,
			      const BCIns *pc, int exact, uint32_t *id)
{
  mp_stacks *st = &s->st;
  mp_scache *c = st->c, *e, *top;
  const TValue *p, *ps;
  const BCIns *in;
  mp_snode f;
  uint32_t node, was;
  int k = (int)st->nc - 1;
  if (!frame_islua(t)) return 0;
  p = frame_prevl(t);	/* The caller's frame: its link may be below. */
  ps = link_slot(p);
  while (k >= 0 && (const TValue *)c[k].slot > ps) k--;
  if (k < 0 || c[k].slot != ps || !cache_fits(st, (unsigned)k + 2) ||
      ps > p || !in_place(st, (unsigned)k, ps) ||
      (ps != p && (const void *)frame_func(p) != c[k].fn))
    return 0;
  e = &c[k];
  e->cpc = 0;	/* Its line comes from t's link now. */
  node = was = e->id;
  if (e->frame.kind == MP_FK_LUA && e->pc != frame_pc(t)) {
    /* The caller is at another call: its line, its node. */
    node = lua_node(s, k ? c[k - 1].id : st->cparent, (GCfunc *)e->fn,
		    frame_pc(t), 0, &f, &in);
    if (!node) goto oom;
    e->frame = f;
    e->id = node;
    e->pc = in;
  }
  top = &c[k + 1];
  if ((unsigned)k + 1 < st->nc && node == was && top->fn == (const void *)fn &&
      top->pc == (const void *)pc && pc) {
    node = top->id;	/* The same function at the same pc on the same node. */
  } else {
    if (!(node = lua_node(s, node, fn, pc, exact, &f, &in))) goto oom;
    top->fn = fn;
    top->pc = in;
    top->frame = f;
    top->id = node;
  }
  top->slot = t;
  top->link = frame_ftsz(t);
  /* t was called from Lua: the link of its caller's slot says the rest. */
  st->words[e->nwords].at = link_word(ps);
  st->words[e->nwords].v = *link_word(ps);
  top->nwords = e->nwords + 1;
  if (ps != p) {	/* See remember(). */
    st->words[top->nwords].at = link_word(p);
    st->words[top->nwords++].v = *link_word(p);
  }
  st->nc = (unsigned)k + 2;
  *id = node;
  return 1;
oom:
  st->nc = 0;
  *id = 0;
  return 1;
}

/* The node of the stack from frame t down into *id, where t runs Lua
** function fn at pc (exact: see lua_frame()), in the common case: the
** frames from t down to a frame of the last stack that is still in place
** run Lua functions, each called from the next one. The frames are the
** ones walk_stack() would find, without the walker's generality (the
** checked build compares them). 0 when the stack is not of that shape or
** the walker is to cut it, else 1 (*id = 0: out of memory). */
static MP_INLINE int quick_stack(mp_state *s, TValue *t, GCfunc *fn,
				 const BCIns *pc, int exact, const TValue *bot,
				 uint32_t *id)
{
  mp_stacks *st = &s->st;
  mp_scache *c = st->c, *e;
  int j = (int)st->nc - 1;
  unsigned n = 0;
  const TValue *f = t, *fs;
  uint32_t node;
  if (j < 0 || cache_bot(st) <= bot) return 0;
  /* Most often t is the top of the last stack, at the same pc. */
  e = &c[j];
  fs = link_slot(t);
  if (e->slot == fs && pc == e->pc && pc && (fs == t || (const void *)fn == e->fn) &&
      cache_fits(st, (unsigned)j + 1) && in_place(st, (unsigned)j, fs)) {
    *id = e->id;
    return 1;
  }
  if (fs == t && push_one(s, t, fn, pc, exact, id)) return 1;
  for (;;) {	/* Frame f runs fn at pc: is it a frame of the last stack? */
    fs = link_slot(f);
    if (fs > f || n >= st->depth) return 0;
    while (j >= 0 && (const TValue *)c[j].slot > fs) j--;
    if (j < 0) return 0;
    if (c[j].slot == fs) {
      if (in_place(st, (unsigned)j, fs) &&
	  (fs == f || (const void *)fn == c[j].fn))
	break;
      j--;
    }
    /* No: a new frame, then its caller if that called it from Lua. */
    if (fn->c.gct != ~LJ_TFUNC || !isluafunc(fn) || mp_lua_builtin(fn))
      return 0;
    st->walk[n].frame.kind = 0;	/* Its line: see intern_walked(). */
    st->walk[n].slot = fs;
    st->walk[n].pc = pc;
    st->walk[n].fn = fn;
    st->walk[n].exact = exact;
    st->walk[n].cpc = 0;
    n++;
    if (!frame_islua(fs)) return 0;
    f = frame_prevl(fs);
    if (f >= fs || f <= bot) return 0;
    fn = frame_func(f);
    pc = frame_pc(fs);
    exact = 0;
  }
  /* Frame f is c[j], in place, perhaps at another line; then the new
  ** frames above it. */
  if (!cache_fits(st, (unsigned)j + n + 1)) return 0;
  e = &c[j];
  e->cpc = 0;	/* On top, or called from Lua by the frame above it. */
  node = e->id;
  if (e->frame.kind == MP_FK_LUA && (pc != e->pc || !pc)) {
    mp_snode lf;
    const BCIns *in;
    if (!(node = lua_node(s, j ? c[j - 1].id : st->cparent, fn, pc, exact,
			  &lf, &in))) {
      st->nc = 0;
      *id = 0;
      return 1;
    }
    e->frame = lf;
    e->pc = in;
  }
  if (n) {
    intern_walked(s, n, node, (unsigned)j + 1, node == e->id, 0, NULL, id);
  } else {
    st->nc = (unsigned)j + 1;
    *id = node;
  }
  e->id = node;
  return 1;
}

/* The first word on the C stack above `from` that points into trace T's
** code, or 0. The same call path into the VM puts it at the same distance
** from the hook's frame: the last two distances are tried first. This
** may find a stale word in the frame of a C function the trace called
** (the strings benchmark has one: an earlier call's return address, 43
** words below the real one), which trace_ret() does not. */
static MP_NOINLINE uintptr_t scan_ret(mp_stacks *st, const GCtrace *T,
				      const void *from)
{
  const uintptr_t *base = (const uintptr_t *)from, *w;
  const uintptr_t *end = base + SCAN_BYTES / sizeof(uintptr_t);
  uintptr_t lo = (uintptr_t)T->mcode, hi = lo + T->szmcode;
  w = base + st->scan[0];
  if (*w > lo && *w <= hi) return *w;
  w = base + st->scan[1];
  if (!(*w > lo && *w <= hi)) {
    for (w = base; w < end; w++)
      if (*w > lo && *w <= hi) break;
    if (w == end) return 0;
  }
  st->scan[1] = st->scan[0];
  st->scan[0] = (uint32_t)(w - base);
  return *w;
}

/* The return address into trace T's code of the call that led to the
** hook (from: the hook's frame), or 0. On x64 it is in a known word: the
** VM's C frame starts at L->cframe; a trace runs below it, lowered by
** what the VM adds for compiled code (CFRAME_SIZE_JIT - CFRAME_SIZE: the
** registers only traces use) and by T->spadjust (which includes a parent
** trace's), and calls C with the stack pointer there, so the call puts
** its return address just below (the checked build aborts if that word
** does not point into T's code). Elsewhere, the C stack is searched
** (scan_ret()). */
static MP_INLINE uintptr_t trace_ret(mp_stacks *st, const GCtrace *T,
				     const lua_State *L, const void *from)
{
#if LJ_TARGET_X64
  const uintptr_t *w = (const uintptr_t *)
    ((const char *)cframe_raw(L->cframe) - T->spadjust -
     (CFRAME_SIZE_JIT - CFRAME_SIZE)) - 1;
  /* (Unsigned: w is above from, within SCAN_BYTES; *w is above the
  ** trace's first byte, at most at its end.) */
  if ((uintptr_t)w - (uintptr_t)from - 1 < SCAN_BYTES - 1) {
    if (*w - (uintptr_t)T->mcode - 1 < (uintptr_t)T->szmcode) return *w;
#ifdef MP_STACK_CHECK
    /* The layout above is wrong for this VM. */
    check_failed("a return address into the trace where the VM puts it",
		 *w, scan_ret(st, T, from));
#endif
  }
#endif
  return scan_ret(st, T, from);
}

/* The prototype of Lua function fn (of the base frame of a trace), or
** NULL if fn is not one. */
static inline const GCproto *base_proto(const GCfunc *fn)
{
  if (!fn || fn->c.gct != ~LJ_TFUNC || !isluafunc(fn)) return NULL;
  return funcproto(fn);
}

/* -- The line a trace was at ----------------------------------------------
**
** A snapshot says where the interpreter resumes if a guard after it
** fails: the bytecode recorded when it was taken (for a comparison or a
** loop's entry, the way not taken). The code between two snapshots stands
** for the bytecodes recorded between their pcs, which may span several
** lines (a snapshot is taken only after a store or a call with side
** effects, and merged with the next one when no guard lies between). So
** the return address is mapped to the snapshot whose code holds its call,
** and the ways of bytecode from that snapshot's pc to the next one's (into
** the functions the trace inlined, out of those that returned, through
** the Lua functions it called and left in between) are searched for the
** instructions that can allocate in compiled code and make the call the
** return address follows (the VM function it calls tells a table
** constructor from a store or a string). When they lie on one line, that
** is the line; else the event is billed to the trace alone (a line that
** cannot allocate is never named). Done once per return address. */

#define MP_TFRAMES	(MP_INLINED_MAX + 2)	/* Frames of a snapshot. */
#define MP_TPATH	192	/* Bytecodes read per frame of a path... */
#define MP_TCALLEES	3	/* ...and calls followed into (each takes
				   2 KB of C stack in the hook). */

/* A frame of a snapshot: its prototype (NULL: not a Lua function) and,
** above the base frame, the position of the call in the frame below that
** made it. */
typedef struct mp_tframe {
  const GCfunc *fn;	/* Its closure, if known. */
  const GCproto *pt;
  BCPos call;
} mp_tframe;

/* Where a snapshot stands: its frames, base frame first (n of them, or
** only its innermost when the others are not known: partial), and the
** position of its pc in the innermost. */
typedef struct mp_tsnap {
  mp_tframe f[MP_TFRAMES];
  unsigned n;
  int partial;
  int stitch;		/* Its innermost frame is a builtin's, called from
			   the last of f (pos: unknown). */
  BCPos pos;
} mp_tsnap;

/* Snapshot sn of T into *o; base: the prototype of the trace's base frame
** (or NULL). 0 when its innermost frame is not a known Lua function. With
** 64-bit GC references a frame the trace inlined is its function (a
** constant) at a slot and its link in the slot above, flagged as a frame:
** the pc after the call in the frame below; the innermost frame's
** function slot is the low byte of the word that holds the pc (0: the
** base frame). */
static int snap_at(GCtrace *T, SnapNo sn, const GCfunc *basefn,
		   const GCproto *base, mp_tsnap *o)
{
  SnapShot *snap = &T->snap[sn];
  SnapEntry *map = &T->snapmap[snap->mapofs];
  const BCIns *pc = snap_pc(&map[snap->nent]);
  const GCproto *pt;
  MSize i;
  int top = 0;
#if LJ_FR2
  uint64_t pcbase;
  memcpy(&pcbase, &map[snap->nent], sizeof(pcbase));
  top = (int)(pcbase & 0xff);
#endif
  int done = 0;
  o->f[0].fn = base ? basefn : NULL;
  o->f[0].pt = base;
  o->f[0].call = 0;
  o->n = 1;
  o->partial = 0;
  o->stitch = 0;
#if LJ_FR2
  for (i = 1; top && i < snap->nent; i++) {
    BCReg sl = snap_slot(map[i]);
    IRIns *ir, *ifn;
    uint64_t link;
    const GCproto *below = o->f[o->n - 1].pt;
    BCPos pos;
    /* (Slot 1 is the base frame's link.) */
    if (!(map[i] & SNAP_FRAME) || sl < 3) continue;
    ir = &T->ir[snap_ref(map[i])];
    ifn = &T->ir[snap_ref(map[i - 1])];
    if (ir->o != IR_KNUM || snap_slot(map[i - 1]) != sl - 1 ||
	ifn->o != IR_KGC || irt_type(ifn->t) != IRT_FUNC ||
	o->n == MP_TFRAMES || !below)
      break;
    if (!isluafunc(ir_kfunc(ifn))) {
      /* A builtin called at the trace's end (stitched): the trace
      ** stops at its call in the frame below. */
      if ((int)sl - 1 == top) o->stitch = done = 1;
      break;
    }
    link = ir_k64(ir)->u64;
    if ((link & FRAME_TYPE) != FRAME_LUA) break;
    pos = proto_bcpos(below, (const BCIns *)(uintptr_t)link);
    if (pos == 0 || pos > below->sizebc) break;
    o->f[o->n].fn = ir_kfunc(ifn);
    o->f[o->n].pt = funcproto(ir_kfunc(ifn));
    o->f[o->n].call = pos - 1;
    o->n++;
    if ((int)sl - 1 == top) {
      done = 1;
      break;
    }
  }
  if (top && !done) {
    /* The frames between are not known: the innermost alone. */
    GCfunc *fn = NULL;
    for (i = 0; i < snap->nent; i++)
      if ((int)snap_slot(map[i]) == top) {
	IRIns *ir = &T->ir[snap_ref(map[i])];
	if (ir->o == IR_KGC && irt_type(ir->t) == IRT_FUNC)
	  fn = ir_kfunc(ir);
	break;
      }
    if (!fn || !isluafunc(fn)) return 0;
    o->f[0].fn = fn;
    o->f[0].pt = funcproto(fn);
    o->n = 1;
    o->partial = 1;
  }
#else
  /* The innermost frame: the function of the highest frame slot. */
  for (i = 0; i < snap->nent; i++)
    if ((map[i] & SNAP_FRAME) && (int)snap_slot(map[i]) > top) {
      IRIns *ir = &T->ir[snap_ref(map[i])];
      if (ir->o == IR_KGC && irt_type(ir->t) == IRT_FUNC) {
	GCfunc *fn = ir_kfunc(ir);
	top = (int)snap_slot(map[i]);
	o->f[0].fn = fn;
	o->f[0].pt = isluafunc(fn) ? funcproto(fn) : NULL;
	o->partial = 1;
      }
    }
#endif
  pt = o->f[o->n - 1].pt;
  if (!pt) return 0;
  if (o->stitch) {
    o->pos = 0;
    return 1;
  }
  o->pos = proto_bcpos(pt, pc);
  return o->pos < pt->sizebc;
}

/* Whether bytecode op can allocate in compiled code: 2 surely (it makes
** a table or a string, stores into a table, which a new key rehashes, or
** calls: a builtin the trace inlined, an FFI function), 1 only on cdata
** (arithmetic, indexing: a boxed 64-bit integer), 0 never (the trace
** itself: closures and upvalues are not compiled). The interpreter's rule
** (tests/lib/bcalloc.lua) is wider: it counts metamethods and errors. */
static int can_alloc(BCOp op)
{
  switch (op) {
  case BC_TNEW: case BC_TDUP: case BC_CAT:
  case BC_TSETV: case BC_TSETS: case BC_TSETB: case BC_TSETM: case BC_TSETR:
  case BC_GSET:
  case BC_CALL: case BC_CALLM: case BC_CALLT: case BC_CALLMT: case BC_ITERC:
    return 2;
  case BC_UNM: case BC_LEN: case BC_POW:
  case BC_ADDVN: case BC_SUBVN: case BC_MULVN: case BC_DIVVN: case BC_MODVN:
  case BC_ADDNV: case BC_SUBNV: case BC_MULNV: case BC_DIVNV: case BC_MODNV:
  case BC_ADDVV: case BC_SUBVV: case BC_MULVV: case BC_DIVVV: case BC_MODVV:
  case BC_TGETV: case BC_TGETS: case BC_TGETB: case BC_TGETR:
    return 1;
  default:
    return 0;
  }
}

/* Groups of the instructions that can allocate, by what compiled code
** calls for them (a mask of those a call can be). */
enum {
  G_TNEW = 1, G_TDUP = 2, G_SET = 4, G_CAT = 8, G_CALL = 16, G_CDATA = 32,
  G_ALL = 63
};

/* The group of bytecode op. */
static int group_of(BCOp op)
{
  switch (op) {
  case BC_TNEW: return G_TNEW;
  case BC_TDUP: return G_TDUP;
  case BC_CAT: return G_CAT;
  case BC_TSETV: case BC_TSETS: case BC_TSETB: case BC_TSETM: case BC_TSETR:
  case BC_GSET:
    return G_SET;
  case BC_CALL: case BC_CALLM: case BC_CALLT: case BC_CALLMT: case BC_ITERC:
    return G_CALL;
  default:
    return G_CDATA;
  }
}

/* The VM functions compiled code calls to make tables and table keys and
** cdata, which say what allocated (jit.util.ircalladdr). */
static const IRCallID mp_tcalls[MP_TCALLS] = {
  IRCALL_lj_tab_new1, IRCALL_lj_tab_dup, IRCALL_lj_tab_newkey,
  IRCALL_lj_tab_new_ah, IRCALL_lj_mem_newgco
};
static const int mp_tgroups[MP_TCALLS] = {
  G_TNEW, G_TDUP, G_SET | G_CALL, G_CALL, G_CDATA | G_CALL
};

/* See mp_agent.h: the addresses of the functions of mp_tcalls. */
void mp_stack_jit_calls(mp_stacks *st, lua_State *L)
{
  int top = lua_gettop(L), i;
  memset(st->tcall, 0, sizeof(st->tcall));
  lua_getglobal(L, "require");
  lua_pushliteral(L, "jit.util");
  if (lua_isfunction(L, -2) && lua_pcall(L, 1, 1, 0) == 0 &&
      lua_istable(L, -1)) {
    lua_getfield(L, -1, "ircalladdr");
    for (i = 0; i < MP_TCALLS && lua_isfunction(L, -1); i++) {
      lua_pushvalue(L, -1);
      lua_pushinteger(L, (lua_Integer)mp_tcalls[i]);
      if (lua_pcall(L, 1, 1, 0) != 0) break;
      st->tcall[i] = (uintptr_t)lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
}

/* The groups of instructions whose compiled code makes the call that
** returns to ret in T's code: known from the function it calls (x64). */
static int ret_groups(const mp_stacks *st, const GCtrace *T, uintptr_t ret)
{
#if LJ_TARGET_X64
  const uint8_t *p = (const uint8_t *)ret;
  uintptr_t to = 0;
  int i, g = G_CAT | G_CALL | G_CDATA;	/* Not a table's function. */
  if (!st->tcall[0]) return G_ALL;
  if (ret >= (uintptr_t)T->mcode + 5 && p[-5] == 0xe8) {	/* call rel32 */
    int32_t d;
    memcpy(&d, p - 4, 4);
    to = ret + (intptr_t)d;
  } else if (ret >= (uintptr_t)T->mcode + 12 && p[-2] == 0xff &&
	     p[-1] == 0xd0 && p[-12] == 0x48 && p[-11] == 0xb8) {
    memcpy(&to, p - 10, 8);	/* mov rax, imm64; call rax */
  } else {
    return G_ALL;
  }
  for (i = 0; i < MP_TCALLS; i++)
    if (to == st->tcall[i]) g = mp_tgroups[i];
  return g;
#else
  (void)st; (void)T; (void)ret;
  return G_ALL;
#endif
}

/* The instructions found that can allocate, by strength: the line of the
** first of each strength and whether another line has one too. */
typedef struct mp_tcand {
  GCtrace *T;
  const TValue *base;	/* The trace's base (its frame's slots). */
  unsigned depth;	/* Calls followed. */
  unsigned npath;	/* The calls the trace entered and left on the way */
  mp_snode path[MP_INLINED_MAX];	/* (at their lines), outermost first. */
  int groups;		/* Those the call can be. */
  unsigned scanned;	/* Bytecodes read. */
  int lost;		/* The path was not followed to its end. */
  struct {
    const GCproto *pt;
    uint64_t line;
    unsigned level;	/* The frame's, in the snapshot of from. */
    int from;		/* 0: the snapshot's frames, 1: the next one's. */
    int many;		/* Other lines too. */
    int tail;		/* It is a tail call. */
    unsigned npath;	/* In a function entered and left on the way, */
    mp_snode path[MP_INLINED_MAX];	/* ...called from these. */
  } k[2];		/* k[0]: strength 1, k[1]: strength 2. */
} mp_tcand;

/* Note instruction pos of pt (frame level of snapshot from) in *c. */
static void cand_add(mp_tcand *c, const GCproto *pt, BCPos pos,
		     unsigned level, int from)
{
  BCOp op = bc_op(proto_bc(pt)[pos]);
  int a = can_alloc(op);
  uint64_t line;
  if (!a || !(group_of(op) & c->groups)) return;
  line = mp_proto_line(pt, pos);
  a--;
  if (!c->k[a].pt) {
    c->k[a].pt = pt;
    c->k[a].line = line;
    c->k[a].level = level;
    c->k[a].from = from;
    c->k[a].tail = op == BC_CALLT || op == BC_CALLMT;
    c->k[a].npath = c->npath;
    memcpy(c->k[a].path, c->path, c->npath * sizeof(c->path[0]));
  } else if (c->k[a].pt != pt || c->k[a].line != line) {
    c->k[a].many = 1;
  }
}

/* The target of the jump of instruction ins, a loop's compiled by a
** trace (J*) included; -1 if it does not jump. */
static ptrdiff_t jump_of(jit_State *J, BCIns ins, BCPos pos)
{
  switch (bc_op(ins)) {
  case BC_JFORL: case BC_JITERL: {
    GCtrace *T;
    if (bc_d(ins) >= J->sizetrace ||
	!(T = (GCtrace *)gcref(J->trace[bc_d(ins)])))
      return -1;
    ins = T->startins;
  }
  /* fallthrough */
  case BC_FORL: case BC_IFORL: case BC_ITERL: case BC_IITERL: case BC_JMP:
  case BC_FORI: case BC_JFORI: case BC_ISNEXT:
    return (ptrdiff_t)pos + 1 + bc_j(ins);
  default:
    return -1;
  }
}

/* Whether ins calls. */
static inline int bc_iscall(BCIns ins)
{
  BCOp op = bc_op(ins);
  return op == BC_CALL || op == BC_CALLM || op == BC_CALLT ||
	 op == BC_CALLMT || op == BC_ITERC;
}

/* Whether fn is one of the functions trace T specialised to (a constant
** of its IR): the functions it inlined are. */
static int traced_func(const GCtrace *T, const GCfunc *fn)
{
  IRRef r;
  for (r = T->nk; r < REF_BIAS; r++) {
    const IRIns *ir = &T->ir[r];
    if (ir->o == IR_KGC && irt_type(ir->t) == IRT_FUNC && ir_kfunc(ir) == fn)
      return 1;
  }
  return 0;
}

/* The value of global name key in table env, or NULL. */
static const TValue *global_of(const GCtab *env, const GCstr *key)
{
  const Node *n;
  if (!env->hmask) return NULL;
  n = hashstr(env, key);
  do {
    if (tvisstr(&n->key) && strV(&n->key) == key) return &n->val;
  } while ((n = nextnode(n)));
  return NULL;
}

/* The Lua function the call at pos of fn (whose prototype is pt) calls,
** when the trace inlined it: found from the instructions that loaded its
** slot (a move, an upvalue, a global; in the base frame, the slot itself),
** and one of the trace's function constants; else NULL. */
static const GCfunc *callee_of(const mp_tcand *c, const GCfunc *fn,
			       const GCproto *pt, BCPos pos, unsigned level)
{
  BCReg r = bc_a(proto_bc(pt)[pos]);
  const TValue *v = NULL;
  const GCfunc *f;
  while (pos > 0) {
    BCIns w = proto_bc(pt)[--pos];
    BCOp op = bc_op(w);
    if (bc_op(w) >= BC_FORI || bc_a(w) != r) continue;
    if (op == BC_MOV) {
      r = bc_d(w);
      continue;
    }
    if (op == BC_UGET && fn) {
      GCupval *uv = gco2uv(gcref(fn->l.uvptr[bc_d(w)]));
      v = uvval(uv);
    } else if (op == BC_GGET && fn) {
      v = global_of(tabref(fn->l.env), gco2str(proto_kgc(pt, ~(ptrdiff_t)bc_d(w))));
    } else if (op != BC_FNEW) {
      return NULL;
    }
    break;
  }
  if (!v) {	/* Made or kept in the base frame's slot. */
    if (level || !c->base) return NULL;
    v = c->base + r;
  }
  if (!tvisfunc(v)) return NULL;
  f = funcV(v);
  if (!isluafunc(f) || !traced_func(c->T, f)) return NULL;
  return f;
}

/* Collect into *c the instructions of pt on the ways from pos to position
** end (not included) if it is not negative; else (-1) to a return
** (included), or (-2) to a return or a call (not included). Both ways of
** a test are followed (the trace took one), a jump back only when end
** lies before pos (a loop's next turn). 0 when no way is found. */
static int scan_to(jit_State *J, mp_tcand *c, const GCfunc *fn,
		   const GCproto *pt, BCPos pos, ptrdiff_t end, unsigned level,
		   int from)
{
  BCPos node[MP_TPATH];
  uint16_t succ[MP_TPATH][2];
  uint8_t ns[MP_TPATH], mark[MP_TPATH];	/* mark: 1 an end, 2 collected. */
  unsigned n = 1, i, j, changed;
  /* A jump back is followed only when b lies behind a (a loop's turn). */
  int back = end >= 0 && end <= (ptrdiff_t)pos;
  node[0] = pos;
  for (i = 0; i < n; i++) {
    BCPos p = node[i], to2[2];
    BCIns ins;
    BCOp op;
    ptrdiff_t to;
    unsigned k = 0, m;
    ns[i] = 0;
    mark[i] = 2;
    if (end >= 0 && (ptrdiff_t)p == end && (i || !back)) {
      mark[i] = 1;	/* Reached, not collected. */
      continue;
    }
    if (p >= pt->sizebc) {
      mark[i] = 0;
      continue;
    }
    ins = proto_bc(pt)[p];
    op = bc_op(ins);
    to = jump_of(J, ins, p);
    if (end == -2 && bc_iscall(ins)) {
      mark[i] = 1;
      continue;
    }
    if (op == BC_RET || op == BC_RET0 || op == BC_RET1 || op == BC_RETM ||
	op == BC_CALLT || op == BC_CALLMT) {
      mark[i] = end < 0 ? 3 : 0;	/* The end (collected), or none. */
      continue;
    }
    /* A loop entered or a comparison: its snapshot's pc is the way not
    ** taken (lj_record.c), so the path ends at its jump there. */
    if (end >= 0 && to == end &&
	(op == BC_FORI || op == BC_JFORI ||
	 (op == BC_JMP && p > 0 && bc_op(proto_bc(pt)[p - 1]) <= BC_ISNEP))) {
      mark[i] = 3;
      continue;
    }
    switch (op) {
    case BC_JMP:	/* Both ways after a test, else the jump. */
      if (p > 0 && bc_op(proto_bc(pt)[p - 1]) <= BC_ISNUM) to2[k++] = p + 1;
      to2[k++] = (BCPos)to;
      break;
    case BC_ISNEXT:
      to2[k++] = (BCPos)to;
      break;
    case BC_FORI: case BC_JFORI:
      to2[k++] = p + 1;
      to2[k++] = (BCPos)to;
      break;
    default:
      to2[k++] = p + 1;
      if (to >= 0) to2[k++] = (BCPos)to;	/* A loop's end. */
      break;
    }
    for (m = 0; m < k; m++) {
      if (to2[m] <= p && !back) continue;
      for (j = 0; j < n && node[j] != to2[m]; j++) ;
      if (j == n) {
	if (n == MP_TPATH) return 0;
	node[n++] = to2[m];
      }
      succ[i][ns[i]++] = (uint16_t)j;
    }
  }
  /* The instructions on a way to an end: those from which one is reached. */
  for (i = 0; i < n; i++) mark[i] = mark[i] == 1 ? 4 : mark[i] == 3 ? 5 :
				     mark[i] == 2 ? 2 : 0;
  do {
    changed = 0;
    for (i = 0; i < n; i++)
      if (mark[i] == 2)
	for (j = 0; j < ns[i]; j++)
	  if (mark[succ[i][j]] >= 4) {
	    mark[i] = 5;
	    changed = 1;
	    break;
	  }
  } while (changed);
  for (i = 0, j = 0; i < n; i++) {
    const GCfunc *f;
    BCOp op = bc_op(proto_bc(pt)[node[i] < pt->sizebc ? node[i] : 0]);
    if (mark[i] >= 4) j = 1;
    if (mark[i] != 5) continue;
    /* A call of a Lua function the trace entered and left: its body (a
    ** tail call's in place of the frame that made it). */
    if ((op == BC_CALL || op == BC_CALLM) && c->npath < MP_INLINED_MAX &&
	c->depth < MP_TCALLEES &&
	(f = callee_of(c, fn, pt, node[i], c->npath ? 1 : level))) {
      mp_snode *x = &c->path[c->npath++];
      int ok;
      x->kind = MP_FK_LUA;
      x->a = (uint64_t)(uintptr_t)pt;
      x->b = (uint32_t)mp_proto_line(pt, node[i]);
      c->depth++;
      ok = scan_to(J, c, f, funcproto(f), 0, -1, level, from);
      c->depth--;
      c->npath--;
      if (!ok) cand_add(c, pt, node[i], level, from);
      continue;
    }
    if ((op == BC_CALLT || op == BC_CALLMT) && c->npath &&
	c->depth < MP_TCALLEES &&
	(f = callee_of(c, fn, pt, node[i], 1))) {
      int ok;
      c->depth++;
      ok = scan_to(J, c, f, funcproto(f), 0, -1, level, from);
      c->depth--;
      if (!ok) cand_add(c, pt, node[i], level, from);
      continue;
    }
    cand_add(c, pt, node[i], level, from);
  }
  c->scanned += n;
  return (int)j;
}

/* Collect into *c the instructions on the path from snapshot a to
** snapshot b (NULL: the trace's end) that can allocate. */
static void path_scan(jit_State *J, const mp_tsnap *a, const mp_tsnap *b,
		      mp_tcand *c)
{
  unsigned lv = a->n - 1, com = 0, j;
  BCPos pos = a->pos;
  if (!b) {	/* The last snapshot: up to the end of its frame or loop. */
    if (!scan_to(J, c, a->f[lv].fn, a->f[lv].pt, pos, -1, lv, 0)) c->lost = 1;
    return;
  }
  if (a->stitch) {
    c->lost = 1;
    return;
  }
  /* The frames both have, from the base frame up. */
  if (a->partial || b->partial) {
    const GCproto *pb = b->f[b->n - 1].pt;
    if (a->f[lv].pt != pb || b->stitch) {
      /* The frames between are not known: the way out of a's frame to its
      ** return or its next call (which leads to b, allocating nothing),
      ** and into b's from the call b's pc follows or its start. */
      BCPos from = b->pos;
      while (from > 0 && !bc_iscall(proto_bc(pb)[from - 1])) from--;
      if (b->stitch) {
	if (!scan_to(J, c, a->f[lv].fn, a->f[lv].pt, pos, -2, lv, 0))
	  c->lost = 1;
	return;
      }
      if (!scan_to(J, c, a->f[lv].fn, a->f[lv].pt, pos, -2, lv, 0) ||
	  (from < b->pos &&
	   !scan_to(J, c, b->f[b->n - 1].fn, pb, from, (ptrdiff_t)b->pos,
		    b->n - 1, 1)))
	c->lost = 1;
      return;
    }
    com = lv;
  } else {
    while (com + 1 < a->n && com + 1 < b->n &&
	   a->f[com + 1].pt == b->f[com + 1].pt &&
	   a->f[com + 1].call == b->f[com + 1].call)
      com++;
    if (a->f[0].pt != b->f[0].pt) {
      c->lost = 1;
      return;
    }
  }
  /* Out of the frames that returned... */
  for (; lv > com; lv--) {
    if (!scan_to(J, c, a->f[lv].fn, a->f[lv].pt, pos, -1, lv, 0)) {
      c->lost = 1;
      return;
    }
    pos = a->f[lv].call + 1;
  }
  if (com + 1 == b->n) {	/* ...to b's pc in the common frame... */
    if (!scan_to(J, c, a->f[com].fn, a->f[com].pt, pos,
		 b->stitch ? -2 : (ptrdiff_t)b->pos, com, 0))
      c->lost = 1;
    return;
  }
  /* ...or to the call of the frame b is in, and down into it (the calls
  ** of those frames allocate nothing: the trace inlined them). */
  if (!scan_to(J, c, a->f[com].fn, a->f[com].pt, pos,
	       (ptrdiff_t)b->f[com + 1].call,
	       com, 0)) {
    c->lost = 1;
    return;
  }
  for (j = com + 1; j < b->n; j++) {
    ptrdiff_t end = j + 1 < b->n ? (ptrdiff_t)b->f[j + 1].call :
		    b->stitch ? -2 : (ptrdiff_t)b->pos;
    if (end == 0) continue;	/* At its entry. */
    if (!scan_to(J, c, b->f[j].fn, b->f[j].pt, 0, end, j, 1)) {
      c->lost = 1;
      return;
    }
  }
}

/* Map return address ret into T's code to the line T was executing
** there, into *e (kind 0 if none); basefn is the function of T's base
** frame (or NULL). 0 when the answer depends on more than T, ret and the
** prototype of basefn (it is not a Lua function), else 1. */
static MP_NOINLINE int map_ret(mp_stacks *st, jit_State *J, GCtrace *T,
			       uintptr_t ret, const GCfunc *basefn,
			       const TValue *slots, mp_retline *e)
{
  /* (The call's last byte: a call may end its snapshot's code.) */
  uintptr_t ofs = (uintptr_t)((MCode *)ret - T->mcode) - 1;
  SnapNo a = 0, b = T->nsnap;
  const GCproto *base = base_proto(basefn);
  mp_tsnap at, next;
  mp_tcand c;
  const mp_tsnap *fr;
  unsigned i, k, lv;
  memset(e, 0, sizeof(*e));
  e->ret = ret;
  e->trace = T;
  e->base = base;
  do {	/* The last snapshot whose code starts at or before ofs. */
    SnapNo mid = (SnapNo)((a + b) >> 1);
    if (ofs < T->snap[mid].mcofs) b = mid; else a = mid + 1;
  } while (a < b);
  if (!b) return 1;
  if (!snap_at(T, b - 1, basefn, base, &at)) return at.n == 1 && !at.partial &&
					     !base ? 0 : 1;
  memset(&c, 0, sizeof(c));
  c.groups = ret_groups(st, T, ret);
  c.T = T;
  c.base = slots;
  if (b < T->nsnap && snap_at(T, b, basefn, base, &next)) path_scan(J, &at, &next, &c);
  else if (b < T->nsnap) c.lost = 1;
  else path_scan(J, &at, NULL, &c);
  /* The surest instructions, on one line; or else, none of them, the
  ** others on one line. */
  k = c.k[1].pt ? 1 : 0;
  /* A tail call's allocations are billed to its caller's call, where the
  ** interpreter bills them (the frame that made the tail call is gone). */
  fr = c.k[k].from ? &next : &at;
  if (c.k[k].pt && !c.k[k].many && c.k[k].tail && c.k[k].npath) {
    const mp_snode *x = &c.k[k].path[--c.k[k].npath];
    c.k[k].pt = (const GCproto *)(uintptr_t)x->a;
    c.k[k].line = x->b;
  } else if (c.k[k].pt && !c.k[k].many && c.k[k].tail) {
    unsigned lv = c.k[k].level;
    if (lv == 0 || fr->partial) return 1;
    c.k[k].pt = fr->f[lv - 1].pt;
    c.k[k].line = mp_proto_line(fr->f[lv - 1].pt, fr->f[lv].call);
    c.k[k].level = lv - 1;
  }
  if (c.lost || !c.k[k].pt || c.k[k].many) return 1;
  lv = c.k[k].level;
  if (lv == 0 && !fr->partial && !c.k[k].npath) {	/* The base frame. */
    if (!base) return 0;
    e->inbase = 1;
  }
  /* The frames between the base frame and the line's, each at the line
  ** of its call to the next (none if not known): those of the snapshot,
  ** then the calls entered on the way (but the base frame's). */
  if (!fr->partial) {
    unsigned n = 0, x = lv ? 0 : 1;
    for (i = 1; i < lv && n < MP_INLINED_MAX; i++, n++) {
      e->inl[n].kind = MP_FK_LUA;
      e->inl[n].a = (uint64_t)(uintptr_t)fr->f[i].pt;
      e->inl[n].b = (uint32_t)mp_proto_line(fr->f[i].pt, fr->f[i + 1].call);
    }
    for (; x < c.k[k].npath && n < MP_INLINED_MAX; x++) e->inl[n++] = c.k[k].path[x];
    if (i == lv && x == c.k[k].npath) e->ninl = n;
  }
  e->frame.kind = MP_FK_LUA;
  e->frame.a = (uint64_t)(uintptr_t)c.k[k].pt;
  e->frame.b = (uint32_t)c.k[k].line;
  return 1;
}

/* The line trace T (number tn, base frame function basefn or NULL) was
** executing at return address ret into its code, mapped through T's
** snapshots, into *f, and the frames the trace inlined below it into
** inl[0..*ninl). Each return address is mapped once (if cached: else
** every time). 0 if no line is known, 2 if it is in the trace's base
** frame itself, else 1 (a frame the trace inlined). */
static MP_INLINE int trace_line(mp_state *s, GCtrace *T, TraceNo tn,
				const GCfunc *basefn, const TValue *slots,
				uintptr_t ret,
				mp_snode *f, mp_snode *inl, unsigned *ninl,
				int cached)
{
  mp_stacks *st = &s->st;
  mp_retline *e, fresh;
  /* Two ways per set, the one used last first. */
  e = &st->rets[((ret * 0x9e3779b97f4a7c15ull) >> (64 - MP_RETS_BITS)) * 2];
  if (e->ret != ret || e->trace != T) {
    mp_retline other = e[1];
    e[1] = e[0];
    e[0] = other;
  }
  if (!cached || e->ret != ret || e->trace != T ||
      e->base != base_proto(basefn)) {
    global_State *g = (global_State *)s->g;
    /* Kept only for a trace whose symbol is written: when it dies, the
    ** cache is dropped with the nodes (mp_stack_forget()). */
    mp_want_trace(s, g, tn);
    if (map_ret(st, G2J(g), T, ret, basefn, slots, &fresh) && cached && tn < s->ntraces &&
	s->traces[tn].trace == T)
      *e = fresh;
    else
      e = &fresh;
  }
  if (!e->frame.kind) return 0;
  *f = e->frame;
  *ninl = e->ninl;
  memcpy(inl, e->inl, e->ninl * sizeof(*inl));
  return e->inbase ? 2 : 1;
}

/* The node of the stack from frame t of L down into *id, where t's pc is
** pc, or toppc (a trace's start: see locate()) if that is not NULL. The
** common shapes take quick_stack() unless slow. 0 when out of memory
** (*id = 0). */
static MP_INLINE int stack_from(mp_state *s, lua_State *L, TValue *t,
				const BCIns *pc, const BCIns *toppc, int slow,
				uint32_t *id)
{
  GCfunc *fn = frame_func(t);
  mp_walk w;
  if (!slow && fn->c.gct == ~LJ_TFUNC && isluafunc(fn) &&
      !mp_lua_builtin(fn) &&
      quick_stack(s, t, fn, toppc ? toppc : pc, toppc != NULL,
		  tvref(L->stack) + LJ_FR2, id))
    return *id != 0;
  mp_walk_init_at(&w, L, t, toppc);
  return walk_stack(s, &w, id);
}

/* -- Stacks of compiled code met before ---------------------------------- */

/* The set of the memo of compiled code where the stack of an event in a
** trace with base base, at return address ret, goes. */
static MP_INLINE mp_jmemo *jmemo_set(mp_stacks *st, const TValue *base,
				     uintptr_t ret)
{
  uint64_t k = ((uint64_t)ret ^ ((uint64_t)(uintptr_t)base << 16)) *
	       0x9e3779b97f4a7c15ull;
  return &st->jmemo[(k >> (64 - MP_JMEMO_BITS)) * 2];
}

/* Remember node id of an event in trace T with base base at return
** address ret, whose frames from the base frame down are node below, if
** the cache of the last stack holds them (its top is the base frame with
** node below) and their words fit: the words that held the base frame's
** link and function (for a vararg frame, the link of the slot of its call
** too), then those that validate the frames below it. */
static MP_INLINE void jmemo_add(mp_stacks *st, const TValue *base,
				uintptr_t ret, const GCtrace *T,
				uint32_t below, uint32_t id)
{
  const TValue *t = base - 1, *ls = link_slot(t);
  const mp_scache *e;
  mp_jmemo *m;
  const void *low;
  unsigned k = 0;
  if (!st->nc || !id || st->jmemo_use.rest) return;
  e = &st->c[st->nc - 1];
  if (e->slot != (const void *)ls || e->id != below ||
      e->nwords + (ls != t ? 3 : 2) > MP_JMEMO_WORDS)
    return;
  m = jmemo_set(st, base, ret);
  m += set_turn(st->jmemo_next, (size_t)(m - st->jmemo) / 2);
  m->w[k].at = link_word(t);
  m->w[k++].v = *link_word(t);
  m->w[k].at = func_word(t);
  m->w[k++].v = *func_word(t);
  if (ls != t) {	/* A vararg frame: the link of its call (see
			   memo_add()). */
    m->w[k].at = link_word(ls);
    m->w[k++].v = *link_word(ls);
  }
  low = ls != t ? (const void *)link_word(ls) : (const void *)func_word(t);
  low = copy_words(m->w + k, st->words, e->nwords, low);
  k += e->nwords;
  m->ret = ret;
  m->base = base;
  m->trace = T;
  m->low = low;
  m->id = id;
  m->n = k;
}

/* Whether a trace running with base base on L's stack has a frame below
** it to show: its base frame is not the stack's first slot, and base lies
** within the stack. Not bounded by L->top, which compiled code does not
** keep: it may lie below the base (a function's trace entered through
** xpcall), and an up-recursive trace goes on pushing frames above it (it
** moves its base and jit_base one frame up each turn, and stores the
** frames' links). */
static MP_INLINE int below_trace(const lua_State *L, const TValue *base)
{
  return base - 1 > tvref(L->stack) + LJ_FR2 && base <= tvref(L->maxstack);
}

/* Where an allocation happens, as a stack node; 0 for the VM itself (GC,
** JIT compiler), whose events carry no stack. The caches of the last
** stack and of trace lines and the quick path are used unless slow;
** probed: met_again() did not find the stack in the memo; known: the
** return address into the trace if traced_again() found it, else 0. */
static MP_INLINE uint32_t locate(mp_state *s, const void *from, int slow,
				 int probed, uintptr_t known)
{
  global_State *g = (global_State *)s->g;
  int32_t vst = g->vmstate;
  lua_State *L;
  TValue *top;
  uint32_t id = 0;
  if (vst > 0 || vst == ~LJ_VMST_EXIT) {	/* Compiled code. */
    jit_State *J = G2J(g);
    TraceNo tn = vst > 0 ? (TraceNo)vst : J->parent;
    GCtrace *T;
    TValue *base = tvref(g->jit_base);
    GCfunc *basefn = base ? frame_func(base - 1) : NULL;
    mp_traced *memo = NULL;
    mp_snode line, tr, inl[MP_INLINED_MAX];
    unsigned ninl = 0, i;
    uintptr_t ret = 0;
    int k;
    if (vst < 0 && (J->state != LJ_TRACE_IDLE || !tn)) return 0;
    if (tn >= J->sizetrace || !(T = (GCtrace *)gcref(J->trace[tn])))
      return 0;
    L = (lua_State *)gcref(g->cur_L);
    if (vst > 0 && T->nsnap)
      ret = known ? known : L ? trace_ret(&s->st, T, L, from) :
				scan_ret(&s->st, T, from);
    /* The frames below the trace's base (not while an exit rebuilds
    ** them). The base frame runs the trace: shown at the trace's start,
    ** unless the line inside the trace is its own (see below). */
    if (vst > 0 && base && L && below_trace(L, base)) {
      mp_stacks *st = &s->st;
      if (!stack_from(s, L, base - 1, NULL, mref(T->startpc, const BCIns) + 1,
		      slow, &id))
	return 0;
      /* The same return address into the same trace, on the same frames
      ** with the base frame on top (whose function the line may be in):
      ** the same node as last time. */
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
    /* Its symbol first: a number that names another trace than the one
    ** we wrote (jit.flush() leaves the old one alive for a while) is
    ** another node. */
    mp_want_trace(s, g, tn);
    tr.kind = MP_FK_TRACE;
    tr.a = tn;
    tr.b = tn < s->ntraces ? s->traces[tn].gen : 0;
    k = ret ? trace_line(s, T, tn, basefn, base, ret, &line, inl, &ninl,
			     !slow) :
	      0;
    /* A line of the base frame itself stands for it above the trace: the
    ** base frame at the trace's start below would show the function
    ** twice (and at a line it is not at, when the trace started in a
    ** function that has returned since). */
    if (k == 2 && id) id = node_at(&s->st, id)->parent;
    if (!(id = node_of(s, id, &tr))) return 0;
    for (i = 0; k == 1 && i < ninl; i++)
      if (!(id = node_of(s, id, &inl[i]))) return 0;
    if (k && !(id = node_of(s, id, &line))) return 0;
    if (memo) {
      memo->id = id;
      jmemo_add(&s->st, base, ret, T, memo->below, id);
    }
    return id;
  }
  if (vst != ~LJ_VMST_INTERP && vst != ~LJ_VMST_C &&
      vst != ~LJ_VMST_RECORD && vst != 0)
    return 0;	/* The garbage collector, the JIT compiler. */
  L = (lua_State *)gcref(g->cur_L);
  if (!L) return 0;
  top = L->base - 1;
  if (top <= tvref(L->stack) + LJ_FR2) {	/* No function running. */
    mp_snode host;
    if (vst == ~LJ_VMST_RECORD) return 0;
    mp_sym_host(s);
    host.kind = MP_FK_HOST;
    host.a = host.b = 0;
    return node_of(s, 0, &host);
  }
  {
    void *cf = cframe_raw(L->cframe);
    GCfunc *fn = frame_func(top);
    const BCIns *pc;
    if (!cf) return 0;
    pc = cframe_pc(cf);
    /* The JIT compiler's own work (see attribute() in mp_hook.c). */
    if ((void *)pc == (void *)cframe_L(cf)) {
      if (fn->c.gct != ~LJ_TFUNC || isluafunc(fn) ||
	  G2J(g)->state != LJ_TRACE_IDLE)
	return 0;
      pc = NULL;
    }
    if (!slow && pc && !s->st.memo_use.rest) {	/* A stack met before? */
      if (!probed) {
	uint32_t met = memo_find(&s->st, top, pc, tvref(L->stack));
	s->st.memo_use.probes++;
	if (met) return met;
      }
      if (stack_from(s, L, top, pc, NULL, 0, &id))
	memo_add(&s->st, top, pc, id);
      return id;
    }
    stack_from(s, L, top, pc, NULL, slow, &id);
  }
  return id;
}

/* The node of an event in compiled code if its stack was met before (see
** mp_jmemo), else 0: the trace's base, the return address into the trace
** and the trace name the entry, the words it holds say that the frames
** from the base frame down are as they were. The conditions are those
** under which locate() puts frames below the trace. Only the words at or
** above the running coroutine's stack are read (a stack met in another
** coroutine may lie in memory the VM has freed since). */
static MP_INLINE uint32_t traced_again(mp_state *s, const void *from,
				       int32_t vst, uintptr_t *known)
{
  global_State *g = (global_State *)s->g;
  mp_stacks *st = &s->st;
  jit_State *J = G2J(g);
  GCtrace *T;
  TValue *base;
  lua_State *L;
  uintptr_t ret;
  mp_jmemo *m;
  unsigned i;
  if (st->jmemo_use.rest || (TraceNo)vst >= J->sizetrace ||
      !(T = (GCtrace *)gcref(J->trace[vst])))
    return 0;
  base = tvref(g->jit_base);
  L = (lua_State *)gcref(g->cur_L);
  if (!base || !L || !below_trace(L, base) ||
      !(ret = trace_ret(st, T, L, from)))
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

/* The node of an allocation outside compiled code if its stack was met
** before (see mp_memo), else 0; *probed: the memo was asked. The
** conditions are those under which locate() asks it. */
static MP_INLINE uint32_t met_again(mp_state *s, int32_t vst, int *probed)
{
  global_State *g = (global_State *)s->g;
  mp_stacks *st = &s->st;
  lua_State *L;
  TValue *top;
  void *cf;
  const BCIns *pc;
  if ((vst != ~LJ_VMST_INTERP && vst != ~LJ_VMST_C) || st->memo_use.rest ||
      !(L = (lua_State *)gcref(g->cur_L)))
    return 0;
  top = L->base - 1;
  if (top <= tvref(L->stack) + LJ_FR2 || !(cf = cframe_raw(L->cframe)))
    return 0;
  pc = cframe_pc(cf);
  if (!pc || (void *)pc == (void *)cframe_L(cf)) return 0;
  *probed = 1;
  st->memo_use.probes++;
  return memo_find(st, top, pc, tvref(L->stack));
}

/* locate() with the caches, past traced_again() and met_again(). */
static MP_NOINLINE uint32_t located(mp_state *s, const void *from,
				    int probed, uintptr_t known)
{
  return locate(s, from, 0, probed, known);
}

#ifdef MP_STACK_CHECK
/* The checked build: find the stack again without the caches, abort if
** it is not node id. */
static MP_NOINLINE void check_stack(mp_state *s, const void *from,
				    uint32_t id)
{
  mp_stacks *st = &s->st;
  unsigned nc = st->nc, nw = nc ? st->c[nc - 1].nwords : 0;
  const void *cbelow = st->cbelow;
  uint32_t cparent = st->cparent;
  mp_scache *c = malloc((nc + 1) * sizeof(*c));
  mp_sword *words = malloc((nw + 1) * sizeof(*words));
  uint32_t want;
  if (!c || !words) abort();
  memcpy(c, st->c, nc * sizeof(*c));
  memcpy(words, st->words, nw * sizeof(*words));
  st->nc = 0;
  want = locate(s, from, 1, 0, 0);
  if (want != id) {
    print_node(st, "got ", id);
    print_node(st, "want", want);
    check_failed("stack node", id, want);
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

/* The node of the stack of an allocation (from: the frame of the hook's
** function that calls this); the checked build finds every stack again
** the long way. */
static MP_INLINE uint32_t capture(mp_state *s, const void *from)
{
  int32_t vst = ((global_State *)s->g)->vmstate;
  int probed = 0;
  uintptr_t known = 0;
  uint32_t id = vst > 0 ? traced_again(s, from, vst, &known) :
			  met_again(s, vst, &probed);
  if (!id) id = located(s, from, probed, known);
#ifdef MP_STACK_CHECK
  check_stack(s, from, id);
#endif
  return id;
}

/* -- Encoding ------------------------------------------------------------- */

/* Append address v as the difference to *last (zigzag ULEB128), in units
** of 8 when it is a multiple of 8 (the allocator's alignment makes it one
** nearly always): then the header at h gets flag. */
static MP_INLINE uint8_t *put_delta(uint8_t *p, uint8_t *h, unsigned flag,
				    uint64_t *last, uint64_t v)
{
  int64_t d = (int64_t)(v - *last);
  *last = v;
  if (!(d & 7)) { d >>= 3; *h |= (uint8_t)flag; }
  return mp_put_uleb_near(p, mp_zigzag(d));
}

/* Append the header and location of an allocation or reallocation: the
** node, as the difference to the last stack event's. */
static MP_INLINE uint8_t *put_where(mp_stacks *st, uint8_t *p, int ev,
				    uint32_t node)
{
  if (!node) { *p++ = (uint8_t)(ev | MP_SRC_INTERNAL); return p; }
  *p++ = (uint8_t)(ev | MP_SRC_STACK);
  p = mp_put_uleb_fast(p, mp_zigzag((int64_t)node - (int64_t)st->last_node));
  st->last_node = node;
  return p;
}

/* -- The hook ------------------------------------------------------------- */

/* Append a free of ptr, billed to the running (or exiting) trace, else
** internal, as in version 3. */
static MP_INLINE void put_free(mp_state *s, void *ptr, size_t osize)
{
  global_State *g = (global_State *)s->g;
  int32_t vst = g->vmstate;
  TraceNo tn = 0;
  uint8_t *p, *h;
  if (vst > 0) tn = (TraceNo)vst;
  else if (vst == ~LJ_VMST_EXIT && G2J(g)->state == LJ_TRACE_IDLE)
    tn = G2J(g)->parent;
  if (tn) mp_want_trace(s, g, tn);
  h = p = s->pos;
  if (tn) {
    *p++ = MP_AEV_FREE | MP_SRC_TRACE;
    p = mp_put_uleb_fast(p, tn);
  } else {
    *p++ = MP_AEV_FREE | MP_SRC_INTERNAL;
  }
  p = put_delta(p, h, MP_EV_OLD8, &s->st.old_addr, (uint64_t)(uintptr_t)ptr);
  s->pos = mp_put_uleb_near(p, osize);
  mp_settle(s);
}

/* A prototype or trace we named may be about to be freed: forget it. */
static MP_INLINE void sym_free(mp_state *s, void *ptr, size_t osize)
{
  if (osize >= s->sym_min && mp_sym_forget(s, ptr)) mp_stack_forget(s);
}

/* A time mark, due now: the memos' windows close with it. */
static MP_INLINE void time_mark(mp_state *s)
{
  mp_stacks *st = &s->st;
  st->tick = st->ticks;
  memo_window(&st->memo_use, 3);
  memo_window(&st->jmemo_use, 2);
  s->pos = mp_put_time(s, s->pos);
  mp_settle(s);
  if (s->native) mp_native_drain(s);	/* Other threads' native events. */
}

/* A time mark every MP_TICK events (or fewer, see mp_stacks.tick). */
static MP_INLINE void tick(mp_state *s)
{
  if (MP_UNLIKELY(--s->st.tick == 0)) time_mark(s);
}

/* A free: recorded, then forwarded as a tail call. */
static MP_NOINLINE void *stack_free(mp_state *s, void *ptr, size_t osize)
{
  sym_free(s, ptr, osize);
  put_free(s, ptr, osize);
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
  node = capture(s, __builtin_frame_address(0));
  old = st->old_addr;
  last_node = st->last_node;
  h = s->pos;
  if (ptr == NULL) {
    p = put_where(st, h, MP_AEV_ALLOC, node);
  } else {
    p = put_where(st, h, MP_AEV_REALLOC, node);
    p = put_delta(p, h, MP_EV_OLD8, &st->old_addr, (uint64_t)(uintptr_t)ptr);
    p = mp_put_uleb_near(p, osize);
  }
  res = s->orig_f(s->orig_ud, ptr, osize, nsize);
  if (MP_LIKELY(res != NULL)) {
    p = put_delta(p, h, MP_EV_NEW8, &st->new_addr, (uint64_t)(uintptr_t)res);
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
  time_mark(s);
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
  if (MP_UNLIKELY(osize >= s->sym_min || vst > 0 || vst == ~LJ_VMST_EXIT))
    return stack_free(s, ptr, osize);
  h = p = s->pos;	/* As put_free() writes it, billed to INTERNAL. */
  *p++ = MP_AEV_FREE | MP_SRC_INTERNAL;
  p = put_delta(p, h, MP_EV_OLD8, &s->st.old_addr, (uint64_t)(uintptr_t)ptr);
  s->pos = mp_put_uleb_near(p, osize);
  if (MP_UNLIKELY(s->pos >= s->lim)) return free_flush(s, ptr, osize);
  mp_leave(s);
  return s->orig_f(s->orig_ud, ptr, osize, 0);
}

/* -- The sampled hook ----------------------------------------------------- */

/* -ln(u) for u in (0, 1], to about 1e-7: u = m 2^e with m in [1, 2), and
** ln m = 2 atanh((m-1)/(m+1)) by its series (no libm in the agent). */
static double neg_log(double u)
{
  union { double d; uint64_t b; } x = { u };
  int e = (int)((x.b >> 52) & 0x7ff) - 1023;
  double m, t, t2;
  x.b = (x.b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  m = x.d;
  t = (m - 1) / (m + 1);
  t2 = t * t;
  return -(e * 0.6931471805599453 +
	   2 * t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 +
	   t2 * (1.0 / 9 + t2 * (1.0 / 11 + t2 / 13)))))));
}

/* Bytes to the next sample: exponentially distributed with mean
** sm->mean (xorshift64* for the uniform draw). */
static int64_t next_gap(mp_sampler *sm)
{
  uint64_t x = sm->rng;
  double u, gap;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  sm->rng = x;
  u = (double)(((x * 0x2545f4914f6cdd1dull) >> 11) + 1) * 0x1p-53;
  gap = neg_log(u) * (double)sm->mean;
  return gap < 0x1p62 ? (int64_t)gap : (int64_t)1 << 62;
}

int64_t mp_sample_gap(mp_sampler *sm)
{
  return next_gap(sm);
}

/* The filter, empty, in seen0. */
static void seen_reset(mp_sampler *sm)
{
  memset(sm->seen0, 0, sizeof(sm->seen0));
  sm->seen = sm->seen0;
  sm->seen_mask = MP_SEEN_MIN - 1;
}

void mp_sample_init(mp_sampler *sm, uint64_t mean, uint64_t seed)
{
  sm->mean = mean;
  sm->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
  sm->left = next_gap(sm);
  seen_reset(sm);
}

void mp_sample_free(mp_sampler *sm)
{
  if (sm->seen && sm->seen != sm->seen0) {	/* Back to an empty seen0. */
    uint8_t *big = sm->seen;
    seen_reset(sm);
    free(big);
  }
  mp_hash_free(&sm->live);
}

/* Count the block at address key in the filter. */
static void seen_add(void *ud, uint64_t key)
{
  uint8_t *n = mp_seen((const mp_sampler *)ud, (uintptr_t)key);
  if (*n < 255) ++*n;
}

/* The blocks the filter counts. */
static size_t seen_blocks(const mp_state *s)
{
  return s->sm.live.count + s->protos.count + s->tracesyms.count;
}

/* Grow the filter at least fourfold, to 16 slots per block it counts
** (up to MP_SEEN_MAX), counted again from the sets. Out of memory, it
** stays as it is: fuller, still right. */
static void seen_grow(mp_state *s)
{
  mp_sampler *sm = &s->sm;
  size_t n = (sm->seen_mask + 1) * 4;
  uint8_t *old = sm->seen, *seen;
  while (n < seen_blocks(s) * 16 && n < MP_SEEN_MAX) n *= 2;
  if (n > MP_SEEN_MAX) n = MP_SEEN_MAX;
  seen = calloc(n, 1);
  if (!seen) return;
  sm->seen = seen;
  sm->seen_mask = n - 1;
  mp_hash_each(&sm->live, seen_add, sm);
  mp_hash_each(&s->protos, seen_add, sm);
  mp_hash_each(&s->tracesyms, seen_add, sm);
  if (old != sm->seen0) free(old);
}

void mp_sample_mark(mp_state *s, uintptr_t a)
{
  mp_sampler *sm = &s->sm;
  if (!sm->seen) return;
  seen_add(sm, a);
  if (MP_UNLIKELY(seen_blocks(s) * 16 > sm->seen_mask + 1) &&
      sm->seen_mask + 1 < MP_SEEN_MAX)
    seen_grow(s);
}

void mp_sample_unmark(mp_state *s, uintptr_t a)
{
  uint8_t *n;
  if (!s->sm.seen) return;
  n = mp_seen(&s->sm, a);
  if (*n < 255) --*n;	/* A slot that reached 255 stays taken. */
}

/* Forget a sampled block that is freed or moves: 1 if it was one. */
static int unsample(mp_state *s, void *ptr)
{
  if (!mp_hash_del(&s->sm.live, (uintptr_t)ptr)) return 0;
  mp_sample_unmark(s, (uintptr_t)ptr);
  return 1;
}

/* Append that the sampled block at ptr left the sample: a reallocation
** that is not sampled moved it (MP_X_DROP). Not a free: the reader only
** takes the block out of the live heap. */
static void put_drop(mp_state *s, void *ptr)
{
  s->pos = mp_put_xuleb(s->pos, MP_X_DROP, (uint64_t)(uintptr_t)ptr);
  mp_settle(s);
}

/* A sampled event: the allocation was chosen (take), or its old block was
** (old), or both. The stack is captured before forwarding, as in the
** full hook; the event is written once the allocator succeeded. */
static MP_NOINLINE void *sampled(mp_state *s, void *ptr, size_t osize,
				 size_t nsize, int take, int old)
{
  mp_stacks *st = &s->st;
  mp_sampler *sm = &s->sm;
  uint32_t node = 0;
  uint8_t *p, *h;
  void *res;
  if (take) {
    sm->left = next_gap(sm);
    /* A block whose free could not be followed is not sampled. */
    if (mp_hash_reserve(&sm->live, 1) < 0) take = 0;
    else node = capture(s, __builtin_frame_address(0));
  }
  res = s->orig_f(s->orig_ud, ptr, osize, nsize);
  if (MP_UNLIKELY(res == NULL)) {	/* Nothing changed. */
    mp_leave(s);
    return NULL;
  }
  tick(s);
  if (old) unsample(s, ptr);
  if (!take) {	/* The sampled block moved to one that is not. */
    put_drop(s, ptr);
    mp_leave(s);
    return res;
  }
  h = s->pos;
  if (ptr) {	/* A reallocation, whether its old block was sampled or not. */
    p = put_where(st, h, MP_AEV_REALLOC, node);
    p = put_delta(p, h, MP_EV_OLD8, &st->old_addr, (uint64_t)(uintptr_t)ptr);
    p = mp_put_uleb_near(p, osize);
  } else {
    p = put_where(st, h, MP_AEV_ALLOC, node);
  }
  p = put_delta(p, h, MP_EV_NEW8, &st->new_addr, (uint64_t)(uintptr_t)res);
  s->pos = mp_put_uleb_near(p, nsize);
  mp_hash_add(&sm->live, (uintptr_t)res);	/* Room was reserved. */
  mp_sample_mark(s, (uintptr_t)res);
  mp_settle(s);
  mp_leave(s);
  return res;
}

/* The sampling hook's work beyond forwarding: a free of a sampled block
** or one that may be a prototype or trace, an allocation that is taken,
** the reallocation of a sampled block. */
static MP_NOINLINE void *sample_slow(mp_state *s, void *ptr, size_t osize,
				     size_t nsize)
{
  mp_sampler *sm = &s->sm;
  int take = nsize && sm->left < 0, old;
  mp_enter(s);
  if (MP_UNLIKELY(!__atomic_load_n(&s->recording, __ATOMIC_RELAXED))) {
    mp_sink_limited(s);
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, nsize);
  }
  if (nsize == 0) {
    sym_free(s, ptr, osize);
    if (unsample(s, ptr)) {
      tick(s);
      put_free(s, ptr, osize);
    }
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, 0);
  }
  old = ptr && mp_hash_has(&sm->live, (uintptr_t)ptr);
  if (!take && !old) {
    mp_leave(s);
    return s->orig_f(s->orig_ud, ptr, osize, nsize);
  }
  return sampled(s, ptr, osize, nsize, take, old);
}

/* The lua_Alloc installed while sampling; ud is the state. Most calls
** only count bytes (allocations) or find the block's slot empty in the
** filter of live sampled ones (frees, reallocations), then forward as a
** tail call: no register is saved, no event flag is set, as nothing is
** recorded. Whether recording goes on is only asked when something
** would be. */
void *mp_hook_alloc_sampled(void *ud, void *ptr, size_t osize, size_t nsize)
{
  mp_state *s = (mp_state *)ud;
  mp_sampler *sm = &s->sm;
  lua_Alloc f = s->orig_f;
  if (nsize) {	/* sample_slow() reads left again: one instruction. */
    if (MP_LIKELY((sm->left -= (int64_t)nsize) >= 0) &&
	(!ptr || !*mp_seen(sm, (uintptr_t)ptr)))
      return f(s->orig_ud, ptr, osize, nsize);
    return sample_slow(s, ptr, osize, nsize);
  }
  /* A free. NULL (never freed by LuaJIT) would find slot 0 and, if that
  ** is taken, be forwarded by sample_slow(). */
  if (MP_LIKELY(!*mp_seen(sm, (uintptr_t)ptr)))
    return f(s->orig_ud, ptr, osize, nsize);
  return sample_slow(s, ptr, osize, nsize);
}

/* -- Native events (mp_native.c) ------------------------------------------ */

uint32_t mp_stack_here(mp_state *s, const void *from)
{
  uint32_t id = capture(s, from);
  return id && node_at(&s->st, id)->kind == MP_FK_HOST ? 0 : id;
}

uint32_t mp_stack_child(mp_state *s, uint32_t parent, const mp_snode *f)
{
  return node_of(s, parent, f);
}

void mp_stack_event(mp_state *s, int ev, uint32_t node, uint64_t oaddr,
		    uint64_t osize, uint64_t naddr, uint64_t nsize)
{
  mp_stacks *st = &s->st;
  uint8_t *h = s->pos, *p = put_where(st, h, ev, node);
  if (ev & MP_AEV_FREE) {
    p = put_delta(p, h, MP_EV_OLD8, &st->old_addr, oaddr);
    p = mp_put_uleb_fast(p, osize);
  }
  if (ev & MP_AEV_ALLOC) {
    p = put_delta(p, h, MP_EV_NEW8, &st->new_addr, naddr);
    p = mp_put_uleb_fast(p, nsize);
  }
  s->pos = p;
  mp_settle(s);
}
