/*
** cmd_check.c: `ljmemprof check`: whether a profile stays within limits
** on what it leaked and on its peak, for test suites (the busted helper,
** Test::Nginx, a CI script).
**
** The leak rule is pytest-memray's limit_leaks: a block made within the
** recording (allocated, or resized last) that is still live at its end.
** Record with a full collection before the end (stop{collect = true}, or
** `run`) and what is left is what the program still reaches. The VM's own
** blocks (INTERNAL: the string table, JIT traces, grown stacks) are not a
** leak of the program's and are left out unless --all is given: they are
** kept alive by the VM, and nothing the code under test can free (a note
** under the verdict says what they hold, so that the figure is read as
** what it is).
**
** The verdict is one line on standard output; over a limit, the sources
** and call stacks that made the excess follow, in the layout of the
** report's CALL STACKS view, so a test's failure message names the lines.
*/

#include <stdlib.h>
#include <string.h>

#include "cli/mp_cli.h"
#include "util/mp_size.h"

const char mp_help_check[] =
"NAME\n"
"    ljmemprof check - fail when a profile leaked or peaked past a limit\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof check [--max-leak SIZE] [--max-peak SIZE] [--all] [--top N]\n"
"                    [-H] FILE\n"
"\n"
"DESCRIPTION\n"
"    Reads FILE, a memprof profile (\"-\" reads standard input), and checks\n"
"    two figures against limits:\n"
"\n"
"    leaked   the blocks allocated (or resized last) within the profile\n"
"             that are still live at its end. Record with a full\n"
"             collection before the end (mp.stop{collect = true},\n"
"             `ljmemprof run`): then what is left is what the program\n"
"             still reaches. The VM's own blocks (INTERNAL: the string\n"
"             table, JIT traces, grown Lua stacks) are not counted\n"
"             unless --all is given (a note says what they hold).\n"
"    peak     the most bytes allocated within the profile and not yet\n"
"             freed at one moment (the PEAK of `report --peak`).\n"
"\n"
"    Prints one line, `ok: ...` or `over the limit: ...`, with both\n"
"    figures and their limits, then `note: not counted as leaked:\n"
"    INTERNAL's ...` when the VM's own blocks hold something and --all\n"
"    is not given (with the leaked figure, info's live), `note: of the\n"
"    leaked, ...` when blocks made while modules loaded (under require,\n"
"    a package loader or a C module's luaopen_) are among the leaked\n"
"    (package.loaded keeps them by design: the verdict is the same;\n"
"    allow for them in --max-leak, or start the profiler from Lua\n"
"    after the modules are required; not printed with --max-leak\n"
"    none), `note: ...` if\n"
"    the profile notes no full collection before its end (what is\n"
"    counted as leaked may be garbage never collected), and if\n"
"    recording stopped early (the size limit, a write error: the\n"
"    figures cover only what was recorded).\n"
"    When a figure is over its limit, the\n"
"    sources that made it follow with their call stacks (as the CALL\n"
"    STACKS view of `report`: bytes not freed, or bytes at the peak),\n"
"    heaviest first; in a profile recorded without call stacks, the\n"
"    sources alone, a line each (SOURCES). A sampled profile is checked\n"
"    on its estimates.\n"
"\n"
"OPTIONS\n"
"    --max-leak SIZE\n"
"        Most bytes that may be leaked (default 0). SIZE is digits with\n"
"        an optional K, M or G (powers of 1024); `none` checks nothing.\n"
"    --max-peak SIZE\n"
"        Most bytes the peak may reach (default none: not checked).\n"
"    --all\n"
"        Count the VM's own blocks (INTERNAL) as leaked too.\n"
"    --top N\n"
"        Show at most N sources over a limit (default 5, 0: all), each\n"
"        with at most 3 stacks.\n"
"    -H, --human-readable\n"
"        Sizes in B, KiB, MiB, GiB.\n"
"    -h, --help\n"
"        Print this manual.\n"
"\n"
"EXIT STATUS\n"
"    0 within the limits; 1 over a limit; 3 cut short or damaged, within\n"
"    the limits up to the cut (a warning says where); 2 usage error,\n"
"    unreadable file, not a profile.\n"
"\n"
"EXAMPLES\n"
"    ljmemprof check test.ljm\n"
"    ljmemprof check --max-leak 4K --max-peak 10M -H test.ljm\n";

#define NO_LIMIT	(-1LL)
#define STACKS_SHOWN	3	/* Stacks per source over a limit. */

/* check's options. */
typedef struct check_opts {
  long long max_leak, max_peak;	/* Bytes, or NO_LIMIT. */
  int all;			/* Count INTERNAL blocks as leaked. */
  int human;
  uint64_t top;
} check_opts;

