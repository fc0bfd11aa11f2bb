/*
** mp_decode.c: pull decoder for memprof streams, versions 1 to 3, and the
** ljmemprof extension (mp_ext.h).
**
** One pass over a window of bytes; no allocation. Events are decoded by
** mp_event_decode() (mp_format.h), the only event decoder; symbols and
** prologues, which are rare, by the bounds-checked readers below, which
** also explain what is wrong when an event cannot be decoded. Running out
** of bytes is MP_MORE while the stream goes on, MP_ERR_TRUNC at its end
** (the profiled process was cut short); bytes that cannot be a stream are
** MP_ERR_DATA. Both leave the offset and what was expected in the reader
** for one clear error line.
*/

#include <stdio.h>
#include <string.h>

#include "mp_format.h"
#include "mp_snap.h"

#define NO_ITEM		3	/* A step of the grammar that made no item. */

/* Record an error of kind rc at at; returns rc. The data ending in the
** middle of an item (MP_ERR_TRUNC) is reported where it ends: what says
** what was being read. */
static int fail(mp_reader *r, int rc, const uint8_t *at, const char *what)
{
  if (rc == MP_ERR_TRUNC) at = r->end;
  r->err_offset = r->origin + (size_t)(at - r->base);
  snprintf(r->err, sizeof(r->err), "%s", what);
  r->phase = MP_PH_DONE;
  return rc;
}

/* Read one ULEB128 at *pp (not past r->end) into *v and advance *pp; what
** names the field for errors, which are reported at its first byte. */
static int get_uleb_at(mp_reader *r, const uint8_t **pp, uint64_t *v,
		       const char *what)
{
  const uint8_t *p = *pp;
  uint64_t x = 0;
  unsigned shift = 0;
  char msg[120];
  for (;;) {
    uint8_t b;
    if (p >= r->end) {
      snprintf(msg, sizeof(msg), "ULEB128 %s, found end of data", what);
      return fail(r, MP_ERR_TRUNC, *pp, msg);
    }
    b = *p++;
    if (shift == 63 && b > 1) {
      snprintf(msg, sizeof(msg), "ULEB128 %s, found an overlong number", what);
      return fail(r, MP_ERR_DATA, *pp, msg);
    }
    x |= (uint64_t)(b & 0x7f) << shift;
    if (b < 0x80) break;
    shift += 7;
  }
  *v = x;
  *pp = p;
  return MP_OK;
}

/* Read one ULEB128 at r->p. */
static inline int get_uleb(mp_reader *r, uint64_t *v, const char *what)
{
  return get_uleb_at(r, &r->p, v, what);
}

/* Read a length-prefixed string; the item points into the window. */
static int get_string(mp_reader *r, mp_item *it, const char *what)
{
  uint64_t n;
  const uint8_t *at = r->p;
  int rc = get_uleb(r, &n, what);
  if (rc != MP_OK) return rc;
  if (n > MP_STRING_MAX) {
    char msg[120];
    snprintf(msg, sizeof(msg), "%s length, found %llu bytes (absurd)", what,
	     (unsigned long long)n);
    return fail(r, MP_ERR_DATA, at, msg);
  }
  if (n > (uint64_t)(r->end - r->p)) {
    char msg[120];
    snprintf(msg, sizeof(msg), "%s of %llu bytes, found end of data", what,
	     (unsigned long long)n);
    return fail(r, MP_ERR_TRUNC, r->p, msg);
  }
  it->name = (const char *)r->p;
  it->name_len = (size_t)n;
  r->p += n;
  return MP_OK;
}

