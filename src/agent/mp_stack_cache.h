/*
** mp_stack_cache.h: the cache of the last stack: its frames, and the words of the
** VM stack that say they are still in place.
**
** Included once, by mp_stack.c: its functions are static so that the
** stacks hook inlines them on its hot path.
*/

#ifndef MP_STACK_CACHE_H
#define MP_STACK_CACHE_H

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

#endif
