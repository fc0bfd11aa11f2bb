/*
** report_reader.c: the reader on hand-built streams of memprof versions 1,
** 2 and 3, byte by byte: what it decodes, every error it must report (with
** offset and message), truncation at every byte, the batched and the
** single-item paths agreeing, and the report the profile pass makes of a
** stream whose numbers are worked out by hand below. Prints TAP.
*/

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/mp_format.h"
#include "analysis/mp_profile.h"
#include "render/mp_render.h"

/* The NOTES of a text report of a profile that notes no full collection
** before its end (render/mp_render.h, mp_note_uncollected). */
#define NOTES_UNCOLLECTED "NOTES:\nthe profile notes no full garbage " \
  "collection before its end: what is held may be garbage never collected " \
  "(to see only what is reachable, record with mp.stop{collect = true} or " \
  "'ljmemprof run', whose collection runs as the Lua state closes: a " \
  "script that ends with os.exit(code) skips it, os.exit(code, true) " \
  "closes the state)\n"
#define NOTES_NONE NOTES_UNCOLLECTED "\n"
/* ...and the note on live blocks of JIT traces, which tell no line
** without call stacks. */
#define NOTES_TRACES(what) NOTES_UNCOLLECTED "TRACE rows hold " what \
  " without a line: the profile has no call stacks; " \
  "record with 'ljmemprof run --stacks' (the lines inside each trace) or " \
  "with the JIT off ('ljmemprof run -- luajit -joff SCRIPT')\n\n"

/* -- TAP ------------------------------------------------------------------ */

static int n_test, n_fail;

/* Compare two strings; on failure show both as TAP diagnostics. */
static void is_str(const char *got, const char *want, const char *name)
{
  n_test++;
  if (!strcmp(got, want)) { printf("ok %d - %s\n", n_test, name); return; }
  n_fail++;
  printf("not ok %d - %s\n# expected:\n", n_test, name);
  {
    const char *p;
    printf("#   ");
    for (p = want; *p; p++) printf(*p == '\n' ? "\n#   " : "%c", *p);
    printf("\n# actual:\n#   ");
    for (p = got; *p; p++) printf(*p == '\n' ? "\n#   " : "%c", *p);
    printf("\n");
  }
}

static void ok(int cond, const char *name, const char *fmt, ...)
{
  va_list ap;
  n_test++;
  printf("%s %d - %s\n", cond ? "ok" : "not ok", n_test, name);
  if (cond) return;
  n_fail++;
  printf("# ");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}

/* -- Building streams ----------------------------------------------------- */

typedef struct buf {
  uint8_t b[8192];
  size_t n;
} buf;

/* Abort if n more bytes do not fit: a test stream too long for buf. */
static void room(const buf *b, size_t n)
{
  if (b->n + n > sizeof(b->b)) abort();
}
static void u8(buf *b, unsigned v) { room(b, 1); b->b[b->n++] = (uint8_t)v; }
static void uleb(buf *b, uint64_t v) { room(b, MP_ULEB_MAX); b->n = (size_t)(mp_put_uleb(b->b + b->n, v) - b->b); }
static void str(buf *b, const char *s)
{
  size_t n = strlen(s);
  uleb(b, n);
  room(b, n);
  memcpy(b->b + b->n, s, n);
  b->n += n;
}
static void prologue(buf *b, const char *magic, int ver)
{
  b->n = (size_t)(mp_put_prologue(b->b + b->n, magic, ver) - b->b);
}

/* Header symbols. */
static void hsym_lfunc(buf *b, uint64_t addr, const char *chunk, uint64_t line)
{
  u8(b, MP_SYM_LFUNC); uleb(b, addr); str(b, chunk); uleb(b, line);
}
static void hsym_cfunc(buf *b, uint64_t addr, const char *name)
{
  u8(b, MP_SYM_CFUNC_V3); uleb(b, addr); str(b, name);
}
static void hsym_trace(buf *b, int type, uint64_t no, uint64_t proto,
		       uint64_t line)
{
  u8(b, (unsigned)type); uleb(b, no); uleb(b, proto); uleb(b, line);
}

/* Events: header byte, then numbers. */
static void ev(buf *b, unsigned hdr, int n, ...)
{
  va_list ap;
  int i;
  u8(b, hdr);
  va_start(ap, n);
  for (i = 0; i < n; i++) uleb(b, va_arg(ap, uint64_t));
  va_end(ap);
}

#define ALLOC(src)	(MP_AEV_ALLOC | (src))
#define FREE(src)	(MP_AEV_FREE | (src))
#define REALLOC(src)	(MP_AEV_REALLOC | (src))
#define SYMEV(src)	(MP_AEV_SYMTAB | (src))
#define U(x)		((uint64_t)(x))

/* -- Decoding to text ----------------------------------------------------- */

/* Append to a growing string. */
typedef struct text {
  char *s;
  size_t n, cap;
} text;

static void tput(text *t, const char *fmt, ...)
{
  va_list ap;
  int m;
  for (;;) {
    size_t room = t->cap - t->n;
    va_start(ap, fmt);
    m = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? room : 0, fmt, ap);
    va_end(ap);
    if (t->s && (size_t)m < room) { t->n += (size_t)m; return; }
    t->cap = (t->cap + (size_t)m + 1) * 2;
    t->s = realloc(t->s, t->cap);
    if (!t->s) abort();
    if (t->n == 0) t->s[0] = '\0';
  }
}

static const char *src_name(int src)
{
  switch (src) {
  case MP_SRC_INTERNAL: return "int";
  case MP_SRC_LFUNC: return "lua";
  case MP_SRC_CFUNC: return "c";
  case MP_SRC_TRACE: return "trace";
  }
  return "?";
}

/* Events from mp_reader_events() as items (the fields events have). */
static size_t read_events(mp_reader *r, mp_item *items, size_t n)
{
  mp_event ev[64];
  size_t off = (size_t)(r->p - r->base), got = mp_reader_events(r, ev, n), i;
  for (i = 0; i < got; i++) {
    memset(&items[i], 0, sizeof(items[i]));
    items[i].kind = ev[i].kind;
    items[i].src = ev[i].src;
    items[i].id = ev[i].id;
    items[i].line = ev[i].line;
    items[i].oaddr = ev[i].oaddr;
    items[i].osize = ev[i].osize;
    items[i].naddr = ev[i].naddr;
    items[i].nsize = ev[i].nsize;
    items[i].offset = off;
    off += ev[i].len;
  }
  return got;
}