/* Check a prologue with the given magic; store its version in *ver. */
static int get_prologue(mp_reader *r, const char *magic, int *ver)
{
  char msg[120];
  size_t left = (size_t)(r->end - r->p);
  size_t i;
  /* A heap snapshot (mp_snap.h) is a file of ours too, for another
  ** command: the caller says so. */
  if (magic[2] == 's' && r->origin + (size_t)(r->p - r->base) == 0 &&
      left >= 3 && !memcmp(r->p, MP_SNAP_MAGIC, 3))
    r->snapshot = 1;
  for (i = 0; i < 3 && i < left; i++)
    if (r->p[i] != (uint8_t)magic[i]) {
      snprintf(msg, sizeof(msg), "magic \"%s\" of a memprof %s", magic,
	       magic[2] == 's' ? "symtab" : magic[2] == 'n' ?
	       "trailer of notes" : "event stream");
      return fail(r, MP_ERR_DATA, r->p, msg);
    }
  if (left < MP_PROLOGUE_SIZE) {
    snprintf(msg, sizeof(msg), "%s prologue (7 bytes), found end of data",
	     magic);
    return fail(r, MP_ERR_TRUNC, r->p + left, msg);
  }
  *ver = r->p[3];
  if (*ver == MP_VERSION_EXT && magic[2] == 'm') {	/* The extension. */
    if (r->p[4] != MP_EXT_MINOR && r->p[4] != MP_EXT_MINOR_NATIVE) {
      snprintf(msg, sizeof(msg), "ljmemprof extension revision %d or %d, "
	       "found revision %d (a newer ljmemprof wrote it)", MP_EXT_MINOR,
	       MP_EXT_MINOR_NATIVE, r->p[4]);
      return fail(r, MP_ERR_DATA, r->p + 4, msg);
    }
    r->ext = 1;
  } else if (*ver < MP_VERSION_MIN || *ver > MP_VERSION_MAX) {
    snprintf(msg, sizeof(msg), "%s version %d to %d%s, found version %d",
	     magic, MP_VERSION_MIN, MP_VERSION_MAX,
	     magic[2] == 'm' ? " or the ljmemprof extension (76)" : "", *ver);
    return fail(r, MP_ERR_DATA, r->p + 3, msg);
  }
  r->p += MP_PROLOGUE_SIZE;
  return MP_OK;
}

void mp_reader_start(mp_reader *r)
{
  memset(r, 0, sizeof(*r));
  r->phase = MP_PH_LJS;
}

void mp_reader_window(mp_reader *r, const void *data, size_t len,
		      size_t origin, int eof)
{
  static const uint8_t none[1];	/* No arithmetic on NULL. */
  if (!data) data = none;
  r->base = r->p = (const uint8_t *)data;
  r->end = r->base + len;
  r->origin = origin;
  r->eof = eof;
}

int mp_reader_init(mp_reader *r, const void *data, size_t len)
{
  int rc;
  mp_reader_start(r);
  mp_reader_window(r, data, len, 0, 1);
  rc = get_prologue(r, MP_LJS_MAGIC, &r->ljs_version);
  if (rc == MP_OK) r->phase = MP_PH_SYMTAB;
  return rc;
}

#define GET(v, what) \
  do { int rc_ = get_uleb(r, &(v), what); if (rc_ != MP_OK) return rc_; } while (0)

/* Decode the payload of a symbol of source src. */
static int get_symbol(mp_reader *r, mp_item *it, int src)
{
  int rc;
  it->kind = MP_AEV_SYMTAB;
  it->src = (uint8_t)src;
  it->proto = it->line = 0;
  it->name = NULL;
  it->name_len = 0;
  switch (src) {
  case MP_SRC_LFUNC:
    GET(it->id, "prototype address");
    if ((rc = get_string(r, it, "chunk name")) != MP_OK) return rc;
    GET(it->line, "first line");
    break;
  case MP_SRC_CFUNC:
    GET(it->id, "C function address");
    if ((rc = get_string(r, it, "C function name")) != MP_OK) return rc;
    break;
  default:
    GET(it->id, "trace number");
    GET(it->proto, "trace start prototype");
    GET(it->line, "trace start line");
    break;
  }
  return MP_OK;
}

/* Whether C function symbol it is the marker of the final collection's
** start (mp_ext.h). */
static int is_gcstart(const mp_item *it)
{
  return it->id == MP_GCSTART_ADDR &&
	 it->name_len == sizeof(MP_GCSTART_NAME) - 1 &&
	 !memcmp(it->name, MP_GCSTART_NAME, it->name_len);
}

