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
#include "mp_api.h"
#include "mp_arm.h"
#include "mp_error.h"
#include "mp_names.h"
#include "mp_options.h"

#define MP_DEFAULT_PATH	"memprof.bin"

/* Push nil, message, errno for an ljmp_* error code (errno as left by the
** failing call, for LJMP_ETHREAD); returns 3. */
static int push_error(lua_State *L, int code, const char *path)
{
  int e = mp_error_errno(code, errno);
  lua_pushnil(L);
  if (code == LJMP_ETHREAD)
    lua_pushfstring(L, "%s: %s", ljmp_strerror(code), strerror(e));
  else if (path && mp_error_of_path(code))
    lua_pushfstring(L, "%s: %s", path, ljmp_strerror(code));
  else
    lua_pushstring(L, ljmp_strerror(code));
  lua_pushinteger(L, e);
  return 3;
}

/* Push nil, message, errno for a snapshot's error code rc (the path the
** snapshot was written to, as expanded, in path). */
static int push_snapshot_error(lua_State *L, int rc, const char *path)
{
  if (rc == -EFBIG) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: the snapshot reached max_size: it is cut short",
		    path);
    lua_pushinteger(L, EFBIG);
    return 3;
  }
  return push_error(L, rc, path);
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
			 unsigned front, ljmp_options *opt)
{
  int no_stacks = 0;	/* stacks = 0 or false was given. */
  const mp_optclash *c;
  char what[200];
  opt_fname = fname;
  opt_arg = idx;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const mp_optdef *d;
    const char *key;
    long long v;
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "bad argument #%d to '%s' (option names must be "
		 "strings)", idx, fname);
    key = lua_tostring(L, -2);
    if (!(d = mp_opt_find(key, front)))
      luaL_error(L, "bad argument #%d to '%s' (unknown option '%s'; "
		 "options are %s)", idx, fname, key,
		 mp_opt_names(front, what, sizeof(what)));
    switch (d->kind) {
    case MP_OK_PATH:	/* path, snapshot. */
      if (lua_type(L, -1) != LUA_TSTRING) bad_option(L, key, "must be a string");
      mp_opt_store_path(opt, d, lua_tostring(L, -1));
      break;
    case MP_OK_MODE:
      opt->mode = mode_option(L, key);
      break;
    case MP_OK_BOOL:
      if (lua_type(L, -1) != LUA_TBOOLEAN)
	bad_option(L, key, "must be a boolean");
      mp_opt_store(opt, d, lua_toboolean(L, -1));
      break;
    default:	/* A number, or true for what it stands for. */
      if (d->yes >= 0 && lua_type(L, -1) == LUA_TBOOLEAN)
	v = lua_toboolean(L, -1) ? d->yes : 0;
      else if (d->yes < 0 || lua_type(L, -1) == LUA_TNUMBER)
	v = (long long)int_option(L, key, (double)d->lo, (double)d->hi);
      else
	v = bad_option(L, key, d->kind == MP_OK_FRAMES ?
		       "must be a number of frames or a boolean" :
		       "must be a number of bytes or a boolean");
      mp_opt_store(opt, d, v);
      if (d->kind == MP_OK_FRAMES) no_stacks = !v;
      break;
    }
    lua_pop(L, 1);
  }
  if ((c = mp_opt_clash(opt, no_stacks)) != NULL) {
    snprintf(what, sizeof(what), "%scannot go with %s: %s",
	     c->a_zero ? "= 0 " : "", c->b, c->why);
    bad_option(L, c->a, what);
  }
}

/* A path must not be empty (open() would say only "No such file or
** directory") and its % sequences must be known (see ljmp_start); what:
** which path ("path", "snapshot"). */
static void check_path_of(lua_State *L, int idx, const char *fname,
			  const char *what, const char *path)
{
  int rc = mp_path_check(path);
  if (!*path)
    luaL_error(L, "bad argument #%d to '%s' (%s is empty)", idx, fname, what);
  if (rc)
    luaL_error(L, "bad argument #%d to '%s' (%s '%s': %s)", idx, fname,
	       what, path, mp_path_why(rc));
}

