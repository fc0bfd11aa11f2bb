/*
** capi_host.c: a small application embedding LuaJIT that profiles itself
** through the public C API (include/ljmemprof.h) with a writer callback,
** then decodes the stream with the project's reader. Prints TAP.
*/

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "luajit.h"

#include "ljmemprof.h"
#include "format/mp_format.h"
#include "reader/mp_symtab.h"

static int n_test, n_failed;

/* Report one check; on failure print both values. */
static void is_int(long long got, long long want, const char *name)
{
  n_test++;
  if (got == want) { printf("ok %d - %s\n", n_test, name); return; }
  n_failed++;
  printf("not ok %d - %s\n# expected: %lld\n#   actual: %lld\n", n_test, name,
	 want, got);
}

/* Report whether two strings are equal; on failure print both. */
static void is_str(const char *got, const char *want, const char *name)
{
  n_test++;
  if (!strcmp(got, want)) { printf("ok %d - %s\n", n_test, name); return; }
  n_failed++;
  printf("not ok %d - %s\n# expected: '%s'\n#   actual: '%s'\n", n_test,
	 name, want, got);
}

/* An in-memory sink that can be told to fail after a number of bytes. */
typedef struct sink {
  unsigned char *data;
  size_t len, cap, fail_after;
  int calls, fail_at_call;	/* Calls made; fail from this one (1..). */
  int stopped, stop_err;
} sink;

static int sink_write(void *ctx, const void *data, size_t len)
{
  sink *s = ctx;
  if (s->fail_at_call && ++s->calls >= s->fail_at_call) return ENOSPC;
  if (s->fail_after && s->len + len > s->fail_after) return ENOSPC;
  if (s->len + len > s->cap) {
    s->cap = (s->len + len) * 2;
    s->data = realloc(s->data, s->cap);
    if (!s->data) return ENOMEM;
  }
  memcpy(s->data + s->len, data, len);
  s->len += len;
  return 0;
}

static void sink_stop(void *ctx, int err)
{
  sink *s = ctx;
  s->stopped++;
  s->stop_err = err;
}

/* Totals decoded from a stream. */
typedef struct totals {
  int complete;
  long long events, net, line_allocs, line_bytes;
} totals;

/* Decode s; count allocations at @host.lua:line. */
static totals decode(const sink *s, unsigned line)
{
  totals t = {0, 0, 0, 0, 0};
  mp_reader r;
  mp_item it;
  mp_symtab st;
  int rc;
  mp_symtab_init(&st);
  rc = mp_reader_init(&r, s->data, s->len);
  while (rc == MP_OK && (rc = mp_reader_next(&r, &it)) == MP_OK) {
    if (it.kind == MP_AEV_SYMTAB) { mp_symtab_add(&st, &it); continue; }
    t.events++;
    t.net += (long long)it.nsize - (long long)it.osize;
    if (it.kind == MP_AEV_ALLOC && it.src == MP_SRC_LFUNC && it.line == line) {
      uint32_t i = mp_symtab_find(&st, MP_SRC_LFUNC, it.id);
      size_t len = 0;
      const char *name = i ? mp_symtab_name(&st, i, &len) : NULL;
      if (name && len == 9 && !memcmp(name, "@host.lua", 9)) {
	t.line_allocs++;
	t.line_bytes += (long long)it.nsize;
      }
    }
  }
  t.complete = rc == MP_END;
  mp_symtab_free(&st);
  return t;
}

static long long heap_bytes(lua_State *L)
{
  return (long long)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + lua_gc(L, LUA_GCCOUNTB, 0);
}

static void run(lua_State *L, const char *code)
{
  if (luaL_loadbuffer(L, code, strlen(code), "@host.lua") || lua_pcall(L, 0, 0, 0)) {
    printf("# lua error: %s\n", lua_tostring(L, -1));
    exit(1);
  }
}

/* Resident set size in bytes (/proc/self/statm), or -1. */
static long long rss_bytes(void)
{
  long long size, res = -1;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%lld %lld", &size, &res) != 2) res = -1;
  fclose(f);
  return res < 0 ? -1 : res * sysconf(_SC_PAGESIZE);
}

