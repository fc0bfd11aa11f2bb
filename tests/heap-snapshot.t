#!/usr/bin/env luajit
-- Heap snapshots (mp.snapshot, `ljmemprof snapshot`): known graphs with
-- exact retained sizes and paths, the sizes adding up to the VM's own
-- count, the snapshot changing nothing, and its errors.
--
-- A retained size is checked against collectgarbage("count"): what a
-- piece of code allocated (with the collector stopped and the JIT off, so
-- that nothing else moves) is what the object it built retains.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local mp = T.mp
local BUILD = t.build
local EINVAL, ENOENT, EFBIG = 22, 2, 27
jit.off()

-- Run the dump tool on a snapshot: header fields, objects, first object
-- of each path.
local function dump(path)
  local f = assert(io.popen(BUILD ..
    "/tests/snap_dump " .. t.shq(path)))
  local head = f:read("*l") or ""
  local h = {}
  for k, v in head:gmatch("(%w+)=(%d+)") do h[k] = tonumber(v) end
  local objs, bypath = {}, {}
  for line in f:lines() do
    local id, ty, self, ret, weak, p =
      line:match("^(%d+)\t([^\t]+)\t(%d+)\t(%d+)\t(%d)\t(.*)$")
    local o = { id = tonumber(id), type = ty, self = tonumber(self),
		retained = tonumber(ret), weak = weak == "1", path = p }
    objs[#objs + 1] = o
    if p then bypath[p] = bypath[p] or o end	-- (A line cut: a path lost.)
  end
  f:close()
  return h, objs, bypath, head
end

-- Take a snapshot; returns what dump() does, and whether the VM's count
-- was the same before and after.
local function snap(tag, path)
  path = path or T.tmpname(tag)
  local before = collectgarbage("count")
  local ok, msg = mp.snapshot(path)
  local same = before == collectgarbage("count")
  assert(ok, msg)
  local h, objs, bypath, head = dump(path)
  os.remove(path)
  return h, objs, bypath, same, head
end

-- Bytes fn allocates, with the collector stopped.
local function cost(fn)
  collectgarbage()
  collectgarbage("stop")
  local before = collectgarbage("count")
  fn()
  local after = collectgarbage("count")
  return (after - before) * 1024
end

local where = function(f)
  local i = debug.getinfo(f, "S")
  return i.short_src .. ":" .. i.linedefined
end

-- 1. Everything adds up, exactly, after full collections: two, since a
-- userdata finalised in one (an io.popen handle) goes in the next. The
-- file name is made before (T.tmpname's os.remove makes a message).
local sum_path = T.tmpname("sum")
collectgarbage()
collectgarbage()
local h, objs, bypath, same, head = snap("sum", sum_path)
t.is(same, true, "collectgarbage('count') is the same before and after")
t.is(h.unreached, 0, "every object the VM lists is reached from a root")
t.is(h.bytes + h.vmbytes, h.gctotal,
     "objects + VM internals = the VM's count: " .. head)
t.ok(h.objects > 300 and h.objects == #objs, "the objects are all there",
     h.objects)
t.ok(h.filesize <= 16 * h.objects, "16 bytes or less an object on disk",
     h.filesize / h.objects)
t.is(bypath["_G"] and bypath["_G"].type, "table", "the globals are a root")
t.is(bypath["registry"] and bypath["registry"].type, "table",
     "the registry is a root")

-- 2. A chain of 10 tables: each retains those after it.
local chain_cost = cost(function()
  local head = nil
  for i = 1, 10 do head = { next = head } end
  chain = head
end)
h, objs, bypath = snap("chain")
collectgarbage("restart")
local c1 = bypath["_G.chain"]
t.is(c1 and c1.retained, chain_cost, "the chain's head retains all of it")
local c10 = bypath["_G.chain" .. string.rep(".next", 9)]
t.is(c10 and c10.retained, c10 and c10.self, "its last node only itself")
t.is(c10 and c10.self, chain_cost / 10, "each node is the same size")
chain = nil

-- 3. A cycle reachable only through a weak table: retained by nothing.
local weak_cost = cost(function()
  weakt = setmetatable({}, { __mode = "v" })
  weakt[1] = false	-- its array part, before the cycle goes in
end)
collectgarbage("stop")
local cycle_cost = cost(function()
  local a, b = {}, {}
  a[1] = b
  b[1] = a
  weakt[1] = a
end)
h, objs, bypath = snap("weak")
collectgarbage("restart")
local wt = bypath["_G.weakt"]
t.is(wt and wt.retained, weak_cost,
     "a weak table retains itself and its metatable, not its values")
local a = bypath["_G.weakt[1] (weak)"]
t.is(a and a.weak, true, "the cycle is reached only weakly")
t.is(h.weakonly, 2, "both tables of the cycle")
local wsum = 0
for _, o in ipairs(objs) do if o.weak then wsum = wsum + o.self end end
t.is(wsum, cycle_cost, "the weakly reached bytes are the cycle's")
weakt = nil

-- 4. A closure holding a table through an upvalue.
local handler_cost = cost(function()
  local sessions = {}
  for i = 1, 20 do sessions[i] = { i } end
  function handler() return sessions end
end)
h, objs, bypath = snap("closure")
collectgarbage("restart")
local hp = "_G.handler (" .. where(handler) .. ")"
t.is(bypath[hp] and bypath[hp].retained, handler_cost,
     "the closure retains its upvalue and the table it holds")
local sp = hp .. " <upvalue sessions>"
t.is(bypath[sp] and bypath[sp].type, "table", "the path names the upvalue")
t.is(bypath[sp .. "[20]"] and bypath[sp .. "[20]"].type, "table",
     "and goes on into the table")
handler = nil

-- 4b. Functions of code loaded from strings are named as Lua names them
-- (debug.getinfo's short_src): the chunk's name, or its first line.
strf = { f = loadstring("return function() return 1 end", "TMP")(),
	 g = loadstring("local a = 1\nreturn function() return a end")() }
h, objs, bypath = snap("strchunk")
for _, k in ipairs({ "f", "g" }) do
  local p = "_G.strf." .. k .. " (" .. where(strf[k]) .. ")"
  t.is(bypath[p] and bypath[p].type, "Lua function",
       "a function of code loaded from a string: " .. p)
end
strf = nil

-- 5. A coroutine's locals.
co = coroutine.create(function()
  local mine = { 1, 2, 3 }
  coroutine.yield(mine)
end)
coroutine.resume(co)
h, objs, bypath = snap("coroutine")
local cofn = debug.getinfo(co, 1, "S")
local lp = "_G.co <local mine in " .. cofn.short_src .. ":" ..
	   cofn.linedefined .. ">"
t.is(bypath[lp] and bypath[lp].type, "table",
     "a suspended coroutine's local, named, in its function", lp)
co = nil

-- The thread that takes a snapshot is a root: a coroutine as
-- <current thread> (DevTools, which picks among equal paths, shows the
-- main thread by its one root: tests/snapshot-read.t).
local roots = {}
for _, o in ipairs(objs) do
  if o.type == "thread" then roots[#roots + 1] = o.path end
end
t.is(table.concat(roots, ","), "main thread,_G.co",
     "from the main thread: its root, and the coroutine from _G")
local cur_objs
coroutine.wrap(function()
  local inco = { 1 }
  h, cur_objs, bypath = snap("current")
end)()
roots = {}
for _, o in ipairs(cur_objs) do
  if o.type == "thread" then roots[#roots + 1] = o.path end
end
t.is(table.concat(roots, ","), "main thread,<current thread>",
     "from a coroutine: the main thread, and the coroutine as current")
cur_objs, roots = nil, nil

-- 6. A userdata with a metatable and an env.
local ud_cost = cost(function()
  u = newproxy(true)
  getmetatable(u).tag = { 1 }
  debug.setfenv(u, { 2 })
end)
h, objs, bypath = snap("udata")
collectgarbage("restart")
t.is(bypath["_G.u"] and bypath["_G.u"].type, "userdata", "the userdata")
t.is(bypath["_G.u <metatable>.tag"] and bypath["_G.u <metatable>.tag"].type,
     "table", "through its metatable")
t.is(bypath["_G.u <env>"] and bypath["_G.u <env>"].type, "table",
     "its env")
t.is(bypath["_G.u"] and bypath["_G.u"].retained, ud_cost,
     "it retains its metatable, env and what they hold")
u = nil

-- 7. A table used as a key.
local key_cost = cost(function()
  keyed = {}
  keyed[{ 1, 2 }] = true
end)
h, objs, bypath = snap("key")
collectgarbage("restart")
t.is(bypath["_G.keyed <key>"] and bypath["_G.keyed <key>"].type, "table",
     "a table key is a reference (<key>)")
t.is(bypath["_G.keyed"] and bypath["_G.keyed"].retained, key_cost,
     "the table retains its key")
keyed = nil

-- 8. A program that leaks into a cache: the first retainer is the cache
-- (the test's own tables are dropped first: they would hold more).
h, objs, bypath = nil, nil, nil
package.loaded["app.cache"] = { items = false, history = {} }
local leak_cost = cost(function()
  local items = {}
  package.loaded["app.cache"].items = items
  for i = 1, 2000 do items[#items + 1] = { id = i, data = { i, i } } end
end)
collectgarbage("restart")
local path = T.tmpname("leak")
assert(mp.snapshot(path))
local f = assert(io.popen(BUILD .. "/ljmemprof snapshot --format json " ..
			  t.shq(path)))
local json = require("cjson").decode(f:read("*a"))
f:close()
local r1 = json.retainers[1]
t.is(r1 and r1.path, 'package.loaded["app.cache"].items',
     "the first retainer is the cache")
t.is(r1 and r1.retained, leak_cost, "holding exactly the leaked bytes")
local cl = json.classes[1]
t.same(cl and { cl.path, cl.count, cl.type, cl.retained } or {},
       { 'package.loaded["app.cache"].items[*]', 2000, "table",
	 leak_cost - (r1 and r1.self or 0) },
       "its entries fold into one path class")
f = assert(io.popen(BUILD .. "/ljmemprof snapshot " .. t.shq(path)))
local text = f:read("*a")
f:close()
t.ok(text:find('package.loaded%["app.cache"%].items%[%*%]: 2000 tables'),
     "the text report shows the class", text)
os.remove(path)
package.loaded["app.cache"] = nil

-- 9. The API: options, errors, the file's mode.
path = T.tmpname("api")
t.is(mp.snapshot({ path = path }), true, "snapshot{path=}")
local p = io.popen("stat -c %a " .. t.shq(path))
t.is(p:read("*l"), "600", "the file is made 0600")
p:close()
os.remove(path)
t.is(mp.snapshot({ path = path, mode = tonumber("644", 8) }), true,
     "snapshot{mode=}")
p = io.popen("stat -c %a " .. t.shq(path))
t.is(p:read("*l"), "644", "with the mode asked for")
p:close()
os.remove(path)
local r, msg, errno = mp.snapshot("/nonexistent-dir/x.snap")
t.same({ r, msg, errno },
       { nil, "/nonexistent-dir/x.snap: No such file or directory", ENOENT },
       "a path in a missing directory: nil, message, errno")
local ok, err = pcall(mp.snapshot, { path = path, bogus = 1 })
t.ok(not ok and err:find("unknown option 'bogus'"), "an unknown option",
     err)
ok, err = pcall(mp.snapshot, 42)
t.ok(not ok and err:find("path or options table expected"),
     "a bad argument", err)
ok, err = pcall(mp.snapshot, { mode = 420 })
t.ok(not ok and err:find("options.path is required"), "no path", err)
-- A snapshot's path is opened as a profile's is (issue 18): a symbolic
-- link as its last component is never followed, its target untouched.
do
  local target, link = path .. ".target", path .. ".link"
  local f = assert(io.open(target, "w")); f:write("keep"); f:close()
  os.remove(link)
  os.execute("ln -s " .. t.shq(target) .. " " .. t.shq(link))
  r, msg, errno = mp.snapshot(link)
  t.same({ r, msg, errno },
	 { nil, link .. ": is a symbolic link, which the profiler never " ..
	   "follows (give the path of the file itself)", 40 },
	 "a symbolic link: refused, with ELOOP")
  f = assert(io.open(target)); t.is(f:read("*a"), "keep",
				    "the link's target is untouched"); f:close()
  os.remove(link)
  os.execute("ln -s " .. t.shq(path .. ".nowhere") .. " " .. t.shq(link))
  r = mp.snapshot(link)
  t.is(r, nil, "a dangling link: refused")
  t.is(io.open(path .. ".nowhere"), nil, "nothing made where it points")
  os.remove(link); os.remove(target)
  ok, err = pcall(mp.snapshot, { path = path, mode = "64x" })
  t.ok(not ok and err:find("options.mode must be octal digits", 1, true),
       "mode as the other tables read it", err)
  ok, err = pcall(mp.snapshot, { path = path, stacks = 4 })
  t.ok(not ok and err:find("unknown option 'stacks'; options are path, " ..
			   "bufsize, mode, max_size, collect", 1, true),
       "the options snapshot takes, from the one table", err)
end
big = {}
for i = 1, 20000 do big[i] = { i } end
r, msg, errno = mp.snapshot({ path = path, max_size = 65536 })
t.same({ r, msg, errno },
       { nil, path .. ": the snapshot reached max_size: it is cut short",
	 EFBIG }, "max_size: nil, message, EFBIG")
h = dump(path)
t.is(h.flags, 1, "the file says it is cut short")
t.ok(h.filesize <= 65536, "and is no larger than max_size", h.filesize)
p = io.popen(BUILD .. "/ljmemprof snapshot " .. t.shq(path) ..
	     " >/dev/null 2>&1; echo $?")
t.is(p:read("*l"), "3", "the reader exits 3 for a cut snapshot")
p:close()
os.remove(path)
big = nil

-- 10. The decoder on a snapshot cut at every byte and with bytes
-- changed: errors that name the byte, no crash (tests/c/snap_cut.c).
path = T.tmpname("cut")
assert(mp.snapshot(path))
do
  local f = assert(io.open(path, "rb"))
  local head = f:read(4)
  f:close()
  t.is(head, "ljh\1", "taken without a recording: version 1 (no parts)")
end
p = io.popen(t.timeout(BUILD .. "/tests/snap_cut " .. t.shq(path), 300))
local tap = p:read("*a")
p:close()
local fails = select(2, tap:gsub("\nnot ok", "")) + (tap:find("^not ok") and 1 or 0)
t.ok(tap:find("1..4\n", 1, true) and fails == 0,
     "cut at every byte and fuzzed: clear errors, no crash", tap)
os.remove(path)
-- The same of a snapshot taken while recording, which lists the parts of
-- tables and threads (docs/FORMAT.md).
do
  local prof = T.tmpname("cutprof")
  big = {}
  for i = 1, 300 do big[i] = { i, i, i, i, x = i } end
  assert(mp.start({ path = prof, stacks = 4 }))
  assert(mp.snapshot(path))
  assert(mp.stop())
  big = nil
  local f = assert(io.open(path, "rb"))
  local head = f:read(4)
  f:close()
  t.is(head, "ljh\2", "taken while recording: version 2 (it lists parts)")
  p = io.popen(t.timeout(BUILD .. "/tests/snap_cut " .. t.shq(path), 300))
  tap = p:read("*a")
  p:close()
  fails = select(2, tap:gsub("\nnot ok", "")) + (tap:find("^not ok") and 1 or 0)
  t.ok(tap:find("1..4\n", 1, true) and fails == 0,
       "with parts: cut at every byte and fuzzed, clear errors, no crash", tap)
  os.remove(path)
  os.remove(prof)
end

-- 11. A table kept by luaL_ref from C, snapshotted with ljmp_snapshot().
path = T.tmpname("ref")
p = io.popen(t.timeout(BUILD .. "/tests/snap_host " .. t.shq(path), 60))
local line = p:read("*l") or ""
p:close()
local ref = line:match("ref=(%d+)")
t.is(line:gsub("ref=%d+ ", ""), "rc=0 stacks=-10003 null=-10003",
     "ljmp_snapshot(): 0; LJMP_EARG for stacks or a NULL state")
h, objs, bypath = dump(path)
local rp = "registry[" .. tostring(ref) .. "]"
t.is(bypath[rp] and bypath[rp].type, "table", "a luaL_ref slot is " .. rp)
t.is(bypath[rp .. "[3]"] and bypath[rp .. "[3]"].type, "table",
     "and what it holds is reached through it")
os.remove(path)
h, objs, bypath = nil, nil, nil

-- 12. With the JIT on, traces and their constants are objects too, and
-- the sums stay exact; a list of a million nodes walks without recursion.
local script = T.tmpname("jit") .. ".lua"
local sp = T.tmpname("jitsnap")
f = assert(io.open(script, "w"))
f:write([[
local mp = require("ljmemprof")
local keep = {}
for i = 1, 2000 do keep[i] = { i, tostring(i) } end
local list
for i = 1, tonumber(arg[2]) do list = { next = list } end
collectgarbage()
collectgarbage()
assert(mp.snapshot(arg[1]))
]])
f:close()
local function run_dump(flags, n)
  os.remove(sp)
  local cmd = "LUA_CPATH=" .. t.shq(BUILD .. "/?.so;;") .. " luajit " ..
	      flags .. " " .. t.shq(script) .. " " .. t.shq(sp) .. " " .. n
  local ok = os.execute(t.timeout(cmd, 120))
  local hh, oo, bp = dump(sp)
  os.remove(sp)
  return ok == 0 or ok == true, hh, oo, bp
end
local ran, jh, jo = run_dump("-jon", 10)
local traces = 0
for _, o in ipairs(jo) do if o.type == "trace" then traces = traces + 1 end end
t.ok(ran and traces > 0, "JIT on: traces are in the snapshot", traces)
t.same({ jh.unreached, jh.bytes + jh.vmbytes }, { 0, jh.gctotal },
       "JIT on: objects + VM internals = the VM's count")
ran, jh = run_dump("-joff", 10)
t.same({ ran, jh.unreached, jh.bytes + jh.vmbytes }, { true, 0, jh.gctotal },
       "JIT off: the same")
ran, jh, jo = run_dump("-jon", 1000000)
t.ok(ran and jh.objects > 1000000, "a list of a million nodes",
     jh.objects)
local deepest = jo[#jo]
t.ok(deepest and deepest.path:find(" ... (999977 steps) ...", 1, true),
     "the path of its last node is cut in the middle",
     deepest and deepest.path)
jo = nil
os.remove(script)

-- Small cdata (9 bytes with 32-bit references: closer than the address
-- map's 16-byte granule) reached as values, keys, upvalues and a
-- prototype's constant, between tables: each one object, written once,
-- and the sums exact.
do
  local ffi = require("ffi")
  local cd_cost = cost(function()
    local vals, keys, mix = {}, {}, {}
    for i = 1, 50 do
      local c = ffi.new("uint8_t", i)
      vals[i] = c
      keys[c] = true
      mix[#mix + 1] = { c }
    end
    local first = vals[1]
    local konst = function() return 7ULL end	-- a constant of its proto
    vals[51] = konst()
    cdholder = { vals, keys, mix, function() return first end, konst }
  end)
  local _, cobjs, cbypath = snap("cdata")
  collectgarbage("restart")
  local ncd, cdbytes = 0, 0
  for _, o in ipairs(cobjs) do
    if o.type:find("^cdata") then
      ncd = ncd + 1
      cdbytes = cdbytes + o.self
    end
  end
  t.is(cbypath["_G.cdholder"] and cbypath["_G.cdholder"].retained, cd_cost,
       "a holder of small cdata retains exactly what it allocated")
  t.same({ ncd, cdbytes }, { 51, 50 * cbypath["_G.cdholder[1][1]"].self +
	 cbypath["_G.cdholder[1][51]"].self },
	 "each cdata is one object, written once (a constant too)")
  local cpath = T.tmpname("cdata2")	-- made before: it makes garbage
  collectgarbage()
  collectgarbage()
  local ch = snap("cdata2", cpath)
  t.same({ ch.unreached, ch.bytes + ch.vmbytes }, { 0, ch.gctotal },
	 "after a full collection: objects + VM internals = the VM's count")
  cdholder = nil
end


-- 13. A string table of 65536 buckets or more is scanned by two threads,
-- the second taking its upper half: every fixed string is still found
-- (C type names declared with ffi.cdef are fixed, in buckets all over
-- the table), and strings left unreached are counted exactly.
do
  local ffi = require("ffi")
  local decl = {}
  for i = 1, 200 do decl[i] = ("typedef int mp_scan_t%d;"):format(i) end
  ffi.cdef(table.concat(decl))
  local many = {}
  for i = 1, 100000 do many[i] = "scan" .. i end
  local p1, p2 = T.tmpname("scan1"), T.tmpname("scan2")
  collectgarbage()
  collectgarbage()
  local h1 = snap("scan1", p1)
  t.same({ h1.unreached, h1.bytes + h1.vmbytes }, { 0, h1.gctotal },
	 "a large string table: every string reached, the sums exact")
  collectgarbage()
  collectgarbage()
  collectgarbage("stop")
  local before = collectgarbage("count")
  for i = 1, 1000 do local _ = "scan-garbage" .. i end
  local garbage = (collectgarbage("count") - before) * 1024
  local h2 = snap("scan2", p2)
  collectgarbage("restart")
  t.same({ h2.unreached, h2.ubytes, h2.bytes + h2.ubytes + h2.vmbytes },
	 { 1000, garbage, h2.gctotal },
	 "1000 strings left unreached: counted, with their bytes")
  many = nil
end

t.done()
