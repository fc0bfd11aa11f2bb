/*
** native_threads.c: a program embedding LuaJIT (the agent linked in) that
** runs a Lua script with ljmemprof in package.preload, for
** tests/agent-native-tsan.t: built under ThreadSanitizer, its script
** records native memory again and again while threads of a C module
** allocate. Exits with the script's status.
*/

#include <stdio.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "ljmemprof.h"

int main(int argc, char **argv)
{
  lua_State *L;
  int rc;
  if (argc != 2) {
    fprintf(stderr, "usage: native_threads SCRIPT\n");
    return 2;
  }
  L = luaL_newstate();
  if (!L) return 2;
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_ljmemprof);
  lua_setfield(L, -2, "ljmemprof");
  lua_pop(L, 2);
  rc = luaL_dofile(L, argv[1]);
  if (rc) fprintf(stderr, "native_threads: %s\n", lua_tostring(L, -1));
  lua_close(L);
  return rc != 0;
}