/* A SIZE option into *lim; MP_OPT_*. */
static int size_opt(const char *cmd, int argc, char **argv, int *i,
		    const char *name, long long *lim, int *m)
{
  const char *v;
  if (!(*m = mp_cli_opt_value(cmd, argc, argv, i, name, NULL, &v)))
    return MP_OPT_NONE;
  if (*m < 0) return MP_OPT_ERROR;
  if (!strcmp(v, "none")) {
    *lim = NO_LIMIT;
  } else if ((*lim = mp_parse_size(v)) < 0) {
    fprintf(stderr, "ljmemprof %s: %s %s: a size expected (digits with an "
	    "optional K, M or G, or none)\n", cmd, name, v);
    return MP_OPT_ERROR;
  }
  return MP_OPT_TAKEN;
}

/* check's own options, for mp_cli_file_args(). */
static int check_opt(const char *cmd, int argc, char **argv, int *i,
		     void *ctx)
{
  check_opts *c = ctx;
  const char *v;
  char *end;
  int m, r;
  if ((r = size_opt(cmd, argc, argv, i, "--max-leak", &c->max_leak, &m)) ||
      (r = size_opt(cmd, argc, argv, i, "--max-peak", &c->max_peak, &m)))
    return r;
  if (!strcmp(argv[*i], "--all")) {
    c->all = 1;
    return MP_OPT_TAKEN;
  }
  if (!strcmp(argv[*i], "-H") || !strcmp(argv[*i], "--human-readable")) {
    c->human = 1;
    return MP_OPT_TAKEN;
  }
  if (!(m = mp_cli_opt_value(cmd, argc, argv, i, "--top", NULL, &v)))
    return MP_OPT_NONE;
  if (m < 0) return MP_OPT_ERROR;
  c->top = strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || *end) {
    fprintf(stderr, "ljmemprof %s: --top %s: a number expected\n", cmd, v);
    return MP_OPT_ERROR;
  }
  return MP_OPT_TAKEN;
}

/* "LIMIT" or "no limit" into buf. */
static const char *limit(char *buf, size_t size, long long lim, int human)
{
  char b[64];
  if (lim == NO_LIMIT) return "no limit";
  snprintf(buf, size, "limit %s",
	   mp_fmt_bytes(b, sizeof(b), (uint64_t)lim, human));
  return buf;
}

/* Whether node x is a frame of module loading: require, a package loader
** (package.loaders[N]) or a C module's luaopen_ function. */
static int loading_frame(const mp_tnode *x)
{
  return x->kind != MP_FK_LUA && x->label &&
	 (!strcmp(x->label, "require") ||
	  !strncmp(x->label, "package.loaders[", 16) ||
	  !strncmp(x->label, "luaopen_", 8));
}

/* Into *c, what the blocks still live that were made while a module
** loaded hold: those of a node at or under a loading frame, of its
** sources alone in a profile without stacks (then the lines of a module's
** main chunk are not known to be loading: the figure is a floor). */
static void loading_held(const mp_stacktree *t, mp_cost *c)
{
  uint32_t i, j;
  memset(c, 0, sizeof(*c));
  for (i = 1; i < t->n; i++) {
    if (!t->node[i].live.n || t->node[i].kind == MP_FK_INTERNAL) continue;
    for (j = i; j && !loading_frame(&t->node[j]); j = t->node[j].parent)
      ;
    if (j) mp_cost_add(c, &t->node[i].live);
  }
}

/* Print the sources and stacks of tree t under metric m: the excess. */
static int show(const mp_sections *sec, const mp_stacktree *t, mp_metric m,
		const check_opts *c)
{
  mp_render_opts ro;
  uint8_t *used = calloc((size_t)sec->p->syms.names.nalias + 1, 1);
  int rc;
  if (!used) return -1;
  memset(&ro, 0, sizeof(ro));
  ro.top = c->top;
  ro.human = c->human;
  ro.metric = m;
  ro.stacks = STACKS_SHOWN;
  rc = t->stacks ? mp_render_text_stacks(stdout, sec, t, &ro, used)
		 : mp_render_text_sources(stdout, sec, t, &ro, used);
  if (rc == 0) mp_render_text_aliases(stdout, &sec->p->syms.names, used);
  free(used);
  return rc;
}

