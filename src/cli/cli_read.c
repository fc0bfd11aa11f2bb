/*
** cli_read.c: read a profile for a command: open it, run the profile
** pass with a progress line on long reads, and say in one line what went
** wrong, if anything.
**
** The progress line: reading a large profile takes seconds (60 million
** events a second here), so on a terminal, once a read has taken more
** than PROGRESS_DELAY seconds, stderr shows bytes, events and the rate,
** updated four times a second and erased when the read ends. Nothing is
** shown when stderr is not a terminal. LJMEMPROF_PROGRESS changes that:
** "never", "always" (also without a terminal, from the start, one line an
** update: for tests and logs), or the delay in seconds.
*/

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/mp_merge.h"
#include "cli/mp_cli.h"
#include "render/mp_text.h"

#define PROGRESS_DELAY	1.5	/* Seconds before the line appears. */
#define PROGRESS_EVERY	0.25	/* Seconds between updates. */

/* -- Names on a terminal ------------------------------------------------ */

#define NAME_RING	4	/* Names one message may hold. */
#define NAME_SIZE	(4 * PATH_MAX)	/* Bytes of an escaped name, with the
					   mark of a cut. */

const char *mp_cli_name(const char *s)
{
  static __thread char ring[NAME_RING][NAME_SIZE];
  static __thread unsigned next;
  static const char cut[] = "[...]";
  char *b = ring[next++ % NAME_RING];
  FILE *f;
  long n;
  if (!s) return "(null)";
  if (!(f = fmemopen(b, NAME_SIZE - sizeof(cut), "w"))) return s;
  setvbuf(f, NULL, _IONBF, 0);
  mp_text_put(f, s, strlen(s), 0);
  n = ftell(f);
  fclose(f);
  if (n < 0) return s;
  if ((size_t)n >= NAME_SIZE - sizeof(cut) - 1) {
    memcpy(b + NAME_SIZE - sizeof(cut) - 1, cut, sizeof(cut));
  } else {
    b[n] = '\0';
  }
  return b;
}

/* -- Progress ------------------------------------------------------------- */

typedef struct progress {
  const char *path;
  uint64_t (*events)(const void *ctx);
  const void *ctx;
  double start, last, delay;
  int tty;		/* Rewrite one line (else a line per update). */
  int shown;		/* Something was printed. */
} progress;

static progress prog;	/* One read at a time. */

/* Seconds on a monotonic clock. */
static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* mp_input's progress hook: print the line when it is time. */
static void progress_step(void *ctx, size_t offset)
{
  progress *g = ctx;
  double t = now(), secs = t - g->start;
  uint64_t n;
  if (secs < g->delay || (g->shown && t - g->last < PROGRESS_EVERY)) return;
  n = g->events(g->ctx);
  fprintf(stderr, "%sljmemprof: reading %s: %.1f MB, %.1fM events, "
	  "%.1fM events/s%s", g->tty ? "\r" : "", mp_cli_name(g->path),
	  (double)offset / 1e6, (double)n / 1e6,
	  secs > 0 ? (double)n / 1e6 / secs : 0.0, g->tty ? "\033[K" : "\n");
  fflush(stderr);
  g->shown = 1;
  g->last = t;
}

void mp_cli_progress(mp_input *in, const char *path,
		     uint64_t (*events)(const void *ctx), const void *ctx)
{
  const char *mode = getenv("LJMEMPROF_PROGRESS");
  int tty = isatty(2), on = tty;
  double delay = PROGRESS_DELAY;
  if (mode && *mode && strcmp(mode, "auto")) {
    char *end;
    if (!strcmp(mode, "never")) {
      on = 0;
    } else if (!strcmp(mode, "always")) {
      on = 1;
      delay = 0;
    } else {
      delay = strtod(mode, &end);
      if (*end || delay < 0) {
	fprintf(stderr, "ljmemprof: LJMEMPROF_PROGRESS: bad value '%s' "
		"(never, always, auto or seconds); using auto\n", mode);
	delay = PROGRESS_DELAY;
      }
    }
  }
  in->progress = NULL;
  if (!on) return;
  memset(&prog, 0, sizeof(prog));
  prog.path = path;
  prog.events = events;
  prog.ctx = ctx;
  prog.delay = delay;
  prog.tty = tty;
  prog.start = now();
  in->progress = progress_step;
  in->ctx = &prog;
}

