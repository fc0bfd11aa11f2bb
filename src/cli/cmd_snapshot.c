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
#include "analysis/mp_heapsnap.h"
#include "render/mp_json.h"
#include "render/mp_render.h"

const char mp_help_snapshot[] =
"NAME\n"
"    ljmemprof snapshot - what is live in a heap snapshot, and what holds it\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof snapshot [--format text|json] [--top N] [--fold N] FILE\n"
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
"    container of more than --fold entries are folded to [*], with what\n"
"    they retain. References through weak tables retain nothing; what\n"
"    only they reach is counted apart.\n"
"\n"
"OPTIONS\n"
"    --format text|json   Text (default) or one JSON object.\n"
"    --top N              Retainers and path classes listed (default 10).\n"
"    --fold N             Fold the keys of containers of more than N\n"
"                         entries (default 8).\n"
"    -h, --help           Print this manual.\n"
"\n"
"EXIT STATUS\n"
"    0 read and reported; 3 the snapshot says it was cut short at its\n"
"    max_size (what it holds is reported); 2 error (not a snapshot,\n"
"    damaged, cannot be read).\n";

typedef struct snap_opts {
  int json;
  uint32_t top, fold;
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
    if (strcmp(v, "json") && strcmp(v, "text")) {
      fprintf(stderr, "ljmemprof %s: bad value '%s' for option '--format' "
	      "(see 'ljmemprof %s --help')\n", cmd, v, cmd);
      return MP_OPT_ERROR;
    }
    o->json = v[0] == 'j';
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
  int ncl;
} snap_view;

/* Compute the view; 0, or -1 out of memory (nothing to free then). */
static int view_make(const mp_heapsnap *h, const snap_opts *o, snap_view *v)
{
  int n;
  memset(v, 0, sizeof(*v));
  if (!(v->top = malloc((o->top ? o->top : 1) * sizeof(*v->top)))) return -1;
  if ((n = mp_heapsnap_top(h, v->top, o->top)) < 0 ||
      (v->ncl = mp_heapsnap_classes(h, o->fold, o->top, &v->cl)) < 0) {
    free(v->top);
    return -1;
  }
  v->n = (uint32_t)n;
  return 0;
}

static void view_free(snap_view *v)
{
  int i;
  for (i = 0; i < v->ncl; i++) free(v->cl[i].path);
  free(v->cl);
  free(v->top);
}

static void print_text(const mp_heapsnap *h, const snap_view *v,
		       const snap_opts *o, const char *path)
{
  const mp_snapshot *sn = h->sn;
  const uint32_t *top = v->top, n = v->n;
  const mp_heapclass *cl = v->cl;
  int ncl = v->ncl;
  uint32_t i;
  char b1[64], b2[64], b3[64], b4[64], where[2048];
  uint64_t acc = sn->bytes + sn->vmbytes + sn->ubytes;
  printf("HEAP SNAPSHOT %s: %llu objects, %s live\n", path,
	 (unsigned long long)sn->objects,
	 mp_fmt_bytes(b1, sizeof(b1), sn->bytes, 0));
  printf("  the VM counts %s: objects %s + VM internals %s + not reached "
	 "%s in %llu objects", mp_fmt_bytes(b1, sizeof(b1), sn->gctotal, 0),
	 mp_fmt_bytes(b2, sizeof(b2), sn->bytes, 0),
	 mp_fmt_bytes(b3, sizeof(b3), sn->vmbytes, 0),
	 mp_fmt_bytes(b4, sizeof(b4), sn->ubytes, 0),
	 (unsigned long long)sn->unreached);
  if (acc == sn->gctotal) printf(" (exact)\n");
  else printf(" (%s %s unaccounted)\n", acc < sn->gctotal ? "+" : "-",
	      mp_fmt_bytes(b1, sizeof(b1), acc < sn->gctotal ?
			   sn->gctotal - acc : acc - sn->gctotal, 0));
  if (sn->flags & MP_SNAP_CUT)
    printf("  CUT SHORT at max_size: objects are missing\n");
  if (h->nweak)
    printf("  reached only through weak references: %u objects, %s\n",
	   h->nweak, mp_fmt_bytes(b1, sizeof(b1), h->weakbytes, 0));
  printf("\nLIVE BY TYPE\n%14s %10s  type\n", "bytes", "objects");
  for (i = MP_HT_STR; i < MP_HT__MAX; i++)
    if (h->count[i])
      printf("%14s %10llu  %s\n", mp_fmt_bytes(b1, sizeof(b1), h->bytes[i], 0),
	     (unsigned long long)h->count[i], mp_heapsnap_type(i));
  printf("\nTOP RETAINERS (retained: what would be freed if it went)\n"
	 "%14s %10s  %-12s path\n", "retained", "self", "type");
  for (i = 0; i < n; i++) {
    mp_heapsnap_path(h, top[i], 0, where, sizeof(where));
    printf("%14s %10s  %-12s %s\n",
	   mp_fmt_bytes(b1, sizeof(b1), h->retained[top[i]], 0),
	   mp_fmt_bytes(b2, sizeof(b2), sn->size[top[i]], 0),
	   mp_heapsnap_type(sn->type[top[i]]), where);
  }
  printf("\nPATH CLASSES (keys of containers of more than %u entries "
	 "as [*])\n", o->fold);
  if (ncl == 0) printf("  none\n");
  for (i = 0; ncl > 0 && i < (uint32_t)ncl; i++) {
    printf("  %s: %llu %s%s, %s\n", cl[i].path,
	   (unsigned long long)cl[i].count,
	   cl[i].type ? mp_heapsnap_type(cl[i].type) : "objects",
	   cl[i].type && cl[i].count != 1 ? "s" : "",
	   mp_fmt_bytes(b1, sizeof(b1), cl[i].bytes, 0));
  }
}

