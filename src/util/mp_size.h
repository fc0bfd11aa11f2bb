/*
** mp_size.h: sizes as people type them ("512K", "100M", "65536"), for the
** agent's LJMEMPROF variable and the command line alike.
*/

#ifndef MP_SIZE_H
#define MP_SIZE_H

#include <errno.h>
#include <stdlib.h>

/* Digits with an optional K, M or G (powers of 1024, either case), at
** most 2^50; -1 if v is anything else. */
static inline long long mp_parse_size(const char *v)
{
  char *end;
  long long n;
  if (*v < '0' || *v > '9') return -1;
  errno = 0;
  n = strtoll(v, &end, 10);
  if (errno || n > (1ll << 50)) return -1;
  switch (*end) {
  case 'K': case 'k': n <<= 10; end++; break;
  case 'M': case 'm': n <<= 20; end++; break;
  case 'G': case 'g': n <<= 30; end++; break;
  }
  return *end || n > (1ll << 50) ? -1 : n;
}

#endif
