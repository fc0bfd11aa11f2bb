/*
** mp_snap.h: the one definition of the heap snapshot file.
**
** Written by the agent (src/agent/mp_heap_walk.c), decoded by
** src/format/mp_snapdec.c; docs/FORMAT.md ("Heap snapshots") says the same
** in prose.
**
**   file     := 'l' 'j' 'h' version <3 reserved bytes> object* trailer 0x80
**   object   := head addr size extra edge* (edges: all but strings) 0x00
**   head     : [0 0 0 0 TTTT]  T = MP_HT_* (1..15); MP_HT_ROOT first
**   addr     := zigzag(address - previous object's address)
**   size     := the object's self size, as LuaJIT counts it
**   extra    : proto: firstline numline nuv (name){nuv}; builtin: ffid;
**              cdata: ctypeid; trace: traceno; others: nothing
**   edge     := kind arg* target (name)?    (kind by MP_HE_*, below)
**   target   := 0: none; 1: a new object (the next id); n >= 2: the object
**              next - (n - 1), where next is the id the next new object
**              takes (objects are numbered in the order they are written,
**              root 0, and every object is referenced before it is
**              written: a breadth-first walk)
**   name     := length bytes (cut to MP_SNAP_NAME_MAX), after the first
**              target when kind has MP_HE_NAMED: the bytes of that string
**              object (a key or a chunk name), given once per string
**   trailer  := 0x20 objects bytes gctotal vmbytes unreached ubytes flags
**   part     : an edge of kind MP_HE_PART, zigzag(part - object address),
**              no target: a block of the object's own (a table's array or
**              hash part, a thread's stack, a buffer's bytes) allocated
**              apart from it; written only while a recording runs (the
**              join credits each block to the line that allocated it)
**
** All numbers are ULEB128. A kind byte holds the kind in its low 5 bits,
** MP_HE_NAMED, MP_HE_WEAKK (the key reference is weak) and MP_HE_WEAKV
** (the value reference is weak).
*/

#ifndef MP_SNAP_H
#define MP_SNAP_H

#include <stdint.h>

#include "mp_ext.h"
#include "util/mp_hash.h"

#define MP_SNAP_MAGIC		"ljh"
#define MP_SNAP_VERSION		2	/* 2: parts (MP_HE_PART), written while
					   recording; else 1, read too. */
#define MP_SNAP_NAME_MAX	200	/* Name bytes written per string. */
#define MP_SNAP_TRAILER		0x20
#define MP_SNAP_END		0x80

/* Object types (head byte). */
enum {
  MP_HT_ROOT = 1,	/* The pseudo-object 0: its edges are the roots. */
  MP_HT_STR, MP_HT_UPVAL, MP_HT_THREAD, MP_HT_PROTO, MP_HT_LFUNC,
  MP_HT_CFUNC, MP_HT_BUILTIN, MP_HT_TRACE, MP_HT_CDATA, MP_HT_TAB,
  MP_HT_UDATA,
  MP_HT__MAX
};

/* Edge kinds; args before the target(s). */
enum {
  MP_HE_END = 0,
  MP_HE_IDX,		/* i target: [i] (array part, or integer key). */
  MP_HE_FIELD,		/* key value: .name; key is a string object (the
			   edge <key> too), value may be none. */
  MP_HE_KEY,		/* key value: [<key>]; key a non-string object. */
  MP_HE_NUMKEY,		/* bits value: [1.5] (the double's bits). */
  MP_HE_BOOLKEY,	/* b value: [true] / [false]. */
  MP_HE_LUDKEY,		/* address value: [<lightuserdata>]. */
  MP_HE_META,		/* target: <metatable>. */
  MP_HE_ENV,		/* target: <env>. */
  MP_HE_PROTO,		/* target: <proto> of a Lua function. */
  MP_HE_UPVAL,		/* i target: upvalue i (named by the proto's
			   names for a Lua function). */
  MP_HE_VALUE,		/* target: the value of an upvalue. */
  MP_HE_LOCAL,		/* depth target name: a named local of the frame
			   at depth (0: the top one); the name follows the
			   target (no object of its own: NAMED is set). */
  MP_HE_SLOT,		/* n target: stack slot n (no name known). */
  MP_HE_FRAME,		/* depth target: the function of that frame. */
  MP_HE_CONST,		/* target: a constant of a prototype. */
  MP_HE_SPECIAL,	/* code target: MP_HS_*. */
  MP_HE_PART,		/* delta: a block of the object's own at its
			   address + delta (zigzag), no target; decoded
			   into the snapshot's part[], not as an edge. */
  MP_HE__MAX
};

#define MP_HE_KIND	0x1f
#define MP_HE_NAMED	0x20
#define MP_HE_WEAKK	0x40
#define MP_HE_WEAKV	0x80

