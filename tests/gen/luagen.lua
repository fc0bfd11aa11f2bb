-- luagen.lua: random, deterministic, terminating Lua 5.1 programs for the
-- differential test (tests/agent-differential.t, scripts/difftest.sh).
--
--   local gen = require("luagen")
--   local p = gen.generate(seed)   -- p.src, p.chunk, p.lines, p.funcs, ...
--
-- A program is one chunk; it takes a table of helpers (see M.env) as its
-- argument and returns a checksum, so the runner can tell that it behaved
-- the same with the JIT on and off. Each statement is on its own line and
-- p.lines[n] says what line n is:
--   fn    the innermost function whose body holds the line (0: main chunk)
--   fns   every function the line belongs to (a one-line closure: two)
--   kind  "none"  cannot allocate (arithmetic, loop headers, `end`, ...)
--         "table" allocates tables or their parts only (a constructor of
--                 values that exist, a store into a table): what the JIT's
--                 allocation sinking may remove
--         "alloc" may allocate anything
--   cfuncs the plain C functions (ffid 1) the line calls, by the name the
--         agent gives them (e.g. "package.seeall")
--
-- What the programs never do, so that both runs are the same program: no
-- pairs() over tables keyed by tables or functions, no addresses in the
-- checksum, no clock, no real I/O but writes to the helper /dev/null file,
-- no collectgarbage() but "count", no __gc, no weak tables, no globals
-- written. All loops have constant trip counts and recursion is bounded,
-- so every program terminates; errors are raised only under pcall/xpcall.
-- The dynamic cost (statements executed) is kept under a budget.

local bit = require("bit")

local M = {}

-- -- Random numbers ---------------------------------------------------------

