/*
** cmd_diff.c: `ljmemprof diff BASE NEW`: what changed between two
** profiles, per source and per call stack.
*/

#include <stdlib.h>
#include <string.h>

#include "analysis/mp_diff.h"
#include "cli/mp_cli.h"
#include "format/mp_snap.h"

const char mp_help_diff[] =
"NAME\n"
"    ljmemprof diff - what changed in memory between two profiles\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof diff [OPTIONS] BASE NEW\n"
"\n"
"DESCRIPTION\n"
"    Reads two profiles, BASE and NEW (two runs of a program, before and\n"
"    after a change), and prints, for every source whose costs differ,\n"
"    what it allocated (bytes and events of allocations and\n"
"    reallocations), freed (of reallocations and frees) and still held\n"
"    at the end (bytes and blocks) in each, and the change (NEW minus\n"
"    BASE), the largest change of the metric first:\n"
"\n"
"        SOURCE:\n"
"                allocated        B0 -> B1 (+D) in N0 -> N1 events (+K)\n"
"                freed            ...\n"
"                held at the end  ...\n"
"\n"
"    then TOTAL and how many sources changed. Absolute chunk paths are\n"
"    shown relative to the working directory, or to the directory they\n"
"    share (said under the header); relative ones (./utils.lua) as\n"
"    recorded, and beside them the paths shortened to a shared directory\n"
"    are marked .../ (\".../\" is DIR, under the header), so that two\n"
"    files never read alike. Held at the end:\n"
"    the blocks it allocated or resized last that were still live, as\n"
"    in report's HEAP SUMMARY (--accounting is refused). A source of one\n"
"    profile is the source of the other when it names the same code: a\n"
"    Lua line by its chunk, function and line; a C function by its name\n"
"    and the offset in it; a trace by where it started (trace numbers\n"
"    and addresses are per process, so traces are labelled `TRACE started\n"
"    at ...`). With --stacks, the call stacks whose own cost changed\n"
"    most. BASE and NEW must be two files (not one by two names or\n"
"    links, nor - twice: status 2). Given two heap snapshots (mp.snapshot),\n"
"    it compares them as `ljmemprof snapshot --diff BASE NEW` does, with\n"
"    that command's options (see 'ljmemprof snapshot --help').\n"
"\n"
"    The formats: text (above); json (the same, with each source's\n"
"    details and signed changes); collapsed, one line per call stack\n"
"    with two values, `frame;frame;... BASE NEW`, which flamegraph.pl\n"
"    draws as a differential flame graph (the output of its\n"
"    difffolded.pl); html, one page with the table and both flame\n"
"    graphs (docs/REPORT.md).\n"
"\n"
"OPTIONS\n"
"    --format text|json|collapsed|html\n"
"        The format (default: text).\n"
"    --metric alloc-bytes|alloc-count|leak-bytes|leak-count|peak-bytes|peak-count\n"
"        The change that orders the sources and the stacks, and the value\n"
"        of collapsed stacks (default alloc-bytes; leak-bytes with\n"
"        --leak-only). peak-*: the blocks held at each profile's peak.\n"
"    --leak-only\n"
"        Order by the bytes held at the end (as --metric leak-bytes).\n"
"    --peak\n"
"        Show what each source held at each profile's peak too (a\n"
"        source whose peak alone differs is then a changed one; without\n"
"        it, a source changed when what it allocated, freed or held at\n"
"        the end did, in every format).\n"
"    --top N\n"
"        At most N sources (0: all, the default), then how many more\n"
"        changed.\n"
"    --stacks [N]\n"
"        Text and json: also the N call stacks whose cost changed most\n"
"        (10 without N; 0: all).\n"
"    -H, --human-readable\n"
"        Sizes in B, KiB, MiB, GiB (text).\n"
"    -o FILE, --output FILE\n"
"        Write to FILE (created or truncated) instead of standard\n"
"        output; not to BASE or NEW (refused, by any name or link:\n"
"        status 2). An existing FILE is truncated only once both are\n"
"        read: an error before leaves it as it was.\n"
"    -h, --help\n"
"        Print this manual.\n"
"\n"
"EXIT STATUS\n"
"    0 both profiles complete; 3 one was cut short or damaged (compared\n"
"    up to the cut, with a warning); 2 usage error, unreadable file, not\n"
"    a profile.\n"
"\n"
"EXAMPLES\n"
"    ljmemprof diff before.ljm after.ljm\n"
"    ljmemprof diff --leak-only --top 10 -H before.ljm after.ljm\n"
"    ljmemprof diff --format collapsed before.ljm after.ljm | flamegraph.pl >d.svg\n"
"    ljmemprof diff --format html -o diff.html before.ljm after.ljm\n";

#define DIFF_STACKS	10	/* Stacks of a bare --stacks. */

