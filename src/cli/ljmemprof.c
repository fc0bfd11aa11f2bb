/*
** ljmemprof: profile LuaJIT programs and report where they allocate.
**
**   ljmemprof run [-o FILE] [--luajit PATH] [OPTIONS] SCRIPT [ARGS...]
**   ljmemprof report [OPTIONS] FILE
**   ljmemprof info [--format text|json] FILE
**   ljmemprof events FILE
**
** The usage texts below are the manual; docs/REPORT.md has worked examples.
*/

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/mp_format.h"
#include "reader/mp_file.h"
#include "analysis/mp_profile.h"
#include "render/mp_render.h"
#include "reader/mp_symtab.h"
#include "cli/mp_cli.h"

/* -- Manual --------------------------------------------------------------- */

static const char help_main[] =
"NAME\n"
"    ljmemprof - memory profiler for LuaJIT: record, report, inspect\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof run [-o FILE] [--luajit PATH] [REPORT OPTIONS] SCRIPT [ARGS...]\n"
"    ljmemprof report [REPORT OPTIONS] FILE\n"
"    ljmemprof info [--format text|json] FILE\n"
"    ljmemprof events FILE\n"
"    ljmemprof help [COMMAND]\n"
"\n"
"DESCRIPTION\n"
"    ljmemprof tells which Lua lines, builtins, C functions and JIT traces of\n"
"    a LuaJIT program allocate memory, how much, and what they did not free.\n"
"    Profiles are recorded by its agent, the Lua module `ljmemprof`, which\n"
"    wraps the allocator of an unmodified LuaJIT; they are in the memprof\n"
"    format of Tarantool's LuaJIT, whose profiles ljmemprof reads as well\n"
"    (format versions 1 to 3).\n"
"\n"
"COMMANDS\n"
"    run      Run SCRIPT under luajit with the agent, then print its report.\n"
"    report   Print the report of a recorded profile.\n"
"    info     Summarise a profile: versions, counts, bytes, completeness.\n"
"    events   Print every event, resolved, as one JSON object per line.\n"
"    help     Print this manual, or a command's (same as COMMAND --help).\n"
"\n"
"EXIT STATUS\n"
"    0   The profile is complete and was reported.\n"
"    2   Usage error, unreadable file, malformed data, or out of memory:\n"
"        one line on standard error names the file, the byte offset and\n"
"        what was expected there; nothing is reported.\n"
"    3   The profile ends early (the profiled process was killed before it\n"
"        finished the file): everything before the cut is reported, and a\n"
"        warning on standard error says where the data ends.\n"
"    `run` exits with the script's status instead when that is not 0.\n"
"\n"
"SEE ALSO\n"
"    ljmemprof run --help, ljmemprof report --help, ljmemprof info --help,\n"
"    docs/REPORT.md (the report and its JSON), docs/FORMAT.md (the bytes).\n";

