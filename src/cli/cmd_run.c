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
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ljmemprof.h"	/* The agent's limits. */

/* Debian's multiarch triplet of the machines native memory runs on: the
** preload library's directory under PREFIX/lib there. */
#if defined(__x86_64__) && defined(__linux__)
#define PRELOAD_ARCH	"x86_64-linux-gnu"
#elif defined(__aarch64__) && defined(__linux__)
#define PRELOAD_ARCH	"aarch64-linux-gnu"
#endif
#ifdef PRELOAD_ARCH
#define PRELOAD_ARCH_HELP	PRELOAD_ARCH
#else
#define PRELOAD_ARCH_HELP	"<multiarch>"
#endif
#include "cli/mp_cli.h"
#include "util/mp_size.h"

#define ENV_OUT		"LJMEMPROF_RUN_FILE"
#define ENV_NOTE	"LJMEMPROF_RUN_NOTE"
#define ENV_STACKS	"LJMEMPROF_RUN_STACKS"
#define ENV_SAMPLE	"LJMEMPROF_RUN_SAMPLE"
#define ENV_MAX_SIZE	"LJMEMPROF_RUN_MAX_SIZE"
#define ENV_NATIVE	"LJMEMPROF_RUN_NATIVE"

const char mp_help_run[] =
"NAME\n"
"    ljmemprof run - profile a Lua script and print its memory report\n"
"\n"
"SYNOPSIS\n"
"    ljmemprof run [-o FILE] [--luajit PATH] [--stacks [N]] [--sample [BYTES]]\n"
"                  [--native] [--max-size BYTES] [--html FILE]\n"
"                  [--output-report FILE] [REPORT OPTIONS] SCRIPT [ARGS...]\n"
"    ljmemprof run [-o FILE] [--stacks [N]] [--sample [BYTES]]\n"
"                  [--native] [--max-size BYTES] [--html FILE]\n"
"                  [--output-report FILE] [REPORT OPTIONS]\n"
"                  -- LUAJIT [LUAJIT OPTIONS] [SCRIPT [ARGS...]]\n"
"\n"
"DESCRIPTION\n"
"    Runs `luajit SCRIPT ARGS...` with the ljmemprof agent recording from\n"
"    the call of the script's main chunk (once luajit has loaded it, just\n"
"    before its first line) until the process exits, then prints the\n"
"    report of the profile to standard output (see 'ljmemprof report\n"
"    --help'). The script is not modified: its arguments, standard input,\n"
"    output and error pass through unchanged, and the report follows its\n"
"    output (--output-report FILE writes it to FILE instead). The code\n"
"    that starts the agent records nothing of its own: the report shows\n"
"    the program's allocations. Interrupting with Ctrl-C interrupts the\n"
"    script; the profile of what ran is still reported.\n"
"    SIGTERM or SIGHUP to run (timeout(1), a closing terminal) is passed\n"
"    on to the script, which ends as it would without run; what it\n"
"    recorded until then is reported, and no temporary file is left.\n"
"    A script that cannot be loaded (missing, or not valid Lua) never\n"
"    runs: after luajit's error, a line says that no profile was\n"
"    recorded, no report is printed, and the status is luajit's.\n"
"\n"
"    After --, the rest is a whole LuaJIT command line, for LuaJIT's own\n"
"    options (-joff, -jv, -O..., -l, -e): the agent starts when the first\n"
"    Lua code among them is called, an -e chunk (labelled =(command\n"
"    line)), a -l module or the script (`LUAJIT -e <start the agent>\n"
"    [LUAJIT OPTIONS] ...`).\n"
"\n"
"    When the script ends (its last line, or an error), a full garbage\n"
"    collection runs before the profile ends, so what the report says is\n"
"    still allocated was still reachable: the program's leaks and caches,\n"
"    not garbage the collector had not reached yet. A script that ends\n"
"    with os.exit() skips it (no Lua code runs at process exit).\n"
"\n"
"    If the script stops the profiler itself (ljmemprof.stop(), or\n"
"    misc.memprof.stop() after compat()), the profile ends there: the\n"
"    report covers the run until then, and a warning says so.\n"
"\n"
"    The agent module ljmemprof.so is looked up next to this executable,\n"
"    then in ../lib/lua/5.1/ relative to it (as `make install` lays it\n"
"    out), then wherever luajit's package.cpath (LUA_CPATH) finds it.\n"
"\n"
"OPTIONS\n"
"    -o FILE, --output FILE\n"
"        Keep the profile in FILE, a regular file. It is recorded into a\n"
"        new file beside FILE (FILE.XXXXXX, made before the script runs,\n"
"        so that a bad path is said first), renamed to FILE once the\n"
"        script has run: a script that does not start leaves FILE as it\n"
"        was. Without -o the profile goes to a temporary file that is\n"
"        removed after the report; if the report cannot be written (or\n"
"        read), the file is kept and named.\n"
"    --html FILE\n"
"        Also write the HTML report to FILE (see 'ljmemprof report\n"
"        --help'): one page with the summary, the sources, the flame\n"
"        graph, the timeline with the peak and the temporaries. FILE is\n"
"        opened before the script runs, so that a bad path is said\n"
"        first and nothing runs; an existing FILE is truncated only when\n"
"        the report is written.\n"
"    --output-report FILE, --output-report=FILE\n"
"        Write the report to FILE instead of standard output, where the\n"
"        script's own output goes (`run --format svg --output-report\n"
"        app.svg app.lua`: an SVG without the script's prints in it).\n"
"        Opened before the script runs, as --html FILE is; an existing\n"
"        FILE is truncated only when the report is written.\n"
"    -o, --html and --output-report may not name the same file, nor a\n"
"    file of the command (the script, its arguments, the file its\n"
"    standard input, output or error is redirected to), by any name or\n"
"    link: refused with status 2 before anything runs.\n"
"    --luajit PATH\n"
"        The LuaJIT executable to run (default: luajit, found in PATH). It\n"
"        must be the LuaJIT the module was built for; the agent refuses\n"
"        another one with an error. (After --, the command names it.)\n"
"    --stacks [N], --stacks=N\n"
"        Record the call stack of every allocation, up to N frames (64 if\n"
"        N is not given; at most 10000; 0: one frame, the default), as\n"
"        mp.start{stacks = N} does, and add the CALL STACKS view to a text\n"
"        or json report (3 stacks per source; --stacks-per-source M shows\n"
"        M). The next argument is taken as N only if it is a number.\n"
"    --sample [BYTES], --sample=BYTES\n"
"        Sample: record an allocation with probability 1 - exp(-size /\n"
"        BYTES), so that each allocated byte has a chance of 1 in BYTES\n"
"        (512K if not given; K, M and G multiply by 1024), as\n"
"        mp.start{sample = BYTES} does. The report scales the counts\n"
"        back to estimates and says it is sampled. Sampling records call\n"
"        stacks (--stacks sets their depth, 64 by default; --stacks 0 is\n"
"        refused with it).\n"
"    --native, --native=preload\n"
"        Record native memory too (malloc, free, anonymous mmap of the\n"
"        program and its C modules, FFI calls), as mp.start{native = true}\n"
"        does: its sources are labelled [native] (--heap selects). Records\n"
"        call stacks (64 frames unless --stacks says); with --sample,\n"
"        native allocations are sampled as the VM's are. --native=preload\n"
"        runs the program with libljmemprof_preload.so first in LD_PRELOAD\n"
"        (found next to this executable or in its ../lib,\n"
"        ../lib/" PRELOAD_ARCH_HELP " or ../lib64: where make install's\n"
"        LIBDIR puts it); then the calls that patching cannot reach are\n"
"        seen too (through pointers taken before the start, bound early,\n"
"        of objects not patched).\n"
"    --max-size BYTES, --max-size=BYTES\n"
"        Stop recording before the profile grows past BYTES (at least 64K;\n"
"        e.g. 100M), as mp.start{max_size = BYTES} does: the profile stays\n"
"        complete and notes that it stopped at the limit.\n"
"    --format, --sort, --top, --leak-only, -H/--human-readable, --metric,\n"
"    --peak, --temporary [N], --stacks-per-source [N], --accounting A,\n"
"    --heap vm|native|all\n""        As for 'ljmemprof report'. The report goes to standard output,\n"
"        after the script's output, unless --output-report names a file\n"
"        (-o names the profile here); pprof, a binary format, is refused\n"
"        on a terminal before the script runs.\n"
"    -h, --help\n"
"        Print this manual.\n"
"    Options end at SCRIPT, or at --. LuaJIT's own options (-joff, -O3,\n"
"    -l MODULE, -e CODE) are not run's: they go after --, with the\n"
"    luajit command (`ljmemprof run -- luajit -joff app.lua`); before\n"
"    SCRIPT they are an error that says so, after it they are the\n"
"    script's arguments.\n"
"\n"
"ENVIRONMENT\n"
"    The child gets LUA_CPATH with the module's directory first,\n"
"    " ENV_OUT " naming the profile file, " ENV_NOTE " naming the\n"
"    file where the start code notes a stop by the script, and with\n"
"    --stacks " ENV_STACKS " (the number of frames), with --sample\n"
"    " ENV_SAMPLE ", with --max-size " ENV_MAX_SIZE ". LJMEMPROF is\n"
"    removed from its environment (this command starts the agent).\n"
"\n"
"EXIT STATUS\n"
"    The script's exit status if it is not 0 (128 + the signal number if\n"
"    a signal killed it); otherwise that of the report: 0, 3 if the\n"
"    profile was cut short or damaged, 2 on errors (127 if luajit cannot\n"
"    be run).\n"
"\n"
"EXAMPLES\n"
"    ljmemprof run app.lua --port 8080\n"
"    ljmemprof run -o app.ljm --leak-only --top 20 app.lua\n"
"    ljmemprof run --top 10 -- luajit -joff -e 'N = 100' app.lua\n"
"    ljmemprof run --stacks --format svg --output-report app.svg app.lua\n"
"    ljmemprof run --html app.html app.lua\n";

