/*
** lib_ljmemprof.c: the Lua module `ljmemprof`.
**
**   local mp = require("ljmemprof")
**   mp.start([path | {path = "file", bufsize = n, mode = "644", stacks = n,
**             sample = bytes, seed = n, max_size = bytes, collect = bool}])
**                                                    -> true | nil, msg, errno
**   mp.stop([{collect = true}])                      -> true | nil, msg, errno
**   mp.running()                                     -> boolean
**   mp.compat()   installs misc.memprof.start/stop (Tarantool's names)
**
** Messages and errno values are those of Tarantool's misc.memprof, so
** scripts written for it keep working. The default path is memprof.bin in
** the current directory.
*/

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"

#include "ljmemprof.h"
#include "mp_agent.h"
#include "mp_check.h"
#include "mp_heap_walk.h"

#define MP_DEFAULT_PATH	"memprof.bin"

/* Push nil, message, errno for an ljmp_* error code (errno as left by the
** failing call, for LJMP_ETHREAD); returns 3. */
static int push_error(lua_State *L, int code, const char *path)
{
  int e = code < 0 && code > LJMP_E_BASE ? -code :
	  code == LJMP_ETHREAD ? errno : code == LJMP_EBUSY ? EBUSY :
	  code == LJMP_ENOMEM ? ENOMEM : code == LJMP_ESYMLINK ? ELOOP :
	  code == LJMP_ENOREADER ? ENXIO : EINVAL;
  int of_path = (code < 0 && code > LJMP_E_BASE) || code == LJMP_EBUSY ||
		code == LJMP_ESYMLINK || code == LJMP_ENOREADER;
  lua_pushnil(L);
  if (code == LJMP_ETHREAD)
    lua_pushfstring(L, "%s: %s", ljmp_strerror(code), strerror(e));
  else if (path && of_path)
    lua_pushfstring(L, "%s: %s", path, ljmp_strerror(code));
  else
    lua_pushstring(L, ljmp_strerror(code));
  lua_pushinteger(L, e);
  return 3;
}

/* The function whose options are read, and their argument number, for
** messages. Argument errors name the function themselves: luaL_argerror
** takes the name from the call site, '?' through pcall. */
static const char *opt_fname = "start";
static int opt_arg = 1;

/* Raise an error about option `key` of the options table. */
static int bad_option(lua_State *L, const char *key, const char *what)
{
  return luaL_error(L, "bad argument #%d to '%s' (options.%s %s)", opt_arg,
		    opt_fname, key, what);
}

/* An integer option value in [lo, hi], or an error naming the option. */
static double int_option(lua_State *L, const char *key, double lo, double hi)
{
  double n;
  if (lua_type(L, -1) != LUA_TNUMBER)
    bad_option(L, key, "must be a number");
  n = lua_tonumber(L, -1);
  if (n < lo || n > hi || n != (double)(long long)n) {
    char what[96];
    snprintf(what, sizeof(what), "must be an integer from %.0f to %.0f", lo,
	     hi);
    bad_option(L, key, what);
  }
  return n;
}