static const char help_report[] =
"NAME\n"
"    ljmemprof report - print where a LuaJIT program allocated memory\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof report [OPTIONS] FILE\n"
"\n"
"DESCRIPTION\n"
"    Reads FILE, a memprof profile (\"-\" reads standard input), in one pass\n"
"    and prints per source of events, in the layout of Tarantool's memprof\n"
"    parser:\n"
"\n"
"    ALLOCATIONS, REALLOCATIONS, DEALLOCATIONS\n"
"        One line per source: `SOURCE: N events<TAB>+NEW<TAB>-OLD`, where\n"
"        NEW sums the new sizes and OLD the old sizes of the section's N\n"
"        events. Under a source that reallocates or frees, `Overrides:`\n"
"        lists the sources that owned the blocks it resized or freed\n"
"        (blocks allocated before recording started have none).\n"
"\n"
"    HEAP SUMMARY\n"
"        `SOURCE holds BYTES: N allocs, M frees`: what SOURCE allocated and\n"
"        was not freed within the profile; only sources that hold more\n"
"        than 0 bytes. The accounting is Tarantool's: a source is charged\n"
"        with its allocations and with the growth of its blocks when they\n"
"        are reallocated, credited with its blocks' sizes when they are\n"
"        freed or reallocated, and a reallocated block belongs afterwards\n"
"        to the source that reallocated it.\n"
"\n"
"    ALIASES\n"
"        Code loaded from a string has its source text as chunk name; it\n"
"        is shown as `function_alias_N`, and the texts are listed here\n"
"        with line numbers.\n"
"\n"
"    A SOURCE is one of:\n"
"        @app.lua:12           a line of a Lua function (chunk name, line);\n"
"                              builtins such as string.rep are charged to\n"
"                              the line that called them\n"
"        function_alias_2:3    a line of code loaded from a string\n"
"        TRACE [3] started at @app.lua:41\n"
"                              a JIT-compiled trace, by where it started\n"
"        json_encode           a C function, by its symbol\n"
"        lj_tab_new+0x1c       a C address inside a symbol (nearest lower)\n"
"        CFUNC 0x7f12...       a C function without a symbol\n"
"        INTERNAL              the VM itself (garbage collector, JIT\n"
"                              compiler, trace exits, ...)\n"
"    A prototype address or trace number reused by another function or\n"
"    trace during the run is a different source.\n"
"\n"
"OPTIONS\n"
"    --format text|json\n"
"        Text (default) or one JSON object with the same data and the\n"
"        details of each source (docs/REPORT.md describes every field).\n"
"    --sort bytes|count\n"
"        Order the lines by bytes (default: NEW for allocations and\n"
"        reallocations, OLD for deallocations, BYTES held in the heap\n"
"        summary) or by the number of events (allocs in the summary).\n"
"        Ties go to the other measure, then to the label.\n"
"    --top N\n"
"        Print at most N lines per section (0: all, the default).\n"
"    --leak-only\n"
"        Print only the heap summary (and the aliases it uses).\n"
"    -H, --human-readable\n"
"        Sizes in B, KiB, MiB, GiB (powers of 1024) in text output.\n"
"    -h, --help\n"
"        Print this manual.\n"
"\n"
"EXIT STATUS\n"
"    0 complete; 3 cut short, reported up to the cut, with a warning;\n"
"    2 usage error, unreadable file or malformed data (one error line:\n"
"    file, byte offset, what was expected).\n"
"\n"
"EXAMPLES\n"
"    ljmemprof report memprof.bin\n"
"    ljmemprof report --leak-only -H --top 10 memprof.bin\n"
"    ljmemprof report --format json memprof.bin | jq '.heap_summary[0]'\n";

static const char help_info[] =
"NAME\n"
"    ljmemprof info - summarise a memprof profile\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof info [--format text|json] FILE\n"
"\n"
"DESCRIPTION\n"
"    Prints the format versions of the symtab and of the event stream,\n"
"    whether the stream is complete (ends with its epilogue) or where it\n"
"    was cut, the events by kind, the symbols by kind (in the symtab\n"
"    header and met inside the stream), the number of distinct sources,\n"
"    the bytes allocated (new sizes of alloc and realloc events) and freed\n"
"    (old sizes of realloc and free events), the net change and its peak\n"
"    during the run, and the blocks allocated within the profile that were\n"
"    still live at its end.\n"
"\n"
"OPTIONS\n"
"    --format text|json   Text (default) or one JSON object.\n"
"    -h, --help           Print this manual.\n"
"\n"
"EXIT STATUS\n"
"    0 complete; 3 cut short (summarised up to the cut); 2 error.\n";

static const char help_events[] =
"NAME\n"
"    ljmemprof events - print every event of a profile as JSON lines\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof events FILE\n"
"\n"
"DESCRIPTION\n"
"    One JSON object per allocation event, in stream order, with fields\n"
"    event (alloc, realloc, free), source (internal, lua, cfunc, trace),\n"
"    label, line and chunk (Lua), name (C), trace, start_line and\n"
"    start_chunk (traces), oaddr, osize, naddr, nsize; then a last line\n"
"    {\"complete\":true} or {\"complete\":false}.\n"
"\n"
"EXIT STATUS\n"
"    0 complete; 3 cut short; 2 error.\n";

/* Print the manual of a command (NULL: the main one); returns 0 or 2. */
static int help(const char *cmd, FILE *out)
{
  const char *text = !cmd ? help_main :
    !strcmp(cmd, "report") ? help_report : !strcmp(cmd, "info") ? help_info :
    !strcmp(cmd, "events") ? help_events : !strcmp(cmd, "run") ? mp_help_run :
    NULL;
  if (!text) {
    fprintf(stderr, "ljmemprof: unknown command '%s' (try 'ljmemprof "
	    "--help')\n", cmd);
    return MP_EXIT_ERROR;
  }
  fputs(text, out);
  return MP_EXIT_OK;
}

/* -- Options -------------------------------------------------------------- */