/* The Lua code that `luajit -e` runs first, mp_run_start: see
** src/cli/run_start.lua, embedded at build time (scripts/gen-embed.pl
** --macros: its @ENV_...@ are the names above). */
#include "run_start.h"

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

/* Where libljmemprof_preload.so may be, relative to the directory above
** this executable's: beside it (the build tree), then where make install
** puts it with LIBDIR = PREFIX/lib (its default), Debian's multiarch
** PREFIX/lib/<triplet>, or PREFIX/lib64. */
static const char *const preload_dirs[] = {
  NULL, "lib",
#ifdef PRELOAD_ARCH
  "lib/" PRELOAD_ARCH,
#endif
  "lib64"
};

/* Put libljmemprof_preload.so (see preload_dirs) first in the child's
** LD_PRELOAD: 0, or -1 with a message said (naming the paths tried). */
static int set_preload(void)
{
  char dir[PATH_MAX], path[PATH_MAX + 64], tried[4 * (PATH_MAX + 64)], *val;
  const char *old = getenv("LD_PRELOAD"), *up;
  struct stat st;
  size_t i, n;
  int rc;
  if (exe_dir(dir, sizeof(dir)) < 0) {
    fprintf(stderr, "ljmemprof run: --native=preload: the directory of "
	    "this executable is unknown (/proc/self/exe)\n");
    return -1;
  }
  up = strrchr(dir, '/');
  n = up ? (size_t)(up - dir) : 0;	/* dir[0..n): the one above. */
  tried[0] = '\0';
  for (i = 0; i < sizeof(preload_dirs) / sizeof(*preload_dirs); i++) {
    if (preload_dirs[i])
      snprintf(path, sizeof(path), "%.*s/%s/libljmemprof_preload.so",
	       (int)n, dir, preload_dirs[i]);
    else
      snprintf(path, sizeof(path), "%s/libljmemprof_preload.so", dir);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) break;
    snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s",
	     i ? ", " : "", path);
  }
  if (i == sizeof(preload_dirs) / sizeof(*preload_dirs)) {
    fprintf(stderr, "ljmemprof run: --native=preload: "
	    "libljmemprof_preload.so not found; tried %s\n", tried);
    return -1;
  }
  if (strpbrk(path, " :")) {	/* LD_PRELOAD's separators. */
    fprintf(stderr, "ljmemprof run: --native=preload: %s: LD_PRELOAD "
	    "cannot name a path with a space or a colon\n", path);
    return -1;
  }
  n = strlen(path) + (old ? strlen(old) : 0) + 2;
  if (!(val = malloc(n))) return -1;
  snprintf(val, n, "%s%s%s", path, old && *old ? ":" : "", old ? old : "");
  rc = setenv("LD_PRELOAD", val, 1);
  free(val);
  if (rc < 0) fprintf(stderr, "ljmemprof run: %s\n", strerror(errno));
  return rc;
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