/* The mode option: a string of octal digits ("644", "0600") or a number
** from 0 to 0777. Lua has no octal literals, so mode = 0644 is the number
** 644 (01204, with the sticky bit): out of range, and the error says how
** to write it. Setuid, setgid and sticky bits make no sense for a
** profile. */
static unsigned mode_option(lua_State *L, const char *key)
{
  char what[192];
  double n;
  if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len, i;
    const char *s = lua_tolstring(L, -1, &len);
    unsigned m = 0;
    for (i = 0; i < len && s[i] >= '0' && s[i] <= '7' && m <= 0777; i++)
      m = m * 8 + (unsigned)(s[i] - '0');
    if (i < len || !len || m > 0777) {
      snprintf(what, sizeof(what), "must be octal digits from \"0\" to "
	       "\"777\" (e.g. \"644\"), not \"%.*s\"",
	       len > 32 ? 32 : (int)len, s);
      bad_option(L, key, what);
    }
    return m;
  }
  if (lua_type(L, -1) != LUA_TNUMBER)
    bad_option(L, key, "must be a string of octal digits (\"644\") or a "
	       "number");
  n = lua_tonumber(L, -1);
  if (n >= 0 && n <= 0777 && n == (double)(int)n) return (unsigned)n;
  /* 644 read as octal is a mode: say so. */
  if (n > 0777 && n <= 777 && n == (double)(int)n &&
      (int)n % 10 <= 7 && (int)n / 10 % 10 <= 7 && (int)n / 100 <= 7)
    snprintf(what, sizeof(what), "must be a file mode from 0 to 511 (0777 "
	     "in octal), not %d: Lua numbers are decimal; write mode = "
	     "\"%d\" or tonumber(\"%d\", 8)", (int)n, (int)n, (int)n);
  else
    snprintf(what, sizeof(what), "must be a file mode from 0 to 511 (0777 "
	     "in octal), not %.14g: Lua numbers are decimal; write an octal "
	     "mode as a string, e.g. mode = \"644\"", n);
  bad_option(L, key, what);
  return 0;
}

/* Read the options table at index idx of function fname into *opt.
** Iterates over the table rather than looking keys up, so that an unknown
** key is an error and no key string is made (which would be garbage freed
** while recording). */
static void read_options(lua_State *L, int idx, const char *fname,
			 ljmp_options *opt)
{
  int no_stacks = 0;	/* stacks = 0 or false was given. */
  opt_fname = fname;
  opt_arg = idx;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *key;
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "bad argument #%d to '%s' (option names must be "
		 "strings)", idx, fname);
    key = lua_tostring(L, -2);
    if (!strcmp(key, "path")) {
      if (lua_type(L, -1) != LUA_TSTRING) bad_option(L, key, "must be a string");
      opt->path = lua_tostring(L, -1);
    } else if (!strcmp(key, "bufsize")) {
      opt->bufsize = (size_t)int_option(L, key, (double)MP_BUFSIZE_MIN,
					   (double)LJMP_BUFSIZE_MAX);
    } else if (!strcmp(key, "mode")) {
      opt->mode = mode_option(L, key);
    } else if (!strcmp(key, "collect")) {
      if (lua_type(L, -1) != LUA_TBOOLEAN)
	bad_option(L, key, "must be a boolean");
      opt->collect = lua_toboolean(L, -1);
    } else if (!strcmp(key, "native")) {
      if (lua_type(L, -1) != LUA_TBOOLEAN)
	bad_option(L, key, "must be a boolean");
      opt->native = lua_toboolean(L, -1);
    } else if (!strcmp(key, "sample")) {
      if (lua_type(L, -1) == LUA_TBOOLEAN)
	opt->sample = lua_toboolean(L, -1) ? LJMP_SAMPLE_DEFAULT : 0;
      else if (lua_type(L, -1) == LUA_TNUMBER)
	opt->sample = (size_t)int_option(L, key, 0, (double)(1ull << 40));
      else
	bad_option(L, key, "must be a number of bytes or a boolean");
    } else if (!strcmp(key, "seed")) {
      opt->seed = (unsigned long long)int_option(L, key, 0, 0x1p53);
    } else if (!strcmp(key, "max_size")) {
      opt->max_size = (size_t)int_option(L, key, LJMP_MAX_SIZE_MIN, 0x1p53);
    } else if (!strcmp(key, "stacks")) {
      if (lua_type(L, -1) == LUA_TBOOLEAN)
	opt->stacks = lua_toboolean(L, -1) ? LJMP_STACKS_DEFAULT : 0;
      else if (lua_type(L, -1) == LUA_TNUMBER)
	opt->stacks = (unsigned)int_option(L, key, 0, LJMP_STACKS_MAX);
      else
	bad_option(L, key, "must be a number of frames or a boolean");
      no_stacks = !opt->stacks;
    } else {
      luaL_error(L, "bad argument #%d to '%s' (unknown option '%s'; "
		 "options are path, bufsize, mode, stacks, sample, seed, "
		 "max_size, collect, native)", idx, fname, key);
    }
    lua_pop(L, 1);
  }
  /* ljmp_options cannot say "0 given": it would mean 64 frames. */
  if (no_stacks && opt->sample)
    bad_option(L, "stacks", "= 0 cannot go with sample: " MP_SAMPLE_STACKS);
  if (no_stacks && opt->native)
    bad_option(L, "stacks", "= 0 cannot go with native: native events "
	       "carry call stacks");
}

