/*
** mp_snapdec.c: decoder of heap snapshot files (grammar in mp_snap.h).
**
** Every read is bounded by the end of the data, every number by what it
** may be (an object that exists, a kind that is defined, a name that fits):
** a damaged or hostile file gets one message naming the byte offset where
** it went wrong, never a crash or a loop.
*/

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/mp_format.h"
#include "format/mp_snap.h"
#include "util/mp_array.h"

typedef struct dec {
  const uint8_t *p, *start, *end;
  mp_snapshot *sn;
  uint32_t cap, ecap;
  uint32_t next;	/* Number of the next new object. */
  unsigned version;	/* The file's (1 has no parts). */
  char *err;
  size_t errsize;
  int nomem;		/* The failure is out of memory, not the file. */
} dec;

static int fail(dec *d, const char *fmt, ...)
{
  va_list ap;
  int n = snprintf(d->err, d->errsize, "byte %zu: ",
		   (size_t)(d->p - d->start));
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < d->errsize)
    vsnprintf(d->err + n, d->errsize - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* Out of memory for what: fail, and say it is not the file's fault. */
static int nomem(dec *d, const char *what)
{
  d->nomem = 1;
  return fail(d, "out of memory for %s", what);
}

static int get_u(dec *d, uint64_t *v, const char *what)
{
  uint64_t x = 0;
  int sh = 0;
  const uint8_t *p = d->p;
  for (;;) {
    if (p >= d->end) return fail(d, "the file ends inside %s", what);
    if (sh == 63 && *p > 1) return fail(d, "%s is too large", what);
    x |= (uint64_t)(*p & 0x7f) << sh;
    if (!(*p++ & 0x80)) break;
    if ((sh += 7) > 63) return fail(d, "%s is too large", what);
  }
  d->p = p;
  *v = x;
  return 0;
}

static int get_b(dec *d, unsigned *b, const char *what)
{
  if (d->p >= d->end) return fail(d, "the file ends before %s", what);
  *b = *d->p++;
  return 0;
}

/* A name's bytes into sn->names; *off gets its offset. */
static int get_name(dec *d, uint32_t *off, const char *what)
{
  mp_snapshot *sn = d->sn;
  uint64_t len;
  if (get_u(d, &len, what)) return -1;
  if (len > MP_SNAP_NAME_MAX)
    return fail(d, "%s of %llu bytes (at most %d)", what,
		(unsigned long long)len, MP_SNAP_NAME_MAX);
  if ((uint64_t)(d->end - d->p) < len)
    return fail(d, "the file ends inside %s", what);
  if (sn->nnames + len + 1 > sn->capnames) {
    size_t cap = sn->capnames ? sn->capnames * 2 : 4096;
    char *n;
    while (cap < sn->nnames + len + 1) cap *= 2;
    if (cap > UINT32_MAX || !(n = realloc(sn->names, cap)))
      return nomem(d, "names");
    sn->names = n;
    sn->capnames = cap;
  }
  memcpy(sn->names + sn->nnames, d->p, len);
  sn->names[sn->nnames + len] = 0;
  *off = (uint32_t)sn->nnames;
  sn->nnames += len + 1;
  d->p += len;
  return 0;
}

/* A target code: the object's number into *to (MP_SNAP_NONE if allowed
** and given). */
static int get_target(dec *d, uint32_t *to, int none_ok)
{
  uint64_t v;
  if (get_u(d, &v, "a target")) return -1;
  if (v == 0) {
    if (!none_ok) return fail(d, "a reference to no object");
    *to = MP_SNAP_NONE;
  } else if (v == 1) {
    if (d->next == MP_SNAP_NONE) return fail(d, "too many objects");
    *to = d->next++;
  } else {
    if (v - 1 > d->next)
      return fail(d, "a reference to object -%llu, before the first",
		  (unsigned long long)(v - 1 - d->next));
    *to = d->next - (uint32_t)(v - 1);
  }
  return 0;
}

static int add_edge(dec *d, uint32_t to, unsigned kind, int weak,
		    uint64_t arg)
{
  mp_snapshot *sn = d->sn;
  mp_snap_edge *e;
  if (mp_array_grow((void **)&sn->e, sn->ne, &d->ecap, sizeof(*sn->e)))
    return nomem(d, "edges");
  e = &sn->e[sn->ne++];
  e->to = to;
  e->kind = (uint8_t)kind;
  e->weak = (uint8_t)weak;
  e->wide = arg > UINT32_MAX;
  if (e->wide) {
    if (mp_array_grow((void **)&sn->wide, sn->nwide, &sn->capwide,
		      sizeof(*sn->wide))) {
      sn->ne--;
      return fail(d, "out of memory for edges");
    }
    e->a = sn->nwide;
    sn->wide[sn->nwide++] = arg;
  } else {
    e->a = (uint32_t)arg;
  }
  return 0;
}

/* Room for object number sn->n. */
static int add_obj(dec *d)
{
  mp_snapshot *sn = d->sn;
  uint32_t cap = d->cap;
  if (sn->n + 1 < cap) return 0;
  cap = cap ? cap * 2 : 1024;
  if (cap <= d->cap) return fail(d, "too many objects");
#define GROW(f) do { void *q_ = realloc(sn->f, (size_t)cap * sizeof(*sn->f)); \
		     if (!q_) return nomem(d, "objects"); \
		     sn->f = q_; } while (0)
  GROW(addr); GROW(size); GROW(type); GROW(first); GROW(name);
#undef GROW
  d->cap = cap;
  return 0;
}

