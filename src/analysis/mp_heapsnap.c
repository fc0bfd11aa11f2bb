/*
** mp_heapsnap.c: paths, dominators and retained sizes of a heap snapshot
** (see mp_heapsnap.h).
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_heapsnap.h"
#include "reader/mp_label.h"
#include "reader/mp_strtab.h"
#include "util/mp_hash.h"

#define NONE	MP_SNAP_NONE

static const char *const type_names[MP_HT__MAX] = {
  "?", "root", "string", "upvalue", "thread", "prototype", "Lua function",
  "C function", "builtin", "trace", "cdata", "table", "userdata"
};

const char *mp_heapsnap_type(unsigned t)
{
  return t < MP_HT__MAX ? type_names[t] : "?";
}

void mp_heapsnap_free(mp_heapsnap *h)
{
  free(h->parent); free(h->up); free(h->depth); free(h->weakonly); free(h->idom);
  free(h->retained); free(h->head);
  memset(h, 0, sizeof(*h));
}

/* Breadth first from the root: strong references, then weak ones from
** everything reached, for what only they reach. order gets the objects
** in the order met; returns their number. */
static uint32_t bfs(mp_heapsnap *h, uint32_t *order)
{
  const mp_snapshot *sn = h->sn;
  uint32_t head = 0, tail = 0, i, pass;
  for (i = 0; i < sn->n; i++) h->depth[i] = h->parent[i] = h->up[i] = NONE;
  h->depth[0] = 0;
  order[tail++] = 0;
  for (pass = 0; pass < 2; pass++) {
    if (pass) head = 0;
    while (head < tail) {
      uint32_t v = order[head++], k;
      for (k = sn->first[v]; k < sn->first[v + 1]; k++) {
	const mp_snap_edge *e = &sn->e[k];
	if (e->to == NONE || h->depth[e->to] != NONE) continue;
	if (e->weak != pass) continue;
	h->depth[e->to] = h->depth[v] + 1;
	h->parent[e->to] = k;
	h->up[e->to] = v;
	h->weakonly[e->to] = pass || h->weakonly[v];
	order[tail++] = e->to;
      }
      /* In the weak pass, what an object reached weakly reaches
      ** strongly is reached weakly too: both kinds are followed. */
      if (pass) for (k = sn->first[v]; k < sn->first[v + 1]; k++) {
	const mp_snap_edge *e = &sn->e[k];
	if (e->to == NONE || h->depth[e->to] != NONE) continue;
	h->depth[e->to] = h->depth[v] + 1;
	h->parent[e->to] = k;
	h->up[e->to] = v;
	h->weakonly[e->to] = 1;
	order[tail++] = e->to;
      }
    }
  }
  return tail;
}

/* Climb from u to the forest's root of its tree and compress the path
** (Lengauer and Tarjan's eval): every node on it then hangs from the
** root's child and carries the label of least semidominator above it.
** Nodes numbered lo or more are linked. No stack: the path's links are
** reversed on the way up and restored, compressed, on the way down. */
static void compress(uint32_t *anc, uint32_t *label, const uint32_t *semi,
		     uint32_t u, uint32_t lo)
{
  uint32_t prev = NONE, x = u, above, y;
  while (anc[x] >= lo) {	/* Up, reversing: anc[x] is then its child. */
    uint32_t next = anc[x];
    anc[x] = prev;
    prev = x;
    x = next;
  }
  /* x hangs from a root: it stays; below it, each takes the least label
  ** of the one above and hangs from the root too. */
  for (above = x, y = prev; y != NONE; above = y, y = prev) {
    prev = anc[y];
    if (semi[label[above]] < semi[label[y]]) label[y] = label[above];
    anc[y] = anc[above];
  }
}