/* Arm a fresh VM for SIGUSR2 and close it, cycles times; with record, a
** signal starts a recording (into path) before the close. The RSS growth
** from the end of the first 100 cycles to the end, in bytes; *recorded
** counts the cycles whose signal started a recording. */
static long long arm_close_cycles(int cycles, int record, const char *path,
				  int *recorded)
{
  long long base = -1;
  int i;
  *recorded = 0;
  for (i = 0; i < cycles; i++) {
    lua_State *V = luaL_newstate();
    ljmp_options o = LJMP_OPTIONS_INIT;
    o.path = path;
    o.bufsize = 4096;
    luaL_openlibs(V);
    if (ljmp_arm(V, SIGUSR2, &o)) return -1;
    if (record) {
      raise(SIGUSR2);
      run(V, "local t = {} for i = 1, 10 do t[i] = { i } end");
      *recorded += ljmp_running(V);
    }
    lua_close(V);
    if (i == 99) base = rss_bytes();
  }
  return rss_bytes() - base;
}

/* One bad options struct: what ljmp_options_check() must say of it. */
typedef struct bad_case {
  const char *name, *want;
  ljmp_options *opt;
} bad_case;

/* Check every bad case: LJMP_EARG and its exact message from
** ljmp_options_check(), and LJMP_EARG from ljmp_start() (they agree). */
static void check_bad(lua_State *L, const bad_case *c, int n)
{
  char msg[512], name[256];
  int i, rc;
  for (i = 0; i < n; i++) {
    memset(msg, 'z', sizeof(msg));
    snprintf(name, sizeof(name), "options_check: %s", c[i].name);
    is_int(ljmp_options_check(c[i].opt, msg, sizeof(msg)), LJMP_EARG, name);
    snprintf(name, sizeof(name), "options_check: %s, its message",
	     c[i].name);
    is_str(msg, c[i].want, name);
    snprintf(name, sizeof(name), "start agrees: %s", c[i].name);
    rc = ljmp_start(L, c[i].opt);
    is_int(rc, LJMP_EARG, name);
    if (!rc) ljmp_stop(L);
  }
}

