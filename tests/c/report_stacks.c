/*
** report_stacks.c: the stack renderers on call-stack trees built by hand:
** the exact collapsed lines under each metric (escapes included), the
** SVG's geometry (the root's width is the total, a frame's width its
** share, frames below 0.1 px left out), the pprof profile decoded back
** (gunzip, protobuf) with totals equal to the tree's, the report's CALL
** STACKS view on a profile read from bytes, and 100,000 unique stacks
** (sizes and times printed as comments, not asserted). Prints TAP.
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "analysis/mp_profile.h"
#include "analysis/mp_sections.h"
#include "analysis/mp_stacks.h"
#include "render/mp_render.h"
#include "render/mp_sview.h"
#include "util/mp_array.h"
#include "util/mp_hash.h"
#include "tap.h"

/* -- Trees by hand -------------------------------------------------------- */

static void tree_init(mp_stacktree *t)
{
  memset(t, 0, sizeof(*t));
  mp_strtab_init(&t->text);
  if (mp_array_grow((void **)&t->node, 0, &t->cap, sizeof(*t->node)) < 0)
    abort();
  memset(&t->node[0], 0, sizeof(t->node[0]));
  t->node[0].site = MP_NO_SITE;
  t->n = 1;
  t->stacks = 1;
}

/* Add a node under parent (label copied); its index. */
static uint32_t add(mp_stacktree *t, uint32_t parent, uint8_t kind,
		    const char *label, uint64_t an, uint64_t ab, uint64_t ln,
		    uint64_t lb)
{
  mp_tnode *x;
  if (mp_array_grow((void **)&t->node, t->n, &t->cap, sizeof(*t->node)) < 0)
    abort();
  x = &t->node[t->n];
  memset(x, 0, sizeof(*x));
  x->parent = parent;
  x->kind = kind;
  x->label = mp_strtab_copy(&t->text, label, strlen(label) + 1);
  x->func = x->label;
  x->site = MP_NO_SITE;
  x->alloc.n = an;
  x->alloc.plus = ab;
  x->live.n = ln;
  x->live.plus = lb;
  return t->n++;
}

/* Output of fn on t under metric m, in a malloc'd string (*len bytes). */
static char *render(mp_render_tree_fn fn, const mp_stacktree *t, mp_metric m,
		    size_t *len)
{
  mp_render_opts o;
  char *s = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&s, &n);
  int rc;
  memset(&o, 0, sizeof(o));
  o.metric = m;
  o.file = "hand.ljm";
  rc = fn(f, t, &o);
  fclose(f);
  if (rc < 0) { free(s); return NULL; }
  if (len) *len = n;
  return s;
}

/*
** The small tree:
**   main.lua:1          Lua
**     @m.lua:5          Lua     3 allocs 300 B
**       string.rep      builtin 2 allocs 200 B, 1 live 100 B
**     @m.lua:9          Lua     1 alloc 50 B, 1 live 50 B
**       a;b\c<newline>  C       1 alloc 7 B
**   INTERNAL            VM      4 allocs 400 B
*/
static void small_tree(mp_stacktree *t)
{
  uint32_t m, f, g;
  tree_init(t);
  m = add(t, 0, MP_FK_LUA, "main.lua:1", 0, 0, 0, 0);
  add(t, 0, MP_FK_INTERNAL, "INTERNAL", 4, 400, 0, 0);
  f = add(t, m, MP_FK_LUA, "@m.lua:5", 3, 300, 0, 0);
  g = add(t, m, MP_FK_LUA, "@m.lua:9", 1, 50, 1, 50);
  add(t, f, MP_FK_BUILTIN, "string.rep", 2, 200, 1, 100);
  add(t, g, MP_FK_C, "a;b\\c\n", 1, 7, 0, 0);
}

