/*
** mp_error.c: the agent's error codes and what is said of them (see
** mp_error.h).
*/

#include <errno.h>
#include <string.h>

#include "ljmemprof.h"
#include "mp_error.h"

static const struct mp_error {
  int code;
  int eno;	/* Its errno in Lua's returns (0: the failing call's). */
  int of_path;	/* Said of the profile's path. */
  const char *message;
} errors[] = {
  { 0, 0, 0, "success" },
  { LJMP_ERUNNING, EINVAL, 0, "profiler is running already" },
  { LJMP_ENOTRUN, EINVAL, 0, "profiler is not running" },
  { LJMP_EARG, EINVAL, 0, "bad profiler options" },
  { LJMP_EVM, EINVAL, 0, "this LuaJIT does not match the one ljmemprof was "
			 "built for" },
  { LJMP_ENOMEM, ENOMEM, 0, "not enough memory for the profiler" },
  { LJMP_EWRAPPED, EINVAL, 0, "the allocator was replaced while profiling; "
			      "recording stopped and the profile is "
			      "finalised" },
  { LJMP_ETHREAD, 0, 0, "cannot start the profiler's writer thread" },
  { LJMP_EBUSY, EBUSY, 1, "another profiler in this process is writing "
			  "this file" },
  { LJMP_ESIGNAL, EINVAL, 0, "that signal cannot toggle the profiler: the "
			     "program handles it, or another signal is "
			     "armed" },
  { LJMP_ESYMLINK, ELOOP, 1, "is a symbolic link, which the profiler never "
			     "follows (give the path of the file itself)" },
  { LJMP_ENOREADER, ENXIO, 1, "is a FIFO that no process read within 5 s "
			      "(start the reader first)" },
  { LJMP_EFINALIZER, EINVAL, 0, "a finaliser raised an error in the "
				"collection before the end (caught; the "
				"profile is complete)" },
};

/* The row of code, or NULL (-errno codes, unknown ones). */
static const struct mp_error *row_of(int code)
{
  size_t i;
  for (i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
    if (errors[i].code == code) return &errors[i];
  return NULL;
}

/* See ljmemprof.h. */
const char *ljmp_strerror(int code)
{
  const struct mp_error *e = row_of(code);
  if (e) return e->message;
  if (code < 0 && code > LJMP_E_BASE) return strerror(-code);
  return "unknown error";
}

/* See mp_error.h. */
int mp_error_errno(int code, int sys)
{
  const struct mp_error *e = row_of(code);
  if (code < 0 && code > LJMP_E_BASE) return -code;
  if (!e) return EINVAL;
  return e->eno ? e->eno : sys;
}

/* See mp_error.h. */
int mp_error_of_path(int code)
{
  const struct mp_error *e = row_of(code);
  return (code < 0 && code > LJMP_E_BASE) || (e && e->of_path);
}
