-- bcalloc.lua: which lines of a Lua chunk have bytecode that can allocate.
--
--   local B = require("bcalloc")
--   local lines = B.chunk_lines(loadfile("app.lua"))  -- lines[12] = true: can
--   B.can_alloc("MOV")                                  -- false
--
-- The same rule as the agent's (can_alloc() in src/agent/mp_stack.c): an
-- instruction can allocate when it makes an object (TNEW TDUP FNEW CAT),
-- stores into a table (a new key rehashes it), calls (a function, an
-- iterator, a metamethod: arithmetic, comparison of any two values,
-- indexing, length, concatenation) or copies varargs (the stack may grow).
-- Moves, constants, upvalues, tests of truth or of a constant, jumps,
-- loops and returns cannot. A line can allocate when one of its
-- instructions can.

local M = {}

local jutil = require("jit.util")
local bcnames = require("jit.vmdef").bcnames

-- The opcodes that cannot allocate; every other can.
local NEVER = {}
for op in ([[ISEQS ISNES ISEQN ISNEN ISEQP ISNEP ISTC ISFC IST ISF ISTYPE
  ISNUM MOV NOT KSTR KCDATA KSHORT KNUM KPRI KNIL UGET USETV USETS USETN USETP
  UCLO ISNEXT RETM RET RET0 RET1 FORI JFORI FORL IFORL JFORL ITERL IITERL
  JITERL LOOP ILOOP JLOOP JMP FUNCF IFUNCF JFUNCF FUNCV IFUNCV JFUNCV FUNCC
  FUNCCW]]):gmatch("%u+%d*") do
  NEVER[op] = true
end

-- Whether opcode name op can allocate.
function M.can_alloc(op)
  return not NEVER[op]
end

-- The name of the opcode of instruction ins.
local function opname(ins)
  local op = ins % 256
  return (bcnames:sub(op * 6 + 1, op * 6 + 6):gsub(" +$", ""))
end
M.opname = opname

-- Add the lines of prototype f and of the prototypes it defines to out:
-- out[line] = true when an instruction of the line can allocate, false
-- when the line has instructions and none can. ops[line][op] = true.
local function walk(f, out, ops)
  local pc = 1
  while true do
    local ins = jutil.funcbc(f, pc)
    if not ins then break end
    local line = jutil.funcinfo(f, pc).currentline
    local op = opname(ins)
    if line and line > 0 then
      if M.can_alloc(op) then out[line] = true
      elseif out[line] == nil then out[line] = false end
      ops[line] = ops[line] or {}
      ops[line][op] = true
    end
    pc = pc + 1
  end
  local i = -1
  while true do
    local k = jutil.funck(f, i)
    if k == nil then break end
    if type(k) == "proto" then walk(k, out, ops) end
    i = i - 1
  end
end

-- The lines of the chunk of function f (its main function, or any
-- function of it: the prototypes below it are walked) that can allocate;
-- and the opcodes of each line.
function M.chunk_lines(f)
  local out, ops = {}, {}
  walk(f, out, ops)
  return out, ops
end

return M