/* One line per item, then how the stream ended. batch 0: mp_reader_next;
** 100 + n: batches of n from mp_reader_events(), and mp_reader_next()
** whenever it has none (as the profile pass reads). */
static char *dump(const uint8_t *data, size_t len, size_t batch)
{
  text t = { NULL, 0, 0 };
  mp_reader r;
  mp_item items[64];
  size_t got = 0, i;
  int rc = mp_reader_init(&r, data, len);
  tput(&t, "");
  while (rc == MP_OK) {
    if (batch >= 100) {
      got = read_events(&r, items, batch - 100);
      if (!got) {
	rc = mp_reader_next(&r, &items[0]);
	got = rc == MP_OK;
      }
    } else {
      rc = mp_reader_next(&r, &items[0]);
      got = rc == MP_OK;
    }
    for (i = 0; i < got; i++) {
      const mp_item *it = &items[i];
      if (it->kind == MP_AEV_SYMTAB)
	tput(&t, "@%zu sym-%s ", it->offset, mp_src_name(it->src));
      else
	tput(&t, "@%zu %s ", it->offset, mp_kind_name(it->kind));
      /* Only the fields that the item's kind defines. */
      if (it->kind == MP_AEV_SYMTAB && it->src == MP_SRC_LFUNC)
	tput(&t, "%s id=%llx line=%llu name='%.*s'\n",
	     it->in_header ? "hdr" : "stream", (unsigned long long)it->id,
	     (unsigned long long)it->line, (int)it->name_len, it->name);
      else if (it->kind == MP_AEV_SYMTAB && it->src == MP_SRC_CFUNC)
	tput(&t, "%s id=%llx name='%.*s'\n", it->in_header ? "hdr" : "stream",
	     (unsigned long long)it->id, (int)it->name_len, it->name);
      else if (it->kind == MP_AEV_SYMTAB)
	tput(&t, "%s id=%llu proto=%llx line=%llu\n",
	     it->in_header ? "hdr" : "stream", (unsigned long long)it->id,
	     (unsigned long long)it->proto, (unsigned long long)it->line);
      else
	tput(&t, "%s id=%llx line=%llu o=%llx/%llu n=%llx/%llu\n",
	     src_name(it->src), (unsigned long long)it->id,
	     (unsigned long long)it->line, (unsigned long long)it->oaddr,
	     (unsigned long long)it->osize, (unsigned long long)it->naddr,
	     (unsigned long long)it->nsize);
    }
  }
  tput(&t, "versions %d/%d ", r.ljs_version, r.ljm_version);
  if (rc == MP_END) tput(&t, "END\n");
  else tput(&t, "%s at %zu: %s\n", rc == MP_ERR_TRUNC ? "TRUNC" : "DATA",
	    r.err_offset, r.err);
  return t.s;
}

/* Check the decoding of a complete stream by every path and several batch
** sizes, as it is and followed by 64 bytes that are not read (then the
** unchecked paths decode every event, as in the middle of a long file). */
static void check_dump(const buf *b, const char *want, const char *name)
{
  static const size_t batches[] = { 0, 101, 103, 116, 164 };
  size_t i, pad;
  char label[200];
  buf c = *b;
  memset(c.b + c.n, 0xff, 64);
  for (pad = 0; pad <= 64; pad += 64)
    for (i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
      char *got = dump(c.b, c.n + pad, batches[i]);
      snprintf(label, sizeof(label), "%s (batch %zu%s)", name, batches[i],
	       pad ? ", bytes after the end" : "");
      if ((i == 0 && !pad) || strcmp(got, want)) is_str(got, want, label);
      free(got);
    }
}

/* -- Streams of each version ---------------------------------------------- */

static void test_v1(void)
{
  buf b = { {0}, 0 };
  prologue(&b, "ljs", 1);
  hsym_lfunc(&b, 0x1000, "@a.lua", 7);
  u8(&b, MP_FINAL);
  prologue(&b, "ljm", 1);
  ev(&b, ALLOC(MP_SRC_INTERNAL), 2, U(0x100), U(32));
  ev(&b, ALLOC(MP_SRC_LFUNC), 4, U(0x1000), U(9), U(0x200), U(300));
  ev(&b, REALLOC(MP_SRC_CFUNC), 5, U(0x5000), U(0x200), U(300), U(0x300),
     U(600));
  ev(&b, FREE(MP_SRC_INTERNAL), 2, U(0x100), U(32));
  u8(&b, MP_FINAL);
  check_dump(&b,
    "@7 sym-lua hdr id=1000 line=7 name='@a.lua'\n"
    "@26 alloc int id=0 line=0 o=0/0 n=100/32\n"
    "@30 alloc lua id=1000 line=9 o=0/0 n=200/300\n"
    "@38 realloc c id=5000 line=0 o=200/300 n=300/600\n"
    "@50 free int id=0 line=0 o=100/32 n=0/0\n"
    "versions 1/1 END\n", "v1: Lua symbol, alloc/realloc/free from each "
    "source but traces");
}

static void test_v2(void)
{
  buf b = { {0}, 0 };
  prologue(&b, "ljs", 2);
  hsym_lfunc(&b, 0x1000, "@a.lua", 7);
  hsym_trace(&b, MP_SYM_TRACE_V2, 3, 0x1000, 8);
  u8(&b, MP_FINAL);
  prologue(&b, "ljm", 2);
  ev(&b, ALLOC(MP_SRC_TRACE), 3, U(3), U(0x100), U(16));
  ev(&b, SYMEV(MP_SRC_LFUNC), 0);
  uleb(&b, 0x2000); str(&b, "@b.lua"); uleb(&b, 1);
  ev(&b, SYMEV(MP_SRC_TRACE), 3, U(4), U(0x2000), U(2));
  ev(&b, FREE(MP_SRC_TRACE), 3, U(4), U(0x100), U(16));
  u8(&b, MP_FINAL);
  check_dump(&b,
    "@7 sym-lua hdr id=1000 line=7 name='@a.lua'\n"
    "@18 sym-trace hdr id=3 proto=1000 line=8\n"
    "@31 alloc trace id=3 line=0 o=0/0 n=100/16\n"
    "@36 sym-lua stream id=2000 line=1 name='@b.lua'\n"
    "@47 sym-trace stream id=4 proto=2000 line=2\n"
    "@52 free trace id=4 line=0 o=100/16 n=0/0\n"
    "versions 2/2 END\n", "v2: trace symbol type 1, trace locations, "
    "symbols inside the event stream");
}

