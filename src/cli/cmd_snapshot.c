/*
** cmd_snapshot.c: `ljmemprof snapshot`: what is live in a heap snapshot,
** and what holds it.
*/

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/mp_cli.h"
#include "analysis/mp_heapdiff.h"
#include "analysis/mp_heapsnap.h"
#include "analysis/mp_snapjoin.h"
#include "render/mp_heapsnapshot.h"
#include "render/mp_json.h"
#include "render/mp_render.h"
#include "render/mp_text.h"
#include "analysis/mp_sections.h"

const char mp_help_snapshot[] =
"NAME\n"
"    ljmemprof snapshot - what is live in a heap snapshot, and what holds it\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof snapshot [--format text|json|html|heapsnapshot] [--top N]\n"
"                       [--fold N] [--profile PROF] [-o FILE] FILE\n"
"    ljmemprof snapshot --diff [--format text|json] [--top N] [--fold N]\n"
"                       [-o FILE] BASE NEW\n"
"    ljmemprof diff [--format text|json] [--top N] [--fold N] [-o FILE]\n"
"                   BASE NEW\n"
"\n"
"DESCRIPTION\n"
"    Reads a heap snapshot (mp.snapshot(), ljmp_snapshot(); docs/FORMAT.md)\n"
"    and prints: the live objects and bytes, and how they add up to the\n"
"    VM's own count (objects, plus the VM's internal allocations, plus\n"
"    what the walk did not reach: garbage not yet swept); the live total\n"
"    by type; the top retainers by retained size (what would be freed if\n"
"    the object went: itself and every object only it keeps alive), each\n"
"    with its shortest path from a root, leaving out an object that\n"
"    passes 90% or more of it on to a single object it keeps alive; and\n"
"    path classes: objects whose paths are the same once the keys of a\n"
"    container of more than --fold entries are folded to [*] (its string\n"
"    and other object keys are one more class, <key>), with what they\n"
"    retain. References through weak tables retain nothing; what\n"
"    only they reach is counted apart.\n"
"\n"
"    --format html writes one self-contained page of the same numbers as\n"
"    the JSON report (its data is that report): the summary, the types,\n"
"    the top retainers with their paths (with --profile, the lines that\n"
"    made what each holds), the path classes, and the top of the\n"
"    dominator tree, a click opening a node.\n"
"\n"
"    --format heapsnapshot writes it as a Chrome DevTools .heapsnapshot\n"
"    (load it in the Memory panel): an object a node named by its type\n"
"    (a function or prototype with where it was defined), a reference an\n"
"    edge named as in our paths (.items, [3], <upvalue sessions>, <key>),\n"
"    weak references weak; an object's @id comes from its address, so\n"
"    that DevTools' comparison of two snapshots of one process matches\n"
"    the objects they share.\n"
"\n"
"    With --profile PROF, the recording the snapshot was taken in (by\n"
"    mp.stop{snapshot = PATH}, the snapshot option, or mp.snapshot()\n"
"    while recording with stacks, sample or native: its stream marks\n"
"    the snapshot, ljmemprof info lists the marks), each object made\n"
"    within the recording (allocated, or resized last) carries the line\n"
"    that made it, and the report says it both ways: MADE WITHIN THE\n"
"    RECORDING lists the lines by the bytes of what they made that is\n"
"    still live, each with the top retainer holding most of it; then the\n"
"    top retainers with the lines that made what they hold.\n"
"\n"
"    With --diff (or as `ljmemprof diff` given two snapshots), compares\n"
"    BASE and NEW, two snapshots of one process: an object of NEW is the\n"
"    one of BASE at the same address with the same type, else it is new;\n"
"    one of BASE that NEW lacks is gone. Prints the objects and bytes\n"
"    live in each, new, gone and resized; by type; and by path class (in\n"
"    each, with new and gone members), the classes that grew most first:\n"
"    a cache that only gains shows its growth, a list capped at 50 whose\n"
"    entries were replaced shows new and gone members and no growth. An\n"
"    address freed and reused by an object of the same type in between\n"
"    is taken for the same object (a snapshot has no other identity), so\n"
"    new and gone can be fewer than were made and freed (48, not 50).\n"
"\n"
"OPTIONS\n"
"    --format text|json|html|heapsnapshot\n"
"                         Text (default), one JSON object, an HTML page\n"
"                         (not with --diff), or DevTools' .heapsnapshot\n"
"                         (not with --diff).\n"
"    --diff               Compare two snapshots, BASE and NEW.\n"
"    --top N              Retainers and path classes listed (default 10;\n"
"                         0: all).\n"
"    --fold N             Fold the keys of containers of more than N\n"
"                         entries (default 8).\n"
"    --profile PROF       Join the snapshot with the recording PROF that\n"
"                         marked it (not with --diff or --format\n"
"                         heapsnapshot; 2 if PROF has no mark of this\n"
"                         snapshot).\n"
"    -o FILE, --output FILE\n"
"                         Write to FILE instead of standard output (not\n"
"                         to an input: refused, status 2).\n"
"    -h, --help           Print this manual.\n"
"\n"
"EXIT STATUS\n"
"    0 read and reported; 3 a snapshot says it was cut short at its\n"
"    max_size (what it holds is reported); 2 error (not a snapshot,\n"
"    damaged, cannot be read, a memprof profile: read it with report).\n"
"\n"
"EXAMPLES\n"
"    ljmemprof snapshot heap.snap\n"
"    ljmemprof snapshot --format heapsnapshot -o heap.heapsnapshot heap.snap\n"
"    ljmemprof diff before.snap after.snap\n"
"    ljmemprof snapshot --profile app.ljm heap.snap\n"
"    ljmemprof snapshot --format html --profile app.ljm -o heap.html heap.snap\n";

enum { F_TEXT, F_JSON, F_HEAPSNAPSHOT, F_HTML };

typedef struct snap_opts {
  int format;		/* F_*. */
  uint32_t top, fold;
  const char *output;	/* -o FILE, or NULL: standard output. */
  int diff;		/* --diff: two snapshots, BASE and NEW. */
  const char *profile;	/* --profile PROF: the recording to join. */
} snap_opts;

