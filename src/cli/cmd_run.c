/*
** cmd_run.c: `ljmemprof run`: profile an unmodified script, then report.
**
** The script runs in a child `luajit` whose command line loads the agent
** before the script (`luajit -e <start the agent> SCRIPT ARGS...`), so the
** script needs no change and sees its usual arg table. The agent finalises
** the profile when the process exits (normally, by os.exit or by an
** error); the parent waits, then reports the file like `ljmemprof report`.
** The module is found next to this executable (the build tree), in
** ../lib/lua/5.1 relative to it (an installed tree), or else by luajit's
** own package.cpath.
*/

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/mp_cli.h"

#define ENV_OUT		"LJMEMPROF_RUN_FILE"

const char mp_help_run[] =
"NAME\n"
"    ljmemprof run - profile a Lua script and print its memory report\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof run [-o FILE] [--luajit PATH] [REPORT OPTIONS] SCRIPT [ARGS...]\n"
"\n"
"DESCRIPTION\n"
"    Runs `luajit SCRIPT ARGS...` with the ljmemprof agent recording from\n"
"    before the script's first line until the process exits, then prints\n"
"    the report of the profile to standard output (see 'ljmemprof report\n"
"    --help'). The script is not modified: its arguments, standard input,\n"
"    output and error pass through unchanged, and the report follows its\n"
"    output. Interrupting with Ctrl-C interrupts the script; the profile\n"
"    of what ran is still reported.\n"
"\n"
"    The agent module ljmemprof.so is looked up next to this executable,\n"
"    then in ../lib/lua/5.1/ relative to it (as `make install` lays it\n"
"    out), then wherever luajit's package.cpath (LUA_CPATH) finds it.\n"
"\n"
"OPTIONS\n"
"    -o FILE, --output FILE\n"
"        Keep the profile in FILE (created or truncated). Without it the\n"
"        profile goes to a temporary file that is removed after the\n"
"        report.\n"
"    --luajit PATH\n"
"        The LuaJIT executable to run (default: luajit, found in PATH). It\n"
"        must be the LuaJIT the module was built for; the agent refuses\n"
"        another one with an error.\n"
"    --format, --sort, --top, --leak-only, -H/--human-readable\n"
"        As for 'ljmemprof report'.\n"
"    -h, --help\n"
"        Print this manual.\n"
"    Options end at SCRIPT (or after --); what follows goes to the script.\n"
"\n"
"ENVIRONMENT\n"
"    The child gets LUA_CPATH with the module's directory first and\n"
"    " ENV_OUT " naming the profile file.\n"
"\n"
"EXIT STATUS\n"
"    The script's exit status if it is not 0 (128 + the signal number if\n"
"    a signal killed it); otherwise that of the report: 0, 3 if the\n"
"    profile was cut short, 2 on errors (127 if luajit cannot be run).\n"
"\n"
"EXAMPLES\n"
"    ljmemprof run app.lua --port 8080\n"
"    ljmemprof run -o app.ljm --leak-only --top 20 app.lua\n";

/* The Lua code that starts the agent before the script runs. */
static const char start_code[] =
  "local mp = require('ljmemprof') "
  "local ok, err = mp.start(os.getenv('" ENV_OUT "')) "
  "if not ok then "
  "io.stderr:write('ljmemprof run: cannot start the profiler: ', "
  "tostring(err), '\\n') os.exit(2) end";

/* Directory of this executable into buf; 0, or -1 if unknown. */
static int exe_dir(char *buf, size_t size)
{
  ssize_t n = readlink("/proc/self/exe", buf, size - 1);
  char *slash;
  if (n <= 0 || (size_t)n >= size - 1) return -1;
  buf[n] = '\0';
  if (!(slash = strrchr(buf, '/'))) return -1;
  *slash = '\0';
  return 0;
}

/* Directory holding ljmemprof.so for the child's LUA_CPATH, or NULL to
** leave the search to luajit. */
static const char *module_dir(char *buf, size_t size)
{
  char dir[PATH_MAX], path[PATH_MAX + 32];
  struct stat st;
  if (exe_dir(dir, sizeof(dir)) < 0) return NULL;
  snprintf(path, sizeof(path), "%s/ljmemprof.so", dir);
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
    snprintf(buf, size, "%s", dir);
    return buf;
  }
  snprintf(path, sizeof(path), "%s/../lib/lua/5.1/ljmemprof.so", dir);
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
    snprintf(buf, size, "%s/../lib/lua/5.1", dir);
    return buf;
  }
  return NULL;
}

/* Put the module's directory first in the child's LUA_CPATH. */
static int set_cpath(void)
{
  char dir[PATH_MAX + 32], *val;
  const char *old = getenv("LUA_CPATH");
  size_t n;
  int rc;
  if (!module_dir(dir, sizeof(dir))) return 0;
  if (!old) old = ";";	/* Then ";;" ends the value: luajit's default. */
  n = strlen(dir) + strlen(old) + 16;
  if (!(val = malloc(n))) return -1;
  snprintf(val, n, "%s/?.so;%s", dir, old);
  rc = setenv("LUA_CPATH", val, 1);
  free(val);
  return rc;
}