static void test_collapsed(void)
{
  static const char *const want[4] = {
    "INTERNAL 400\n"
    "main.lua:1;@m.lua:5 300\n"
    "main.lua:1;@m.lua:5;string.rep 200\n"
    "main.lua:1;@m.lua:9 50\n"
    "main.lua:1;@m.lua:9;a\\x3bb\\x5cc\\n 7\n",
    "INTERNAL 4\n"
    "main.lua:1;@m.lua:5 3\n"
    "main.lua:1;@m.lua:5;string.rep 2\n"
    "main.lua:1;@m.lua:9 1\n"
    "main.lua:1;@m.lua:9;a\\x3bb\\x5cc\\n 1\n",
    "main.lua:1;@m.lua:5;string.rep 100\n"
    "main.lua:1;@m.lua:9 50\n",
    "main.lua:1;@m.lua:5;string.rep 1\n"
    "main.lua:1;@m.lua:9 1\n"
  };
  mp_stacktree t;
  int m;
  small_tree(&t);
  for (m = 0; m < 4; m++) {
    char name[64], *s = render(mp_render_collapsed_tree, &t, (mp_metric)m,
			       NULL);
    snprintf(name, sizeof(name), "collapsed --metric %s: exact lines",
	     mp_metric_names[m]);
    OK(s && !strcmp(s, want[m]), name, "want:\n%s# got:\n%s", want[m],
       s ? s : "(error)");
    free(s);
  }
  mp_stacktree_free(&t);
  /* Without stacks: one frame per site, as the tree gives it. */
  tree_init(&t);
  t.stacks = 0;
  add(&t, 0, MP_FK_LUA, "@b.lua:2", 1, 10, 0, 0);
  add(&t, 0, MP_FK_LUA, "@a.lua:2", 2, 20, 0, 0);
  {
    char *s = render(mp_render_collapsed_tree, &t, MP_METRIC_ALLOC_BYTES,
		     NULL);
    OK(s && !strcmp(s, "@a.lua:2 20\n@b.lua:2 10\n"),
       "collapsed, one frame per stack: sorted lines", "got:\n%s", s);
    free(s);
  }
  mp_stacktree_free(&t);
  /* An empty tree prints nothing. */
  tree_init(&t);
  {
    size_t n = 1;
    char *s = render(mp_render_collapsed_tree, &t, MP_METRIC_ALLOC_BYTES, &n);
    OK(s && n == 0, "collapsed of an empty tree: no lines", "%zu bytes", n);
    free(s);
  }
  mp_stacktree_free(&t);
}

/* -- SVG ------------------------------------------------------------------ */

/* The n-th "<rect x=.. y=.. width=.." of the frames, after their <g>. */
static int frame_rect(const char *svg, int n, double *x, int *y, double *w)
{
  const char *p = strstr(svg, "<g id=\"frames\">");
  if (!p) return 0;
  while (n-- >= 0) {
    if (!(p = strstr(p + 1, "<g><title>"))) return 0;
  }
  p = strstr(p, "<rect ");
  return p && sscanf(p, "<rect x=\"%lf\" y=\"%d\" width=\"%lf\"", x, y, w)
	      == 3;
}

static int count(const char *s, const char *what)
{
  int n = 0;
  for (; (s = strstr(s, what)); s++) n++;
  return n;
}

