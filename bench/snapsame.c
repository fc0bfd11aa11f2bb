/*
** snapsame.c: whether two builds of the agent write the same heap
** snapshot, byte for byte (bench/README.md, "Heap snapshot writer").
**
**   snapsame A.so B.so SCRIPT OUT_A OUT_B [ARG...]
**
** Runs SCRIPT (ARGs in the global arg) in one VM, then takes a snapshot
** with ljmp_snapshot() of A.so into OUT_A and of B.so into OUT_B, both
** called from here: the heap, its addresses and the stack are the same
** for both, which two processes could not promise (the allocator's
** addresses vary from run to run). Compare the files with cmp(1).
*/

#include <dlfcn.h>
#include <stdio.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "ljmemprof.h"

typedef int (*snap_fn)(lua_State *, const ljmp_options *);

/* Take a snapshot with the agent in so into out; its return code. */
static int snap(lua_State *L, const char *so, const char *out)
{
  ljmp_options opt = LJMP_OPTIONS_INIT;
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  snap_fn f = h ? (snap_fn)dlsym(h, "ljmp_snapshot") : NULL;
  if (!f) {
    fprintf(stderr, "snapsame: %s: %s\n", so, dlerror());
    return -1;
  }
  opt.path = out;
  return f(L, &opt);
}

int main(int argc, char **argv)
{
  lua_State *L;
  int i, ra, rb;
  if (argc < 6) {
    fprintf(stderr, "usage: snapsame A.so B.so SCRIPT OUT_A OUT_B [ARG...]\n");
    return 2;
  }
  L = luaL_newstate();
  luaL_openlibs(L);
  lua_newtable(L);
  for (i = 6; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - 5);
  }
  lua_setglobal(L, "arg");
  if (luaL_dofile(L, argv[3])) {
    fprintf(stderr, "snapsame: %s\n", lua_tostring(L, -1));
    return 1;
  }
  ra = snap(L, argv[1], argv[4]);
  rb = snap(L, argv[2], argv[5]);
  printf("%d %d\n", ra, rb);
  return ra || rb;
}