/* Set variable name to the number v, or unset it if v is 0; 0 or -1. */
static int setenv_num(const char *name, unsigned long long v)
{
  char num[24];
  if (!v) return unsetenv(name);
  snprintf(num, sizeof(num), "%llu", v);
  return setenv(name, num, 1);
}

/* The profile's path for the agent, whose paths expand %p and %n: each %
** doubled. 0, or -1 if it does not fit. */
static int escape_path(const char *path, char *buf, size_t size)
{
  size_t k = 0;
  for (; *path; path++) {
    if (k + 3 > size) return -1;
    if (*path == '%') buf[k++] = '%';
    buf[k++] = *path;
  }
  buf[k] = '\0';
  return 0;
}

/* The script's process while it runs (0: none), and the termination
** signals (SIGTERM, SIGHUP) run received meanwhile. */
static volatile pid_t child_pid;
static volatile sig_atomic_t terms;

/* SIGTERM or SIGHUP to run (`timeout`, a closing terminal): passed on to
** the script, which ends as it would without us (its profile is then cut
** where it stopped), and run lives on to report what was recorded and
** remove its temporary files. */
static void on_term(int sig)
{
  terms++;
  if (child_pid > 0) kill(child_pid, sig);
}

/* Run the LuaJIT command cmd[0..n) (the program, then its options, script
** and arguments) with `-e <start the agent>` after the program; returns
** the exit status as a shell would (128 + signal), 127 if it could not be
** started. */
static int run_child(char **cmd, int n, const char *out, const char *note,
		     uint32_t stacks, unsigned long long sample,
		     unsigned long long max_size)
{
  struct sigaction ign, oint, oquit, term, oterm, ohup;
  char **cargv, opath[2 * PATH_MAX];
  pid_t pid;
  int st, i;
  if (!(cargv = calloc((size_t)n + 3, sizeof(char *)))) return 127;
  cargv[0] = cmd[0];
  cargv[1] = "-e";
  cargv[2] = (char *)mp_run_start;
  for (i = 1; i < n; i++) cargv[2 + i] = cmd[i];
  fflush(stdout);
  fflush(stderr);
  /* Like system(3): Ctrl-C and Ctrl-\ are for the script, not for us. */
  memset(&ign, 0, sizeof(ign));
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGINT, &ign, &oint);
  sigaction(SIGQUIT, &ign, &oquit);
  memset(&term, 0, sizeof(term));
  term.sa_handler = on_term;
  sigemptyset(&term.sa_mask);
  sigaction(SIGTERM, &term, &oterm);
  sigaction(SIGHUP, &term, &ohup);
  pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &oint, NULL);
    sigaction(SIGQUIT, &oquit, NULL);
    sigaction(SIGTERM, &oterm, NULL);
    sigaction(SIGHUP, &ohup, NULL);
    errno = ENAMETOOLONG;	/* If the path does not fit. */
    if (escape_path(out, opath, sizeof(opath)) < 0 ||
	setenv(ENV_OUT, opath, 1) < 0 || setenv(ENV_NOTE, note, 1) < 0 ||
	setenv_num(ENV_STACKS, stacks) < 0 ||
	setenv_num(ENV_SAMPLE, sample) < 0 ||
	setenv_num(ENV_MAX_SIZE, max_size) < 0 ||
	unsetenv("LJMEMPROF") < 0 || set_cpath() < 0) {
      fprintf(stderr, "ljmemprof run: %s\n", strerror(errno));
      _exit(127);
    }
    execvp(cmd[0], cargv);
    fprintf(stderr, "ljmemprof run: cannot run %s: %s\n",
	    mp_cli_name(cmd[0]), strerror(errno));
    _exit(127);
  }
  free(cargv);
  if (pid < 0) {
    fprintf(stderr, "ljmemprof run: fork: %s\n", strerror(errno));
    st = 127 << 8;
  } else {
    child_pid = pid;
    if (terms) kill(pid, SIGTERM);	/* One came before the fork ended. */
    while (waitpid(pid, &st, 0) < 0)
      if (errno != EINTR) { st = 127 << 8; break; }
    child_pid = 0;
  }
  sigaction(SIGINT, &oint, NULL);
  sigaction(SIGQUIT, &oquit, NULL);
  sigaction(SIGTERM, &oterm, NULL);
  sigaction(SIGHUP, &ohup, NULL);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 127;
}

