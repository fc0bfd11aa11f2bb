#!/usr/bin/env luajit
-- C functions get a name: their Lua name in a module loaded before start
-- (cjson.encode), else their dynamic symbol (luaopen_cjson), else
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
    if e.name == "cjson.encode" then encode = encode + 1 end
  end
end
t.is(unnamed, 0, "every C location has a name")
t.is(encode, 10, "ten strings from cjson.encode, named by its Lua name")
t.ok((names.luaopen_cjson or 0) > 10, "luaopen_cjson by its dynamic symbol",
     "events: " .. tostring(names.luaopen_cjson))

-- C functions of loaded modules get their Lua names: the standard
-- library's live in the luajit binary without a dynamic symbol.
package.loaded["cjson"] = nil
local evs3 = T.profile(function()
  require("cjson").encode({ 1 })
end)
local seen = {}
for _, e in ipairs(evs3) do
  if e.source == "cfunc" then seen[e.name] = true end
end
t.ok(seen["require"], "require is named require")
t.ok(seen["package.loaders[3]"], "the C module searcher is package.loaders[3]")
local anon
for k in pairs(seen) do
  if k:match("^cjson%.so%+0x%x+$") then anon = k end
end
t.ok(anon, "a module loaded after start: module+offset (json_encode is static)")

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
local _, nsyms = raw:gsub("cjson%.encode", "")
t.is(nsyms, 1, "the C symbol of cjson.encode is written once for 100 calls")
t.done()
