-- objkind.lua: what kind of VM object a block of the profiled heap holds.
--
-- While the GC is stopped, every block allocated during a profile and not
-- freed in it is still what it was made for, so its header says what it
-- is. This reads the GC header of such a block (address and size from the
-- profile's events) and checks it against the layout of LuaJIT 2.1 with
-- 64-bit GC references (lj_obj.h: GCHeader, GCstr, GCtab, GCfunc):
--   "str", "tab", "func", "thread", "upval", "proto", "trace", "udata",
--   "cdata", or "raw" (no GC object: an array part, a hash part, a stack,
--   a buffer of the JIT compiler...).
-- A raw block may by chance carry a valid type byte, so each kind is also
-- checked against its size (strings: length and terminating NUL; tables:
-- colocated array; closures: number of upvalues; prototypes: their
-- recorded total size; cdata: their C type's size; userdata: payload
-- length); M.selftest() checks the
-- whole on real objects before anything relies on it.

local ffi = require("ffi")
local M = {}

local u8 = ffi.typeof("const uint8_t *")
local i8 = ffi.typeof("const int8_t *")
local u16 = ffi.typeof("const uint16_t *")
local u32 = ffi.typeof("const uint32_t *")
local u64 = ffi.typeof("const uint64_t *")

-- gct: the type byte at offset 9 (after nextgc and marked), ~LJ_Txxx.
local KIND = { [4] = "str", [5] = "upval", [6] = "thread", [7] = "proto",
  [8] = "func", [9] = "trace", [10] = "cdata", [11] = "tab", [12] = "udata" }

-- A C type's info by id (LuaJIT 2.1's internal ffi.typeinfo): without it,
-- no block is taken for a cdata.
local typeinfo = ffi.typeinfo