/* A v3 stream with every kind of item; also the base of the truncation
** test. */
static void build_v3(buf *b)
{
  b->n = 0;
  prologue(b, "ljs", 3);
  hsym_lfunc(b, 0x1000, "@a.lua", 1);
  hsym_cfunc(b, 0x5000, "cf");
  hsym_trace(b, MP_SYM_TRACE_V3, 2, 0x1000, 3);
  u8(b, MP_FINAL);
  prologue(b, "ljm", 3);
  ev(b, ALLOC(MP_SRC_LFUNC), 4, U(0x1000), U(3), U(0x7f00000100), U(32));
  ev(b, SYMEV(MP_SRC_CFUNC), 0);
  uleb(b, 0x6000); str(b, "cg");
  ev(b, REALLOC(MP_SRC_CFUNC), 5, U(0x6000), U(0x7f00000100), U(32),
     U(0x7f00000200), U(64));
  ev(b, SYMEV(MP_SRC_TRACE), 3, U(2), U(0x1000), U(4));
  ev(b, FREE(MP_SRC_TRACE), 3, U(2), U(0x7f00000200), U(64));
  ev(b, ALLOC(MP_SRC_INTERNAL), 2, UINT64_MAX, UINT64_MAX);
  u8(b, MP_FINAL);
}

static const char v3_dump[] =
  "@7 sym-lua hdr id=1000 line=1 name='@a.lua'\n"
  "@18 sym-cfunc hdr id=5000 name='cf'\n"
  "@25 sym-trace hdr id=2 proto=1000 line=3\n"
  "@38 alloc lua id=1000 line=3 o=0/0 n=7f00000100/32\n"
  "@49 sym-cfunc stream id=6000 name='cg'\n"
  "@56 realloc c id=6000 line=0 o=7f00000100/32 n=7f00000200/64\n"
  "@74 sym-trace stream id=2 proto=1000 line=4\n"
  "@79 free trace id=2 line=0 o=7f00000200/64 n=0/0\n"
  "@88 alloc int id=0 line=0 o=0/0 n=ffffffffffffffff/18446744073709551615\n"
  "versions 3/3 END\n";

static void test_v3(void)
{
  buf b;
  build_v3(&b);
  check_dump(&b, v3_dump, "v3: C symbols in the header and the stream, "
	     "trace type 2, 10-byte numbers");
}

/* -- Errors --------------------------------------------------------------- */

/* Symtab and event prologues of version ver, nothing in the symtab. */
static void empty_head(buf *b, int ver)
{
  b->n = 0;
  prologue(b, "ljs", ver);
  u8(b, MP_FINAL);
  prologue(b, "ljm", ver);
}

/* Decode b and check only the last line (how it ended), the same by
** mp_reader_next() and mp_reader_events(). */
static void check_end(const buf *b, const char *want, const char *name)
{
  static const size_t batches[] = { 0, 116 };
  size_t i;
  char label[200];
  for (i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
    char *got = dump(b->b, b->n, batches[i]), *last;
    size_t n = strlen(got);
    got[n - 1] = '\0';
    last = strrchr(got, '\n');
    last = last ? last + 1 : got;
    n = strlen(last);
    last[n] = '\n';
    last[n + 1] = '\0';
    snprintf(label, sizeof(label), "%s (batch %zu)", name, batches[i]);
    if (i == 0 || strcmp(last, want)) is_str(last, want, i ? label : name);
    free(got);
  }
}