/* If argv[*i] is option name (long, or short if given), store its value
** (from "--name=value" or the next argument) in *val. Returns 1 if it
** matched, 0 if not, -1 if the value is missing (after printing so). */
static int opt_value(const char *cmd, int argc, char **argv, int *i,
		     const char *name, const char *shortname, const char **val)
{
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (!strncmp(a, name, n) && a[n] == '=') { *val = a + n + 1; return 1; }
  if (strcmp(a, name) && !(shortname && !strcmp(a, shortname))) return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "ljmemprof %s: option '%s' needs an argument "
	    "(see 'ljmemprof %s --help')\n", cmd, a, cmd);
    return -1;
  }
  *val = argv[++*i];
  return 1;
}

int mp_cli_report_opt(const char *cmd, int argc, char **argv, int *i,
		      mp_cli_opts *o)
{
  const char *a = argv[*i], *v, *name;
  int m;
  if (!strcmp(a, "--leak-only")) { o->rep.leak_only = 1; return MP_OPT_TAKEN; }
  if (!strcmp(a, "--human-readable") || !strcmp(a, "-H")) {
    o->rep.human = 1;
    return MP_OPT_TAKEN;
  }
  if ((m = opt_value(cmd, argc, argv, i, name = "--format", NULL, &v))) {
    if (m < 0) return MP_OPT_ERROR;
    if (!strcmp(v, "json")) o->json = 1;
    else if (!strcmp(v, "text")) o->json = 0;
    else goto bad;
    return MP_OPT_TAKEN;
  }
  if ((m = opt_value(cmd, argc, argv, i, name = "--sort", NULL, &v))) {
    if (m < 0) return MP_OPT_ERROR;
    if (!strcmp(v, "bytes")) o->rep.sort = MP_SORT_BYTES;
    else if (!strcmp(v, "count")) o->rep.sort = MP_SORT_COUNT;
    else goto bad;
    return MP_OPT_TAKEN;
  }
  if ((m = opt_value(cmd, argc, argv, i, name = "--top", NULL, &v))) {
    char *end;
    unsigned long long n;
    if (m < 0) return MP_OPT_ERROR;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (!*v || *end || errno || *v == '-') goto bad;
    o->rep.top = n;
    return MP_OPT_TAKEN;
  }
  return MP_OPT_NONE;
bad:
  fprintf(stderr, "ljmemprof %s: bad value '%s' for option '%s' (see "
	  "'ljmemprof %s --help')\n", cmd, v, name, cmd);
  return MP_OPT_ERROR;
}

/* Complain about an unknown option; returns the exit status. */
static int unknown_opt(const char *cmd, const char *a)
{
  fprintf(stderr, "ljmemprof %s: unknown option '%s' (see 'ljmemprof %s "
	  "--help')\n", cmd, a, cmd);
  return MP_EXIT_ERROR;
}

/* Parse "[options] FILE" for report, info and events into *o and *path;
** returns -1 to go on, else an exit status (help printed, or error). */
static int parse_file_args(const char *cmd, int argc, char **argv,
			   mp_cli_opts *o, const char **path, int report_opts)
{
  int i, dashdash = 0;
  *path = NULL;
  for (i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!dashdash && a[0] == '-' && a[1]) {
      int r;
      if (!strcmp(a, "--")) { dashdash = 1; continue; }
      if (!strcmp(a, "-h") || !strcmp(a, "--help")) return help(cmd, stdout);
      if (report_opts) {
	r = mp_cli_report_opt(cmd, argc, argv, &i, o);
	if (r == MP_OPT_ERROR) return MP_EXIT_ERROR;
	if (r == MP_OPT_TAKEN) continue;
      } else if (!strcmp(cmd, "info") &&
		 (!strncmp(a, "--format", 8))) {
	const char *v;
	int m = opt_value(cmd, argc, argv, &i, "--format", NULL, &v);
	if (m < 0) return MP_EXIT_ERROR;
	if (m > 0) {
	  if (!strcmp(v, "json") || !strcmp(v, "text")) {
	    o->json = v[0] == 'j';
	    continue;
	  }
	  fprintf(stderr, "ljmemprof %s: bad value '%s' for option "
		  "'--format' (see 'ljmemprof %s --help')\n", cmd, v, cmd);
	  return MP_EXIT_ERROR;
	}
      }
      return unknown_opt(cmd, a);
    }
    if (*path) {
      fprintf(stderr, "ljmemprof %s: one FILE expected, got '%s' and '%s' "
	      "(see 'ljmemprof %s --help')\n", cmd, *path, a, cmd);
      return MP_EXIT_ERROR;
    }
    *path = a;
  }
  if (!*path) {
    fprintf(stderr, "ljmemprof %s: missing FILE (see 'ljmemprof %s "
	    "--help')\n", cmd, cmd);
    return MP_EXIT_ERROR;
  }
  return -1;
}