-- The kind of the live block at addr (a number) of size bytes. Every read
-- stays inside the block: a raw block's bytes are anything.
function M.kind(addr, size, sizes)
  if size < 16 then return "raw" end
  local p = ffi.cast(u8, addr)
  local k = KIND[p[9]]
  if not k then return "raw" end
  if k == "str" then
    -- GCstr: header, reserved, hashalg, sid, hash, len at 20; data at 24.
    if size < 28 then return "raw" end
    local len = ffi.cast(u32, addr + 20)[0]
    if len > size - 25 or size ~= 24 + len + 4 - len % 4 or p[24 + len] ~= 0 then return "raw" end
  elseif k == "tab" then
    -- GCtab: colo (int8) at 11, a colocated array of |colo| slots after the
    -- 64-byte header; asize at 48, hmask at 52 (a power of two minus 1).
    if size < 64 then return "raw" end
    local colo = ffi.cast(i8, addr)[11]
    if colo < 0 then colo = -colo end
    local hmask = ffi.cast(u32, addr + 52)[0]
    if size ~= 64 + 8 * colo or bit.band(hmask, hmask + 1) ~= 0 then return "raw" end
    -- The hash part (node at 40) is never NULL (an empty one is the
    -- shared nil node); a colocated array (at 16) follows the header.
    local array, node = ffi.cast(u64, addr + 16)[0], ffi.cast(u64, addr + 40)[0]
    if node == 0 or (ffi.cast(i8, addr)[11] > 0 and tonumber(array) ~= addr + 64) then
      return "raw"
    end
  elseif k == "func" then
    -- GCfunc: ffid at 10, nupvalues at 11; a Lua closure (ffid 0) has
    -- 8-byte upvalue references after 40 bytes, a C closure 8-byte TValues
    -- after 48.
    if size ~= (p[10] == 0 and 40 or 48) + 8 * p[11] then return "raw" end
    -- Its environment (at 16) and pc (at 32) are never NULL.
    if ffi.cast(u64, addr + 16)[0] == 0 or ffi.cast(u64, addr + 32)[0] == 0 then return "raw" end
  elseif k == "trace" then
    -- GCtrace (120 bytes), then its IR, snapshots (12 bytes each) and
    -- snapshot map (4 bytes each) in one block (lj_trace_alloc): nsnap at
    -- 10, nins at 12, ir at 32 (biased by nk), nk at 40, nsnapmap at 44.
    if size < 120 then return "raw" end
    local nsnap = ffi.cast(u16, addr + 10)[0]
    local nins, nk = ffi.cast(u32, addr + 12)[0], ffi.cast(u32, addr + 40)[0]
    local nsnapmap = ffi.cast(u32, addr + 44)[0]
    local ir = tonumber(ffi.cast(u64, addr + 32)[0])
    if nins < nk or size ~= 120 + (nins - nk) * 8 + nsnap * 12 + nsnapmap * 4 or
       ir + nk * 8 ~= addr + 120 then
      return "raw"
    end
  elseif k == "proto" then
    -- GCproto: sizept (the whole block: bytecode, constants, upvalues,
    -- debug info are colocated) at 56; k (the constants' middle) at 32
    -- points into the block; 104 bytes before the colocated arrays.
    if size < 104 or ffi.cast(u32, addr + 56)[0] ~= size then return "raw" end
    local kp = tonumber(ffi.cast(u64, addr + 32)[0])
    if kp < addr + 104 or kp > addr + size then return "raw" end
  elseif k == "cdata" then
    -- GCcdata: ctypeid at 10, then the payload, of its C type's size (a
    -- variable-length cdata starts 8 bytes earlier: never seen as one).
    local ti = typeinfo and typeinfo(ffi.cast(u16, addr + 10)[0])
    if not ti or not ti.size or size ~= 16 + ti.size then return "raw" end
  elseif k == "udata" then
    -- GCudata: a 48-byte header, the payload's length (len) at 24.
    if size < 48 or size ~= 48 + ffi.cast(u32, addr + 24)[0] then return "raw" end
  elseif sizes and sizes[k] and size ~= sizes[k] then
    return "raw"	-- thread, upvalue: fixed sizes, measured by selftest
  elseif k == "thread" then
    -- lua_State: dummy_ffid (always FF_C, 1) at 10, status at 11.
    if size < 16 or p[10] ~= 1 or p[11] > 6 then return "raw" end
  elseif k == "upval" then
    -- GCupval: closed, immutable (0 or 1) at 10, 11; v at 32 points to
    -- the value inside (at 16) once closed.
    if size < 40 or p[10] > 1 or p[11] > 1 or
       (p[10] == 1 and tonumber(ffi.cast(u64, addr + 32)[0]) ~= addr + 16) then
      return "raw"
    end
  end
  return k
end

local buf, bufsize = nil, 0	-- scratch for M.text

-- The contents of the string at addr (a block of kind "str"), behind a
-- "\1": a copy that is never the program's own string (holding that one
-- would keep it interned for the next run, which would then not allocate it).
function M.text(addr)
  local len = ffi.cast(u32, addr + 20)[0]
  if len + 1 > bufsize then
    bufsize = len + 1
    buf = ffi.new("uint8_t[?]", bufsize)
  end
  buf[0] = 1
  ffi.copy(buf + 1, ffi.cast(u8, addr) + 24, len)
  return ffi.string(buf, len + 1)
end