void mp_cli_progress_end(mp_input *in)
{
  if (in->progress && prog.shown && prog.tty) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  in->progress = NULL;
}

/* -- Reading -------------------------------------------------------------- */

int mp_cli_outcome(const char *path, int rc, const mp_reader *r,
		   const mp_input *in)
{
  if (rc == MP_END) return MP_EXIT_OK;
  path = mp_cli_name(path);	/* Only said from here on. */
  if (rc == MP_ERR_NOMEM) {
    fprintf(stderr, "ljmemprof: %s: out of memory at byte %zu: expected "
	    "%s\n", path, r->err_offset, r->err);
    return MP_EXIT_ERROR;
  }
  /* Its first bytes are not a profile's; but a profile whose file was cut
  ** under the read (even to nothing) ends early, as a profile cut short. */
  if (!mp_reader_is_profile(r) && !(in->shrunk && rc == MP_ERR_TRUNC)) {
    if (r->snapshot)
      fprintf(stderr, "ljmemprof: %s: a heap snapshot, not a memprof "
	      "profile: read it with 'ljmemprof snapshot %s'\n", path, path);
    else if (rc == MP_ERR_IO)
      fprintf(stderr, "ljmemprof: %s: %s\n", path, strerror(in->err));
    else if (rc == MP_ERR_TRUNC && r->err_offset == 0)
      fprintf(stderr, "ljmemprof: %s: not a memprof profile: it is empty\n",
	      path);
    else
      fprintf(stderr, "ljmemprof: %s: not a memprof profile: %s at byte "
	      "%zu: expected %s\n", path, rc == MP_ERR_TRUNC ? "data ends" :
	      "bad data", r->err_offset, r->err);
    return MP_EXIT_ERROR;
  }
  if (rc == MP_ERR_DATA && r->ljm_version && !r->headers) {
    /* The event stream's prologue names a version, or a revision of the
    ** extension, that this reader does not know: nothing of it can be
    ** read, and it is not damaged. */
    fprintf(stderr, "ljmemprof: %s: unknown version of the event stream "
	    "at byte %zu: expected %s\n", path, r->err_offset, r->err);
    return MP_EXIT_ERROR;
  }
  if (rc == MP_ERR_TRUNC)
    fprintf(stderr, "ljmemprof: %s: warning: data ends at byte %zu before "
	    "the end of the profile (expected %s); reporting what came "
	    "before\n", path, r->err_offset, r->err);
  else if (rc == MP_ERR_IO)
    fprintf(stderr, "ljmemprof: %s: warning: read error at byte %zu (%s); "
	    "reporting what came before\n", path, r->err_offset,
	    strerror(in->err));
  else
    fprintf(stderr, "ljmemprof: %s: warning: bad data at byte %zu (expected "
	    "%s); reporting what came before\n", path, r->err_offset, r->err);
  return MP_EXIT_TRUNCATED;
}

void mp_cli_shrunk(const char *path, const mp_input *in)
{
  if (in->shrunk)
    fprintf(stderr, "ljmemprof: %s: warning: the file shrank from %zu to "
	    "%zu bytes while it was read (another process truncated it)\n",
	    mp_cli_name(path), in->shrunk, in->len);
}

/* Events aggregated so far, for the progress line. */
static uint64_t profile_events(const void *ctx)
{
  return mp_profile_events(ctx);
}

/* What the profile pass starts from. */
typedef struct pass {
  mp_profile *p;
  const mp_cli_opts *o;
} pass;

/* Start *p afresh as o asks. */
static void profile_start(mp_profile *p, const mp_cli_opts *o)
{
  mp_profile_init(p);
  if (o) {
    p->want = o->want;
    p->heapsel = o->heapsel;
    if (o->window) p->window = o->window;
    p->on_snap = o->on_snap;
    p->snap_ctx = o->snap_ctx;
  }
}

/* The profile pass, from nothing (mp_input_guard() may run it again). */
static int read_pass(mp_input *in, void *ctx)
{
  pass *a = ctx;
  profile_start(a->p, a->o);
  return mp_profile_read_input(a->p, in);
}