/* Decode one symbol of the symtab header; NO_ITEM at its end marker (the
** event stream's prologue comes next). */
static int next_header_sym(mp_reader *r, mp_item *it)
{
  const uint8_t *at = r->p;
  uint8_t h;
  int t, v = r->ljs_version;
  if (at >= r->end)
    return fail(r, MP_ERR_TRUNC, at, "symtab entry or end marker");
  h = *r->p++;
  if (h & MP_FINAL) {
    r->phase = MP_PH_LJM;
    return NO_ITEM;
  }
  t = h & MP_SYMTYPE_MASK;
  it->offset = r->origin + (size_t)(at - r->base);
  it->in_header = 1;
  if (t == MP_SYM_LFUNC) return get_symbol(r, it, MP_SRC_LFUNC);
  if (v == 2 && t == MP_SYM_TRACE_V2) return get_symbol(r, it, MP_SRC_TRACE);
  if (v >= 3 && t == MP_SYM_CFUNC_V3) return get_symbol(r, it, MP_SRC_CFUNC);
  if (v >= 3 && t == MP_SYM_TRACE_V3) return get_symbol(r, it, MP_SRC_TRACE);
  {
    char msg[120];
    snprintf(msg, sizeof(msg), "symtab entry header valid in version %d, "
	     "found 0x%02x", v, h);
    return fail(r, MP_ERR_DATA, at, msg);
  }
}

/* Headers of the symbols inside the event stream of version v (bit set):
** Lua functions and traces from version 2, C functions from version 3
** (and in the extension, whose extended records start with 0x00). */
static uint32_t symbol_headers(int v)
{
  uint32_t s = 0;
  if (v >= 2) s |= 1u << (MP_AEV_SYMTAB | MP_SRC_LFUNC) |
		   1u << (MP_AEV_SYMTAB | MP_SRC_TRACE);
  if (v >= 3) s |= 1u << (MP_AEV_SYMTAB | MP_SRC_CFUNC);
  if (v == MP_VERSION_EXT) s |= 1u << MP_XREC;
  return s;
}

/* Read a length-prefixed string from [*pp, end) into *s, *n. */
static int get_string_in(mp_reader *r, const uint8_t **pp,
			 const uint8_t *end, const char **s, size_t *n,
			 const char *what)
{
  uint64_t len;
  const uint8_t *at = *pp, *save = r->end;
  int rc;
  r->end = end;
  rc = get_uleb_at(r, pp, &len, what);
  r->end = save;
  if (rc != MP_OK) return rc;
  if (len > (uint64_t)(end - *pp)) {
    char msg[120];
    snprintf(msg, sizeof(msg), "%s of %llu bytes inside its record", what,
	     (unsigned long long)len);
    return fail(r, MP_ERR_DATA, at, msg);
  }
  *s = (const char *)*pp;
  *n = (size_t)len;
  *pp += len;
  return MP_OK;
}

/* Read a ULEB128 from [*pp, end): running past end is bad data (the record
** said how long it is). */
static int get_uleb_in(mp_reader *r, const uint8_t **pp, const uint8_t *end,
		       uint64_t *v, const char *what)
{
  const uint8_t *save = r->end;
  int rc;
  r->end = end;
  rc = get_uleb_at(r, pp, v, what);
  r->end = save;
  if (rc == MP_ERR_TRUNC) {
    char msg[120];
    snprintf(msg, sizeof(msg), "ULEB128 %s inside its record", what);
    return fail(r, MP_ERR_DATA, *pp, msg);
  }
  return rc;
}

