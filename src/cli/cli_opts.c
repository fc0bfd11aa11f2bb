/*
** cli_opts.c: options shared by the commands. An unknown option, a missing
** or bad value is an error that names the option and points to --help.
*/

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/mp_cli.h"

int mp_cli_opt_value(const char *cmd, int argc, char **argv, int *i,
		     const char *name, const char *shortname,
		     const char **val)
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

/* Say that v is not a value of option name, which takes what (NULL: a
** number); returns MP_OPT_ERROR. */
static int bad_value(const char *cmd, const char *name, const char *v,
		     const char *what)
{
  fprintf(stderr, "ljmemprof %s: bad value '%s' for option '%s' (%s; see "
	  "'ljmemprof %s --help')\n", cmd, v, name, what ? what : "a number",
	  cmd);
  return MP_OPT_ERROR;
}

/* The names of the formats, or of the metrics, into buf: "a, b or c". */
static const char *names_of(char *buf, size_t size, const char *const *v,
			    size_t stride, size_t n)
{
  size_t i, at = 0;
  buf[0] = '\0';
  for (i = 0; i < n; i++) {
    const char *x = *(const char *const *)((const char *)v + i * stride);
    int k = snprintf(buf + at, size - at, "%s%s", i == 0 ? "" :
		     i + 1 == n ? " or " : ", ", x);
    if (k < 0 || (size_t)k >= size - at) break;
    at += (size_t)k;
  }
  return buf;
}

int mp_cli_report_opt(const char *cmd, int argc, char **argv, int *i,
		      mp_cli_opts *o)
{
  const char *a = argv[*i], *v;
  int m;
  if (!strcmp(a, "--leak-only")) {
    o->render.leak_only = 1;
    return MP_OPT_TAKEN;
  }
  if (!strcmp(a, "--human-readable") || !strcmp(a, "-H")) {
    o->render.human = 1;
    return MP_OPT_TAKEN;
  }
  if (!strcmp(a, "--peak")) {
    o->render.peak = 1;
    o->want |= MP_WANT_PEAK;
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_count(cmd, argc, argv, i, "--temporary",
			    MP_TEMP_WINDOW, &o->window))) {
    if (m < 0) return MP_OPT_ERROR;
    if (!o->window) {
      bad_value(cmd, "--temporary", "0", "a number of events above 0");
      return MP_OPT_ERROR;
    }
    o->render.temp = 1;
    o->want |= MP_WANT_TEMP;
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--format", NULL, &v))) {
    if (m < 0) return MP_OPT_ERROR;
    if (!(o->format = mp_renderer_find(v))) {
      char b[128];
      size_t n = 0;
      while (mp_renderers[n].name) n++;
      return bad_value(cmd, "--format", v,
		       names_of(b, sizeof(b), &mp_renderers[0].name,
				sizeof(mp_renderers[0]), n));
    }
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--heap", NULL, &v))) {
    if (m < 0) return MP_OPT_ERROR;
    if (!strcmp(v, "all")) o->heapsel = MP_HEAPSEL_ALL;
    else if (!strcmp(v, "vm")) o->heapsel = MP_HEAPSEL_VM;
    else if (!strcmp(v, "native")) o->heapsel = MP_HEAPSEL_NATIVE;
    else return bad_value(cmd, "--heap", v, "all, vm or native");
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--sort", NULL, &v))) {
    if (m < 0) return MP_OPT_ERROR;
    if (!strcmp(v, "bytes")) o->sort = MP_SORT_BYTES;
    else if (!strcmp(v, "count")) o->sort = MP_SORT_COUNT;
    else return bad_value(cmd, "--sort", v, "bytes or count");
    o->sort_set = 1;
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--metric", NULL, &v))) {
    int x;
    if (m < 0) return MP_OPT_ERROR;
    if ((x = mp_metric_find(v)) < 0) {
      char b[160];
      return bad_value(cmd, "--metric", v,
		       names_of(b, sizeof(b), mp_metric_names,
				sizeof(mp_metric_names[0]), MP_METRIC_N));
    }
    o->render.metric = (mp_metric)x;
    o->metric_set = 1;
    return MP_OPT_TAKEN;
  }
  if (strcmp(cmd, "diff") && (!strcmp(a, "--stacks") ||
			       !strncmp(a, "--stacks=", 9))) {
    fprintf(stderr, "ljmemprof %s: --stacks is run's number of frames to "
	    "record; the call stacks shown per source are "
	    "--stacks-per-source [N] (see 'ljmemprof %s --help')\n", cmd, cmd);
    return MP_OPT_ERROR;
  }
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--accounting", NULL, &v))) {
    if (m < 0) return MP_OPT_ERROR;
    if (!strcmp(v, "live")) o->render.tarantool = 0;
    else if (!strcmp(v, "tarantool")) o->render.tarantool = 1;
    else return bad_value(cmd, "--accounting", v, "live or tarantool");
    o->accounting_set = 1;
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_count(cmd, argc, argv, i, strcmp(cmd, "diff") ?
			    "--stacks-per-source" : "--stacks",
			    o->bare_stacks ? o->bare_stacks : MP_STACKS_VIEW,
			    &o->render.stacks))) {
    if (m < 0) return MP_OPT_ERROR;
    if (!o->render.stacks) o->render.stacks = UINT32_MAX;	/* 0: all. */
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--top", NULL, &v))) {
    char *end;
    unsigned long long n;
    if (m < 0) return MP_OPT_ERROR;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (!*v || *end || errno || *v == '-')
      return bad_value(cmd, "--top", v, "a number of rows, 0 for all");
    o->render.top = n;
    o->top_set = 1;
    return MP_OPT_TAKEN;
  }
  return MP_OPT_NONE;
}

