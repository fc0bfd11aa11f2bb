/*
** lib_ljmemprof.c: the Lua module `ljmemprof`.
**
**   local mp = require("ljmemprof")
**   mp.start([path | {path = "file", bufsize = n}])  -> true | nil, msg, errno
**   mp.stop()                                        -> true | nil, msg, errno
**   mp.running()                                     -> boolean
**   mp.compat()   installs misc.memprof.start/stop (Tarantool's names)
**
** Messages and errno values are those of Tarantool's misc.memprof, so
** scripts written for it keep working. The default path is memprof.bin in
** the current directory.
*/

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"

#include "ljmemprof.h"
#include "mp_agent.h"
#include "mp_check.h"

#define MP_DEFAULT_PATH	"memprof.bin"
#define MP_PATHKEY	"ljmemprof.path"	/* Registry: path being written. */

/* Push nil, message, errno for an ljmp_* error code; returns 3. */
static int push_error(lua_State *L, int code, const char *path)
{
  int e = code < 0 && code > LJMP_E_BASE ? -code : EINVAL;
  lua_pushnil(L);
  if (path && code < 0 && code > LJMP_E_BASE)
    lua_pushfstring(L, "%s: %s", path, ljmp_strerror(code));
  else
    lua_pushstring(L, ljmp_strerror(code));
  lua_pushinteger(L, e);
  return 3;
}

/* mp.start([path | options]) */
static int mp_lua_start(lua_State *L)
{
  ljmp_options opt;
  int rc;
  memset(&opt, 0, sizeof(opt));
  opt.path = MP_DEFAULT_PATH;
  switch (lua_type(L, 1)) {
  case LUA_TNONE: case LUA_TNIL:
    break;
  case LUA_TSTRING:
    opt.path = lua_tostring(L, 1);
    break;
  case LUA_TTABLE:
    lua_getfield(L, 1, "path");
    if (lua_type(L, -1) == LUA_TSTRING) opt.path = lua_tostring(L, -1);
    else if (!lua_isnil(L, -1))
      return luaL_argerror(L, 1, "options.path must be a string");
    lua_getfield(L, 1, "bufsize");
    if (lua_type(L, -1) == LUA_TNUMBER) {
      lua_Number n = lua_tonumber(L, -1);
      if (n < 4096 || n > (lua_Number)(1u << 30) || n != (lua_Number)(size_t)n)
	return luaL_argerror(L, 1, "options.bufsize must be an integer "
			     "from 4096 to 2^30");
      opt.bufsize = (size_t)n;
    } else if (!lua_isnil(L, -1)) {
      return luaL_argerror(L, 1, "options.bufsize must be a number");
    }
    break;
  default:
    return luaL_argerror(L, 1, "path string or options table expected");
  }
  if (ljmp_running(L)) return push_error(L, LJMP_ERUNNING, NULL);
  /* Remember the path for stop()'s messages before recording starts, so
  ** that this allocation is not in the profile. */
  lua_pushstring(L, opt.path);
  lua_setfield(L, LUA_REGISTRYINDEX, MP_PATHKEY);
  rc = ljmp_start(L, &opt);
  if (rc) return push_error(L, rc, opt.path);
  lua_pushboolean(L, 1);
  return 1;
}

/* mp.stop() */
static int mp_lua_stop(lua_State *L)
{
  int rc = ljmp_stop(L);
  if (rc) {
    const char *path;
    lua_getfield(L, LUA_REGISTRYINDEX, MP_PATHKEY);
    path = lua_tostring(L, -1);
    return push_error(L, rc, rc == LJMP_ENOTRUN ? NULL : path);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* mp.running() */
static int mp_lua_running(lua_State *L)
{
  lua_pushboolean(L, ljmp_running(L));
  return 1;
}

/* mp.compat(): misc.memprof.start/stop for scripts written for Tarantool. */
static int mp_lua_compat(lua_State *L)
{
  lua_getglobal(L, "misc");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "misc");
  }
  lua_newtable(L);
  lua_pushcfunction(L, mp_lua_start);
  lua_setfield(L, -2, "start");
  lua_pushcfunction(L, mp_lua_stop);
  lua_setfield(L, -2, "stop");
  lua_setfield(L, -2, "memprof");
  return 1;
}

/* Keep this module mapped for the life of the process: a hook left behind
** in some VM must never point into unmapped code. */
static void pin_module(void)
{
  Dl_info info;
  if (dladdr((void *)luaopen_ljmemprof, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static const luaL_Reg mp_funcs[] = {
  {"start", mp_lua_start},
  {"stop", mp_lua_stop},
  {"running", mp_lua_running},
  {"compat", mp_lua_compat},
  {NULL, NULL}
};

/* require("ljmemprof"): check the VM, pin the module, return the API. */
int luaopen_ljmemprof(lua_State *L)
{
  const char *why = mp_check_vm(L, luaopen_ljmemprof);
  if (why)
    return luaL_error(L, "ljmemprof: %s: %s; rebuild ljmemprof against "
		      "the source of this LuaJIT (LUAJIT_SRC)",
		      ljmp_strerror(LJMP_EVM), why);
  pin_module();
  mp_sentinel_install(L);
  lua_newtable(L);
  luaL_register(L, NULL, mp_funcs);
  lua_pushliteral(L, "ljmemprof 0.1");
  lua_setfield(L, -2, "_VERSION");
  lua_pushliteral(L, MP_DEFAULT_PATH);
  lua_setfield(L, -2, "DEFAULT_PATH");
  return 1;
}