/* The number of option name: MP_OPT_TAKEN, or MP_OPT_ERROR after saying
** that it is bad. */
static int count(const char *cmd, const char *name, const char *v,
		 uint32_t *n)
{
  char *end;
  unsigned long x;
  errno = 0;
  x = strtoul(v, &end, 10);
  if (!*v || *end || errno || x > 1000000 || *v == '-' || *v == '+') {
    fprintf(stderr, "ljmemprof %s: bad value '%s' for option '%s' (a "
	    "number from 0 to 1000000)\n", cmd, v, name);
    return MP_OPT_ERROR;
  }
  *n = (uint32_t)x;
  return MP_OPT_TAKEN;
}

static int snap_opt(const char *cmd, int argc, char **argv, int *i,
		    void *ctx)
{
  snap_opts *o = ctx;
  const char *v;
  int m;
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--format", NULL, &v))) {
    if (m < 0) return MP_OPT_ERROR;
    if (!strcmp(v, "text")) o->format = F_TEXT;
    else if (!strcmp(v, "json")) o->format = F_JSON;
    else if (!strcmp(v, "heapsnapshot")) o->format = F_HEAPSNAPSHOT;
    else if (!strcmp(v, "html")) o->format = F_HTML;
    else {
      fprintf(stderr, "ljmemprof %s: bad value '%s' for option '--format' "
	      "(text, json, html or heapsnapshot; see 'ljmemprof %s --help')\n",
	      cmd, v, cmd);
      return MP_OPT_ERROR;
    }
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--output", "-o", &v))) {
    if (m < 0) return MP_OPT_ERROR;
    o->output = v;
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--profile", NULL, &v))) {
    if (m < 0) return MP_OPT_ERROR;
    o->profile = v;
    return MP_OPT_TAKEN;
  }
  if (!strcmp(argv[*i], "--diff")) {
    o->diff = 1;
    return MP_OPT_TAKEN;
  }
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--top", NULL, &v)))
    return m < 0 ? MP_OPT_ERROR : count(cmd, "--top", v, &o->top);
  if ((m = mp_cli_opt_value(cmd, argc, argv, i, "--fold", NULL, &v)))
    return m < 0 ? MP_OPT_ERROR : count(cmd, "--fold", v, &o->fold);
  return MP_OPT_NONE;
}

