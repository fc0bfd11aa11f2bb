/*
** cmd_events.c: `ljmemprof events`: every event, resolved, as JSON lines.
**
** The agent's tests read profiles through this command, so it resolves and
** labels with the report's own code (mp_label, mp_json): what they check
** is what users see.
*/

#define _GNU_SOURCE	/* fopencookie */
#include <errno.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "cli/mp_cli.h"
#include "reader/mp_label.h"
#include "render/mp_json.h"

const char mp_help_events[] =
"NAME\n"
"    ljmemprof events - print every event of a profile as JSON lines\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof events FILE\n"
"\n"
"DESCRIPTION\n"
"    One JSON object per allocation event, in stream order, with fields\n"
"    event (alloc, realloc, free), source (internal, lua, cfunc, trace,\n"
"    stack), label, line and chunk (Lua), name (C), trace, start_line and\n"
"    start_chunk (traces), node (the innermost node of a call stack, in a\n"
"    profile recorded with stacks: see docs/FORMAT.md), oaddr, osize,\n"
"    naddr, nsize; then a last line\n"
"    {\"complete\":true} or {\"complete\":false} (none for a file that is\n"
"    not a profile: one error line, status 2). Labels are those of the\n"
"    report (the same resolver: C addresses inside a symbol as name+0xoff,\n"
"    code loaded from strings as [string \"tbl\"] or function_alias_N);\n"
"    names are cut at 4096 bytes. An event of a profile recorded with\n"
"    stacks has the labels of its frames in stack, innermost first (as\n"
"    the collapsed output shows them, read backwards), and is labelled by\n"
"    its innermost frame; one of native memory (native = true) has heap\n"
"    \"native\" too.\n"
"\n"
"EXIT STATUS\n"
"    0 complete; 3 cut short or damaged (events up to the cut or the\n"
"    damage); 2 error: usage, unreadable file, not a profile (one error\n"
"    line: file, byte offset, what was expected; nothing on standard\n"
"    output).\n";

_Static_assert(MP_NAME_SHOWN == 4096, "the manual above gives the cut");

/* The stack nodes read so far, by id - 1: frame and parent. */
typedef struct frames {
  mp_loc *loc;
  uint32_t *parent;
  uint8_t *kind;
  size_t n, cap;
} frames;

/* Keep the node of record it. 0, or -1 when out of memory. */
static int node_keep(mp_symtab *t, frames *fr, const mp_item *it)
{
  if (it->id != fr->n + 1) return 0;	/* Ids come in order. */
  if (fr->n == fr->cap) {
    size_t cap = fr->cap ? fr->cap * 2 : 1024;
    void *loc = realloc(fr->loc, cap * sizeof(*fr->loc)), *parent, *kind;
    if (loc) fr->loc = loc;
    parent = loc ? realloc(fr->parent, cap * sizeof(*fr->parent)) : NULL;
    if (parent) fr->parent = parent;
    kind = parent ? realloc(fr->kind, cap) : NULL;
    if (!kind) return -1;
    fr->kind = kind;
    fr->cap = cap;
  }
  fr->loc[fr->n] = mp_frame_loc(t, it->fkind, it->fa, it->line);
  fr->parent[fr->n] = it->parent <= fr->n ? (uint32_t)it->parent : 0;
  fr->kind[fr->n++] = it->fkind;
  return 0;
}

/* Print ",\"stack\":[...]": the frames of node id, innermost first. */
static void json_stack(FILE *out, mp_symtab *t, const frames *fr,
		       uint64_t id)
{
  char label[MP_LABEL_MAX];
  const char *sep = "";
  fputs(",\"stack\":[", out);
  while (id && id <= fr->n) {	/* Parents have smaller ids. */
    mp_frame_label(&t->names, fr->kind[id - 1], &fr->loc[id - 1], label,
		   sizeof(label));
    fputs(sep, out);
    mp_json_cstr(out, label);
    sep = ",";
    id = fr->parent[id - 1];
  }
  fputc(']', out);
}