/* Dominators of the strong graph (Lengauer and Tarjan, "A Fast Algorithm
** for Finding Dominators in a Flowgraph", with path compression: O(E log
** V); the iterative algorithm of Cooper, Harvey and Kennedy was tried
** first, but a string key shared by a million tables of a list made it
** quadratic), and retained sizes. Everything is in depth-first numbers
** (dfs: 0 the root), without recursion.
**
** Memory: besides the predecessor lists (4 bytes an object and an edge),
** nothing of its own. Its five arrays of an object are those of the
** paths and of the retained sizes (parent, up, depth, and retained as
** two halves), which are filled after it; the buckets of the algorithm
** live in the semidominators of vertices not yet processed (whose
** semidominator is then themselves, not read) and in the dominators of
** vertices not yet taken out of a bucket. */
static int dominators(mp_heapsnap *h)
{
  const mp_snapshot *sn = h->sn;
  uint32_t n = sn->n, i, k, nd = 0, sp = 0;
  uint32_t *node = h->parent;		/* Number -> node. */
  uint32_t *anc = h->up;	/* The forest's ancestor links; until a
				   node is linked (every node numbered lo
				   or more is), its DFS tree parent. */
  uint32_t *semi = h->depth;	/* Processed: its semidominator; not yet:
				   the head of its bucket. */
  uint32_t *label = (uint32_t *)h->retained;
  uint32_t *dom = label + n;	/* In a bucket: the next in it. */
  /* The DFS's own arrays, in those not used yet. */
  uint32_t *dfn = semi, *stack = label, *cur = dom, lo;
  uint32_t *pfirst = calloc((size_t)n + 1, sizeof(*pfirst));
  uint32_t *pred = malloc((size_t)(sn->ne ? sn->ne : 1) * sizeof(*pred));
  if (!pfirst || !pred) {
    free(pfirst);
    free(pred);
    return -1;
  }
  for (i = 0; i < n; i++) dfn[i] = NONE;
  /* Depth-first numbering, iterative: a node is numbered when entered. */
  dfn[0] = nd;
  node[nd] = 0;
  anc[nd++] = NONE;
  stack[sp] = 0;
  cur[sp++] = sn->first[0];
  while (sp) {
    uint32_t v = stack[sp - 1];
    if (cur[sp - 1] < sn->first[v + 1]) {
      const mp_snap_edge *e = &sn->e[cur[sp - 1]++];
      if (e->weak || e->to == NONE || dfn[e->to] != NONE) continue;
      dfn[e->to] = nd;
      node[nd] = e->to;
      anc[nd++] = dfn[v];
      stack[sp] = e->to;
      cur[sp++] = sn->first[e->to];
    } else {
      sp--;
    }
  }
  /* Predecessors by strong reference among the numbered, by number. */
  for (i = 0; i < n; i++)
    if (dfn[i] != NONE)
      for (k = sn->first[i]; k < sn->first[i + 1]; k++)
	if (!sn->e[k].weak && sn->e[k].to != NONE)
	  pfirst[dfn[sn->e[k].to] + 1]++;
  for (i = 0; i < nd; i++) pfirst[i + 1] += pfirst[i];
  for (i = 0; i < n; i++)
    if (dfn[i] != NONE)
      for (k = sn->first[i]; k < sn->first[i + 1]; k++)
	if (!sn->e[k].weak && sn->e[k].to != NONE)
	  pred[pfirst[dfn[sn->e[k].to]]++] = dfn[i];
  for (i = nd; i > 0; i--) pfirst[i] = pfirst[i - 1];
  pfirst[0] = 0;
  /* What is not numbered is marked NONE in idom; the numbering is done
  ** with. */
  for (i = 0; i < n; i++) h->idom[i] = dfn[i] == NONE ? NONE : 0;
  for (i = 0; i < nd; i++) {
    semi[i] = NONE;	/* An empty bucket. */
    label[i] = i;
  }
  for (i = nd; i-- > 1; ) {
    uint32_t w = i, p = anc[w], v, next, sw;
    lo = w + 1;
    /* Its bucket was emptied with its last child's: semi[w] is free. */
    sw = w;
    for (k = pfirst[w]; k < pfirst[w + 1]; k++) {
      uint32_t u = pred[k];
      if (u >= lo) {	/* eval(u), compressing its path. */
	compress(anc, label, semi, u, lo);
	u = label[u];
	if (semi[u] < sw) sw = semi[u];
      } else if (u < sw) {
	sw = u;		/* Not processed: its own semidominator. */
      }
    }
    semi[w] = sw;
    /* Into the bucket of sw (not processed: sw < w). */
    dom[w] = semi[sw];
    semi[sw] = w;
    lo = w;	/* link(parent, w): anc[w] is p already */
    for (v = semi[p]; v != NONE; v = next) {
      uint32_t u = v;
      next = dom[v];
      if (v >= lo) {
	compress(anc, label, semi, v, lo);
	u = label[v];
      }
      dom[v] = semi[u] < semi[v] ? u : p;
    }
    semi[p] = NONE;
  }
  dom[0] = 0;
  for (i = 1; i < nd; i++)
    if (dom[i] != semi[i]) dom[i] = dom[dom[i]];
  free(pfirst);
  free(pred);
  /* The dominators, before retained (where label and dom are) is set. */
  for (i = 1; i < nd; i++) h->idom[node[i]] = node[dom[i]];
  for (i = 0; i < n; i++) h->retained[i] = sn->size[i];
  /* What no strong reference reaches is the root's alone. */
  for (i = 1; i < n; i++)
    if (h->idom[i] == NONE) {
      h->idom[i] = 0;
      h->retained[0] += sn->size[i];
      h->nweak++;
      h->weakbytes += sn->size[i];
    }
  for (i = nd; i-- > 1; )	/* Dominated before dominators. */
    h->retained[h->idom[node[i]]] += h->retained[node[i]];
  return 0;
}

/* The bytes of string object id, or NULL if the file does not give them. */
static const char *str_of(const mp_snapshot *sn, uint32_t id)
{
  if (id >= sn->n || sn->type[id] != MP_HT_STR || !sn->name[id]) return NULL;
  return sn->names + sn->name[id] - 1;
}