/* Decode an extended record (header 0x00 at r->p): a node, a builtin's
** name, a setting; NO_ITEM for a type this reader does not know, which it
** skips by its length. */
static int get_xrec(mp_reader *r, mp_item *it)
{
  const uint8_t *at = r->p, *q = r->p + 1, *end;
  uint64_t type, len, v;
  int rc;
  char msg[120];
  it->offset = r->origin + (size_t)(at - r->base);
  if ((rc = get_uleb_at(r, &q, &type, "extended record type")) != MP_OK ||
      (rc = get_uleb_at(r, &q, &len, "extended record length")) != MP_OK)
    return rc;
  if (len > (uint64_t)(r->end - q)) {
    snprintf(msg, sizeof(msg), "extended record of %llu bytes, found end "
	     "of data", (unsigned long long)len);
    return fail(r, MP_ERR_TRUNC, at, msg);
  }
  end = q + len;
  it->kind = MP_AEV_SYMTAB;
  it->in_header = 0;
  it->name = it->value = NULL;
  it->name_len = it->value_len = 0;
  switch (type) {
  case MP_X_NODE:
    it->src = MP_SRC_STACK;
    if ((rc = get_uleb_in(r, &q, end, &it->parent, "node parent")) != MP_OK)
      return rc;
    if (q >= end) return fail(r, MP_ERR_DATA, q, "node frame kind");
    it->fkind = *q++;
    it->fa = it->line = 0;
    switch (it->fkind) {
    case MP_FK_LUA:
      if ((rc = get_uleb_in(r, &q, end, &it->fa, "prototype address")) !=
	  MP_OK ||
	  (rc = get_uleb_in(r, &q, end, &it->line, "line number")) != MP_OK)
	return rc;
      break;
    case MP_FK_BUILTIN: case MP_FK_C: case MP_FK_TRACE: case MP_FK_CUT:
    case MP_FK_NATIVE: case MP_FK_THREAD:
      if ((rc = get_uleb_in(r, &q, end, &it->fa, "frame address or number"))
	  != MP_OK)
	return rc;
      break;
    case MP_FK_HOST:
      break;
    default:
      snprintf(msg, sizeof(msg), "frame kind 1 to 6, 8 or 9, found %d",
	       it->fkind);
      return fail(r, MP_ERR_DATA, q - 1, msg);
    }
    if (it->parent > r->nodes) {
      snprintf(msg, sizeof(msg), "parent node 0 to %llu, found %llu",
	       (unsigned long long)r->nodes, (unsigned long long)it->parent);
      return fail(r, MP_ERR_DATA, at, msg);
    }
    it->id = ++r->nodes;
    break;
  case MP_X_BUILTIN:
    it->src = MP_SRC_BUILTIN;
    if ((rc = get_uleb_in(r, &q, end, &v, "builtin id")) != MP_OK ||
	(rc = get_string_in(r, &q, end, &it->name, &it->name_len,
			    "builtin name")) != MP_OK)
      return rc;
    it->id = v;
    break;
  case MP_X_INFO:
    it->src = MP_SRC_INFO;
    if ((rc = get_string_in(r, &q, end, &it->name, &it->name_len,
			    "setting name")) != MP_OK ||
	(rc = get_string_in(r, &q, end, &it->value, &it->value_len,
			    "setting value")) != MP_OK)
      return rc;
    break;
  case MP_X_TIME:
    it->src = MP_SRC_TIME;
    if ((rc = get_uleb_in(r, &q, end, &it->id, "time mark")) != MP_OK)
      return rc;
    break;
  case MP_X_RSS:
    it->src = MP_SRC_RSS;
    if ((rc = get_uleb_in(r, &q, end, &it->id, "resident set size")) !=
	MP_OK)
      return rc;
    break;
  case MP_X_MCODE:
    it->src = MP_SRC_MCODE;
    if ((rc = get_uleb_in(r, &q, end, &it->id, "machine code size")) !=
	MP_OK)
      return rc;
    break;
  case MP_X_DROP:
    it->src = MP_SRC_DROP;
    if ((rc = get_uleb_in(r, &q, end, &it->oaddr, "dropped address")) !=
	MP_OK)
      return rc;
    break;
  default:	/* A later record: skipped. */
    r->p = end;
    return NO_ITEM;
  }
  r->p = end;	/* Payload bytes past what this reader knows: skipped. */
  return MP_OK;
}

