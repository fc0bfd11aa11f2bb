/*
** mp_options.c: the options of a recording (see mp_options.h), and the
** rules of a profile's path.
*/

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mp_options.h"

#define FIELD(f)	offsetof(ljmp_options, f), sizeof(((ljmp_options *)0)->f)
#define ALL		(MP_OF_C | MP_OF_LUA | MP_OF_ENV)

const mp_optdef mp_optdefs[] = {
  { "path", MP_OK_PATH, MP_OF_C | MP_OF_LUA | MP_OF_SNAP, 0, 0, -1, FIELD(path),
    "", "" },
  { "bufsize", MP_OK_BYTES, ALL | MP_OF_SNAP, MP_BUFSIZE_MIN, (long long)LJMP_BUFSIZE_MAX,
    -1, FIELD(bufsize), " (1 GiB)", "bytes from 4K to 1G" },
  { "mode", MP_OK_MODE, ALL | MP_OF_SNAP, 0, 0777, -1, FIELD(mode), "",
    "octal permissions from 0 to 0777, e.g. 0644" },
  { "stacks", MP_OK_FRAMES, ALL, 0, LJMP_STACKS_MAX, LJMP_STACKS_DEFAULT,
    FIELD(stacks), "", "frames from 0 to 10000, or yes/no" },
  { "sample", MP_OK_BYTES, ALL, 0, (long long)LJMP_SAMPLE_MAX,
    LJMP_SAMPLE_DEFAULT, FIELD(sample), "",
    "mean bytes between samples (e.g. 512K), or yes/no" },
  { "seed", MP_OK_NUMBER, ALL, 0, (long long)LJMP_SEED_MAX, -1, FIELD(seed),
    "", "a number from 0 to 1125899906842624 (2^50; 0: one drawn from the "
    "clock)" },
  { "max_size", MP_OK_BYTES, ALL | MP_OF_SNAP, LJMP_MAX_SIZE_MIN,
    (long long)LJMP_MAX_SIZE_MAX, -1, FIELD(max_size), "",
    "bytes, at least 64K (e.g. 100M), or 0" },
  { "collect", MP_OK_BOOL, ALL | MP_OF_SNAP | MP_OF_STOP, 0, 1, 1, FIELD(collect), "", "yes or no" },
  { "native", MP_OK_BOOL, ALL, 0, 1, 1, FIELD(native), "", "yes or no" },
  { "snapshot", MP_OK_PATH, ALL | MP_OF_STOP, 0, 0, -1, FIELD(snapshot), "",
    "the path of the snapshot taken at the stop" },
  { "signal", MP_OK_SIGNAL, MP_OF_ENV, 0, 0, -1, 0, 0, "",
    "a signal that can toggle the profiler (USR1, USR2, HUP, WINCH, URG, "
    "PWR, RTMIN+n, RTMAX-n)" },
  { "start", MP_OK_BOOL, MP_OF_ENV, 0, 1, 1, 0, 0, "", "yes or no" },
};
const size_t mp_noptdefs = sizeof(mp_optdefs) / sizeof(mp_optdefs[0]);

/* See mp_options.h. */
const mp_optdef *mp_opt_find(const char *name, unsigned front)
{
  size_t i;
  for (i = 0; i < mp_noptdefs; i++)
    if ((mp_optdefs[i].front & front) && !strcmp(mp_optdefs[i].name, name))
      return &mp_optdefs[i];
  return NULL;
}

/* See mp_options.h. */
const char *mp_opt_names(unsigned front, char *out, size_t size)
{
  size_t i, k = 0;
  if (size) *out = '\0';
  for (i = 0; i < mp_noptdefs; i++) {
    int n;
    if (!(mp_optdefs[i].front & front)) continue;
    n = snprintf(out + k, size > k ? size - k : 0, "%s%s", k ? ", " : "",
		 mp_optdefs[i].name);
    if (n > 0) k += (size_t)n;
  }
  return out;
}

/* See mp_options.h. */
int mp_opt_within(const mp_optdef *d, long long v, int zero)
{
  return (v >= d->lo && v <= d->hi) || (zero && v == 0);
}

/* See mp_options.h. */
void mp_opt_store_path(ljmp_options *o, const mp_optdef *d, const char *v)
{
  memcpy((char *)o + d->off, &v, sizeof(v));
}

