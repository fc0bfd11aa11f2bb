/*
** render_pprof.c: the call-stack tree as a pprof profile (the
** profile.proto message of github.com/google/pprof), gzip'd: what `go tool
** pprof`, Pyroscope and Grafana read.
**
** Four sample types, as Go's heap profiles have them: alloc_objects/count
** and alloc_space/bytes (the allocations and reallocations a stack made,
** and their new sizes), inuse_objects/count and inuse_space/bytes (its
** blocks still live when the profile ended). --metric picks the one
** pprof shows first (default_sample_type). One sample per stack with a
** cost, its locations innermost first; a location per (function, line),
** a function per (name, file, first line): Lua functions by their name
** with their file and first line ("render (a.lua:2)": pprof merges
** functions by name), builtins and C functions by name, traces by their
** label.
**
** The protobuf encoding is written here (it is small: varints and
** length-delimited fields: "Encoding" below), and streamed
** through zlib's gzip deflate in blocks of PB_FLUSH bytes; only the
** string, function and location tables are kept whole. The output is the
** same bytes for the same profile (no time stamp, not even gzip's).
*/

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "format/mp_format.h"
#include "reader/mp_label.h"
#include "reader/mp_strtab.h"
#include "render/mp_render.h"
#include "util/mp_array.h"
#include "util/mp_hash.h"

#define PB_FLUSH	(256 * 1024)	/* Bytes encoded before deflating. */

/* Field numbers of profile.proto, by message. */
enum {	/* Profile */
  P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_MAPPING = 3, P_LOCATION = 4,
  P_FUNCTION = 5,
  P_STRING_TABLE = 6, P_PERIOD_TYPE = 11, P_PERIOD = 12,
  P_DEFAULT_SAMPLE_TYPE = 14
};
enum { VT_TYPE = 1, VT_UNIT = 2 };			/* ValueType */
enum { S_LOCATION_ID = 1, S_VALUE = 2 };		/* Sample */
enum { M_ID = 1, M_FILENAME = 5, M_HAS_FUNCTIONS = 7, M_HAS_FILENAMES = 8,
       M_HAS_LINE_NUMBERS = 9 };			/* Mapping */
enum { L_ID = 1, L_MAPPING_ID = 2, L_LINE = 4 };	/* Location */
enum { LN_FUNCTION_ID = 1, LN_LINE = 2 };		/* Line */
enum { F_ID = 1, F_NAME = 2, F_SYSTEM_NAME = 3, F_FILENAME = 4,
       F_START_LINE = 5 };				/* Function */

/* Wire types: a varint, or a length and that many bytes. */
enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* -- Encoding ------------------------------------------------------------- */

/* Bytes being encoded; err is sticky (out of memory). */
typedef struct pbuf {
  uint8_t *p;
  size_t n, cap;
  int err;
} pbuf;