/* Make an empty temporary file named after tmpl ("ljmemprof-XXXXXX.ext",
** ext of 3 letters) in $TMPDIR or /tmp, its name in path; 0 or -1. */
static int temp_file(char *path, size_t size, const char *tmpl)
{
  const char *dir = getenv("TMPDIR");
  int fd;
  snprintf(path, size, "%s/%s", dir && *dir ? dir : "/tmp", tmpl);
  if ((fd = mkstemps(path, 4)) < 0) {
    fprintf(stderr, "ljmemprof run: %s: %s\n", mp_cli_name(path),
	    strerror(errno));
    return -1;
  }
  close(fd);
  return 0;
}

/* The profile's file tmp was removed while the script ran (it, or its
** directory: `run -o dir/x.ljm` with a script that removes dir), but fd
** still reads it: copy it to a new file, beside out if that can be made
** (out NULL: none), else a temporary one; its name into tmp. 0, or -1
** after saying why (tmp is then ""). */
static int rescue(int fd, const char *out, char *tmp, size_t size)
{
  char gone[PATH_MAX], buf[1 << 16];
  ssize_t got = 0;
  int to = -1;
  snprintf(gone, sizeof(gone), "%s", tmp);
  fprintf(stderr, "ljmemprof run: the profile's file %s was removed while "
	  "the script ran; its data was still open here\n", mp_cli_name(gone));
  if (out && (size_t)snprintf(tmp, size, "%s.XXXXXX", out) < size)
    to = mkstemp(tmp);
  if (to < 0 && temp_file(tmp, size, "ljmemprof-XXXXXX.ljm") == 0)
    to = open(tmp, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (to < 0 || lseek(fd, 0, SEEK_SET) < 0) {
    got = -1;
  } else {
    while ((got = read(fd, buf, sizeof(buf))) != 0) {
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 || write(to, buf, (size_t)got) != got) { got = -1; break; }
    }
  }
  if ((to >= 0 && close(to) < 0) || got < 0) {
    fprintf(stderr, "ljmemprof run: the profile is lost: %s: %s\n",
	    mp_cli_name(tmp), strerror(errno));
    if (to >= 0) unlink(tmp);
    tmp[0] = '\0';
    return -1;
  }
  return 0;
}