static int uv_push(dec *d, uint32_t v)
{
  mp_snapshot *sn = d->sn;
  if (mp_array_grow((void **)&sn->uvnames, sn->nuv, &sn->capuv,
		    sizeof(*sn->uvnames)))
    return nomem(d, "names");
  sn->uvnames[sn->nuv++] = v;
  return 0;
}

/* Set the name of string object id (first time only). */
static int name_string(dec *d, uint32_t id, uint32_t off)
{
  mp_snapshot *sn = d->sn;
  if (id < sn->n && sn->type[id] != MP_HT_STR)
    return fail(d, "a name for object %u, which is no string", id);
  /* A string not written yet gets its name when it is (see obj()). */
  if (id < sn->n) sn->name[id] = off + 1;
  else if (add_edge(d, id, MP_HE__MAX + 1, 0, off)) return -1;
  return 0;
}

/* A part of object self (kind byte b read): a block of its own apart from
** it, at its address + a zigzag delta. Tables have at most two (the
** array and the hash part), threads and userdata one (a stack, a
** buffer's bytes). */
static int part(dec *d, uint32_t self, unsigned b)
{
  mp_snapshot *sn = d->sn;
  uint64_t delta;
  unsigned t = sn->type[self], have = 0, max;
  max = t == MP_HT_TAB ? 2 : t == MP_HT_THREAD || t == MP_HT_UDATA ? 1 : 0;
  if (b != MP_HE_PART) return fail(d, "flags on a part");
  while (have < sn->npart && sn->part[sn->npart - 1 - have].obj == self)
    have++;
  if (!max)
    return fail(d, "a part of an object of type %u (only tables, threads "
		"and userdata have parts)", t);
  if (have >= max) return fail(d, "more than %u parts of one object", max);
  if (get_u(d, &delta, "a part's address")) return -1;
  if (mp_array_grow((void **)&sn->part, sn->npart, &sn->cappart,
		    sizeof(*sn->part)))
    return nomem(d, "parts");
  sn->part[sn->npart].addr = sn->addr[self] + (uint64_t)mp_unzigzag(delta);
  sn->part[sn->npart++].obj = self;
  return 0;
}