/* A path must not be empty (open() would say only "No such file or
** directory") and its % sequences must be known (see ljmp_start). */
static void check_path(lua_State *L, int idx, const char *fname,
		       const char *path)
{
  int rc = mp_path_check(path);
  if (!*path)
    luaL_error(L, "bad argument #%d to '%s' (path is empty)", idx, fname);
  if (rc)
    luaL_error(L, "bad argument #%d to '%s' (path '%s': %s)", idx, fname,
	       path, mp_path_why(rc));
}

/* mp.start([path | options]) */
static int mp_lua_start(lua_State *L)
{
  ljmp_options opt = LJMP_OPTIONS_INIT;
  int rc;
  opt.path = MP_DEFAULT_PATH;
  switch (lua_type(L, 1)) {
  case LUA_TNONE: case LUA_TNIL:
    break;
  case LUA_TSTRING:
    opt.path = lua_tostring(L, 1);
    break;
  case LUA_TTABLE:
    read_options(L, 1, "start", &opt);
    break;
  default:
    return luaL_error(L, "bad argument #1 to 'start' (path string or "
		      "options table expected)");
  }
  if (ljmp_running(L)) return push_error(L, LJMP_ERUNNING, NULL);
  check_path(L, 1, "start", opt.path);
  rc = ljmp_start(L, &opt);
  if (rc) return push_error(L, rc, opt.path);
  lua_pushboolean(L, 1);
  return 1;
}

/* mp.signal(signal, [path | options]): arm signal (a name such as "USR2"
** or a number) to toggle recording with these options. */
static int mp_lua_signal(lua_State *L)
{
  ljmp_options opt = LJMP_OPTIONS_INIT;
  char dir[MP_PATH_MAX];
  int signo = 0, rc;
  opt.path = MP_DEFAULT_PATH;
  if (lua_type(L, 1) == LUA_TSTRING)
    signo = mp_signal_number(lua_tostring(L, 1));
  else if (lua_type(L, 1) == LUA_TNUMBER &&
	   lua_tonumber(L, 1) == (lua_Number)lua_tointeger(L, 1) &&
	   mp_signal_ok((int)lua_tointeger(L, 1)))
    signo = (int)lua_tointeger(L, 1);
  if (!signo)
    return luaL_error(L, "bad argument #1 to 'signal' (a signal that can "
		      "toggle the profiler expected (USR1, USR2, HUP, WINCH, "
		      "URG, PWR, RTMIN+n, RTMAX-n, or its number))");
  switch (lua_type(L, 2)) {
  case LUA_TNONE: case LUA_TNIL:
    break;
  case LUA_TSTRING:
    opt.path = lua_tostring(L, 2);
    break;
  case LUA_TTABLE:
    read_options(L, 2, "signal", &opt);
    break;
  default:
    return luaL_error(L, "bad argument #2 to 'signal' (path string or "
		      "options table expected)");
  }
  check_path(L, 2, "signal", opt.path);
  if (mp_path_dir(opt.path, dir, sizeof(dir)) < 0)
    return luaL_error(L, "bad argument #2 to 'signal' (path '%s': %s)",
		      opt.path, MP_DIR_PCT);
  rc = ljmp_arm(L, signo, &opt);
  if (rc < 0 && rc > LJMP_E_BASE) {
    lua_pushnil(L);
    lua_pushfstring(L, "directory %s: %s", dir, ljmp_strerror(rc));
    lua_pushinteger(L, -rc);
    return 3;
  }
  if (rc == LJMP_ERUNNING) {
    lua_pushnil(L);
    lua_pushstring(L, "a signal is armed for this VM already");
    lua_pushinteger(L, EBUSY);
    return 3;
  }
  if (rc == LJMP_ESIGNAL) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", strsignal(signo), ljmp_strerror(rc));
    lua_pushinteger(L, EBUSY);
    return 3;
  }
  if (rc) return push_error(L, rc, NULL);
  lua_pushboolean(L, 1);
  return 1;
}