/* Whether path, the output of option opt, is a file named in the command
** cmd[0..n) (the script, its arguments, "-" for standard input) or the
** regular file open on its standard input, output or error (`-o d.txt
** s.lua <d.txt`, by any name): 1 after saying so. */
static int in_command(const char *opt, const char *path, char **cmd, int n)
{
  static const char *const fdname[] = {
    "the standard input of the command to run",
    "the standard output, where the script's output and the report go",
    "the standard error, where the script's errors and ours go"
  };
  int k;
  for (k = 0; k < n; k++)
    if (mp_cli_same_file(path, cmd[k])) {
      if (strcmp(cmd[k], "-"))
	fprintf(stderr, "ljmemprof run: %s %s: is %s, a file of the command "
		"to run (it would be overwritten)\n", opt, mp_cli_name(path),
		mp_cli_name(cmd[k]));
      else
	fprintf(stderr, "ljmemprof run: %s %s: is %s (it would be "
		"overwritten)\n", opt, mp_cli_name(path), fdname[0]);
      return 1;
    }
  for (k = 0; k < 3; k++)
    if (mp_cli_same_fd(path, k, 1)) {
      fprintf(stderr, "ljmemprof run: %s %s: is %s (it would be "
	      "overwritten)\n", opt, mp_cli_name(path), fdname[k]);
      return 1;
    }
  return 0;
}

/* Say that output opt path names the file of output what (e.g. "the
** profile's file -o"); returns -1. */
static int same_output(const char *opt, const char *path, const char *what,
		       const char *other)
{
  fprintf(stderr, "ljmemprof run: %s %s: is %s %s (it would be "
	  "overwritten)\n", opt, mp_cli_name(path), what, mp_cli_name(other));
  return -1;
}

/* Drop the outputs opened (the report's and the HTML report's). */
static void drop_outputs(mp_cli_out *r, mp_cli_out *h)
{
  mp_cli_out_drop(r);
  mp_cli_out_drop(h);
}