/* Check the options of diff; 0, or MP_EXIT_ERROR after saying why. */
static int check(mp_cli_opts *o, const mp_renderer *r, int n)
{
  if (n != 2) {
    fprintf(stderr, "ljmemprof diff: two profiles expected, BASE and NEW, "
	    "got %d (see 'ljmemprof diff --help')\n", n);
    return MP_EXIT_ERROR;
  }
  if (!r->diff) {
    fprintf(stderr, "ljmemprof diff: the %s format has no diff (text, "
	    "json, collapsed or html)\n", r->name);
    return MP_EXIT_ERROR;
  }
  if (o->sort_set) {
    fprintf(stderr, "ljmemprof diff: --sort is for report; diff orders by "
	    "the change of --metric (see 'ljmemprof diff --help')\n");
    return MP_EXIT_ERROR;
  }
  if (o->accounting_set) {
    fprintf(stderr, "ljmemprof diff: --accounting is for report and run; "
	    "diff compares the blocks live at the end by the source that "
	    "allocated or last resized them (see 'ljmemprof diff --help')\n");
    return MP_EXIT_ERROR;
  }
  if (o->render.temp) {
    fprintf(stderr, "ljmemprof diff: --temporary is for report (see "
	    "'ljmemprof diff --help')\n");
    return MP_EXIT_ERROR;
  }
  if ((r->flags & MP_RF_STACKS) && o->render.stacks) {
    fprintf(stderr, "ljmemprof diff: --stacks is for the text and json "
	    "formats; %s always shows every stack\n", r->name);
    return MP_EXIT_ERROR;
  }
  if (!o->metric_set && o->render.leak_only)
    o->render.metric = MP_METRIC_LEAK_BYTES;
  if (o->render.peak || mp_metric_peak(o->render.metric) ||
      (r->flags & MP_RF_FULL))
    o->want |= MP_WANT_PEAK;
  return 0;
}

/* Whether an operand of argv (not an option, nor the FILE of -o) is a
** heap snapshot: a regular file that begins with its magic. */
static int snapshot_operand(int argc, char **argv)
{
  int i;
  for (i = 0; i < argc; i++) {
    char b[3];
    FILE *f;
    size_t got;
    if (!strcmp(argv[i], "--")) continue;
    if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
      i++;
      continue;
    }
    if (argv[i][0] == '-' || !(f = fopen(argv[i], "rb"))) continue;
    got = fread(b, 1, 3, f);
    fclose(f);
    if (got == 3 && !memcmp(b, MP_SNAP_MAGIC, 3)) return 1;
  }
  return 0;
}

int mp_cmd_diff(int argc, char **argv)
{
  mp_cli_opts o;
  const char **paths = NULL;
  const mp_renderer *r;
  mp_profile p[2];
  mp_diff d;
  mp_render_opts ro;
  mp_cli_out out;
  int rc, n, st[2], status;
  if (snapshot_operand(argc, argv)) return mp_cli_snapshot_diff(argc, argv);
  memset(&o, 0, sizeof(o));
  o.bare_stacks = DIFF_STACKS;
  if ((rc = mp_cli_files_args("diff", argc, argv, &o, mp_cli_output_opt, &o,
			      &paths, &n)) >= 0)
    return rc;
  r = o.format ? o.format : &mp_renderers[0];
  if (check(&o, r, n) ||
      mp_cli_check_output("diff", "-o", o.output, paths, n)) {
    free(paths);
    return MP_EXIT_ERROR;
  }
  if (mp_cli_out_open(&out, o.output) < 0) {
    free(paths);
    return MP_EXIT_ERROR;
  }
  mp_cli_read_two(paths, 2, p, &o, st);
  if (st[0] == MP_EXIT_ERROR || st[1] == MP_EXIT_ERROR) {
    if (st[0] != MP_EXIT_ERROR) mp_profile_free(&p[0]);
    if (st[1] != MP_EXIT_ERROR) mp_profile_free(&p[1]);
    status = MP_EXIT_ERROR;
    goto out;
  }
  status = st[0] > st[1] ? st[0] : st[1];
  if ((o.render.stacks || (r->flags & (MP_RF_STACKS | MP_RF_FULL))) &&
      !p[0].stacks != !p[1].stacks)
    fprintf(stderr, "ljmemprof diff: warning: %s was recorded %s call "
	    "stacks, %s %s them: no stack of one is a stack of the other, "
	    "compare the sources\n", paths[0], p[0].stacks ? "with" :
	    "without", paths[1], p[1].stacks ? "with" : "without");
  rc = mp_diff_build(&d, &p[0], &p[1], o.render.metric, o.sort,
		     o.render.stacks || (r->flags & (MP_RF_STACKS |
						     MP_RF_FULL)),
		     o.render.peak || mp_metric_peak(o.render.metric));
  mp_profile_free(&p[0]);
  mp_profile_free(&p[1]);
  if (rc < 0) {
    fprintf(stderr, "ljmemprof: %s: out of memory for the diff\n", paths[1]);
    status = MP_EXIT_ERROR;
    goto out;
  }
  d.file[0] = paths[0];
  d.file[1] = paths[1];
  d.cut[0] = st[0] == MP_EXIT_TRUNCATED;
  d.cut[1] = st[1] == MP_EXIT_TRUNCATED;
  ro = o.render;
  ro.file = paths[1];
  ro.files = paths;
  ro.nfiles = 2;
  if (mp_cli_out_begin(&out) < 0) {
    mp_diff_free(&d);
    free(paths);
    return MP_EXIT_ERROR;
  }
  if (r->diff(out.f, &d, &ro) < 0 && !ferror(out.f)) {
    fprintf(stderr, "ljmemprof: %s: out of memory for the diff\n", paths[1]);
    status = MP_EXIT_ERROR;
  }
  mp_diff_free(&d);
out:
  if (status == MP_EXIT_ERROR) mp_cli_out_drop(&out);
  free(paths);
  return mp_cli_out_close(&out, status);
}