static void print_json(const mp_heapsnap *h, const snap_view *v)
{
  const mp_snapshot *sn = h->sn;
  const uint32_t *top = v->top, n = v->n;
  const mp_heapclass *cl = v->cl;
  int ncl = v->ncl, first = 1;
  uint32_t i;
  char where[2048];
  printf("{\"objects\":%llu,\"bytes\":%llu,\"gc_total\":%llu,"
	 "\"vm_bytes\":%llu,\"unreached\":%llu,\"unreached_bytes\":%llu,"
	 "\"weak_only\":%u,\"weak_only_bytes\":%llu,\"cut\":%s,\"types\":[",
	 (unsigned long long)sn->objects, (unsigned long long)sn->bytes,
	 (unsigned long long)sn->gctotal, (unsigned long long)sn->vmbytes,
	 (unsigned long long)sn->unreached, (unsigned long long)sn->ubytes,
	 h->nweak, (unsigned long long)h->weakbytes,
	 sn->flags & MP_SNAP_CUT ? "true" : "false");
  for (i = MP_HT_STR; i < MP_HT__MAX; i++)
    if (h->count[i]) {
      printf("%s{\"type\":\"%s\",\"count\":%llu,\"bytes\":%llu}",
	     first ? "" : ",", mp_heapsnap_type(i),
	     (unsigned long long)h->count[i], (unsigned long long)h->bytes[i]);
      first = 0;
    }
  printf("],\"retainers\":[");
  for (i = 0; i < n; i++) {
    mp_heapsnap_path(h, top[i], 0, where, sizeof(where));
    printf("%s{\"id\":%u,\"type\":\"%s\",\"address\":\"0x%llx\","
	   "\"self\":%llu,\"retained\":%llu,\"path\":", i ? "," : "", top[i],
	   mp_heapsnap_type(sn->type[top[i]]),
	   (unsigned long long)sn->addr[top[i]],
	   (unsigned long long)sn->size[top[i]],
	   (unsigned long long)h->retained[top[i]]);
    mp_json_cstr(stdout, where);
    printf("}");
  }
  printf("],\"classes\":[");
  for (i = 0; ncl > 0 && i < (uint32_t)ncl; i++) {
    printf("%s{\"path\":", i ? "," : "");
    mp_json_cstr(stdout, cl[i].path);
    printf(",\"count\":%llu,\"type\":\"%s\",\"retained\":%llu}",
	   (unsigned long long)cl[i].count,
	   cl[i].type ? mp_heapsnap_type(cl[i].type) : "mixed",
	   (unsigned long long)cl[i].bytes);
  }
  printf("]}\n");
}

int mp_cmd_snapshot(int argc, char **argv)
{
  snap_opts o = { 0, 10, 8 };
  const char *path;
  uint8_t *data;
  size_t len;
  mp_snapshot sn;
  mp_heapsnap h;
  snap_view v;
  char err[256];
  int rc;
  if ((rc = mp_cli_file_args("snapshot", argc, argv, NULL, snap_opt, &o,
			     &path)) >= 0)
    return rc;
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
  if ((rc = mp_snap_decode(data, len, &sn, err, sizeof(err))) < 0) {
    fprintf(stderr, "ljmemprof: %s: %s%s\n", path,
	    rc != -2 && mp_snap_is(data, len) ? "damaged heap snapshot: " : "",
	    err);
    free(data);
    return MP_EXIT_ERROR;
  }
  free(data);
  if (mp_heapsnap_build(&h, &sn) < 0) {
    fprintf(stderr, "ljmemprof: %s: out of memory\n", path);
    mp_snap_free(&sn);
    return MP_EXIT_ERROR;
  }
  if (view_make(&h, &o, &v) < 0) {
    fprintf(stderr, "ljmemprof: %s: out of memory\n", path);
    mp_heapsnap_free(&h);
    mp_snap_free(&sn);
    return MP_EXIT_ERROR;
  }
  if (o.json) print_json(&h, &v);
  else print_text(&h, &v, &o, path);
  rc = sn.flags & MP_SNAP_CUT ? MP_EXIT_TRUNCATED : MP_EXIT_OK;
  view_free(&v);
  mp_heapsnap_free(&h);
  mp_snap_free(&sn);
  return mp_cli_finish_output(rc);
}
