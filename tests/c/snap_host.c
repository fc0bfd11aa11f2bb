/*
** snap_host.c: an application that keeps a table with luaL_ref and takes
** a heap snapshot through the C API (ljmp_snapshot): prints the reference
** and the return codes, for tests/heap-snapshot.t.
*/

#include <stdio.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "ljmemprof.h"

int main(int argc, char **argv)
{
  lua_State *L;
  ljmp_options opt = LJMP_OPTIONS_INIT, bad = LJMP_OPTIONS_INIT;
  int ref, i, rc, rcbad;
  if (argc != 2) return 2;
  L = luaL_newstate();
  luaL_openlibs(L);
  lua_newtable(L);
  for (i = 1; i <= 3; i++) {
    lua_newtable(L);
    lua_rawseti(L, -2, i);
  }
  ref = luaL_ref(L, LUA_REGISTRYINDEX);
  opt.path = argv[1];
  rc = ljmp_snapshot(L, &opt);
  bad.path = argv[1];
  bad.stacks = 8;	/* Not an option of a snapshot. */
  rcbad = ljmp_snapshot(L, &bad);
  printf("ref=%d rc=%d stacks=%d null=%d\n", ref, rc, rcbad,
	 ljmp_snapshot(NULL, &opt));
  lua_close(L);
  return 0;
}