/* -- Reading -------------------------------------------------------------- */

/* mp_profile's progress callback: drop mapped pages already read. */
static void release_pages(void *ctx, size_t off)
{
  mp_file_release((mp_file *)ctx, off);
}

/* Open and aggregate path into *p (and *f, which must outlive *p). Returns
** MP_EXIT_OK, MP_EXIT_TRUNCATED (after warning) or MP_EXIT_ERROR (after
** the error line; *f and *p are then freed). */
static int read_profile(const char *path, mp_file *f, mp_profile *p)
{
  int rc;
  mp_profile_init(p);
  if (mp_file_open(f, path) < 0) {
    fprintf(stderr, "ljmemprof: %s: %s\n", path, strerror(errno));
    return MP_EXIT_ERROR;
  }
  p->consumed = release_pages;
  p->ctx = f;
  rc = mp_profile_read(p, f->data, f->len);
  if (rc == MP_END) return MP_EXIT_OK;
  if (rc == MP_ERR_TRUNC) {
    fprintf(stderr, "ljmemprof: %s: warning: data ends at byte %zu before "
	    "the end of the profile (expected %s); reporting what came "
	    "before\n", path, p->r.err_offset, p->r.err);
    return MP_EXIT_TRUNCATED;
  }
  fprintf(stderr, "ljmemprof: %s: %s at byte %zu: expected %s\n", path,
	  rc == MP_ERR_NOMEM ? "out of memory" : "bad data", p->r.err_offset,
	  p->r.err);
  mp_profile_free(p);
  mp_file_close(f);
  return MP_EXIT_ERROR;
}

/* Flush stdout; a failure (disk full, closed pipe) is an error. */
static int finish_output(int status)
{
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "ljmemprof: standard output: %s\n", strerror(errno));
    return MP_EXIT_ERROR;
  }
  return status;
}

int mp_cli_report_file(const char *path, const mp_cli_opts *o)
{
  mp_file f;
  mp_profile p;
  mp_report rep;
  int status = read_profile(path, &f, &p), rc;
  if (status == MP_EXIT_ERROR) return status;
  if (mp_report_build(&rep, &p, &o->rep) < 0) {
    fprintf(stderr, "ljmemprof: %s: out of memory for the report\n", path);
    status = MP_EXIT_ERROR;
  } else {
    rc = o->json ? mp_render_json(stdout, &rep, &o->rep, path) :
		   mp_render_text(stdout, &rep, &o->rep);
    if (rc < 0 && !ferror(stdout)) {
      fprintf(stderr, "ljmemprof: %s: out of memory for the report\n", path);
      status = MP_EXIT_ERROR;
    }
    mp_report_free(&rep);
  }
  mp_profile_free(&p);
  mp_file_close(&f);
  return finish_output(status);
}

/* -- report, info --------------------------------------------------------- */

static int cmd_report(int argc, char **argv)
{
  mp_cli_opts o;
  const char *path;
  int rc;
  memset(&o, 0, sizeof(o));
  if ((rc = parse_file_args("report", argc, argv, &o, &path, 1)) >= 0)
    return rc;
  return mp_cli_report_file(path, &o);
}