/* Say what is wrong with the allocation event at at (header h valid), which
** mp_event_decode() refused or which runs past the window: walk its
** numbers, in the order of the grammar, with bounds checks. Returns
** MP_ERR_DATA (an overlong number) or MP_ERR_TRUNC (the data ends). */
static int explain_event(mp_reader *r, const uint8_t *at, unsigned h)
{
  const char *name[6];
  const uint8_t *q = at + 1;
  unsigned src = h & MP_SRC_MASK, k = h & MP_AEV_MASK;
  int n = 0, i, rc;
  uint64_t v;
  if (src != MP_SRC_INTERNAL)
    name[n++] = src == MP_SRC_TRACE ? "trace number" :
		src == MP_SRC_STACK ? "node id" : "function address";
  if (src == MP_SRC_LFUNC) name[n++] = "line number";
  if (k & MP_AEV_FREE) { name[n++] = "old address"; name[n++] = "old size"; }
  if (k & MP_AEV_ALLOC) { name[n++] = "new address"; name[n++] = "new size"; }
  for (i = 0; i < n; i++)
    if ((rc = get_uleb_at(r, &q, &v, name[i])) != MP_OK) return rc;
  return fail(r, MP_ERR_DATA, at, "a decodable event");	/* Unreachable. */
}

/* Decode one item of the event stream. */
static int next_event(mp_reader *r, mp_item *it)
{
  const uint8_t *at = r->p, *q;
  size_t left = (size_t)(r->end - at);
  unsigned h;
  mp_event e;
  if (!left) return fail(r, MP_ERR_TRUNC, at, "event header or epilogue");
  h = *at;
  it->offset = r->origin + (size_t)(at - r->base);
  if (h == MP_FINAL) {
    r->p++;
    r->phase = MP_PH_DONE;
    return MP_END;
  }
  if (h >= 0x80 || !((r->headers | symbol_headers(r->ljm_version)) >>
		     (h & 0x1f) & 1) ||
      (h >= 0x20 && (!(r->headers & MP_HEADERS_FLAGS) ||
		     !(h & MP_AEV_MASK)))) {
    char msg[120];
    snprintf(msg, sizeof(msg), "event header valid in version %d, found 0x%02x",
	     r->ljm_version, h);
    return fail(r, MP_ERR_DATA, at, msg);
  }
  if (h == MP_XREC && r->ext) return get_xrec(r, it);
  if ((h & MP_AEV_MASK) == MP_AEV_SYMTAB) {
    int rc;
    r->p++;
    it->in_header = 0;
    rc = get_symbol(r, it, (int)(h & MP_SRC_MASK));
    if (rc == MP_OK && it->src == MP_SRC_CFUNC && is_gcstart(it))
      it->src = MP_SRC_GCSTART;
    else if (rc == MP_OK && it->src == MP_SRC_CFUNC &&
	     (it->id & MP_FNAME_TAG)) {	/* A function's name. */
      it->src = MP_SRC_FNAME;
      it->id &= ~MP_FNAME_TAG;
    }
    return rc;
  }
  if (left >= MP_EVENT_LONGEST) {
    q = mp_event_decode(at, &e, r->headers);
  } else {	/* The last bytes of the window, zero-padded. */
    uint8_t tail[MP_EVENT_LONGEST + 8];
    memset(tail, 0, sizeof(tail));
    memcpy(tail, at, left);
    q = mp_event_decode(tail, &e, r->headers);
    if (q && e.len > left) q = NULL;
  }
  if (!q) return explain_event(r, at, h);
  if (r->ext) mp_event_undelta(r, &e);
  r->p = at + e.len;
  it->kind = e.kind;
  it->src = e.src;
  it->id = e.id;
  it->line = e.line;
  it->oaddr = e.oaddr;
  it->osize = e.osize;
  it->naddr = e.naddr;
  it->nsize = e.nsize;
  return MP_OK;
}