static int edges(dec *d, uint32_t self)
{
  for (;;) {
    unsigned b = 0, kind;
    uint64_t arg = 0;
    uint32_t to, key, off;
    int wk, wv, named;
    if (get_b(d, &b, "an edge")) return -1;
    if (b == MP_HE_END) return 0;
    kind = b & MP_HE_KIND;
    wk = (b & MP_HE_WEAKK) != 0;
    wv = (b & MP_HE_WEAKV) != 0;
    named = (b & MP_HE_NAMED) != 0;
    if (kind == MP_HE_END || kind >= MP_HE__MAX ||
	(kind == MP_HE_PART && d->version < 2))
      return fail(d, "unknown edge kind %u", kind);
    if (kind == MP_HE_PART) {
      if (part(d, self, b)) return -1;
      continue;
    }
    if (self == 0 && kind != MP_HE_SPECIAL)
      return fail(d, "a reference from the root that is not a root");
    if (named && kind != MP_HE_FIELD && kind != MP_HE_SPECIAL &&
	kind != MP_HE_LOCAL)
      return fail(d, "a name on an edge of kind %u", kind);
    if (wk && kind != MP_HE_FIELD && kind != MP_HE_KEY)
      return fail(d, "a weak key on an edge of kind %u", kind);
    switch (kind) {
    case MP_HE_FIELD: case MP_HE_KEY:
      if (get_target(d, &key, 0)) return -1;
      if (named) {
	if (kind != MP_HE_FIELD) return fail(d, "a name on a key");
	if (get_name(d, &off, "a key's name") || name_string(d, key, off))
	  return -1;
      }
      if (get_target(d, &to, 1)) return -1;
      if (to != MP_SNAP_NONE && add_edge(d, to, kind, wv, key)) return -1;
      if (add_edge(d, key, MP_HE_KEYREF, wk, to)) return -1;
      continue;
    case MP_HE_IDX: case MP_HE_NUMKEY: case MP_HE_BOOLKEY: case MP_HE_LUDKEY:
    case MP_HE_UPVAL: case MP_HE_SLOT: case MP_HE_FRAME: case MP_HE_SPECIAL:
    case MP_HE_LOCAL:
      if (get_u(d, &arg, "an edge's argument")) return -1;
      if (kind == MP_HE_SPECIAL && (arg == 0 || arg >= MP_HS__MAX))
	return fail(d, "unknown reference code %llu",
		    (unsigned long long)arg);
      if (kind == MP_HE_SPECIAL && (arg < MP_HS_CHUNK) != (self == 0))
	return fail(d, self ? "a root reference from an object"
			    : "an object's reference from the root");
      break;
    default:
      break;
    }
    if (get_target(d, &to, 0)) return -1;
    if (named && kind == MP_HE_LOCAL) {
      if (get_name(d, &off, "a local's name")) return -1;
      if (arg > UINT32_MAX) return fail(d, "a frame depth of %llu",
				      (unsigned long long)arg);
      arg = arg << 32 | off;
    } else if (named) {
      if (get_name(d, &off, "a chunk name") || name_string(d, to, off))
	return -1;
    }
    if (kind == MP_HE_LOCAL && !named)
      return fail(d, "a local without a name");
    if (add_edge(d, to, kind, wv, arg)) return -1;
  }
}

/* One object record, head byte b already read. */
static int obj(dec *d, unsigned b)
{
  mp_snapshot *sn = d->sn;
  uint32_t id = sn->n;
  uint64_t v, delta;
  if (id == 0 ? b != MP_HT_ROOT : b == MP_HT_ROOT || b >= MP_HT__MAX ||
      b == 0)
    return fail(d, id == 0 ? "the root record expected" :
		"unknown object type %u", b);
  if (id > 0 && id >= d->next)
    return fail(d, "object %u, which nothing references", id);
  if (add_obj(d)) return -1;
  sn->type[id] = (uint8_t)b;
  sn->first[id] = sn->ne;
  sn->name[id] = 0;
  if (get_u(d, &delta, "an address") || get_u(d, &v, "a size")) return -1;
  sn->addr[id] = (id ? sn->addr[id - 1] : 0) + (uint64_t)mp_unzigzag(delta);
  sn->size[id] = v;
  sn->n++;
  switch (b) {
  case MP_HT_PROTO: {
    uint64_t first, nl, nuv, i;
    uint32_t off;
    if (get_u(d, &first, "a first line") || get_u(d, &nl, "a line count") ||
	get_u(d, &nuv, "an upvalue count"))
      return -1;
    if (nuv > 255) return fail(d, "%llu upvalues", (unsigned long long)nuv);
    sn->name[id] = (uint32_t)first;
    if (mp_hash_put(&sn->uvname, id, sn->nuv + 1) < 0)
      return fail(d, "out of memory for names");
    if (uv_push(d, (uint32_t)nuv)) return -1;
    for (i = 0; i < nuv; i++)
      if (get_name(d, &off, "an upvalue name") || uv_push(d, off)) return -1;
    break;
  }
  case MP_HT_BUILTIN: case MP_HT_CDATA: case MP_HT_TRACE:
    if (get_u(d, &v, "an object's number")) return -1;
    sn->name[id] = (uint32_t)v;
    break;
  }
  if (b == MP_HT_STR) return 0;
  return edges(d, id);
}

int mp_snap_is(const uint8_t *data, size_t len)
{
  return len >= 3 && !memcmp(data, MP_SNAP_MAGIC, 3);
}

