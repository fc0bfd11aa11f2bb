/*
** mp_options.h: the one table of a recording's options (mp_options.c),
** which every front end reads: the C API (ljmp_options), Lua's
** options tables (lib_ljmemprof.c), the LJMEMPROF variable (mp_arm.c),
** and, through Lua, `ljmemprof run`. Each front end parses values its own
** way (Lua types, strings of LJMEMPROF); names, kinds, bounds, what
** true/yes means, the rules between options, and where a value goes in
** ljmp_options are here, once.
*/

#ifndef MP_OPTIONS_H
#define MP_OPTIONS_H

#include <stddef.h>

#include "ljmemprof.h"

#define MP_BUFSIZE_MIN	((size_t)4096)	/* The least bufsize but 0. */
#define MP_PATH_MAX	4096	/* A profile's path, expanded, and its NUL. */

/* What an option's value is. */
typedef enum mp_optkind {
  MP_OK_PATH,	/* The profile's path (LJMEMPROF: before the first ','). */
  MP_OK_BYTES,	/* A size in bytes ("64K" in LJMEMPROF). */
  MP_OK_FRAMES,	/* A number of frames. */
  MP_OK_NUMBER,	/* An integer. */
  MP_OK_MODE,	/* File permissions, octal. */
  MP_OK_BOOL,
  MP_OK_SIGNAL	/* A signal's name. */
} mp_optkind;

/* Who takes an option. */
#define MP_OF_C		1	/* A field of ljmp_options. */
#define MP_OF_LUA	2	/* A key of Lua's options tables. */
#define MP_OF_ENV	4	/* A key of LJMEMPROF. */
#define MP_OF_SNAP	8	/* A key of mp.snapshot's options... */
#define MP_OF_STOP	16	/* ...and of mp.stop's. */

typedef struct mp_optdef {
  const char *name;
  mp_optkind kind;
  unsigned front;	/* MP_OF_*. */
  long long lo, hi;	/* Its bounds; 0 (the default) is allowed too
			   where a front end can give it (C, LJMEMPROF). */
  long long yes;	/* What true/yes asks for; -1: no boolean. */
  size_t off, width;	/* Its field in ljmp_options (width 0: none). */
  const char *note;	/* Said after the bounds in C's message, or "". */
  const char *want;	/* What LJMEMPROF's value must be (its message). */
} mp_optdef;

extern const mp_optdef mp_optdefs[];
extern const size_t mp_noptdefs;

/* The option called name that front takes, or NULL. */
const mp_optdef *mp_opt_find(const char *name, unsigned front);
/* The names of the options front takes, ", "-separated, into out. */
const char *mp_opt_names(unsigned front, char *out, size_t size);
/* Whether v is within d's bounds (zero: 0 is allowed as well). */
int mp_opt_within(const mp_optdef *d, long long v, int zero);
/* Store v into d's field of *o, and read it back. */
void mp_opt_store(ljmp_options *o, const mp_optdef *d, long long v);
unsigned long long mp_opt_load(const ljmp_options *o, const mp_optdef *d);
/* Store path v into d's field (a path option's; the path itself stays
** with the caller). */
void mp_opt_store_path(ljmp_options *o, const mp_optdef *d, const char *v);

/* The rules between options, which ljmp_options alone cannot check (it
** cannot say "stacks = 0 given": 0 means the default there): the first
** that *o, with no_stacks when stacks = 0 was given, breaks, as the
** option named first (and whether it was given as 0), the other, and
** why; NULL if none. */
typedef struct mp_optclash {
  const char *a;
  int a_zero;
  const char *b;
  const char *why;
} mp_optclash;
const mp_optclash *mp_opt_clash(const ljmp_options *o, int no_stacks);

/* Copy the caller's options into *o (see ljmp_options.size) and check all
** ljmp_start() takes of them (one sink, the path and its % sequences, the
** bounds of the table, the rules between options); ljmp_arm() checks the
** same: 0, or LJMP_EARG with a one-line message into msg (NULL: none; cut
** to size). */
int mp_options_read(ljmp_options *o, const ljmp_options *user, char *msg,
		    size_t size);

/* Path with %p (the process id), %n (n: the number of this start in the
** process) and %% replaced, into out; 0, -1 if the path has another %
** sequence, -2 if it does not fit. */
int mp_path_expand(const char *path, char *out, size_t size, unsigned long n);
/* 0 if the % sequences of a profile's path are all known (%p, %n, %%),
** -1 if not, -2 if the path expanded does not fit in MP_PATH_MAX. */
int mp_path_check(const char *path);
/* What is wrong with a path, for mp_path_check()'s -1 or -2. */
const char *mp_path_why(int rc);
#define MP_PATH_PCT	"% must be followed by p (the pid), n (the number " \
			"of the start) or %"

/* The directory of a profile's path (before its last '/'; "." if it has
** none) into dir, %% made %: 0, or -1 if it holds %p or %n (what a
** signal's recording would expand differently: the pid changes at fork)
** or does not fit. */
int mp_path_dir(const char *path, char *dir, size_t size);
#define MP_DIR_PCT	"the directory must not hold %p or %n: it is checked " \
			"when the signal is armed"

/* Open the file of a profile or a snapshot at path (expanded), created
** with mode (0600 unless given): a file descriptor, or -errno,
** LJMP_ESYMLINK, LJMP_ENOREADER; *created says whether this call made
** the file (an existing one is not truncated here). A symbolic link in
** the last component is never followed, by either open (one planted in a
** shared sticky directory would make the profile overwrite its target,
** or create a file where a dangling one points). O_NONBLOCK makes the
** open of a FIFO without a reader fail instead of blocking forever: it is
** tried again for 5 s (a reader started at about the same time, `cat
** fifo &`, opens it a little later), then refused; O_NONBLOCK is cleared
** after the open, so the writes block as any file's do. */
int mp_path_open(const char *path, unsigned mode, int *created);

/* Why stacks = 0 is refused with sampling. */
#define MP_SAMPLE_STACKS	"sampled profiles record call stacks (leave " \
				"stacks out for 64 frames, or give 1 to 10000)"

#endif