static int cmd_info(int argc, char **argv)
{
  mp_cli_opts o;
  mp_file f;
  mp_profile p;
  const char *path;
  uint64_t nsym[MP_SRC_N], total = 0, hdr = 0, nev;
  int rc, k;
  memset(&o, 0, sizeof(o));
  if ((rc = parse_file_args("info", argc, argv, &o, &path, 0)) >= 0)
    return rc;
  if ((rc = read_profile(path, &f, &p)) == MP_EXIT_ERROR) return rc;
  for (k = 0; k < MP_SRC_N; k++) {
    nsym[k] = p.nsym[0][k] + p.nsym[1][k];
    total += nsym[k];
    hdr += p.nsym[0][k];
  }
  nev = p.nev[MP_AEV_ALLOC] + p.nev[MP_AEV_REALLOC] + p.nev[MP_AEV_FREE];
  if (o.json) {
    fputs("{\"file\":\"", stdout);
    {
      const char *s;	/* Escape the path minimally for JSON. */
      for (s = path; *s; s++)
	if (*s == '"' || *s == '\\') printf("\\%c", *s);
	else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
	else putchar(*s);
    }
    printf("\",\"size\":%zu,\"versions\":{\"symtab\":%d,\"events\":%d},"
	   "\"complete\":%s", p.len, p.r.ljs_version, p.r.ljm_version,
	   rc == MP_EXIT_OK ? "true" : "false");
    if (rc != MP_EXIT_OK) printf(",\"truncated_at\":%zu", p.r.err_offset);
    printf(",\"events\":{\"alloc\":%llu,\"realloc\":%llu,\"free\":%llu}",
	   (unsigned long long)p.nev[MP_AEV_ALLOC],
	   (unsigned long long)p.nev[MP_AEV_REALLOC],
	   (unsigned long long)p.nev[MP_AEV_FREE]);
    printf(",\"symbols\":{\"lua\":%llu,\"cfunc\":%llu,\"trace\":%llu,"
	   "\"in_header\":%llu,\"in_stream\":%llu}",
	   (unsigned long long)nsym[MP_SRC_LFUNC >> MP_SRC_SHIFT],
	   (unsigned long long)nsym[MP_SRC_CFUNC >> MP_SRC_SHIFT],
	   (unsigned long long)nsym[MP_SRC_TRACE >> MP_SRC_SHIFT],
	   (unsigned long long)hdr,
	   (unsigned long long)(total - hdr));
    printf(",\"sources\":%u,\"alloc_bytes\":%llu,\"free_bytes\":%llu,"
	   "\"net_bytes\":%lld,\"peak_net_bytes\":%lld,\"live_blocks\":%zu,"
	   "\"live_bytes\":%llu}\n", p.nsite,
	   (unsigned long long)p.alloc_bytes, (unsigned long long)p.free_bytes,
	   (long long)(int64_t)p.net, (long long)p.peak, p.heap.count,
	   (unsigned long long)p.heap.bytes);
  } else {
    printf("file:       %s (%zu bytes)\n", path, p.len);
    printf("format:     memprof, symtab version %d, events version %d\n",
	   p.r.ljs_version, p.r.ljm_version);
    if (rc == MP_EXIT_OK) printf("complete:   yes\n");
    else printf("complete:   no, data ends at byte %zu (expected %s)\n",
		p.r.err_offset, p.r.err);
    printf("events:     %llu (alloc %llu, realloc %llu, free %llu)\n",
	   (unsigned long long)nev, (unsigned long long)p.nev[MP_AEV_ALLOC],
	   (unsigned long long)p.nev[MP_AEV_REALLOC],
	   (unsigned long long)p.nev[MP_AEV_FREE]);
    printf("symbols:    %llu (", (unsigned long long)total);
    for (k = MP_SRC_LFUNC; k <= MP_SRC_TRACE; k += 1 << MP_SRC_SHIFT)
      printf("%s%s %llu", k != MP_SRC_LFUNC ? ", " : "", mp_src_name(k),
	     (unsigned long long)nsym[k >> MP_SRC_SHIFT]);
    printf("); %llu in the symtab, %llu in the event stream\n",
	   (unsigned long long)hdr, (unsigned long long)(total - hdr));
    printf("sources:    %u\n", p.nsite);
    printf("allocated:  %lluB (new sizes of alloc and realloc events)\n",
	   (unsigned long long)p.alloc_bytes);
    printf("freed:      %lluB (old sizes of realloc and free events)\n",
	   (unsigned long long)p.free_bytes);
    printf("net:        %+lldB, peak %+lldB\n", (long long)(int64_t)p.net,
	   (long long)p.peak);
    printf("live:       %zu blocks, %lluB allocated within the profile and "
	   "not freed\n", p.heap.count, (unsigned long long)p.heap.bytes);
  }
  mp_profile_free(&p);
  mp_file_close(&f);
  return finish_output(rc);
}

/* -- events --------------------------------------------------------------- */