void mp_snap_free(mp_snapshot *sn)
{
  free(sn->addr); free(sn->size); free(sn->type); free(sn->first);
  free(sn->name); mp_hash_free(&sn->uvname); free(sn->e); free(sn->names);
  free(sn->uvnames); free(sn->wide); free(sn->part);
  memset(sn, 0, sizeof(*sn));
}

/* Give strings the names that came before their records (held as edges
** of a kind past the last), and drop those edges. */
static void late_names(mp_snapshot *sn)
{
  uint32_t i, j = 0, o = 0;
  for (i = 0; i < sn->n; i++) {
    uint32_t k, end = i + 1 < sn->n ? sn->first[i + 1] : sn->ne;
    sn->first[i] = j;
    for (k = o; k < end; k++) {
      if (sn->e[k].kind == MP_HE__MAX + 1) {
	if (!sn->name[sn->e[k].to]) sn->name[sn->e[k].to] =
	  sn->e[k].a + 1;
      } else {
	sn->e[j++] = sn->e[k];
      }
    }
    o = end;
  }
  sn->ne = j;
  sn->first[sn->n] = j;
}

int mp_snap_decode(const uint8_t *data, size_t len, mp_snapshot *sn,
		   char *err, size_t errsize)
{
  dec d;
  uint64_t *t[7];
  int i;
  memset(sn, 0, sizeof(*sn));
  memset(&d, 0, sizeof(d));
  d.p = d.start = data;
  d.end = data + len;
  d.sn = sn;
  d.err = err;
  d.errsize = errsize;
  d.next = 1;
  if (len < MP_PROLOGUE_SIZE || !mp_snap_is(data, len)) {
    fail(&d, "not a heap snapshot (it does not begin with 'ljh')");
    goto bad;
  }
  if (data[3] < 1 || data[3] > MP_SNAP_VERSION) {
    fail(&d, "snapshot version %u, this reader knows 1 to %d", data[3],
	 MP_SNAP_VERSION);
    goto bad;
  }
  d.version = data[3];
  d.p += MP_PROLOGUE_SIZE;
  for (;;) {
    unsigned b = 0;
    if (get_b(&d, &b, "the trailer")) goto bad;
    if (b == MP_SNAP_TRAILER) break;
    if (obj(&d, b)) goto bad;
  }
  if (sn->n == 0) { fail(&d, "no root record"); goto bad; }
  t[0] = &sn->objects; t[1] = &sn->bytes; t[2] = &sn->gctotal;
  t[3] = &sn->vmbytes; t[4] = &sn->unreached; t[5] = &sn->ubytes;
  t[6] = &sn->flags;
  for (i = 0; i < 7; i++)
    if (get_u(&d, t[i], "the trailer")) goto bad;
  if (d.p >= d.end) { fail(&d, "the file ends before its last byte"); goto bad; }
  if (*d.p != MP_SNAP_END) { fail(&d, "0x80 expected at the end"); goto bad; }
  d.p++;
  if (d.p != d.end) { fail(&d, "bytes after the end"); goto bad; }
  if (!(sn->flags & MP_SNAP_CUT) && d.next != sn->n) {
    fail(&d, "%u objects referenced but %u written", d.next - 1, sn->n - 1);
    goto bad;
  }
  if (sn->objects != sn->n - 1) {
    fail(&d, "the trailer says %llu objects, the file has %u",
	 (unsigned long long)sn->objects, sn->n - 1);
    goto bad;
  }
  if (add_obj(&d)) goto bad;	/* Room for first[n]. */
  late_names(sn);
  /* A cut snapshot: references to objects never written are dropped. */
  if (sn->flags & MP_SNAP_CUT) {
    uint32_t k;
    for (k = 0; k < sn->ne; k++)
      if (sn->e[k].to >= sn->n) sn->e[k].to = MP_SNAP_NONE;
  }
  {
    uint64_t sum = 0;
    uint32_t k;
    for (k = 1; k < sn->n; k++) sum += sn->size[k];
    if (sum != sn->bytes) {
      fail(&d, "the trailer says %llu bytes, the objects add up to %llu",
	   (unsigned long long)sn->bytes, (unsigned long long)sum);
      goto bad;
    }
  }
  return 0;
bad:
  mp_snap_free(sn);
  return d.nomem ? -2 : -1;
}
