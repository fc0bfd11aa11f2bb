/*
** native_host.c: a program embedding LuaJIT whose lua_Alloc is malloc,
** realloc and free, profiling itself with native = 1 through the C API
** (the agent linked in), for tests/agent-native-host.t: the VM's heap
** must not come again as native memory. Writes the profile to argv[1];
** exits 1 if a call of the API returned what it should not (said on
** stdout).
*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "ljmemprof.h"

static int n_test, n_failed;	/* Checks made, failed. */

/* Say a check that failed. */
static void ok(int cond, const char *name)
{
  n_test++;
  if (!cond) n_failed++;
  if (!cond) printf("# failed: %s\n", name);
}

/* The VM's allocator: the C library's. */
static void *host_alloc(void *ud, void *p, size_t osize, size_t nsize)
{
  (void)ud;
  (void)osize;
  if (!nsize) {
    free(p);
    return NULL;
  }
  return realloc(p, nsize);
}

/* hostchurn(n, k): k blocks of n bytes, malloc'd and freed. */
static int hostchurn(lua_State *L)
{
  size_t n = (size_t)luaL_checkinteger(L, 1);
  int k = (int)luaL_checkinteger(L, 2), i;
  for (i = 0; i < k; i++) {
    char *p = malloc(n);
    if (!p) return luaL_error(L, "out of memory");
    p[0] = 1;
    free(p);
  }
  return 0;
}

/* hostleak(n): n bytes never freed. */
static int hostleak(lua_State *L)
{
  char *p = malloc((size_t)luaL_checkinteger(L, 1));
  if (p) p[0] = 1;
  lua_pushboolean(L, p != NULL);
  return 1;
}

static const char code[] =
  "jit.off()\n"
  "local t = {}\n"
  "for i = 1, 100 do t[i] = { i, tostring(i) } end\n"
  "hostchurn(1000, 25)\n"
  "hostleak(4321)\n";

int main(int argc, char **argv)
{
  ljmp_options o = LJMP_OPTIONS_INIT;
  char msg[200];
  lua_State *L;
  int rc;
  if (argc != 2) {
    fprintf(stderr, "usage: native_host PROFILE\n");
    return 2;
  }
  L = lua_newstate(host_alloc, NULL);
  if (!L) return 2;
  luaL_openlibs(L);
  lua_register(L, "hostchurn", hostchurn);
  lua_register(L, "hostleak", hostleak);
  o.path = argv[1];
  o.native = 1;
  o.sample = 4096;
  ok(ljmp_options_check(&o, msg, sizeof(msg)) == 0,
     "native with sample is good (native events are sampled too)");
  o.sample = 0;
  ok(ljmp_options_check(&o, msg, sizeof(msg)) == 0, "native alone is good");
  ok((rc = ljmp_start(L, &o)) == 0, "start with native = 1");
  if (rc) printf("# %s\n", ljmp_strerror(rc));
  ok(luaL_dostring(L, code) == 0, "the script runs");
  ok(ljmp_stop(L) == 0, "stop");
  o.path = "/dev/null";
  ok((rc = ljmp_start(L, &o)) == 0, "a second native recording");
  ok(ljmp_stop(L) == 0, "and its stop");
  lua_close(L);
  return n_failed != 0;
}
