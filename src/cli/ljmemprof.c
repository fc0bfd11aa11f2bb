/*
** ljmemprof: profile LuaJIT programs and report where they allocate.
**
**   ljmemprof run [OPTIONS] SCRIPT [ARGS...]
**   ljmemprof run [OPTIONS] -- LUAJIT [LUAJIT OPTIONS] SCRIPT [ARGS...]
**   ljmemprof report [OPTIONS] FILE...
**   ljmemprof diff [OPTIONS] BASE NEW
**   ljmemprof info [--format text|json] FILE
**   ljmemprof events FILE
**   ljmemprof snapshot [OPTIONS] FILE
**
** The command table below and the manuals in cmd_*.c are the reference;
** docs/REPORT.md has worked examples.
*/

#include <stdio.h>
#include <string.h>

#include "ljmemprof.h"
#include "cli/mp_cli.h"

/* -- Commands ------------------------------------------------------------- */

static const mp_command commands[] = {
  { "run", "Run a Lua script under luajit with the agent, then print its "
    "report.", mp_help_run, mp_cmd_run },
  { "report", "Print the report of a recorded profile.", mp_help_report,
    mp_cmd_report },
  { "diff", "Print what changed between two profiles, by source.",
    mp_help_diff, mp_cmd_diff },
  { "check", "Fail when a profile leaked or peaked past a limit (tests).",
    mp_help_check, mp_cmd_check },
  { "info", "Summarise a profile: versions, counts, bytes, completeness.",
    mp_help_info, mp_cmd_info },
  { "events", "Print every event, resolved, as one JSON object per line.",
    mp_help_events, mp_cmd_events },
  { "snapshot", "What is live in a heap snapshot, and what holds it.",
    mp_help_snapshot, mp_cmd_snapshot },
  { NULL, NULL, NULL, NULL }
};

/* The command called name, or NULL. */
static const mp_command *command(const char *name)
{
  const mp_command *c;
  for (c = commands; c->name; c++)
    if (!strcmp(c->name, name)) return c;
  return NULL;
}

/* -- Manual --------------------------------------------------------------- */

static const char help_head[] =
"NAME\n"
"    ljmemprof - memory profiler for LuaJIT: record, report, inspect\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof run [-o FILE] [--luajit PATH] [REPORT OPTIONS] SCRIPT [ARGS...]\n"
"    ljmemprof run [-o FILE] [REPORT OPTIONS] -- LUAJIT [OPTIONS] SCRIPT ...\n"
"    ljmemprof report [REPORT OPTIONS] FILE...\n"
"    ljmemprof diff [OPTIONS] BASE NEW    (two profiles, or two snapshots)\n"
"    ljmemprof info [--format text|json] FILE\n"
"    ljmemprof check [--max-leak SIZE] [--max-peak SIZE] FILE\n"
"    ljmemprof events FILE\n"
"    ljmemprof snapshot [OPTIONS] FILE\n"
"    ljmemprof help [COMMAND]\n"
"    ljmemprof --version\n"
"\n"
"DESCRIPTION\n"
"    ljmemprof tells which Lua lines, builtins, C functions and JIT traces of\n"
"    a LuaJIT program allocate memory, how much, and what they did not free.\n"
"    Profiles are recorded by its agent, the Lua module `ljmemprof`, which\n"
"    wraps the allocator of an unmodified LuaJIT; they are in the memprof\n"
"    format of Tarantool's LuaJIT, whose profiles ljmemprof reads as well\n"
"    (format versions 1 to 3).\n"
"\n";

static const char help_tail[] =
"EXIT STATUS\n"
"    0   The profile is complete and was reported.\n"
"    2   Usage error, unreadable file, not a profile, or out of memory:\n"
"        one line on standard error names the file, the byte offset and\n"
"        what was expected there; nothing is reported.\n"
"    3   The profile ends early (the profiled process was killed before it\n"
"        finished the file) or is damaged (bytes that are not a profile,\n"
"        sizes that add up to 2^63 bytes or more): everything before the\n"
"        cut or the damage is reported, and a warning on standard error\n"
"        says where and what.\n"
"    `run` exits with the script's status instead when that is not 0;\n"
"    `check` exits with 1 when the profile is over a limit.\n"
"\n"
"SEE ALSO\n"
"    ljmemprof run --help, ljmemprof report --help, ljmemprof info --help,\n"
"    docs/REPORT.md (the report and its JSON), docs/FORMAT.md (the bytes).\n";

int mp_cli_help(const char *cmd, FILE *out)
{
  const mp_command *c;
  if (!cmd) {
    fputs(help_head, out);
    fputs("COMMANDS\n", out);
    for (c = commands; c->name; c++)
      fprintf(out, "    %-8s %s\n", c->name, c->summary);
    fprintf(out, "    %-8s %s\n\n", "help",
	    "Print this manual, or a command's (same as COMMAND --help).");
    fputs(help_tail, out);
    return MP_EXIT_OK;
  }
  if (!(c = command(cmd))) {
    fprintf(stderr, "ljmemprof: unknown command '%s' (try 'ljmemprof "
	    "--help')\n", cmd);
    return MP_EXIT_ERROR;
  }
  fputs(c->help, out);
  /* diff's manual names its own formats: svg and pprof have no diff. */
  if (c->run == mp_cmd_report || c->run == mp_cmd_run) {
    fputs("\nFORMATS\n", out);
    mp_cli_list_formats(out);
  }
  return MP_EXIT_OK;
}

/* -- Main ----------------------------------------------------------------- */

int main(int argc, char **argv)
{
  const char *name = argc > 1 ? argv[1] : NULL;
  const mp_command *c;
  if (!name) {
    fputs("usage: ljmemprof run|report|diff|info|events ... (see 'ljmemprof "
	  "--help')\n", stderr);
    return MP_EXIT_ERROR;
  }
  if (!strcmp(name, "-h") || !strcmp(name, "--help"))
    return mp_cli_help(NULL, stdout);
  if (!strcmp(name, "--version")) {
    if (argc > 2) {
      fprintf(stderr, "ljmemprof: --version takes no arguments\n");
      return MP_EXIT_ERROR;
    }
    puts("ljmemprof " LJMP_VERSION);
    return MP_EXIT_OK;
  }
  if (!strcmp(name, "help")) {
    if (argc > 3) {
      fprintf(stderr, "ljmemprof: help takes one command at most, not "
	      "'%s' (see 'ljmemprof --help')\n", argv[3]);
      return MP_EXIT_ERROR;
    }
    return mp_cli_help(argc > 2 ? argv[2] : NULL, stdout);
  }
  if ((c = command(name))) return c->run(argc - 2, argv + 2);
  fprintf(stderr, "ljmemprof: unknown command '%s' (see 'ljmemprof "
	  "--help')\n", name);
  return MP_EXIT_ERROR;
}