static void test_errors(void)
{
  buf b;
  int v;
  b.n = 0; prologue(&b, "ljx", 3);
  check_end(&b, "versions 0/0 DATA at 0: magic \"ljs\" of a memprof symtab\n",
	    "wrong symtab magic");
  b.n = 0; prologue(&b, "ljs", 3); u8(&b, MP_FINAL); prologue(&b, "LJM", 3);
  check_end(&b, "versions 3/0 DATA at 8: magic \"ljm\" of a memprof event "
	    "stream\n", "wrong event stream magic");
  b.n = 0; prologue(&b, "ljs", 4);
  check_end(&b, "versions 4/0 DATA at 3: ljs version 1 to 3, found version "
	    "4\n", "unsupported symtab version 4");
  b.n = 0; prologue(&b, "ljs", 0);
  check_end(&b, "versions 0/0 DATA at 3: ljs version 1 to 3, found version "
	    "0\n", "unsupported symtab version 0");
  b.n = 0; prologue(&b, "ljs", 3); u8(&b, MP_FINAL); prologue(&b, "ljm", 9);
  check_end(&b, "versions 3/9 DATA at 11: ljm version 1 to 3 or the "
	    "ljmemprof extension (76), found version 9\n",
	    "unsupported event stream version");

  /* Symbol headers: type 1 is unknown in v1, type 3 in every version. */
  b.n = 0; prologue(&b, "ljs", 1); hsym_cfunc(&b, 0x10, "f");
  check_end(&b, "versions 1/0 DATA at 7: symtab entry header valid in version "
	    "1, found 0x01\n", "symbol type 1 in a v1 symtab");
  b.n = 0; prologue(&b, "ljs", 2); hsym_trace(&b, 2, 1, 2, 3);
  check_end(&b, "versions 2/0 DATA at 7: symtab entry header valid in version "
	    "2, found 0x02\n", "symbol type 2 in a v2 symtab");
  b.n = 0; prologue(&b, "ljs", 3); hsym_trace(&b, 3, 1, 2, 3);
  check_end(&b, "versions 3/0 DATA at 7: symtab entry header valid in version "
	    "3, found 0x03\n", "symbol type 3 in a v3 symtab");

  /* Event headers that no version, or not this one, has. */
  {
    static const struct { int ver; unsigned h; } bad[] = {
      { 1, ALLOC(MP_SRC_TRACE) }, { 1, SYMEV(MP_SRC_LFUNC) },
      { 2, SYMEV(MP_SRC_CFUNC) }, { 3, SYMEV(MP_SRC_INTERNAL) },
      { 3, 0x00 }, { 3, ALLOC(0) }, { 3, ALLOC(5 << 2) },
      { 3, ALLOC(7 << 2) }, { 3, 0x20 | ALLOC(MP_SRC_LFUNC) },
      { 3, 0x40 | FREE(MP_SRC_INTERNAL) }, { 3, 0x81 }, { 3, 0x85 },
      { 3, 0xff },
    };
    size_t i, k;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
      for (v = 0; v < 2; v++) {	/* Checked path, then unchecked ones. */
	char want[160], name[80];
	empty_head(&b, bad[i].ver);
	u8(&b, bad[i].h);
	uleb(&b, 1); uleb(&b, 2); uleb(&b, 3); uleb(&b, 4); uleb(&b, 5);
	if (v) for (k = 0; k < 80; k++) u8(&b, 1);
	snprintf(want, sizeof(want), "versions %d/%d DATA at 15: event header "
		 "valid in version %d, found 0x%02x\n", bad[i].ver,
		 bad[i].ver, bad[i].ver, bad[i].h);
	snprintf(name, sizeof(name), "event header 0x%02x rejected in v%d "
		 "(%s path)", bad[i].h, bad[i].ver, v ? "fast" : "checked");
	check_end(&b, want, name);
      }
  }

  /* Overlong numbers: 11 bytes, or a 10th byte above 1. The same error
  ** whether the fast path (60+ bytes left) or the checked one sees it. */
  for (v = 0; v < 2; v++) {
    size_t i;
    char name[80];
    empty_head(&b, 3);
    u8(&b, ALLOC(MP_SRC_INTERNAL));
    for (i = 0; i < 10; i++) u8(&b, 0x80);
    u8(&b, 0x00);
    if (v) for (i = 0; i < 80; i++) u8(&b, 0);
    snprintf(name, sizeof(name), "11-byte ULEB128 (%s path)",
	     v ? "fast" : "checked");
    check_end(&b, "versions 3/3 DATA at 16: ULEB128 new address, found an "
	      "overlong number\n", name);
    empty_head(&b, 3);
    u8(&b, FREE(MP_SRC_LFUNC));
    uleb(&b, 0x1000);
    uleb(&b, 5);
    uleb(&b, 7);
    for (i = 0; i < 9; i++) u8(&b, 0xff);
    u8(&b, 0x02);
    if (v) for (i = 0; i < 80; i++) u8(&b, 0);
    snprintf(name, sizeof(name), "10-byte ULEB128 above 2^64 (%s path)",
	     v ? "fast" : "checked");
    check_end(&b, "versions 3/3 DATA at 20: ULEB128 old size, found an "
	      "overlong number\n", name);
  }
  /* The largest 64-bit number is fine. */
  empty_head(&b, 3);
  ev(&b, ALLOC(MP_SRC_INTERNAL), 2, UINT64_MAX, U(1));
  u8(&b, MP_FINAL);
  check_end(&b, "versions 3/3 END\n", "2^64-1 in 10 bytes is accepted");

  /* Strings longer than 2^28 bytes are not names. */
  b.n = 0; prologue(&b, "ljs", 3);
  u8(&b, MP_SYM_CFUNC_V3); uleb(&b, 0x10); uleb(&b, (U(1) << 28) + 1);
  check_end(&b, "versions 3/0 DATA at 9: C function name length, found "
	    "268435457 bytes (absurd)\n", "absurd string length");
  b.n = 0; prologue(&b, "ljs", 3);
  u8(&b, MP_SYM_LFUNC); uleb(&b, 0x10); uleb(&b, 100); u8(&b, 'x');
  check_end(&b, "versions 3/0 TRUNC at 11: chunk name of 100 bytes, found end "
	    "of data\n", "string running past the end is truncation");

  /* Data after the epilogue is not read. */
  empty_head(&b, 3);
  u8(&b, MP_FINAL);
  u8(&b, 0xff);
  check_end(&b, "versions 3/3 END\n", "bytes after the epilogue are ignored");
}

/* Every proper prefix of a valid stream is truncation (never bad data),
** decodes a prefix of the items, and says where it ends. */
static void test_truncation(void)
{
  buf b;
  size_t len, bad = 0, first_bad = 0;
  char *full, *why = NULL;
  build_v3(&b);
  full = dump(b.b, b.n, 0);
  *strstr(full, "versions ") = '\0';	/* Items only. */
  for (len = 0; len < b.n; len++) {
    uint8_t *copy = malloc(len ? len : 1);	/* Exact size, for ASan. */
    char *got, *end;
    memcpy(copy, b.b, len);
    got = dump(copy, len, len % 3 == 2 ? 116 : len % 3 ? 103 : 0);
    end = strstr(got, "versions ");
    if (strncmp(got, full, (size_t)(end - got)) || !strstr(end, "TRUNC at ")) {
      if (!bad++) { first_bad = len; why = strdup(got); }
    } else {
      size_t at = strtoul(strstr(end, "TRUNC at ") + 9, NULL, 10);
      if (at != len && !bad++) { first_bad = len; why = strdup(got); }
    }
    free(got);
    free(copy);
  }
  ok(bad == 0, "each of the stream's proper prefixes is truncated, with "
     "the items before the cut", "%zu bad prefixes, first of %zu bytes:\n%s",
     bad, first_bad, why ? why : "");
  free(why);
  free(full);
}

