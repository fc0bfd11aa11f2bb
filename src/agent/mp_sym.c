/*
** mp_sym.c: symbols, written into the stream the first time an event (or
** a stack node) refers to them, and again when an address or a trace
** number comes to name another object (see mp_sym.h).
*/

#include <dlfcn.h>
#include <string.h>
#include <time.h>

#include "lj_obj.h"
#include "lj_bc.h"
#include "lj_jit.h"
#include "lj_dispatch.h"

#include "mp_agent.h"
#include "mp_seen.h"
#include "mp_sym.h"
#include "mp_names.h"
#include "mp_stream.h"

static void put_cfunc(mp_state *s, uint64_t addr, const char *name, size_t n);

/* -- Function names ------------------------------------------------------- */

/* Write the name record of prototype pt (its symbol just written) if its
** parent told it before (name_children()), else if a table reached it at
** start (mp_names_lua(): a function made before the recording, whose
** parent is gone: a module's M.f). */
static void put_fname_of(mp_state *s, const GCproto *pt)
{
  uint32_t *v;
  char name[MP_FNAME_MAX];
  size_t n;
  if (s->fnames.count && (v = mp_hash_get(&s->fnames, (uintptr_t)pt))) {
    int same = s->fname[*v].chunk == proto_chunkname(pt) &&
	       s->fname[*v].firstline == pt->firstline;
    if (same)
      put_cfunc(s, MP_FNAME_TAG | (uintptr_t)pt, s->fname[*v].name,
		strlen(s->fname[*v].name));
    mp_hash_del(&s->fnames, (uintptr_t)pt);
    if (same) return;
  }
  if ((n = mp_names_lua(&s->luanames, pt, name, sizeof(name))) != 0)
    put_cfunc(s, MP_FNAME_TAG | (uintptr_t)pt, name, n);
}

/* Name the functions pt makes (its FNEW instructions, mp_fnew_name()):
** write the name of each whose symbol is written, keep the others' for
** when theirs is. A function exists only once its parent made it, and
** making it allocates in the parent, so the parent's symbol usually comes
** first; one whose parent died before recording started stays unnamed.
** Once per prototype, in the time of a pass over its bytecode. */
static void name_children(mp_state *s, const GCproto *pt)
{
  const BCIns *bc = proto_bc(pt);
  BCPos i;
  if (!(pt->flags & PROTO_CHILD)) return;
  for (i = 0; i < pt->sizebc; i++) {
    char name[MP_FNAME_MAX];
    const GCproto *c;
    size_t n;
    mp_fname *f;
    if (bc_op(bc[i]) != BC_FNEW ||
	!(n = mp_fnew_name(pt, i, name, sizeof(name))))
      continue;
    c = gco2pt(proto_kgc(pt, ~(ptrdiff_t)bc_d(bc[i])));
    if (mp_hash_has(&s->protos, (uintptr_t)c)) {
      put_cfunc(s, MP_FNAME_TAG | (uintptr_t)c, name, n);
      continue;
    }
    if (s->nfname == s->capfname) {
      uint32_t cap = s->capfname ? 2 * s->capfname : 64;
      mp_fname *e = realloc(s->fname, cap * sizeof(*e));
      if (!e) return;	/* Out of memory: unnamed. */
      s->fname = e;
      s->capfname = cap;
    }
    if (!s->fnames.map) mp_hash_init_map(&s->fnames);
    if (mp_hash_put(&s->fnames, (uintptr_t)c, s->nfname) < 0) return;
    f = &s->fname[s->nfname++];
    f->chunk = proto_chunkname(c);
    f->firstline = c->firstline;
    memcpy(f->name, name, n + 1);
  }
}

