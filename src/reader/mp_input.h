/*
** mp_input.h: where the bytes of a profile come from.
**
** A regular file is mapped whole: the decoder sees one window, the kernel
** reads ahead, and the pages already decoded are dropped as the pass goes
** (mp_input_consumed), so a long pass keeps a small resident set. Anything
** else (a pipe, a terminal, a device, a file that cannot be mapped) is read
** through a window of MP_WINDOW bytes that slides as the decoder asks for
** more: nothing is read before the first bytes are checked, reading stops
** at the first error, and memory stays at one window whatever the length
** of the stream. An item longer than the window (only a symbol's name can
** be) grows it to the item's size, at most MP_WINDOW_MAX, the longest item
** the format allows. Names are interned as they are decoded (mp_strtab),
** so nothing refers to a window once it has moved on.
**
** A mapped file that shrinks while it is read (another process truncates
** it: a new recording into the same path) would kill the reader with
** SIGBUS at the first page past its new end. mp_input_guard() runs a pass
** so that such a fault abandons the pass and runs it again over the bytes
** the file still has: the data then ends early, as a cut profile's does.
**
** Errors: mp_input_open() returns -1 with errno set; reads that fail end
** the stream with MP_ERR_IO (errno in in->err).
*/

#ifndef MP_INPUT_H
#define MP_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "format/mp_format.h"

#define MP_ERR_IO	(-4)	/* A read failed (after MP_ERR_TRUNC, -2). */

#define MP_WINDOW	((size_t)1 << 20)
/* Longest item: a symbol header, two numbers, a name of the longest
** length the decoder accepts, one number after it. */
#define MP_WINDOW_MAX	((size_t)MP_STRING_MAX + 1 + 4 * MP_ULEB_MAX)

typedef struct mp_input {
  const uint8_t *data;	/* Whole input (mapped or in memory), or NULL. */
  size_t len;		/* Bytes to read: the file's size when mapped,
			   less if it shrank while read. */
  size_t maplen;	/* Bytes mapped. */
  int mapfd;		/* The mapped file, open to learn its size if it
			   shrinks, or -1. */
  size_t shrunk;	/* The size the file had when mapped, if it shrank
			   while read (mp_input_guard()); else 0. */
  int mapped;		/* data is an mmap. */
  int fd;		/* Stream read with read(2), or -1. */
  int own_fd;		/* fd is closed by mp_input_close(). */
  const uint8_t *src;	/* In-memory stream (tests): its bytes... */
  size_t srclen, srcpos, chunk;	/* ...read chunk bytes at a time. */
  uint8_t *buf;		/* Stream window. */
  size_t cap;
  size_t total;		/* Bytes read so far (streams) or len. */
  size_t released;	/* Mapped bytes dropped so far. */
  int err;		/* errno of the read that failed, or 0. */
  /* Called by mp_input_consumed() with the offset decoded so far (may be
  ** NULL): the command's progress line. */
  void (*progress)(void *ctx, size_t offset);
  void *ctx;
} mp_input;

/* Open path ("-": standard input). 0, or -1 with errno set. */
int mp_input_open(mp_input *in, const char *path);

/* An input over len bytes at data, read whole (chunk 0) or as a stream
** that gives chunk bytes at a time (tests of the windowed path). */
void mp_input_memory(mp_input *in, const void *data, size_t len,
		     size_t chunk);

void mp_input_close(mp_input *in);

/* Start r on the input: the whole of it, or an empty window that the
** first mp_reader_next() asks to fill. */
void mp_input_start(mp_input *in, mp_reader *r);

/* After mp_reader_next() returned MP_MORE: slide r's window past what it
** has decoded and read more. 0 (more bytes, or the end: r->eof is set),
** or MP_ERR_IO (in->err says why) or MP_ERR_DATA (an item longer than
** MP_WINDOW_MAX, which the decoder rejects first) with r->err set. */
int mp_input_fill(mp_input *in, mp_reader *r);

/* mp_reader_next() that fills the window as needed: MP_OK, MP_END or an
** MP_ERR_* code (MP_ERR_IO included). */
int mp_input_next(mp_input *in, mp_reader *r, mp_item *it);

/* Run pass(in, ctx), a pass over the whole input that starts it itself
** (mp_input_start()), and return its result. On a mapped file, a read
** past the file's end (it shrank: SIGBUS) abandons the pass at once and
** runs it again over the bytes the file still has (in->len; in->shrunk
** says how long it was), so pass must start over from nothing: what the
** abandoned pass built may be half updated and is left as it is (leaked,
** not freed). Other SIGBUS faults are left to the handler before. */
int mp_input_guard(mp_input *in, int (*pass)(mp_input *in, void *ctx),
		   void *ctx);

/* Whether the input still holds its first n bytes: a mapped file may have
** shrunk since (and the last page read may then have shown zeros that are
** no data). Always 1 for other inputs. Costs an fstat(). A pass that
** writes as it goes checks this before writing what it decoded, and
** returns when not: mp_input_guard() then runs it again. */
int mp_input_holds(const mp_input *in, size_t n);

/* The decoder has gone past offset: drop mapped pages before it and call
** the progress hook. Cheap; call it every MiB or so. */
void mp_input_consumed(mp_input *in, size_t offset);

#endif
