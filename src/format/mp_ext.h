/*
** mp_ext.h: the ljmemprof extension of the memprof event stream.
**
** Part of the one definition of the bytes (included by mp_format.h);
** docs/FORMAT.md describes it in prose. A stream with call stacks, and
** later timestamps, sampling and notes, says so with its own event-stream
** version, MP_VERSION_EXT, which every memprof reader of versions 1 to 3
** refuses by its version check (Tarantool's: "Memprof event format version
** mismatch: the tool expects 3, but your data is 76") instead of
** misreading it. The symtab part is unchanged (version 3, written empty).
**
**   events      := 'l' 'j' 'm' MP_VERSION_EXT minor 0 0  record* epilogue
**   record      := event | sym | xrec
**   event       := ev-header loc addresses     (as in version 3, but:)
**     ev-header : [0 N O SSS EE]: bits 0-4 as in v3; O (0x20): the old
**                 address's difference is in units of 8; N (0x40): the new
**                 address's is
**     loc       : MP_SRC_STACK: node-id          a call stack (see node), as
**                                                the zigzag ULEB128 of its
**                                                difference to the node id
**                                                of the previous stack event
**                                                (0 at first)
**                 MP_SRC_INTERNAL, _LFUNC, _CFUNC, _TRACE: as in v3
**     addresses : each address is the zigzag ULEB128 of its difference to
**                 the previous address of its role (new addresses of alloc
**                 and realloc events, old addresses of free and realloc
**                 events); both start at 0; divided by 8 when the header
**                 says so. Sizes are plain ULEB128.
**   sym         := as in version 3 (sym-lua, sym-cfunc, sym-trace)
**   xrec        := 0x00 type length payload    (length bytes of payload)
**
** Extended records (xrec) carry everything new; a reader skips a type it
** does not know by its length, so later additions need no new version:
**
**   MP_X_NODE     parent-id frame       a call-stack node; the n-th node
**                                       record of the stream has id n (1,
**                                       2, ...); parent 0 is the root
**   MP_X_BUILTIN  builtin-id name       the name of a builtin (string.rep)
**   MP_X_INFO     key value             a string setting or fact: at start
**                                       ("stacks" = "64", "sample" =
**                                       "524288"), or at the end (see
**                                       notes below)
**   MP_X_TIME     ns                    a time mark: nanoseconds since the
**                                       profile started (monotonic clock),
**                                       written every few thousand events
**                                       and at the end
**   MP_X_DROP     address               sampling: the recorded block at
**                                       address left the sample (it was
**                                       resized into a block that is not
**                                       sampled): no longer live, not freed
**   MP_X_RSS      bytes                 native profiles: the process's
**                                       resident set size, after each time
**                                       mark and at the end
**   MP_X_MCODE    bytes                 native profiles: the bytes of
**                                       machine code the JIT has mapped
**                                       (its mcode areas, which are no
**                                       native events), beside each RSS
**                                       record
**   frame       := kind payload
**     MP_FK_LUA       proto-addr line   a Lua function at a line
**     MP_FK_BUILTIN   builtin-id        a builtin, named by MP_X_BUILTIN: its
**                                       ffid (below 256), or for one LuaJIT
**                                       writes in Lua (table.move) the
**                                       address of its prototype
**     MP_FK_C         cfunc-addr        a C function (sym-cfunc)
**     MP_FK_TRACE     trace-no          compiled code (sym-trace); the
**                                       line inside it, when known, is a
**                                       MP_FK_LUA node under it
**     MP_FK_HOST      (nothing)         the host program, outside any
**                                       Lua call, or below builtins it
**                                       called on the main thread
**     MP_FK_CUT       depth             more frames below, not recorded
**                                       (the stack was deeper than the
**                                       limit, which `depth` gives)
**     MP_FK_NATIVE    function          native memory (minor 2): the
**                                       innermost frame of an event of
**                                       the malloc family or of mmap
**                                       (MP_NF_*), on the Lua stack that
**                                       called it or on its native caller
**                                       (a C frame)
**     MP_FK_THREAD    thread-id         native memory (minor 2): the root
**                                       of another thread's events (the
**                                       kernel's thread id)
**
** Native memory (minor 2, setting "native" = "1"): events at a node whose
** frame is MP_FK_NATIVE are native blocks, apart from the VM's heap (an
** address may be both at once in the stream's order: a reader keeps them
** in two heaps); their frees are at such a node too (header FREE|STACK,
** which minor 1 has not got).
**
** A node is written before the first event that refers to it, a symbol
** before the first node or event that refers to it. Stacks are stored
** root first: an event's node is its innermost frame, its parents lead to
** the outermost one.
**
** Notes: what a reader should know about how the profile ended are
** MP_X_INFO records written at stop: "collect" = "1" (a full garbage
** collection ran just before the end and its frees are in the stream),
** "settled" = "1" (none ran, but a cycle of the collector's had run since
** the last allocation), "uncollected" = "exit" (one was asked for, but
** the process exited with the Lua state open), "stopped" = "size limit"
** (recording stopped at the max_size limit).
** An extension stream has them before its epilogue. A version-3 stream
** cannot (its readers would stop at them), so it carries them in a
** trailer after its epilogue, which readers of memprof never look at:
**
**   trailer     := 'l' 'j' 'n' 1 0 0 0  xrec*  (to the end of the data)
**
** The final collection's start: before that collection runs, both kinds
** of stream get a C function symbol at address MP_GCSTART_ADDR named
** MP_GCSTART_NAME, which no event refers to (no C function lives at
** address 1). Readers of memprof take it as a symbol nobody uses; ours
** as the point after which frees end blocks that lived to the end
** (item source MP_SRC_GCSTART).
**
** Function names: after the symbol of a prototype (or later, once it is
** known), both kinds of stream may get a C function symbol at
** MP_FNAME_TAG | the prototype's address, named after the function
** ("parse_row", "M.parse", "obj:method"), which no event refers to either.
*/