/* Read the whole file at path into *data (malloc'd). 0, or -1 with errno. */
static int slurp(const char *path, uint8_t **data, size_t *len)
{
  int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
  size_t cap = 1 << 16, n = 0;
  uint8_t *b = NULL;
  if (fd < 0) return -1;
  for (;;) {
    ssize_t r;
    if (!b || n == cap) {
      uint8_t *q = realloc(b, cap *= 2);
      if (!q) { free(b); errno = ENOMEM; goto fail; }
      b = q;
    }
    r = read(fd, b + n, cap - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      free(b);
      goto fail;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  if (fd) close(fd);
  *data = b;
  *len = n;
  return 0;
fail:
  if (fd) { int e = errno; close(fd); errno = e; }
  return -1;
}

/* What a report shows besides the snapshot's own numbers: the top
** retainers and the path classes, computed before anything is printed so
** that out of memory prints nothing. */
typedef struct snap_view {
  uint32_t *top, n;
  mp_heapclass *cl;
  uint32_t ncl;
} snap_view;

/* Compute the view; 0, or -1 out of memory (nothing to free then). */
static int view_make(const mp_heapsnap *h, const snap_opts *o, snap_view *v)
{
  int n, ncl;
  memset(v, 0, sizeof(*v));
  if (!(v->top = malloc((o->top ? o->top : 1) * sizeof(*v->top)))) return -1;
  if ((n = mp_heapsnap_top(h, v->top, o->top)) < 0 ||
      (ncl = mp_heapsnap_classes(h, o->fold, o->top, &v->cl)) < 0) {
    free(v->top);
    return -1;
  }
  v->n = (uint32_t)n;
  v->ncl = (uint32_t)ncl;
  return 0;
}

static void view_free(snap_view *v)
{
  uint32_t i;
  for (i = 0; i < v->ncl; i++) free(v->cl[i].path);
  free(v->cl);
  free(v->top);
}

static void print_text(FILE *f, const mp_heapsnap *h, const snap_view *v,
		       const snap_opts *o, const char *path)
{
  const mp_snapshot *sn = h->sn;
  const uint32_t *top = v->top, n = v->n;
  const mp_heapclass *cl = v->cl;
  uint32_t i;
  char b1[64], b2[64], b3[64], b4[64], where[2048];
  uint64_t acc = sn->bytes + sn->vmbytes + sn->ubytes;
  fprintf(f, "HEAP SNAPSHOT %s: %llu objects, %s live\n", path,
	 (unsigned long long)sn->objects,
	 mp_fmt_bytes(b1, sizeof(b1), sn->bytes, 0));
  fprintf(f, "  the VM counts %s: objects %s + VM internals %s + not reached "
	 "%s in %llu object%s", mp_fmt_bytes(b1, sizeof(b1), sn->gctotal, 0),
	 mp_fmt_bytes(b2, sizeof(b2), sn->bytes, 0),
	 mp_fmt_bytes(b3, sizeof(b3), sn->vmbytes, 0),
	 mp_fmt_bytes(b4, sizeof(b4), sn->ubytes, 0),
	 (unsigned long long)sn->unreached, sn->unreached == 1 ? "" : "s");
  if (acc == sn->gctotal) fprintf(f, " (exact)\n");
  else fprintf(f, " (%s %s unaccounted)\n", acc < sn->gctotal ? "+" : "-",
	      mp_fmt_bytes(b1, sizeof(b1), acc < sn->gctotal ?
			   sn->gctotal - acc : acc - sn->gctotal, 0));
  if (sn->flags & MP_SNAP_CUT)
    fprintf(f, "  CUT SHORT at max_size: objects are missing\n");
  if (h->nweak)
    fprintf(f, "  reached only through weak references: %u objects, %s\n",
	   h->nweak, mp_fmt_bytes(b1, sizeof(b1), h->weakbytes, 0));
  fprintf(f, "\nLIVE BY TYPE\n%14s %10s  type\n", "bytes", "objects");
  {	/* Most bytes first, ties by name (an insertion sort: a few types). */
    uint32_t ty[MP_HT__MAX], nt = 0, j;
    for (i = MP_HT_STR; i < MP_HT__MAX; i++) {
      if (!h->count[i]) continue;
      for (j = nt++; j > 0 && (h->bytes[ty[j - 1]] < h->bytes[i] ||
			       (h->bytes[ty[j - 1]] == h->bytes[i] &&
				strcmp(mp_heapsnap_type(ty[j - 1]),
				       mp_heapsnap_type(i)) > 0)); j--)
	ty[j] = ty[j - 1];
      ty[j] = i;
    }
    for (j = 0; j < nt; j++)
      fprintf(f, "%14s %10llu  %s\n",
	      mp_fmt_bytes(b1, sizeof(b1), h->bytes[ty[j]], 0),
	      (unsigned long long)h->count[ty[j]], mp_heapsnap_type(ty[j]));
  }
  fprintf(f, "\nTOP RETAINERS (retained: what would be freed if it went)\n"
	 "%14s %10s  %-12s path\n", "retained", "self", "type");
  for (i = 0; i < n; i++) {
    mp_heapsnap_path(h, top[i], 0, where, sizeof(where));
    fprintf(f, "%14s %10s  %-12s %s\n",
	   mp_fmt_bytes(b1, sizeof(b1), h->retained[top[i]], 0),
	   mp_fmt_bytes(b2, sizeof(b2), sn->size[top[i]], 0),
	   mp_heapsnap_type(sn->type[top[i]]), where);
  }
  fprintf(f, "\nPATH CLASSES (keys of containers of more than %u entries "
	 "as [*])\n", o->fold);
  if (v->ncl == 0) fprintf(f, "  none\n");
  for (i = 0; i < v->ncl; i++) {
    fprintf(f, "  %s: %llu %s%s, %s\n", cl[i].path,
	   (unsigned long long)cl[i].count,
	   cl[i].type ? mp_heapsnap_type(cl[i].type) : "objects",
	   cl[i].type && cl[i].count != 1 ? "s" : "",
	   mp_fmt_bytes(b1, sizeof(b1), cl[i].bytes, 0));
  }
}

/* The JSON report but its closing brace (the caller may add members). */
static void print_json(FILE *f, const mp_heapsnap *h, const snap_view *v)
{
  const mp_snapshot *sn = h->sn;
  const uint32_t *top = v->top, n = v->n;
  const mp_heapclass *cl = v->cl;
  int first = 1;
  uint32_t i;
  char where[2048];
  fprintf(f, "{\"objects\":%llu,\"bytes\":%llu,\"gc_total\":%llu,"
	 "\"vm_bytes\":%llu,\"unreached\":%llu,\"unreached_bytes\":%llu,"
	 "\"weak_only\":%u,\"weak_only_bytes\":%llu,\"cut\":%s,\"types\":[",
	 (unsigned long long)sn->objects, (unsigned long long)sn->bytes,
	 (unsigned long long)sn->gctotal, (unsigned long long)sn->vmbytes,
	 (unsigned long long)sn->unreached, (unsigned long long)sn->ubytes,
	 h->nweak, (unsigned long long)h->weakbytes,
	 sn->flags & MP_SNAP_CUT ? "true" : "false");
  for (i = MP_HT_STR; i < MP_HT__MAX; i++)
    if (h->count[i]) {
      fprintf(f, "%s{\"type\":\"%s\",\"count\":%llu,\"bytes\":%llu}",
	     first ? "" : ",", mp_heapsnap_type(i),
	     (unsigned long long)h->count[i], (unsigned long long)h->bytes[i]);
      first = 0;
    }
  fprintf(f, "],\"retainers\":[");
  for (i = 0; i < n; i++) {
    mp_heapsnap_path(h, top[i], 0, where, sizeof(where));
    fprintf(f, "%s{\"id\":%u,\"type\":\"%s\",\"address\":\"0x%llx\","
	   "\"self\":%llu,\"retained\":%llu,\"path\":", i ? "," : "", top[i],
	   mp_heapsnap_type(sn->type[top[i]]),
	   (unsigned long long)sn->addr[top[i]],
	   (unsigned long long)sn->size[top[i]],
	   (unsigned long long)h->retained[top[i]]);
    mp_json_cstr(f, where);
    fprintf(f, "}");
  }
  fprintf(f, "],\"classes\":[");
  for (i = 0; i < v->ncl; i++) {
    fprintf(f, "%s{\"path\":", i ? "," : "");
    mp_json_cstr(f, cl[i].path);
    fprintf(f, ",\"count\":%llu,\"type\":\"%s\",\"retained\":%llu}",
	   (unsigned long long)cl[i].count,
	   cl[i].type ? mp_heapsnap_type(cl[i].type) : "mixed",
	   (unsigned long long)cl[i].bytes);
  }
  fprintf(f, "]");
}

/* A signed number of bytes, "+NB" or "-NB" (or "0B": a change of none
** carries its unit like the other figures), into buf. */
static const char *sbytes(char *buf, size_t size, int64_t v)
{
  char t[40];
  if (!v) return "0B";
  mp_fmt_bytes(t, sizeof(t), v < 0 ? (uint64_t)-v : (uint64_t)v, 0);
  snprintf(buf, size, "%c%s", v < 0 ? '-' : '+', t);
  return buf;
}

static void print_diff_text(FILE *f, const mp_heapdiff *d, const snap_opts *o,
			    const char *const *paths)
{
  char b1[64], b2[64], b3[64];
  uint32_t i;
  fprintf(f, "HEAP SNAPSHOT DIFF %s -> %s\n", paths[0], paths[1]);
  fprintf(f, "  objects %llu -> %llu (%+lld), live %s -> %s (%s)\n",
	  (unsigned long long)d->total[0].count,
	  (unsigned long long)d->total[1].count,
	  (long long)(d->total[1].count - d->total[0].count),
	  mp_fmt_bytes(b1, sizeof(b1), d->total[0].bytes, 0),
	  mp_fmt_bytes(b2, sizeof(b2), d->total[1].bytes, 0),
	  sbytes(b3, sizeof(b3), (int64_t)(d->total[1].bytes -
					   d->total[0].bytes)));
  fprintf(f, "  new in %s: %llu object%s, %s; gone (only in %s): %llu "
	  "object%s, %s; resized: %llu object%s, %s\n", paths[1],
	  (unsigned long long)d->added_all.count,
	  d->added_all.count != 1 ? "s" : "",
	  mp_fmt_bytes(b1, sizeof(b1), d->added_all.bytes, 0), paths[0],
	  (unsigned long long)d->gone_all.count,
	  d->gone_all.count != 1 ? "s" : "",
	  mp_fmt_bytes(b2, sizeof(b2), d->gone_all.bytes, 0),
	  (unsigned long long)d->resized, d->resized != 1 ? "s" : "",
	  sbytes(b3, sizeof(b3), d->resized_bytes));
  fprintf(f, "\nBY TYPE (live bytes and objects, then new and gone "
	  "objects)\n%14s %14s %9s %9s %9s %9s  type\n", "bytes", "change",
	  "objects", "change", "new", "gone");
  for (i = MP_HT_STR; i < MP_HT__MAX; i++) {
    const mp_heapcount *a = &d->live[0][i], *b = &d->live[1][i];
    if (!a->count && !b->count) continue;
    fprintf(f, "%14s %14s %9llu %9lld %9llu %9llu  %s\n",
	    mp_fmt_bytes(b1, sizeof(b1), b->bytes, 0),
	    sbytes(b2, sizeof(b2), (int64_t)(b->bytes - a->bytes)),
	    (unsigned long long)b->count,
	    (long long)(b->count - a->count),
	    (unsigned long long)d->added[i].count,
	    (unsigned long long)d->gone[i].count, mp_heapsnap_type(i));
  }
  fprintf(f, "\nCHANGE BY PATH CLASS (keys of containers of more than %u "
	  "entries as [*]; the most growth first)\n%14s %14s %21s %9s %9s  "
	  "path\n", o->fold, "bytes", "change", "objects", "new", "gone");
  if (!d->ncls) fprintf(f, "  none\n");
  for (i = 0; i < d->ncls; i++) {
    const mp_heapdiff_class *c = &d->cls[i];
    char objs[64];
    snprintf(objs, sizeof(objs), "%llu -> %llu",
	     (unsigned long long)c->live[0].count,
	     (unsigned long long)c->live[1].count);
    fprintf(f, "%14s %14s %21s %9llu %9llu  %s (%s%s)\n",
	    mp_fmt_bytes(b1, sizeof(b1), c->live[1].bytes, 0),
	    sbytes(b2, sizeof(b2), (int64_t)(c->live[1].bytes -
					     c->live[0].bytes)), objs,
	    (unsigned long long)c->added.count,
	    (unsigned long long)c->gone.count, c->path,
	    c->type ? mp_heapsnap_type(c->type) : "object",
	    (c->live[1].count ? c->live[1].count : c->live[0].count) != 1 ?
	    "s" : "");
  }
  if (d->morecls)
    fprintf(f, "  ... and %u more path classes changed\n", d->morecls);
}

static void print_diff_json(FILE *f, const mp_heapdiff *d,
			    const char *const *paths)
{
  uint32_t i;
  int first = 1;
  fputs("{\"files\":[", f);
  mp_json_cstr(f, paths[0]);
  fputc(',', f);
  mp_json_cstr(f, paths[1]);
  fprintf(f, "],\"objects\":[%llu,%llu],\"bytes\":[%llu,%llu],"
	  "\"new\":{\"count\":%llu,\"bytes\":%llu},"
	  "\"gone\":{\"count\":%llu,\"bytes\":%llu},"
	  "\"resized\":{\"count\":%llu,\"bytes\":%lld},\"types\":[",
	  (unsigned long long)d->total[0].count,
	  (unsigned long long)d->total[1].count,
	  (unsigned long long)d->total[0].bytes,
	  (unsigned long long)d->total[1].bytes,
	  (unsigned long long)d->added_all.count,
	  (unsigned long long)d->added_all.bytes,
	  (unsigned long long)d->gone_all.count,
	  (unsigned long long)d->gone_all.bytes,
	  (unsigned long long)d->resized, (long long)d->resized_bytes);
  for (i = MP_HT_STR; i < MP_HT__MAX; i++) {
    const mp_heapcount *a = &d->live[0][i], *b = &d->live[1][i];
    if (!a->count && !b->count) continue;
    fprintf(f, "%s{\"type\":\"%s\",\"objects\":[%llu,%llu],"
	    "\"bytes\":[%llu,%llu],\"new\":{\"count\":%llu,\"bytes\":%llu},"
	    "\"gone\":{\"count\":%llu,\"bytes\":%llu}}", first ? "" : ",",
	    mp_heapsnap_type(i), (unsigned long long)a->count,
	    (unsigned long long)b->count, (unsigned long long)a->bytes,
	    (unsigned long long)b->bytes,
	    (unsigned long long)d->added[i].count,
	    (unsigned long long)d->added[i].bytes,
	    (unsigned long long)d->gone[i].count,
	    (unsigned long long)d->gone[i].bytes);
    first = 0;
  }
  fputs("],\"classes\":[", f);
  for (i = 0; i < d->ncls; i++) {
    const mp_heapdiff_class *c = &d->cls[i];
    fprintf(f, "%s{\"path\":", i ? "," : "");
    mp_json_cstr(f, c->path);
    fprintf(f, ",\"type\":\"%s\",\"objects\":[%llu,%llu],"
	    "\"bytes\":[%llu,%llu],\"new\":{\"count\":%llu,\"bytes\":%llu},"
	    "\"gone\":{\"count\":%llu,\"bytes\":%llu}}",
	    c->type ? mp_heapsnap_type(c->type) : "mixed",
	    (unsigned long long)c->live[0].count,
	    (unsigned long long)c->live[1].count,
	    (unsigned long long)c->live[0].bytes,
	    (unsigned long long)c->live[1].bytes,
	    (unsigned long long)c->added.count,
	    (unsigned long long)c->added.bytes,
	    (unsigned long long)c->gone.count,
	    (unsigned long long)c->gone.bytes);
  }
  fprintf(f, "],\"more_classes\":%u}\n", d->morecls);
}

/* Read and decode the snapshot at path into *sn: MP_EXIT_OK, or
** MP_EXIT_ERROR after the error line. */
static int load(const char *path, mp_snapshot *sn)
{
  uint8_t *data;
  size_t len;
  char err[256];
  int rc;
  if (slurp(path, &data, &len) < 0) {
    fprintf(stderr, "ljmemprof: %s: %s\n", path, strerror(errno));
    return MP_EXIT_ERROR;
  }
  if (len == 0) {
    fprintf(stderr, "ljmemprof: %s: not a heap snapshot: it is empty\n",
	    path);
    free(data);
    return MP_EXIT_ERROR;
  }
  if (len >= 3 && !memcmp(data, MP_LJS_MAGIC, 3)) {
    fprintf(stderr, "ljmemprof: %s: a memprof profile, not a heap "
	    "snapshot: read it with 'ljmemprof report %s'\n", path, path);
    free(data);
    return MP_EXIT_ERROR;
  }
  if ((rc = mp_snap_decode(data, len, sn, err, sizeof(err))) < 0) {
    fprintf(stderr, "ljmemprof: %s: %s%s\n", path,
	    rc != -2 && mp_snap_is(data, len) ? "damaged heap snapshot: " : "",
	    err);
    free(data);
    return MP_EXIT_ERROR;
  }
  free(data);
  return MP_EXIT_OK;
}

/* -- A snapshot and its recording (--profile) ----------------------------- */

/* What the lines of a recording made, of a snapshot's objects: per site,
** its bytes and objects, and per top retainer (the nearest one that
** dominates an object), the bytes of each site it holds. */
typedef struct joined {
  uint32_t nsite, ntop;
  const uint32_t *top;		/* The view's top retainers. */
  uint64_t *bytes, *objects;	/* By site. */
  uint64_t *held;		/* [site * (ntop + 1) + k]: k + 1 a retainer,
				   0 none of them. */
  uint32_t *lines, nlines;	/* The sites that made most, at most --top,
				   most bytes first. */
  const char **label;		/* By site: the report's labels... */
  mp_strtab labels;		/* ...stored here. */
} joined;

static uint32_t joined_sites(const joined *jd, uint32_t *ids, uint32_t n);

/* Fill *jd from the join j of h with profile p; 0 or -1 (out of memory). */
static int joined_build(joined *jd, const mp_heapsnap *h,
			const mp_snapjoin *j, mp_profile *p,
			const snap_view *v, const snap_opts *o)
{
  const mp_snapshot *sn = h->sn;
  uint32_t *near = NULL, i, k;
  memset(jd, 0, sizeof(*jd));
  jd->nsite = p->nsite;
  jd->top = v->top;
  jd->ntop = v->n;
  jd->bytes = calloc(jd->nsite + 1, sizeof(*jd->bytes));
  jd->objects = calloc(jd->nsite + 1, sizeof(*jd->objects));
  jd->held = calloc(((size_t)jd->nsite + 1) * (jd->ntop + 1),
		    sizeof(*jd->held));
  jd->lines = malloc((o->top ? o->top : 1) * sizeof(*jd->lines));
  near = calloc(sn->n ? sn->n : 1, sizeof(*near));
  mp_strtab_init(&jd->labels);
  if (!jd->bytes || !jd->objects || !jd->held || !jd->lines || !near ||
      mp_site_labels(p, &jd->labels, &jd->label) < 0) {
    free(near);
    return -1;
  }
  /* The nearest top retainer dominating each object, itself included:
  ** objects are numbered breadth first, so a dominator (on every path
  ** from the root) comes before what it dominates. */
  for (k = 0; k < jd->ntop; k++) near[jd->top[k]] = k + 1;
  for (i = 1; i < sn->n; i++) {
    uint32_t d = h->idom[i], hops = 0;
    if (near[i]) continue;
    while (d && d >= i && hops++ < 64 && !near[d]) d = h->idom[d];
    near[i] = d && d < i ? near[d] : 0;
  }
  for (i = 1; i < sn->n; i++) {
    uint32_t s = j->site[i];
    if (!s || s - 1 >= jd->nsite) continue;
    jd->bytes[s - 1] += sn->size[i];
    jd->objects[s - 1]++;
    jd->held[(size_t)(s - 1) * (jd->ntop + 1) + near[i]] += sn->size[i];
  }
  /* Parts made by another line than their object's move to that line,
  ** held where their object is. */
  for (i = 0; i < j->npart; i++) {
    const struct mp_joinpart *pt = &j->part[i];
    uint32_t s = j->site[pt->obj];
    if (pt->site - 1 >= jd->nsite) continue;
    if (s && s - 1 < jd->nsite) {
      jd->bytes[s - 1] -= pt->bytes;
      jd->held[(size_t)(s - 1) * (jd->ntop + 1) + near[pt->obj]] -= pt->bytes;
    }
    jd->bytes[pt->site - 1] += pt->bytes;
    jd->held[(size_t)(pt->site - 1) * (jd->ntop + 1) + near[pt->obj]] +=
      pt->bytes;
  }
  free(near);
  jd->nlines = joined_sites(jd, jd->lines, o->top);
  return 0;
}

static void joined_free(joined *jd)
{
  free(jd->bytes);
  free(jd->objects);
  free(jd->held);
  free(jd->lines);
  free(jd->label);
  mp_strtab_free(&jd->labels);
}

/* The sites that made anything, most bytes first, at most n: into ids;
** how many. */
static uint32_t joined_sites(const joined *jd, uint32_t *ids, uint32_t n)
{
  uint32_t k = 0, s, i;
  for (s = 0; s < jd->nsite; s++) {
    if (!jd->bytes[s]) continue;
    for (i = k < n ? k++ : n; i > 0 && (jd->bytes[ids[i - 1]] < jd->bytes[s] ||
	 (jd->bytes[ids[i - 1]] == jd->bytes[s] && ids[i - 1] > s)); i--)
      if (i < n) ids[i] = ids[i - 1];
    if (i < n) ids[i] = s;
  }
  return k;
}

/* The retainer holding most of site s's bytes: k + 1, or 0 if none of the
** top ones does. */
static uint32_t joined_holder(const joined *jd, uint32_t s)
{
  uint32_t k, best = 0;
  for (k = 1; k <= jd->ntop; k++)
    if (jd->held[(size_t)s * (jd->ntop + 1) + k] >
	jd->held[(size_t)s * (jd->ntop + 1) + best])
      best = k;
  return best;
}

/* The bytes of top retainer k (from 0) that lines of the recording made. */
static uint64_t joined_made(const joined *jd, uint32_t k)
{
  uint64_t made = 0;
  uint32_t s;
  for (s = 0; s < jd->nsite; s++)
    made += jd->held[(size_t)s * (jd->ntop + 1) + k + 1];
  return made;
}

#define JOINED_LINES	3	/* The lines shown for a retainer. */

/* The sites that made most of what top retainer k holds, most bytes
** first (ties by site), at most JOINED_LINES: into ids; how many. */
static uint32_t joined_lines(const joined *jd, uint32_t k, uint32_t *ids)
{
  uint32_t n = 0, s, i;
  for (s = 0; s < jd->nsite; s++) {
    uint64_t v = jd->held[(size_t)s * (jd->ntop + 1) + k + 1];
    if (!v) continue;
    for (i = n < JOINED_LINES ? n++ : JOINED_LINES; i > 0 &&
	 jd->held[(size_t)ids[i - 1] * (jd->ntop + 1) + k + 1] < v; i--)
      if (i < JOINED_LINES) ids[i] = ids[i - 1];
    if (i < JOINED_LINES) ids[i] = s;
  }
  return n;
}

/* The joined section of the text report. */
static void print_joined_text(FILE *f, const mp_heapsnap *h,
			      const mp_snapjoin *j, mp_profile *p,
			      const joined *jd, const snap_opts *o)
{
  const uint32_t *ids = jd->lines, n = jd->nlines;
  uint32_t i, k;
  char b1[64], b2[64], where[2048];
  const char *label;
  fprintf(f, "\nMADE WITHIN THE RECORDING (%s, marked after event %llu): "
	  "%u of %llu objects, %s of %s\n", mp_cli_name(o->profile),
	  (unsigned long long)j->ev, j->made,
	  (unsigned long long)h->sn->objects,
	  mp_fmt_bytes(b1, sizeof(b1), j->made_bytes, 0),
	  mp_fmt_bytes(b2, sizeof(b2), h->sn->bytes, 0));
  if (!n) fprintf(f, "  none: every object was made before the recording\n");
  else fprintf(f, "%14s %10s  line that made them: the retainer holding "
	       "most of it\n", "bytes", "objects");
  for (i = 0; i < n; i++) {
    uint32_t s = ids[i], b = joined_holder(jd, s);
    label = jd->label[s];
    fprintf(f, "%14s %10llu  ", mp_fmt_bytes(b1, sizeof(b1), jd->bytes[s], 0),
	    (unsigned long long)jd->objects[s]);
    mp_text_put(f, label, strlen(label), 0);
    if (b) {
      uint64_t held = jd->held[(size_t)s * (jd->ntop + 1) + b];
      mp_heapsnap_path(h, jd->top[b - 1], 0, where, sizeof(where));
      fprintf(f, ": %.0f%% held by %s\n",
	      100.0 * (double)held / (double)jd->bytes[s], where);
    } else {
      fprintf(f, ": held by none of the top retainers\n");
    }
  }
  fprintf(f, "\nTOP RETAINERS BY THE LINES THAT MADE WHAT THEY HOLD (of "
	  "what each is the nearest top retainer of)\n");
  for (k = 0; k < jd->ntop; k++) {
    uint32_t lines[JOINED_LINES], nl = joined_lines(jd, k, lines);
    if (!nl) continue;	/* All of it made before the recording. */
    mp_heapsnap_path(h, jd->top[k], 0, where, sizeof(where));
    fprintf(f, "  %s: retains %s, %s of it made within the recording\n",
	    where, mp_fmt_bytes(b1, sizeof(b1), h->retained[jd->top[k]], 0),
	    mp_fmt_bytes(b2, sizeof(b2), joined_made(jd, k), 0));
    for (i = 0; i < nl; i++) {
      label = jd->label[lines[i]];
      fprintf(f, "%16s  ", mp_fmt_bytes(b1, sizeof(b1),
	      jd->held[(size_t)lines[i] * (jd->ntop + 1) + k + 1], 0));
      mp_text_put(f, label, strlen(label), 0);
      fputc('\n', f);
    }
  }
}

/* The joined part of the JSON report: its "recording" member's value. */
static void print_joined_json(FILE *f, const mp_snapjoin *j, mp_profile *p,
			      const joined *jd, const snap_opts *o)
{
  const uint32_t *ids = jd->lines, n = jd->nlines;
  uint32_t i, k;
  int first = 1;
  const char *label;
  fprintf(f, "{\"profile\":");
  mp_json_cstr(f, mp_cli_name(o->profile));
  fprintf(f, ",\"marked_after_event\":%llu,\"made_objects\":%u,"
	  "\"made_bytes\":%llu,\"lines\":[", (unsigned long long)j->ev,
	  j->made, (unsigned long long)j->made_bytes);
  for (i = 0; i < n; i++) {
    uint32_t s = ids[i], b = joined_holder(jd, s);
    label = jd->label[s];
    fprintf(f, "%s{\"line\":", i ? "," : "");
    mp_json_cstr(f, label);
    fprintf(f, ",\"bytes\":%llu,\"objects\":%llu,\"held_by\":",
	    (unsigned long long)jd->bytes[s],
	    (unsigned long long)jd->objects[s]);
    if (b) fprintf(f, "%u,\"held_bytes\":%llu}", b - 1,
		   (unsigned long long)jd->held[(size_t)s * (jd->ntop + 1) + b]);
    else fprintf(f, "null,\"held_bytes\":0}");
  }
  fprintf(f, "],\"retainers\":[");
  for (k = 0; k < jd->ntop; k++) {
    uint32_t lines[JOINED_LINES], nl = joined_lines(jd, k, lines);
    if (!nl) continue;
    fprintf(f, "%s{\"retainer\":%u,\"made_bytes\":%llu,\"lines\":[",
	    first ? "" : ",", k, (unsigned long long)joined_made(jd, k));
    first = 0;
    for (i = 0; i < nl; i++) {
      label = jd->label[lines[i]];
      fprintf(f, "%s{\"line\":", i ? "," : "");
      mp_json_cstr(f, label);
      fprintf(f, ",\"bytes\":%llu}", (unsigned long long)
	      jd->held[(size_t)lines[i] * (jd->ntop + 1) + k + 1]);
    }
    fprintf(f, "]}");
  }
  fprintf(f, "]}");
}

#define TREE_NODES	1000	/* The dominator tree's nodes on the page... */
#define TREE_FAN	30	/* ...at most this many under one node... */
#define TREE_SHARE	10000	/* ...none retaining less than 1/10000 of
				   everything. */

/* The HTML view (render_snaphtml.c): its data, the JSON report and the
** top of the dominator tree, made in memory, then the page. 0, or -1 out
** of memory or when writing failed. */
static int print_html(FILE *out, const mp_heapsnap *h, const snap_view *v,
		      const mp_snapjoin *j, mp_profile *p, const joined *jd,
		      const snap_opts *o, const char *path)
{
  const mp_snapshot *sn = h->sn;
  char *data = NULL, where[2048];
  size_t len = 0;
  mp_domnode *t = NULL;
  int nt = mp_heapsnap_domtree(h, TREE_NODES, TREE_FAN,
			       h->retained[0] / TREE_SHARE, &t), i, rc;
  FILE *m = nt < 0 ? NULL : open_memstream(&data, &len);
  if (!m) {
    free(t);
    return -1;
  }
  fputs("{\"kind\":\"snapshot\",\"file\":", m);
  mp_json_cstr(m, path);
  fputs(",\"report\":", m);
  print_json(m, h, v);
  if (j) {
    fputs(",\"recording\":", m);
    print_joined_json(m, j, p, jd, o);
  }
  fputs("},\"tree\":[", m);
  for (i = 0; i < nt; i++) {
    uint32_t id = t[i].id;
    mp_heapsnap_path(h, id, 0, where, sizeof(where));
    fprintf(m, "%s[%d,%u,\"%s\",%llu,%llu,%u,%llu,", i ? "," : "",
	    t[i].up == MP_SNAP_NONE ? -1 : (int)t[i].up, id,
	    mp_heapsnap_type(sn->type[id]), (unsigned long long)sn->size[id],
	    (unsigned long long)h->retained[id], t[i].more,
	    (unsigned long long)t[i].more_bytes);
    mp_json_cstr(m, where);
    fputc(']', m);
  }
  fputs("]}", m);
  free(t);
  rc = fclose(m) ? -1 : 0;
  if (rc == 0) rc = mp_render_snapshot_html(out, data, len);
  free(data);
  return rc;
}

/* Read the recording o->profile into *p with a join of h's snapshot
** (path: the snapshot's file), and what it made into *jd: MP_EXIT_OK,
** MP_EXIT_TRUNCATED (the profile is cut, after its warning), or
** MP_EXIT_ERROR after the error line. */
static int join_profile(mp_snapjoin *j, mp_profile *p, joined *jd,
			const mp_heapsnap *h, const snap_view *v,
			const snap_opts *o, const char *path)
{
  mp_cli_opts co;
  mp_input in;
  int st;
  memset(&co, 0, sizeof(co));
  if (mp_snapjoin_init(j, h->sn) < 0) {
    fprintf(stderr, "ljmemprof: %s: out of memory\n", mp_cli_name(path));
    return MP_EXIT_ERROR;
  }
  co.on_snap = mp_snapjoin_on_mark;
  co.snap_ctx = j;
  if ((st = mp_cli_read(o->profile, &in, p, &co)) == MP_EXIT_ERROR) {
    mp_snapjoin_free(j);
    return st;
  }
  mp_input_close(&in);
  if (!j->found) {
    fprintf(stderr, "ljmemprof: %s: no mark of the snapshot %s (%llu "
	    "objects, %llu bytes): ", mp_cli_name(o->profile),
	    mp_cli_name(path), (unsigned long long)h->sn->objects,
	    (unsigned long long)h->sn->bytes);
    if (!p->stacks && p->sample == 0 && !p->native)
      fprintf(stderr, "this profile was recorded without stacks, so it "
	      "marks no snapshot (record with stacks, sample or native: "
	      "run --stacks N)\n");
    else if (p->nsnap)
      fprintf(stderr, "it was not taken while this profile was recorded "
	      "(the profile marks %u other snapshot%s)\n", p->nsnap,
	      p->nsnap == 1 ? "" : "s");
    else
      fprintf(stderr, "it was not taken while this profile was recorded "
	      "(the profile marks none)\n");
    mp_profile_free(p);
    mp_snapjoin_free(j);
    return MP_EXIT_ERROR;
  }
  if (j->oom || joined_build(jd, h, j, p, v, o) < 0) {
    fprintf(stderr, "ljmemprof: %s: out of memory\n", mp_cli_name(path));
    joined_free(jd);
    mp_profile_free(p);
    mp_snapjoin_free(j);
    return MP_EXIT_ERROR;
  }
  return st;
}

/* Free what join_profile() made. */
static void join_free(mp_snapjoin *j, mp_profile *p, joined *jd)
{
  joined_free(jd);
  mp_profile_free(p);
  mp_snapjoin_free(j);
}

/* `snapshot` (diff 0) or the diff of two snapshots, as cmd. */
static int run(const char *cmd, int argc, char **argv, int diff)
{
  snap_opts o = { F_TEXT, 10, 8, NULL, diff, NULL };
  mp_snapjoin join;
  mp_profile prof;
  joined jd = { 0 };
  snap_view v = { 0 };
  int joined_ok = 0, viewed = 0, status_join = 0;
  const char **paths = NULL;
  mp_snapshot sn[2];
  mp_heapsnap h, ha;
  mp_heapdiff d;
  mp_cli_out out;
  int rc, n, status = MP_EXIT_ERROR, last;
  memset(sn, 0, sizeof(sn));
  if ((rc = mp_cli_files_args(cmd, argc, argv, NULL, snap_opt, &o, &paths,
			      &n)) >= 0)
    return rc;
  if (n != (o.diff ? 2 : 1)) {
    if (o.diff)
      fprintf(stderr, "ljmemprof %s: two snapshots expected, BASE and NEW, "
	      "got %d (see 'ljmemprof %s --help')\n", cmd, n, cmd);
    else
      fprintf(stderr, "ljmemprof %s: one FILE expected, got '%s' and '%s' "
	      "(two with --diff; see 'ljmemprof %s --help')\n", cmd, paths[0],
	      paths[1], cmd);
    free(paths);
    return MP_EXIT_ERROR;
  }
  if (o.diff && o.format == F_HEAPSNAPSHOT) {
    fprintf(stderr, "ljmemprof %s: the diff of two snapshots is text or "
	    "json; the heapsnapshot format is of one snapshot (DevTools "
	    "compares two itself)\n", cmd);
    free(paths);
    return MP_EXIT_ERROR;
  }
  if (o.diff && o.format == F_HTML) {
    fprintf(stderr, "ljmemprof %s: the diff of two snapshots is text or "
	    "json; the html format is of one snapshot\n", cmd);
    free(paths);
    return MP_EXIT_ERROR;
  }
  if (o.profile && (o.diff || o.format == F_HEAPSNAPSHOT)) {
    fprintf(stderr, "ljmemprof %s: --profile joins one snapshot with its "
	    "recording, in the text, json or html report (not with %s)\n", cmd,
	    o.diff ? "--diff" : "--format heapsnapshot");
    free(paths);
    return MP_EXIT_ERROR;
  }
  if (mp_cli_check_output(cmd, "-o", o.output, paths, n) ||
      mp_cli_out_open(&out, o.output) < 0) {
    free(paths);
    return MP_EXIT_ERROR;
  }
  last = n - 1;
  if (load(paths[0], &sn[0]) || (o.diff && load(paths[1], &sn[1])))
    goto out;
  /* --top 0: all of them, as in the profile reports. */
  if (!o.top)
    o.top = sn[0].n + (o.diff && sn[1].n < UINT32_MAX - sn[0].n ? sn[1].n : 0);
  if (mp_heapsnap_build(&h, &sn[last]) < 0) {
    fprintf(stderr, "ljmemprof: %s: out of memory\n", paths[last]);
    goto out;
  }
  if (o.diff) {
    int r = mp_heapsnap_build(&ha, &sn[0]);
    if (r == 0) {
      r = mp_heapdiff_build(&d, &ha, &h, o.fold, o.top);
      mp_heapsnap_free(&ha);
    }
    if (r < 0) {
      fprintf(stderr, "ljmemprof: %s: out of memory for the diff\n",
	      paths[1]);
      mp_heapsnap_free(&h);
      goto out;
    }
  }
  /* The text and JSON reports' retainers and classes, before anything is
  ** printed. */
  if (!o.diff && o.format != F_HEAPSNAPSHOT) {
    if (view_make(&h, &o, &v) < 0) {
      fprintf(stderr, "ljmemprof: %s: out of memory\n", paths[0]);
      mp_heapsnap_free(&h);
      goto out;
    }
    viewed = 1;
  }
  if (o.profile) {
    int r = join_profile(&join, &prof, &jd, &h, &v, &o, paths[0]);
    if (r == MP_EXIT_ERROR) {
      view_free(&v);
      mp_heapsnap_free(&h);
      goto out;
    }
    joined_ok = 1;
    if (r == MP_EXIT_TRUNCATED) status_join = r;
  }
  if (mp_cli_out_begin(&out) < 0) {
    if (joined_ok) join_free(&join, &prof, &jd);
    if (viewed) view_free(&v);
    if (o.diff) mp_heapdiff_free(&d);
    mp_heapsnap_free(&h);
    free(paths);
    mp_snap_free(&sn[0]);
    mp_snap_free(&sn[1]);
    return MP_EXIT_ERROR;
  }
  status = MP_EXIT_OK;
  if (o.diff) {
    if (o.format == F_JSON) print_diff_json(out.f, &d, paths);
    else print_diff_text(out.f, &d, &o, paths);
    mp_heapdiff_free(&d);
  } else if (o.format == F_HEAPSNAPSHOT) {
    int numbered = 0;
    if (mp_heapsnapshot_write(out.f, &h, &numbered) < 0 && !ferror(out.f)) {
      fprintf(stderr, "ljmemprof: %s: out of memory for the export\n",
	      paths[0]);
      status = MP_EXIT_ERROR;
    } else if (numbered) {
      fprintf(stderr, "ljmemprof: %s: warning: two objects' addresses give "
	      "one DevTools @id: objects are numbered instead, and DevTools' "
	      "comparison with another snapshot will not match them\n",
	      paths[0]);
    }
  } else if (o.format == F_JSON) {
    print_json(out.f, &h, &v);
    if (o.profile) {
      fputs(",\"recording\":", out.f);
      print_joined_json(out.f, &join, &prof, &jd, &o);
    }
    fputs("}\n", out.f);
  } else if (o.format == F_HTML) {
    if (print_html(out.f, &h, &v, o.profile ? &join : NULL, &prof, &jd, &o,
		   paths[0]) < 0 && !ferror(out.f)) {
      fprintf(stderr, "ljmemprof: %s: out of memory for the page\n",
	      paths[0]);
      status = MP_EXIT_ERROR;
    }
  } else {
    print_text(out.f, &h, &v, &o, paths[0]);
    if (o.profile) print_joined_text(out.f, &h, &join, &prof, &jd, &o);
  }
  if (status == MP_EXIT_OK && ((sn[0].flags & MP_SNAP_CUT) ||
			       (o.diff && (sn[1].flags & MP_SNAP_CUT))))
    status = MP_EXIT_TRUNCATED;
  if (status == MP_EXIT_OK && status_join) status = status_join;
  if (joined_ok) join_free(&join, &prof, &jd);
  if (viewed) view_free(&v);
  mp_heapsnap_free(&h);
out:
  if (status == MP_EXIT_ERROR) mp_cli_out_drop(&out);
  free(paths);
  mp_snap_free(&sn[0]);
  mp_snap_free(&sn[1]);
  return mp_cli_out_close(&out, status);
}

int mp_cmd_snapshot(int argc, char **argv)
{
  return run("snapshot", argc, argv, 0);
}

int mp_cli_snapshot_diff(int argc, char **argv)
{
  return run("diff", argc, argv, 1);
}