/* mp_cli_read(), with the progress line or not. */
static int read_in(const char *path, mp_input *in, mp_profile *p,
		   const mp_cli_opts *o, int progress)
{
  int rc, status;
  pass a = { p, o };
  profile_start(p, o);
  if (mp_input_open(in, path) < 0) {
    fprintf(stderr, "ljmemprof: %s: %s\n", mp_cli_name(path),
	    strerror(errno));
    mp_profile_free(p);
    return MP_EXIT_ERROR;
  }
  if (progress) mp_cli_progress(in, path, profile_events, p);
  rc = mp_input_guard(in, read_pass, &a);
  if (progress) mp_cli_progress_end(in);
  mp_cli_shrunk(path, in);
  status = mp_cli_outcome(path, rc, &p->r, in);
  if (status == MP_EXIT_OK && in->shrunk)
    status = MP_EXIT_TRUNCATED;	/* Not the file it was. */
  if (status != MP_EXIT_ERROR && p->overflow) {
    fprintf(stderr, "ljmemprof: %s: warning: the sizes in the profile add "
	    "up to 2^63 bytes or more (absurd data): byte totals and "
	    "differences are not exact\n", mp_cli_name(path));
    status = MP_EXIT_TRUNCATED;
  }
  if (status != MP_EXIT_ERROR && o && o->heapsel == MP_HEAPSEL_NATIVE &&
      !p->native) {	/* Every format would be empty: say why instead. */
    fprintf(stderr, "ljmemprof: %s: --heap native: the profile has no "
	    "native memory (it was not recorded with native = true: "
	    "mp.start{native = true}, or 'ljmemprof run --native')\n",
	    mp_cli_name(path));
    status = MP_EXIT_ERROR;
  }
  if (status == MP_EXIT_ERROR) {
    mp_profile_free(p);
    mp_input_close(in);
  }
  return status;
}

int mp_cli_read(const char *path, mp_input *in, mp_profile *p,
		const mp_cli_opts *o)
{
  return read_in(path, in, p, o, 1);
}

/* Read path into *p and close the input; progress: show the progress
** line (one read at a time may). The status of mp_cli_read(). */
static int read_closed(const char *path, mp_profile *p, const mp_cli_opts *o,
		       int progress)
{
  mp_input in;
  int st = read_in(path, &in, p, o, progress);
  if (st != MP_EXIT_ERROR) mp_input_close(&in);
  return st;
}

/* A read in a thread of its own. */
typedef struct job {
  const char *path;
  mp_profile *p;
  const mp_cli_opts *o;
  int status;
} job;

static void *job_run(void *arg)
{
  job *j = arg;
  j->status = read_closed(j->path, j->p, j->o, 0);
  return NULL;
}

void mp_cli_read_two(const char *const *paths, int n, mp_profile *p,
		     const mp_cli_opts *o, int *st)
{
  job j;
  pthread_t t;
  int threaded;
  j.path = paths[n - 1];
  j.p = &p[n - 1];
  j.o = o;
  threaded = n > 1 && pthread_create(&t, NULL, job_run, &j) == 0;
  st[0] = read_closed(paths[0], &p[0], o, 1);
  if (n < 2) return;
  if (threaded) pthread_join(t, NULL);
  else job_run(&j);
  st[1] = j.status;
}

int mp_cli_finish_output(int status)
{
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "ljmemprof: standard output: %s\n", strerror(errno));
    return MP_EXIT_ERROR;
  }
  return status;
}

int mp_cli_read_all(const char *const *paths, int n, mp_profile *p,
		    const mp_cli_opts *o)
{
  mp_cli_opts each;
  mp_profile s[2];
  int status = MP_EXIT_OK, st[2], i, k, m, bad = 0;
  if (n == 1) return read_closed(paths[0], p, o, 1);
  if (o) each = *o;
  else memset(&each, 0, sizeof(each));
  each.want &= ~(unsigned)MP_WANT_TIMELINE;	/* A merge has no time. */
  mp_merge_init(p);
  for (i = 0; i < n; i += m) {	/* Two at a time: the cores read both. */
    m = n - i < 2 ? n - i : 2;
    mp_cli_read_two(paths + i, m, s, &each, st);
    for (k = 0; k < m; k++) {
      if (st[k] == MP_EXIT_ERROR) {
	bad = 1;
	continue;
      }
      if (!bad && mp_merge_add(p, &s[k], NULL) < 0) {
	fprintf(stderr, "ljmemprof: %s: out of memory for the merged "
		"profile\n", mp_cli_name(paths[i + k]));
	bad = 1;
      }
      mp_profile_free(&s[k]);
      if (st[k] > status) status = st[k];
    }
    if (bad) {
      mp_profile_free(p);
      return MP_EXIT_ERROR;
    }
  }
  return status;
}