/* Print the location fields of an event. */
static void json_loc(FILE *out, mp_symtab *t, const frames *fr,
		     const mp_item *it)
{
  char label[MP_LABEL_MAX];
  mp_loc l = mp_loc_of(t, it->src, it->id, it->line);
  const mp_name *nm = l.name ? mp_strtab_get(&t->names, l.name) : NULL;
  if (it->src == MP_SRC_STACK && it->id && it->id <= fr->n)	/* Its top. */
    mp_frame_label(&t->names, fr->kind[it->id - 1], &fr->loc[it->id - 1],
		   label, sizeof(label));
  else
    mp_label(&t->names, &l, label, sizeof(label));
  fprintf(out, "\"source\":\"%s\",\"label\":", mp_src_name(it->src));
  mp_json_cstr(out, label);
  switch (it->src) {
  case MP_SRC_LFUNC:
    fprintf(out, ",\"line\":%llu,\"chunk\":", (unsigned long long)it->line);
    if (nm) mp_json_name(out, nm, MP_NAME_SHOWN);
    else fputs("null", out);
    break;
  case MP_SRC_CFUNC:
    fputs(",\"name\":", out);
    if (nm) mp_json_name(out, nm, MP_NAME_SHOWN);
    else fputs("null", out);
    break;
  case MP_SRC_STACK:
    fprintf(out, ",\"node\":%llu", (unsigned long long)it->id);
    if (it->id - 1 < fr->n && fr->kind[it->id - 1] == MP_FK_NATIVE)
      fputs(",\"heap\":\"native\"", out);
    json_stack(out, t, fr, it->id);
    break;
  case MP_SRC_TRACE:
    fprintf(out, ",\"trace\":%llu", (unsigned long long)it->id);
    if (nm) {
      fprintf(out, ",\"start_line\":%llu,\"start_chunk\":",
	      (unsigned long long)l.aux);
      mp_json_name(out, nm, MP_NAME_SHOWN);
    }
    break;
  }
}

/* Events printed so far, for the progress line. */
static uint64_t count_events(const void *ctx)
{
  return *(const uint64_t *)ctx;
}

#define HOLD_LINES	1024	/* Lines held until the file is known to
				   still have their bytes. */

/* The pass of events over an input, and what it has printed. */
typedef struct pass {
  mp_reader r;
  mp_symtab t;
  frames fr;
  uint64_t n;		/* Events decoded, for the progress line. */
  uint64_t printed;	/* Lines printed, kept when the pass starts over. */
  FILE *out;		/* Where they go. */
  FILE *held;		/* Lines not printed yet: a stream into... */
  char *buf;		/* ...this text (a stdio buffer, unlike an
			   open_memstream, whose fputc is 2x slower)... */
  size_t len, cap;
  unsigned nheld;	/* ...and their number. */
  int nomem;		/* buf could not grow. */
} pass;

/* The held stream's write: append to the text. Out of memory, the text
** and what follows are printed at once, in order, as when no held stream
** could be made (hold()): a failed write would lose the lines stdio
** buffered for it. */
static ssize_t held_write(void *ctx, const char *b, size_t n)
{
  pass *a = ctx;
  if (a->nomem) return (ssize_t)fwrite(b, 1, n, a->out);
  if (a->len + n > a->cap) {
    size_t cap = a->cap ? a->cap : 1 << 16;
    char *p;
    while (cap < a->len + n) cap *= 2;
    if (!(p = realloc(a->buf, cap))) {
      a->nomem = 1;
      fwrite(a->buf, 1, a->len, a->out);
      a->len = 0;
      return (ssize_t)fwrite(b, 1, n, a->out);
    }
    a->buf = p;
    a->cap = cap;
  }
  memcpy(a->buf + a->len, b, n);
  a->len += n;
  return (ssize_t)n;
}

/* Print the lines held, once the file is known to still hold the bytes
** they were decoded from (up to the decoder's offset): 0, or -1 if it
** shrank (they are dropped: the pass stops, to be run again). */
static int release(pass *a, mp_input *in)
{
  int ok;
  if (a->held) fflush(a->held);
  ok = mp_input_holds(in, mp_reader_offset(&a->r));
  if (a->nomem) a->printed += a->nheld;	/* By held_write(), at once. */
  else if (ok && a->len) {
    fwrite(a->buf, 1, a->len, a->out);
    a->printed += a->nheld;
  }
  a->len = a->nheld = 0;
  return ok ? 0 : -1;
}

/* Where the next line goes: the held lines (stdout if no memory). */
static FILE *hold(pass *a, mp_input *in)
{
  static const cookie_io_functions_t io = { NULL, held_write, NULL, NULL };
  if (!a->held && !a->nomem && (a->held = fopencookie(a, "w", io)))
    __fsetlocking(a->held, FSETLOCKING_BYCALLER);	/* Else 10x slower. */
  if (!a->held || a->nomem) {	/* Printed at once, as before. */
    release(a, in);
    a->printed++;
    return a->out;
  }
  a->nheld++;
  return a->held;
}