/* See mp_options.h. */
void mp_opt_store(ljmp_options *o, const mp_optdef *d, long long v)
{
  char *f = (char *)o + d->off;
  switch (d->width) {
  case sizeof(uint32_t): { uint32_t x = (uint32_t)v; memcpy(f, &x, 4); break; }
  case sizeof(uint64_t): { uint64_t x = (uint64_t)v; memcpy(f, &x, 8); break; }
  }
}

/* See mp_options.h. */
unsigned long long mp_opt_load(const ljmp_options *o, const mp_optdef *d)
{
  const char *f = (const char *)o + d->off;
  switch (d->width) {
  case sizeof(uint32_t): { uint32_t x; memcpy(&x, f, 4); return x; }
  case sizeof(uint64_t): { uint64_t x; memcpy(&x, f, 8); return x; }
  }
  return 0;
}

/* See mp_options.h. */
const mp_optclash *mp_opt_clash(const ljmp_options *o, int no_stacks)
{
  static const mp_optclash clashes[] = {
    { "stacks", 1, "sample", MP_SAMPLE_STACKS },
    { "native", 0, "sample", "native events are not sampled" },
    { "stacks", 1, "native", "native events carry call stacks" },
  };
  if (no_stacks && o->sample) return &clashes[0];
  if (o->native && o->sample) return &clashes[1];
  if (no_stacks && o->native) return &clashes[2];
  return NULL;
}

/* Say why options are bad into msg; LJMP_EARG. */
static int bad_option(char *msg, size_t size, const char *fmt, ...)
{
  va_list ap;
  if (msg && size) {
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
  }
  return LJMP_EARG;
}

/* The bounds of d, for a message about a C field: 0 is the default. */
static int bad_bounds(char *msg, size_t size, const mp_optdef *d,
		      unsigned long long v)
{
  if (d->kind == MP_OK_MODE)
    return bad_option(msg, size, "mode must be at most 0777 (no setuid, "
		      "setgid or sticky bit), not %#llo", v);
  if (d->lo == 0)
    return bad_option(msg, size, "%s must be from 0 to %lld%s, not %llu",
		      d->name, d->hi, d->note, v);
  return bad_option(msg, size, "%s must be 0 or from %lld to %lld%s, not "
		    "%llu", d->name, d->lo, d->hi, d->note, v);
}

/* See mp_options.h: the one definition of good options
** (ljmp_options_check() says it, start and arm obey it). */
int mp_options_read(ljmp_options *o, const ljmp_options *user, char *msg,
		    size_t size)
{
  size_t n = user->size ? user->size : sizeof(*o), i;
  const mp_optclash *c;
  int rc;
  memset(o, 0, sizeof(*o));
  if (n < offsetof(ljmp_options, path))
    return bad_option(msg, size, "size must be 0 or at least %zu, not %zu",
		      offsetof(ljmp_options, path), n);
  for (i = sizeof(*o); i < n; i++)	/* Options this library lacks. */
    if (((const unsigned char *)user)[i])
      return bad_option(msg, size, "size %zu is past this library's "
			"ljmp_options (%zu bytes): the options it lacks must "
			"be 0, and byte %zu is 0x%02x", n, sizeof(*o), i,
			((const unsigned char *)user)[i]);
  memcpy(o, user, n < sizeof(*o) ? n : sizeof(*o));
  o->size = sizeof(*o);
  if (!o->path == !o->writer)
    return bad_option(msg, size, o->path ? "path and writer must not both "
		      "be set" : "path or writer must be set");
  if (o->path && !*o->path)
    return bad_option(msg, size, "path must not be empty");
  if (o->path && (rc = mp_path_check(o->path)) != 0)
    return bad_option(msg, size, "path '%s': %s", o->path, mp_path_why(rc));
  if (o->snapshot && !*o->snapshot)
    return bad_option(msg, size, "snapshot must not be empty");
  if (o->snapshot && (rc = mp_path_check(o->snapshot)) != 0)
    return bad_option(msg, size, "snapshot '%s': %s", o->snapshot,
		      mp_path_why(rc));
  for (i = 0; i < mp_noptdefs; i++) {
    const mp_optdef *d = &mp_optdefs[i];
    unsigned long long v;
    if (!(d->front & MP_OF_C) || !d->width || d->kind == MP_OK_BOOL ||
	d->kind == MP_OK_PATH)
      continue;
    v = mp_opt_load(o, d);
    if (v > (unsigned long long)d->hi || !mp_opt_within(d, (long long)v, 1))
      return bad_bounds(msg, size, d, v);
  }
  if ((c = mp_opt_clash(o, 0)) != NULL)
    return bad_option(msg, size, "%s cannot go with %s: %s", c->a, c->b,
		      c->why);
  return 0;
}