/* The namespaces: what the root's globals and registry edges reach, and
** the registry's _LOADED (package.loaded). */
static void namespaces(mp_heapsnap *h)
{
  const mp_snapshot *sn = h->sn;
  uint32_t k, n = 0;
  for (k = 0; k < MP_HEAPSNAP_NS; k++) h->ns[k] = NONE;
  for (k = sn->first[0]; k < sn->first[1] && n < 2; k++) {
    const mp_snap_edge *e = &sn->e[k];
    if (e->to != NONE &&
	(mp_snap_arg(sn, e) == MP_HS_GLOBALS || mp_snap_arg(sn, e) == MP_HS_REGISTRY)) {
      h->ns[n++] = e->to;
      if (mp_snap_arg(sn, e) == MP_HS_REGISTRY) {
	uint32_t j;
	for (j = sn->first[e->to]; j < sn->first[e->to + 1]; j++) {
	  const mp_snap_edge *f = &sn->e[j];
	  const char *name = f->kind == MP_HE_FIELD ?
			     str_of(sn, (uint32_t)mp_snap_arg(sn, f)) : NULL;
	  if (name && !strcmp(name, "_LOADED") && f->to != NONE)
	    h->ns[2] = f->to;
	}
      }
    }
  }
}

#define PATH_HEAD	12	/* Steps shown before and after "...". */

/* The ancestor at depth PATH_HEAD of every object deeper than twice
** that (paths show its first and last PATH_HEAD steps: with it, a path
** of a million steps is named in 2 * PATH_HEAD, not a million), in
** order (parents before children, as bfs() met them); none when no
** object is that deep. 0, or -1 out of memory. */
static int heads(mp_heapsnap *h, const uint32_t *order, uint32_t nord)
{
  const mp_snapshot *sn = h->sn;
  uint32_t i, deep = 0;
  for (i = 1; i < sn->n && !deep; i++)
    deep = h->depth[i] != NONE && h->depth[i] > 2 * PATH_HEAD;
  if (!deep) return 0;
  if (!(h->head = malloc((size_t)sn->n * sizeof(*h->head)))) return -1;
  for (i = 0; i < sn->n; i++) h->head[i] = NONE;
  for (i = 1; i < nord; i++) {
    uint32_t v = order[i];
    h->head[v] = h->depth[v] == PATH_HEAD ? v :
		 h->depth[v] > PATH_HEAD ? h->head[h->up[v]] : NONE;
  }
  return 0;
}

int mp_heapsnap_build(mp_heapsnap *h, const mp_snapshot *sn)
{
  uint32_t n = sn->n, i, *order;
  memset(h, 0, sizeof(*h));
  h->sn = sn;
  h->parent = malloc((size_t)n * sizeof(*h->parent));
  h->up = malloc((size_t)n * sizeof(*h->up));
  h->depth = malloc((size_t)n * sizeof(*h->depth));
  h->weakonly = calloc(n, 1);
  h->idom = malloc((size_t)n * sizeof(*h->idom));
  h->retained = malloc((size_t)n * sizeof(*h->retained));
  if (!h->parent || !h->up || !h->depth || !h->weakonly || !h->idom ||
      !h->retained) {
    mp_heapsnap_free(h);
    return -1;
  }
  for (i = 1; i < n; i++) {
    h->count[sn->type[i]]++;
    h->bytes[sn->type[i]] += sn->size[i];
  }
  /* The dominators first: they work in the paths' arrays. */
  if (dominators(h) < 0 ||
      !(order = malloc((size_t)n * sizeof(*order)))) {
    mp_heapsnap_free(h);
    return -1;
  }
  if (heads(h, order, bfs(h, order)) < 0) {
    free(order);
    mp_heapsnap_free(h);
    return -1;
  }
  free(order);
  namespaces(h);
  return 0;
}

/* -- Names ------------------------------------------------------------------ */

typedef struct sbuf {
  char *b;
  size_t n, size;
} sbuf;

static void add(sbuf *s, const char *p, size_t len)
{
  while (len-- && s->n + 1 < s->size) s->b[s->n++] = *p++;
  s->b[s->n] = 0;
}

static void adds(sbuf *s, const char *p)
{
  add(s, p, strlen(p));
}

static void addf(sbuf *s, const char *fmt, unsigned long long v)
{
  char t[64];
  snprintf(t, sizeof(t), fmt, v);
  adds(s, t);
}

/* The first edge of id of kind k (and code, for SPECIAL), or NULL. */
static const mp_snap_edge *edge_of(const mp_snapshot *sn, uint32_t id,
				   unsigned k, uint64_t code)
{
  uint32_t j;
  if (id >= sn->n) return NULL;
  for (j = sn->first[id]; j < sn->first[id + 1]; j++)
    if (sn->e[j].kind == k && (k != MP_HE_SPECIAL || mp_snap_arg(sn, &sn->e[j]) == code))
      return &sn->e[j];
  return NULL;
}

char *mp_heapsnap_where(const mp_heapsnap *h, uint32_t id, char *buf,
			size_t size)
{
  const mp_snapshot *sn = h->sn;
  const mp_snap_edge *e;
  const char *chunk;
  sbuf s = { buf, 0, size };
  buf[0] = 0;
  if (id < sn->n && sn->type[id] == MP_HT_LFUNC) {
    e = edge_of(sn, id, MP_HE_PROTO, 0);
    id = e ? e->to : NONE;
  }
  if (id >= sn->n || sn->type[id] != MP_HT_PROTO) return buf;
  e = edge_of(sn, id, MP_HE_SPECIAL, MP_HS_CHUNK);
  chunk = e ? str_of(sn, e->to) : NULL;
  if (!chunk) return buf;
  if (!sn->name[id]) adds(&s, "main chunk of ");
  if (*chunk == '@' || *chunk == '=') {
    adds(&s, chunk + 1);
  } else {	/* Code loaded from a string: its name, or its first line. */
    size_t len = strlen(chunk), n = strcspn(chunk, "\r\n");
    int text = mp_name_is_text(chunk, len);
    n = mp_name_cut(chunk, n, MP_STRING_CHUNK_MAX);
    adds(&s, "[string \"");
    add(&s, chunk, n);
    adds(&s, text && n < len ? "...\"]" : "\"]");
  }
  if (sn->name[id]) addf(&s, ":%llu", sn->name[id]);
  return buf;
}