int mp_cmd_check(int argc, char **argv)
{
  check_opts c = { 0, NO_LIMIT, 0, 0, 5 };
  mp_cli_opts o;
  mp_profile p;
  mp_sections sec;
  mp_stacktree t;
  const char *path;
  uint64_t leak_n = 0, leak = 0;
  mp_cost vm = { 0, 0, 0 };	/* What INTERNAL holds, left out. */
  mp_cost mods;			/* What module loading made, kept. */
  uint32_t i;
  int rc, over_leak, over_peak;
  char b1[64], b2[64], b3[64], b4[64], note[512];
  if ((rc = mp_cli_file_args("check", argc, argv, NULL, check_opt, &c,
			     &path)) >= 0)
    return rc;
  memset(&o, 0, sizeof(o));
  o.want = MP_WANT_PEAK;
  if ((rc = mp_cli_read_all(&path, 1, &p, &o)) == MP_EXIT_ERROR) return rc;
  if (mp_sections_build(&sec, &p, MP_SORT_BYTES) < 0) {
    mp_profile_free(&p);
    fprintf(stderr, "ljmemprof check: %s: out of memory\n", path);
    return MP_EXIT_ERROR;
  }
  if (mp_stacktree_build(&t, &sec) < 0) {
    mp_sections_free(&sec);
    mp_profile_free(&p);
    fprintf(stderr, "ljmemprof check: %s: out of memory\n", path);
    return MP_EXIT_ERROR;
  }
  /* The VM's own blocks weigh nothing unless asked for: the views below
     then leave them out too. */
  for (i = 1; i < t.n; i++) {
    mp_tnode *x = &t.node[i];
    if (x->kind == MP_FK_INTERNAL && !c.all) {
      mp_cost_add(&vm, &x->live);
      memset(&x->live, 0, sizeof(x->live));
    }
    leak_n += x->live.n;
    leak += x->live.plus;
  }
  over_leak = c.max_leak != NO_LIMIT && leak > (uint64_t)c.max_leak;
  over_peak = c.max_peak != NO_LIMIT && p.peak_bytes > (uint64_t)c.max_peak;
  printf("%s: leaked %s in %llu block%s (%s), peak %s (%s)\n",
	 over_leak || over_peak ? "over the limit" : "ok",
	 mp_fmt_bytes(b1, sizeof(b1), leak, c.human),
	 (unsigned long long)leak_n, leak_n == 1 ? "" : "s",
	 limit(b2, sizeof(b2), c.max_leak, c.human),
	 mp_fmt_bytes(b3, sizeof(b3), p.peak_bytes, c.human),
	 limit(b4, sizeof(b4), c.max_peak, c.human));
  /* What the figure leaves out, said where it is read. */
  if (p.rc != MP_END) printf("note: %s\n", mp_note_cut(note, sizeof(note), &p));
  if (vm.n)
    printf("note: not counted as leaked: INTERNAL's %s in %llu block%s, the "
	   "VM's own (the string table, JIT traces, grown Lua stacks; --all "
	   "counts them)\n", mp_fmt_bytes(b1, sizeof(b1), vm.plus, c.human),
	   (unsigned long long)vm.n, vm.n == 1 ? "" : "s");
  loading_held(&t, &mods);
  if (mods.n && leak && c.max_leak != NO_LIMIT)
    printf("note: of the leaked, %s in %llu block%s (%.1f%%) %s made while "
	   "modules loaded (under require, a package loader or a luaopen_ "
	   "function%s): what package.loaded keeps by design; allow for them "
	   "in --max-leak, or start the profiler from Lua after the modules "
	   "are required\n", mp_fmt_bytes(b1, sizeof(b1), mods.plus, c.human),
	   (unsigned long long)mods.n, mods.n == 1 ? "" : "s",
	   100.0 * (double)mods.plus / (double)leak, mods.n == 1 ? "was" : "were",
	   t.stacks ? "" : "; without call stacks, only their own sources "
	   "are known");
  if (!p.collect && !p.settled) printf("note: %s\n", mp_note_nogc(&p));
  if (p.closefin)
    printf("note: %s\n", mp_note_closefin(note, sizeof(note), p.closefin));
  /* A recording that stopped early (its size limit, a write error) holds
  ** only part of the run: the figures are of that part. */
  if (p.stopped[0])
    printf("note: recording stopped early (%s): the figures cover only "
	   "what was recorded before\n", p.stopped);
  if ((over_leak && show(&sec, &t, MP_METRIC_LEAK_BYTES, &c) < 0) ||
      (over_peak && show(&sec, &t, MP_METRIC_PEAK_BYTES, &c) < 0)) {
    fprintf(stderr, "ljmemprof check: %s: out of memory\n", path);
    rc = MP_EXIT_ERROR;
  } else {
    rc = over_leak || over_peak ? 1 : rc;
  }
  mp_stacktree_free(&t);
  mp_sections_free(&sec);
  mp_profile_free(&p);
  return mp_cli_finish_output(rc);
}