static void test_svg(void)
{
  mp_stacktree t;
  char *s;
  double x, w;
  int y, ok;
  small_tree(&t);
  s = render(mp_render_svg_tree, &t, MP_METRIC_ALLOC_BYTES, NULL);
  ok = s && frame_rect(s, 0, &x, &y, &w);
  OK(ok && x == 10 && w == 1180, "svg: the root spans the width (1180 px "
     "for 957 bytes)", "x %g width %g", x, w);
  OK(s && strstr(s, "<title>all\n957 bytes (957B), 11 allocations: 100.00% "
		 "of allocated bytes</title>"),
     "svg: the root's tooltip says the total", "%.300s", s ? s : "");
  /* Preorder, siblings by label: all, INTERNAL, main.lua:1, @m.lua:5... */
  ok = s && frame_rect(s, 1, &x, &y, &w);
  OK(ok && x == 10 && w > 493.20 && w < 493.22,
     "svg: INTERNAL's width is its share, 400/957 of 1180",
     "x %g width %g", x, w);
  ok = s && frame_rect(s, 2, &x, &y, &w);
  OK(ok && x > 503.20 && x < 503.22 && w > 686.78 && w < 686.80,
     "svg: main.lua:1 starts where INTERNAL ends", "x %g width %g", x, w);
  OK(s && strstr(s, "<title>a;b\\c\\n\n7 bytes (7B), 1 allocations"),
     "svg: labels escaped for XML (no newline, no raw control bytes)",
     "%s", "no such title");
  OK(s && count(s, "<g><title>") == 7, "svg: 7 frames (the root and six)",
     "%d", s ? count(s, "<g><title>") : -1);
  free(s);
  s = render(mp_render_svg_tree, &t, MP_METRIC_LEAK_BYTES, NULL);
  OK(s && count(s, "<g><title>") == 5 &&
     strstr(s, "<title>all\n150 bytes (150B), 2 blocks not freed: 100.00% of "
	    "bytes not freed</title>"),
     "svg --metric leak-bytes: only frames on the way to live blocks",
     "%d frames", s ? count(s, "<g><title>") : -1);
  free(s);
  mp_stacktree_free(&t);
  /* A frame narrower than 0.1 px (a 11,800th of the total) is left out,
  ** and its callees with it; one of 0.1 px or more stays. */
  tree_init(&t);
  {
    uint32_t a = add(&t, 0, MP_FK_LUA, "@big.lua:1", 0, 119990, 0, 0);
    uint32_t b = add(&t, 0, MP_FK_LUA, "@tiny.lua:1", 0, 8, 0, 0);
    add(&t, a, MP_FK_LUA, "@edge.lua:1", 0, 11, 0, 0);
    add(&t, b, MP_FK_LUA, "@under.lua:1", 0, 1, 0, 0);
  }
  s = render(mp_render_svg_tree, &t, MP_METRIC_ALLOC_BYTES, NULL);
  OK(s && count(s, "<g><title>") == 3 && strstr(s, "@edge.lua:1") &&
     !strstr(s, "@tiny.lua:1") && !strstr(s, "@under.lua:1"),
     "svg: frames under 0.1 px are not drawn, with their callees",
     "%d frames", s ? count(s, "<g><title>") : -1);
  free(s);
  mp_stacktree_free(&t);
}

/* -- pprof, decoded back -------------------------------------------------- */

/* Gunzip n bytes at z into a malloc'd buffer (*len bytes); NULL on error. */
static uint8_t *gunzip(const char *z, size_t n, size_t *len)
{
  z_stream s;
  size_t cap = 1 << 16;
  uint8_t *out = malloc(cap);
  int rc;
  memset(&s, 0, sizeof(s));
  if (!out || inflateInit2(&s, 15 + 16) != Z_OK) { free(out); return NULL; }
  s.next_in = (Bytef *)z;
  s.avail_in = (uInt)n;
  *len = 0;
  do {
    if (*len == cap && !(out = realloc(out, cap *= 2))) break;
    s.next_out = out + *len;
    s.avail_out = (uInt)(cap - *len);
    rc = inflate(&s, Z_NO_FLUSH);
    *len = cap - s.avail_out;
  } while (rc == Z_OK);
  inflateEnd(&s);
  if (rc != Z_STREAM_END || s.avail_in) { free(out); return NULL; }
  return out;
}

/* A varint at *p (before end); 0 past the end or too long. */
static int rd_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
  int sh = 0;
  *v = 0;
  while (*p < end && sh < 64) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return 1;
    sh += 7;
  }
  return 0;
}

/* What the test reads from a profile. */
typedef struct pprof {
  uint64_t total[4];	/* Sum of each value over the samples. */
  uint64_t nsample, nloc, nfunc, nstr, frames;
  char types[128];	/* "type/unit type/unit ..." */
  int bad;
} pprof;

