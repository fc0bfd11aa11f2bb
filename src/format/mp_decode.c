/*
** mp_decode.c: pull decoder for memprof streams, versions 1 to 3.
**
** One pass over bytes in memory; no allocation. Every read is bounds
** checked: running out of bytes is MP_ERR_TRUNC (the profiled process was
** cut short), bytes that cannot be a stream are MP_ERR_DATA. Both leave the
** offset and what was expected in the reader for one clear error line.
*/

#include <stdio.h>
#include <string.h>

#include "mp_format.h"

#define MP_STRING_MAX	((uint64_t)1 << 28)	/* Longer is not a name. */

/* Record an error of kind rc at offset off; returns rc. */
static int fail(mp_reader *r, int rc, const uint8_t *at, const char *what)
{
  r->err_offset = (size_t)(at - r->base);
  snprintf(r->err, sizeof(r->err), "%s", what);
  r->phase = 2;
  return rc;
}

/* Read one ULEB128 into *v; what names the field for errors. */
static inline int get_uleb(mp_reader *r, uint64_t *v, const char *what)
{
  const uint8_t *p = r->p;
  uint64_t x = 0;
  unsigned shift = 0;
  if (p < r->end && *p < 0x80) {	/* Most numbers are one byte. */
    *v = *p;
    r->p = p + 1;
    return MP_OK;
  }
  for (;;) {
    uint8_t b;
    if (p >= r->end) {
      char msg[120];
      snprintf(msg, sizeof(msg), "ULEB128 %s, found end of data", what);
      return fail(r, MP_ERR_TRUNC, r->p, msg);
    }
    b = *p++;
    if (shift == 63 && b > 1) {
      char msg[120];
      snprintf(msg, sizeof(msg), "ULEB128 %s, found an overlong number", what);
      return fail(r, MP_ERR_DATA, r->p, msg);
    }
    x |= (uint64_t)(b & 0x7f) << shift;
    if (b < 0x80) break;
    shift += 7;
  }
  *v = x;
  r->p = p;
  return MP_OK;
}

/* Read a length-prefixed string; the item points into the data. */
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
  for (i = 0; i < 3 && i < left; i++)
    if (r->p[i] != (uint8_t)magic[i]) {
      snprintf(msg, sizeof(msg), "magic \"%s\" of a memprof %s", magic,
	       magic[2] == 's' ? "symtab" : "event stream");
      return fail(r, MP_ERR_DATA, r->p, msg);
    }
  if (left < MP_PROLOGUE_SIZE) {
    snprintf(msg, sizeof(msg), "%s prologue (7 bytes), found end of data",
	     magic);
    return fail(r, MP_ERR_TRUNC, r->p + left, msg);
  }
  *ver = r->p[3];
  if (*ver < MP_VERSION_MIN || *ver > MP_VERSION_MAX) {
    snprintf(msg, sizeof(msg), "%s version %d to %d, found version %d",
	     magic, MP_VERSION_MIN, MP_VERSION_MAX, *ver);
    return fail(r, MP_ERR_DATA, r->p + 3, msg);
  }
  r->p += MP_PROLOGUE_SIZE;
  return MP_OK;
}

int mp_reader_init(mp_reader *r, const void *data, size_t len)
{
  memset(r, 0, sizeof(*r));
  r->base = r->p = (const uint8_t *)data;
  r->end = r->base + len;
  return get_prologue(r, MP_LJS_MAGIC, &r->ljs_version);
}

#define GET(v, what) \
  do { int rc_ = get_uleb(r, &(v), what); if (rc_ != MP_OK) return rc_; } while (0)