/* ljmp_options_check(): each bad option named, the good ones passed, and
** its message buffer used safely. */
static void test_options_check(lua_State *L)
{
  struct { ljmp_options o; unsigned char more[8]; } big;
  ljmp_options good = LJMP_OPTIONS_INIT, o[15];
  char msg[64], want_big[256], want_small[64], longpath[5000];
  sink s;
  int i;
  static char longmsg[8192], wantlong[8192];
  bad_case c[15];
  memset(&s, 0, sizeof(s));
  good.writer = sink_write; good.ctx = &s;
  for (i = 0; i < 15; i++) o[i] = good;
  o[0].writer = NULL; o[0].path = "/tmp/ljmp-capi-check.bin"; o[0].mode = 04755;
  c[0] = (bad_case){ "mode 04755", "mode must be at most 0777 (no setuid, "
		     "setgid or sticky bit), not 04755", &o[0] };
  o[1].stacks = LJMP_STACKS_MAX + 1;
  c[1] = (bad_case){ "stacks 10001", "stacks must be from 0 to 10000, not "
		     "10001", &o[1] };
  o[2].bufsize = 100;
  c[2] = (bad_case){ "bufsize 100", "bufsize must be 0 or from 4096 to "
		     "1073741824 (1 GiB), not 100", &o[2] };
  o[3].bufsize = LJMP_BUFSIZE_MAX + 1;
  c[3] = (bad_case){ "bufsize 2^30 + 1", "bufsize must be 0 or from 4096 "
		     "to 1073741824 (1 GiB), not 1073741825", &o[3] };
  o[4].max_size = 100;
  c[4] = (bad_case){ "max_size 100", "max_size must be 0 or from 65536 to "
		     "9007199254740992, not 100", &o[4] };
  o[5].writer = NULL; o[5].path = "";
  c[5] = (bad_case){ "an empty path", "path must not be empty", &o[5] };
  o[6].path = "/tmp/ljmp-capi-check.bin";
  c[6] = (bad_case){ "path and writer", "path and writer must not both be "
		     "set", &o[6] };
  o[7].writer = NULL;
  c[7] = (bad_case){ "neither path nor writer", "path or writer must be set",
		     &o[7] };
  o[8].writer = NULL; o[8].path = "/tmp/x-%q.bin";
  c[8] = (bad_case){ "path with %q", "path '/tmp/x-%q.bin': % must be "
		     "followed by p (the pid), n (the number of the start) "
		     "or %", &o[8] };
  o[9].writer = NULL; o[9].path = "/tmp/x-%";
  c[9] = (bad_case){ "path ending in %", "path '/tmp/x-%': % must be "
		     "followed by p (the pid), n (the number of the start) "
		     "or %", &o[9] };
  memset(&big, 0, sizeof(big));
  big.o = good;
  big.o.size = sizeof(big);
  big.more[3] = 0x5a;
  snprintf(want_big, sizeof(want_big), "size %zu is past this library's "
	   "ljmp_options (%zu bytes): the options it lacks must be 0, and "
	   "byte %zu is 0x5a", sizeof(big), sizeof(ljmp_options),
	   sizeof(ljmp_options) + 3);
  c[10] = (bad_case){ "non-zero bytes past the struct", want_big, &big.o };
  o[10].size = 4;
  snprintf(want_small, sizeof(want_small), "size must be 0 or at least %zu, "
	   "not 4", sizeof(size_t));
  c[11] = (bad_case){ "size 4", want_small, &o[10] };
  memset(longpath, 'a', sizeof(longpath) - 1);
  longpath[0] = '/';
  longpath[sizeof(longpath) - 1] = '\0';
  o[11].writer = NULL; o[11].path = longpath;
  /* The bounds of the one option table (mp_options.c), which Lua and
  ** LJMEMPROF obey too. */
  o[12].sample = LJMP_SAMPLE_MAX + 1;
  c[12] = (bad_case){ "sample 2^40 + 1", "sample must be from 0 to "
		      "1099511627776, not 1099511627777", &o[12] };
  o[13].seed = LJMP_SEED_MAX + 1;
  c[13] = (bad_case){ "seed 2^53 + 1", "seed must be from 0 to "
		      "9007199254740992, not 9007199254740993", &o[13] };
  o[14].max_size = LJMP_MAX_SIZE_MAX + 1;
  c[14] = (bad_case){ "max_size 2^53 + 1", "max_size must be 0 or from "
		      "65536 to 9007199254740992, not 9007199254740993",
		      &o[14] };
  check_bad(L, c, 15);
  is_int(ljmp_options_check(&o[11], longmsg, sizeof(longmsg)), LJMP_EARG,
	 "options_check: path of 4999 bytes");
  snprintf(wantlong, sizeof(wantlong), "path '%s': it must be shorter than "
	   "4096 bytes with %%p and %%n expanded", longpath);
  is_str(longmsg, wantlong, "options_check: path of 4999 bytes, message");
  is_int(ljmp_start(L, &o[11]), LJMP_EARG, "start agrees: path of 4999 bytes");
  is_int(ljmp_running(L), 0, "not running after the bad options");

  /* The good ones, and the message buffer's edges. */
  memset(msg, 'z', sizeof(msg));
  is_int(ljmp_options_check(&good, msg, sizeof(msg)), 0, "good options: 0");
  is_str(msg, "", "good options: an empty message");
  big.more[3] = 0;
  is_int(ljmp_options_check(&big.o, msg, sizeof(msg)), 0,
	 "zero bytes past the struct: 0");
  o[10].size = 0;
  is_int(ljmp_options_check(&o[10], msg, sizeof(msg)), 0, "size 0: 0");
  memset(msg, 'z', sizeof(msg));
  is_int(ljmp_options_check(NULL, msg, sizeof(msg)), LJMP_EARG, "NULL opt");
  is_str(msg, "options are NULL", "NULL opt: its message");
  is_int(ljmp_options_check(&o[2], NULL, 100), LJMP_EARG, "msg NULL");
  is_int(ljmp_options_check(NULL, NULL, 0), LJMP_EARG, "NULL opt, msg NULL");
  memset(msg, 'z', sizeof(msg));
  is_int(ljmp_options_check(&o[2], msg, 0), LJMP_EARG, "size 0");
  is_int(msg[0], 'z', "size 0: msg untouched");
  is_int(ljmp_options_check(&o[2], msg, 8), LJMP_EARG, "size 8");
  is_str(msg, "bufsize", "size 8: the message cut to 7 bytes and a NUL");
  is_int(msg[8], 'z', "size 8: nothing written past it");
  is_int(ljmp_options_check(&o[2], msg, 1), LJMP_EARG, "size 1");
  is_str(msg, "", "size 1: only the NUL");
}