/* Read a message's fields: call f(field, wire, value, bytes, n) on each. */
static void fields(const uint8_t *p, const uint8_t *end, void *ctx,
		   void (*f)(void *ctx, unsigned field, uint64_t v,
			     const uint8_t *b, size_t n), int *bad)
{
  while (p < end) {
    uint64_t k, v;
    if (!rd_varint(&p, end, &k)) { *bad = 1; return; }
    if ((k & 7) == 0) {
      if (!rd_varint(&p, end, &v)) { *bad = 1; return; }
      f(ctx, (unsigned)(k >> 3), v, NULL, 0);
    } else if ((k & 7) == 2) {
      if (!rd_varint(&p, end, &v) || v > (uint64_t)(end - p)) {
	*bad = 1;
	return;
      }
      f(ctx, (unsigned)(k >> 3), 0, p, (size_t)v);
      p += v;
    } else {
      *bad = 1;
      return;
    }
  }
}

typedef struct sample_ctx { pprof *pp; uint64_t v[4]; int nv; } sample_ctx;

static void on_sample(void *ctx, unsigned field, uint64_t v,
		      const uint8_t *b, size_t n)
{
  sample_ctx *c = ctx;
  const uint8_t *end = b + n;
  uint64_t x;
  (void)v;
  if (field == 1)
    while (b < end && rd_varint(&b, end, &x)) c->pp->frames++;
  if (field == 2)
    while (b < end && rd_varint(&b, end, &x)) {
      if (c->nv < 4) c->v[c->nv++] = x;
      else c->pp->bad = 1;
    }
}

static uint64_t vt[2];	/* The ValueType being read. */
static void on_vt(void *ctx, unsigned field, uint64_t v, const uint8_t *b,
		  size_t n)
{
  (void)ctx; (void)b; (void)n;
  if (field == 1 || field == 2) vt[field - 1] = v;
}

/* Strings of the table, kept to name the sample types. */
static char strs[64][32];

static void on_profile(void *ctx, unsigned field, uint64_t v,
		       const uint8_t *b, size_t n)
{
  pprof *pp = ctx;
  (void)v;
  if (field == 1) {	/* sample_type: names resolved at the end. */
    size_t l = strlen(pp->types);
    vt[0] = vt[1] = 0;
    fields(b, b + n, NULL, on_vt, &pp->bad);
    snprintf(pp->types + l, sizeof(pp->types) - l, "%s%llu/%llu",
	     l ? " " : "", (unsigned long long)vt[0],
	     (unsigned long long)vt[1]);
  } else if (field == 2) {
    sample_ctx c;
    int k;
    memset(&c, 0, sizeof(c));
    c.pp = pp;
    fields(b, b + n, &c, on_sample, &pp->bad);
    if (c.nv != 4) pp->bad = 1;
    for (k = 0; k < 4; k++) pp->total[k] += c.v[k];
    pp->nsample++;
  } else if (field == 4) pp->nloc++;
  else if (field == 5) pp->nfunc++;
  else if (field == 6) {
    if (pp->nstr < 64)
      snprintf(strs[pp->nstr], sizeof(strs[0]), "%.*s", (int)n, b);
    pp->nstr++;
  }
}

/* Decode a gzip'd profile. */
static void decode(const char *z, size_t n, pprof *pp)
{
  size_t len;
  uint8_t *raw = gunzip(z, n, &len);
  memset(pp, 0, sizeof(*pp));
  if (!raw) { pp->bad = 1; return; }
  fields(raw, raw + len, pp, on_profile, &pp->bad);
  free(raw);
}

