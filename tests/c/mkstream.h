/*
** mkstream.h: build profiles byte by byte for the reader's tests, in the
** words of docs/FORMAT.md: memprof version 3 streams with their trailer of
** notes, and streams of the ljmemprof extension (nodes, settings, time
** marks, events whose addresses are differences).
**
**   ms s; ms_v3(&s);                      ms_ext(&s);
**   ms_sym_lua(&s, proto, "@a.lua", 1);   ms_info(&s, "sample", "4096");
**   ms_alloc(&s, MP_SRC_LFUNC, proto, 3, addr, size);
**   ms_end(&s);  ...  ms_free_buf(&s);
**
** The buffer grows as needed; the builder keeps the registers that the
** extension's differences are taken against.
*/

#ifndef MKSTREAM_H
#define MKSTREAM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/mp_format.h"

typedef struct ms {
  uint8_t *b;
  size_t n, cap;
  int ext;		/* An extension stream. */
  uint64_t naddr, oaddr, node;	/* Its registers. */
} ms;

/* Room for n more bytes (abort if memory runs out: a test). */
static inline uint8_t *ms_room(ms *s, size_t n)
{
  if (s->n + n > s->cap) {
    s->cap = (s->n + n) * 2 + 64;
    if (!(s->b = realloc(s->b, s->cap))) abort();
  }
  return s->b + s->n;
}

static inline void ms_u8(ms *s, unsigned v)
{
  *ms_room(s, 1) = (uint8_t)v;
  s->n++;
}

static inline void ms_uleb(ms *s, uint64_t v)
{
  uint8_t *p = ms_room(s, MP_ULEB_MAX);
  s->n = (size_t)(mp_put_uleb(p, v) - s->b);
}

static inline void ms_bytes(ms *s, const void *p, size_t n)
{
  memcpy(ms_room(s, n), p, n);
  s->n += n;
}

static inline void ms_str(ms *s, const char *str)
{
  ms_uleb(s, strlen(str));
  ms_bytes(s, str, strlen(str));
}

static inline void ms_prologue(ms *s, const char *magic, int ver, int minor)
{
  uint8_t *p = ms_room(s, MP_PROLOGUE_SIZE);
  mp_put_prologue(p, magic, ver);
  p[4] = (uint8_t)minor;
  s->n += MP_PROLOGUE_SIZE;
}

/* A version-3 stream: empty symtab, events prologue. */
static inline void ms_v3(ms *s)
{
  memset(s, 0, sizeof(*s));
  ms_prologue(s, MP_LJS_MAGIC, 3, 0);
  ms_u8(s, MP_FINAL);
  ms_prologue(s, MP_LJM_MAGIC, 3, 0);
}

/* An extension stream. */
static inline void ms_ext(ms *s)
{
  memset(s, 0, sizeof(*s));
  ms_prologue(s, MP_LJS_MAGIC, 3, 0);
  ms_u8(s, MP_FINAL);
  ms_prologue(s, MP_LJM_MAGIC, MP_VERSION_EXT, MP_EXT_MINOR);
  s->ext = 1;
}

static inline void ms_sym_lua(ms *s, uint64_t proto, const char *chunk,
			      uint64_t line)
{
  ms_u8(s, MP_AEV_SYMTAB | MP_SRC_LFUNC);
  ms_uleb(s, proto);
  ms_str(s, chunk);
  ms_uleb(s, line);
}

static inline void ms_sym_c(ms *s, uint64_t addr, const char *name)
{
  ms_u8(s, MP_AEV_SYMTAB | MP_SRC_CFUNC);
  ms_uleb(s, addr);
  ms_str(s, name);
}

/* An extended record of type t with a payload of n bytes. */
static inline void ms_xrec(ms *s, unsigned t, const void *payload, size_t n)
{
  ms_u8(s, MP_XREC);
  ms_uleb(s, t);
  ms_uleb(s, n);
  ms_bytes(s, payload, n);
}