/* Random events of every kind and source whose numbers have every length
** from 1 to 10 bytes decode to what was encoded, by each reading path. */
static void test_random_numbers(void)
{
  enum { N = 20000 };
  static const unsigned srcs[] = { MP_SRC_INTERNAL, MP_SRC_LFUNC,
				   MP_SRC_CFUNC, MP_SRC_TRACE };
  static mp_item want[N];
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  uint8_t *b = malloc((size_t)N * 61 + 64), *p;
  size_t i, path, bad = 0;
  char first[300] = "";
  if (!b) abort();
  p = mp_put_prologue(b, "ljs", 3);
  *p++ = MP_FINAL;
  p = mp_put_prologue(p, "ljm", 3);
  for (i = 0; i < N; i++) {
    mp_item *w = &want[i];
    uint64_t num[6];
    int k;
    for (k = 0; k < 6; k++) {	/* xorshift64*, random bit lengths. */
      uint64_t x;
      rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
      x = rng * 2685821657736338717ull;
      num[k] = x >> (x & 63);
    }
    memset(w, 0, sizeof(*w));
    w->kind = (uint8_t)(1 + num[0] % 3);
    w->src = (uint8_t)srcs[(num[1] >> 3) % 4];
    w->offset = (size_t)(p - b);
    *p++ = (uint8_t)(w->kind | w->src);
    if (w->src != MP_SRC_INTERNAL) p = mp_put_uleb(p, w->id = num[2]);
    if (w->src == MP_SRC_LFUNC) p = mp_put_uleb(p, w->line = num[3]);
    if (w->kind & MP_AEV_FREE) {
      p = mp_put_uleb(p, w->oaddr = num[4]);
      p = mp_put_uleb(p, w->osize = num[5]);
    }
    if (w->kind & MP_AEV_ALLOC) {
      p = mp_put_uleb(p, w->naddr = num[5] ^ num[4]);
      p = mp_put_uleb(p, w->nsize = num[4]);
    }
  }
  *p++ = MP_FINAL;
  for (path = 0; path < 3; path++) {
    mp_reader r;
    mp_item it[64];
    size_t n = 0, got, j;
    int rc = mp_reader_init(&r, b, (size_t)(p - b));
    while (rc == MP_OK) {
      if (path == 0) {
	rc = mp_reader_next(&r, &it[0]);
	got = rc == MP_OK;
      } else if (!(got = read_events(&r, it, path == 1 ? 37 : 45))) {
	rc = mp_reader_next(&r, &it[0]);
	got = rc == MP_OK;
      }
      for (j = 0; j < got; j++, n++) {
	const mp_item *g = &it[j], *w = &want[n < N ? n : N - 1];
	if (n >= N || g->kind != w->kind || g->src != w->src ||
	    g->id != w->id || g->line != w->line || g->oaddr != w->oaddr ||
	    g->osize != w->osize || g->naddr != w->naddr ||
	    g->nsize != w->nsize || g->offset != w->offset) {
	  if (!bad++)
	    snprintf(first, sizeof(first), "path %zu, event %zu at %zu: got "
		     "%d/%d %llx %llx %llx/%llx %llx/%llx", path, n, g->offset,
		     g->kind, g->src, (unsigned long long)g->id,
		     (unsigned long long)g->line, (unsigned long long)g->oaddr,
		     (unsigned long long)g->osize, (unsigned long long)g->naddr,
		     (unsigned long long)g->nsize);
	}
      }
    }
    if (rc != MP_END || n != N) {
      if (!bad++)
	snprintf(first, sizeof(first), "path %zu: rc %d after %zu events: %s",
		 path, rc, n, r.err);
    }
  }
  ok(bad == 0, "20000 random events with numbers of 1 to 10 bytes decode "
     "exactly, by each path", "%zu bad; first: %s", bad, first);
  free(b);
}

/* -- The profile pass and the report -------------------------------------- */

/* Report options as the command line has them. */
typedef struct opts {
  mp_sort sort;
  uint64_t top;
  int leak_only, human;
  int tarantool;	/* --accounting tarantool. */
} opts;

/* Render the report of a stream as text into a string. */
static char *report(const buf *b, const opts *o, int *rc)
{
  mp_profile p;
  mp_sections sec;
  mp_render_opts ro;
  char *s = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&s, &n);
  memset(&ro, 0, sizeof(ro));
  ro.top = o->top;
  ro.leak_only = o->leak_only;
  ro.human = o->human;
  ro.tarantool = o->tarantool;
  mp_profile_init(&p);
  *rc = mp_profile_read(&p, b->b, b->n);
  if (mp_sections_build(&sec, &p, o->sort) == 0) {
    mp_render_text(f, &sec, &ro);
    mp_sections_free(&sec);
  }
  fclose(f);
  mp_profile_free(&p);
  return s;
}