/* "type/unit ..." with the string indexes of pp->types resolved. */
static void type_names(const pprof *pp, char *buf, size_t size)
{
  const char *p = pp->types;
  unsigned a, b;
  int used;
  size_t l = 0;
  buf[0] = '\0';
  while (sscanf(p, "%u/%u%n", &a, &b, &used) == 2) {
    l += (size_t)snprintf(buf + l, size - l, "%s%s/%s", l ? " " : "",
			  a < 64 ? strs[a] : "?", b < 64 ? strs[b] : "?");
    p += used;
    while (*p == ' ') p++;
  }
}

static void test_pprof(void)
{
  mp_stacktree t;
  pprof pp;
  size_t n;
  char *s, names[256];
  small_tree(&t);
  s = render(mp_render_pprof_tree, &t, MP_METRIC_ALLOC_BYTES, &n);
  OK(s && n > 18 && (uint8_t)s[0] == 0x1f && (uint8_t)s[1] == 0x8b,
     "pprof: gzip data", "%zu bytes", n);
  decode(s ? s : "", s ? n : 0, &pp);
  OK(!pp.bad, "pprof: gunzips and decodes as protobuf", "bad");
  type_names(&pp, names, sizeof(names));
  OK(!strcmp(names, "alloc_objects/count alloc_space/bytes "
		    "inuse_objects/count inuse_space/bytes"),
     "pprof: the four sample types of Go's heap profiles", "%s", names);
  OK(pp.nstr > 0 && strs[0][0] == '\0', "pprof: string 0 is empty",
     "'%s'", strs[0]);
  OK(pp.total[0] == 11 && pp.total[1] == 957 && pp.total[2] == 2 &&
     pp.total[3] == 150,
     "pprof: totals are the tree's: 11 allocations, 957 bytes, 2 live "
     "blocks, 150 bytes",
     "%llu %llu %llu %llu", (unsigned long long)pp.total[0],
     (unsigned long long)pp.total[1], (unsigned long long)pp.total[2],
     (unsigned long long)pp.total[3]);
  OK(pp.nsample == 5 && pp.frames == 2 + 3 + 2 + 3 + 1,
     "pprof: a sample per stack with a cost, all its frames",
     "%llu samples, %llu frames", (unsigned long long)pp.nsample,
     (unsigned long long)pp.frames);
  OK(pp.nloc == 6 && pp.nfunc == 6, "pprof: a location and a function per "
     "distinct frame", "%llu locations, %llu functions",
     (unsigned long long)pp.nloc, (unsigned long long)pp.nfunc);
  free(s);
  mp_stacktree_free(&t);
}

/* -- The report's CALL STACKS view ------------------------------------------ */

/* Bytes of a v3 stream being built. */
typedef struct bytes { uint8_t b[512]; size_t n; } bytes;

static void uleb(bytes *s, uint64_t v)
{
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    s->b[s->n++] = (uint8_t)(c | (v ? 0x80 : 0));
  } while (v);
}

