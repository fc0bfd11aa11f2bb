/*
** mp_traceline.c: the line a trace was at when it allocated.
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

#include <string.h>

#include "lj_obj.h"
#include "lj_frame.h"
#include "lj_jit.h"
#include "lj_dispatch.h"
#include "lj_ir.h"
#include "lj_ircall.h"
#include "lj_tab.h"

#include "mp_tab.h"
#include "mp_traceline.h"
#include "mp_sym.h"

/* See mp_traceline.h. */
uintptr_t mp_scan_ret(mp_stacks *st, const GCtrace *T, const void *from)
{
  const uintptr_t *base = (const uintptr_t *)from, *w;
  const uintptr_t *end = base + MP_SCAN_BYTES / sizeof(uintptr_t);
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

/* The prototype of Lua function fn (of the base frame of a trace), or
** NULL if fn is not one. */
static inline const GCproto *base_proto(const GCfunc *fn)
{
  if (!fn || fn->c.gct != ~LJ_TFUNC || !isluafunc(fn)) return NULL;
  return funcproto(fn);
}


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
  BCReg slot;		/* The trace's slot of the innermost frame's base. */
  SnapNo sn;
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
  o->slot = (BCReg)top + 1 + LJ_FR2;
  o->sn = sn;
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

/* See mp_traceline.h. */
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
  /* The iterators of pairs() and ipairs(), which compiled code never
  ** allocates in (lj_record.c records them inline). */
  memset(st->iterff, 0, sizeof(st->iterff));
  lua_getglobal(L, "next");
  lua_getglobal(L, "ipairs");
  if (lua_isfunction(L, -1)) {
    lua_newtable(L);
    if (lua_pcall(L, 1, 1, 0) != 0) lua_pushnil(L);
  }
  for (i = 0; i < 2; i++) {
    const GCfunc *fn = (const GCfunc *)lua_topointer(L, -1 - i);
    if (lua_iscfunction(L, -1 - i) && fn->c.ffid > FF_C)
      st->iterff[i] = fn->c.ffid;
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
  const uint8_t *iterff;	/* mp_stacks.iterff. */
  unsigned scanned;	/* Bytecodes read. */
  int lost;		/* The path was not followed to its end. */
  const GCproto *tpt;	/* A test whose way the trace tells (test_way()): */
  unsigned tlevel;	/* its frame's level, */
  BCPos tjmp;		/* the jump after it, */
  BCPos tto;		/* and where the way taken goes. */
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

/* Whether the ITERC at pos of pt (in the base frame when level is 0)
** calls next or the ipairs iterator, which compiled code runs inline and
** never allocates in: the iterator (in its slot, written before the loop)
** is then a constant the trace checks. */
static int iter_builtin(const mp_tcand *c, const GCproto *pt, BCPos pos,
			unsigned level)
{
  const TValue *v;
  const GCfunc *fn;
  BCReg r = bc_a(proto_bc(pt)[pos]);
  if (level || !c->base || r < 3 || !c->iterff[0]) return 0;
  v = c->base + r - 3;
  if (!tvisfunc(v)) return 0;
  fn = funcV(v);
  if (!isffunc(fn) || (fn->c.ffid != c->iterff[0] &&
		       fn->c.ffid != c->iterff[1]))
    return 0;
  return traced_func(c->T, fn);
}

/* The type trace T gave its slot s at snapshot sn: the snapshot's, or
** for a slot the trace has not written (a snapshot leaves those out), its
** load's; -1 if not known. */
static int slot_type(const GCtrace *T, SnapNo sn, BCReg s)
{
  const SnapShot *snap = &T->snap[sn];
  const SnapEntry *map = &T->snapmap[snap->mapofs];
  MSize i;
  IRRef r;
  for (i = 0; i < snap->nent; i++)
    if (snap_slot(map[i]) == s)
      return (int)irt_type(T->ir[snap_ref(map[i])].t);
  for (r = REF_FIRST; r < T->nins; r++)
    if (T->ir[r].o == IR_SLOAD && T->ir[r].op1 == s &&
	!(T->ir[r].op2 & IRSLOAD_FRAME))
      return (int)irt_type(T->ir[r].t);
  return -1;
}

#define MP_TWRITES	32	/* Slots written before a test, at most. */

/* Note in *c the way T took at the first test on the straight line from
** the pc of snapshot *a in its innermost frame, when it is a test of a
** value's truth (IST, ISF, ISTC, ISFC) that no instruction before it
** changes: the trace specialised the value to its type, which says the
** way (nil and false are false). A trace that starts after a call (a
** stitched builtin, as string.find with a pattern) starts at such a test,
** and its first snapshot's pc is the test, both ways still open. */
static void test_way(const GCtrace *T, const mp_tsnap *a, mp_tcand *c)
{
  const GCproto *pt = a->f[a->n - 1].pt;
  BCReg written[MP_TWRITES];
  unsigned nw = 0, i;
  BCPos p;
  for (p = a->pos; p + 1 < pt->sizebc; p++) {
    BCIns ins = proto_bc(pt)[p], jmp = proto_bc(pt)[p + 1];
    BCOp op = bc_op(ins);
    if (op >= BC_ISTC && op <= BC_ISF) {
      int t, truth, jumps;
      for (i = 0; i < nw; i++)
	if (written[i] == bc_d(ins)) return;
      if (bc_op(jmp) != BC_JMP ||
	  (t = slot_type(T, a->sn, a->slot + bc_d(ins))) < 0)
	return;
      truth = t != IRT_NIL && t != IRT_FALSE;
      jumps = op == BC_IST || op == BC_ISTC ? truth : !truth;
      c->tpt = pt;
      c->tlevel = a->n - 1;
      c->tjmp = p + 1;
      c->tto = jumps ? p + 2 + bc_j(jmp) : p + 2;
      return;
    }
    if ((op >= BC_USETV && op <= BC_USETP) || op == BC_GSET ||
	(op >= BC_TSETV && op <= BC_TSETR))
      continue;	/* They write no slot. */
    if (op < BC_MOV || op > BC_TGETR || op == BC_UCLO) return;
    if (op == BC_KNIL) {	/* Slots a to d. */
      BCReg r;
      for (r = bc_a(ins); r <= bc_d(ins); r++) {
	if (nw == MP_TWRITES) return;
	written[nw++] = r;
      }
    } else {
      if (nw == MP_TWRITES) return;
      written[nw++] = bc_a(ins);
    }
  }
}

/* Note instruction pos of pt (frame level of snapshot from) in *c. */
static void cand_add(mp_tcand *c, const GCproto *pt, BCPos pos,
		     unsigned level, int from)
{
  BCOp op = bc_op(proto_bc(pt)[pos]);
  int a = can_alloc(op);
  uint64_t line;
  if (!a || !(group_of(op) & c->groups)) return;
  if (op == BC_ITERC && iter_builtin(c, pt, pos, level)) return;
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
      v = mp_tab_str(tabref(fn->l.env), gco2str(proto_kgc(pt, ~(ptrdiff_t)bc_d(w))));
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
    if (op == BC_JMP && p == c->tjmp && pt == c->tpt && level == c->tlevel &&
	!from && !c->depth) {
      to2[k++] = c->tto;	/* The way test_way() found. */
    } else switch (op) {
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

/* Whether snapshot sn of T is where the interpreter resumes after the
** trace's base frame returned, straight from the base frame at snapshot
** *a: a trace may return below its base frame, and then its snapshots
** name pcs in the caller's code. Only when sn's pc follows a call (the
** return lands there, so nothing of the caller ran before sn) is the way
** from *a known: to the base frame's return. */
static int left_base(GCtrace *T, SnapNo sn, const mp_tsnap *a)
{
  SnapShot *snap = &T->snap[sn];
  SnapEntry *map = &T->snapmap[snap->mapofs];
  const BCIns *pc = snap_pc(&map[snap->nent]);
  const GCproto *pt = a->f[0].pt;
#if LJ_FR2
  uint64_t pcbase;
  memcpy(&pcbase, &map[snap->nent], sizeof(pcbase));
  if (pcbase & 0xff) return 0;	/* In a frame above: not a return. */
#endif
  if (a->n != 1 || a->partial || a->stitch || !pt) return 0;
  /* (sn's pc is not in the base frame's code: snap_at() failed.) */
  if (pc >= proto_bc(pt) && pc < proto_bc(pt) + pt->sizebc) return 0;
  /* A pc the return lands on is a Lua function's, after its call. */
  return bc_iscall(pc[-1]);
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
  c.iterff = st->iterff;
  c.T = T;
  c.base = slots;
  if (!at.stitch) test_way(T, &at, &c);
  if (b < T->nsnap && snap_at(T, b, basefn, base, &next))
    path_scan(J, &at, &next, &c);
  else if (b < T->nsnap && !left_base(T, b, &at))
    c.lost = 1;
  else	/* The last snapshot, or the base frame returns before the next. */
    path_scan(J, &at, NULL, &c);
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
    if (fr->partial || c.lost) return 1;
    if (lv == 0) {
      /* From the base frame: billed to the call that made it, in the
      ** frame below the trace (locate_trace() takes it from there). */
      if (!base) return 0;
      e->incaller = 1;
      e->frame.kind = MP_FK_LUA;
      return 1;
    }
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
    /* When all of them are known; and where the base frame called the
    ** first, from the link of the snapshot's frame above it. */
    if (i == lv && x == c.k[k].npath) {
      e->ninl = n;
      if (base && lv >= 1 && fr->n > 1 && fr->f[0].pt == base)
	e->baseline = (uint32_t)mp_proto_line(base, fr->f[1].call);
    }
  }
  e->frame.kind = MP_FK_LUA;
  e->frame.a = (uint64_t)(uintptr_t)c.k[k].pt;
  e->frame.b = (uint32_t)c.k[k].line;
  return 1;
}

/* See mp_traceline.h. */
int mp_trace_line(mp_state *s, GCtrace *T, TraceNo tn, const GCfunc *basefn,
		  const TValue *slots, uintptr_t ret, mp_snode *f, mp_snode *inl,
		  unsigned *ninl, uint32_t *baseline, int cached)
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
  *baseline = e->baseline;
  memcpy(inl, e->inl, e->ninl * sizeof(*inl));
  return e->incaller ? 3 : e->inbase ? 2 : 1;
}
