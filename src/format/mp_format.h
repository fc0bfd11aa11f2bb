/*
** mp_format.h: the one definition of the memprof byte stream.
**
** Included by the agent (writer) and by the reader; docs/FORMAT.md says the
** same in prose. The stream is the one Tarantool's LuaJIT memory profiler
** writes, so profiles flow both ways between the two tool sets.
**
**   stream      := symtab events
**   symtab      := 'l' 'j' 's' ljs-version <3 reserved bytes> sym* sym-final
**   sym         := sym-header payload          (payload by symbol type)
**   sym-final   := 0x80
**   events      := 'l' 'j' 'm' ljm-version <3 reserved bytes> event* epilogue
**   event       := ev-header loc? addresses    (alloc, free, realloc)
**                | ev-header sym-payload       (symbol met during the run)
**   epilogue    := 0x80
**
**   ev-header   : [F UU SSS EE]  EE = event kind, SSS = source, F = final
**   sym-header  : [F UUUUU TT]   TT = symbol type, F = final
**
**   loc-internal:= (nothing)
**   loc-lua     := proto-addr line            (ULEB128 each)
**   loc-c       := cfunc-addr
**   loc-trace   := trace-no
**   alloc       := loc naddr nsize
**   free        := loc oaddr osize
**   realloc     := loc oaddr osize naddr nsize
**
**   sym-lua     := proto-addr chunkname first-line
**   sym-cfunc   := cfunc-addr name
**   sym-trace   := trace-no proto-addr start-line
**   string      := ULEB128 length, then that many bytes
**
** Numbers are ULEB128 (7 bits per byte, low groups first, high bit = more),
** at most 10 bytes for a 64-bit value. Symbol type numbers differ between
** versions (MP_SYM_*; the decoder turns them into MP_SRC_*); event and
** source numbers do not.
*/

#ifndef MP_FORMAT_H
#define MP_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* -- Constants ------------------------------------------------------------ */

/* The ljmemprof extension (call stacks and what comes later). */
#include "mp_ext.h"

#define MP_LJS_MAGIC		"ljs"
#define MP_LJM_MAGIC		"ljm"
#define MP_PROLOGUE_SIZE	7	/* magic(3) + version(1) + reserved(3) */

#define MP_VERSION_MIN		1
#define MP_VERSION_MAX		3
#define MP_VERSION_WRITE	3	/* What the agent writes (both parts). */

/* Event kinds (bits 0-1 of ev-header). */
#define MP_AEV_SYMTAB		0	/* v2+: a symbol met during the run. */
#define MP_AEV_ALLOC		1
#define MP_AEV_FREE		2
#define MP_AEV_REALLOC		3
#define MP_AEV_MASK		0x03

/* Allocation sources (bits 2-4 of ev-header). */
#define MP_SRC_INTERNAL		(1 << 2)
#define MP_SRC_LFUNC		(2 << 2)
#define MP_SRC_CFUNC		(3 << 2)
#define MP_SRC_TRACE		(4 << 2)	/* v2+ */
#define MP_SRC_MASK		(7 << 2)

#define MP_FINAL		0x80	/* Epilogue and symtab end marker. */
#define MP_SYMTYPE_MASK		0x03

/* Symbol types in the symtab header, per version:
**   v1: 0 = Lua function
**   v2: 0 = Lua function, 1 = trace
**   v3: 0 = Lua function, 1 = C function, 2 = trace
*/
#define MP_SYM_LFUNC		0
#define MP_SYM_CFUNC_V3		1
#define MP_SYM_TRACE_V2		1
#define MP_SYM_TRACE_V3		2

#define MP_ULEB_MAX		10	/* Bytes of the longest 64-bit ULEB128. */
#define MP_STRING_MAX		((uint64_t)1 << 28)	/* Longer is not a name. */

/* The longest name (chunk name, C function name) the agent writes. Code
** loaded from a string has its whole source as chunk name, repeated in the
** symbol of every function it defines: a longer one is cut to its first
** bytes followed by " [... cut by ljmemprof: N bytes in all]", to
** MP_NAME_MAX bytes in all. Readers take longer names (other writers do
** not cut them). */
#define MP_NAME_MAX		4096
#define MP_NAME_CUT_HEAD	" [... cut by ljmemprof: "
#define MP_NAME_CUT_TAIL	" bytes in all]"
/* Room to keep free for one event: header + at most 6 numbers, plus 8
** bytes that mp_put_uleb_fast may store past the end of the last one. */
#define MP_EVENT_MAX		(1 + 6 * MP_ULEB_MAX + 8)

