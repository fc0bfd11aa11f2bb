#!/usr/bin/env luajit
-- C functions get a name: their Lua name in a module loaded before start
-- (cjson.encode) or required while recording, else their dynamic symbol
-- (luaopen_cjson), else "module+0xoffset"; each C symbol is written once.
-- Names are chosen by rule, and the require wrapper is invisible.
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
  require("cjson").encode({ 12345.5 })	-- a new string: an event
end)
local seen = {}
for _, e in ipairs(evs3) do
  if e.source == "cfunc" then seen[e.name] = true end
end
t.ok(seen["require"], "require is named require")
t.ok(seen["package.loaders[3]"], "the C module searcher is package.loaders[3]")
t.ok(seen["cjson.encode"], "a module required after start: its functions "
     .. "get their Lua names too (json_encode is static: no symbol)")

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

-- A function under several names gets the same one whatever the order of
-- the tables: fewest components, then shortest, then byte order. One that
-- several names in one table share is labelled by the table.
local enc, dec = cjson.encode, cjson.decode
local function label_of(setup, call)
  setup()
  local evs = T.profile(call)
  for _, e in ipairs(evs) do
    if e.source == "cfunc" and e.name ~= "require" then return e.name end
  end
end
local orders = {}
for round = 1, 2 do
  local l = label_of(function()
    package.loaded.zmod = nil; package.loaded.xmod = nil; aaa = nil; bbb = nil
    if round == 1 then
      aaa = { zzz = { enc = enc } }
      bbb = { enc2 = enc }
      package.loaded.xmod = { e = enc }
    else
      package.loaded.xmod = { e = enc }
      bbb = { enc2 = enc }
      aaa = { zzz = { enc = enc } }
    end
  end, function() enc({ 1e6 + round }) end)
  orders[round] = l
end
t.is(orders[1], "xmod.e", "fewest components, then the shortest name")
t.is(orders[2], orders[1], "the same name in another order of definition")
package.loaded.xmod = nil; aaa = nil; bbb = nil
t.is(label_of(function() package.loaded.shr = { b = dec, a = dec } end,
              function() dec("[1, 2]") end), "shr.{a,b}",
     "two names in one table: both, in byte order")
t.is(label_of(function()
  package.loaded.shr = { a = dec, b = dec, c = dec, d = dec, e = dec }
end, function() dec("[3, 4]") end), "shr.*", "five names in one table: the table")
package.loaded.shr = nil

-- The require wrapper that names modules loaded while recording changes
-- nothing the program sees: results, errors, and require itself after stop.
local orig = require
local function try(name)
  local ok, v = pcall(require, name)
  return tostring(ok) .. " " .. (type(v) == "string" and v or type(v))
end
package.loaded.cjson = nil
local plain_ok, plain_missing = try("cjson"), try("no.such.module")
package.loaded.cjson = nil
local path2 = T.tmpname("req")
assert(T.mp.start(path2))
t.ok(require ~= orig, "require is wrapped while recording")
local prof_ok, prof_missing = try("cjson"), try("no.such.module")
local again = require("cjson")
assert(T.mp.stop())
os.remove(path2)
t.is(prof_ok, plain_ok, "a module loads the same")
t.is(prof_missing, plain_missing, "a missing module: the same error")
t.ok(again == package.loaded.cjson, "package.loaded as without the profiler")
t.ok(require == orig, "require is itself again after stop")

-- Libraries call require in hot functions (penlight's stringx.split, on
-- every call): a module is named once, by the first require of its name,
-- and the registry's tables once. The wrapper used to walk the module and
-- the registry and sort every name again on each call: 4000 calls took
-- 20 s. 200,000 now take milliseconds; the loop gives up after 20 s of
-- CPU, which only the old quadratic work could spend.
local path3 = T.tmpname("reqhot")
assert(T.mp.start(path3))
local t0, done = os.clock(), 0
for i = 1, 200000 do
  if require("cjson") ~= again then break end
  done = i
  if i % 1000 == 0 and os.clock() - t0 > 20 then break end
end
assert(T.mp.stop())
os.remove(path3)
t.is(done, 200000, "200,000 requires of a loaded module while recording")
t.done()
