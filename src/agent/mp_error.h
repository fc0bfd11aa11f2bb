/*
** mp_error.h: the one table of the agent's error codes (the LJMP_E* of
** ljmemprof.h): each code's message, the errno that Lua's nil, message,
** errno returns give for it, and whether its message names the path
** (mp_error.c).
*/

#ifndef MP_ERROR_H
#define MP_ERROR_H

/* The errno of code (-errno codes: that errno; LJMP_ETHREAD: the errno
** its failing call left, given as sys). */
int mp_error_errno(int code, int sys);
/* Whether code is about the profile's file (its message follows the
** path: "PATH: is a symbolic link..."). */
int mp_error_of_path(int code);

#endif