static void test_report(void)
{
  buf b = { {0}, 0 };
  opts o;
  char *got;
  int rc;
  prologue(&b, "ljs", 3);
  hsym_lfunc(&b, 0x1000, "@a.lua", 1);
  hsym_cfunc(&b, 0x5000, "cf");
  hsym_cfunc(&b, 0x6000, "cg");
  u8(&b, MP_FINAL);
  prologue(&b, "ljm", 3);
  ev(&b, ALLOC(MP_SRC_LFUNC), 4, U(0x1000), U(3), U(0x100), U(32));
  ev(&b, ALLOC(MP_SRC_LFUNC), 4, U(0x1000), U(3), U(0x200), U(64));
  ev(&b, REALLOC(MP_SRC_LFUNC), 6, U(0x1000), U(4), U(0x200), U(64),
     U(0x300), U(128));
  ev(&b, FREE(MP_SRC_INTERNAL), 2, U(0x100), U(32));
  ev(&b, ALLOC(MP_SRC_CFUNC), 3, U(0x5000), U(0x400), U(10));	/* cf */
  ev(&b, ALLOC(MP_SRC_CFUNC), 3, U(0x5010), U(0x500), U(20));	/* cf+0x10 */
  ev(&b, ALLOC(MP_SRC_CFUNC), 3, U(0x4000), U(0x600), U(5));	/* below */
  /* The prototype at 0x1000 dies; new code loaded from a string. */
  ev(&b, SYMEV(MP_SRC_LFUNC), 0);
  uleb(&b, 0x1000); str(&b, "return 1\n"); uleb(&b, 1);
  ev(&b, ALLOC(MP_SRC_LFUNC), 4, U(0x1000), U(1), U(0x700), U(16));
  ev(&b, SYMEV(MP_SRC_TRACE), 3, U(7), U(0x1000), U(1));
  ev(&b, ALLOC(MP_SRC_TRACE), 3, U(7), U(0x800), U(8));
  ev(&b, FREE(MP_SRC_TRACE), 3, U(7), U(0x300), U(128));
  ev(&b, FREE(MP_SRC_INTERNAL), 2, U(0x999), U(7));	/* Never seen. */
  u8(&b, MP_FINAL);

  memset(&o, 0, sizeof(o));
  o.tarantool = 1;
  got = report(&b, &o, &rc);
  ok(rc == MP_END, "hand-built stream is read to its end", "rc %d", rc);
  /* Heap summary of @a.lua:3 (Tarantool's accounting): allocs 32 + 64;
  ** its 64-byte block reallocated to 128 at line 4: +128 -64; its 32-byte
  ** block freed: -32. 128 bytes, 3 allocs, 2 frees. @a.lua:4 ends at -128
  ** (its block was freed by the trace) and is not listed. */
  is_str(got,
    "ALLOCATIONS\n"
    "@a.lua:3: 2 events\t+96B\t-0B\n"
    "cf+0x10: 1 events\t+20B\t-0B\n"
    "function_alias_1:1: 1 events\t+16B\t-0B\n"
    "cf: 1 events\t+10B\t-0B\n"
    "TRACE [7] started at function_alias_1:1: 1 events\t+8B\t-0B\n"
    "CFUNC 0x4000: 1 events\t+5B\t-0B\n"
    "\n"
    "REALLOCATIONS\n"
    "@a.lua:4: 1 events\t+128B\t-64B\n"
    "\tOverrides:\n"
    "\t\t@a.lua:3\n"
    "\n"
    "\n"
    "DEALLOCATIONS\n"
    "TRACE [7] started at function_alias_1:1: 1 events\t+0B\t-128B\n"
    "\tOverrides:\n"
    "\t\t@a.lua:4\n"
    "\n"
    "INTERNAL: 2 events\t+0B\t-39B\n"
    "\tOverrides:\n"
    "\t\t@a.lua:3\n"
    "\n"
    "\n"
    "HEAP SUMMARY:\n"
    "@a.lua:3 holds 128B: 3 allocs, 2 frees\n"
    "cf+0x10 holds 20B: 1 allocs, 0 frees\n"
    "function_alias_1:1 holds 16B: 1 allocs, 0 frees\n"
    "cf holds 10B: 1 allocs, 0 frees\n"
    "TRACE [7] started at function_alias_1:1 holds 8B: 1 allocs, 0 frees\n"
    "CFUNC 0x4000 holds 5B: 1 allocs, 0 frees\n"
    "\n"
    "ALIASES:\n"
    "function_alias_1:\n"
    "1\t| return 1\n"
    "\n", "report: sections, overrides, heap summary, aliases, C symbols");
  free(got);

  /* The heap summary by default: the blocks live at the end by owner.
  ** Nothing of @a.lua:3 is: its 32-byte block was freed, its 64-byte
  ** one became @a.lua:4's when line 4 resized it, and the trace freed
  ** that. Tarantool's accounting above says it holds 128 bytes. */
  o.tarantool = 0;
  o.leak_only = 1;
  got = report(&b, &o, &rc);
  is_str(got,
    "HEAP SUMMARY: 59B in 5 blocks live at the end, by the source that allocated or last resized them\n"
    "cf+0x10 holds 20B in 1 block (33.9%)\n"
    "function_alias_1:1 holds 16B in 1 block (27.1%)\n"
    "cf holds 10B in 1 block (16.9%)\n"
    "TRACE [7] started at function_alias_1:1 holds 8B in 1 block (13.6%)\n"
    "CFUNC 0x4000 holds 5B in 1 block (8.5%)\n"
    "\n"
    "ALIASES:\n"
    "function_alias_1:\n"
    "1\t| return 1\n"
    "\n" NOTES_TRACES("8B in 1 block live at the end (1 trace)"),
    "--leak-only: the live blocks by owner; the phantom of @a.lua:3 "
    "is gone");
  free(got);
  o.tarantool = 1;
  o.leak_only = 0;

  o.sort = MP_SORT_COUNT;
  o.top = 2;
  o.leak_only = 1;
  got = report(&b, &o, &rc);
  is_str(got,
    "HEAP SUMMARY:\n"
    "@a.lua:3 holds 128B: 3 allocs, 2 frees\n"
    "cf+0x10 holds 20B: 1 allocs, 0 frees\n"
    "... and 4 more sources (--top 0 prints all)\n"
    "\n", "--leak-only --sort count --top 2 (ties by bytes)");
  free(got);

  /* Cut just before the trace's free. The 128-byte block is live, and
  ** the accounting charges it to @a.lua:3, whose block it grew from;
  ** @a.lua:4, which reallocated it, holds nothing. */
  {
    buf c = b;
    opts l;
    memset(&l, 0, sizeof(l));
    l.leak_only = 1;
    l.tarantool = 1;
    c.n -= 1 + 4 + 6;	/* Epilogue, the last free, the trace's free. */
    got = report(&c, &l, &rc);
    ok(rc == MP_ERR_TRUNC, "cut stream reads as truncated", "rc %d", rc);
    is_str(got,
      "HEAP SUMMARY:\n"
      "@a.lua:3 holds 128B: 3 allocs, 2 frees\n"
      "cf+0x10 holds 20B: 1 allocs, 0 frees\n"
      "function_alias_1:1 holds 16B: 1 allocs, 0 frees\n"
      "cf holds 10B: 1 allocs, 0 frees\n"
      "TRACE [7] started at function_alias_1:1 holds 8B: 1 allocs, 0 frees\n"
      "CFUNC 0x4000 holds 5B: 1 allocs, 0 frees\n"
      "\n"
      "ALIASES:\n"
      "function_alias_1:\n"
      "1\t| return 1\n"
      "\n"
      "NOTES:\n"	/* Tarantool's layout keeps the note of the cut. */
      "the profile is cut short at byte 121, after 9 events: its frees "
      "after that are missing, so what is held is an upper bound (the "
      "blocks made before the cut that the program still held, and those "
      "it freed later)\n"
      "\n", "report of a cut stream: everything before the cut, and a "
      "note of the cut");
    free(got);
  }
}