static void put(pbuf *b, const void *s, size_t n)
{
  if (b->err || !n) return;	/* s may be NULL then (an empty message). */
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    uint8_t *p;
    while (c < b->n + n) c *= 2;
    if (!(p = realloc(b->p, c))) { b->err = 1; return; }
    b->p = p;
    b->cap = c;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

static void varint(pbuf *b, uint64_t v)
{
  uint8_t tmp[MP_ULEB_MAX];
  put(b, tmp, (size_t)(mp_put_uleb(tmp, v) - tmp));
}

/* A field's key: its number and wire type. */
static void key(pbuf *b, unsigned field, unsigned wire)
{
  varint(b, (uint64_t)field << 3 | wire);
}

/* A varint field; 0 is the default and is not written. */
static void vfield(pbuf *b, unsigned field, uint64_t v)
{
  if (!v) return;
  key(b, field, WIRE_VARINT);
  varint(b, v);
}

/* A length-delimited field: a string, a message or packed varints. */
static void lfield(pbuf *b, unsigned field, const void *s, size_t n)
{
  key(b, field, WIRE_LEN);
  varint(b, n);
  put(b, s, n);
}

/* -- gzip ----------------------------------------------------------------- */

/* Deflate what b holds to out (all of it, to the end of the stream if
** finish) and empty b. 0, or -1 on a write error or a zlib failure. */
static int deflate_out(z_stream *z, pbuf *b, FILE *out, int finish)
{
  uint8_t chunk[64 * 1024];
  int rc;
  z->next_in = b->p;
  z->avail_in = (uInt)b->n;
  do {
    z->next_out = chunk;
    z->avail_out = sizeof(chunk);
    rc = deflate(z, finish ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR) return -1;
    if (fwrite(chunk, 1, sizeof(chunk) - z->avail_out, out) !=
	sizeof(chunk) - z->avail_out)
      return -1;
  } while (z->avail_out == 0 || (finish && rc != Z_STREAM_END));
  b->n = 0;
  return 0;
}

/* -- Tables --------------------------------------------------------------- */

/* A function: name, file and first line; and a location: function, line. */
typedef struct pfunc {
  uint32_t name, file;
  uint64_t start;
} pfunc;
typedef struct ploc {
  uint32_t func;	/* Function id (index + 1). */
  uint64_t line;
} ploc;

typedef struct tables {
  mp_strtab str;	/* String table: id i is index i (0: ""). */
  pfunc *func;
  uint32_t nfunc, capfunc;
  mp_hash fmap;
  ploc *loc;
  uint32_t nloc, caploc;
  mp_hash lmap;
  int err;		/* A string could not be interned (sticky). */
} tables;

/* String table index of s ("" for NULL); 0 when out of memory, which
** tb->err then says (index 0 is also the empty string's). */
static uint32_t str(tables *tb, const char *s)
{
  uint32_t i;
  if (!s || !*s) return 0;
  if (!(i = mp_strtab_intern(&tb->str, s, strlen(s)))) tb->err = 1;
  return i;
}

/* Function id of (name, file, start), added if new; 0 out of memory. */
static uint32_t func_id(tables *tb, uint32_t name, uint32_t file,
			uint64_t start)
{
  uint64_t h = mp_hash_mix(name ^ mp_hash_mix((uint64_t)file << 32 ^ start));
  mp_hash_iter it;
  uint32_t *v;
  pfunc *f;
  for (v = mp_hash_first(&tb->fmap, h, &it); v; v = mp_hash_next(&tb->fmap, &it)) {
    f = &tb->func[*v];
    if (f->name == name && f->file == file && f->start == start) return *v + 1;
  }
  if (mp_array_grow((void **)&tb->func, tb->nfunc, &tb->capfunc,
		    sizeof(*tb->func)) < 0 ||
      mp_hash_insert(&tb->fmap, h, tb->nfunc) < 0)
    return 0;
  f = &tb->func[tb->nfunc];
  f->name = name;
  f->file = file;
  f->start = start;
  return ++tb->nfunc;
}

/* Location id of (function, line), added if new; 0 out of memory. */
static uint32_t loc_id(tables *tb, uint32_t func, uint64_t line)
{
  uint64_t h = mp_hash_mix(func ^ mp_hash_mix(line));
  mp_hash_iter it;
  uint32_t *v;
  for (v = mp_hash_first(&tb->lmap, h, &it); v; v = mp_hash_next(&tb->lmap, &it))
    if (tb->loc[*v].func == func && tb->loc[*v].line == line) return *v + 1;
  if (mp_array_grow((void **)&tb->loc, tb->nloc, &tb->caploc,
		    sizeof(*tb->loc)) < 0 ||
      mp_hash_insert(&tb->lmap, h, tb->nloc) < 0)
    return 0;
  tb->loc[tb->nloc].func = func;
  tb->loc[tb->nloc].line = line;
  return ++tb->nloc;
}

/* The name pprof shows for the function of node x, whose file is path.
** pprof's -top, -traces and flame graph merge functions by name alone,
** so a Lua function's name says its file and first line too: "render
** (a.lua:2)", "main chunk (a.lua)" (two files' render, and every
** module's main chunk, stay apart); one without a name says them
** already ("function at a.lua:5"). The rest by name. */
static const char *func_name(const mp_tnode *x, const char *path, char *buf,
			     size_t size)
{
  const char *fn = x->func ? x->func : x->label;
  if (!x->file || !x->func || !strncmp(fn, MP_FUNC_AT, strlen(MP_FUNC_AT)))
    return fn;
  if (x->func_line)
    snprintf(buf, size, "%s (%s:%llu)", fn, path,
	     (unsigned long long)x->func_line);
  else
    snprintf(buf, size, "%s (%s)", fn, path);
  return buf;
}

/* The location of node x; 0 out of memory. A chunk loaded from a file
** ("@app.lua") names the file without its "@", so that pprof finds the
** source (-list, the web UI's source view); other chunks keep their
** name. */
static uint32_t node_loc(tables *tb, const mp_tnode *x)
{
  char buf[2 * MP_LABEL_MAX + 32];
  const char *path = x->file && x->file[0] == '@' && x->file[1] ?
		     x->file + 1 : x->file;
  const char *fn = func_name(x, path, buf, sizeof(buf));
  uint32_t name = str(tb, fn), file = str(tb, path), f;
  if ((fn && *fn && !name) || (path && *path && !file)) return 0;
  if (!(f = func_id(tb, name, file, x->func_line))) return 0;
  return loc_id(tb, f, x->line);
}

/* -- The profile ---------------------------------------------------------- */

/* The sample types of Go's heap profiles, and the peak's when the tree
** has it. */
static const char *const sample_types[6][2] = {
  { "alloc_objects", "count" }, { "alloc_space", "bytes" },
  { "inuse_objects", "count" }, { "inuse_space", "bytes" },
  { "peak_objects", "count" }, { "peak_space", "bytes" }
};

/* Index in sample_types of a metric's type. */
static const int metric_type[MP_METRIC_N] = { 1, 0, 3, 2, 5, 4 };

/* A ValueType message as field `field` of top. */
static void value_type(pbuf *top, pbuf *m, tables *tb, unsigned field,
		       const char *type, const char *unit)
{
  m->n = 0;
  vfield(m, VT_TYPE, str(tb, type));
  vfield(m, VT_UNIT, str(tb, unit));
  lfield(top, field, m->p, m->n);
}

int mp_render_pprof_tree(FILE *out, const mp_stacktree *t,
			 const mp_render_opts *o)
{
  tables tb;
  pbuf top, m, ids, vals, ln;
  z_stream z;
  uint32_t *loc = NULL, i, k, ntype = t->peak ? 6 : 4;
  int rc = -1, zok = 0;
  memset(&tb, 0, sizeof(tb));
  memset(&top, 0, sizeof(top));
  memset(&m, 0, sizeof(m));
  memset(&ids, 0, sizeof(ids));
  memset(&vals, 0, sizeof(vals));
  memset(&ln, 0, sizeof(ln));
  memset(&z, 0, sizeof(z));
  mp_strtab_init(&tb.str);
  mp_hash_init_map(&tb.fmap);
  mp_hash_init_map(&tb.lmap);
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
		   Z_DEFAULT_STRATEGY) != Z_OK)
    goto done;
  zok = 1;
  if (!(loc = calloc(t->n ? t->n : 1, sizeof(*loc)))) goto done;
  /* The sample types first: their strings get the first indexes. */
  for (k = 0; k < ntype; k++)
    value_type(&top, &m, &tb, P_SAMPLE_TYPE, sample_types[k][0],
	       sample_types[k][1]);
  /* A sample per node with a cost: its stack, innermost frame first. */
  for (i = 1; i < t->n; i++) {
    const mp_tnode *x = &t->node[i];
    uint64_t v[6];
    uint32_t j, hops;
    v[0] = x->alloc.n;
    v[1] = x->alloc.plus;
    v[2] = x->live.n;
    v[3] = x->live.plus;
    v[4] = x->peak.n;
    v[5] = x->peak.plus;
    if (!(v[0] | v[1] | v[2] | v[3] | v[4] | v[5])) continue;
    ids.n = vals.n = m.n = 0;
    for (j = i, hops = 0; j && j < t->n && hops < t->n; j = t->node[j].parent,
	 hops++) {
      if (!loc[j] && !(loc[j] = node_loc(&tb, &t->node[j]))) goto done;
      varint(&ids, loc[j]);
    }
    for (k = 0; k < ntype; k++) varint(&vals, v[k]);
    lfield(&m, S_LOCATION_ID, ids.p, ids.n);
    lfield(&m, S_VALUE, vals.p, vals.n);
    lfield(&top, P_SAMPLE, m.p, m.n);
    if (top.err || m.err || ids.err || vals.err) goto done;
    if (top.n >= PB_FLUSH && deflate_out(&z, &top, out, 0) < 0) goto done;
  }
  /* One mapping, the profile, that says its functions are known (so that
  ** pprof does not look for a binary to symbolize). */
  m.n = 0;
  vfield(&m, M_ID, 1);
  vfield(&m, M_FILENAME, str(&tb, o->file ? o->file : "ljmemprof"));
  vfield(&m, M_HAS_FUNCTIONS, 1);
  vfield(&m, M_HAS_FILENAMES, 1);
  vfield(&m, M_HAS_LINE_NUMBERS, 1);
  lfield(&top, P_MAPPING, m.p, m.n);
  for (i = 0; i < tb.nloc; i++) {
    m.n = ln.n = 0;
    vfield(&ln, LN_FUNCTION_ID, tb.loc[i].func);
    vfield(&ln, LN_LINE, tb.loc[i].line);
    vfield(&m, L_ID, i + 1);
    vfield(&m, L_MAPPING_ID, 1);
    lfield(&m, L_LINE, ln.p, ln.n);
    lfield(&top, P_LOCATION, m.p, m.n);
    if (top.n >= PB_FLUSH && deflate_out(&z, &top, out, 0) < 0) goto done;
  }
  for (i = 0; i < tb.nfunc; i++) {
    m.n = 0;
    vfield(&m, F_ID, i + 1);
    vfield(&m, F_NAME, tb.func[i].name);
    vfield(&m, F_SYSTEM_NAME, tb.func[i].name);
    vfield(&m, F_FILENAME, tb.func[i].file);
    vfield(&m, F_START_LINE, tb.func[i].start);
    lfield(&top, P_FUNCTION, m.p, m.n);
    if (top.n >= PB_FLUSH && deflate_out(&z, &top, out, 0) < 0) goto done;
  }
  value_type(&top, &m, &tb, P_PERIOD_TYPE, "space", "bytes");
  vfield(&top, P_PERIOD, 1);
  vfield(&top, P_DEFAULT_SAMPLE_TYPE,
	 str(&tb, sample_types[metric_type[o->metric]][0]));
  /* The string table last, once every string has its index. */
  lfield(&top, P_STRING_TABLE, "", 0);
  for (i = 1; i < tb.str.n; i++) {
    const mp_name *nm = mp_strtab_get(&tb.str, i);
    lfield(&top, P_STRING_TABLE, nm->s, nm->kept);
    if (top.n >= PB_FLUSH && deflate_out(&z, &top, out, 0) < 0) goto done;
  }
  if (top.err || m.err || ln.err || tb.err) goto done;
  if (deflate_out(&z, &top, out, 1) < 0) goto done;
  rc = ferror(out) ? -1 : 0;
done:
  if (zok) deflateEnd(&z);
  free(loc);
  free(top.p);
  free(m.p);
  free(ids.p);
  free(vals.p);
  free(ln.p);
  free(tb.func);
  free(tb.loc);
  mp_hash_free(&tb.fmap);
  mp_hash_free(&tb.lmap);
  mp_strtab_free(&tb.str);
  return rc;
}

int mp_render_pprof(FILE *out, const mp_sections *sec,
		    const mp_render_opts *o)
{
  return mp_render_with_tree(out, sec, o, mp_render_pprof_tree);
}
