/*
** cmd_report.c: `ljmemprof report`: the report of a recorded profile.
*/

#include <stdlib.h>
#include <string.h>

#include "cli/mp_cli.h"

const char mp_help_report[] =
"NAME\n"
"    ljmemprof report - print where a LuaJIT program allocated memory\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof report [OPTIONS] FILE\n"
"    ljmemprof report --format collapsed|svg|pprof [--metric M] [-o OUT] FILE\n"
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
"    trace during the run is a different source; a line of code run by\n"
"    several prototypes (a chunk loaded again and again) is one.\n"
"\n"
"    CALL STACKS (with --stacks)\n"
"        For each source, the heaviest call stacks that end there, one\n"
"        frame a line, innermost first, each with its cost. A profile\n"
"        recorded without stacks says so in one line.\n"
"\n"
"    The formats collapsed, svg and pprof show the call stacks of the\n"
"    profile (one frame each if it was recorded without stacks) for other\n"
"    tools: collapsed stacks for flamegraph.pl, inferno and speedscope\n"
"    (frames escaped as in text, and ';' and '\\' as \\x3b and \\x5c); an\n"
"    interactive flame graph to open in a browser; a gzip'd pprof profile\n"
"    for `go tool pprof` and Pyroscope (docs/REPORT.md).\n"
"\n"
"OPTIONS\n"
"    --format FORMAT\n"
"        One of the formats listed under FORMATS (default: text).\n"
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
"    --stacks [N]\n"
"        Text and json: add the CALL STACKS view, N stacks per source (3\n"
"        if N is not given, 0: all); --top limits the sources.\n"
"    --metric alloc-bytes|alloc-count|leak-bytes|leak-count\n"
"        What the stack views and formats weigh: bytes or number of the\n"
"        allocations and reallocations, or of the blocks still live at the\n"
"        end (leaks). Default alloc-bytes, or leak-bytes with --leak-only.\n"
"        For pprof, the sample type shown first. Text and json take it\n"
"        only with --stacks.\n"
"    -o FILE, --output FILE\n"
"        Write the report to FILE (created or truncated) instead of\n"
"        standard output. pprof, a binary format, is never written to a\n"
"        terminal.\n"
"    -h, --help\n"
"        Print this manual.\n"
"\n"
"EXIT STATUS\n"
"    0 complete; 3 cut short or damaged (bad bytes, absurd sizes): reported\n"
"    up to the cut or the damage, with a warning; 2 usage error, unreadable\n"
"    file, not a profile (one error line: file, byte offset, what was\n"
"    expected).\n"
"\n"
"EXAMPLES\n"
"    ljmemprof report memprof.bin\n"
"    ljmemprof report --leak-only -H --top 10 memprof.bin\n"
"    ljmemprof report --format json memprof.bin | jq '.heap_summary[0]'\n"
"    ljmemprof report --stacks 5 --top 10 memprof.bin\n"
"    ljmemprof report --format collapsed memprof.bin | flamegraph.pl >fg.svg\n"
"    ljmemprof report --format svg --metric leak-bytes -o leaks.svg memprof.bin\n"
"    ljmemprof report --format pprof -o mem.pb.gz memprof.bin\n"
"    go tool pprof -top mem.pb.gz\n";

/* -o FILE, --output FILE. */
static int output_opt(const char *cmd, int argc, char **argv, int *i,
		      void *ctx)
{
  mp_cli_opts *o = ctx;
  int m = mp_cli_opt_value(cmd, argc, argv, i, "--output", "-o", &o->output);
  return m < 0 ? MP_OPT_ERROR : m ? MP_OPT_TAKEN : MP_OPT_NONE;
}

int mp_cmd_report(int argc, char **argv)
{
  mp_cli_opts o;
  const char **paths;
  int rc, n;
  memset(&o, 0, sizeof(o));
  if ((rc = mp_cli_files_args("report", argc, argv, &o, output_opt, &o,
			      &paths, &n)) >= 0)
    return rc;
  if (mp_cli_check_opts("report", &o)) rc = MP_EXIT_ERROR;
  else rc = mp_cli_report_files(paths, n, &o);
  free(paths);
  return rc;
}