/* The options table of stop() at index 1: flags for ljmp_stop_with(). */
static unsigned stop_options(lua_State *L)
{
  unsigned flags = 0;
  if (lua_isnoneornil(L, 1)) return 0;
  if (!lua_istable(L, 1))
    luaL_error(L, "bad argument #1 to 'stop' (options table expected)");
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2)
							 : NULL;
    if (!key || strcmp(key, "collect"))
      luaL_error(L, "bad argument #1 to 'stop' (unknown option '%s'; the "
		 "option is collect)", key ? key : luaL_typename(L, -2));
    if (lua_type(L, -1) != LUA_TBOOLEAN)
      luaL_error(L, "bad argument #1 to 'stop' (options.collect must be a "
		 "boolean)");
    if (lua_toboolean(L, -1)) flags |= LJMP_STOP_COLLECT;
    lua_pop(L, 1);
  }
  return flags;
}

/* mp.stop([{collect = true}]) */
static int mp_lua_stop(lua_State *L)
{
  char path[4096] = "";
  mp_state *s = mp_state_find(L);
  unsigned flags = stop_options(L);
  int rc;
  char why[512];
  /* The options table is read: off the stack before the collection, so
     that mp.stop{collect = true} does not keep its own table alive through
     it (a leak of 2 blocks on the caller's line). */
  lua_settop(L, 0);
  if (s && s->path) snprintf(path, sizeof(path), "%s", s->path);
  rc = mp_stop(L, flags, why, sizeof(why));
  if (rc == LJMP_EFINALIZER) {	/* The finaliser's error, said. */
    lua_pushnil(L);
    lua_pushfstring(L, "%s%s%s: %s", path, *path ? ": " : "",
		    ljmp_strerror(rc), why);
    lua_pushinteger(L, EINVAL);
    return 3;
  }
  if (rc) return push_error(L, rc, rc == LJMP_ENOTRUN || !*path ? NULL : path);
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
  {"signal", mp_lua_signal},
  {"compat", mp_lua_compat},
  {"snapshot", mp_lua_snapshot},
  {NULL, NULL}
};

/* require("ljmemprof"): check the VM, pin the module, return the API. */
int luaopen_ljmemprof(lua_State *L)
{
  const char *why = mp_check_vm(L, luaopen_ljmemprof, 1);
  if (why)
    return luaL_error(L, "ljmemprof: %s: %s; rebuild ljmemprof against "
		      "the source of this LuaJIT (LUAJIT_SRC)",
		      ljmp_strerror(LJMP_EVM), why);
  pin_module();
  mp_sentinel_install(L);
  mp_names_check(L);
  lua_newtable(L);
  luaL_register(L, NULL, mp_funcs);
  lua_pushliteral(L, "ljmemprof " LJMP_VERSION);
  lua_setfield(L, -2, "_VERSION");
  lua_pushliteral(L, MP_DEFAULT_PATH);
  lua_setfield(L, -2, "DEFAULT_PATH");
  {	/* Last: what the module makes for itself is no event of a profile. */
    char err[512];
    if (mp_env_start(L, err, sizeof(err)) < 0)
      return luaL_error(L, "ljmemprof: LJMEMPROF: %s", err);
  }
  return 1;
}