/* -- Encoding (used by the agent and by tests) --------------------------- */

/* Append v as ULEB128 at p; return the byte after it. p needs 10 bytes. */
static inline uint8_t *mp_put_uleb(uint8_t *p, uint64_t v)
{
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* Same bytes as mp_put_uleb, without a loop for values below 2^56 (every
** user-space address): spread the 7-bit groups over 8 bytes with shifts,
** set the continuation bits of all but the last byte, store 8 bytes at once
** and advance by the length. p needs 10 writable bytes. */
static inline uint8_t *mp_put_uleb_fast(uint8_t *p, uint64_t v)
{
  uint64_t x;
  unsigned n;
  if (v < 0x80) { *p = (uint8_t)v; return p + 1; }
  if (v >> 56) return mp_put_uleb(p, v);
  x = (v & 0x7full) | ((v << 1) & 0x7f00ull) | ((v << 2) & 0x7f0000ull) |
      ((v << 3) & 0x7f000000ull) | ((v << 4) & 0x7f00000000ull) |
      ((v << 5) & 0x7f0000000000ull) | ((v << 6) & 0x7f000000000000ull) |
      ((v << 7) & 0x7f00000000000000ull);
  n = (unsigned)(63 - __builtin_clzll(v)) / 7 + 1;	/* 2..8 bytes. */
  x |= 0x8080808080808080ull & ((1ull << (8 * (n - 1))) - 1);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  __builtin_memcpy(p, &x, 8);
#else
  { unsigned i; for (i = 0; i < 8; i++) p[i] = (uint8_t)(x >> (8 * i)); }
#endif
  return p + n;
}

/* mp_put_uleb_fast for values that are often two bytes long, which are
** written directly: the stacks mode's sizes (128 bytes to 16 KiB) and
** distances from the address written last (40 % of tables' new
** addresses). The one-frame hook keeps mp_put_uleb_fast: the branch cost
** it 2 % of its instructions on tables. */
static inline uint8_t *mp_put_uleb_near(uint8_t *p, uint64_t v)
{
  if (v < 0x80) { *p = (uint8_t)v; return p + 1; }
  if (v < 0x4000) {
    p[0] = (uint8_t)(v | 0x80);
    p[1] = (uint8_t)(v >> 7);
    return p + 2;
  }
  return mp_put_uleb_fast(p, v);
}

/* Append a prologue (magic "ljs"/"ljm", version, 3 zero bytes). */
static inline uint8_t *mp_put_prologue(uint8_t *p, const char *magic, int ver)
{
  p[0] = (uint8_t)magic[0]; p[1] = (uint8_t)magic[1]; p[2] = (uint8_t)magic[2];
  p[3] = (uint8_t)ver; p[4] = p[5] = p[6] = 0;
  return p + MP_PROLOGUE_SIZE;
}

/* -- Extended records (MP_XREC, see mp_ext.h): their framing, which
** mp_decode.c's get_xrec() reads. --------------------------------------- */

/* Append an extended record of type whose payload is the n bytes at body;
** the byte after it. */
static inline uint8_t *mp_put_xrec(uint8_t *p, int type, const void *body,
				   size_t n)
{
  *p++ = MP_XREC;
  *p++ = (uint8_t)type;
  p = mp_put_uleb(p, n);
  memcpy(p, body, n);
  return p + n;
}

/* Append an extended record of type whose payload is the ULEB128 v (one
** length byte: at most 10). */
static inline uint8_t *mp_put_xuleb(uint8_t *p, int type, uint64_t v)
{
  uint8_t *q = mp_put_uleb(p + 3, v);
  p[0] = MP_XREC;
  p[1] = (uint8_t)type;
  p[2] = (uint8_t)(q - p - 3);
  return q;
}

/* Append an MP_X_INFO record key = value (strings of fewer than 128
** bytes); the byte after it. */
static inline uint8_t *mp_put_info(uint8_t *p, const char *key,
				   const char *value)
{
  size_t nk = strlen(key), nv = strlen(value);
  *p++ = MP_XREC;
  *p++ = MP_X_INFO;
  p = mp_put_uleb(p, 2 + nk + nv);
  *p++ = (uint8_t)nk;
  memcpy(p, key, nk);
  p += nk;
  *p++ = (uint8_t)nv;
  memcpy(p, value, nv);
  return p + nv;
}

/* Sources and symbol kinds as array indexes: src >> MP_SRC_SHIFT is 1
** (internal) to 4 (trace). A symbol is described by the source whose
** events it names: MP_SRC_LFUNC, MP_SRC_CFUNC or MP_SRC_TRACE, as in the
** header of a symbol inside the event stream. */
#define MP_SRC_SHIFT		2
#define MP_SRC_N		5
/* Event kinds as array indexes: MP_AEV_ALLOC, MP_AEV_FREE, MP_AEV_REALLOC
** (MP_AEV_SYMTAB, 0, is a symbol, not an event). */
#define MP_AEV_N		4

/* -- Decoding ------------------------------------------------------------- */

/* One decoded item: an allocation event (kind MP_AEV_ALLOC, _FREE or
** _REALLOC) or a symbol (kind MP_AEV_SYMTAB). */
typedef struct mp_item {
  uint8_t kind;		/* MP_AEV_*. */
  uint8_t src;		/* MP_SRC_*: the event's source, or what the symbol
			   describes (MP_SRC_LFUNC, _CFUNC or _TRACE). */
  uint8_t in_header;	/* Symbol: 1 if it came from the symtab header. */
  uint64_t id;		/* Location: proto/cfunc address or trace number;
			   symbol: its address (or trace number). */
  uint64_t line;	/* Location line (Lua) or symbol line. */
  uint64_t proto;	/* Trace symbol: its starting prototype's address. */
  uint64_t oaddr, osize, naddr, nsize;	/* Event addresses and sizes. */
  const char *name;	/* Symbol name or chunk name (not NUL-terminated;
			   points into the reader's window); builtin name;
			   setting's key. */
  size_t name_len;
  const char *value;	/* Setting (MP_SRC_INFO): its value. */
  size_t value_len;
  /* A stack node (MP_SRC_STACK): id is its id, line the frame's line,
  ** fa its address, number or builtin id, parent its parent's id. */
  uint64_t parent, fa;
  uint8_t fkind;	/* MP_FK_*. */
  size_t offset;	/* Stream offset of the item's first byte. */
} mp_item;

/* Results of the decoder. */
enum {
  MP_MORE = 2,		/* Not an error: the window ends inside an item and
			   the stream goes on (see mp_reader_window()). */
  MP_OK = 1,		/* An item was decoded. */
  MP_END = 0,		/* The epilogue was read: the stream is complete. */
  MP_ERR_DATA = -1,	/* Malformed data (see reader.err, err_offset). */
  MP_ERR_TRUNC = -2	/* The data ends before the epilogue. */
};

/* Where the decoder is in the grammar. */
enum {
  MP_PH_LJS,		/* Before the symtab prologue. */
  MP_PH_SYMTAB,		/* In the symtab header. */
  MP_PH_LJM,		/* Before the event stream prologue. */
  MP_PH_EVENTS,		/* In the event stream. */
  MP_PH_DONE,		/* After the epilogue or an error. */
  MP_PH_TRAILER		/* In the trailer of notes. */
};

/* Pull decoder over a window of the stream: the whole stream in memory
** (an mmap'd file) or the part of it that an input has read so far. It
** never allocates. Offsets in items and errors count from the start of
** the stream, whatever window they were decoded from. */
typedef struct mp_reader {
  const uint8_t *base, *p, *end;	/* The window; p: next byte. */
  size_t origin;	/* Stream offset of base. */
  int eof;		/* 1 if the stream ends at end. */
  int ljs_version, ljm_version;
  int ext;		/* 1 for the ljmemprof extension (mp_ext.h). */
  int phase;		/* MP_PH_*. */
  uint32_t headers;	/* Event headers valid in this version (bit set). */
  uint64_t new_addr;	/* Extension: the last new address... */
  uint64_t old_addr;	/* ...and old address (addresses are deltas). */
  uint64_t nodes;	/* Extension: node records read (the last id). */
  uint64_t last_node;	/* Extension: the node of the last stack event. */
  size_t err_offset;	/* Where the error or the truncation was seen. */
  char err[160];	/* What was expected there. */
} mp_reader;

/* Get ready to read a stream from its first byte; no window yet. */
void mp_reader_start(mp_reader *r);

/* Decode from len bytes at data, which hold the stream from offset
** origin on (the unread bytes of the previous window, then what follows);
** eof says whether the stream ends with them. Until eof, running out of
** bytes in the middle of an item returns MP_MORE with nothing consumed. */
void mp_reader_window(mp_reader *r, const void *data, size_t len,
		      size_t origin, int eof);

/* Start reading a stream held whole in memory: len bytes at data. Returns
** MP_OK, or the MP_ERR_* code of its first bytes (not a profile). */
int mp_reader_init(mp_reader *r, const void *data, size_t len);

/* Whether the stream is a profile at all: its symtab prologue was read
** (magic and a known version). A stream that is not is never reported. */
static inline int mp_reader_is_profile(const mp_reader *r)
{
  return r->ljs_version >= MP_VERSION_MIN && r->ljs_version <= MP_VERSION_MAX;
}

/* Stream offset of the next byte to decode. */
static inline size_t mp_reader_offset(const mp_reader *r)
{
  return r->origin + (size_t)(r->p - r->base);
}

/* Decode the next item into *it. Returns MP_OK, MP_END, MP_MORE or
** MP_ERR_*. */
int mp_reader_next(mp_reader *r, mp_item *it);

/* After MP_END: decode the next note of the trailer that may follow a
** version-3 epilogue (mp_ext.h) into *it (an MP_SRC_INFO item). Returns
** MP_OK, MP_END when the data ends (with or without a trailer), MP_MORE,
** or MP_ERR_DATA for bytes after the epilogue that are not a trailer. */
int mp_reader_note(mp_reader *r, mp_item *it);

/* An allocation event as mp_event_decode() makes it: the fields of
** mp_item that events have, in a record half its size. */
typedef struct mp_event {
  uint64_t id, line;	/* Location, as in mp_item. */
  uint64_t oaddr, osize, naddr, nsize;	/* 0 where the kind has none. */
  uint32_t len;		/* Bytes of the event in the stream. */
  uint8_t kind;		/* MP_AEV_ALLOC, MP_AEV_FREE or MP_AEV_REALLOC. */
  uint8_t src;		/* MP_SRC_*. */
  uint8_t flags;	/* Extension: MP_EV_OLD8, MP_EV_NEW8. */
} mp_event;

/* -- The event decoder ---------------------------------------------------- */

/* The one decoder of allocation events: no bounds checks, for the bulk of
** a stream. mp_reader_events() and the profile pass run it in place over
** the window while MP_EVENT_LONGEST bytes are left; mp_reader_next() runs
** it over a zero-padded copy of the last bytes. Whatever it refuses (not
** an allocation event of this version, an overlong number) is left to
** mp_reader_next() to decode or to report. */

/* Longest allocation event: header and six 10-byte numbers. */
#define MP_EVENT_LONGEST	(1 + 6 * MP_ULEB_MAX)

/* Read a ULEB128 at *pp without a bounds check (8 bytes can be loaded at
** any number of an event) and advance *pp; 0 if overlong. Numbers of 2 to
** 8 bytes (addresses are 6 or 7) are decoded from one 64-bit load without
** a loop: find the first byte below 0x80, drop the bytes after it and the
** continuation bits, and close the 1-bit gaps between the 7-bit groups in
** three steps (the first as a subtraction: b1 * 256 + b0 - b1 * 128). */
static inline int mp_uleb_fast(const uint8_t **pp, uint64_t *v)
{
  const uint8_t *p = *pp;
  uint64_t x = *p, b;
  unsigned shift = 7;
  if (x < 0x80) {
    *v = x;
    *pp = p + 1;
    return 1;
  }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  {
    uint64_t w, stop;
    __builtin_memcpy(&w, p, 8);
    stop = ~w & 0x8080808080808080ull;	/* High bit clear: last byte. */
    if (stop) {
      /* stop ^ (stop - 1): the bits up to the first stop bit. */
      x = w & (stop ^ (stop - 1)) & 0x7f7f7f7f7f7f7f7full;
      x -= (x >> 1) & 0x3f803f803f803f80ull;
      x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
      x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
      *v = x;
      *pp = p + (__builtin_ctzll(stop) >> 3) + 1;
      return 1;
    }
  }
#endif
  x &= 0x7f;	/* 9 or 10 bytes (or a big-endian host): one at a time. */
  p++;
  do {
    b = *p++;
    if (shift == 63 && b > 1) return 0;
    x |= (b & 0x7f) << shift;
    shift += 7;
  } while (b >= 0x80);
  *v = x;
  *pp = p;
  return 1;
}

/* Headers of the allocation events of version v, as a set of bits over
** 0..31: kinds 1 to 3 (bits 0-1) from sources 1 to 3, and 4 (traces) from
** version 2 on. Source numbers 5 to 7 are in no version of memprof; the
** extension has 5 (stacks). */
static inline uint32_t mp_event_headers(int v)
{
  if (v == MP_VERSION_EXT) return MP_EXT_HEADERS;
  return 0xeee0u | (v >= 2 ? 0xe0000u : 0);
}

/* Decode the allocation event at p into *e if its header is in the set
** valid (mp_event_headers()); the byte after it, or NULL (not an
** allocation event of this version, or an overlong number). */
static inline const uint8_t *mp_event_decode(const uint8_t *p, mp_event *e,
					     uint32_t valid)
{
  const uint8_t *q = p + 1;
  unsigned h = *p, k = h & MP_AEV_MASK, src = h & MP_SRC_MASK;
  if (h >= 0x80 || !(valid >> (h & 0x1f) & 1) ||
      (h >= 0x20 && !(valid & MP_HEADERS_FLAGS)))
    return NULL;
  e->id = e->line = 0;
  if (src != MP_SRC_INTERNAL) {
    if (!mp_uleb_fast(&q, &e->id)) return NULL;
    if (src == MP_SRC_LFUNC && !mp_uleb_fast(&q, &e->line)) return NULL;
  }
  e->oaddr = e->osize = e->naddr = e->nsize = 0;
  if ((k & MP_AEV_FREE) &&
      (!mp_uleb_fast(&q, &e->oaddr) || !mp_uleb_fast(&q, &e->osize)))
    return NULL;
  if ((k & MP_AEV_ALLOC) &&
      (!mp_uleb_fast(&q, &e->naddr) || !mp_uleb_fast(&q, &e->nsize)))
    return NULL;
  e->len = (uint32_t)(q - p);
  e->kind = (uint8_t)k;
  e->src = (uint8_t)src;
  e->flags = (uint8_t)(h & (MP_EV_OLD8 | MP_EV_NEW8));
  return q;
}

/* Events of the extension carry their addresses as differences
** (mp_ext.h): make them addresses, in stream order, with the reader's
** registers. Every decoder of events calls it after mp_event_decode(). */
static inline void mp_event_undelta(mp_reader *r, mp_event *e)
{
  if (e->src == MP_SRC_STACK)
    e->id = r->last_node += (uint64_t)mp_unzigzag(e->id);
  if (e->kind & MP_AEV_FREE)
    e->oaddr = r->old_addr += (uint64_t)mp_unzigzag(e->oaddr)
			      << (e->flags & MP_EV_OLD8 ? 3 : 0);
  if (e->kind & MP_AEV_ALLOC)
    e->naddr = r->new_addr += (uint64_t)mp_unzigzag(e->naddr)
			      << (e->flags & MP_EV_NEW8 ? 3 : 0);
}

/* Decode up to n allocation events into ev[0..n) and return how many; the
** first is at r->p before the call. Stops early, without an error, at
** anything else: a symbol, the epilogue, bytes that are not an event, or
** fewer bytes left than the longest event has. A return of 0 means: read
** the next item with mp_reader_next(), which decodes or reports it. */
size_t mp_reader_events(mp_reader *r, mp_event *ev, size_t n);

/* Names for messages and output: "alloc", "free", "realloc" (MP_AEV_*;
** "symbol" for MP_AEV_SYMTAB), and "internal", "lua", "cfunc", "trace"
** (MP_SRC_*). */
const char *mp_kind_name(int kind);
const char *mp_src_name(int src);

/* What an events version is, after its number where a report shows it:
** " ('L', the ljmemprof extension: call stacks)" for MP_VERSION_EXT (a
** letter, meaningless as a number), else "". */
const char *mp_version_note(int ljm_version);

#endif