/* Is p a Lua identifier (and no keyword)? */
static int is_ident(const char *p)
{
  static const char *const kw[] = { "and", "break", "do", "else", "elseif",
    "end", "false", "for", "function", "goto", "if", "in", "local", "nil",
    "not", "or", "repeat", "return", "then", "true", "until", "while" };
  size_t i;
  if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
    return 0;
  for (i = 1; p[i]; i++)
    if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
	  p[i] == '_' || (p[i] >= '0' && p[i] <= '9')))
      return 0;
  for (i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
    if (!strcmp(p, kw[i])) return 0;
  return 1;
}

/* A string as a Lua literal, cut to 60 bytes. */
static void add_quoted(sbuf *s, const char *p)
{
  size_t i;
  adds(s, "\"");
  for (i = 0; p[i] && i < 60; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c == '"' || c == '\\') { add(s, "\\", 1); add(s, p + i, 1); }
    else if (c < 32 || c == 127) addf(s, "\\%llu", c);
    else add(s, p + i, 1);
  }
  if (p[i]) adds(s, "...");
  adds(s, "\"");
}

static const char *const root_names[MP_HS__MAX] = {
  "?", "main thread", "_G", "registry", "<metamethod name>",
  "<base metatable>", "<default I/O file>", "<awaiting __gc>",
  "<fixed string>", "<FFI finalizers>", "<FFI ctype metatables>",
  "<current thread>", "<chunk name>", "<trace>", "<start prototype>",
  "<linked trace>", "<trace constant>", "<buffer reference>"
};

/* The frame function of a local's step: its location ("in app.lua:3"). */
static void add_local_fn(const mp_heapsnap *h, sbuf *s, uint32_t k,
			 uint32_t f)
{
  const mp_snapshot *sn = h->sn;
  uint32_t j;
  char where[300];
  for (j = sn->first[f]; j < sn->first[f + 1]; j++) {
    const mp_snap_edge *e = &sn->e[j];
    if (e->kind == MP_HE_FRAME && mp_snap_arg(sn, e) == mp_snap_arg(sn, &sn->e[k]) >> 32) {
      mp_heapsnap_where(h, e->to, where, sizeof(where));
      if (*where) { adds(s, " in "); adds(s, where); }
      return;
    }
  }
}

/* Append the name of edge k as a reference (".items", "[3]", "<key>",
** "<upvalue sessions>", "_G"), without the space a path puts before a
** "<...>" step; nothing for the value of an upvalue. f: the object it
** leaves. */
static void add_name(const mp_heapsnap *h, sbuf *s, uint32_t k, uint32_t f)
{
  const mp_snapshot *sn = h->sn;
  const mp_snap_edge *e = &sn->e[k];
  const char *name;
  switch (e->kind) {
  case MP_HE_SPECIAL:
    adds(s, mp_snap_arg(sn, e) < MP_HS__MAX ? root_names[mp_snap_arg(sn, e)] : "?");
    break;
  case MP_HE_IDX: addf(s, "[%llu]", mp_snap_arg(sn, e)); break;
  case MP_HE_FIELD:
    name = str_of(sn, (uint32_t)mp_snap_arg(sn, e));
    if (!name) adds(s, "[<string>]");
    else if (is_ident(name)) { adds(s, "."); adds(s, name); }
    else { adds(s, "["); add_quoted(s, name); adds(s, "]"); }
    break;
  case MP_HE_KEY:
    adds(s, "[<");
    adds(s, mp_heapsnap_type(sn->type[mp_snap_arg(sn, e) < sn->n ? mp_snap_arg(sn, e) : 0]));
    adds(s, ">]");
    break;
  case MP_HE_NUMKEY: {
    double d;
    char t[40];
    uint64_t u = mp_snap_arg(sn, e);
    memcpy(&d, &u, sizeof(d));
    snprintf(t, sizeof(t), "[%.17g]", d);
    adds(s, t);
    break;
  }
  case MP_HE_BOOLKEY: adds(s, mp_snap_arg(sn, e) ? "[true]" : "[false]"); break;
  case MP_HE_LUDKEY: addf(s, "[<lightuserdata 0x%llx>]", mp_snap_arg(sn, e)); break;
  case MP_HE_KEYREF: adds(s, "<key>"); break;
  case MP_HE_META: adds(s, "<metatable>"); break;
  case MP_HE_ENV: adds(s, "<env>"); break;
  case MP_HE_PROTO: adds(s, "<proto>"); break;
  case MP_HE_UPVAL: {
    const mp_snap_edge *pe = sn->type[f] == MP_HT_LFUNC ?
			     edge_of(sn, f, MP_HE_PROTO, 0) : NULL;
    uint32_t u = pe && pe->to < sn->n ? mp_snap_uvnames(sn, pe->to) : 0;
    adds(s, "<upvalue ");
    if (u && mp_snap_arg(sn, e) < sn->uvnames[u - 1] && sn->names)
      adds(s, sn->names + sn->uvnames[u + mp_snap_arg(sn, e)]);
    else
      addf(s, "%llu", mp_snap_arg(sn, e) + 1);
    adds(s, ">");
    break;
  }
  case MP_HE_VALUE: break;	/* The upvalue's step named it. */
  case MP_HE_LOCAL: {
    adds(s, "<local ");
    adds(s, sn->names + (uint32_t)mp_snap_arg(sn, e));
    add_local_fn(h, s, k, f);
    adds(s, ">");
    break;
  }
  case MP_HE_SLOT: addf(s, "<slot %llu>", mp_snap_arg(sn, e)); break;
  case MP_HE_FRAME: addf(s, "<frame %llu>", mp_snap_arg(sn, e)); break;
  case MP_HE_CONST: adds(s, "<constant>"); break;
  }
}