/* Open the outputs of run before anything runs, so that a bad path is
** said first: the report's (report: NULL for standard output) into *r
** and the HTML report's into *h (each left as it is until the report is
** written) and, for the profile's file out (a regular file: it is read
** back for the report), a new empty file beside it into tmp, which the
** profile is recorded into and which replaces out once a profile exists:
** a script that does not start leaves out as it was. No output may be a
** file of the command cmd[0..n), nor another output. 0, or -1 after
** saying why, nothing left behind. */
static int open_outputs(const char *out, const char *report,
			const char *html, char **cmd, int n, mp_cli_out *r,
			mp_cli_out *h, char *tmp, size_t size)
{
  struct stat st;
  int fd;
  memset(h, 0, sizeof(*h));
  memset(r, 0, sizeof(*r));
  r->f = stdout;
  if ((out && in_command("-o", out, cmd, n)) ||
      (report && in_command("--output-report", report, cmd, n)) ||
      (html && in_command("--html", html, cmd, n)))
    return -1;
  if (out && stat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
    fprintf(stderr, "ljmemprof run: -o %s: not a regular file (the "
	    "profile is read back for the report)\n", mp_cli_name(out));
    return -1;
  }
  if (report && mp_cli_out_open(r, report) < 0) return -1;
  if (html && mp_cli_out_open(h, html) < 0) {
    mp_cli_out_drop(r);
    return -1;
  }
  /* Opened or made just now: the same file is found by any name. */
  if (report && html && mp_cli_same_file(html, report)) {
    drop_outputs(r, h);
    return same_output("--html", html, "the report's file --output-report",
		       report);
  }
  if (!out) return 0;
  if (html && mp_cli_same_file(html, out)) {
    drop_outputs(r, h);
    return same_output("--html", html, "the profile's file -o", out);
  }
  if (report && mp_cli_same_file(report, out)) {
    drop_outputs(r, h);
    return same_output("--output-report", report, "the profile's file -o",
		       out);
  }
  if ((size_t)snprintf(tmp, size, "%s.XXXXXX", out) >= size) {
    fprintf(stderr, "ljmemprof: %s: %s\n", mp_cli_name(out),
	    strerror(ENAMETOOLONG));
    drop_outputs(r, h);
    return -1;
  }
  if ((fd = mkstemp(tmp)) < 0) {
    fprintf(stderr, "ljmemprof: %s: %s\n", mp_cli_name(out),
	    strerror(errno));
    drop_outputs(r, h);
    return -1;
  }
  close(fd);
  return 0;
}

/* What ran, for the reports' titles: the words w[0..n) (the script and
** its arguments, or the LuaJIT command after --) joined by spaces into
** buf, cut with "..." if they do not fit; buf, or NULL if n is 0. */
static const char *program_name(char **w, int n, char *buf, size_t size)
{
  size_t k = 0;
  int i;
  if (n < 1) return NULL;
  buf[0] = '\0';
  for (i = 0; i < n; i++) {
    int m = snprintf(buf + k, size - k, "%s%s", i ? " " : "", w[i]);
    if (m < 0 || (size_t)m >= size - k) {
      strcpy(buf + size - 4, "...");
      break;
    }
    k += (size_t)m;
  }
  return buf;
}

/* Whether a, not an option of run, is one of luajit's (-joff, -O3, -l,
** -e, -b, -i, -v, -E): said so, with where it goes. */
static int luajit_opt(const char *a)
{
  return a[0] == '-' && a[1] && strchr("jOlebivE", a[1]) &&
	 (a[2] || strchr("lebivE", a[1]));
}

