-- run_start.lua: what `ljmemprof run` has luajit run first (`-e`), before
-- the program (src/cli/cmd_run.c). It sets everything up, then starts the
-- agent when the next Lua function is called, so that none of its own
-- allocations are recorded: the report shows only the program's. That
-- function is the script's main chunk, after luajit has loaded it (after
-- --: the first -e chunk or -l module, or the script), found by a one-shot
-- call hook (only the C functions called before it see the hook run, and
-- the JIT records no trace while it is set). A script that cannot be
-- loaded is never called: nothing is recorded, and run says so instead of
-- reporting luajit's loader and its error message. The functions that stop
-- the profiler are wrapped, without allocating when called, so that a stop
-- by the script is noted in the file @ENV_NOTE@ names (written after the
-- stop: not recorded), for the warning after the report.
--
-- Embedded at build time (scripts/gen-embed.pl --macros): each capital name
-- between two @ is the macro of cmd_run.c that names an environment variable.
local mp = require('ljmemprof')
local stop, compat, mstop = mp.stop, mp.compat

-- Note a successful stop; its results unchanged.
local function noted(ok, ...)
  if ok then
    local f = io.open(os.getenv('@ENV_NOTE@'), 'w')
    if f then f:write('stopped\n') f:close() end
  end
  return ok, ...
end

local function cstop(...) return noted(mstop(...)) end

-- After mp.compat(): misc.memprof.stop noted too.
local function compatted(...)
  local m = misc and misc.memprof
  if m and m.stop ~= cstop then mstop = m.stop m.stop = cstop end
  return ...
end

mp.stop = function(...) return noted(stop(...)) end
mp.compat = function(...) return compatted(compat(...)) end

local opts = {
  path = os.getenv('@ENV_OUT@'),
  stacks = tonumber(os.getenv('@ENV_STACKS@')),
  sample = tonumber(os.getenv('@ENV_SAMPLE@')),
  max_size = tonumber(os.getenv('@ENV_MAX_SIZE@')),
  collect = true,
  native = os.getenv('@ENV_NATIVE@') == '1',
}

debug.sethook(function()
  local i = debug.getinfo(2, 'S')
  if not i or i.what == 'C' then return end
  debug.sethook()
  local ok, err = mp.start(opts)
  if not ok then
    io.stderr:write('ljmemprof run: cannot start the profiler: ',
                    tostring(err), '\n')
    os.exit(2)
  end
end, 'c')