/* check_path_of() for the profile's path, and the snapshot's if given. */
static void check_path(lua_State *L, int idx, const char *fname,
		       const ljmp_options *opt)
{
  if (opt->path) check_path_of(L, idx, fname, "path", opt->path);
  if (opt->snapshot) check_path_of(L, idx, fname, "snapshot", opt->snapshot);
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
    read_options(L, 1, "start", MP_OF_LUA, &opt);
    break;
  default:
    return luaL_error(L, "bad argument #1 to 'start' (path string or "
		      "options table expected)");
  }
  if (ljmp_running(L)) return push_error(L, LJMP_ERUNNING, NULL);
  check_path(L, 1, "start", &opt);
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
    read_options(L, 2, "signal", MP_OF_LUA, &opt);
    break;
  default:
    return luaL_error(L, "bad argument #2 to 'signal' (path string or "
		      "options table expected)");
  }
  check_path(L, 2, "signal", &opt);
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

/* mp.stop([{collect =, snapshot =}]) */
static int mp_lua_stop(lua_State *L)
{
  char path[MP_PATH_MAX] = "", snap[MP_PATH_MAX] = "";
  ljmp_options o = LJMP_OPTIONS_INIT;
  mp_state *s = mp_state_find(L);
  mp_stopinfo info;
  int rc;
  if (!lua_isnoneornil(L, 1)) {
    if (!lua_istable(L, 1))
      luaL_error(L, "bad argument #1 to 'stop' (options table expected)");
    read_options(L, 1, "stop", MP_OF_STOP, &o);
    if (o.snapshot) {
      check_path(L, 1, "stop", &o);
      snprintf(snap, sizeof(snap), "%s", o.snapshot);
    }
  }
  /* The options table is read: off the stack before the collection, so
     that mp.stop{collect = true} does not keep its own table alive through
     it (a leak of 2 blocks on the caller's line). */
  lua_settop(L, 0);
  if (s && s->path) snprintf(path, sizeof(path), "%s", s->path);
  rc = mp_stop(L, o.collect ? LJMP_STOP_COLLECT : 0, *snap ? snap : NULL,
	       &info);
  if (rc == LJMP_EFINALIZER) {	/* The finaliser's error, said. */
    lua_pushnil(L);
    lua_pushfstring(L, "%s%s%s: %s", path, *path ? ": " : "",
		    ljmp_strerror(rc), info.why);
    lua_pushinteger(L, EINVAL);
    return 3;
  }
  if (rc) return push_error(L, rc, rc == LJMP_ENOTRUN || !*path ? NULL : path);
  if (info.snaprc) return push_snapshot_error(L, info.snaprc, info.snap);
  lua_pushboolean(L, 1);
  return 1;
}

/* mp.snapshot(path | {path =, mode =, max_size =, bufsize =, collect =}):
** true, or nil, message, errno (as start). */
static int mp_lua_snapshot(lua_State *L)
{
  ljmp_options opt = LJMP_OPTIONS_INIT;
  int rc;
  if (lua_type(L, 1) == LUA_TSTRING) {
    opt.path = lua_tostring(L, 1);
  } else if (lua_type(L, 1) == LUA_TTABLE) {
    read_options(L, 1, "snapshot", MP_OF_SNAP, &opt);
    if (!opt.path)
      return luaL_error(L, "bad argument #1 to 'snapshot' (options.path "
			"is required)");
  } else {
    return luaL_argerror(L, 1, "path or options table expected");
  }
  check_path(L, 1, "snapshot", &opt);
  if ((rc = ljmp_snapshot(L, &opt)) == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  return push_snapshot_error(L, rc, opt.path);
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