/* Whether s is a decimal number (digits only). */
static int all_digits(const char *s)
{
  if (!*s) return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

int mp_cli_opt_count(const char *cmd, int argc, char **argv, int *i,
		     const char *name, uint32_t def, uint32_t *n)
{
  const char *a = argv[*i], *v = NULL;
  size_t len = strlen(name);
  unsigned long long x;
  if (!strncmp(a, name, len) && a[len] == '=') v = a + len + 1;
  else if (strcmp(a, name)) return 0;
  else if (*i + 1 < argc && all_digits(argv[*i + 1])) v = argv[++*i];
  if (!v) { *n = def; return 1; }
  errno = 0;
  x = strtoull(v, NULL, 10);
  if (!all_digits(v) || errno || x >= UINT32_MAX) {
    bad_value(cmd, name, v, NULL);
    return -1;
  }
  *n = (uint32_t)x;
  return 1;
}

int mp_cli_check_opts(const char *cmd, mp_cli_opts *o)
{
  const mp_renderer *r = o->format ? o->format : &mp_renderers[0];
  const char *out = o->output;
  if (!o->metric_set && o->render.leak_only)
    o->render.metric = MP_METRIC_LEAK_BYTES;
  if (!o->metric_set && o->render.peak)
    o->render.metric = MP_METRIC_PEAK_BYTES;
  if (mp_metric_peak(o->render.metric))
    o->want |= MP_WANT_PEAK;	/* The stacks at the peak. */
  if (r->flags & MP_RF_FULL) {	/* Shows everything itself. */
    o->want |= MP_WANT_PEAK | MP_WANT_TEMP | MP_WANT_TIMELINE;
  } else if (r->flags & MP_RF_STACKS) {
    const char *v = o->render.peak ? "--peak" : o->render.temp ?
		    "--temporary" : o->render.stacks && !o->stacks_run ?
		    "--stacks-per-source" : NULL;	/* run --stacks: records
							   them. */
    if (v) {
      fprintf(stderr, "ljmemprof %s: %s is for the text and json "
	      "formats; %s always shows every stack (see 'ljmemprof %s "
	      "--help')\n", cmd, v, r->name, cmd);
      return MP_EXIT_ERROR;
    }
    o->render.stacks = 0;
  } else if (o->metric_set && !o->render.stacks) {
    fprintf(stderr, "ljmemprof %s: --metric needs --stacks-per-source, or "
	    "the format collapsed, svg or pprof (see 'ljmemprof %s --help')\n",
	    cmd, cmd);
    return MP_EXIT_ERROR;
  }
  if (o->html) o->want |= MP_WANT_PEAK | MP_WANT_TEMP | MP_WANT_TIMELINE;
  if (!o->top_set && r == &mp_renderers[0]) o->render.top = MP_TOP_TEXT;
  if ((r->flags & MP_RF_BINARY) && (!out || !strcmp(out, "-")) &&
      isatty(1)) {
    fprintf(stderr, "ljmemprof %s: the %s format is binary: not written to "
	    "a terminal (give -o FILE, or redirect standard output)\n", cmd,
	    r->name);
    return MP_EXIT_ERROR;
  }
  return 0;
}

int mp_cli_output_opt(const char *cmd, int argc, char **argv, int *i,
		      void *ctx)
{
  mp_cli_opts *o = ctx;
  int m = mp_cli_opt_value(cmd, argc, argv, i, "--output", "-o", &o->output);
  return m < 0 ? MP_OPT_ERROR : m ? MP_OPT_TAKEN : MP_OPT_NONE;
}

int mp_cli_unknown_opt(const char *cmd, const char *opt)
{
  fprintf(stderr, "ljmemprof %s: unknown option '%s' (see 'ljmemprof %s "
	  "--help')\n", cmd, opt, cmd);
  return MP_EXIT_ERROR;
}

/* mp_cli_files_args() without the check of the inputs. */
static int files_args(const char *cmd, int argc, char **argv, mp_cli_opts *o,
		      int (*opt)(const char *cmd, int argc, char **argv,
				 int *i, void *ctx),
		      void *ctx, const char ***paths, int *n)
{
  int i, dashdash = 0;
  *n = 0;
  if (!(*paths = calloc((size_t)argc + 1, sizeof(char *)))) {
    fprintf(stderr, "ljmemprof %s: %s\n", cmd, strerror(ENOMEM));
    return MP_EXIT_ERROR;
  }
  for (i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!dashdash && a[0] == '-' && a[1]) {
      int r = MP_OPT_NONE;
      if (!strcmp(a, "--")) { dashdash = 1; continue; }
      if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
	free(*paths);
	*paths = NULL;
	return mp_cli_help(cmd, stdout);
      }
      if (o) r = mp_cli_report_opt(cmd, argc, argv, &i, o);
      if (r == MP_OPT_NONE && opt) r = opt(cmd, argc, argv, &i, ctx);
      if (r == MP_OPT_TAKEN) continue;
      free(*paths);
      *paths = NULL;
      if (r == MP_OPT_ERROR) return MP_EXIT_ERROR;
      return mp_cli_unknown_opt(cmd, a);
    }
    (*paths)[(*n)++] = a;
  }
  if (!*n) {
    fprintf(stderr, "ljmemprof %s: missing FILE (see 'ljmemprof %s "
	    "--help')\n", cmd, cmd);
    free(*paths);
    *paths = NULL;
    return MP_EXIT_ERROR;
  }
  return -1;
}