/* The profile pass on a large heap whose frees jump from page to page
** (the pass then prefetches a batch ahead, see mp_profile.c), with trace
** redefinitions between the frees: every free is charged to the trace
** symbol in force when it came, and finds the block it frees. */
static void test_profile_scattered(void)
{
  enum { NB = 60000, NPAGE = 16384, SEG = 5000 };
  static uint64_t addr[NB];
  uint64_t total = 0;
  uint8_t *b = malloc((size_t)NB * 40 + 4096), *q;
  size_t i, bad = 0;
  mp_profile p;
  int rc;
  if (!b) abort();
  q = mp_put_prologue(b, "ljs", 3);
  *q++ = MP_SYM_LFUNC;
  q = mp_put_uleb(q, 0x1000);
  q = mp_put_uleb(q, 6);
  memcpy(q, "@x.lua", 6);
  q += 6;
  q = mp_put_uleb(q, 1);
  *q++ = MP_FINAL;
  q = mp_put_prologue(q, "ljm", 3);
  for (i = 0; i < NB; i++) {	/* Distinct addresses, scattered pages. */
    addr[i] = 0x7f0000000000ull + (i * 40503u % NPAGE) * 4096 +
	      (i / NPAGE) * 16;
    *q++ = ALLOC(MP_SRC_LFUNC);
    q = mp_put_uleb(q, 0x1000);
    q = mp_put_uleb(q, 2);
    q = mp_put_uleb(q, addr[i]);
    q = mp_put_uleb(q, 16 + i % 100);
    total += 16 + i % 100;
  }
  for (i = 0; i < NB; i++) {	/* Freed in another order by trace 7. */
    size_t j = (i * 7919) % NB;
    if (i % SEG == 0) {	/* Trace 7 is (re)defined, starting at line i. */
      *q++ = SYMEV(MP_SRC_TRACE);
      q = mp_put_uleb(q, 7);
      q = mp_put_uleb(q, 0x1000);
      q = mp_put_uleb(q, i / SEG + 10);
    }
    *q++ = FREE(MP_SRC_TRACE);
    q = mp_put_uleb(q, 7);
    q = mp_put_uleb(q, addr[j]);
    q = mp_put_uleb(q, 16 + j % 100);
  }
  *q++ = MP_FINAL;
  mp_profile_init(&p);
  rc = mp_profile_read(&p, b, (size_t)(q - b));
  for (i = 0; i < p.nsite; i++) {	/* One site per definition of 7. */
    const mp_site *s = &p.site[i];
    if (s->loc.src == MP_SRC_TRACE &&
	(s->n[MP_AEV_FREE] != SEG ||
	 s->loc.aux != 10 + i - 1))
      bad++;
  }
  for (i = 0; i < p.nlink; i++)
    if (p.link[i].owner != 0 || p.link[i].cost.n != SEG) bad++;
  ok(rc == MP_END && bad == 0 && p.nsite == 1 + NB / SEG &&
     p.nlink == NB / SEG && p.heap.count == 0 && p.heap.bytes == 0 &&
     p.total[MP_AEV_FREE].n == NB && p.total[MP_AEV_FREE].minus == total,
     "60000 blocks on 16384 pages freed at random across 12 definitions "
     "of a trace: each free found and charged in order", "rc %d, %zu bad, "
     "%u sites, %u links, %zu live, %llu freed of %llu", rc, bad, p.nsite,
     p.nlink, p.heap.count,
     (unsigned long long)p.total[MP_AEV_FREE].minus,
     (unsigned long long)total);
  mp_profile_free(&p);
  free(b);
}

/* A v2 trace and a v1 stream through the report: labels per version. */
static void test_report_versions(void)
{
  buf b = { {0}, 0 };
  opts o;
  char *got;
  int rc;
  memset(&o, 0, sizeof(o));
  o.leak_only = 1;
  prologue(&b, "ljs", 2);
  hsym_lfunc(&b, 0x1000, "=stdin", 1);
  hsym_trace(&b, MP_SYM_TRACE_V2, 1, 0x1000, 2);
  u8(&b, MP_FINAL);
  prologue(&b, "ljm", 2);
  ev(&b, ALLOC(MP_SRC_TRACE), 3, U(1), U(0x100), U(24));
  ev(&b, ALLOC(MP_SRC_TRACE), 3, U(9), U(0x200), U(8));	/* No symbol. */
  ev(&b, ALLOC(MP_SRC_LFUNC), 4, U(0x3000), U(5), U(0x300), U(4));
  u8(&b, MP_FINAL);
  got = report(&b, &o, &rc);
  is_str(got,
    "HEAP SUMMARY: 36B in 3 blocks live at the end, by the source that allocated or last resized them\n"
    "TRACE [1] started at =stdin:2 holds 24B in 1 block (66.7%)\n"
    "TRACE [9] holds 8B in 1 block (22.2%)\n"
    "LFUNC 0x3000:5 holds 4B in 1 block (11.1%)\n"
    "\n" NOTES_TRACES("32B in 2 blocks live at the end (2 traces)"),
    "v2: traces with and without symbols, unknown prototype");
  free(got);
}

/* Sources are told apart by their labels: a chunk loaded 200 times at
** two alternating addresses is one source per line, a reused address with
** another chunk is another source, and the symbol table keeps one
** definition per address (redefinitions replace it). */
static void test_sources_by_label(void)
{
  buf b = { {0}, 0 };
  opts o;
  mp_profile p;
  char *got;
  int rc, i;
  memset(&o, 0, sizeof(o));
  prologue(&b, "ljs", 3);
  u8(&b, MP_FINAL);
  prologue(&b, "ljm", 3);
  for (i = 0; i < 200; i++) {	/* "return {}" loaded again and again. */
    uint64_t at = 0x1000 + (uint64_t)(i % 2) * 0x100;
    ev(&b, SYMEV(MP_SRC_LFUNC), 0);
    uleb(&b, at); str(&b, "return {}"); uleb(&b, 1);
    ev(&b, ALLOC(MP_SRC_LFUNC), 4, at, U(1), U(0x10000 + 64 * i), U(16));
  }
  ev(&b, SYMEV(MP_SRC_LFUNC), 0);	/* Another chunk at a reused address. */
  uleb(&b, 0x1000); str(&b, "@b.lua"); uleb(&b, 1);
  ev(&b, ALLOC(MP_SRC_LFUNC), 4, U(0x1000), U(1), U(0x90000), U(8));
  u8(&b, MP_FINAL);
  got = report(&b, &o, &rc);
  is_str(got,
    "ALLOCATIONS\n"
    "[string \"return {}\"]:1: 200 events\t+3200B\t-0B\n"
    "@b.lua:1: 1 events\t+8B\t-0B\n"
    "\n"
    "REALLOCATIONS\n"
    "\n"
    "DEALLOCATIONS\n"
    "\n"
    "HEAP SUMMARY: 3208B in 201 blocks live at the end, by the source that allocated or last resized them\n"
    "[string \"return {}\"]:1 holds 3200B in 200 blocks (99.8%)\n"
    "@b.lua:1 holds 8B in 1 block (0.2%)\n"
    "\n" NOTES_NONE, "a chunk loaded 200 times is one source; a reused address with "
    "another chunk is another");
  free(got);
  mp_profile_init(&p);
  rc = mp_profile_read(&p, b.b, b.n);
  ok(rc == MP_END && p.nsite == 2 && p.syms.nsym == 3 &&
     p.syms.names.n == 3 && p.nsym[1][MP_SRC_LFUNC >> MP_SRC_SHIFT] == 201,
     "201 definitions at 2 addresses keep 2 symbols and 2 names",
     "rc %d, %u sites, %u symbols, %u names", rc, p.nsite, p.syms.nsym - 1,
     p.syms.names.n - 1);
  mp_profile_free(&p);
}