/* A setting or note (MP_X_INFO). */
static inline void ms_info(ms *s, const char *key, const char *value)
{
  ms p;
  memset(&p, 0, sizeof(p));
  ms_str(&p, key);
  ms_str(&p, value);
  ms_xrec(s, MP_X_INFO, p.b, p.n);
  free(p.b);
}

/* A time mark. */
static inline void ms_time(ms *s, uint64_t ns)
{
  uint8_t p[MP_ULEB_MAX];
  ms_xrec(s, MP_X_TIME, p, (size_t)(mp_put_uleb(p, ns) - p));
}

/* The process's RSS, bytes (MP_X_RSS, native profiles). */
static inline void ms_rss(ms *s, uint64_t bytes)
{
  uint8_t p[MP_ULEB_MAX];
  ms_xrec(s, MP_X_RSS, p, (size_t)(mp_put_uleb(p, bytes) - p));
}

/* A stack node: a Lua frame (proto, line) under parent. */
static inline void ms_node_lua(ms *s, uint64_t parent, uint64_t proto,
			       uint64_t line)
{
  uint8_t p[3 * MP_ULEB_MAX + 1], *q = p;
  q = mp_put_uleb(q, parent);
  *q++ = MP_FK_LUA;
  q = mp_put_uleb(q, proto);
  q = mp_put_uleb(q, line);
  ms_xrec(s, MP_X_NODE, p, (size_t)(q - p));
}

/* The location of an event of source src. */
static inline void ms_loc(ms *s, unsigned src, uint64_t id, uint64_t line)
{
  if (src == MP_SRC_INTERNAL) return;
  if (src == MP_SRC_STACK) {
    ms_uleb(s, mp_zigzag((int64_t)(id - s->node)));
    s->node = id;
    return;
  }
  ms_uleb(s, id);
  if (src == MP_SRC_LFUNC) ms_uleb(s, line);
}

/* An address of a role (old or new), as a difference in an extension
** stream. */
static inline void ms_addr(ms *s, uint64_t *reg, uint64_t a)
{
  if (s->ext) {
    ms_uleb(s, mp_zigzag((int64_t)(a - *reg)));
    *reg = a;
  } else {
    ms_uleb(s, a);
  }
}

static inline void ms_alloc(ms *s, unsigned src, uint64_t id, uint64_t line,
			    uint64_t addr, uint64_t size)
{
  ms_u8(s, MP_AEV_ALLOC | src);
  ms_loc(s, src, id, line);
  ms_addr(s, &s->naddr, addr);
  ms_uleb(s, size);
}

static inline void ms_free(ms *s, unsigned src, uint64_t id, uint64_t line,
			   uint64_t addr, uint64_t size)
{
  ms_u8(s, MP_AEV_FREE | src);
  ms_loc(s, src, id, line);
  ms_addr(s, &s->oaddr, addr);
  ms_uleb(s, size);
}

static inline void ms_realloc(ms *s, unsigned src, uint64_t id, uint64_t line,
			      uint64_t oaddr, uint64_t osize, uint64_t naddr,
			      uint64_t nsize)
{
  ms_u8(s, MP_AEV_REALLOC | src);
  ms_loc(s, src, id, line);
  ms_addr(s, &s->oaddr, oaddr);
  ms_uleb(s, osize);
  ms_addr(s, &s->naddr, naddr);
  ms_uleb(s, nsize);
}

/* The epilogue. */
static inline void ms_end(ms *s)
{
  ms_u8(s, MP_FINAL);
}

/* After a version-3 epilogue: the trailer's prologue. */
static inline void ms_trailer(ms *s)
{
  ms_prologue(s, MP_LJN_MAGIC, MP_LJN_VERSION, 0);
}

static inline void ms_free_buf(ms *s)
{
  free(s->b);
  memset(s, 0, sizeof(*s));
}

#endif