size_t mp_reader_events(mp_reader *r, mp_event *ev, size_t n)
{
  const uint8_t *p = r->p, *lim, *q;
  uint32_t valid = r->headers;	/* Not reloaded after each store. */
  size_t i;
  if (r->phase != MP_PH_EVENTS || (size_t)(r->end - p) < MP_EVENT_LONGEST)
    return 0;
  lim = r->end - MP_EVENT_LONGEST;
  for (i = 0; i < n && p <= lim && (q = mp_event_decode(p, &ev[i], valid));
       i++) {
    if (r->ext) mp_event_undelta(r, &ev[i]);
    p = q;
  }
  r->p = p;
  return i;
}

/* One step of the grammar: an item (MP_OK), the end, an error, or NO_ITEM
** when a prologue or the symtab's end marker was read. */
static int step(mp_reader *r, mp_item *it)
{
  int rc;
  switch (r->phase) {
  case MP_PH_LJS:
    if ((rc = get_prologue(r, MP_LJS_MAGIC, &r->ljs_version)) != MP_OK)
      return rc;
    r->phase = MP_PH_SYMTAB;
    return NO_ITEM;
  case MP_PH_SYMTAB:
    return next_header_sym(r, it);
  case MP_PH_LJM:
    if ((rc = get_prologue(r, MP_LJM_MAGIC, &r->ljm_version)) != MP_OK)
      return rc;
    r->headers = mp_event_headers(r->ljm_version);
    r->phase = MP_PH_EVENTS;
    return NO_ITEM;
  case MP_PH_EVENTS:
    return next_event(r, it);
  }
  return MP_ERR_DATA;	/* Read on after the end or an error. */
}

int mp_reader_next(mp_reader *r, mp_item *it)
{
  for (;;) {
    const uint8_t *at = r->p;
    int phase = r->phase, rc = step(r, it);
    if (rc == NO_ITEM) continue;
    if (rc == MP_ERR_TRUNC && !r->eof) {	/* Wait for more bytes. */
      r->p = at;
      r->phase = phase;
      r->err[0] = '\0';
      r->err_offset = 0;
      return MP_MORE;
    }
    return rc;
  }
}

int mp_reader_note(mp_reader *r, mp_item *it)
{
  for (;;) {
    const uint8_t *at = r->p;
    int rc, ver;
    if (r->phase == MP_PH_DONE) {
      if (at >= r->end && r->eof) return MP_END;
      if (at >= r->end) return MP_MORE;
      if ((rc = get_prologue(r, MP_LJN_MAGIC, &ver)) != MP_OK) {
	if (rc != MP_ERR_TRUNC || r->eof) return rc;
	r->p = at;	/* The window ends in the trailer's prologue. */
	r->phase = MP_PH_DONE;
	return MP_MORE;
      }
      r->phase = MP_PH_TRAILER;
    }
    if (r->phase != MP_PH_TRAILER) return MP_ERR_DATA;
    if (r->p >= r->end) return r->eof ? MP_END : MP_MORE;
    if (*r->p != MP_XREC)
      return fail(r, MP_ERR_DATA, r->p, "a note (extended record) of the trailer");
    at = r->p;	/* Not the prologue's start: it was read (a window may end
		   inside the record after it). */
    rc = get_xrec(r, it);
    if (rc == MP_ERR_TRUNC && !r->eof) {
      r->p = at;
      r->phase = MP_PH_TRAILER;
      return MP_MORE;
    }
    if (rc == NO_ITEM) continue;
    return rc;
  }
}

const char *mp_kind_name(int kind)
{
  switch (kind) {
  case MP_AEV_ALLOC: return "alloc";
  case MP_AEV_FREE: return "free";
  case MP_AEV_REALLOC: return "realloc";
  case MP_AEV_SYMTAB: return "symbol";
  }
  return "?";
}

const char *mp_version_note(int ljm_version)
{
  return ljm_version == MP_VERSION_EXT ?
	 " ('L', the ljmemprof extension: call stacks)" : "";
}

const char *mp_src_name(int src)
{
  switch (src) {
  case MP_SRC_INTERNAL: return "internal";
  case MP_SRC_LFUNC: return "lua";
  case MP_SRC_CFUNC: return "cfunc";
  case MP_SRC_TRACE: return "trace";
  case MP_SRC_STACK: return "stack";
  }
  return "?";
}