char *mp_heapsnap_edge_name(const mp_heapsnap *h, uint32_t k, uint32_t from,
			    char *buf, size_t size)
{
  sbuf s = { buf, 0, size };
  buf[0] = 0;
  if (k >= h->sn->ne || from >= h->sn->n) return buf;
  add_name(h, &s, k, from);
  if (!s.n) adds(&s, "<value>");
  return buf;
}

/* Append the step of edge k (from object f) to the path in s. */
static void add_step(const mp_heapsnap *h, sbuf *s, uint32_t k, uint32_t f,
		     int folded)
{
  const mp_snapshot *sn = h->sn;
  const mp_snap_edge *e = &sn->e[k];
  const char *name;
  char where[300];
  if (folded && (e->kind == MP_HE_IDX || e->kind == MP_HE_FIELD ||
		 e->kind == MP_HE_KEY || e->kind == MP_HE_NUMKEY ||
		 e->kind == MP_HE_BOOLKEY || e->kind == MP_HE_LUDKEY)) {
    adds(s, "[*]");
    return;
  }
  if (e->kind == MP_HE_FIELD && (name = str_of(sn, (uint32_t)mp_snap_arg(sn, e))) &&
      !strcmp(name, "_LOADED") && !strcmp(s->b, "registry")) {
    s->n = 0;
    adds(s, "package.loaded");
  } else {
    /* A step that is no key of a table is a word of its own. */
    if (e->kind == MP_HE_SPECIAL ? f != 0 :
	e->kind >= MP_HE_META && e->kind != MP_HE_VALUE)
      add(s, " ", 1);
    add_name(h, s, k, f);
  }
  if (e->to < sn->n && sn->type[e->to] == MP_HT_LFUNC &&
      e->kind != MP_HE_FRAME) {
    mp_heapsnap_where(h, e->to, where, sizeof(where));
    if (*where) { adds(s, " ("); adds(s, where); adds(s, ")"); }
  }
}

/* Does the step of edge k leave a container of more than fold entries
** (not a namespace: the globals, the registry, package.loaded)? */
static int folds_from(const mp_heapsnap *h, uint32_t f, unsigned fold)
{
  const mp_snapshot *sn = h->sn;
  uint32_t i;
  if (!fold || !f || sn->first[f + 1] - sn->first[f] <= fold) return 0;
  for (i = 0; i < MP_HEAPSNAP_NS; i++)
    if (h->ns[i] == f) return 0;
  return 1;
}


char *mp_heapsnap_path(const mp_heapsnap *h, uint32_t id, unsigned fold,
		       char *buf, size_t size)
{
  const mp_snapshot *sn = h->sn;
  /* The steps shown: the first and the last PATH_HEAD, step i of a path
  ** of d at steps[i < PATH_HEAD ? i : i - (d - 2 * PATH_HEAD)] (all of
  ** them when d <= 2 * PATH_HEAD), with the object each leaves: no
  ** allocation, so nothing can fail; the climb skips from the last
  ** ones to the ancestor at depth PATH_HEAD (h->head). */
  uint32_t d, i, v, steps[2 * PATH_HEAD], from[2 * PATH_HEAD], skip;
  sbuf s = { buf, 0, size };
  buf[0] = 0;
  if (id >= sn->n || (id && h->parent[id] == NONE)) {
    adds(&s, "(unreached)");
    return buf;
  }
  if (id == 0) { adds(&s, "(roots)"); return buf; }
  d = h->depth[id];
  skip = d > 2 * PATH_HEAD ? d - 2 * PATH_HEAD : 0;
  for (v = id, i = d; i > 0;) {
    i--;
    if (i < PATH_HEAD || i >= PATH_HEAD + skip) {
      steps[i < PATH_HEAD ? i : i - skip] = h->parent[v];
      from[i < PATH_HEAD ? i : i - skip] = i ? h->up[v] : 0;
    }
    if (skip && h->head && i == PATH_HEAD + skip) {
      v = h->head[id];
      i = PATH_HEAD;
    } else {
      v = h->up[v];
    }
  }
  for (i = 0; i < d; i++) {
    uint32_t k, f;
    if (skip && i == PATH_HEAD) {
      addf(&s, " ... (%llu steps) ...", (unsigned long long)skip);
      i = d - PATH_HEAD;
    }
    k = steps[i < PATH_HEAD ? i : i - skip];
    f = from[i < PATH_HEAD ? i : i - skip];
    add_step(h, &s, k, f, folds_from(h, f, fold));
  }
  /* The value of an upvalue has its name; the upvalue object says so. */
  if (sn->type[id] == MP_HT_UPVAL) adds(&s, " (the upvalue object)");
  if (h->weakonly[id]) adds(&s, " (weak)");
  return buf;
}