/* Decode the payload of a Lua function, C function or trace symbol. */
static int get_symbol(mp_reader *r, mp_item *it, mp_kind k)
{
  int rc;
  it->kind = k;
  switch (k) {
  case MP_K_SYM_LFUNC:
    GET(it->id, "prototype address");
    if ((rc = get_string(r, it, "chunk name")) != MP_OK) return rc;
    GET(it->line, "first line");
    break;
  case MP_K_SYM_CFUNC:
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

/* Decode one symbol of the symtab header, or its end marker. */
static int next_header_sym(mp_reader *r, mp_item *it)
{
  const uint8_t *at = r->p;
  uint8_t h;
  int t, v = r->ljs_version;
  if (at >= r->end)
    return fail(r, MP_ERR_TRUNC, at, "symtab entry or end marker");
  h = *r->p++;
  if (h & MP_FINAL) {
    int rc;
    r->phase = 1;
    if ((rc = get_prologue(r, MP_LJM_MAGIC, &r->ljm_version)) != MP_OK)
      return rc;
    return 0;	/* No item; caller loops on. */
  }
  t = h & MP_SYMTYPE_MASK;
  it->offset = (size_t)(at - r->base);
  it->in_header = 1;
  it->src = 0;
  if (t == MP_SYM_LFUNC) return get_symbol(r, it, MP_K_SYM_LFUNC);
  if (v == 2 && t == MP_SYM_TRACE_V2) return get_symbol(r, it, MP_K_SYM_TRACE);
  if (v >= 3 && t == MP_SYM_CFUNC_V3) return get_symbol(r, it, MP_K_SYM_CFUNC);
  if (v >= 3 && t == MP_SYM_TRACE_V3) return get_symbol(r, it, MP_K_SYM_TRACE);
  {
    char msg[120];
    snprintf(msg, sizeof(msg), "symtab entry header valid in version %d, "
	     "found 0x%02x", v, h);
    return fail(r, MP_ERR_DATA, at, msg);
  }
}

/* Decode one event of the event stream. */
static int next_event(mp_reader *r, mp_item *it)
{
  const uint8_t *at = r->p;
  uint8_t h;
  int ev, src, v = r->ljm_version;
  if (at >= r->end)
    return fail(r, MP_ERR_TRUNC, at, "event header or epilogue");
  h = *r->p++;
  it->offset = (size_t)(at - r->base);
  if (h == MP_FINAL) {
    r->phase = 2;
    return MP_END;
  }
  ev = h & MP_AEV_MASK;
  src = h & MP_SRC_MASK;
  if (h & 0xe0 || (src == MP_SRC_TRACE && v < 2) ||
      src > MP_SRC_TRACE || (ev == MP_AEV_SYMTAB && v < 2) || src == 0 ||
      (ev == MP_AEV_SYMTAB && (src == MP_SRC_INTERNAL ||
			       (src == MP_SRC_CFUNC && v < 3)))) {
    char msg[120];
    snprintf(msg, sizeof(msg), "event header valid in version %d, found 0x%02x",
	     v, h);
    return fail(r, MP_ERR_DATA, at, msg);
  }
  if (ev == MP_AEV_SYMTAB) {
    it->in_header = 0;
    it->src = 0;
    return get_symbol(r, it, src == MP_SRC_LFUNC ? MP_K_SYM_LFUNC :
		      src == MP_SRC_CFUNC ? MP_K_SYM_CFUNC : MP_K_SYM_TRACE);
  }
  it->src = (uint8_t)src;
  it->id = it->line = 0;
  if (src != MP_SRC_INTERNAL) {
    GET(it->id, src == MP_SRC_TRACE ? "trace number" : "function address");
    if (src == MP_SRC_LFUNC) GET(it->line, "line number");
  }
  it->oaddr = it->osize = it->naddr = it->nsize = 0;
  if (ev & MP_AEV_FREE) {
    GET(it->oaddr, "old address");
    GET(it->osize, "old size");
  }
  if (ev & MP_AEV_ALLOC) {
    GET(it->naddr, "new address");
    GET(it->nsize, "new size");
  }
  it->kind = ev == MP_AEV_ALLOC ? MP_K_ALLOC :
	     ev == MP_AEV_FREE ? MP_K_FREE : MP_K_REALLOC;
  return MP_OK;
}

/* -- Fast path ------------------------------------------------------------ */

/* Decode an allocation event when the longest one fits in what is left:
** no bounds checks. Returns MP_OK, or 0 to leave anything else (symbols,
** the epilogue, errors) to next_event(), which reports them. */
static inline int next_event_fast(mp_reader *r, mp_item *it)
{
  const uint8_t *p = r->p;
  unsigned h = *p++, ev = h & MP_AEV_MASK, src = h & MP_SRC_MASK;
  if (h >= 0x20 || !(mp_event_headers(r->ljm_version) >> h & 1))
    return 0;
  it->id = it->line = 0;
  if (src != MP_SRC_INTERNAL) {
    if (!mp_uleb_fast(&p, &it->id)) return 0;
    if (src == MP_SRC_LFUNC && !mp_uleb_fast(&p, &it->line)) return 0;
  }
  it->oaddr = it->osize = it->naddr = it->nsize = 0;
  if ((ev & MP_AEV_FREE) &&
      (!mp_uleb_fast(&p, &it->oaddr) || !mp_uleb_fast(&p, &it->osize)))
    return 0;
  if ((ev & MP_AEV_ALLOC) &&
      (!mp_uleb_fast(&p, &it->naddr) || !mp_uleb_fast(&p, &it->nsize)))
    return 0;
  it->src = (uint8_t)src;
  it->kind = (mp_kind)ev;	/* MP_K_ALLOC/FREE/REALLOC = MP_AEV_*. */
  it->offset = (size_t)(r->p - r->base);
  r->p = p;
  return MP_OK;
}

size_t mp_reader_events(mp_reader *r, mp_event *ev, size_t n)
{
  const uint8_t *p = r->p, *lim, *q;
  uint32_t valid;
  size_t i;
  if (r->phase != 1 || (size_t)(r->end - p) < MP_EVENT_LONGEST) return 0;
  lim = r->end - MP_EVENT_LONGEST;
  valid = mp_event_headers(r->ljm_version);
  for (i = 0; i < n && p <= lim && (q = mp_event_decode(p, &ev[i], valid));
       i++)
    p = q;
  r->p = p;
  return i;
}

int mp_reader_next(mp_reader *r, mp_item *it)
{
  for (;;) {
    int rc;
    if (r->phase == 1) {
      if ((size_t)(r->end - r->p) >= MP_EVENT_LONGEST &&
	  next_event_fast(r, it) == MP_OK)
	return MP_OK;
      return next_event(r, it);
    }
    if (r->phase != 0) return MP_ERR_DATA;
    rc = next_header_sym(r, it);
    if (rc != 0) return rc;
  }
}

int mp_reader_read(mp_reader *r, mp_item *it, size_t n, size_t *got)
{
  size_t i = 0;
  int rc = MP_OK;
  while (i < n) {
    if (r->phase == 1 && (size_t)(r->end - r->p) >= MP_EVENT_LONGEST &&
	next_event_fast(r, &it[i]) == MP_OK) {
      i++;
      continue;
    }
    if ((rc = mp_reader_next(r, &it[i])) != MP_OK) break;
    i++;
  }
  *got = i;
  return rc;
}

const char *mp_kind_name(mp_kind k)
{
  switch (k) {
  case MP_K_ALLOC: return "alloc";
  case MP_K_FREE: return "free";
  case MP_K_REALLOC: return "realloc";
  case MP_K_SYM_LFUNC: return "sym-lfunc";
  case MP_K_SYM_CFUNC: return "sym-cfunc";
  case MP_K_SYM_TRACE: return "sym-trace";
  }
  return "?";
}
