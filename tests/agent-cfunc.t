#!/usr/bin/env luajit
-- C functions get a name: their dynamic symbol when they have one, else
-- "module+0xoffset"; each C symbol is written once.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
jit.off()
local ok, cjson = pcall(require, "cjson")
if not ok then t.skip_all("lua-cjson is not installed") end
local sopath = package.searchpath("cjson", package.cpath)
local open = assert(package.loadlib(sopath, "luaopen_cjson"))

local evs, complete, delta = T.profile(function()
  for i = 1, 10 do cjson.encode({ i, i + 1 }) end
  open()
end)
t.ok(complete, "stream is complete")
t.is(T.net(evs), delta, "allocated - freed equals the VM's counter delta")

local names, encode, unnamed = {}, 0, 0
for _, e in ipairs(evs) do
  if e.source == "cfunc" then
    if not e.name or e.name:match("^CFUNC") then unnamed = unnamed + 1 end
    names[e.name or "?"] = (names[e.name or "?"] or 0) + 1
    if e.name:match("^cjson%.so%+0x%x+$") then encode = encode + 1 end
  end
end
t.is(unnamed, 0, "every C location has a name")
t.is(encode, 10, "ten strings from cjson.encode, named cjson.so+0x...")
t.ok((names.luaopen_cjson or 0) > 10, "luaopen_cjson by its dynamic symbol",
     "events: " .. tostring(names.luaopen_cjson))

-- Symbols are written once: count symbol records in the raw stream.
local path = T.tmpname("cfunc")
collectgarbage("stop")
assert(T.mp.start(path))
for i = 1, 100 do cjson.encode({ i }) end
assert(T.mp.stop())
collectgarbage("restart")
local f = assert(io.open(path, "rb"))
local raw = f:read("*a")
f:close()
os.remove(path)
local _, nsyms = raw:gsub("cjson%.so%+0x", "")
t.is(nsyms, 1, "the C symbol of cjson.encode is written once for 100 calls")
t.done()