#define TOP_INSERT	64	/* Tops of at most this many are made by
				   insertion; bigger ones (--top 0: all) by a
				   sort, as insertion is quadratic. */

static const uint64_t *by_value_v;	/* qsort's context; the reader is
					   one thread. */

/* Indexes by their value in by_value_v, largest first; ties by index. */
static int by_value(const void *pa, const void *pb)
{
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  if (by_value_v[a] != by_value_v[b])
    return by_value_v[a] > by_value_v[b] ? -1 : 1;
  return a < b ? -1 : a > b;
}

/* Put candidate index i (by its value v[i], coming in increasing i) into
** the top ids of at most n, *got of them so far: by insertion when n is
** small, else appended (top_sort() sorts them at the end; ids has room
** for every candidate then). */
static void top_put(const uint64_t *v, uint32_t i, uint32_t *ids, uint32_t n,
		    uint32_t *got)
{
  uint32_t j;
  if (n > TOP_INSERT) { ids[(*got)++] = i; return; }
  for (j = *got; j > 0 && v[ids[j - 1]] < v[i]; j--)
    if (j < n) ids[j] = ids[j - 1];
  if (j < n) {
    ids[j] = i;
    if (*got < n) (*got)++;
  }
}

/* The end of a top of more than TOP_INSERT: sort the got candidates,
** keep n. Their number. */
static uint32_t top_sort(const uint64_t *v, uint32_t *ids, uint32_t n,
			 uint32_t got)
{
  if (n <= TOP_INSERT) return got;
  by_value_v = v;
  qsort(ids, got, sizeof(*ids), by_value);
  return got < n ? got : n;
}

int mp_heapsnap_top(const mp_heapsnap *h, uint32_t *ids, uint32_t n)
{
  const mp_snapshot *sn = h->sn;
  uint64_t *maxchild = calloc(sn->n, sizeof(*maxchild));
  uint32_t i, got = 0, *all = NULL;
  if (!maxchild) return -1;
  /* A big top gathers every candidate first. */
  if (n > TOP_INSERT && !(all = malloc((size_t)sn->n * sizeof(*all)))) {
    free(maxchild);
    return -1;
  }
  for (i = 1; i < sn->n; i++)
    if (h->retained[i] > maxchild[h->idom[i]])
      maxchild[h->idom[i]] = h->retained[i];
  for (i = 1; i < sn->n; i++) {
    if (h->weakonly[i] || h->parent[i] == NONE) continue;
    if (maxchild[i] * 10 >= h->retained[i] * 9 && maxchild[i]) continue;
    /* By retained size, largest first; ties by number. */
    top_put(h->retained, i, all ? all : ids, n, &got);
  }
  free(maxchild);
  if (all) {
    got = top_sort(h->retained, all, n, got);
    memcpy(ids, all, (size_t)got * sizeof(*ids));
    free(all);
  }
  return (int)got;
}

/* -- Path classes ------------------------------------------------------------ */

/* The key of the step to object v, its path parent f: what its path
** shows of it (the edge's kind, and its argument but for a key), ~0 if
** the step is folded; *fo says whether it is. A table's keys are one
** step, <key>, whatever their values (and are folded with its entries). */
static uint64_t class_key(const mp_heapsnap *h, uint32_t v, uint32_t f,
			  unsigned fold, int *fo)
{
  const mp_snapshot *sn = h->sn;
  const mp_snap_edge *e = &sn->e[h->parent[v]];
  uint64_t a = mp_snap_arg(sn, e);
  *fo = (e->kind <= MP_HE_LUDKEY || e->kind == MP_HE_KEYREF) &&
	folds_from(h, f, fold);
  if (e->kind == MP_HE_KEYREF) return (uint64_t)e->kind << 56;
  if (*fo) return ~(uint64_t)0;
  if (e->kind == MP_HE_KEY) a = a < sn->n ? sn->type[a] : 0;  /* [<table>] */
  return (uint64_t)e->kind << 56 ^ a;
}

#define MULTI		0x80000000u	/* A class's first member: it has
					   others. */
#define SCAN_MAX	16	/* Edges of a path parent looked through for
				   a sibling of the same step. */

/* The class of object x, while classes are made: its first member. */
#define CLASS_OF(cls, x)	((cls)[x] & ~MULTI)