/* Codes of MP_HE_SPECIAL (roots and the VM's internal references). */
enum {
  MP_HS_MAIN = 1,	/* root: the main thread */
  MP_HS_GLOBALS,	/* root: the globals (main thread's env) */
  MP_HS_REGISTRY,	/* root: the registry */
  MP_HS_MMNAME,		/* root: a metamethod name (gcroot) */
  MP_HS_BASEMT,		/* root: a base type's metatable (gcroot) */
  MP_HS_IO,		/* root: the default I/O files (gcroot) */
  MP_HS_MMUDATA,	/* root: userdata or cdata awaiting __gc */
  MP_HS_FIXED,		/* root: a string fixed by the VM (reserved words) */
  MP_HS_FFI_FIN,	/* root: the FFI's finalizer table */
  MP_HS_FFI_MISC,	/* root: the FFI's table of ctype metatables */
  MP_HS_CURRENT,	/* root: the thread that took the snapshot */
  MP_HS_CHUNK,		/* a prototype's chunk name */
  MP_HS_TRACE,		/* a prototype's root trace */
  MP_HS_STARTPT,	/* a trace's starting prototype */
  MP_HS_LINK,		/* a trace's linked trace (link, root, side) */
  MP_HS_KGC,		/* a constant of a trace */
  MP_HS_BUFREF,		/* what a string.buffer holds (its string, dict) */
  MP_HS__MAX
};

/* Trailer flags. */
#define MP_SNAP_CUT	1	/* Stopped at max_size: objects are missing. */

/* Address deltas are zigzag-coded: mp_zigzag() of mp_ext.h. */

/* -- Decoding (the reader) ------------------------------------------------- */

#include <stddef.h>

#define MP_SNAP_NONE	UINT32_MAX	/* An edge's missing target. */

/* An edge as decoded. A FIELD or KEY edge of the file becomes two: the
** value's (kind FIELD/KEY, arg the key's object) and the key's (kind
** MP_HE_KEYREF, arg the value's object or MP_SNAP_NONE). */
#define MP_HE_KEYREF	MP_HE__MAX
/* 12 bytes: an argument of more than 32 bits (a number key's bits, a
** lightuserdata key, a deep local) is kept aside, in the snapshot's wide[];
** read one with mp_snap_arg(). */
typedef struct mp_snap_edge {
  uint32_t to;		/* Target object. */
  uint32_t a;		/* The argument, or with wide set its index in
			   wide[]. */
  uint8_t kind;		/* MP_HE_* (or MP_HE_KEYREF). */
  uint8_t weak;		/* 1: the reference is weak (retains nothing). */
  uint8_t wide;
} mp_snap_edge;

/* A decoded snapshot: objects 0..n-1 (0 the root) and their edges. */
typedef struct mp_snapshot {
  uint32_t n, ne;
  uint64_t *addr, *size;
  uint8_t *type;	/* MP_HT_*. */
  uint32_t *first;	/* Edges of i: [first[i], first[i + 1]). */
  mp_snap_edge *e;
  uint32_t *name;	/* Offset + 1 in names of a string's bytes, or 0;
			   a prototype: its first line; a builtin: its
			   ffid; a cdata: its ctype; a trace: its number. */
  mp_hash uvname;	/* A prototype's id -> offset + 1 in uvnames of
			   the count of its upvalue names (a map: few
			   objects are prototypes). */
  char *names;		/* Names, each NUL-terminated. */
  size_t nnames, capnames;
  uint32_t *uvnames;	/* Offsets into names, per prototype run. */
  uint32_t nuv, capuv;
  uint64_t *wide;	/* Edge arguments of more than 32 bits. */
  uint32_t nwide, capwide;
  struct mp_snap_part {
    uint64_t addr;	/* The block's address... */
    uint32_t obj;	/* ...and the object it belongs to. */
  } *part;		/* In the order of their objects. */
  uint32_t npart, cappart;
  /* The trailer. */
  uint64_t objects, bytes, gctotal, vmbytes, unreached, ubytes, flags;
} mp_snapshot;

/* The argument of edge e: index, key object, code, depth, bits, slot;
** LOCAL: its depth << 32 | the offset of its name in names. */
/* The upvalue names of prototype id: uvnames[u] is their count, the
** names' offsets follow; u 0: none known. */
static inline uint32_t mp_snap_uvnames(const mp_snapshot *sn, uint32_t id)
{
  const uint32_t *v = mp_hash_get(&sn->uvname, id);
  return v ? *v : 0;
}

static inline uint64_t mp_snap_arg(const mp_snapshot *sn,
				   const mp_snap_edge *e)
{
  return e->wide ? sn->wide[e->a] : e->a;
}

/* Is data (len bytes) a snapshot file (by its first bytes)? */
int mp_snap_is(const uint8_t *data, size_t len);
/* Decode a whole snapshot file. 0, or -1 with a one-line message in err
** (naming the byte offset and what was expected), or -2 out of memory
** (err says for what); *sn is then freed. */
int mp_snap_decode(const uint8_t *data, size_t len, mp_snapshot *sn,
		   char *err, size_t errsize);
void mp_snap_free(mp_snapshot *sn);

#endif
