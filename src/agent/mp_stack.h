/*
** mp_stack.h: the stacks mode (mp_stack.c): its hook, the capture of an
** event's stack as a node, and the encoding of its events, which the
** sampled hook (mp_sample.c) and the native hooks (mp_native.c) share.
**
** An event of the stacks mode carries the node of its stack as the
** difference to the last one's, and its addresses as differences to the
** last address of the same role (which halves an event's bytes); see
** src/format/mp_ext.h.
*/

#ifndef MP_STACK_H
#define MP_STACK_H

#include "lj_obj.h"
#include "lj_jit.h"
#include "lj_dispatch.h"

#include "mp_agent.h"
#include "mp_sym.h"
#include "mp_where.h"

/* The lua_Alloc installed while recording with stacks; ud is the state. */
void *mp_hook_alloc_stacks(void *ud, void *ptr, size_t osize, size_t nsize);

/* The node of the stack of an allocation of nsize bytes about to be made
** (from: the frame of the hook's function that calls this, where the
** search for a return address into compiled code starts); 0 for the VM's
** own work (mp_where.h), whose events carry no stack, or when out of
** memory. */
MP_NOINLINE uint32_t mp_stack_capture(mp_state *s, const void *from,
				      size_t nsize);

/* Forget every stack node: a prototype or a trace they name has died. */
void mp_stack_forget(mp_state *s);

/* A time mark, due now (the memos' windows close with it, other threads'
** native events are written). */
MP_NOINLINE void mp_stack_time_mark(mp_state *s);

/* A time mark every MP_TICK events (or fewer, see mp_stacks.tick). */
static MP_INLINE void mp_stack_tick(mp_state *s)
{
  if (MP_UNLIKELY(--s->st.tick == 0)) mp_stack_time_mark(s);
}

/* Append address v as the difference to *last (zigzag ULEB128), in units
** of 8 when it is a multiple of 8 (the allocator's alignment makes it one
** nearly always): then the header at h gets flag. */
static MP_INLINE uint8_t *mp_put_delta(uint8_t *p, uint8_t *h, unsigned flag,
				       uint64_t *last, uint64_t v)
{
  int64_t d = (int64_t)(v - *last);
  *last = v;
  if (!(d & 7)) { d >>= 3; *h |= (uint8_t)flag; }
  return mp_put_uleb_near(p, mp_zigzag(d));
}

/* Append the header and location of an allocation or reallocation: the
** node, as the difference to the last stack event's. */
static MP_INLINE uint8_t *mp_put_where(mp_stacks *st, uint8_t *p, int ev,
				       uint32_t node)
{
  if (!node) { *p++ = (uint8_t)(ev | MP_SRC_INTERNAL); return p; }
  *p++ = (uint8_t)(ev | MP_SRC_STACK);
  p = mp_put_uleb_fast(p, mp_zigzag((int64_t)node - (int64_t)st->last_node));
  st->last_node = node;
  return p;
}

/* Append a free of ptr, billed by the free rule (mp_free_trace()). */
static MP_INLINE void mp_stack_put_free(mp_state *s, void *ptr, size_t osize)
{
  global_State *g = (global_State *)s->g;
  TraceNo tn = mp_free_trace(g, g->vmstate);
  uint8_t *p, *h;
  if (tn) mp_want_trace(s, g, tn);	/* May write a symbol. */
  h = p = s->pos;
  if (tn) {
    *p++ = MP_AEV_FREE | MP_SRC_TRACE;
    p = mp_put_uleb_fast(p, tn);
  } else {
    *p++ = MP_AEV_FREE | MP_SRC_INTERNAL;
  }
  p = mp_put_delta(p, h, MP_EV_OLD8, &s->st.old_addr,
		   (uint64_t)(uintptr_t)ptr);
  s->pos = mp_put_uleb_near(p, osize);
  mp_settle(s);
}

/* A prototype or trace we named may be about to be freed: forget it. */
static MP_INLINE void mp_stack_sym_free(mp_state *s, void *ptr, size_t osize)
{
  if (osize >= s->sym_min && mp_sym_forget(s, ptr)) mp_stack_forget(s);
}

/* For native events (mp_native.c), on the VM's thread inside an event:
** the node of the Lua stack now (from: the caller's frame), 0 if no Lua
** code runs (the VM's own work, the host), and into *own (unless NULL)
** whether the VM does its own work (the collector, the JIT compiler);
** the node of frame f on node parent (0: out of memory); and the event
** ev (MP_AEV_*) at node, its old block (frees, reallocations) and its new
** one (the rest). */
uint32_t mp_stack_here(mp_state *s, const void *from, int *own);
uint32_t mp_stack_child(mp_state *s, uint32_t parent, const mp_snode *f);
void mp_stack_event(mp_state *s, int ev, uint32_t node, uint64_t oaddr,
		    uint64_t osize, uint64_t naddr, uint64_t nsize);

#endif
