/*
** native_unload.c: a library of the tests that calls malloc and free, to
** be loaded with ffi.load while recording and unloaded (dlclose) before
** stop (tests/agent-native.t): stop must not write into it.
*/

#include <stdlib.h>

/* malloc(n) and free it; 1 if malloc succeeded. */
int native_unload_churn(size_t n)
{
  char *p = malloc(n);
  if (!p) return 0;
  p[0] = 1;
  free(p);
  return 1;
}