/* -- Same files ----------------------------------------------------------- */

/* stat() an input path ("-": standard input); 0, or -1. */
static int stat_input(const char *path, struct stat *st)
{
  return strcmp(path, "-") ? stat(path, st) : fstat(0, st);
}

/* Whether two stat() results are one file: the same device and inode. */
static int same_id(const struct stat *a, const struct stat *b)
{
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int mp_cli_same_file(const char *output, const char *input)
{
  struct stat so, si;
  if (!output || !strcmp(output, "-") || stat(output, &so) < 0) return 0;
  return stat_input(input, &si) == 0 && same_id(&so, &si);
}

int mp_cli_same_fd(const char *output, int fd, int regular)
{
  struct stat so, sf;
  if (!output || !strcmp(output, "-") || stat(output, &so) < 0 ||
      fstat(fd, &sf) < 0)
    return 0;
  return same_id(&so, &sf) && (!regular || S_ISREG(sf.st_mode));
}

/* The name of input path in an error line. */
static const char *input_name(const char *path)
{
  return strcmp(path, "-") ? mp_cli_name(path) : "standard input ('-')";
}

int mp_cli_check_inputs(const char *cmd, const char *const *paths, int n)
{
  struct stat *st;
  int i, j, *ok;
  if (n < 2) return 0;
  st = malloc((size_t)n * sizeof(*st));
  ok = malloc((size_t)n * sizeof(*ok));
  if (!st || !ok) {
    free(st);
    free(ok);
    fprintf(stderr, "ljmemprof %s: %s\n", cmd, strerror(ENOMEM));
    return MP_EXIT_ERROR;
  }
  for (i = 0; i < n; i++) ok[i] = stat_input(paths[i], &st[i]) == 0;
  for (j = 1; j < n; j++)
    for (i = 0; i < j; i++) {
      int dash = !strcmp(paths[i], "-") && !strcmp(paths[j], "-");
      if (!dash && !(ok[i] && ok[j] && same_id(&st[i], &st[j]))) continue;
      if (!strcmp(paths[i], paths[j]))
	fprintf(stderr, "ljmemprof %s: %s is given twice (give each profile "
		"once)\n", cmd, input_name(paths[i]));
      else
	fprintf(stderr, "ljmemprof %s: %s and %s are the same file (give "
		"each profile once)\n", cmd, input_name(paths[i]),
		input_name(paths[j]));
      free(st);
      free(ok);
      return MP_EXIT_ERROR;
    }
  free(st);
  free(ok);
  return 0;
}

int mp_cli_check_output(const char *cmd, const char *opt, const char *output,
			const char *const *paths, int n)
{
  int i;
  for (i = 0; i < n; i++)
    if (mp_cli_same_file(output, paths[i])) {
      fprintf(stderr, "ljmemprof %s: %s %s: is the input profile %s%s (it "
	      "would be overwritten)\n", cmd, opt, mp_cli_name(output),
	      strcmp(paths[i], "-") ? "" : "on ",
	      strcmp(paths[i], "-") ? mp_cli_name(paths[i]) : "standard input");
      return MP_EXIT_ERROR;
    }
  return 0;
}

/* -- Outputs ------------------------------------------------------------ */

int mp_cli_out_open(mp_cli_out *o, const char *path)
{
  int fd;
  memset(o, 0, sizeof(*o));
  o->path = path && strcmp(path, "-") ? path : NULL;
  o->f = stdout;
  if (!o->path) return 0;
  fd = open(o->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0) o->created = 1;
  else if (errno == EEXIST) fd = open(o->path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || !(o->f = fdopen(fd, "wb"))) {
    fprintf(stderr, "ljmemprof: %s: %s\n", mp_cli_name(o->path),
	    strerror(errno));
    if (fd >= 0) close(fd);
    if (o->created) unlink(o->path);
    o->f = NULL;
    return -1;
  }
  return 0;
}

int mp_cli_out_begin(mp_cli_out *o)
{
  struct stat st;
  if (!o->path || !o->f || o->created || o->begun) return 0;
  if (fstat(fileno(o->f), &st) < 0 ||
      (S_ISREG(st.st_mode) && ftruncate(fileno(o->f), 0) < 0)) {
    fprintf(stderr, "ljmemprof: %s: %s\n", mp_cli_name(o->path),
	    strerror(errno));
    fclose(o->f);
    o->f = NULL;
    return -1;
  }
  o->begun = 1;
  return 0;
}

void mp_cli_out_drop(mp_cli_out *o)
{
  struct stat st;
  if (!o->path || !o->f) return;
  if ((o->created || o->begun) && fstat(fileno(o->f), &st) == 0 &&
      S_ISREG(st.st_mode))
    unlink(o->path);
  fclose(o->f);
  o->f = NULL;
}

int mp_cli_out_close(mp_cli_out *o, int status)
{
  int k;
  if (!o->f) return status;
  if (!o->path) return mp_cli_finish_output(status);
  k = ferror(o->f);	/* Before fclose(), which ends the stream. */
  if (fclose(o->f) != 0 || k) {
    fprintf(stderr, "ljmemprof: %s: %s\n", mp_cli_name(o->path),
	    strerror(errno));
    return MP_EXIT_ERROR;
  }
  return status;
}

int mp_cli_report_files(const char *const *paths, int n,
			const mp_cli_opts *o)
{
  mp_cli_out out, html = { NULL, NULL, 0, 0 };
  if (mp_cli_out_open(&out, o->output) < 0) return MP_EXIT_ERROR;
  if (o->html && mp_cli_out_open(&html, o->html) < 0) {
    mp_cli_out_drop(&out);
    return MP_EXIT_ERROR;
  }
  return mp_cli_report_to(paths, n, o, &out, &html);
}

int mp_cli_report_to(const char *const *paths, int n, const mp_cli_opts *o,
		     mp_cli_out *out, mp_cli_out *html)
{
  mp_profile p;
  mp_sections sec;
  mp_render_opts ro = o->render;
  const mp_renderer *r = o->format ? o->format : &mp_renderers[0];
  int status;
  if ((status = mp_cli_read_all(paths, n, &p, o)) == MP_EXIT_ERROR) {
    mp_cli_out_drop(out);
    mp_cli_out_drop(html);
    return status;
  }
  ro.file = paths[0];
  ro.files = paths;
  ro.nfiles = n;
  if (mp_cli_out_begin(out) < 0 || mp_cli_out_begin(html) < 0) {
    mp_cli_out_drop(out);
    mp_cli_out_drop(html);
    mp_profile_free(&p);
    return MP_EXIT_ERROR;
  }
  if (mp_sections_build(&sec, &p, o->sort) < 0) {
    fprintf(stderr, "ljmemprof: %s: out of memory for the report\n",
	    mp_cli_name(paths[0]));
    status = MP_EXIT_ERROR;
  } else {
    if (r->render(out->f, &sec, &ro) < 0 && !ferror(out->f)) {
      fprintf(stderr, "ljmemprof: %s: out of memory for the report\n",
	      mp_cli_name(paths[0]));
      status = MP_EXIT_ERROR;
    }
    if (html->f && mp_renderer_find("html")->render(html->f, &sec, &ro) < 0 &&
	!ferror(html->f)) {
      fprintf(stderr, "ljmemprof: %s: out of memory for the report\n",
	      mp_cli_name(paths[0]));
      status = MP_EXIT_ERROR;
    }
    mp_sections_free(&sec);
  }
  mp_profile_free(&p);
  if (status == MP_EXIT_ERROR) {	/* No half-written file is left. */
    mp_cli_out_drop(html);
    mp_cli_out_drop(out);
    return mp_cli_finish_output(status);
  }
  status = mp_cli_out_close(html, status);
  return mp_cli_out_close(out, status);
}