/* See mp_sym.h. */
void mp_sym_proto(mp_state *s, const GCproto *pt)
{
  GCstr *name;
  uint8_t *p;
  int r = mp_hash_add(&s->protos, (uintptr_t)pt);
  if (r == 0) { s->last_proto = pt; return; }
  if (r < 0) return;	/* Out of memory: the symbol is written again later. */
  mp_sample_mark(s, (uintptr_t)pt);
  s->last_proto = pt;
  name = proto_chunkname(pt);
  p = s->pos;
  *p++ = MP_AEV_SYMTAB | MP_SRC_LFUNC;
  p = mp_put_uleb(p, (uint64_t)(uintptr_t)pt);
  if (pt->firstline == ~(BCLine)0 && name->len < 200) {
    /* One of LuaJIT's builtins written in Lua (a trace may start in it):
    ** named as the VM's debug info names it, first line 0. */
    p = mp_put_uleb(p, name->len + 11);
    memcpy(p, "=[builtin:", 10);
    memcpy(p + 10, strdata(name), name->len);
    p[10 + name->len] = ']';
    s->pos = p + 11 + name->len;
    *s->pos++ = 0;
    mp_settle(s);
    return;
  }
  if (name->len <= MP_NAME_MAX) {
    p = mp_put_uleb(p, name->len);
    s->pos = p;
    mp_settle(s);
    mp_sink_put(s, strdata(name), name->len);
  } else {	/* Cut (see MP_NAME_MAX). */
    char cut[64], dec[24];
    size_t n = sizeof(MP_NAME_CUT_HEAD) - 1, k = 0;
    MSize len = name->len;
    do { dec[k++] = (char)('0' + len % 10); len /= 10; } while (len);
    memcpy(cut, MP_NAME_CUT_HEAD, n);
    while (k) cut[n++] = dec[--k];
    memcpy(cut + n, MP_NAME_CUT_TAIL, sizeof(MP_NAME_CUT_TAIL) - 1);
    n += sizeof(MP_NAME_CUT_TAIL) - 1;
    p = mp_put_uleb(p, MP_NAME_MAX);
    s->pos = p;
    mp_settle(s);
    mp_sink_put(s, strdata(name), MP_NAME_MAX - n);
    mp_sink_put(s, cut, n);
  }
  s->pos = mp_put_uleb(s->pos, (uint64_t)pt->firstline);
  mp_settle(s);
  put_fname_of(s, pt);
  name_children(s, pt);
}