int mp_cli_files_args(const char *cmd, int argc, char **argv,
		      mp_cli_opts *o,
		      int (*opt)(const char *cmd, int argc, char **argv,
				 int *i, void *ctx),
		      void *ctx, const char ***paths, int *n)
{
  int rc = files_args(cmd, argc, argv, o, opt, ctx, paths, n);
  if (rc >= 0) return rc;
  if (mp_cli_check_inputs(cmd, *paths, *n)) {
    free(*paths);
    *paths = NULL;
    return MP_EXIT_ERROR;
  }
  return -1;
}

int mp_cli_file_args(const char *cmd, int argc, char **argv, mp_cli_opts *o,
		     int (*opt)(const char *cmd, int argc, char **argv,
				int *i, void *ctx),
		     void *ctx, const char **path)
{
  const char **paths;
  int n, rc = files_args(cmd, argc, argv, o, opt, ctx, &paths, &n);
  if (rc >= 0) return rc;
  *path = paths[0];
  if (n > 1) {
    fprintf(stderr, "ljmemprof %s: one FILE expected, got '%s' and '%s' "
	    "(see 'ljmemprof %s --help')\n", cmd, paths[0], paths[1], cmd);
    rc = MP_EXIT_ERROR;
  }
  free(paths);
  return rc;
}

void mp_cli_list_formats(FILE *out)
{
  const mp_renderer *r;
  for (r = mp_renderers; r->name; r++)
    fprintf(out, "    %-10s %s\n", r->name, r->summary);
}
