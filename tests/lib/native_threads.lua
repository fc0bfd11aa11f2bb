-- native_threads.lua: the script of tests/agent-native-tsan.t, run by
-- tests/c/native_threads.c under ThreadSanitizer: ten native recordings
-- (into $OUT/tN.ljm, the even ones sampled at 64 bytes: the threads'
-- blocks are sampled, resized out of the sample, freed) start and stop
-- while four threads of a C module malloc, realloc and free; exits 1 if a
-- block of theirs was corrupted. The VM's thread mallocs 50 blocks of
-- 10000 bytes each time (always sampled: more than 37 x 64).
package.cpath = (os.getenv("BUILD") or "build") .. "/tests/cmod/?.so;" .. package.cpath
local mp = require("ljmemprof")
local nm = require("native_mod")
local dir = assert(os.getenv("OUT"))
nm.threads_start()
local c0 = os.clock()
while nm.threads_rounds() < 100 and os.clock() - c0 < 20 do end
for round = 1, 10 do
  assert(mp.start{ path = dir .. "/t" .. round .. ".ljm", native = true,
		   sample = round % 2 == 0 and 64 or nil })
  for i = 1, 50 do nm.churn(10000) end
  local r0, c1 = nm.threads_rounds(), os.clock()
  while nm.threads_rounds() < r0 + 20 and os.clock() - c1 < 20 do end
  assert(mp.stop())
end
local rounds, bad = nm.threads_stop()
print(rounds, bad)
os.exit(bad == 0 and 0 or 1)
