-- runner.lua: the ljmemprof benchmark runner (started by bench/run).
--
-- usage: luajit bench/runner.lua [--quick] [--pairs N] [--size small|default]
--                                [--only NAME[,NAME]] [--jit on|off|both]
--                                [--no-reader] [--reader-depth N] [--keep]
--                                [--agent DIR] [--stacks N] [--sample BYTES]
--                                [--luajit PATH] [--flavour luajit|luajit2]
--
-- For every workload and JIT mode it runs the workload without and with the
-- profiler in alternating pairs (the order flips every pair so that drift
-- and cache warmth hit both sides alike), checks that every run prints the
-- same checksum, and prints medians, the median of the per-pair ratios, the
-- events recorded and what the profile costs per event and per byte. Then it
-- records one big binary-trees profile and times the reader commands on it.
--
-- --agent DIR profiles with DIR/ljmemprof.so instead of build/ (e.g. a copy
-- of an older build, to compare two versions of the agent).
--
-- --flavour luajit2 benchmarks the build of OpenResty's LuaJIT (make
-- FLAVOUR=luajit2): --agent build/luajit2, run by its interpreter. The
-- workloads run under --luajit PATH, by default DIR/bin/luajit when the
-- agent's build has one (another flavour's unpacked interpreter), else
-- $LUAJIT or luajit.
--
-- --stacks N (default 64; 0: off) adds a third run to every pair, profiled
-- with call stacks of up to N frames (mp.start{stacks = N}), in the same
-- rotation, and the table gains its ratio and bytes per event ("stk")
-- beside the one-frame mode's. Its events are counted by `info`; if that
-- fails, the one-frame run's count is used and the B/ev is marked "~"
-- (exact with the JIT off, where both runs allocate alike).
--
-- --sample BYTES (default 524288, the agent's default rate; 0: off) adds
-- one more run to every round, sampled at that mean (mp.start{sample =
-- BYTES}, which records call stacks of 64 frames), and a table of its
-- ratio, its profile's size beside the full one's, and its events.
--
-- Children are started with fork/execvp and reaped with wait4 through the
-- FFI, which gives exact wall times (no shell in between) and the peak RSS
-- of each child (ru_maxrss, what GNU time's %M reports). Only Linux with
-- glibc is supported (open(2) flag values are those of x86-64 and arm64).
--
-- Exit status: 0 whatever the timings are; 1 only if something is broken (a
-- workload fails or prints a different checksum, the profiler leaves no
-- complete profile, a reader command that exists fails).

local ffi = require("ffi")

ffi.cdef[[
typedef int pid_t;
struct mp_timespec { long tv_sec; long tv_nsec; };
struct mp_timeval { long tv_sec; long tv_usec; };
struct mp_rusage {
  struct mp_timeval ru_utime, ru_stime;
  long ru_maxrss, ru_ixrss, ru_idrss, ru_isrss, ru_minflt, ru_majflt;
  long ru_nswap, ru_inblock, ru_oublock, ru_msgsnd, ru_msgrcv;
  long ru_nsignals, ru_nvcsw, ru_nivcsw;
};
int clock_gettime(int clk, struct mp_timespec *ts);
pid_t fork(void);
int execvp(const char *file, char *const argv[]);
pid_t wait4(pid_t pid, int *status, int options, struct mp_rusage *ru);
int open(const char *path, int flags, int mode);
int dup2(int old, int new);
int close(int fd);
void _exit(int code);
int setenv(const char *name, const char *value, int overwrite);
char *strerror(int errnum);
]]
local C = ffi.C
local O_WRONLY, O_CREAT, O_TRUNC = 1, 0x40, 0x200
local CLOCK_MONOTONIC = 1
local EINTR = 4

local LUAJIT = os.getenv("LUAJIT") or "luajit"	-- Or --luajit, --flavour.
local CLI = "build/ljmemprof"
local OUT = "build/bench"

-- -- Helpers ---------------------------------------------------------------

local function log(...)
  io.stderr:write(string.format(...), "\n")
end

local function die(...)
  io.stderr:write("bench: ", string.format(...), "\n")
  os.exit(1)
end

local function now()
  local ts = ffi.new("struct mp_timespec")
  C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- Quote s for /bin/sh.
local function shq(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function file_size(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local n = f:seek("end")
  f:close()
  return n
end

-- Last byte of a file (a finalised ljm stream ends with 0x80).
local function last_byte(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local n = f:seek("end")
  if n == 0 then f:close(); return nil end
  f:seek("set", n - 1)
  local b = f:read(1)
  f:close()
  return b and b:byte()
end

-- Output of a shell command (first line trimmed if line is true).
local function capture(cmd, line)
  local p = io.popen(cmd .. " 2>/dev/null")
  local s = p:read("*a") or ""
  p:close()
  if line then s = s:match("^[^\n]*") or "" end
  return s
end

local function median(t)
  local s = {}
  for i = 1, #t do s[i] = t[i] end
  table.sort(s)
  local n = #s
  if n == 0 then return 0 / 0 end
  if n % 2 == 1 then return s[(n + 1) / 2] end
  return (s[n / 2] + s[n / 2 + 1]) / 2
end

-- Run argv with stdout and stderr to files; returns wall seconds, exit
-- status (or 128 + signal), peak RSS in KiB, CPU seconds (user + system).
local function spawn(argv, out_path, err_path)
  local cargv = ffi.new("char *[?]", #argv + 1)
  local keep = {}
  for i = 1, #argv do
    keep[i] = ffi.new("char[?]", #argv[i] + 1, argv[i])
    cargv[i - 1] = keep[i]
  end
  cargv[#argv] = nil
  local mode = bit.bor(O_WRONLY, O_CREAT, O_TRUNC)
  local ofd = C.open(out_path, mode, 420)
  local efd = C.open(err_path, mode, 420)
  if ofd < 0 or efd < 0 then
    die("cannot open %s or %s: %s", out_path, err_path,
        ffi.string(C.strerror(ffi.errno())))
  end
  local status = ffi.new("int[1]")
  local ru = ffi.new("struct mp_rusage")
  local t0 = now()
  local pid = C.fork()
  if pid == 0 then
    C.dup2(ofd, 1)
    C.dup2(efd, 2)
    C.execvp(cargv[0], cargv)
    C._exit(127)
  end
  C.close(ofd)
  C.close(efd)
  if pid < 0 then die("fork: %s", ffi.string(C.strerror(ffi.errno()))) end
  local r
  repeat
    r = C.wait4(pid, status, 0, ru)
  until r == pid or ffi.errno() ~= EINTR
  local t1 = now()
  if r ~= pid then die("wait4: %s", ffi.string(C.strerror(ffi.errno()))) end
  local st = status[0]
  local code
  if bit.band(st, 0x7f) == 0 then code = bit.band(bit.rshift(st, 8), 0xff)
  else code = 128 + bit.band(st, 0x7f) end
  local cpu = tonumber(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec)
    + tonumber(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6
  return t1 - t0, code, tonumber(ru.ru_maxrss), cpu
end

-- -- Options ---------------------------------------------------------------

local WORKLOADS = {
  { name = "binary-trees", script = "bench/binary_trees.lua",
    size = { quick = 10, small = 15, default = 17 } },
  { name = "strings", script = "bench/strings.lua",
    size = { quick = 5, small = 100, default = 400 } },
  { name = "tables", script = "bench/tables.lua",
    size = { quick = 30, small = 400, default = 1500 } },
  { name = "json", script = "bench/json.lua",
    size = { quick = 5, small = 120, default = 500 } },
  { name = "deep", script = "bench/deep.lua",
    size = { quick = 500, small = 3000, default = 9000 } },
}

local opt = { pairs = nil, size = "default", jit = "both", reader = true,
              reader_depth = nil, keep = false, only = nil, agent = "build",
              stacks = 64, sample = 524288 }
do
  local i = 1
  local function val(name)
    i = i + 1
    if arg[i] == nil then die("%s needs a value", name) end
    return arg[i]
  end
  while arg[i] do
    local a = arg[i]
    if a == "--quick" then opt.size = "quick"
    elseif a == "--pairs" then opt.pairs = tonumber(val(a))
    elseif a == "--size" then opt.size = val(a)
    elseif a == "--jit" then opt.jit = val(a)
    elseif a == "--only" then opt.only = val(a)
    elseif a == "--no-reader" then opt.reader = false
    elseif a == "--reader-depth" then opt.reader_depth = tonumber(val(a))
    elseif a == "--keep" then opt.keep = true
    elseif a == "--agent" then opt.agent = val(a):gsub("/$", "")
    elseif a == "--stacks" then opt.stacks = tonumber(val(a))
    elseif a == "--sample" then opt.sample = tonumber(val(a))
    elseif a == "--luajit" then opt.luajit = val(a)
    elseif a == "--flavour" then
      local f = val(a)
      if f == "luajit" then opt.agent = "build"
      elseif f == "luajit2" then opt.agent = "build/luajit2"
      else die("--flavour must be luajit or luajit2") end
    elseif a == "-h" or a == "--help" then
      local head = slurp("bench/runner.lua"):match("^(.-)\nlocal ")
      io.write((("\n" .. head):gsub("\n%-%- ?", "\n"):sub(2)), "\n")
      os.exit(0)
    else die("unknown option %s (try --help)", a) end
    i = i + 1
  end
  if opt.size ~= "quick" and opt.size ~= "small" and opt.size ~= "default" then
    die("--size must be small or default (or use --quick)")
  end
  if opt.jit ~= "on" and opt.jit ~= "off" and opt.jit ~= "both" then
    die("--jit must be on, off or both")
  end
  opt.pairs = opt.pairs or (opt.size == "quick" and 2 or 5)
  if opt.pairs < 1 then die("--pairs must be at least 1") end
  if not opt.stacks or opt.stacks < 0 then die("--stacks must be a number") end
  if not opt.sample or opt.sample < 0 or opt.sample % 1 ~= 0 then
    die("--sample must be a number of bytes")
  end
  opt.reader_depth = opt.reader_depth or
    ({ quick = 10, small = 15, default = 17 })[opt.size]
end

os.execute("mkdir -p " .. OUT)
if not io.open(opt.agent .. "/ljmemprof.so") then
  die("no %s/ljmemprof.so", opt.agent)
end
C.setenv("LUA_CPATH", opt.agent .. "/?.so;;", 1)
if opt.luajit then LUAJIT = opt.luajit
elseif io.open(opt.agent .. "/bin/luajit") then LUAJIT = opt.agent .. "/bin/luajit" end

-- What the CLI offers today (the report tool is written in parallel).
local usage = capture("(" .. CLI .. " 2>&1)")
local has = { report = usage:find("report", 1, true) ~= nil,
              info = usage:find("info", 1, true) ~= nil,
              diff = usage:find("diff", 1, true) ~= nil }

-- -- One measured workload ---------------------------------------------------

-- Argument vector for one run of w (profiled when prof names the profile,
-- with call stacks of up to `stacks` frames if given, sampled at a mean of
-- `sample` bytes if given).
local function argv_of(w, jit_on, prof, stacks, sample)
  local a = { LUAJIT }
  if not jit_on then a[#a + 1] = "-joff" end
  if prof then
    -- Only the options asked for: sampling takes its default stacks, and
    -- refuses stacks = 0.
    local o = ("path = %q"):format(prof)
    if stacks and stacks > 0 then o = o .. (", stacks = %d"):format(stacks) end
    if sample and sample > 0 then o = o .. (", sample = %d"):format(sample) end
    a[#a + 1] = "-e"
    a[#a + 1] = 'local mp = require"ljmemprof"; assert(mp.start{ ' .. o .. ' })'
  end
  a[#a + 1] = w.script
  a[#a + 1] = tostring(w.size[opt.size])
  return a
end

-- Run once; returns wall seconds, the checksum line and CPU seconds; dies
-- if the run failed.
local function run_once(w, jit_on, prof, stacks, sample)
  local out, err = OUT .. "/stdout.txt", OUT .. "/stderr.txt"
  local t, code, _, cpu = spawn(argv_of(w, jit_on, prof, stacks, sample), out, err)
  local text = slurp(out) or ""
  local sum = text:match("\n?(checksum [^\n]*)")
  if code ~= 0 or not sum then
    die("%s (%s, jit %s) failed with status %d:\n%s%s", w.name,
        prof and "profiled" or "plain", jit_on and "on" or "off", code,
        text, slurp(err) or "")
  end
  return t, sum, cpu
end

-- Number of events in a profile: `info` if it says, else count `events`;
-- nil if quiet is set and neither can read it.
local function count_events(path, quiet)
  if has.info then
    local s = "\n" .. capture(CLI .. " info " .. shq(path))
    local n = s:match("\nevents:%s*(%d+)")
    if quiet and not s:find("\ncomplete:%s*yes") then return nil end
    if n then return tonumber(n) end
  end
  local s = capture(CLI .. " events " .. shq(path) .. " | wc -l", true)
  local n = tonumber(s)
  if not n or n < 1 then die("cannot count the events of %s", path) end
  return n - 1		-- The final {"complete":true} line.
end

-- Check that the profiler left a complete profile at path.
local function check_profile(path, what)
  if last_byte(path) ~= 0x80 then
    die("%s: profile %s is missing or not finalised", what, path)
  end
end

local results = {}

local function bench(w, jit_on)
  local mode = jit_on and "on" or "off"
  local what = w.name .. " jit " .. mode
  local prof = ("%s/%s-jit%s.ljm"):format(OUT, w.name, mode)
  local sprof = ("%s/%s-jit%s-stacks.ljm"):format(OUT, w.name, mode)
  local pprof = ("%s/%s-jit%s-sample.ljm"):format(OUT, w.name, mode)
  local stk, smp = opt.stacks > 0, opt.sample > 0
  log("%-22s size %-5s warm-up + %d rounds of %d", what,
      tostring(w.size[opt.size]), opt.pairs, 2 + (stk and 1 or 0) + (smp and 1 or 0))
  local _, want = run_once(w, jit_on, nil)
  local base, with, ratio, cratio = {}, {}, {}, {}
  local swith, sratio, pratio = {}, {}, {}
  -- A profiled run; its profile is checked, then deleted unless it is the
  -- last one (kept to count the events): deleting it before the kernel
  -- writes it back keeps that disk work out of the runs that follow.
  local function profiled(i, path, stacks, sample)
    local t, sum, cpu = run_once(w, jit_on, path, stacks, sample)
    check_profile(path, what)
    if i < opt.pairs then os.remove(path) end
    return t, sum, cpu
  end
  for i = 1, opt.pairs do
    -- The order turns every round, so that drift hits every mode alike.
    local runs = {
      function () return run_once(w, jit_on, nil) end,
      function () return profiled(i, prof) end,
    }
    local k_stk, k_smp
    if stk then
      runs[#runs + 1] = function () return profiled(i, sprof, opt.stacks) end
      k_stk = #runs
    end
    if smp then
      runs[#runs + 1] = function () return profiled(i, pprof, 0, opt.sample) end
      k_smp = #runs
    end
    local t, sum, cpu = {}, {}, {}
    for k = 0, #runs - 1 do
      local j = (i - 1 + k) % #runs + 1
      t[j], sum[j], cpu[j] = runs[j]()
    end
    for j = 1, #runs do
      if sum[j] ~= want then
        die("%s: checksum changed: '%s' (expected '%s')", what, sum[j], want)
      end
    end
    base[i], with[i], ratio[i] = t[1], t[2], t[2] / t[1]
    cratio[i] = cpu[1] > 0 and cpu[2] / cpu[1] or 0 / 0
    if stk then swith[i], sratio[i] = t[k_stk], t[k_stk] / t[1] end
    if smp then pratio[i] = t[k_smp] / t[1] end
  end
  local size = file_size(prof)
  local events = count_events(prof)
  if not opt.keep then os.remove(prof) end
  local rmin, rmax = math.huge, 0
  for i = 1, #ratio do
    rmin, rmax = math.min(rmin, ratio[i]), math.max(rmax, ratio[i])
  end
  local r = {
    name = w.name, size = w.size[opt.size], jit = mode,
    base = median(base), with = median(with), ratio = median(ratio),
    rmin = rmin, rmax = rmax, cpu = median(cratio),
    best = math.min(unpack(with)) / math.min(unpack(base)),
    events = events, bytes = size,
  }
  r.ns_ev = events > 0 and (r.with - r.base) / events * 1e9 or 0
  r.b_ev = events > 0 and size / events or 0
  r.mbs = size / r.with / 1e6
  if stk then
    local ssize = file_size(sprof)
    local sev = count_events(sprof, true)
    r.s_approx = sev == nil
    sev = sev or events
    if not opt.keep then os.remove(sprof) end
    r.s_ratio = median(sratio)
    r.s_b_ev = sev > 0 and ssize / sev or 0
    r.s_ns_ev = sev > 0 and (median(swith) - r.base) / sev * 1e9 or 0
  end
  if smp then
    r.p_ratio = median(pratio)
    r.p_bytes = file_size(pprof)
    r.p_events = count_events(pprof, true)
    if not opt.keep then os.remove(pprof) end
  end
  results[#results + 1] = r
end

-- -- The reader ---------------------------------------------------------------

local reader = {}

local function bench_reader()
  local path = OUT .. "/reader.ljm"
  local w = { name = "binary-trees", script = "bench/binary_trees.lua",
              size = { [opt.size] = opt.reader_depth } }
  log("reader: recording binary-trees %d (jit off)", opt.reader_depth)
  run_once(w, false, path)
  check_profile(path, "reader profile")
  local size = file_size(path)
  log("reader: counting events of %.0f MB", size / 1e6)
  local events = count_events(path)
  reader.events, reader.bytes = events, size
  if opt.size == "default" and events < 50e6 then
    log("reader: note: only %d events (< 50M); raise --reader-depth", events)
  end
  -- { label, arguments, output file, runs }: `events` prints gigabytes of
  -- JSON for a big profile, so it runs once into /dev/null; the others run
  -- three times (median time, largest peak RSS).
  -- A fifth field names the file the command writes (-o), checked instead
  -- of its standard output; diff reads the profile twice (against itself).
  local html = OUT .. "/reader.html"
  local cmds = { { "events", { "events" }, "/dev/null", 1 } }
  if has.info then cmds[#cmds + 1] = { "info", { "info" } } end
  if has.report then
    cmds[#cmds + 1] = { "report", { "report" } }
    cmds[#cmds + 1] = { "report --leak-only", { "report", "--leak-only" } }
    cmds[#cmds + 1] = { "report --peak", { "report", "--peak" } }
    cmds[#cmds + 1] = { "report --temporary", { "report", "--temporary" } }
    cmds[#cmds + 1] = { "report --format html", { "report", "--format",
      "html", "-o", html }, nil, nil, html }
  end
  if has.diff then
    cmds[#cmds + 1] = { "diff (itself)", { "diff", path } }
  end
  -- The commands take turns, round after round, so that the load of a
  -- shared machine weighs on all of them alike; CPU time (user + system)
  -- beside wall time is the steadier measure there.
  local res = {}
  for round = 1, 3 do
    for k, c in ipairs(cmds) do
      if round <= (c[4] or 3) then
        local argv = { CLI }
        for _, a in ipairs(c[2]) do argv[#argv + 1] = a end
        argv[#argv + 1] = path
        local out = c[3] or OUT .. "/reader-out.txt"
        local err = OUT .. "/reader-err.txt"
        local r = res[k] or { times = {}, cpus = {}, peak = 0 }
        res[k] = r
        log("reader: ljmemprof %s (%d)", c[1], round)
        local t, code, rss, cpu = spawn(argv, out, err)
        if code ~= 0 then
          die("ljmemprof %s %s failed with status %d:\n%s", c[1], path, code,
              (slurp(err) or ""):sub(1, 2000))
        end
        if out ~= "/dev/null" and (file_size(c[5] or out) or 0) == 0 then
          die("ljmemprof %s %s printed nothing", c[1], path)
        end
        r.times[#r.times + 1], r.cpus[#r.cpus + 1] = t, cpu
        r.peak = math.max(r.peak, rss)
      end
    end
  end
  for k, c in ipairs(cmds) do
    reader[#reader + 1] = { cmd = c[1], t = median(res[k].times),
                            cpu = median(res[k].cpus), rss = res[k].peak }
  end
  -- How long the HTML report takes to open in a browser.
  if has.report and file_size(html) and
     os.execute("command -v chromium >/dev/null 2>&1 && " ..
                "command -v python3 >/dev/null 2>&1") == 0 then
    log("reader: opening the HTML report in headless chromium")
    reader.html = capture("python3 bench/html_load.py " .. html .. " 5 2>&1",
                          true)
  end
  os.remove(OUT .. "/reader-err.txt")
  if not opt.keep then os.remove(path) end
  os.remove(html)
  os.remove(OUT .. "/reader-out.txt")
end

-- -- Main ------------------------------------------------------------------

local t_start = now()
local only = {}
if opt.only then
  for n in opt.only:gmatch("[^,]+") do only[n] = true end
end
for _, w in ipairs(WORKLOADS) do
  if not opt.only or only[w.name] then
    if opt.jit ~= "off" then bench(w, true) end
    if opt.jit ~= "on" then bench(w, false) end
  end
end
if opt.reader then bench_reader() end
os.remove(OUT .. "/stdout.txt")
os.remove(OUT .. "/stderr.txt")

-- -- Table -----------------------------------------------------------------

local function si(n)
  if n >= 1e9 then return ("%.2fG"):format(n / 1e9) end
  if n >= 1e6 then return ("%.1fM"):format(n / 1e6) end
  if n >= 1e3 then return ("%.1fk"):format(n / 1e3) end
  return tostring(n)
end

local cpu = capture("grep -m1 'model name' /proc/cpuinfo", true)
  :gsub("^model name%s*:%s*", "")
local rev = capture("git rev-parse --short HEAD", true)
if rev ~= "" and capture("git status --porcelain -- src include", true) ~= ""
then rev = rev .. "+dirty" end
io.write(("ljmemprof bench: agent %s/ljmemprof.so, size %s, %d pairs, %s (%s), %s, %s cpus, commit %s\n")
  :format(opt.agent, opt.size, opt.pairs, capture(LUAJIT .. " -v", true):match("^%S+ %S+")
    or "luajit", LUAJIT, cpu, capture("nproc", true), rev ~= "" and rev or "?"))
io.write("\n")
io.write(("%-13s %5s %3s %7s %7s %6s %11s %6s %6s %8s %5s %6s %6s\n"):format(
  "workload", "size", "jit", "base s", "prof s", "ratio", "min-max", "best",
  "cpu", "events", "B/ev", "ns/ev", "MB/s"))
for _, r in ipairs(results) do
  io.write(("%-13s %5s %3s %7.3f %7.3f %5.2fx %5.2f-%-5.2f %5.2fx %5.2fx %8s %5.1f %6.1f %6.1f\n")
    :format(r.name, tostring(r.size), r.jit, r.base, r.with, r.ratio, r.rmin,
            r.rmax, r.best, r.cpu, si(r.events), r.b_ev, r.ns_ev, r.mbs))
end

if opt.stacks > 0 then
  io.write(("\nstacks = %d beside one frame (medians of the same rounds; \"~\": events of the\none-frame run, where the stack profile's could not be counted)\n"):format(opt.stacks))
  io.write(("%-13s %3s %7s %7s %7s %7s %7s %7s\n"):format("workload", "jit",
    "ratio", "stk", "B/ev", "stk B/ev", "ns/ev", "stk ns"))
  for _, r in ipairs(results) do
    io.write(("%-13s %3s %6.2fx %6.2fx %7.1f %7.1f%s %7.1f %7.1f\n"):format(
      r.name, r.jit, r.ratio, r.s_ratio, r.b_ev, r.s_b_ev,
      r.s_approx and "~" or " ", r.ns_ev, r.s_ns_ev))
  end
end

if opt.sample > 0 then
  io.write(("\nsample = %d (mean bytes between samples) beside every event (medians of the\nsame rounds; the sampled profile records call stacks of 64 frames)\n"):format(opt.sample))
  io.write(("%-13s %3s %7s %7s %10s %10s %8s\n"):format("workload", "jit",
    "ratio", "smp", "full size", "smp size", "smp ev"))
  for _, r in ipairs(results) do
    io.write(("%-13s %3s %6.2fx %6.2fx %9.1fM %9.1fk %8s\n"):format(
      r.name, r.jit, r.ratio, r.p_ratio, r.bytes / 1e6, r.p_bytes / 1e3,
      r.p_events and si(r.p_events) or "?"))
  end
end

if opt.reader then
  io.write(("\nreader on binary-trees %d (jit off): %s events, %.0f MB\n")
    :format(opt.reader_depth, si(reader.events), reader.bytes / 1e6))
  io.write(("%-20s %8s %10s %8s %9s %9s %7s %7s\n"):format("command",
    "wall s", "events/s", "MB/s", "peak RSS", "x report", "cpu s", "x cpu"))
  local base, bcpu
  for _, c in ipairs(reader) do
    if c.cmd == "report" then base, bcpu = c.t, c.cpu end
  end
  for _, c in ipairs(reader) do
    io.write(("%-20s %8.2f %10s %8.1f %6.0f MB %8s %7.2f %7s\n"):format(
      c.cmd, c.t, si(reader.events / c.t), reader.bytes / c.t / 1e6,
      c.rss / 1024, base and ("%.2fx"):format(c.t / base) or "-", c.cpu,
      bcpu and ("%.2fx"):format(c.cpu / bcpu) or "-"))
  end
  if reader.html then io.write(reader.html, "\n") end
  if not has.report then
    io.write("report, report --leak-only: skipped, `ljmemprof report` does "
             .. "not exist yet in this build\n")
  end
end
io.write(("\ntotal %.0f s\n"):format(now() - t_start))