/* The class of every object reached into cls, by object (NONE for the
** root and what is not reached): numbered from 0 in the order of their
** first members in order (which gets the objects reached, by depth:
** *nobj of them); *ncp classes. 0, or -1 out of memory.
**
** A class is the step (its edge's key, or [*] if folded) from a class,
** the root's for the root's children. No record is kept of a class: it is
** named by its first member while they are made, and its step and parent
** class are those of that member. Most classes of a list-shaped heap have
** one member each; a class whose parent class has one member, f, can
** only hold children of f: a sibling of the same step is looked for among
** f's edges (when it has few), so that only the classes of parents with
** several members (or many edges) go into the hash index. Memory: the two
** arrays of an object (the caller's) and the index. */
static int class_map(const mp_heapsnap *h, unsigned fold, uint32_t *cls,
		     uint32_t *order, uint32_t *nobj, uint32_t *ncp)
{
  const mp_snapshot *sn = h->sn;
  uint32_t nc = 0, i, j;
  mp_hash index;
  mp_hash_init_map(&index);
  if (sn->n > MULTI) return -1;	/* 2^31 objects: no bit for MULTI. */
  for (i = 0; i < sn->n; i++) cls[i] = NONE;
  /* Objects by depth, so that a parent's class, and how many members it
  ** has, are known first (members of a class have the same depth). */
  {
    uint32_t *cnt = calloc((size_t)sn->n + 2, sizeof(*cnt));
    if (!cnt) return -1;
    for (i = 1; i < sn->n; i++)
      if (h->parent[i] != NONE) cnt[h->depth[i] + 1]++;
    for (i = 1; i < sn->n + 1; i++) cnt[i] += cnt[i - 1];
    for (i = 1; i < sn->n; i++)
      if (h->parent[i] != NONE) order[cnt[h->depth[i]]++] = i;
    j = cnt[sn->n];
    free(cnt);
  }
  for (i = 0; i < j; i++) {
    uint32_t v = order[i], f = h->up[v], pc = f ? CLASS_OF(cls, f) : NONE;
    uint32_t c = NONE, k;
    int fo;
    uint64_t key = class_key(h, v, f, fold, &fo);
    if ((pc == NONE || !(cls[pc] & MULTI)) &&
	sn->first[f + 1] - sn->first[f] <= SCAN_MAX) {
      /* One parent: its children of the same step, met before. */
      for (k = sn->first[f]; k < sn->first[f + 1] && c == NONE; k++) {
	uint32_t t = sn->e[k].to;
	int tfo;
	if (t == NONE || t == v || h->parent[t] != k || cls[t] == NONE)
	  continue;
	if (class_key(h, t, f, fold, &tfo) == key && tfo == fo)
	  c = CLASS_OF(cls, t);
      }
    } else {
      uint64_t hk = mp_hash_mix(key ^ ((uint64_t)pc << 20));
      mp_hash_iter it;
      uint32_t *p;
      for (p = mp_hash_first(&index, hk, &it); p && c == NONE;
	   p = mp_hash_next(&index, &it)) {
	uint32_t r = *p, rf = h->up[r];
	int rfo;
	if ((rf ? CLASS_OF(cls, rf) : NONE) == pc &&
	    class_key(h, r, rf, fold, &rfo) == key && rfo == fo)
	  c = r;
      }
      if (c == NONE && mp_hash_insert(&index, hk, v) < 0) {
	mp_hash_free(&index);
	return -1;
      }
    }
    if (c == NONE) {
      cls[v] = v;
      nc++;
    } else {
      cls[v] = c;
      cls[c] |= MULTI;
    }
  }
  mp_hash_free(&index);
  /* Numbered by first member: the first of each comes before the rest. */
  for (i = 0, nc = 0; i < j; i++) {
    uint32_t v = order[i], r = CLASS_OF(cls, v);
    cls[v] = r == v ? nc++ : cls[r];
  }
  *nobj = j;
  *ncp = nc;
  return 0;
}

int mp_heapsnap_class_map(const mp_heapsnap *h, unsigned fold,
			  uint32_t **cls, uint32_t **rep, uint32_t *nclasses)
{
  uint32_t n = h->sn->n, i, nc, nobj;
  uint32_t *order = malloc((size_t)n * sizeof(*order));
  *cls = malloc((size_t)n * sizeof(**cls));
  *rep = NULL;
  if (!order || !*cls || class_map(h, fold, *cls, order, &nobj, &nc) < 0 ||
      !(*rep = malloc((size_t)(nc ? nc : 1) * sizeof(**rep)))) {
    free(order);
    free(*cls);
    *cls = NULL;
    return -1;
  }
  for (i = 0, nc = 0; i < nobj; i++)	/* First members, in order. */
    if ((*cls)[order[i]] == nc) (*rep)[nc++] = order[i];
  free(order);
  *nclasses = nc;
  return 0;
}

/* A folded path class, as counted for mp_heapsnap_classes(). */
typedef struct hclass {
  uint32_t rep;		/* Its first member. */
  uint32_t count;
  uint64_t bytes;
  uint8_t type;		/* Its members' type, or 0 if mixed. */
} hclass;