/* Append hex digits of v to p. */
static char *put_hex(char *p, uintptr_t v)
{
  char tmp[2 * sizeof(v)];
  int n = 0;
  do { tmp[n++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
  while (n) *p++ = tmp[--n];
  return p;
}

/* Copy NUL-terminated src into out (size bytes), truncating; its length. */
static size_t copy_name(char *out, size_t size, const char *src)
{
  size_t n = strlen(src);
  if (n > size) n = size;
  memcpy(out, src, n);
  return n;
}

/* Name of C function f: its Lua name in a loaded module, else its dynamic
** symbol, else "module (main)" for the host's entry (the bottom of the main
** thread's stack: luajit's main), else "module+0xoffset" (out has at least
** 64 bytes). */
static size_t cfunc_name(mp_state *s, const void *f, char *out, size_t size)
{
  Dl_info info;
  const char *name;
  size_t n = mp_names_label(&s->names, f, out, size);
  if (n) return n;
  if (!dladdr(f, &info) || !info.dli_fname) {	/* Unknown module. */
    memcpy(out, "?+0x", 4);
    return (size_t)(put_hex(out + 4, (uintptr_t)f) - out);
  }
  if (info.dli_sname && info.dli_saddr == f)
    return copy_name(out, size, info.dli_sname);
  name = strrchr(info.dli_fname, '/');
  n = copy_name(out, size - 24, name ? name + 1 : info.dli_fname);
  if (f == s->host_entry) {
    memcpy(out + n, " (main)", 7);
    return n + 7;
  }
  memcpy(out + n, "+0x", 3);
  return (size_t)(put_hex(out + n + 3,
			  (uintptr_t)f - (uintptr_t)info.dli_fbase) - out);
}

/* Append a C function symbol: address addr named name (n bytes, at most
** 256, within MP_SLACK). */
static void put_cfunc(mp_state *s, uint64_t addr, const char *name, size_t n)
{
  uint8_t *p = s->pos;
  *p++ = MP_AEV_SYMTAB | MP_SRC_CFUNC;
  p = mp_put_uleb(p, addr);
  p = mp_put_uleb(p, n);
  memcpy(p, name, n);
  s->pos = p + n;
  mp_settle(s);
}

/* See mp_sym.h. */
void mp_sym_cfunc(mp_state *s, const void *f)
{
  char name[256];
  size_t n;
  if (mp_hash_add(&s->cfuncs, (uintptr_t)f) <= 0) return;
  n = cfunc_name(s, f, name, sizeof(name));
  put_cfunc(s, (uint64_t)(uintptr_t)f, name, n);
}

/* See mp_sym.h. */
uint64_t mp_sym_cclosure(mp_state *s, const GCfunc *fn)
{
  char name[256];
  unsigned k;
  uint64_t f = (uint64_t)(uintptr_t)fn->c.f, id;
  size_t n;
  if (!mp_hash_has(&s->names.shared, f) ||
      !(n = mp_names_closure(&s->names, fn->c.f, fn, name, sizeof(name), &k)))
    return f;
  id = f | (uint64_t)k << 56;	/* Above any user-space address. */
  if (mp_hash_add(&s->cfuncs, id) > 0) put_cfunc(s, id, name, n);
  return id;
}

/* See mp_sym.h. */
void mp_sym_trace(mp_state *s, global_State *g, TraceNo n)
{
  jit_State *J = G2J(g);
  GCtrace *T;
  GCproto *pt;
  const BCIns *pc;
  mp_tracesym *e;
  uint8_t *p;
  if (n >= J->sizetrace) return;
  T = (GCtrace *)gcref(J->trace[n]);
  if (!T) return;
  pt = gco2pt(gcref(T->startpt));
  pc = mref(T->startpc, const BCIns);
  if (n >= s->ntraces) {	/* Grow to the VM's own trace array size. */
    size_t cap = J->sizetrace > n ? J->sizetrace : n + 1;
    mp_tracesym *t = realloc(s->traces, cap * sizeof(*t));
    if (!t) return;
    memset(t + s->ntraces, 0, (cap - s->ntraces) * sizeof(*t));
    s->traces = t;
    s->ntraces = cap;
  }
  e = &s->traces[n];
  switch (mp_hash_add(&s->tracesyms, (uintptr_t)T)) {
  case -1: return;
  case 1: mp_sample_mark(s, (uintptr_t)T); break;
  }
  e->trace = T;
  e->gen++;
  mp_want_proto(s, pt);
  p = s->pos;
  *p++ = MP_AEV_SYMTAB | MP_SRC_TRACE;
  p = mp_put_uleb(p, n);
  p = mp_put_uleb(p, (uint64_t)(uintptr_t)pt);
  p = mp_put_uleb(p, mp_proto_line(pt, proto_bcpos(pt, pc)));
  s->pos = p;
  mp_settle(s);
}

/* See mp_sym.h. */
int mp_sym_forget(mp_state *s, void *ptr)
{
  if (s->protos.count && mp_hash_del(&s->protos, (uintptr_t)ptr)) {
    if (ptr == s->last_proto) s->last_proto = NULL;
  } else if (s->tracesyms.count &&
	     mp_hash_del(&s->tracesyms, (uintptr_t)ptr)) {
    TraceNo n = ((GCtrace *)ptr)->traceno;	/* Not freed yet. */
    if (n < s->ntraces && s->traces[n].trace == ptr) {
      s->traces[n].trace = NULL;
    } else {	/* Flushed (jit.flush() zeroes its number): look for it,
		   or a new trace at its address would keep its symbol. */
      size_t i;
      for (i = 0; i < s->ntraces; i++)
	if (s->traces[i].trace == ptr) s->traces[i].trace = NULL;
    }
  } else {
    return 0;
  }
  mp_sample_unmark(s, (uintptr_t)ptr);
  return 1;
}

/* See mp_sym.h. */
void mp_sym_host(mp_state *s)
{
  if (s->host_written) return;
  s->host_written = 1;
  put_cfunc(s, 0, s->host_name, strlen(s->host_name));
}

/* See mp_sym.h. */
void mp_sym_gcstart(mp_state *s)
{
  put_cfunc(s, MP_GCSTART_ADDR, MP_GCSTART_NAME, sizeof(MP_GCSTART_NAME) - 1);
}