/* See ljmemprof.h. */
int ljmp_options_check(const ljmp_options *opt, char *msg, size_t size)
{
  ljmp_options o;
  if (msg && size) *msg = '\0';
  if (!opt) return bad_option(msg, size, "options are NULL");
  return mp_options_read(&o, opt, msg, size);
}

/* -- Paths ---------------------------------------------------------------- */

/* See mp_options.h. */
int mp_path_expand(const char *path, char *out, size_t size, unsigned long n)
{
  size_t k = 0;
  for (; *path; path++) {
    char num[24];
    const char *add = num;
    if (*path != '%') {
      num[0] = *path;
      num[1] = '\0';
    } else if (path[1] == 'p') {
      snprintf(num, sizeof(num), "%ld", (long)getpid());
      path++;
    } else if (path[1] == 'n') {
      snprintf(num, sizeof(num), "%lu", n);
      path++;
    } else if (path[1] == '%') {
      add = "%";
      path++;
    } else {
      return -1;
    }
    for (; *add; add++) {
      if (k + 1 >= size) return -2;
      out[k++] = *add;
    }
  }
  out[k] = '\0';
  return 0;
}

/* See mp_options.h. */
int mp_path_check(const char *path)
{
  char out[MP_PATH_MAX];
  return mp_path_expand(path, out, sizeof(out), 0);
}

/* See mp_options.h. */
const char *mp_path_why(int rc)
{
  return rc == -1 ? MP_PATH_PCT : "it must be shorter than 4096 bytes with "
				  "%p and %n expanded";
}

/* See mp_options.h. */
int mp_path_dir(const char *path, char *dir, size_t size)
{
  const char *slash = strrchr(path, '/'), *p;
  size_t k = 0;
  if (!slash) {
    snprintf(dir, size, ".");
    return 0;
  }
  for (p = path; p < slash || (p == path && p == slash); p++) {
    if (*p == '%' && p[1] != '%') return -1;
    if (k + 1 >= size) return -1;
    dir[k++] = *p;
    if (*p == '%') p++;
  }
  dir[k] = '\0';
  return 0;
}

/* Why open() of a profile's path failed with errno e: LJMP_ESYMLINK for
** a symbolic link in its last component (O_NOFOLLOW's ELOOP; a loop of
** links in the directories stays -ELOOP), LJMP_ENOREADER for a FIFO that
** no one reads (O_NONBLOCK's ENXIO), else -e. */
static int open_error(const char *path, int e)
{
  struct stat st;
  if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
    return LJMP_ESYMLINK;
  if (e == ENXIO && lstat(path, &st) == 0 && S_ISFIFO(st.st_mode))
    return LJMP_ENOREADER;
  return -e;
}

#define MP_FIFO_TRIES	500	/* Opens of a FIFO without a reader, 10 ms
				   apart: 5 s for its reader to come. */

/* See mp_options.h. */
int mp_path_open(const char *path, unsigned mode, int *created)
{
  int fd, fl, tries;
  int how = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  mode_t m = mode ? (mode_t)mode : 0600;
  struct timespec ms10 = { 0, 10000000 };
  *created = 0;
  for (tries = 1;; tries++) {
    int rc;
    fd = open(path, how | O_EXCL, m);
    if (fd >= 0) *created = 1;
    else if (errno == EEXIST) fd = open(path, how, m);
    if (fd >= 0) break;
    rc = open_error(path, errno);
    if (rc != LJMP_ENOREADER || tries >= MP_FIFO_TRIES) return rc;
    nanosleep(&ms10, NULL);
  }
  if ((fl = fcntl(fd, F_GETFL)) < 0 ||
      fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
    int e = errno;
    if (*created) unlink(path);
    close(fd);
    return -e;
  }
  return fd;
}
