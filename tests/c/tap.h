/*
** tap.h: TAP for the C unit tests that check a structure against a model.
**
**   OK(cond, name, fmt, ...)   "ok N - name", or "not ok" and the details
**   next()                     the next number of a fixed xorshift sequence
** Print "1..n_test" at the end and return n_fail != 0.
*/

#ifndef TAP_H
#define TAP_H

#include <stdint.h>
#include <stdio.h>

static int n_test, n_fail;

#define OK(cond, name, ...) \
  do { \
    n_test++; \
    if (cond) printf("ok %d - %s\n", n_test, name); \
    else { \
      n_fail++; \
      printf("not ok %d - %s\n# ", n_test, name); \
      printf(__VA_ARGS__); \
      printf("\n"); \
    } \
  } while (0)

static uint64_t rng = 88172645463325252ull;

/* xorshift64: the same sequence in every run. */
static uint64_t next(void)
{
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return rng;
}

#endif