/* Decode and print the events of in: a pass from nothing that
** mp_input_guard() may start again (the file shrank under it); the lines
** a pass before printed are decoded again, the same, and not printed
** twice, and lines are printed only once the file is known to hold the
** bytes they come from. The end: MP_END or an MP_ERR_* code. */
static int events_pass(mp_input *in, void *ctx)
{
  pass *a = ctx;
  FILE *out;
  uint64_t line = 0, skip = a->printed;
  size_t mark = 0;
  mp_item it;
  int rc;
  /* What an abandoned pass built may be half updated: left as it is. */
  mp_symtab_init(&a->t);
  memset(&a->fr, 0, sizeof(a->fr));
  a->n = 0;
  if (a->held) fflush(a->held);	/* Lines of a pass abandoned: dropped. */
  a->len = a->nheld = 0;
  mp_input_start(in, &a->r);
  while ((rc = mp_input_next(in, &a->r, &it)) == MP_OK) {
    if (it.offset >= mark) {	/* Drop pages read, show progress. */
      mp_input_consumed(in, it.offset);
      mark = it.offset + ((size_t)1 << 20);
    }
    if (a->nheld >= HOLD_LINES && release(a, in) < 0) {
      /* The guard runs the pass again over what the file still has. */
      a->r.err_offset = mp_reader_offset(&a->r);
      snprintf(a->r.err, sizeof(a->r.err), "the file's bytes, which "
	       "shrank while read");
      return MP_ERR_TRUNC;
    }
    if (it.kind == MP_AEV_SYMTAB) {
      if (!mp_symtab_add(&a->t, &it) ||
	  (it.src == MP_SRC_STACK && node_keep(&a->t, &a->fr, &it) < 0)) {
	rc = MP_ERR_NOMEM;
	a->r.err_offset = it.offset;
	snprintf(a->r.err, sizeof(a->r.err), "memory for the symbols");
	break;
      }
      if (it.src != MP_SRC_DROP && it.src != MP_SRC_GCSTART) continue;
      if (line++ < skip) continue;
      out = hold(a, in);
      if (it.src == MP_SRC_DROP)	/* A sampled block left the sample. */
	fprintf(out, "{\"event\":\"drop\",\"oaddr\":%llu}\n",
		(unsigned long long)it.oaddr);
      else
	fprintf(out, "{\"event\":\"final_collection\"}\n");
      continue;
    }
    a->n++;
    if (line++ < skip) continue;
    out = hold(a, in);
    fprintf(out, "{\"event\":\"%s\",", mp_kind_name(it.kind));
    json_loc(out, &a->t, &a->fr, &it);
    fprintf(out, ",\"oaddr\":%llu,\"osize\":%llu,\"naddr\":%llu,"
	    "\"nsize\":%llu}\n",
	    (unsigned long long)it.oaddr, (unsigned long long)it.osize,
	    (unsigned long long)it.naddr, (unsigned long long)it.nsize);
  }
  release(a, in);	/* If the file shrank, the guard runs this again. */
  return rc;
}

int mp_cmd_events(int argc, char **argv)
{
  const char *path;
  mp_input in;
  pass a;
  int rc, status;
  if ((rc = mp_cli_file_args("events", argc, argv, NULL, NULL, NULL,
			     &path)) >= 0)
    return rc;
  if (mp_input_open(&in, path) < 0) {
    fprintf(stderr, "ljmemprof: %s: %s\n", mp_cli_name(path),
	    strerror(errno));
    return MP_EXIT_ERROR;
  }
  memset(&a, 0, sizeof(a));
  a.out = stdout;
  mp_cli_progress(&in, path, count_events, &a.n);
  rc = mp_input_guard(&in, events_pass, &a);
  mp_cli_progress_end(&in);
  mp_cli_shrunk(path, &in);
  status = mp_cli_outcome(path, rc, &a.r, &in);
  if (status != MP_EXIT_ERROR || mp_reader_is_profile(&a.r))	/* Not
      after "not a profile": its error line says it all. */
    fprintf(a.out, "{\"complete\":%s}\n", rc == MP_END && !in.shrunk ?
	    "true" : "false");
  if (status == MP_EXIT_OK && in.shrunk) status = MP_EXIT_TRUNCATED;
  if (a.held) fclose(a.held);
  free(a.buf);
  mp_symtab_free(&a.t);
  free(a.fr.loc);
  free(a.fr.parent);
  free(a.fr.kind);
  mp_input_close(&in);
  return mp_cli_finish_output(status);
}
