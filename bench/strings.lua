-- strings.lua: string-building workload (ljmemprof benchmark).
--
-- usage: luajit bench/strings.lua [ROUNDS]     (default 400)
--
-- Each round renders a made-up access log three ways: piecewise `..`
-- concatenation, string.format, and a buffer table joined by table.concat;
-- then slices and rescans the result with string.sub, string.rep, gsub and
-- gmatch. Almost every allocation is a new interned string (plus the
-- buffer tables), attributed to Lua lines, builtins and traces alike.
-- Prints a checksum over the lengths and bytes produced.

local rounds = tonumber(arg and arg[1]) or 400
local LINES = 2000

local byte, sub, rep, fmt = string.byte, string.sub, string.rep, string.format
local concat = table.concat

-- Deterministic pseudo-random numbers (a 31-bit LCG), the same everywhere.
local seed = 12345
local function rand(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n
end

local methods = { "GET", "POST", "PUT", "DELETE", "HEAD" }
local paths = { "/", "/index.html", "/api/v1/users", "/api/v1/orders",
                "/static/app.js", "/static/site.css", "/login", "/search" }

-- Cheap rolling hash of s, so the checksum depends on every byte.
local function hash(h, s)
  for i = 1, #s, 7 do h = (h * 31 + byte(s, i)) % 1000000007 end
  return h
end

-- One log line built with `..` only.
local function line_concat(i)
  local s = "10." .. rand(256) .. "." .. rand(256) .. "." .. rand(256)
  s = s .. " - - [" .. (i % 28 + 1) .. "/Mar/2024:" .. rand(24) .. ":"
  s = s .. rand(60) .. ":" .. rand(60) .. "] \"" .. methods[rand(5) + 1]
  s = s .. " " .. paths[rand(8) + 1] .. "?id=" .. rand(100000)
  return s .. " HTTP/1.1\" " .. (200 + rand(4) * 100) .. " " .. rand(65536)
end

-- The same shape built with one string.format call.
local function line_format(i)
  return fmt("10.%d.%d.%d - - [%02d/Mar/2024:%02d:%02d:%02d] \"%s %s?id=%d HTTP/1.1\" %d %d",
    rand(256), rand(256), rand(256), i % 28 + 1, rand(24), rand(60), rand(60),
    methods[rand(5) + 1], paths[rand(8) + 1], rand(100000),
    200 + rand(4) * 100, rand(65536))
end

-- The same shape collected in a buffer table and joined.
local function line_buffer(i)
  local b = { "10.", rand(256), ".", rand(256), ".", rand(256), " - - [",
              i % 28 + 1, "/Mar/2024:", rand(24), ":", rand(60), ":",
              rand(60), "] \"", methods[rand(5) + 1], " ",
              paths[rand(8) + 1], "?id=", rand(100000), " HTTP/1.1\" ",
              200 + rand(4) * 100, " ", rand(65536) }
  return concat(b)
end

local total, h = 0, 0
for r = 1, rounds do
  local doc = {}
  for i = 1, LINES do
    local k = i % 3
    if k == 0 then doc[i] = line_concat(i)
    elseif k == 1 then doc[i] = line_format(i)
    else doc[i] = line_buffer(i) end
  end
  local text = concat(doc, "\n")
  total = total + #text
  h = hash(h, text)

  -- Rescan: count status codes, rewrite addresses, cut fields out.
  local status = {}
  for code in text:gmatch("\" (%d%d%d) ") do
    status[code] = (status[code] or 0) + 1
  end
  for _, code in ipairs({ "200", "300", "400", "500" }) do
    total = total + (status[code] or 0)
  end
  local masked = text:gsub("10%.(%d+)%.%d+%.%d+", "10.%1.x.x")
  total = total + #masked
  for i = 1, #doc, 5 do
    local l = doc[i]
    local cut = sub(l, 1, 12) .. rep("-", i % 9) .. sub(l, -8)
    h = hash(h, cut)
    total = total + #cut
  end
  if r % 10 == 0 then total = total + #tostring(total) end
end

io.write(fmt("rounds %d lines %d\nchecksum %d %d\n", rounds, LINES, total, h))