-- Live blocks of a profile that satisfy keep(e), with their kinds: reads
-- the events of path with the CLI. The caller keeps the GC stopped and the
-- JIT's traces alive until this returns. Returns a list of
-- { event = e, kind = k }, or nil and a message.
function M.live(cli, path, keep, sizes, timeout)
  local cjson = require("cjson")
  local f = io.popen(string.format("timeout %d '%s' events '%s' 2>&1", timeout or 60, cli, path))
  if not f then return nil, "cannot run " .. cli end
  local blocks, order, n = {}, {}, 0
  for line in f:lines() do
    -- Only events that make or end a block are of interest.
    if line:find('"event":"', 1, true) then
      local ok, e = pcall(cjson.decode, line)
      if not ok then f:close(); return nil, "bad event line: " .. line:sub(1, 200) end
      if e.oaddr and e.oaddr ~= 0 then blocks[e.oaddr] = nil end
      if e.event ~= "free" and keep(e) then
        n = n + 1
        blocks[e.naddr] = n
        order[n] = e
      end
    elseif not line:find('"complete"', 1, true) then
      f:close()
      return nil, "unexpected output of events: " .. line:sub(1, 200)
    end
  end
  f:close()
  local out = {}
  for addr, i in pairs(blocks) do
    local b = { event = order[i], kind = M.kind(addr, order[i].nsize, sizes), i = i }
    if b.kind == "str" then b.text = M.text(addr) end
    out[#out + 1] = b
  end
  table.sort(out, function(a, b) return a.i < b.i end)
  return out
end

-- Check the fingerprints on objects of known kinds made under a profile;
-- measures the sizes of threads and upvalues. Returns sizes, or nil and
-- what went wrong.
function M.selftest(mp, cli, path)
  collectgarbage()
  collectgarbage("stop")
  local f = assert(loadstring([[
local keep = {}
keep[1] = "objkind" .. tostring(12345)
keep[2] = { 1, 2, 3 }
keep[3] = {}
local up = keep
keep[4] = function() return up end
keep[8] = function() return 1 end
keep[5] = coroutine.create(print)
keep[6] = string.rep("z", 1000)
local t = { x = 1, y = 2, z = 3 }
keep[7] = t
keep[9] = coroutine.wrap(print)
keep[10] = newproxy(false)
keep[11] = loadstring("return 1")
keep[12] = 5LL + #keep
return keep
]], "=objkind"))
  assert(mp.start(path))
  local keep = f()
  assert(mp.stop())
  local blocks, err = M.live(cli, path, function(e) return e.chunk == "=objkind" end)
  os.remove(path)
  if not blocks then collectgarbage("restart"); return nil, err end
  local got = {}
  for _, b in ipairs(blocks) do
    got[#got + 1] = string.format("%d:%s:%d", b.event.line, b.kind, b.event.nsize)
  end
  collectgarbage("restart")
  local _ = keep
  -- Expected, by line: the strings (2), the tables (3, 4), the closure
  -- and its upvalue (6), a closure without upvalues (7), the coroutine (8,
  -- and its stack: raw), the long string (9), the hash table (10, and its
  -- hash part: raw), a C closure with one upvalue (12: coroutine.wrap), a
  -- userdata without payload (13: newproxy), a prototype and its closure
-- (14: loadstring), a boxed 64-bit integer (15).
  local text = table.concat(got, " ")
  local sizes = {}
  sizes.thread = tonumber(text:match("8:thread:(%d+)"))
  sizes.upval = tonumber(text:match("6:upval:(%d+)"))
  local want = { "2:str:", "3:tab:", "4:tab:", "6:func:48", "6:upval:", "7:func:40", "8:thread:", "9:str:", "10:tab:", "12:func:56", "13:udata:48", "14:proto:", "14:func:40", "15:cdata:24" }
  for _, w in ipairs(want) do
    if not text:find(w, 1, true) then
      return nil, "objkind self-test: no " .. w .. " block among: " .. text
    end
  end
  if not sizes.thread or not sizes.upval then
    return nil, "objkind self-test: no thread or upvalue size in: " .. text
  end
  -- A trace object: the JIT compiler's, INTERNAL.
  local wason = jit.status()
  jit.on()
  jit.flush()
  collectgarbage()
  collectgarbage("stop")
  local g = assert(loadstring("local n = 0 for i = 1, 300 do n = n + i % 7 end return n", "=objkind2"))
  assert(mp.start(path))
  g()
  assert(mp.stop())
  blocks, err = M.live(cli, path, function(e) return e.source == "internal" end, sizes)
  os.remove(path)
  local traces = 0
  for _, b in ipairs(blocks or {}) do if b.kind == "trace" then traces = traces + 1 end end
  jit.flush()
  if not wason then jit.off() end
  collectgarbage("restart")
  if not blocks then return nil, err end
  if traces ~= 1 then
    return nil, "objkind self-test: " .. traces .. " trace objects after one loop, not 1"
  end
  return sizes
end

return M
