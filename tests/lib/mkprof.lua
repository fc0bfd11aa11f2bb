-- mkprof.lua: build memprof streams by hand for the reader's tests, in the
-- words of docs/FORMAT.md (version 3, its trailer of notes, and a few
-- records of the ljmemprof extension).
--
--   local P = dofile("tests/lib/mkprof.lua")
--   io.write(P.head(), P.sym_lua(0x1000, "@a.lua", 1),
--            P.alloc_lua(0x1000, 3, 0x100, 32), P.final())
--
-- Numbers are Lua numbers (exact up to 2^53; powers of two up to 2^63).

local M = {}
local char, floor = string.char, math.floor

-- ULEB128 of n.
function M.uleb(n)
  local out = {}
  repeat
    local b = n % 128
    n = floor(n / 128)
    out[#out + 1] = char(n > 0 and b + 128 or b)
  until n == 0
  return table.concat(out)
end
local uleb = M.uleb

-- A length-prefixed string.
function M.str(s) return uleb(#s) .. s end

-- The symtab prologue, its end marker and the event stream's prologue.
function M.head(ver)
  ver = ver or 3
  return "ljs" .. char(ver, 0, 0, 0) .. "\128" .. "ljm" .. char(ver, 0, 0, 0)
end

-- The epilogue.
function M.final() return "\128" end

-- Symbols inside the event stream.
function M.sym_lua(addr, chunk, line)
  return char(0 + 8) .. uleb(addr) .. M.str(chunk) .. uleb(line)
end
function M.sym_c(addr, name) return char(0 + 12) .. uleb(addr) .. M.str(name) end

-- Events: from the VM's internals, a Lua line, a C function.
function M.alloc(addr, size) return char(1 + 4) .. uleb(addr) .. uleb(size) end
function M.free(addr, size) return char(2 + 4) .. uleb(addr) .. uleb(size) end
function M.alloc_lua(proto, line, addr, size)
  return char(1 + 8) .. uleb(proto) .. uleb(line) .. uleb(addr) .. uleb(size)
end
function M.alloc_c(fn, addr, size)
  return char(1 + 12) .. uleb(fn) .. uleb(addr) .. uleb(size)
end

-- The ljmemprof extension (docs/FORMAT.md): the events prologue, records.
function M.head_ext()
  return "ljs" .. char(3, 0, 0, 0) .. "\128" .. "ljm" .. char(0x4c, 1, 0, 0)
end
local function xrec(t, payload) return "\0" .. uleb(t) .. uleb(#payload) .. payload end
-- A setting or a note (MP_X_INFO), a time mark (MP_X_TIME).
function M.info(k, v) return xrec(3, M.str(k) .. M.str(v)) end
function M.time(ns) return xrec(4, uleb(ns)) end
-- Zigzag of a signed difference.
function M.zigzag(d) return d >= 0 and 2 * d or -2 * d - 1 end
-- An allocation from the VM's internals in an extension stream: its
-- address as the difference to the previous new address.
function M.alloc_ext(delta, size) return char(1 + 4) .. uleb(M.zigzag(delta)) .. uleb(size) end
-- After a version-3 epilogue: the trailer's prologue (its records follow).
function M.trailer() return "ljn" .. char(1, 0, 0, 0) end

return M