/* Run luajit with the agent on argv[0..argc) (SCRIPT ARGS); returns the
** script's exit status as a shell would (128 + signal), 127 if it could
** not be started. */
static int run_child(const char *luajit, const char *out, int argc,
		     char **argv)
{
  struct sigaction ign, oint, oquit;
  char **cargv;
  pid_t pid;
  int st, i;
  if (!(cargv = calloc((size_t)argc + 4, sizeof(char *)))) return 127;
  cargv[0] = (char *)luajit;
  cargv[1] = "-e";
  cargv[2] = (char *)start_code;
  for (i = 0; i < argc; i++) cargv[3 + i] = argv[i];
  fflush(stdout);
  fflush(stderr);
  /* Like system(3): Ctrl-C and Ctrl-\ are for the script, not for us. */
  memset(&ign, 0, sizeof(ign));
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGINT, &ign, &oint);
  sigaction(SIGQUIT, &ign, &oquit);
  pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &oint, NULL);
    sigaction(SIGQUIT, &oquit, NULL);
    if (setenv(ENV_OUT, out, 1) < 0 || set_cpath() < 0) {
      fprintf(stderr, "ljmemprof run: %s\n", strerror(errno));
      _exit(127);
    }
    execvp(luajit, cargv);
    fprintf(stderr, "ljmemprof run: cannot run %s: %s\n", luajit,
	    strerror(errno));
    _exit(127);
  }
  free(cargv);
  if (pid < 0) {
    fprintf(stderr, "ljmemprof run: fork: %s\n", strerror(errno));
    st = 127 << 8;
  } else {
    while (waitpid(pid, &st, 0) < 0)
      if (errno != EINTR) { st = 127 << 8; break; }
  }
  sigaction(SIGINT, &oint, NULL);
  sigaction(SIGQUIT, &oquit, NULL);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 127;
}

int mp_cmd_run(int argc, char **argv)
{
  mp_cli_opts o;
  const char *out = NULL, *luajit = "luajit";
  char tmp[PATH_MAX];
  int i, status, rstatus, fd;
  struct stat st;
  memset(&o, 0, sizeof(o));
  for (i = 0; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    const char *a = argv[i];
    int r;
    if (!strcmp(a, "--")) { i++; break; }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(mp_help_run, stdout);
      return MP_EXIT_OK;
    }
    if (!strcmp(a, "-o") || !strcmp(a, "--output") ||
	!strcmp(a, "--luajit")) {
      if (i + 1 >= argc) {
	fprintf(stderr, "ljmemprof run: option '%s' needs an argument (see "
		"'ljmemprof run --help')\n", a);
	return MP_EXIT_ERROR;
      }
      if (!strcmp(a, "--luajit")) luajit = argv[++i];
      else out = argv[++i];
      continue;
    }
    if (!strncmp(a, "--output=", 9)) { out = a + 9; continue; }
    if (!strncmp(a, "--luajit=", 9)) { luajit = a + 9; continue; }
    r = mp_cli_report_opt("run", argc, argv, &i, &o);
    if (r == MP_OPT_ERROR) return MP_EXIT_ERROR;
    if (r == MP_OPT_TAKEN) continue;
    fprintf(stderr, "ljmemprof run: unknown option '%s' (see 'ljmemprof "
	    "run --help')\n", a);
    return MP_EXIT_ERROR;
  }
  if (i >= argc) {
    fprintf(stderr, "ljmemprof run: missing SCRIPT (see 'ljmemprof run "
	    "--help')\n");
    return MP_EXIT_ERROR;
  }
  if (!out) {
    const char *dir = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/ljmemprof-XXXXXX.ljm",
	     dir && *dir ? dir : "/tmp");
    if ((fd = mkstemps(tmp, 4)) < 0) {
      fprintf(stderr, "ljmemprof run: %s: %s\n", tmp, strerror(errno));
      return MP_EXIT_ERROR;
    }
    close(fd);
  } else if (!strcmp(out, "-")) {
    fprintf(stderr, "ljmemprof run: -o needs a file name, not '-'\n");
    return MP_EXIT_ERROR;
  }
  if (out && unlink(out) < 0 && errno != ENOENT) {	/* No stale report. */
    fprintf(stderr, "ljmemprof run: %s: %s\n", out, strerror(errno));
    return MP_EXIT_ERROR;
  }
  status = run_child(luajit, out ? out : tmp, argc - i, argv + i);
  if (stat(out ? out : tmp, &st) < 0 || st.st_size == 0) {
    /* The agent did not start (its error is above), or the script was
    ** killed before the agent wrote its first buffer. */
    fprintf(stderr, "ljmemprof run: no profile was recorded\n");
    rstatus = MP_EXIT_ERROR;
  } else {
    rstatus = mp_cli_report_file(out ? out : tmp, &o);
  }
  if (!out) unlink(tmp);
  return status ? status : rstatus;
}