static const char *churn =
  "local t = {} for i = 1, 100 do t[i] = { i } end\n"
  "local s = {} for i = 1, 20000 do s[i % 50 + 1] = { i } end\n";

int main(int argc, char **argv)
{
  char path[4096];
  lua_State *L = luaL_newstate();
  sink s;
  ljmp_options opt;
  long long before, after;
  totals t;
  setvbuf(stdout, NULL, _IOLBF, 0);	/* What passed shows if one crashes. */
  luaL_openlibs(L);
  luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);

  /* A NULL state is a bad argument, never a crash. */
  memset(&opt, 0, sizeof(opt));
  opt.writer = sink_write;
  is_int(ljmp_start(NULL, &opt), LJMP_EARG, "start(NULL)");
  is_int(ljmp_stop(NULL), LJMP_EARG, "stop(NULL)");
  is_int(ljmp_stop_with(NULL, 0), LJMP_EARG, "stop_with(NULL, 0)");
  is_int(ljmp_stop_with(NULL, LJMP_STOP_COLLECT), LJMP_EARG,
	 "stop_with(NULL, LJMP_STOP_COLLECT)");
  is_int(ljmp_running(NULL), 0, "running(NULL)");
  opt.writer = NULL; opt.path = "/tmp/ljmp-capi-arm.bin";
  is_int(ljmp_arm(NULL, SIGUSR2, &opt), LJMP_EARG, "arm(NULL, ...)");
  is_int(ljmp_arm(L, SIGUSR2, NULL), LJMP_EARG, "arm with NULL options");

  is_int(ljmp_stop(L), LJMP_ENOTRUN, "stop before start");
  is_int(ljmp_running(L), 0, "not running");
  memset(&opt, 0, sizeof(opt));
  is_int(ljmp_start(L, NULL), LJMP_EARG, "NULL options");
  is_int(ljmp_start(L, &opt), LJMP_EARG, "options without a sink");
  opt.path = "/tmp/x"; opt.writer = sink_write;
  is_int(ljmp_start(L, &opt), LJMP_EARG, "options with two sinks");
  opt.path = NULL; opt.bufsize = 100;
  is_int(ljmp_start(L, &opt), LJMP_EARG, "buffer below 4096 bytes");
  /* Above 1 GiB: a size near SIZE_MAX would wrap when rounded up. */
  opt.bufsize = LJMP_BUFSIZE_MAX + 1;
  is_int(ljmp_start(L, &opt), LJMP_EARG, "buffer of 2^30 + 1 bytes");
  is_int(ljmp_running(L), 0, "not running after 2^30 + 1");
  opt.bufsize = (size_t)-1;
  is_int(ljmp_start(L, &opt), LJMP_EARG, "buffer of SIZE_MAX bytes");
  is_int(ljmp_running(L), 0, "not running after SIZE_MAX");
  opt.path = "/nonexistent-dir/p.bin"; opt.writer = NULL; opt.bufsize = 0;
  is_int(ljmp_start(L, &opt), -ENOENT, "path in a missing directory");
  /* Modes: 0 to 0777; setuid, setgid and sticky bits are refused before
  ** anything is opened (the missing directory would say ENOENT). */
  opt.mode = 01204;
  is_int(ljmp_start(L, &opt), LJMP_EARG, "mode 01204 (the sticky bit)");
  opt.mode = 04755;
  is_int(ljmp_start(L, &opt), LJMP_EARG, "mode 04755 (setuid)");
  is_int(ljmp_arm(L, SIGUSR2, &opt), LJMP_EARG, "arm with mode 04755");
  opt.mode = 0777;
  is_int(ljmp_start(L, &opt), -ENOENT, "mode 0777 is taken");
  opt.mode = 0;
  opt.path = "";
  is_int(ljmp_start(L, &opt), LJMP_EARG, "an empty path");
  is_int(ljmp_arm(L, SIGUSR2, &opt), LJMP_EARG, "arm with an empty path");
  /* Arming takes the values start takes, checked when it is armed, not
  ** when the signal comes (each with a path that would do otherwise). */
  opt.path = "/tmp/ljmp-capi-arm.bin";
  opt.stacks = LJMP_STACKS_MAX + 1;
  is_int(ljmp_arm(L, SIGUSR2, &opt), LJMP_EARG, "arm with too many frames");
  is_int(ljmp_start(L, &opt), LJMP_EARG, "start with too many frames");
  opt.stacks = 0; opt.max_size = LJMP_MAX_SIZE_MIN - 1;
  is_int(ljmp_arm(L, SIGUSR2, &opt), LJMP_EARG, "arm with max_size too small");
  opt.max_size = 0; opt.bufsize = 100;
  is_int(ljmp_arm(L, SIGUSR2, &opt), LJMP_EARG, "arm with a 100-byte buffer");
  /* The directory of the path is checked when armed: a signal's start
  ** could only say on stderr that it cannot create the file. */
  opt.bufsize = 0; opt.path = "/nonexistent/dir/x-%p.ljm";
  is_int(ljmp_arm(L, SIGUSR2, &opt), -ENOENT,
	 "arm with a path in a missing directory");
  opt.path = "/dev/null/x.ljm";	/* Not EACCES: the tests may run as root. */
  is_int(ljmp_arm(L, SIGUSR2, &opt), -ENOTDIR,
	 "arm with a path under a file that is no directory");
  opt.path = "/tmp/%p/x.ljm";
  is_int(ljmp_arm(L, SIGUSR2, &opt), LJMP_EARG,
	 "arm with %p in the directory");
  opt.path = NULL;
  test_options_check(L);
  is_int(strcmp(ljmp_strerror(LJMP_ERUNNING), "profiler is running already"),
	 0, "message of LJMP_ERUNNING");

  /* A profile through the writer callback. */
  memset(&s, 0, sizeof(s));
  memset(&opt, 0, sizeof(opt));
  opt.writer = sink_write; opt.ctx = &s; opt.on_stop = sink_stop;
  lua_gc(L, LUA_GCCOLLECT, 0);
  is_int(ljmp_start(L, &opt), 0, "start with a writer");
  is_int(ljmp_start(L, &opt), LJMP_ERUNNING, "start while running");
  is_int(ljmp_running(L), 1, "running");
  before = heap_bytes(L);
  run(L, churn);
  after = heap_bytes(L);
  is_int(ljmp_stop(L), 0, "stop");
  is_int(s.stopped, 1, "on_stop called once");
  is_int(s.stop_err, 0, "on_stop without error");
  t = decode(&s, 1);
  is_int(t.complete, 1, "stream complete");
  is_int(t.line_allocs, 102, "@host.lua:1: t, 100 tables, t's array part");
  is_int(t.net, after - before, "allocated - freed equals the counter delta");

  /* A writer that fails after 64 KiB: recording stops, the host goes on. */
  memset(&s, 0, sizeof(s));
  s.fail_after = 65536;
  opt.bufsize = 4096;
  is_int(ljmp_start(L, &opt), 0, "start with a failing writer");
  run(L, churn);
  run(L, churn);
  is_int(ljmp_stop(L), -ENOSPC, "stop reports the writer's errno");
  is_int(s.stop_err, ENOSPC, "on_stop gets the errno");
  t = decode(&s, 1);
  is_int(t.complete, 0, "the stream is a prefix");
  is_int(s.len > 60000 && t.events > 1000, 1, "the prefix holds the events written");

  /* A writer that fails on its third call (4 KiB chunks): running()
  ** is 0 from then on; stop() still reports the errno. */
  memset(&s, 0, sizeof(s));
  s.fail_at_call = 3;
  opt.bufsize = 4096;
  is_int(ljmp_start(L, &opt), 0, "start with a writer failing at call 3");
  is_int(ljmp_running(L), 1, "running before the writer failed");
  run(L, churn);
  is_int(s.calls, 3, "the writer was called 3 times, not after it failed");
  is_int(ljmp_running(L), 0, "not running once the writer failed");
  is_int(ljmp_start(L, &opt), LJMP_ERUNNING, "start before stop reported it");
  is_int(ljmp_stop(L), -ENOSPC, "stop reports the third call's ENOSPC");
  is_int(ljmp_running(L), 0, "not running after stop");
  is_int(s.stop_err, ENOSPC, "on_stop gets ENOSPC");
  free(s.data);

  /* lua_close while running: the stream is finalised. */
  memset(&s, 0, sizeof(s));
  opt.bufsize = 0;
  is_int(ljmp_start(L, &opt), 0, "start before lua_close");
  run(L, churn);
  lua_close(L);
  is_int(s.stopped, 1, "on_stop called at lua_close");
  t = decode(&s, 1);
  is_int(t.complete, 1, "stream complete after lua_close");
  is_int(t.line_allocs, 102, "events of the last run are in it");
  free(s.data);

  /* Two VMs profiled at the same time, each into its own sink. */
  {
    lua_State *A = luaL_newstate(), *B = luaL_newstate();
    sink sa, sb;
    totals ta, tb;
    luaL_openlibs(A);
    luaL_openlibs(B);
    luaJIT_setmode(A, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    luaJIT_setmode(B, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    memset(&sa, 0, sizeof(sa));
    memset(&sb, 0, sizeof(sb));
    memset(&opt, 0, sizeof(opt));
    opt.writer = sink_write;
    opt.ctx = &sa;
    is_int(ljmp_start(A, &opt), 0, "start on VM A");
    opt.ctx = &sb;
    is_int(ljmp_start(B, &opt), 0, "start on VM B while A runs");
    run(A, "local t = {} for i = 1, 10 do t[i] = { i } end");
    run(B, "local t = {} for i = 1, 30 do t[i] = { i } end");
    is_int(ljmp_stop(A), 0, "stop A");
    is_int(ljmp_running(B), 1, "B still running");
    is_int(ljmp_stop(B), 0, "stop B");
    ta = decode(&sa, 1);
    tb = decode(&sb, 1);
    is_int(ta.complete && tb.complete, 1, "both streams complete");
    is_int(ta.line_allocs, 12, "A: its own 10 tables, t and t's array");
    is_int(tb.line_allocs, 32, "B: its own 30 tables, t and t's array");
    lua_close(A);
    lua_close(B);
    free(sa.data);
    free(sb.data);
  }

  /* An armed VM closed gives back all it had: LuaJIT's arena (20 KB, freed
  ** only when the VM's own allocator is back in place) and the arm's
  ** record. 2000 cycles leaked 53 MB; 4 MB allows for malloc's caches. */
  {
    long long grown;
    int recorded;
    snprintf(path, sizeof(path), "%s/arm.ljm", argc > 1 ? argv[1] : "/tmp");
    grown = arm_close_cycles(2000, 0, path, &recorded);
    printf("# RSS grew %lld bytes in 1900 arm+close cycles\n", grown);
    is_int(grown >= 0 && grown < 4 << 20, 1,
	   "arm + lua_close 2000 times: RSS grows by less than 4 MB");
    grown = arm_close_cycles(2000, 1, path, &recorded);
    printf("# RSS grew %lld bytes in 1900 arm+record+close cycles\n", grown);
    is_int(recorded, 2000, "each signal started a recording");
    is_int(grown >= 0 && grown < 4 << 20, 1,
	   "arm, record at a signal, lua_close 2000 times: RSS grows by "
	   "less than 4 MB");
  }
  printf("1..%d\n", n_test);
  return n_failed ? 1 : 0;
}