static void test_view(void)
{
  static const char want[] =
    "CALL STACKS (allocated bytes of allocations and reallocations, at most 1 per source):\n"
    "@a.lua:7: 5 events\t+500B\tin 1 stack\n"
    "\t5 events\t+500B\n"
    "\t\t@a.lua:7\n"
    "\t\t@a.lua:12\n"
    "\t\t@a.lua:20\n"
    "\n"
    "@a.lua:3: 3 events\t+164B\tin 2 stacks\n"
    "\t1 events\t+100B\n"
    "\t\t@a.lua:3\n"
    "\t\t@a.lua:12\n"
    "\t\t@a.lua:20\n"
    "\n"
    "INTERNAL: 1 events\t+16B\tin 1 stack\n"
    "\t1 events\t+16B\n"
    "\t\tINTERNAL\n"
    "\n\n";
  static const char want_leak[] =
    "CALL STACKS (bytes not freed):\n"
    "@a.lua:7: 5 blocks\t500B not freed\tin 1 stack\n"
    "\t5 blocks\t500B not freed\n"
    "\t\t@a.lua:7\n"
    "\t\t@a.lua:12\n"
    "\t\t@a.lua:20\n"
    "\n"
    "@a.lua:3: 1 blocks\t32B not freed\tin 1 stack\n"
    "\t1 blocks\t32B not freed\n"
    "\t\t@a.lua:3\n"
    "\t\t@a.lua:20\n"
    "\n\n";
  static const char want_json[] =
    ",\n\"call_stacks\":{\"recorded\":true,\"metric\":\"alloc-bytes\","
    "\"per_source\":0,\"sources\":[\n {\"label\":\"@a.lua:7\","
    "\"source\":{\"kind\":\"lua\",\"label\":\"@a.lua:7\",\"address\":4096,"
    "\"line\":7,\"chunk\":\"@a.lua\",\"function_line\":1},"
    "\"alloc_events\":5,\"alloc_bytes\":500,\"live_blocks\":5,"
    "\"live_bytes\":500,\"stacks\":1,\"paths\":[{\"alloc_events\":5,"
    "\"alloc_bytes\":500,\"live_blocks\":5,\"live_bytes\":500,\"frames\":["
    "{\"kind\":\"lua\",\"label\":\"@a.lua:7\",\"function\":\"@a.lua:7\"},"
    "{\"kind\":\"lua\",\"label\":\"@a.lua:12\",\"function\":\"@a.lua:12\","
    "\"file\":\"function_alias_1\",\"line\":12,\"function_line\":10},"
    "{\"kind\":\"lua\",\"label\":\"@a.lua:20\",\"function\":\"@a.lua:20\"}"
    "]}]}]}";
  bytes st;
  mp_profile p;
  mp_sections sec;
  mp_stacktree t;
  mp_render_opts o;
  mp_sview v;
  uint32_t s3 = MP_NO_SITE, s7 = MP_NO_SITE, sint = MP_NO_SITE, i, mn, c;
  uint8_t used[8];
  char *out = NULL;
  size_t n = 0;
  FILE *f;
  /* A profile of three sites: @a.lua:3 and :7 (one function from line 1)
  ** and INTERNAL, an allocation each. */
  memset(&st, 0, sizeof(st));
  memcpy(st.b, "ljs\3\0\0\0\200ljm\3\0\0\0", 15);
  st.n = 15;
  st.b[st.n++] = 8;			/* sym-lua 0x1000 "@a.lua" 1 */
  uleb(&st, 0x1000);
  uleb(&st, 6);
  memcpy(st.b + st.n, "@a.lua", 6);
  st.n += 6;
  uleb(&st, 1);
  st.b[st.n++] = 1 + 8;			/* alloc at line 3 */
  uleb(&st, 0x1000); uleb(&st, 3); uleb(&st, 0x5000); uleb(&st, 32);
  st.b[st.n++] = 1 + 8;			/* alloc at line 7 */
  uleb(&st, 0x1000); uleb(&st, 7); uleb(&st, 0x6000); uleb(&st, 100);
  st.b[st.n++] = 1 + 4;			/* alloc, internal */
  uleb(&st, 0x7000); uleb(&st, 16);
  st.b[st.n++] = 0x80;
  mp_profile_init(&p);
  OK(mp_profile_read(&p, st.b, st.n) == MP_END && p.nsite == 3,
     "view: the profile of three sites reads", "%u sites", p.nsite);
  if (mp_sections_build(&sec, &p, MP_SORT_BYTES) < 0) abort();
  for (i = 0; i < p.nsite; i++) {
    if (!strcmp(sec.label[i], "@a.lua:3")) s3 = i;
    if (!strcmp(sec.label[i], "@a.lua:7")) s7 = i;
    if (!strcmp(sec.label[i], "INTERNAL")) sint = i;
  }
  /* Its stacks, as a stack profile would give them:
  **   @a.lua:20 > @a.lua:3                2 events 64 B, 1 live 32 B
  **   @a.lua:20 > @a.lua:12 > @a.lua:3    1 event 100 B
  **   @a.lua:20 > @a.lua:12 > @a.lua:7    5 events 500 B, 5 live 500 B
  **   INTERNAL                            1 event 16 B */
  tree_init(&t);
  mn = add(&t, 0, MP_FK_LUA, "@a.lua:20", 0, 0, 0, 0);
  t.node[add(&t, mn, MP_FK_LUA, "@a.lua:3", 2, 64, 1, 32)].site = s3;
  c = add(&t, mn, MP_FK_LUA, "@a.lua:12", 0, 0, 0, 0);
  t.node[add(&t, c, MP_FK_LUA, "@a.lua:3", 1, 100, 0, 0)].site = s3;
  t.node[add(&t, c, MP_FK_LUA, "@a.lua:7", 5, 500, 5, 500)].site = s7;
  t.node[add(&t, 0, MP_FK_INTERNAL, "INTERNAL", 1, 16, 0, 0)].site = sint;
  /* The view itself. */
  if (mp_sview_build(&v, &t, MP_METRIC_ALLOC_COUNT, 2, 0) < 0) abort();
  OK(v.ngroup == 2 && v.group[0].site == s7 && v.group[1].site == s3 &&
     v.group[1].nstack == 2 && v.group[1].npath == 2 &&
     v.group[1].alloc.n == 3 && v.group[1].alloc.plus == 164,
     "view by count, --top 2: @a.lua:7 (5), then @a.lua:3 (3 in 2 stacks)",
     "%u groups", v.ngroup);
  OK(v.ngroup == 2 && t.node[v.path[v.group[1].path0]].alloc.n == 2,
     "view: a site's stacks heaviest first", "first has %llu",
     (unsigned long long)t.node[v.path[v.group[1].path0]].alloc.n);
  mp_sview_free(&v);
  /* As the text report prints it. */
  memset(&o, 0, sizeof(o));
  memset(used, 0, sizeof(used));
  o.stacks = 1;
  f = open_memstream(&out, &n);
  mp_render_text_stacks(f, &sec, &t, &o, used);
  fclose(f);
  OK(!strcmp(out, want), "text view, one stack per source: exact",
     "want:\n%s# got:\n%s", want, out);
  free(out);
  o.stacks = UINT32_MAX;
  o.metric = MP_METRIC_LEAK_BYTES;
  f = open_memstream(&out, &n);
  mp_render_text_stacks(f, &sec, &t, &o, used);
  fclose(f);
  OK(!strcmp(out, want_leak), "text view by leak-bytes, all stacks: only "
     "stacks with live blocks", "want:\n%s# got:\n%s", want_leak, out);
  free(out);
  /* As the JSON report has it: the top source, its two stacks. */
  o.top = 1;
  o.metric = MP_METRIC_ALLOC_BYTES;
  t.node[c].file = "function_alias_1";	/* Frames show their file, line. */
  t.node[c].line = 12;
  t.node[c].func_line = 10;
  f = open_memstream(&out, &n);
  mp_render_json_stacks(f, &sec, &t, &o, used);
  fclose(f);
  OK(!strcmp(out, want_json), "json view, --top 1, all stacks: exact",
     "want:\n%s\n# got:\n%s", want_json, out);
  free(out);
  o.top = 0;
  t.stacks = 0;
  f = open_memstream(&out, &n);
  mp_render_text_stacks(f, &sec, &t, &o, used);
  fclose(f);
  OK(!strncmp(out, "CALL STACKS: none in this profile", 33) &&
     count(out, "\n") == 2, "text view without stacks: one line says so",
     "%s", out);
  free(out);
  mp_stacktree_free(&t);
  mp_sections_free(&sec);
  mp_profile_free(&p);
}