int mp_heapsnap_classes(const mp_heapsnap *h, unsigned fold, uint32_t n,
			mp_heapclass **out)
{
  const mp_snapshot *sn = h->sn;
  uint32_t *cls = malloc((size_t)sn->n * sizeof(*cls)), *order = NULL;
  uint32_t nc = 0, nobj = 0, i, got = 0, nf = 0, cap = 0;
  hclass *c = NULL;
  uint64_t *bytes = NULL;
  mp_hash byclass;	/* Class -> its record in c. */
  int rc = -1;
  *out = NULL;
  mp_hash_init_map(&byclass);
  if (!cls || !(order = malloc((size_t)sn->n * sizeof(*order))) ||
      class_map(h, fold, cls, order, &nobj, &nc) < 0)
    goto out;
  /* The folded classes' members, counted; records in the classes'
  ** order. */
  for (i = 0; i < nobj; i++) {
    uint32_t v = order[i], x, *px;
    int fo;
    class_key(h, v, h->up[v], fold, &fo);
    if (!fo) continue;
    if ((px = mp_hash_get(&byclass, cls[v]))) {
      x = *px;
    } else {
      if (nf == cap) {
	hclass *q;
	cap = cap ? cap * 2 : 64;
	if (!(q = realloc(c, (size_t)cap * sizeof(*c)))) goto out;
	c = q;
      }
      if (mp_hash_put(&byclass, cls[v], nf) < 0) goto out;
      x = nf++;
      c[x].rep = v;
      c[x].count = 0;
      c[x].bytes = 0;
      c[x].type = sn->type[v];
    }
    c[x].count++;
    c[x].bytes += h->retained[v];
    if (c[x].type != sn->type[v]) c[x].type = 0;
  }
  /* The largest (ties: the first made), by their bytes. */
  if (!(bytes = malloc((size_t)(nf ? nf : 1) * sizeof(*bytes)))) goto out;
  for (i = 0; i < nf; i++) bytes[i] = c[i].bytes;
  for (i = 0; i < nf; i++) top_put(bytes, i, order, n, &got);
  got = top_sort(bytes, order, n, got);
  if (!(*out = calloc(got ? got : 1, sizeof(**out)))) goto out;
  for (i = 0; i < got; i++) {
    char buf[1024];
    hclass *x = &c[order[i]];
    mp_heapsnap_path(h, x->rep, fold, buf, sizeof(buf));
    if (!((*out)[i].path = strdup(buf))) {
      while (i > 0) free((*out)[--i].path);
      free(*out);
      *out = NULL;
      goto out;
    }
    (*out)[i].count = x->count;
    (*out)[i].bytes = x->bytes;
    (*out)[i].type = x->type;
  }
  rc = (int)got;
out:
  mp_hash_free(&byclass);
  free(cls);
  free(order);
  free(c);
  free(bytes);
  return rc;
}

/* -- The dominator tree, as shown -------------------------------------------- */

int mp_heapsnap_domtree(const mp_heapsnap *h, uint32_t max, uint32_t fan,
			uint64_t min, mp_domnode **out)
{
  const mp_snapshot *sn = h->sn;
  uint32_t n = sn->n, i, k, got = 0;
  /* The children of each object (by its dominator), in a counting sort. */
  uint32_t *first = calloc((size_t)n + 1, sizeof(*first));
  uint32_t *kids = malloc((size_t)(n ? n : 1) * sizeof(*kids));
  uint32_t *pick = malloc((size_t)(fan ? fan : 1) * sizeof(*pick));
  mp_domnode *d = malloc((size_t)(max ? max : 1) * sizeof(*d));
  *out = NULL;
  if (!first || !kids || !pick || !d) {
    free(first); free(kids); free(pick); free(d);
    return -1;
  }
  if (!n || !max) {
    free(first); free(kids); free(pick);
    *out = d;
    return 0;
  }
  for (i = 1; i < n; i++) first[h->idom[i] + 1]++;
  for (i = 0; i < n; i++) first[i + 1] += first[i];
  for (i = 1; i < n; i++) kids[first[h->idom[i]]++] = i;
  for (i = n; i > 0; i--) first[i] = first[i - 1];
  first[0] = 0;
  d[got].id = 0;
  d[got].up = NONE;
  d[got].more = 0;
  d[got++].more_bytes = 0;
  for (k = 0; k < got; k++) {
    uint32_t v = d[k].id, np = 0, j;
    /* Its biggest children (ties by number), at most fan. */
    for (i = first[v]; i < first[v + 1]; i++) {
      uint32_t c = kids[i];
      if (h->retained[c] < min || !fan) continue;
      for (j = np < fan ? np++ : fan; j > 0 &&
	   h->retained[pick[j - 1]] < h->retained[c]; j--)
	if (j < fan) pick[j] = pick[j - 1];
      if (j < fan) pick[j] = c;
    }
    d[k].more = first[v + 1] - first[v];
    d[k].more_bytes = h->retained[v] - sn->size[v];
    for (j = 0; j < np && got < max; j++) {
      d[got].id = pick[j];
      d[got].up = k;
      d[got].more = 0;
      d[got++].more_bytes = 0;
      d[k].more--;
      d[k].more_bytes -= h->retained[pick[j]];
    }
  }
  free(first); free(kids); free(pick);
  *out = d;
  return (int)got;
}