-- xorshift32 with LuaJIT's bit operations: the same sequence everywhere.
local function new_rng(seed)
  local x = bit.bxor(bit.tobit(seed % 4294967296), 0x2545F491)
  if x == 0 then x = 1 end
  local r = {}
  local function step()
    x = bit.bxor(x, bit.lshift(x, 13))
    x = bit.bxor(x, bit.rshift(x, 17))
    x = bit.bxor(x, bit.lshift(x, 5))
    return x % 4294967296
  end
  for _ = 1, 10 do step() end
  function r.int(a, b) return a + step() % (b - a + 1) end
  function r.pick(list) return list[r.int(1, #list)] end
  function r.chance(pct) return r.int(1, 100) <= pct end
  -- items: { {weight, value}, ... }
  function r.weighted(items)
    local total = 0
    for _, it in ipairs(items) do total = total + it[1] end
    local k = r.int(1, total)
    for _, it in ipairs(items) do
      k = k - it[1]
      if k <= 0 then return it[2] end
    end
  end
  return r
end

-- -- Fixed material -----------------------------------------------------------

local WORDS = { "ab", "xyz", "hello", "a1b2", "foo bar", "Lua", "q", "k9",
  " sp ", "a,b,c", "x=1;y=2", "MiXeD", "tab\tnl", "zz top", "abc def ghi",
  "p-q-r", "42", "7up", "e5" }
local PATTERNS = { "%a+", "%d", "%a%d", "[aeiou]", "x", "%s+", ".", "^%a",
  "%w+", "[%-,;=]", "(%a)(%a)", "(%d+)", "b", "%u" }
local REPLS = { '"%1-"', '"<%0>"', '"#"', '""', '"%%"', '"ab"' }
-- string.format specs, each with the kind of value it takes and a bound on
-- the length it prints.
local FORMATS = {
  { "%d", "int", 12 }, { "%5d", "int", 12 }, { "%-6d", "int", 12 },
  { "%05d", "int", 12 }, { "%x", "uint", 10 }, { "%X", "uint", 10 },
  { "%o", "uint", 14 }, { "%5.2f", "num", 24 }, { "%g", "num", 24 },
  { "%.3e", "num", 16 }, { "%s", "str", 0 }, { "%-8s", "str", 8 },
  { "%q", "qstr", 0 }, { "%c", "char", 1 }, { "%i", "int", 12 },
  { "%.2s", "str", 2 }, { "%%", "none", 1 },
}
local LITFRAGS = { "", "<", "k=", " | ", "[", "]", ":", "n", "--" }

local MOD = 9973	-- numbers in variables stay in [0, MOD)
-- Lists hold strings of at most 40 bytes and at most MAXLIST of them,
-- whatever the order in which the statements of a loop body grow and read
-- them.
local MAXLIST = 3000
local ACCMOD = 1000003

-- -- The program being built ------------------------------------------------

local P = {}
P.__index = P

-- Append one line (text already indented) and its description.
function P:emit(text, kind, extra)
  local n = #self.out + 1
  self.out[n] = string.rep("  ", self.indent) .. text
  local fns = {}
  for _, f in ipairs(self.fnstack) do fns[#fns + 1] = f end
  local meta = { fn = self.fnstack[#self.fnstack], kind = kind,
    fns = { self.fnstack[#self.fnstack] } }
  if extra and extra.inner then meta.fns[2] = extra.inner end
  if extra and extra.cfuncs then
    meta.cfuncs = extra.cfuncs
    for _, c in ipairs(extra.cfuncs) do self.cfuncs[c] = true end
  end
  self.meta[n] = meta
  return n
end

-- The number the next line will have.
function P:line() return #self.out + 1 end

-- A fresh variable name.
function P:newname(prefix)
  self.nvar = self.nvar + 1
  return prefix .. self.nvar
end

-- A new function id, registered with its first line; closed by fn_end.
function P:fn_begin(name)
  local id = #self.funcs + 1
  self.funcs[id] = { name = name, first = self:line() }
  return id
end

-- Close function id at the last line emitted.
function P:fn_end(id)
  self.funcs[id].last = #self.out
end

-- -- Scopes and variables -----------------------------------------------------

-- ctx: what the code being generated may use.
--   vars    in-scope variables { name, ty, len (strings), size (lists) }
--   w       how many times this code runs per program run (an estimate)
--   fn      the function record { vararg, gen, id }
--   loops   loop depth
--   nloc    locals declared in the current function
local function child(ctx, w)
  local c = {}
  for k, v in pairs(ctx) do c[k] = v end
  c.vars = { unpack(ctx.vars) }
  c.w = w or ctx.w
  return c
end

-- Declare a variable of type ty in ctx.
local function add_var(ctx, name, ty, info)
  local v = { name = name, ty = ty }
  if info then for k, x in pairs(info) do v[k] = x end end
  ctx.vars[#ctx.vars + 1] = v
  ctx.fn.nloc = ctx.fn.nloc + 1
  return v
end

-- The variables of type ty in scope (that satisfy pred).
local function vars_of(ctx, ty, pred)
  local out = {}
  for _, v in ipairs(ctx.vars) do
    if v.ty == ty and (not pred or pred(v)) then out[#out + 1] = v end
  end
  return out
end

-- A random variable of type ty in scope, or nil.
function P:var(ctx, ty, pred)
  local vs = vars_of(ctx, ty, pred)
  if #vs == 0 then return nil end
  return self.r.pick(vs)
end

-- -- Expressions ----------------------------------------------------------

-- A number expression that allocates nothing (value in [0, MOD) when the
-- caller wraps it in % MOD, small otherwise).
function P:num_atom(ctx)
  local r = self.r
  local choice = r.int(1, 10)
  if choice <= 3 then
    local v = self:var(ctx, "n")
    if v then return v.name end
  elseif choice == 4 then
    local v = self:var(ctx, "s")
    if v then return "#" .. v.name end
  elseif choice == 5 then
    local v = self:var(ctx, "l")
    if v then return "#" .. v.name end
  elseif choice == 6 and ctx.fn.vararg then
    return "select('#', ...)"
  end
  return tostring(r.int(0, 99))
end

-- A number expression that allocates nothing, small values.
function P:num_expr(ctx)
  local r = self.r
  local a, b = self:num_atom(ctx), self:num_atom(ctx)
  local forms = {
    function() return a end,
    function() return a .. " + " .. b end,
    function() return a .. " * " .. r.int(2, 9) .. " + " .. b end,
    function() return "math.floor(" .. a .. " / " .. r.int(2, 7) .. ")" end,
    function() return "math.max(" .. a .. ", " .. b .. ")" end,
    function() return "math.min(" .. a .. ", " .. b .. ", 50)" end,
    function() return "math.abs(" .. a .. " - " .. b .. ")" end,
    function() return "bit.band(" .. a .. " * 7, 255)" end,
    function() return "math.fmod(" .. a .. ", 7)" end,
    function() return "(" .. a .. " > " .. b .. " and 3 or 5)" end,
    function()
      local s = self:var(ctx, "s")
      if s then return "(" .. s.name .. ":byte(1) or 0)" end
      return a
    end,
    function()
      local s = self:var(ctx, "s")
      if s then return "(" .. s.name .. ":find(\"a\", 1, true) or 0)" end
      return b
    end,
    function() return "math.random(1, 10)" end,
    function()
      local s = self:var(ctx, "s")
      if s then return "(tonumber(" .. s.name .. ") or 3)" end
      return a
    end,
  }
  return r.pick(forms)()
end

-- A string atom that allocates nothing: a variable or a literal.
function P:str_atom(ctx, maxlen)
  local v = self:var(ctx, "s", function(x) return x.len <= (maxlen or 64) end)
  if v and self.r.chance(70) then return v.name, v.len end
  local w = self.r.pick(WORDS)
  return "(" .. string.format("%q", w):gsub("\\9", "\\t") .. ")", #w
end

-- A string expression that may allocate. Returns code, length bound and
-- the plain C functions it calls (none here: builtins only).
function P:str_expr(ctx)
  local r = self.r
  local a, la = self:str_atom(ctx, 40)
  local n = self:num_atom(ctx)
  local forms = {
    function() local b, lb = self:str_atom(ctx, 40); return a .. " .. " .. b, la + lb end,
    function() return a .. " .. " .. n, la + 24 end,
    function() return a .. " .. \"" .. r.pick(LITFRAGS) .. "\" .. " .. n, la + 30 end,
    function() local k = r.int(0, 4); return a .. ":rep(" .. k .. ")", la * k end,
    function() local k = r.int(1, 3); return "string.rep(" .. a .. ", " .. k .. ", \"-\")", la * k + k end,
    function() return a .. ":sub(" .. r.int(-4, 3) .. ", " .. r.int(-2, 8) .. ")", la end,
    function() return a .. ":sub(" .. n .. " % 5)", la end,
    function() return a .. ":upper()", la end,
    function() return a .. ":lower()", la end,
    function() return a .. ":reverse()", la end,
    function() return "tostring(" .. n .. ")", 24 end,
    function() return "tostring(" .. n .. " / 7)", 24 end,
    function() return "(" .. a .. ":gsub(\"" .. r.pick(PATTERNS) .. "\", " .. r.pick(REPLS) .. "))", la * 5 + 5 end,
    function()
      return "(" .. a .. ":gsub(\"%a\", { a = \"A\", b = 7, q = false }))", la * 2
    end,
    function() return "(" .. a .. ":match(\"" .. r.pick(PATTERNS) .. "\") or \"none\")", la + 4 end,
    function() return "string.char(65 + " .. n .. " % 26, 97 + " .. n .. " % 26)", 2 end,
    function() return "bit.tohex(" .. n .. ")", 8 end,
    function() return "os.date(\"!%Y-%m-%d\", " .. n .. " * 86400)", 12 end,
    function() return "string.format(\"%q\", " .. a .. ")", la * 4 + 2 end,
    function() return self:format_expr(ctx) end,
    function() return "(\"%5.1f\"):format(" .. n .. " / 3)", 24 end,
    function()
      local l = self:var(ctx, "l", function(x) return x.size <= 200 end)
      if l then return "table.concat(" .. l.name .. ", \",\")", MAXLIST * 41 end
      return a .. " .. \"!\"", la + 1
    end,
    function()
      local l = self:var(ctx, "l", function(x) return x.size <= 200 end)
      if l then return "table.concat(" .. l.name .. ", \"\", 1, math.min(2, #" .. l.name .. "))", 80 end
      return a .. " .. \"?\"", la + 1
    end,
    function()
      local o = self:var(ctx, "o")
      if o then return "tostring(" .. o.name .. ")", 24 end
      return a .. " .. \"o\"", la + 1
    end,
    function()
      local o = self:var(ctx, "o", function(x) return x.mt == 1 end)
      if o then return o.name .. ".key" .. r.int(1, 3), 8 end
      return a .. " .. \"k\"", la + 1
    end,
  }
  local code, len = r.pick(forms)()
  return code, len
end

-- string.format with 1 to 3 random specs and literal fragments.
function P:format_expr(ctx)
  local r = self.r
  local fmt, args, len = {}, {}, 0
  for _ = 1, r.int(1, 3) do
    local frag = r.pick(LITFRAGS)
    fmt[#fmt + 1] = frag
    len = len + #frag
    local f = r.pick(FORMATS)
    fmt[#fmt + 1] = f[1]
    local n = self:num_atom(ctx)
    if f[2] == "int" then args[#args + 1] = "math.floor(" .. n .. ")"
    elseif f[2] == "uint" then args[#args + 1] = "math.abs(math.floor(" .. n .. "))"
    elseif f[2] == "num" then args[#args + 1] = n .. " / 3"
    elseif f[2] == "char" then args[#args + 1] = "65 + " .. n .. " % 26"
    elseif f[2] == "str" or f[2] == "qstr" then
      local s, ls = self:str_atom(ctx, 40)
      args[#args + 1] = s
      len = len + (f[2] == "qstr" and 4 * ls + 2 or ls)
    end
    len = len + f[3]
  end
  local code = "string.format(\"" .. table.concat(fmt) .. "\""
  if #args > 0 then code = code .. ", " .. table.concat(args, ", ") end
  return code .. ")", len
end

-- -- Statements -------------------------------------------------------------

local SEP = { '","', '";"', '""', '" "' }

-- Each statement generator emits one or more lines into the program and
-- returns nothing. `self:cost(ctx, k)` accounts for k executed statements.
function P:cost(ctx, k)
  self.spent = self.spent + (k or 1) * ctx.w
end

-- Whether k more statements here stay within the budget.
function P:can_afford(ctx, k)
  return self.spent + k * ctx.w <= self.budget
end

-- Fold a number into the checksum. The code runs before acc is read: a
-- function it calls may fold its own numbers into acc, and were acc read
-- first, those stores would be dead and the JIT would leave out what made
-- their numbers (seed 390444216: 96 strings of a __tostring whose length
-- went into acc, with the JIT off only).
function P:consume(ctx, code)
  self:emit("acc = ((" .. code .. ") + acc * 3) % " .. ACCMOD, "none")
  self:cost(ctx)
end

-- Use a new string so that the JIT cannot leave it out: its length alone
-- may be folded from the operation that makes it (string.sub, string.char)
-- and an unused result is dead code, but a table lookup with it as the key
-- needs the string itself.
function P:use_str(ctx, name)
  self:consume(ctx, "#" .. name .. " + (K[" .. name .. "] or 1)")
end

-- local nX = <number>
function P:st_num(ctx)
  local name = self:newname("n")
  self:emit("local " .. name .. " = (" .. self:num_expr(ctx) .. ") % " .. MOD, "none")
  add_var(ctx, name, "n")
  self:cost(ctx)
end

-- nX = nX + <number>, for a variable that is not a loop's.
function P:st_num_assign(ctx)
  local v = self:var(ctx, "n", function(x) return not x.ro end)
  if not v then return self:st_num(ctx) end
  self:emit(v.name .. " = (" .. v.name .. " + " .. self:num_expr(ctx) .. ") % " .. MOD, "none")
  self:cost(ctx)
end

-- local sX = <string builtin or concatenation>, then used.
function P:st_str(ctx)
  local code, len = self:str_expr(ctx)
  local name = self:newname("s")
  self:emit("local " .. name .. " = " .. code, "alloc")
  add_var(ctx, name, "s", { len = len })
  self:cost(ctx)
  self:use_str(ctx, name)
end

-- Reassign a string variable with something no longer than its bound.
function P:st_str_assign(ctx)
  -- Not a variable bound to the empty string: (x):sub(1, 0) would make x
  -- dead code (the JIT drops it).
  local v = self:var(ctx, "s", function(x) return not x.ro and x.len > 0 end)
  if not v then return self:st_str(ctx) end
  local code, len = self:str_expr(ctx)
  -- Cut to the variable's bound; but not a string.sub result: the JIT
  -- folds a sub of a sub into one, the first one is never made.
  if len > v.len and code:find(":sub(", 1, true) then
    code = self:str_atom(ctx, v.len)
  elseif len > v.len then
    code = "(" .. code .. "):sub(1, " .. v.len .. ")"
  end
  self:emit(v.name .. " = " .. code, "alloc")
  self:cost(ctx)
  self:use_str(ctx, v.name)
end

-- A list of strings: a constructor or table.new.
function P:st_table(ctx)
  local r = self.r
  local name = self:newname("t")
  local k = r.int(0, 4)
  local elems, len = {}, 1
  for _ = 1, k do
    local s, ls = self:str_atom(ctx, 30)
    elems[#elems + 1] = s
    if ls > len then len = ls end
  end
  local kind = "table"
  if r.chance(15) then
    self:emit("local " .. name .. " = tnew(" .. r.int(0, 8) .. ", " .. r.int(0, 4) .. ")", kind)
  else
    self:emit("local " .. name .. " = { " .. table.concat(elems, ", ") .. " }", kind)
  end
  add_var(ctx, name, "l", { size = k, len = len })
  self:cost(ctx)
end

-- A hash table: keyed by strings, or by numbers (only those are traversed
-- with pairs: a string's hash, hence the order of pairs, may differ between
-- two runs in one process -- LuaJIT switches a string-table chain to a
-- second hash function when it grows long).
function P:st_hash(ctx)
  local r = self.r
  local name = self:newname("h")
  local fields, numeric = {}, r.chance(50)
  for i = 1, r.int(0, 4) do
    fields[#fields + 1] = (numeric and "[" .. (100 + i) .. "]" or "k" .. i) .. " = " .. self:num_atom(ctx)
  end
  self:emit("local " .. name .. " = { " .. table.concat(fields, ", ") .. " }", "table")
  add_var(ctx, name, "h", { size = #fields, numeric = numeric })
  self:cost(ctx)
end

-- A string to put into list l, and its length bound. In a loop, none
-- longer than the bound of l's strings when the loop began: a string made
-- from one taken out of l and put back would grow round after round
-- (seed 395800967: string.format("%q") of its own result 60 times over,
-- out of memory). nil when there is none.
function P:list_atom(ctx, l)
  local s, ls = self:str_atom(ctx, ctx.loops > 0 and math.min(40, l.len) or 40)
  if ctx.loops > 0 and ls > l.len then return nil end
  return s, ls
end

-- Grow a list; its size bound grows by how often this line runs.
function P:st_list_add(ctx)
  local r = self.r
  local l = self:var(ctx, "l", function(x) return x.size + ctx.w <= MAXLIST end)
  if not l then return self:st_table(ctx) end
  local s, ls = self:list_atom(ctx, l)
  if not s then return self:st_table(ctx) end
  local forms = {
    l.name .. "[#" .. l.name .. " + 1] = " .. s,
    "table.insert(" .. l.name .. ", " .. s .. ")",
    "table.insert(" .. l.name .. ", 1, " .. s .. ")",
  }
  -- table.move is written in Lua by LuaJIT (lib_table.c, LJLIB_LUA): its
  -- allocations (the destination growing) are a builtin's, the line's.
  local src = self:var(ctx, "l", function(x) return x ~= l and (ctx.loops == 0 or x.len <= l.len) end)
  if src and l.size + 2 * ctx.w <= MAXLIST then
    forms[#forms + 1] = "table.move(" .. src.name .. ", 1, 2, #" .. l.name .. " + 1, " .. l.name .. ")"
    if src.len > ls then ls = src.len end
  end
  self:emit(r.pick(forms), "alloc")
  l.size = l.size + 2 * ctx.w
  if ls > l.len then l.len = ls end
  self:cost(ctx)
end

-- sort, remove, unpack, rawget, rawset on a list.
function P:st_list_use(ctx)
  local r = self.r
  local l = self:var(ctx, "l")
  if not l then return self:st_table(ctx) end
  local forms = {}
  if l.size <= 60 and ctx.w <= 50 then
    forms[#forms + 1] = function()
      self:emit("table.sort(" .. l.name .. ")", "none")
    end
  end
  if l.size <= 60 and ctx.w <= 50 and (ctx.loops == 0 or r.chance(20)) then
    forms[#forms + 1] = function()
      self:emit("table.sort(" .. l.name .. ", function(a, b) return a > b end)", "alloc",
        { inner = self:fn_begin("sortcmp") })
      self:fn_end(#self.funcs)
    end
  end
  forms[#forms + 1] = function()
    local name = self:newname("s")
    self:emit("local " .. name .. " = table.remove(" .. l.name .. ") or \"e\"", "none")
    add_var(ctx, name, "s", { len = math.max(l.len, 1) })
  end
  forms[#forms + 1] = function()
    local a, b = self:newname("s"), self:newname("s")
    self:emit("local " .. a .. ", " .. b .. " = unpack(" .. l.name .. ", 1, 2)", "none")
    self:consume(ctx, "(" .. a .. " and #" .. a .. " or 0) + (" .. b .. " and 1 or 0)")
  end
  forms[#forms + 1] = function()
    self:consume(ctx, "select('#', unpack(" .. l.name .. ", 1, 3))")
  end
  forms[#forms + 1] = function()
    self:consume(ctx, "#(rawget(" .. l.name .. ", 1) or \"\")")
  end
  local s, ls = self:list_atom(ctx, l)
  if s then
    forms[#forms + 1] = function()
      self:emit("rawset(" .. l.name .. ", 1, " .. s .. ")", "table")
      if ls > l.len then l.len = ls end
    end
  end
  r.pick(forms)()
  self:cost(ctx)
end

-- Stores into and reads of a hash table, next().
function P:st_hash_use(ctx)
  local r = self.r
  local h = self:var(ctx, "h")
  if not h then return self:st_hash(ctx) end
  local function field(i) return h.numeric and "[" .. (100 + i) .. "]" or ".k" .. i end
  local forms = {
    function()
      self:emit(h.name .. field(r.int(1, 9)) .. " = " .. self:num_atom(ctx), "table")
      h.size = math.min(h.size + ctx.w, 30)
    end,
    function()
      self:consume(ctx, "(" .. h.name .. field(r.int(1, 5)) .. " or 1)")
    end,
    function()
      if h.numeric then
        self:emit(h.name .. "[100 + " .. self:num_atom(ctx) .. " % 16] = " .. self:num_atom(ctx), "table")
        h.size = math.min(h.size + ctx.w, 30)
        return
      end
      local key = r.pick({ "w", "\"k2\"", "\"zz\"" })
      if key == "w" then
        key = self:newname("s")
        self:emit("local " .. key .. " = \"w\" .. " .. self:num_atom(ctx) .. " % 16", "alloc")
        self:use_str(ctx, key)
      end
      self:emit(h.name .. "[" .. key .. "] = " .. self:num_atom(ctx), "table")
      h.size = math.min(h.size + ctx.w, 30)
    end,
    function()
      local k = self:newname("k")
      self:consume(ctx, "(next(" .. h.name .. ") and 1 or 0)")
      local _ = k
    end,
  }
  r.pick(forms)()
  self:cost(ctx)
end

-- A closure over variables in scope, called at once or later.
function P:st_closure(ctx)
  local r = self.r
  local name = self:newname("c")
  -- The closure's body sees the variables in scope, but not `...`.
  local outer = ctx
  ctx = child(ctx)
  ctx.fn = { nloc = 0 }
  local n = self:num_atom(ctx)
  local forms = {
    { "n", "function(x) return (x * 3 + " .. n .. ") % " .. MOD .. " end", "none" },
    { "n", "function(x) return #(" .. self:str_atom(ctx, 20) .. " .. x) end", "alloc" },
    { "s", "function(x) return \"c\" .. x end", "alloc" },
    { "n", "function(x, ...) return select('#', ...) + x end", "none" },
  }
  local f = r.pick(forms)
  local id = self:fn_begin(name)
  self:emit("local " .. name .. " = " .. f[2], "alloc", { inner = id })
  self:fn_end(id)
  add_var(outer, name, "c", { ret = f[1] })
  self:cost(outer)
end

-- Call a closure made earlier.
function P:st_closure_call(ctx)
  local c = self:var(ctx, "c")
  if not c then return self:st_closure(ctx) end
  if c.ret == "n" then
    self:consume(ctx, c.name .. "(" .. self:num_atom(ctx) .. ", 1, 2)")
  else
    self:consume(ctx, "#" .. c.name .. "(" .. self:num_atom(ctx) .. ")")
  end
end

-- Objects with metatables: mt1 has Lua metamethods, mt2 builtins.
function P:st_object(ctx)
  local name = self:newname("o")
  local mt = self.r.int(1, 2)
  -- Objects of mt2 hold two strings for table.concat (their __concat).
  self:emit("local " .. name .. " = setmetatable({ " .. (mt == 2 and "\"a\", " .. self:str_atom(ctx, 20) .. ", " or "") ..
    "v = " .. self:num_atom(ctx) .. " }, mt" .. mt .. ")", "table")
  add_var(ctx, name, "o", { mt = mt })
  self:cost(ctx)
end

-- Use an object through each of its metamethods.
function P:st_object_use(ctx)
  local r = self.r
  local o = self:var(ctx, "o")
  if not o then return self:st_object(ctx) end
  local o2 = self:var(ctx, "o", function(x) return x.mt == o.mt end) or o
  local forms
  if o.mt == 1 then
    forms = {
      function() self:consume(ctx, "#" .. o.name .. ".key" .. r.int(1, 4)) end,
      function() self:emit(o.name .. ".f" .. r.int(1, 3) .. " = " .. self:num_atom(ctx), "table") end,
      function() self:consume(ctx, "(" .. o.name .. " + " .. self:num_atom(ctx) .. ")") end,
      function() self:consume(ctx, "#(" .. o.name .. " .. " .. self:str_atom(ctx) .. ")") end,
      function() self:consume(ctx, "#(" .. self:str_atom(ctx) .. " .. " .. o.name .. ")") end,
      function() self:consume(ctx, o.name .. "(" .. self:num_atom(ctx) .. ")") end,
      function() self:consume(ctx, "(" .. o.name .. " == " .. o2.name .. " and 1 or 2)") end,
      function() self:consume(ctx, "(" .. o.name .. " < " .. o2.name .. " and 1 or 2)") end,
      function() self:consume(ctx, "(" .. o.name .. " <= " .. o2.name .. " and 1 or 2)") end,
      function() self:consume(ctx, "#tostring(" .. o.name .. ")") end,
      function() self:consume(ctx, "(-" .. o.name .. ")") end,
      function() self:consume(ctx, "#" .. o.name) end,
    }
  else
    forms = {
      function() self:consume(ctx, "#" .. o.name .. ".key") end,
      function() self:emit(o.name .. ".f" .. r.int(1, 3) .. " = " .. self:num_atom(ctx), "table") end,
      function() self:consume(ctx, "((" .. o.name .. " + 1) and 1 or 0)") end,
      function() self:consume(ctx, "#(" .. o.name .. " .. " .. self:str_atom(ctx) .. ")"); self.meta[#self.out].kind = "alloc" end,
      function() self:emit(o.name .. ".f" .. r.int(1, 3) .. " = " .. self:num_atom(ctx), "table") end,
      function() self:consume(ctx, "((-" .. o.name .. ") and 1 or 0)"); self.meta[#self.out].kind = "alloc" end,
      function() self:consume(ctx, "#" .. o.name .. "(" .. self:num_atom(ctx) .. ")") end,
      function() self:consume(ctx, "(" .. o.name .. " == " .. o2.name .. " and 1 or 2)") end,
      function() self:consume(ctx, "(" .. o.name .. " < " .. o2.name .. " and 1 or 2)") end,
      function() self:consume(ctx, "#tostring(" .. o.name .. ")") end,
      function() self:consume(ctx, "(rawget(" .. o.name .. ", \"v\") or 0)") end,
    }
  end
  r.pick(forms)()
  self:cost(ctx)
end

-- Builtins that return numbers or have no result we keep.
function P:st_misc(ctx)
  local r = self.r
  local forms = {
    function()
      local l = self:var(ctx, "l")
      if l then
        self:consume(ctx, "(tostring(" .. l.name .. ") ~= nil and 1 or 0)")
        self.meta[#self.out].kind = "alloc"
      end
    end,
    function()
      -- Only strings: compiled code converts a number to a string first
      -- (an allocation the interpreter does not make).
      self:emit("null:write(" .. self:str_atom(ctx) .. ", tostring(" .. self:num_atom(ctx) .. "), \"\\n\")", "alloc")
    end,
    function()
      self:consume(ctx, "debug.getinfo(1, \"l\").currentline")
      self.meta[#self.out].kind = "alloc"
    end,
    function()
      if #self.helpers == 0 then return end
      local name = self:newname("n")
      self:emit("local " .. name .. " = #string.dump(" .. r.pick(self.helpers).name .. ")", "alloc")
      add_var(ctx, name, "n")
    end,
    function()
      local name = self:newname("n")
      self:emit("local " .. name .. " = load(\"return \" .. " .. self:num_atom(ctx) .. ", \"=gensub\")() % " .. MOD, "alloc")
      add_var(ctx, name, "n")
    end,
    function()
      local name = self:newname("p")
      self:emit("local " .. name .. " = {}", "table")
      self:emit("package.seeall(" .. name .. ")", "alloc", { cfuncs = { "package.seeall" } })
    end,
    function()
      self:emit("local _ = pcall(require, \"nomod_" .. r.int(1, 3) .. "\")", "alloc",
        { cfuncs = { "require", "package.loaders[1]", "package.loaders[2]",
          "package.loaders[3]", "package.loaders[4]" } })
    end,
    function()
      local name = self:newname("p")
      self:emit("local _, " .. name .. " = package.searchpath(\"nomod_" .. r.int(1, 3) ..
        "\", \"./?.lua;./?/init.lua\")", "alloc", { cfuncs = { "package.searchpath" } })
      self:consume(ctx, "#" .. name)
    end,
    function()
      local s = self:var(ctx, "s", function(x) return x.len <= 100 end)
      if s then self:consume(ctx, "(select(2, " .. s.name .. ":byte(1, -1)) or 0)") end
    end,
    function()
      local s = self:var(ctx, "s")
      if s then
        -- A capture: find returns a new string.
        self:consume(ctx, "#(" .. s.name .. ":find(\"(%a)\") and \"y\" or \"n\")")
        self.meta[#self.out].kind = "alloc"
      end
    end,
    function()
      self:consume(ctx, "collectgarbage(\"count\") > 0 and 1 or 0")
    end,
  }
  r.pick(forms)()
  self:cost(ctx)
end

-- Arguments for a call of helper f (a recursive one gets its depth).
function P:call_args(ctx, f)
  local args = {}
  for i, ty in ipairs(f.params) do
    if i == 1 and f.depth then args[i] = tostring(f.depth)
    else args[i] = ty == "n" and self:num_atom(ctx) or self:str_atom(ctx, 30) end
  end
  return args
end

-- A call of a helper function defined earlier.
function P:st_call(ctx)
  local r = self.r
  local f = self:pick_func(ctx, function(f) return not f.gen end)
  if not f then return self:st_num(ctx) end
  local args = self:call_args(ctx, f)
  if f.vararg then
    for _ = 1, r.int(0, 3) do args[#args + 1] = r.chance(50) and self:num_atom(ctx) or self:str_atom(ctx, 20) end
  end
  local call = f.name .. "(" .. table.concat(args, ", ") .. ")"
  if f.err then
    local ok, e = self:newname("ok"), self:newname("e")
    if r.chance(50) then
      -- (a string is returned by a tail call of a builtin: billed here)
      self:emit("local " .. ok .. ", " .. e .. " = pcall(" .. f.name .. (#args > 0 and ", " or "") ..
        table.concat(args, ", ") .. ")", f.ret == "s" and "alloc" or "none")
    else
      local handler = r.pick({ "tostring", "type", "tostring",
        ctx.loops == 0 and "function(m) return \"h\" .. tostring(m) end" or "type" })
      local extra
      if handler:sub(1, 8) == "function" then extra = { inner = self:fn_begin("handler") }; self:fn_end(#self.funcs) end
      self:emit("local " .. ok .. ", " .. e .. " = xpcall(" .. f.name .. ", " .. handler ..
        (#args > 0 and ", " or "") .. table.concat(args, ", ") .. ")",
        (extra or f.ret == "s") and "alloc" or "none", extra)
    end
    -- The result is looked up in K whether or not the call failed: unused,
    -- a string the helper returned would be dead code to the JIT (seed
    -- 410912592: two substrings made with the JIT off only).
    self:consume(ctx, "(" .. ok .. " and 1 or #tostring(" .. e .. ")) + (K[" .. e .. "] or 1)")
    self.meta[#self.out].kind = "alloc"
  elseif f.ret == "n" then
    self:consume(ctx, call)
  else
    -- A helper returning a string returns a builtin's result as a tail call
    -- ((...):sub(1, 30), s:sub(i, j), ...): the builtin's allocation is
    -- billed to this line, the caller's.
    local name = self:newname("s")
    self:emit("local " .. name .. " = " .. call, "alloc")
    self:use_str(ctx, name)
  end
  self.spent = self.spent + f.cost * ctx.w
end

-- Drive a coroutine generator to its end (create/resume or wrap).
function P:st_coroutine(ctx)
  local r = self.r
  local g = self:pick_func(ctx, function(f) return f.gen end)
  if not g then return self:st_num(ctx) end
  if not self:can_afford(ctx, 3 * g.cost) then return self:st_num(ctx) end
  local v = self:newname("v")
  local n = r.int(1, g.maxyield)
  local arg = self:str_atom(ctx, 20)
  if r.chance(50) then
    local co, ok = self:newname("co"), self:newname("ok")
    self:emit("local " .. co .. " = coroutine.create(" .. g.name .. ")", "alloc")
    self:emit("local " .. ok .. ", " .. v .. " = coroutine.resume(" .. co .. ", " .. n .. ", " .. arg .. ")", "alloc")
    self:emit("while " .. ok .. " and " .. v .. " ~= nil do", "none")
    self.indent = self.indent + 1
    self:emit("acc = (acc * 3 + #" .. v .. ") % " .. ACCMOD, "none")
    self:emit(ok .. ", " .. v .. " = coroutine.resume(" .. co .. ")", "alloc")
    self.indent = self.indent - 1
    self:emit("end", "none")
    self:consume(ctx, "#coroutine.status(" .. co .. ")")
    self.meta[#self.out].kind = "alloc"
  else
    local wr = self:newname("wr")
    self:emit("local " .. wr .. " = coroutine.wrap(" .. g.name .. ")", "alloc")
    self:emit("local " .. v .. " = " .. wr .. "(" .. n .. ", " .. arg .. ")", "alloc")
    self:emit("while " .. v .. " ~= nil do", "none")
    self.indent = self.indent + 1
    self:emit("acc = (acc * 3 + #" .. v .. ") % " .. ACCMOD, "none")
    self:emit(v .. " = " .. wr .. "()", "alloc")
    self.indent = self.indent - 1
    self:emit("end", "none")
  end
  self.spent = self.spent + 3 * g.cost * ctx.w
end

-- Loops: numeric for, while, repeat, ipairs, pairs, gmatch.
local TRIPS = { 1, 2, 3, 4, 7, 12, 20, 33, 57, 100, 150, 260 }

-- A loop (numeric, while, repeat, ipairs, pairs, gmatch) and its body.
function P:st_loop(ctx, depth, mintrips)
  local r = self.r
  local trips = r.pick(TRIPS)
  if mintrips and trips < mintrips then trips = mintrips end
  while trips > 1 and not self:can_afford(ctx, trips * 4) do trips = math.floor(trips / 3) end
  if trips < 1 then trips = 1 end
  local body = child(ctx, ctx.w * trips)
  body.loops = ctx.loops + 1
  local kind = mintrips and 1 or r.int(1, 8)
  local iv = self:newname("i")
  -- Loop variables are never assigned in the body, and the table a loop
  -- traverses is not visible in its body (no changes while traversing).
  local function without(vars, victim)
    local out = {}
    for _, v in ipairs(vars) do if v ~= victim then out[#out + 1] = v end end
    return out
  end
  local l = kind == 6 and self:var(ctx, "l", function(x) return self:can_afford(ctx, 4 * math.max(1, x.size)) end)
  local h = kind == 7 and self:var(ctx, "h", function(x) return x.numeric and self:can_afford(ctx, 4 * math.max(1, x.size)) end)
  if kind <= 3 or (kind == 6 and not l) or (kind == 7 and not h) then
    if r.chance(20) then
      local step = r.pick({ 2, 3 })
      self:emit("for " .. iv .. " = 1, " .. trips * step .. ", " .. step .. " do", "none")
    elseif r.chance(15) then
      self:emit("for " .. iv .. " = " .. trips .. ", 1, -1 do", "none")
    else
      self:emit("for " .. iv .. " = 1, " .. trips .. " do", "none")
    end
    add_var(body, iv, "n", { ro = true })
    kind = 1
  elseif kind == 4 or kind == 5 then
    self:emit("local " .. iv .. " = 0", "none")
    local v = add_var(ctx, iv, "n", { ro = true })
    body.vars[#body.vars + 1] = v
    if kind == 4 then
      self:emit("while " .. iv .. " < " .. trips .. " do", "none")
    else
      self:emit("repeat", "none")
    end
    self.indent = self.indent + 1
    self:emit(iv .. " = " .. iv .. " + 1", "none")
    self.indent = self.indent - 1
  elseif kind == 6 then
    local vv = self:newname("s")
    self:emit("for " .. iv .. ", " .. vv .. " in ipairs(" .. l.name .. ") do", "none")
    body.vars = without(body.vars, l)
    add_var(body, iv, "n", { ro = true })
    add_var(body, vv, "s", { len = l.len, ro = true })
    body.w = ctx.w * math.max(1, l.size)
  elseif kind == 7 then
    local kv = self:newname("k")
    self:emit("for " .. kv .. ", " .. iv .. " in pairs(" .. h.name .. ") do", "none")
    body.vars = without(body.vars, h)
    add_var(body, iv, "n", { ro = true })
    add_var(body, kv, "n", { ro = true })
    body.w = ctx.w * math.max(1, h.size)
  else
    local s = self:var(ctx, "s", function(x) return self:can_afford(ctx, 4 * math.max(1, x.len)) end)
      or { name = "(\"abc def ghi\")", len = 11 }
    local wv = self:newname("s")
    local pat = r.pick(PATTERNS):gsub("[()]", "")
    self:emit("for " .. wv .. " in " .. s.name .. ":gmatch(\"" .. pat .. "\") do", "alloc")
    add_var(body, wv, "s", { len = s.len, ro = true })
    self.indent = self.indent + 1
    self:emit("local " .. iv .. " = #" .. wv, "none")
    self.indent = self.indent - 1
    add_var(body, iv, "n")
    body.w = ctx.w * math.max(1, s.len)
  end
  self:cost(ctx)
  self.indent = self.indent + 1
  self:block(body, r.int(1, depth >= 2 and 3 or 6), depth + 1)
  -- Sometimes switch behaviour half way (side exits, side traces).
  if kind == 1 and r.chance(25) then
    self:emit("if " .. iv .. " > " .. r.int(1, trips) .. " then", "none")
    self.indent = self.indent + 1
    self:block(child(body), 1, depth + 2)
    self.indent = self.indent - 1
    self:emit("end", "none")
  end
  self.indent = self.indent - 1
  if kind == 5 then
    self:emit("until " .. iv .. " >= " .. trips, "none")
  else
    self:emit("end", "none")
  end
end

-- if/else on a number.
function P:st_if(ctx, depth)
  local r = self.r
  local cond = self:num_atom(ctx) .. " % " .. r.int(2, 5) .. " == " .. r.int(0, 1)
  self:emit("if " .. cond .. " then", "none")
  self.indent = self.indent + 1
  self:block(child(ctx), r.int(1, 3), depth + 1)
  self.indent = self.indent - 1
  if r.chance(50) then
    self:emit("else", "none")
    self.indent = self.indent + 1
    self:block(child(ctx), r.int(1, 3), depth + 1)
    self.indent = self.indent - 1
  end
  self:emit("end", "none")
  self:cost(ctx)
end

-- A block of statements (a new scope for locals).
function P:block(ctx, n, depth)
  local r = self.r
  for _ = 1, n do
    if ctx.fn.nloc > 150 then
      self:st_num_assign(ctx)
    else
      local menu = {
        { 10, "st_num" }, { 5, "st_num_assign" }, { 16, "st_str" },
        { 6, "st_str_assign" }, { 5, "st_table" }, { 3, "st_hash" },
        { 6, "st_list_add" }, { 5, "st_list_use" }, { 4, "st_hash_use" },
        { ctx.loops > 0 and 1 or 4, "st_closure" }, { 4, "st_closure_call" }, { 4, "st_object" },
        { 10, "st_object_use" }, { 5, "st_misc" }, { 8, "st_call" },
        { 3, "st_coroutine" },
      }
      if depth < 4 then
        menu[#menu + 1] = { depth == 0 and 14 or 7, "st_loop" }
        menu[#menu + 1] = { 4, "st_if" }
      end
      if ctx.fn.gen then menu[#menu + 1] = { 6, "st_yield" } end
      self[r.weighted(menu)](self, ctx, depth)
    end
  end
end

-- coroutine.yield of a new string (coroutine bodies only).
function P:st_yield(ctx)
  local s = self:str_atom(ctx, 30)
  self:emit("coroutine.yield(" .. s .. " .. " .. self:num_atom(ctx) .. ")", "alloc")
  self:cost(ctx)
end

-- A helper defined so far that the budget allows calling, or nil.
function P:pick_func(ctx, pred)
  local ok = {}
  for _, f in ipairs(self.helpers) do
    if (not pred or pred(f)) and self:can_afford(ctx, f.cost + 1) then ok[#ok + 1] = f end
  end
  if #ok == 0 then return nil end
  return self.r.pick(ok)
end

-- -- Helper functions -----------------------------------------------------

-- A helper: plain, vararg, error-raising, recursive or a coroutine body.
-- Its cost per call is measured while its body is generated.
function P:helper(kind)
  local r = self.r
  local name = self:newname(kind == "gen" and "g" or kind == "err" and "e" or
    kind == "rec" and "r" or "f")
  local f = { name = name, params = {}, ret = r.chance(60) and "n" or "s",
    vararg = kind == "vararg", err = kind == "err", gen = kind == "gen",
    nloc = 0, maxyield = 0, depth = kind == "rec" and r.int(1, 12) or nil }
  local id = self:fn_begin(name)
  f.id = id
  local params = {}
  for i = 1, r.int((kind == "rec" or kind == "err") and 1 or 0, 3) do
    local ty = (i == 1 and kind ~= "gen") and "n" or (r.chance(50) and "n" or "s")
    if kind == "gen" then ty = (i == 1) and "n" or "s" end
    f.params[i] = ty
    params[i] = "a" .. i
  end
  if kind == "rec" then f.params[1] = "n" end
  if kind == "gen" then f.params = { "n", "s" }; params = { "a1", "a2" } end
  if f.vararg then params[#params + 1] = "..." end
  self:emit("local function " .. name .. "(" .. table.concat(params, ", ") .. ")", "none")
  self.fnstack[#self.fnstack + 1] = id
  self.indent = self.indent + 1
  local saved = self.spent
  self.spent = 0
  local ctx = { vars = {}, w = 1, fn = f, loops = 0 }
  for _, v in ipairs(self.shared) do ctx.vars[#ctx.vars + 1] = v end
  for i, ty in ipairs(f.params) do
    -- The depth of a recursive helper is never changed.
    ctx.vars[#ctx.vars + 1] = { name = "a" .. i, ty = ty, len = 30, ro = kind == "rec" and i == 1 }
  end
  local oldbudget = self.budget
  self.budget = math.floor(oldbudget / 12)
  if kind == "gen" then
    -- Grow the coroutine's stack once, here, so that no later call in it
    -- has to (see WARM in M.env).
    self:emit("local _ = select('#', unpack(WARM))", "alloc")
    f.maxyield = r.pick({ 1, 2, 5, 12, 40 })
    self:emit("for i = 1, math.min(a1, " .. f.maxyield .. ") do", "none")
    self.indent = self.indent + 1
    local body = child(ctx, f.maxyield)
    add_var(body, "i", "n")
    self:block(body, r.int(0, 2), 2)
    self:emit("coroutine.yield(a2 .. i)", "alloc")
    self:block(body, r.int(0, 2), 2)
    self.indent = self.indent - 1
    self:emit("end", "none")
  elseif kind == "rec" then
    self:emit("if a1 <= 0 then", "none")
    self.indent = self.indent + 1
    self:emit("return " .. (f.ret == "n" and "1" or "\"r\""), "none")
    self.indent = self.indent - 1
    self:emit("end", "none")
    self:block(ctx, r.int(1, 3), 3)
  else
    if kind == "err" then
      self:emit("if a1 % 3 == 0 then", "none")
      self.indent = self.indent + 1
      local forms = {
        "error(\"bad\" .. a1)", "error(\"bad\" .. a1, 2)", "error({ code = a1 })",
        "error(a1 .. \"x\", 0)", "error()", "error(\"plain\")",
        "local _ = nil .. a1",
      }
      self:emit(r.pick(forms), "alloc")
      self.indent = self.indent - 1
      self:emit("end", "none")
    end
    self:block(ctx, r.int(1, 5), 1)
  end
  -- The result.
  local ret
  if kind == "gen" then
    ret = nil
  elseif kind == "rec" then
    local rest = {}
    for i = 2, #f.params do rest[#rest + 1] = ", a" .. i end
    local rec = name .. "(a1 - 1" .. table.concat(rest) .. ")"
    if f.ret == "n" then
      ret = "return (" .. self:num_atom(ctx) .. " + " .. rec .. ") % " .. MOD
    else
      ret = "return (\"r\" .. " .. rec .. "):sub(1, 30)"
    end
  elseif f.ret == "n" then
    local g = self:pick_func(ctx, function(h) return h.ret == "n" and not h.gen and not h.err and not h.vararg end)
    if g and r.chance(35) then
      local args = self:call_args(ctx, g)
      ret = "return " .. g.name .. "(" .. table.concat(args, ", ") .. ")"	-- a tail call
      self.spent = self.spent + g.cost
    elseif f.vararg and r.chance(50) then
      ret = "return select('#', ...) + " .. self:num_atom(ctx)
    else
      ret = "return (" .. self:num_expr(ctx) .. ") % " .. MOD
    end
  else
    local code = self:str_expr(ctx)
    -- Bounded, unless a string.sub result (a sub of a sub is one for the JIT).
    ret = code:find(":sub(", 1, true) and "return " .. code or "return (" .. code .. "):sub(1, 30)"
  end
  if ret then self:emit(ret, (kind == "rec" or ret:find(" .. ", 1, true) or ret:find(":sub")) and "alloc" or "none") end
  self.indent = self.indent - 1
  self.fnstack[#self.fnstack] = nil
  -- The closure is created on the line of `end`.
  self:emit("end", "alloc")
  self:fn_end(id)
  f.cost = self.spent + 1
  if kind == "rec" then f.cost = f.cost * (f.depth + 1) end
  self.spent = saved
  self.budget = oldbudget
  self.helpers[#self.helpers + 1] = f
  return f
end

-- -- The program ---------------------------------------------------------

-- Header: the helpers from the runner, the checksum, the metatables.
function P:header()
  self:emit("local ENV = ...", "none")
  self:emit("local acc = 0", "none")
  self:emit("local tnew, null, WARM = ENV.tnew, ENV.null, ENV.warm", "none")
  self:emit("math.randomseed(" .. self.seed % 1000 .. ")", "none")
  self:emit("local K = { ab = 2, q = 3, Lua = 5, [\"42\"] = 7 }", "table")
  self:emit("local mt1 = {}", "table")
  local function mm(field, body, kind)
    local id = self:fn_begin("mt1." .. field)
    self:emit("mt1." .. field .. " = function" .. body, kind or "alloc", { inner = id })
    self:fn_end(id)
  end
  mm("__index", "(t, k) return \"ix\" .. k end")
  -- What rawset allocates is the table's: it goes with the table when the
  -- JIT sinks it (seed 419265750: 195 hash parts of tables that never
  -- escaped a loop, made with the JIT off only).
  mm("__newindex", "(t, k, v) rawset(t, k, v) end", "table")
  mm("__add", "(a, b) return (type(a) == \"table\" and a.v or a) + (type(b) == \"table\" and b.v or b) end")
  mm("__concat", "(a, b) return (type(a) == \"table\" and \"<o>\" or a) .. (type(b) == \"table\" and \"<o>\" or b) end")
  mm("__call", "(self, x) return (x + self.v) % " .. MOD .. " end")
  mm("__eq", "(a, b) return a.v == b.v end")
  mm("__lt", "(a, b) return a.v < b.v end")
  mm("__le", "(a, b) return a.v <= b.v end")
  mm("__tostring", "(t) return \"obj\" .. t.v end")
  mm("__unm", "(t) return -t.v end")
  mm("__len", "(t) return 3 end")
  -- mt2: builtins as metamethods.
  self:emit("local mt2 = { __index = type, __newindex = rawset, __add = rawequal, " ..
    "__concat = table.concat, __call = type, __eq = rawequal, __lt = rawequal, __tostring = type, " ..
    "__unm = tostring }", "table")
end

-- The program of a seed (opts.budget: statements executed, default 6000).
function M.generate(seed, opts)
  opts = opts or {}
  local self = setmetatable({
    seed = seed, r = new_rng(seed), out = {}, meta = {}, funcs = {},
    fnstack = { 0 }, indent = 0, nvar = 0, spent = 0,
    budget = opts.budget or 6000, helpers = {}, cfuncs = {},
    shared = {},
  }, P)
  local r = self.r
  self:header()
  -- Helpers, each may call the ones before it.
  local kinds = {}
  for _ = 1, r.int(2, 7) do
    kinds[#kinds + 1] = r.weighted({ { 6, "plain" }, { 3, "vararg" }, { 2, "err" },
      { 2, "gen" }, { 1, "rec" } })
  end
  for _, k in ipairs(kinds) do self:helper(k) end
  -- The main chunk: a few hot loops with statements around them.
  local ctx = { vars = {}, w = 1, fn = { nloc = 0 }, loops = 0 }
  for _ = 1, r.int(2, 4) do
    self:block(ctx, r.int(0, 3), 0)
    self:st_loop(ctx, 0, r.pick({ 20, 40, 60, 100, 200 }))
  end
  self:block(ctx, r.int(0, 3), 0)
  self:emit("return acc", "none")
  self.funcs[0] = { name = "main", first = 1, last = #self.out }
  local src = table.concat(self.out, "\n") .. "\n"
  return {
    seed = seed,
    src = src,
    text = self.out,
    chunk = "@gen-" .. seed .. ".lua",
    lines = self.meta,
    funcs = self.funcs,
    cfuncs = self.cfuncs,
    cost = self.spent,
    hotloop = r.pick({ 1, 2, 3, 5, 8 }),
    hotexit = r.pick({ 1, 2, 4, 10 }),
  }
end

-- The helpers a program receives as its argument (make one per process).
function M.env()
  local warm = {}
  for i = 1, 600 do warm[i] = i end
  return {
    tnew = require("table.new"),
    null = assert(io.open("/dev/null", "w")),
    warm = warm,
  }
end

return M
