-- json.lua: a realistic program, a pure-Lua JSON codec (ljmemprof benchmark).
--
-- usage: luajit bench/json.lua [DOCS]     (default 500)
--
-- Generates DOCS documents shaped like API responses (a page of user
-- records with nested addresses, tags, orders and free text that needs
-- escaping), encodes each to JSON text, decodes the text back into tables,
-- checks that re-encoding gives the same text, and aggregates a few fields.
-- The codec is written for this benchmark in the usual pure-Lua style:
-- the encoder collects pieces in a buffer table, the decoder is recursive
-- descent over string.byte/find/sub. Prints a checksum of all the text.

local ndocs = tonumber(arg and arg[1]) or 500

local byte, char, sub, find, fmt = string.byte, string.char, string.sub,
  string.find, string.format
local concat, sort, floor = table.concat, table.sort, math.floor

-- -- Encoder ---------------------------------------------------------------

local escapes = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b',
                  ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r',
                  ['\t'] = '\\t' }

local function escape_char(c)
  return escapes[c] or fmt("\\u%04x", byte(c))
end

local encode_value

-- Append the JSON form of string s to buffer b.
local function encode_string(b, s)
  if find(s, '[%c"\\]') then s = s:gsub('[%c"\\]', escape_char) end
  b[#b + 1] = '"'
  b[#b + 1] = s
  b[#b + 1] = '"'
end

-- A table is an array when its keys are exactly 1..n (n >= 1), or empty.
local function is_array(t)
  local n = #t
  local k = 0
  for _ in pairs(t) do k = k + 1 end
  return k == n
end

-- Append the JSON form of table t; object keys are sorted for stable text.
local function encode_table(b, t)
  if is_array(t) then
    b[#b + 1] = "["
    for i = 1, #t do
      if i > 1 then b[#b + 1] = "," end
      encode_value(b, t[i])
    end
    b[#b + 1] = "]"
    return
  end
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  sort(keys)
  b[#b + 1] = "{"
  for i = 1, #keys do
    local k = keys[i]
    if i > 1 then b[#b + 1] = "," end
    encode_string(b, k)
    b[#b + 1] = ":"
    encode_value(b, t[k])
  end
  b[#b + 1] = "}"
end

function encode_value(b, v)
  local ty = type(v)
  if ty == "string" then encode_string(b, v)
  elseif ty == "number" then
    if v == floor(v) and v > -1e15 and v < 1e15 then
      b[#b + 1] = fmt("%d", v)
    else
      b[#b + 1] = fmt("%.14g", v)
    end
  elseif ty == "boolean" then b[#b + 1] = v and "true" or "false"
  elseif ty == "table" then encode_table(b, v)
  elseif v == nil then b[#b + 1] = "null"
  else error("cannot encode a " .. ty) end
end

local function encode(v)
  local b = {}
  encode_value(b, v)
  return concat(b)
end

-- -- Decoder ---------------------------------------------------------------

local NULL = setmetatable({}, { __tostring = function() return "null" end })
local decode_value

local function fail(s, i, what)
  error(fmt("bad JSON at byte %d: expected %s", i, what), 0)
end

-- Index of the first non-blank byte at or after i.
local function skip(s, i)
  local _, e = find(s, "^[ \n\r\t]*", i)
  return e + 1
end

local unescapes = { [34] = '"', [92] = '\\', [47] = '/', [98] = '\b',
                    [102] = '\f', [110] = '\n', [114] = '\r', [116] = '\t' }

-- UTF-8 bytes of code point cp (BMP only; enough for this generator).
local function utf8(cp)
  if cp < 0x80 then return char(cp) end
  if cp < 0x800 then return char(0xC0 + floor(cp / 64), 0x80 + cp % 64) end
  return char(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64,
              0x80 + cp % 64)
end

-- String starting at the quote at i; returns it and the index after it.
local function decode_string(s, i)
  local j = i + 1
  local _, e = find(s, '^[^"\\]*', j)
  if byte(s, e + 1) == 34 then return sub(s, j, e), e + 2 end
  local parts = {}
  while true do
    _, e = find(s, '^[^"\\]*', j)
    if e >= j then parts[#parts + 1] = sub(s, j, e) end
    local c = byte(s, e + 1)
    if c == 34 then return concat(parts), e + 2 end
    if c ~= 92 then fail(s, e + 1, "closing quote") end
    local k = byte(s, e + 2)
    if k == 117 then
      local hex = sub(s, e + 3, e + 6)
      local cp = tonumber(hex, 16)
      if not cp or #hex ~= 4 then fail(s, e + 3, "4 hex digits") end
      parts[#parts + 1] = utf8(cp)
      j = e + 7
    else
      local u = unescapes[k]
      if not u then fail(s, e + 2, "escape character") end
      parts[#parts + 1] = u
      j = e + 3
    end
  end
end

local function decode_array(s, i)
  local t, n = {}, 0
  i = skip(s, i + 1)
  if byte(s, i) == 93 then return t, i + 1 end
  while true do
    local v
    v, i = decode_value(s, i)
    n = n + 1
    t[n] = v
    i = skip(s, i)
    local c = byte(s, i)
    if c == 93 then return t, i + 1 end
    if c ~= 44 then fail(s, i, "',' or ']'") end
    i = skip(s, i + 1)
  end
end

local function decode_object(s, i)
  local t = {}
  i = skip(s, i + 1)
  if byte(s, i) == 125 then return t, i + 1 end
  while true do
    if byte(s, i) ~= 34 then fail(s, i, "object key") end
    local k, v
    k, i = decode_string(s, i)
    i = skip(s, i)
    if byte(s, i) ~= 58 then fail(s, i, "':'") end
    v, i = decode_value(s, skip(s, i + 1))
    t[k] = v
    i = skip(s, i)
    local c = byte(s, i)
    if c == 125 then return t, i + 1 end
    if c ~= 44 then fail(s, i, "',' or '}'") end
    i = skip(s, i + 1)
  end
end

function decode_value(s, i)
  local c = byte(s, i)
  if c == 34 then return decode_string(s, i) end
  if c == 123 then return decode_object(s, i) end
  if c == 91 then return decode_array(s, i) end
  if c == 116 and sub(s, i, i + 3) == "true" then return true, i + 4 end
  if c == 102 and sub(s, i, i + 4) == "false" then return false, i + 5 end
  if c == 110 and sub(s, i, i + 3) == "null" then return NULL, i + 4 end
  local _, e = find(s, "^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  if not e then fail(s, i, "a value") end
  return tonumber(sub(s, i, e)), e + 1
end

local function decode(s)
  local v, i = decode_value(s, skip(s, 1))
  if skip(s, i) <= #s then fail(s, i, "end of text") end
  return v
end

-- -- Document generator -----------------------------------------------------

local seed = 777
local function rand(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n
end

local words = { "alpha", "beta", "gamma", "delta", "lorem", "ipsum", "quote\"d",
                "back\\slash", "tab\tbed", "line\nbreak", "caf\195\169",
                "ctrl\1char", "plain", "words", "here", "json" }
local cities = { "Berlin", "Lisbon", "Oslo", "Quito", "Perth", "Kyoto" }

local function sentence(n)
  local w = {}
  for i = 1, n do w[i] = words[rand(#words) + 1] end
  return concat(w, " ")
end

local function user(id)
  local orders = {}
  for i = 1, rand(6) do
    orders[i] = { id = id * 100 + i, total = rand(100000) / 100,
                  items = { rand(50), rand(50), rand(50) },
                  paid = rand(2) == 0, note = sentence(rand(4)) }
  end
  local tags = {}
  for i = 1, rand(5) do tags[i] = words[rand(#words) + 1] end
  return {
    id = id, name = "user" .. id, active = rand(3) ~= 0,
    score = rand(1000000) / 1000 - 500,
    address = { city = cities[rand(#cities) + 1], zip = fmt("%05d", rand(99999)),
                geo = { lat = rand(180000) / 1000 - 90,
                        lon = rand(360000) / 1000 - 180 } },
    tags = tags, orders = orders, bio = sentence(3 + rand(12)),
  }
end

local function document(n)
  local users = {}
  for i = 1, 40 + rand(40) do users[i] = user(n * 1000 + i) end
  return { page = n, per_page = #users, total = 1000000, users = users,
           links = { self = "/users?page=" .. n, next = "/users?page=" .. n + 1 } }
end

-- -- Main -------------------------------------------------------------------

local bytes, h, paid, ordersum = 0, 0, 0, 0
for n = 1, ndocs do
  local text = encode(document(n))
  local back = decode(text)
  local again = encode(back)
  if again ~= text then error("round trip changed document " .. n) end
  bytes = bytes + #text
  for i = 1, #text, 61 do h = (h * 31 + byte(text, i)) % 1000000007 end
  for _, u in ipairs(back.users) do
    for _, o in ipairs(u.orders) do
      if o.paid then paid = paid + 1 end
      ordersum = ordersum + floor(o.total * 100 + 0.5)
    end
  end
end

io.write(fmt("documents %d bytes %d paid orders %d\n", ndocs, bytes, paid))
io.write(fmt("checksum %d %d %d\n", bytes, h, ordersum))