/* Print s as a JSON string. */
static void json_str(FILE *out, const char *s, size_t n)
{
  size_t i;
  fputc('"', out);
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c < 0x20) fprintf(out, "\\u%04x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

/* Print the location fields of an event. */
static void json_loc(FILE *out, const mp_symtab *t, const mp_item *it)
{
  char label[512];
  uint32_t i;
  mp_symtab_label(t, it, label, sizeof(label));
  fprintf(out, "\"source\":\"%s\",\"label\":", mp_src_name(it->src));
  json_str(out, label, strlen(label));
  switch (it->src) {
  case MP_SRC_LFUNC:
    i = mp_symtab_find(t, MP_SRC_LFUNC, it->id);
    fprintf(out, ",\"line\":%llu,\"chunk\":", (unsigned long long)it->line);
    if (i) json_str(out, t->sym[i].name, t->sym[i].name_len);
    else fputs("null", out);
    break;
  case MP_SRC_CFUNC:
    i = mp_symtab_find(t, MP_SRC_CFUNC, it->id);
    fputs(",\"name\":", out);
    if (i) json_str(out, t->sym[i].name, t->sym[i].name_len);
    else fputs("null", out);
    break;
  case MP_SRC_TRACE:
    i = mp_symtab_find(t, MP_SRC_TRACE, it->id);
    fprintf(out, ",\"trace\":%llu", (unsigned long long)it->id);
    if (i && t->sym[i].start) {
      const mp_sym *p = &t->sym[t->sym[i].start];
      fprintf(out, ",\"start_line\":%llu,\"start_chunk\":",
	      (unsigned long long)t->sym[i].line);
      json_str(out, p->name, p->name_len);
    }
    break;
  }
}

/* Bytes read between two releases of the mapped pages (mp_file_release):
** without them the whole file would stay in the process's RSS. */
#define EVENTS_RELEASE	((size_t)8 << 20)

static int cmd_events(int argc, char **argv)
{
  mp_cli_opts o;
  const char *path;
  mp_file f;
  mp_reader r;
  mp_item it;
  mp_symtab t;
  size_t mark = EVENTS_RELEASE;
  int rc;
  FILE *out = stdout;
  memset(&o, 0, sizeof(o));
  if ((rc = parse_file_args("events", argc, argv, &o, &path, 0)) >= 0)
    return rc;
  if (mp_file_open(&f, path) < 0) {
    fprintf(stderr, "ljmemprof: %s: %s\n", path, strerror(errno));
    return MP_EXIT_ERROR;
  }
  mp_symtab_init(&t);
  rc = mp_reader_init(&r, f.data, f.len);
  while (rc == MP_OK && (rc = mp_reader_next(&r, &it)) == MP_OK) {
    if (it.offset >= mark) {	/* Keep RSS small: drop pages read. */
      mp_file_release(&f, it.offset);
      mark = it.offset + EVENTS_RELEASE;
    }
    if (it.kind == MP_AEV_SYMTAB) { mp_symtab_add(&t, &it); continue; }
    fprintf(out, "{\"event\":\"%s\",", mp_kind_name(it.kind));
    json_loc(out, &t, &it);
    fprintf(out, ",\"oaddr\":%llu,\"osize\":%llu,\"naddr\":%llu,"
	    "\"nsize\":%llu}\n",
	    (unsigned long long)it.oaddr, (unsigned long long)it.osize,
	    (unsigned long long)it.naddr, (unsigned long long)it.nsize);
  }
  fprintf(out, "{\"complete\":%s}\n", rc == MP_END ? "true" : "false");
  if (rc != MP_END)
    fprintf(stderr, "ljmemprof: %s: %s at byte %zu: expected %s\n", path,
	    rc == MP_ERR_TRUNC ? "truncated" : "bad data", r.err_offset,
	    r.err);
  mp_symtab_free(&t);
  mp_file_close(&f);
  return finish_output(rc == MP_END ? MP_EXIT_OK :
		       rc == MP_ERR_TRUNC ? MP_EXIT_TRUNCATED : MP_EXIT_ERROR);
}

/* -- Main ----------------------------------------------------------------- */

int main(int argc, char **argv)
{
  const char *cmd = argc > 1 ? argv[1] : NULL;
  if (!cmd) {
    fputs("usage: ljmemprof run|report|info|events ... (see 'ljmemprof "
	  "--help')\n", stderr);
    return MP_EXIT_ERROR;
  }
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
    return help(NULL, stdout);
  if (!strcmp(cmd, "help"))
    return help(argc > 2 ? argv[2] : NULL, stdout);
  if (!strcmp(cmd, "report")) return cmd_report(argc - 2, argv + 2);
  if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
  if (!strcmp(cmd, "events")) return cmd_events(argc - 2, argv + 2);
  if (!strcmp(cmd, "run")) return mp_cli_run(argc - 2, argv + 2);
  fprintf(stderr, "ljmemprof: unknown command '%s' (see 'ljmemprof "
	  "--help')\n", cmd);
  return MP_EXIT_ERROR;
}
