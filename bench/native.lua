-- bench/native.lua: what native = true costs, by hand (not in bench/run):
--   luajit bench/native.lua none|stacks|native|sampled cjson|ffi|ffioff|ffibuf|vm
-- cjson: 200000 encodes with a buffer malloc'd per call; ffi: 3000000
-- ffi.C.malloc(64)/free pairs; ffioff: the same from the interpreter (the
-- JIT off); ffibuf: 1000000 buffers of 256 bytes malloc'd, a 200-byte
-- message copied in, read back as a Lua string and freed (a C buffer per
-- request, used); vm: 3000000 tables of the VM's heap (64 bytes each), for the
-- cost of a VM event. sampled: native = true with
-- sample = 512 KiB. Prints the workload's CPU seconds.
package.cpath = (os.getenv("BUILD") or "build") .. "/?.so;" .. package.cpath
local mode, work = arg[1], arg[2]
if work == "ffioff" then jit.off() end
local mp = require("ljmemprof")
local cjson = require("cjson")
local ffi = require("ffi")
ffi.cdef"void *malloc(size_t); void free(void *);"
local path = (os.getenv("TMPDIR") or "/tmp") .. "/ljmp-native-bench.ljm"
if mode ~= "none" then
  assert(mp.start{ path = path, stacks = 16,
		   native = mode == "native" or mode == "sampled",
		   sample = mode == "sampled" and 524288 or nil })
end
local C = ffi.C
local t0 = os.clock()
if work == "cjson" then
  cjson.encode_keep_buffer(false)
  local doc = { a = { 1, 2, 3, "x" }, b = string.rep("y", 200), c = { d = true } }
  for i = 1, 200000 do local s = cjson.encode(doc) end
elseif work == "ffibuf" then
  local msg = string.rep("abcdefgh", 25)
  local n = 0
  for i = 1, 1000000 do
    local p = ffi.cast("char *", C.malloc(256))
    ffi.copy(p, msg, 200)
    p[i % 200] = 65
    n = n + #ffi.string(p, 200)
    C.free(p)
  end
  assert(n == 200000000)
elseif work == "vm" then
  local keep = {}
  for i = 1, 3000000 do keep[i % 64 + 1] = { i } end
else
  for i = 1, 3000000 do local p = C.malloc(64) C.free(p) end
end
local dt = os.clock() - t0
if mode ~= "none" then
  assert(mp.stop())
  os.remove(path)
end
print(string.format("%s %s %.3f", work, mode, dt))