#ifndef MP_EXT_H
#define MP_EXT_H

#define MP_VERSION_EXT		0x4c	/* 'L': the ljmemprof extension. */
#define MP_EXT_MINOR		1	/* Its revision, after the version. */
#define MP_EXT_MINOR_NATIVE	2	/* A stream with native memory. */

#define MP_SRC_STACK		(5 << 2)	/* Event location: a node id. */
#define MP_EV_OLD8		0x20	/* Old address delta in units of 8. */
#define MP_EV_NEW8		0x40	/* New address delta in units of 8. */
#define MP_XREC			0x00	/* Header of an extended record. */

/* What a decoded item (mp_item.src, kind MP_AEV_SYMTAB) of an extended
** record is: a node (MP_SRC_STACK), a builtin's name, a setting, a time
** mark, a block that left the sample; or the marker of the final
** collection (a C function symbol on the wire). The last five are not
** sources on the wire. */
#define MP_SRC_BUILTIN		(6 << 2)
#define MP_SRC_INFO		(7 << 2)
#define MP_SRC_TIME		(8 << 2)	/* A time mark: id is its ns. */
#define MP_SRC_DROP		(9 << 2)	/* A block left the sample: oaddr. */
#define MP_SRC_GCSTART		(10 << 2)	/* The final collection starts. */
#define MP_SRC_RSS		(11 << 2)	/* The process's RSS: id bytes. */

#define MP_GCSTART_ADDR		1
#define MP_GCSTART_NAME		"(final collection)"

/* A function's name: a C function symbol at MP_FNAME_TAG | the address of
** a prototype whose symbol is in force, named after the function (item
** source MP_SRC_FNAME, id the prototype's address). No C function lives
** above 2^63, no event refers to it. */
#define MP_FNAME_TAG		((uint64_t)1 << 63)
#define MP_SRC_FNAME		(12 << 2)
#define MP_SRC_MCODE		(13 << 2)	/* The JIT's machine code: id
						   bytes. */

/* Extended record types. */
enum {
  MP_X_NODE = 1,
  MP_X_BUILTIN = 2,
  MP_X_INFO = 3,
  MP_X_TIME = 4,
  MP_X_DROP = 5,
  MP_X_RSS = 6,
  MP_X_MCODE = 7
};

#define MP_LJN_MAGIC		"ljn"	/* The trailer of notes. */
#define MP_LJN_VERSION		1

/* Frame kinds of a stack node. */
enum {
  MP_FK_LUA = 1,
  MP_FK_BUILTIN = 2,
  MP_FK_C = 3,
  MP_FK_TRACE = 4,
  MP_FK_HOST = 5,
  MP_FK_CUT = 6,
  MP_FK_INTERNAL = 7,	/* Not written: what readers call the VM's own
			   events, which carry no stack. */
  MP_FK_NATIVE = 8,	/* Native memory: the function called (MP_NF_*). */
  MP_FK_THREAD = 9	/* Native memory of another thread: its id. */
};

/* The native functions of an MP_FK_NATIVE frame. */
enum {
  MP_NF_MALLOC = 1, MP_NF_CALLOC, MP_NF_REALLOC, MP_NF_REALLOCARRAY,
  MP_NF_FREE, MP_NF_POSIX_MEMALIGN, MP_NF_ALIGNED_ALLOC, MP_NF_MEMALIGN,
  MP_NF_VALLOC, MP_NF_PVALLOC, MP_NF_MMAP, MP_NF_MUNMAP, MP_NF_MREMAP,
  MP_NF_N
};

/* The name of native function nf, or NULL if it is none. */
static inline const char *mp_native_fname(uint64_t nf)
{
  static const char *const names[MP_NF_N] = {
    NULL, "malloc", "calloc", "realloc", "reallocarray", "free",
    "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
    "mmap", "munmap", "mremap"
  };
  return nf < MP_NF_N ? names[nf] : NULL;
}

/* The key of a native block in a reader's heap: apart from the VM's
** blocks (bit 63 is never set in a user-space address). */
#define MP_NATIVE_KEY		((uint64_t)1 << 63)

/* Zigzag: signed differences as small unsigned numbers (0, -1, 1, -2, ...
** become 0, 1, 2, 3, ...). */
static inline uint64_t mp_zigzag(int64_t v)
{
  return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t mp_unzigzag(uint64_t v)
{
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Headers of the allocation events of the extension (bit set over the
** low five bits, as mp_event_headers()): those of version 3, allocations
** and reallocations at a stack node, and bit 31: the header may carry
** MP_EV_OLD8 and MP_EV_NEW8. */
#define MP_HEADERS_FLAGS	(1u << 31)
#define MP_EXT_HEADERS	(0xeee0u | 0xe0000u | \
			 1u << (MP_AEV_ALLOC | MP_SRC_STACK) | \
			 1u << (MP_AEV_FREE | MP_SRC_STACK) | \
			 1u << (MP_AEV_REALLOC | MP_SRC_STACK) | MP_HEADERS_FLAGS)

#endif