/* -- 100,000 unique stacks ------------------------------------------------- */

/* Seconds on a monotonic clock. */
static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_big(void)
{
  enum { NSTACK = 100000, NLABEL = 64 };
  mp_stacktree t;
  mp_hash kids;
  const char *label[NLABEL];
  uint32_t leaves = 0, i, k;
  uint64_t total = 0;
  char buf[64];
  static const struct { const char *name; mp_render_tree_fn fn; } fmt[3] = {
    { "collapsed", mp_render_collapsed_tree },
    { "svg", mp_render_svg_tree },
    { "pprof", mp_render_pprof_tree }
  };
  tree_init(&t);
  memset(&kids, 0, sizeof(kids));
  mp_hash_init_map(&kids);
  for (i = 0; i < NLABEL; i++) {
    snprintf(buf, sizeof(buf), "@lib/module%u.lua:%u", i % 16, 10 + i * 7);
    label[i] = mp_strtab_copy(&t.text, buf, strlen(buf) + 1);
  }
  /* Random stacks 4 to 24 frames deep, frames drawn with a skew so that
  ** callers are shared, until 100,000 distinct stacks have a cost. */
  while (leaves < NSTACK) {
    uint32_t node = 0, depth = 4 + (uint32_t)(next() % 21), d;
    for (d = 0; d < depth; d++) {
      uint64_t r = next();
      uint32_t l = (uint32_t)((r % NLABEL) * ((r >> 8) % NLABEL) / NLABEL);
      uint64_t key = (uint64_t)node * NLABEL + l;
      uint32_t *v = mp_hash_get(&kids, key);
      if (v) { node = *v; continue; }
      if (mp_array_grow((void **)&t.node, t.n, &t.cap, sizeof(*t.node)) < 0)
	abort();
      memset(&t.node[t.n], 0, sizeof(t.node[0]));
      t.node[t.n].parent = node;
      t.node[t.n].kind = (uint8_t)(1 + l % 4);
      t.node[t.n].label = t.node[t.n].func = label[l];
      t.node[t.n].site = MP_NO_SITE;
      if (mp_hash_put(&kids, key, t.n) < 0) abort();
      node = t.n++;
    }
    if (!t.node[node].alloc.n) leaves++;
    k = 1 + (uint32_t)(next() % 100);
    t.node[node].alloc.n += k;
    t.node[node].alloc.plus += (uint64_t)k * 48;
    total += (uint64_t)k * 48;
  }
  mp_hash_free(&kids);
  printf("# %u unique stacks, %u nodes, %llu bytes\n", leaves, t.n,
	 (unsigned long long)total);
  for (k = 0; k < 3; k++) {
    double t0 = now(), secs;
    size_t n = 0;
    char *s = render(fmt[k].fn, &t, MP_METRIC_ALLOC_BYTES, &n), name[96];
    secs = now() - t0;
    printf("# %s: %zu bytes in %.0f ms\n", fmt[k].name, n, secs * 1000);
    snprintf(name, sizeof(name), "100,000 stacks: %s renders", fmt[k].name);
    OK(s != NULL, name, "error");
    if (k == 0)
      OK(s && count(s, "\n") == NSTACK, "100,000 stacks: as many collapsed "
	 "lines", "%d lines", s ? count(s, "\n") : -1);
    if (k == 1) {
      /* Frames of 0.1 px or more: at most 11,800 a level. */
      int frames = s ? count(s, "<g><title>") : -1;
      printf("# svg: %d frames drawn of %u nodes\n", frames, t.n);
      OK(frames > 0 && frames <= 11800 * 25, "100,000 stacks: svg frames "
	 "bounded by the 0.1 px rule", "%d frames", frames);
    }
    if (k == 2) {
      pprof pp;
      decode(s ? s : "", s ? n : 0, &pp);
      OK(!pp.bad && pp.nsample == NSTACK && pp.total[1] == total,
	 "100,000 stacks: pprof decodes to every stack and the total",
	 "%llu samples, %llu bytes", (unsigned long long)pp.nsample,
	 (unsigned long long)pp.total[1]);
    }
    free(s);
  }
  mp_stacktree_free(&t);
}

int main(void)
{
  test_collapsed();
  test_svg();
  test_pprof();
  test_view();
  test_big();
  printf("1..%d\n", n_test);
  return n_fail != 0;
}