/* A chunk name given to load() (not starting with '@' or '='), of at most
** MP_STRING_CHUNK_MAX bytes and no control character, is labelled as Lua
** names it, [string "name"], and gets no alias; a longer one, or one with
** a control character, is taken for source text: function_alias_N, its
** text under ALIASES. */
static void test_string_chunk_names(void)
{
  static const char *const chunk[] = {
    "tbl",
    "0123456789012345678901234567890123456789",	/* 40 bytes. */
    "01234567890123456789012345678901234567890",	/* 41 bytes. */
    "a\tb",
    "=stdin",
    "",
  };
  buf b = { {0}, 0 };
  opts o;
  char *got;
  int rc;
  uint64_t i;
  memset(&o, 0, sizeof(o));
  prologue(&b, "ljs", 3);
  u8(&b, MP_FINAL);
  prologue(&b, "ljm", 3);
  for (i = 0; i < sizeof(chunk) / sizeof(chunk[0]); i++) {
    ev(&b, SYMEV(MP_SRC_LFUNC), 0);
    uleb(&b, 0x1000 + 0x100 * i); str(&b, chunk[i]); uleb(&b, 1);
    ev(&b, ALLOC(MP_SRC_LFUNC), 4, U(0x1000 + 0x100 * i), U(2),
       U(0x10000 + 0x100 * i), U(60 - 10 * i));
  }
  u8(&b, MP_FINAL);
  got = report(&b, &o, &rc);
  is_str(got,
    "ALLOCATIONS\n"
    "[string \"tbl\"]:2: 1 events\t+60B\t-0B\n"
    "[string \"0123456789012345678901234567890123456789\"]:2: 1 events"
    "\t+50B\t-0B\n"
    "function_alias_1:2: 1 events\t+40B\t-0B\n"
    "function_alias_2:2: 1 events\t+30B\t-0B\n"
    "=stdin:2: 1 events\t+20B\t-0B\n"
    "[string \"\"]:2: 1 events\t+10B\t-0B\n"
    "\n"
    "REALLOCATIONS\n"
    "\n"
    "DEALLOCATIONS\n"
    "\n"
    "HEAP SUMMARY: 210B in 6 blocks live at the end, by the source that allocated or last resized them\n"
    "[string \"tbl\"]:2 holds 60B in 1 block (28.6%)\n"
    "[string \"0123456789012345678901234567890123456789\"]:2 holds 50B "
    "in 1 block (23.8%)\n"
    "function_alias_1:2 holds 40B in 1 block (19.0%)\n"
    "function_alias_2:2 holds 30B in 1 block (14.3%)\n"
    "=stdin:2 holds 20B in 1 block (9.5%)\n"
    "[string \"\"]:2 holds 10B in 1 block (4.8%)\n"
    "\n"
    "ALIASES:\n"
    "function_alias_1:\n"
    "1\t| 01234567890123456789012345678901234567890\n"
    "\n"
    "function_alias_2:\n"
    "1\t| a\tb\n"
    "\n" NOTES_NONE, "short string chunk names are labelled [string \"name\"]; long "
    "ones or ones with control characters get aliases");
  free(got);
}

/* The profile pass over a stream read a few bytes at a time (the window
** of pipes, slid and refilled in the middle of every kind of item) finds
** exactly what it finds over the stream in memory. */
static void test_windows(void)
{
  buf b;
  size_t chunk, bad = 0;
  char first[200] = "";
  build_v3(&b);
  for (chunk = 1; chunk <= 13; chunk++) {
    mp_profile w, p;
    mp_input in;
    int rw, rp, k, same;
    mp_profile_init(&w);
    mp_profile_init(&p);
    rw = mp_profile_read(&w, b.b, b.n - (chunk & 1));	/* Cut, or whole. */
    mp_input_memory(&in, b.b, b.n - (chunk & 1), chunk);
    rp = mp_profile_read_input(&p, &in);
    same = rw == rp && w.nsite == p.nsite && w.nlink == p.nlink &&
	   w.r.err_offset == p.r.err_offset && !strcmp(w.r.err, p.r.err);
    for (k = 0; k < MP_AEV_N; k++)
      same = same && !memcmp(&w.total[k], &p.total[k], sizeof(mp_cost));
    if (!same && !bad++)
      snprintf(first, sizeof(first), "chunk %zu: rc %d/%d, sites %u/%u, "
	       "offset %zu/%zu", chunk, rw, rp, w.nsite, p.nsite,
	       w.r.err_offset, p.r.err_offset);
    mp_input_close(&in);
    mp_profile_free(&w);
    mp_profile_free(&p);
  }
  ok(bad == 0, "the pass over windows of 1 to 13 bytes finds what the pass "
     "in memory finds", "%zu bad; first: %s", bad, first);
}

int main(void)
{
  test_v1();
  test_v2();
  test_v3();
  test_errors();
  test_truncation();
  test_random_numbers();
  test_report();
  test_report_versions();
  test_profile_scattered();
  test_sources_by_label();
  test_string_chunk_names();
  test_windows();
  printf("1..%d\n", n_test);
  return n_fail != 0;
}
