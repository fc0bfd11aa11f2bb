/*
** mp_stack_memo.h: the memos of stacks met before, by their top frame (mp_memo)
** and, in compiled code, by the trace's base and return address
** (mp_jmemo), and how well they do.
**
** Included once, by mp_stack.c: its functions are static so that the
** stacks hook inlines them on its hot path.
*/

#ifndef MP_STACK_MEMO_H
#define MP_STACK_MEMO_H

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

/* The memo's pc of a top frame that does not run a Lua function (a C
** function, a builtin): its node has no line, and the pc the VM saved in
** the C frame is stale there (a call into C saves none: an FFI call from
** the interpreter, through ffi.meta.__call, finds the pc of the last
** metamethod), so that the link and the function alone say the stack. */
#define MP_MEMO_NOPC	((const BCIns *)(uintptr_t)1)

/* The pc by which the memo knows the stack of the event at w (w->top at
** w->pc): that pc in a Lua function, MP_MEMO_NOPC in any other (see
** above), NULL (no memo) for a Lua function with no pc known. */
static MP_INLINE const BCIns *memo_pc(const mp_where *w)
{
  return isluafunc(frame_func(w->top)) ? w->pc : MP_MEMO_NOPC;
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
** pc (memo_pc()'s), if the cache of the last stack holds it whole (down
** to its bottom, or to its CUT with the word below: see mp_stacks.cbelow;
** t at its top at that pc, or with none for MP_MEMO_NOPC) and its words
** fit. A vararg frame (every main chunk is
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
  if (e->id != id || !pc ||
      e->pc != (const void *)(pc == MP_MEMO_NOPC ? NULL : pc) ||
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

#endif
