/*
** mp_stack_walk.h: capturing the stack of the interpreter: a frame's node, the
** walk from the top frame down through the cache of the last stack, and
** the quick paths of a Lua frame called from Lua.
**
** Included once, by mp_stack.c: its functions are static so that the
** stacks hook inlines them on its hot path.
*/

#ifndef MP_STACK_WALK_H
#define MP_STACK_WALK_H

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
    mp_stack_check_failed("an exact pc in a trace's copy", (uintptr_t)pc, 0);
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
  id = mp_node_of(s, parent, f);
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
      if (!(node = mp_node_of(s, node, &st->walk[--n].frame))) {
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
      node = same && keep < old && mp_same_frame(&e->frame, &w->frame) ? was :
	     mp_node_of(s, node, &w->frame);
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
	    (!j && st->cbelow && !mp_same_frame(&c[0].frame, &f->frame))) {
	  j = -1;	/* (A new c[0] of a cut stack: walked to the cut.) */
	  continue;
	}
	keep = (unsigned)j;
	if (mp_same_frame(&c[j].frame, &f->frame)) {
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

#endif