int mp_cmd_run(int argc, char **argv)
{
  mp_cli_opts o;
  mp_cli_out html, text;	/* The HTML report's, the report's. */
  const char *out = NULL, *luajit = NULL, *path;
  char tmp[PATH_MAX] = "", note[PATH_MAX], prog[256], **cmd;
  int i, n, status, rstatus, dashdash = 0, keep, rescued;
  uint32_t stacks = 0;
  int stacks_given = 0;	/* --stacks 0 means one frame, not 64. */
  int native = 0;
  long long sample = 0, max_size = 0;
  struct stat st;
  memset(&o, 0, sizeof(o));
  for (i = 0; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    const char *a = argv[i], *v;
    int r;
    if (!strcmp(a, "--")) { i++; dashdash = 1; break; }
    if (!strcmp(a, "-h") || !strcmp(a, "--help"))
      return mp_cli_help("run", stdout);
    if ((r = mp_cli_opt_value("run", argc, argv, &i, "--output-report", NULL,
			      &v))) {
      if (r < 0) return MP_EXIT_ERROR;
      o.output = v;
      continue;
    }
    if ((r = mp_cli_opt_value("run", argc, argv, &i, "--output", "-o", &v))) {
      if (r < 0) return MP_EXIT_ERROR;
      out = v;
      continue;
    }
    if ((r = mp_cli_opt_value("run", argc, argv, &i, "--luajit", NULL, &v))) {
      if (r < 0) return MP_EXIT_ERROR;
      luajit = v;
      continue;
    }
    if ((r = mp_cli_opt_value("run", argc, argv, &i, "--html", NULL, &v))) {
      if (r < 0) return MP_EXIT_ERROR;
      o.html = v;
      continue;
    }
    if ((r = mp_cli_opt_count("run", argc, argv, &i, "--stacks",
			      LJMP_STACKS_DEFAULT, &stacks))) {
      if (r < 0) return MP_EXIT_ERROR;
      if (stacks > LJMP_STACKS_MAX) {
	fprintf(stderr, "ljmemprof run: --stacks %u: at most %d frames\n",
		stacks, LJMP_STACKS_MAX);
	return MP_EXIT_ERROR;
      }
      if (!o.render.stacks || o.stacks_run) {	/* Not --stacks-per-source. */
	o.render.stacks = stacks ? MP_STACKS_VIEW : 0;
	o.stacks_run = 1;
      }
      stacks_given = 1;
      continue;
    }
    if (!strcmp(a, "--native")) {
      native = 1;
      continue;
    }
    if (!strncmp(a, "--native=", 9)) {
      if (strcmp(a + 9, "preload")) {
	fprintf(stderr, "ljmemprof run: --native=%s: 'preload' expected "
		"(or --native alone)\n", mp_cli_name(a + 9));
	return MP_EXIT_ERROR;
      }
      native = 2;
      continue;
    }
    if (!strcmp(a, "--sample") || !strncmp(a, "--sample=", 9)) {
      v = a[8] ? a + 9 : i + 1 < argc && argv[i + 1][0] >= '0' &&
		 argv[i + 1][0] <= '9' ? argv[++i] : NULL;
      sample = v ? mp_parse_size(v) : LJMP_SAMPLE_DEFAULT;
      if (sample <= 0 || sample > (long long)LJMP_SAMPLE_MAX) {
	fprintf(stderr, "ljmemprof run: --sample %s: mean bytes between "
		"samples expected, e.g. 512K or 1M (at most 1T)\n",
		mp_cli_name(v));
	return MP_EXIT_ERROR;
      }
      continue;
    }
    if ((r = mp_cli_opt_value("run", argc, argv, &i, "--max-size", NULL,
			      &v))) {
      if (r < 0) return MP_EXIT_ERROR;
      max_size = mp_parse_size(v);
      if (max_size < LJMP_MAX_SIZE_MIN) {
	fprintf(stderr, "ljmemprof run: --max-size %s: bytes expected, at "
		"least 64K (e.g. 100M)\n", mp_cli_name(v));
	return MP_EXIT_ERROR;
      }
      continue;
    }
    r = mp_cli_report_opt("run", argc, argv, &i, &o);
    if (r == MP_OPT_ERROR) return MP_EXIT_ERROR;
    if (r == MP_OPT_TAKEN) continue;
    if (luajit_opt(a)) {
      fprintf(stderr, "ljmemprof run: unknown option '%s': LuaJIT's own "
	      "options go after --, with the luajit command: 'ljmemprof run "
	      "[OPTIONS] -- luajit %s SCRIPT [ARGS...]'\n", mp_cli_name(a),
	      mp_cli_name(a));
      return MP_EXIT_ERROR;
    }
    return mp_cli_unknown_opt("run", a);
  }
  if (i >= argc) {
    fprintf(stderr, "ljmemprof run: missing %s (see 'ljmemprof run "
	    "--help')\n", dashdash ? "LUAJIT command after --" : "SCRIPT");
    return MP_EXIT_ERROR;
  }
  if (dashdash && luajit) {
    fprintf(stderr, "ljmemprof run: --luajit and a command after -- both "
	    "name the LuaJIT to run (see 'ljmemprof run --help')\n");
    return MP_EXIT_ERROR;
  }
  if (stacks_given && !stacks && sample) {
    fprintf(stderr, "ljmemprof run: --stacks 0 cannot go with --sample: "
	    "sampled profiles record call stacks (leave --stacks out for 64 "
	    "frames, or give 1 to 10000)\n");
    return MP_EXIT_ERROR;
  }
  if (native && stacks_given && !stacks) {
    fprintf(stderr, "ljmemprof run: --native cannot go with --stacks 0: "
	    "native events carry call stacks\n");
    return MP_EXIT_ERROR;
  }
  if (o.heapsel == MP_HEAPSEL_NATIVE && !native) {
    fprintf(stderr, "ljmemprof run: --heap native needs --native: without "
	    "it no native memory is recorded\n");
    return MP_EXIT_ERROR;
  }
  if (native && !stacks_given) stacks = LJMP_STACKS_DEFAULT;
  if (native == 2 && set_preload() < 0) return MP_EXIT_ERROR;
  if ((native ? setenv(ENV_NATIVE, "1", 1) : unsetenv(ENV_NATIVE)) < 0) {
    fprintf(stderr, "ljmemprof run: %s\n", strerror(errno));
    return MP_EXIT_ERROR;
  }
  if (mp_cli_check_opts("run", &o)) return MP_EXIT_ERROR;
  if (out && !strcmp(out, "-")) {
    fprintf(stderr, "ljmemprof run: -o needs a file name, not '-'\n");
    return MP_EXIT_ERROR;
  }
  /* The command: as given after --, or luajit SCRIPT ARGS. */
  n = argc - i + !dashdash;
  if (!(cmd = calloc((size_t)n + 1, sizeof(char *)))) {
    fprintf(stderr, "ljmemprof run: %s\n", strerror(ENOMEM));
    return MP_EXIT_ERROR;
  }
  if (!dashdash) cmd[0] = (char *)(luajit ? luajit : "luajit");
  memcpy(cmd + !dashdash, argv + i, (size_t)(argc - i) * sizeof(char *));
  if (program_name(dashdash ? cmd : cmd + 1, dashdash ? n : n - 1, prog,
		   sizeof(prog)))
    o.render.program = prog;	/* The reports' titles (HTML, SVG). */
  if (o.output && !strcmp(o.output, "-")) o.output = NULL;	/* stdout */
  if (open_outputs(out, o.output, o.html, cmd, n, &text, &html, tmp,
		   sizeof(tmp)) < 0) {
    free(cmd);
    return MP_EXIT_ERROR;
  }
  if ((!out && temp_file(tmp, sizeof(tmp), "ljmemprof-XXXXXX.ljm") < 0) ||
      temp_file(note, sizeof(note), "ljmemprof-XXXXXX.not") < 0) {
    if (out || tmp[0]) unlink(tmp);
    drop_outputs(&text, &html);
    free(cmd);
    return MP_EXIT_ERROR;
  }
  path = tmp;
  /* Open on the profile, so that its data survives a script that removes
  ** the file or its directory. */
  keep = open(tmp, O_RDONLY | O_CLOEXEC);
  status = run_child(cmd, n, tmp, note, stacks, (unsigned long long)sample,
		     (unsigned long long)max_size);
  free(cmd);
  if (terms)
    fprintf(stderr, "ljmemprof run: the script was ended by a signal to "
	    "run (passed on); the report covers what it recorded\n");
  /* A reader that goes away (`| head`) is a write error, not a signal
  ** that would kill us and leave the temporary files behind, unnamed. */
  signal(SIGPIPE, SIG_IGN);
  rescued = 0;
  if (keep >= 0 && stat(tmp, &st) < 0 && errno == ENOENT &&
      fstat(keep, &st) == 0 && st.st_size > 0)
    rescued = rescue(keep, out, tmp, sizeof(tmp)) == 0 ? 1 : -1;
  if (keep >= 0) close(keep);
  if (rescued < 0) {	/* Said by rescue(). */
    drop_outputs(&text, &html);
    rstatus = MP_EXIT_ERROR;
  } else if (stat(tmp, &st) < 0) {
    fprintf(stderr, "ljmemprof run: no profile was recorded: its file %s "
	    "was removed while the script ran\n", mp_cli_name(tmp));
    tmp[0] = '\0';
    drop_outputs(&text, &html);
    rstatus = MP_EXIT_ERROR;
  } else if (st.st_size == 0) {
    /* No Lua code was called (the script could not be loaded: luajit's
    ** error is above), the agent did not start (its error is above), or
    ** the process was killed before. -o's file is as it was. */
    fprintf(stderr, "ljmemprof run: no profile was recorded: the script did "
	    "not start\n");
    unlink(tmp);
    drop_outputs(&text, &html);
    rstatus = MP_EXIT_ERROR;
  } else {
    if (out && rename(tmp, out) == 0) {
      path = out;
      tmp[0] = '\0';
    } else if (out) {	/* Reported from where it is, and kept. */
      fprintf(stderr, "ljmemprof run: -o %s: %s\n", mp_cli_name(out),
	      strerror(errno));
    }
    rstatus = mp_cli_report_to(&path, 1, &o, &text, &html);
    if (tmp[0] && (out || rstatus == MP_EXIT_ERROR)) {	/* Nothing lost. */
      fprintf(stderr, "ljmemprof run: the profile is kept in %s\n",
	      mp_cli_name(tmp));
      if (out && rstatus == MP_EXIT_OK) rstatus = MP_EXIT_ERROR;
      tmp[0] = '\0';
    }
  }
  if (stat(note, &st) == 0 && st.st_size > 0)
    fprintf(stderr, "ljmemprof run: warning: the script stopped the "
	    "profiler itself; the report covers the run until then\n");
  unlink(note);
  if (tmp[0]) unlink(tmp);
  return status ? status : rstatus;
}
