-- The prelude's first file. The prelude is the helpers every script may
-- use: the files of include/ joined in the order PRELUDE_FILES lists them
-- (scripts.rs), each script sent only the helpers it uses, and wire 4's
-- function library defining each once at its top. Each script's body
-- defines `local function main()`, run under pcall by include/epilogue.lua,
-- so a refusal raised anywhere returns as a clean error reply.
--
-- This file: the call's base key, refusals, the checks of a command's
-- arguments and options, integers out, and the server clock.

-- The protocol's constants (MAX_INT, PENDING_BAND, DEFAULT_*, …) are not
-- written here: the client generates their `local NAME = value` lines from
-- echomq-protocol's arg.rs and puts the ones a script uses before it.

-- The queue's base key, `base_key`, and its jobs' key prefix (set by
-- begin_call).
local base
local job_prefix

-- Milliseconds in a second (TIME answers seconds and microseconds).
local MS_PER_S = 1000

-- Arguments per redis.call when a long list is split (Lua's unpack takes
-- at most about 8000 values).
local UNPACK_CHUNK = 1000

-- Refuses the command with an error reply whose first word is the code.
local function refuse(message)
  error({err = message})
end

-- Runs f(...) under pcall: its reply, or its error as an error reply
-- whose first word is its code (a refusal raised anywhere, and any error
-- of a redis.call, which pcall hands back as its message string).
-- Anything else is a bug: reported as ERR.
local function guarded(f, ...)
  local ok, reply = pcall(f, ...)
  if ok then
    return reply
  end
  if type(reply) == 'table' and reply.err then
    return reply
  end
  reply = tostring(reply)
  if not string.find(reply, '^[A-Z][A-Z_]*$') and not string.find(reply, '^[A-Z][A-Z_]* ') then
    reply = 'ERR ' .. reply
  end
  return {err = reply}
end

-- A base-10 integer argument in [min, max] (max defaults to 2^53-1).
local function int_arg(value, name, min, max)
  if value == nil or #value == 0 or #value > MAX_INT_DIGITS or not string.find(value, '^%d+$') then
    refuse('BADARG ' .. name)
  end
  local n = tonumber(value)
  if n > (max or MAX_INT) or n < (min or 0) then
    refuse('BADARG ' .. name)
  end
  return n
end

-- int_arg of a bulk call's repeating argument (priorities, attempts):
-- `seen` keeps each text's number, so each distinct text is checked once.
local function repeated_int_arg(seen, value, name, min, max)
  local n = seen[value]
  if not n then
    n = int_arg(value, name, min, max)
    seen[value] = n
  end
  return n
end

-- An absolute run-at in unix ms, or '+ms': relative to the server's clock.
-- Returns a function of now that gives the run-at, so the argument is
-- checked before the clock is read.
local function run_at_arg(value)
  if value ~= nil and string.sub(value, 1, 1) == '+' then
    local delay = int_arg(string.sub(value, 2), 'run_at')
    return function(now) return now + delay end
  end
  local at = int_arg(value, 'run_at')
  return function() return at end
end

-- The bytes the job-id rule refuses in ids, groups and dedup keys:
-- whitespace, braces, and control characters (%c: 0x00-0x1F, NUL
-- included, and 0x7F), as echomq_protocol::name::refused_in_id.
local ID_REFUSED = '[%s{}%c]'

-- A job id: 1-256 bytes, none of them ID_REFUSED ('*' only where allowed).
local function id_arg(value, allow_generate)
  if value == '*' and allow_generate then
    return value
  end
  if value == nil or #value == 0 or #value > MAX_JOB_ID or string.find(value, ID_REFUSED) then
    refuse('BADARG id')
  end
  if value == '*' and not allow_generate then
    refuse('BADARG id')
  end
  return value
end

-- A deduplication key: the job-id rule, and not '*'; refused as BADARG name.
local function key_arg(value, name)
  if value == nil or #value == 0 or #value > MAX_JOB_ID or string.find(value, ID_REFUSED) or value == '*' then
    refuse('BADARG ' .. name)
  end
  return value
end

-- A required non-option argument (payload, error text, worker name).
local function text_arg(value, name)
  if value == nil then
    refuse('BADARG ' .. name)
  end
  return value
end

-- Integers go out as integers, never as tostring() of a double.
local function int_str(n)
  return string.format('%d', n)
end

-- An integer as a redis.call argument: the number itself where the
-- server writes it out as int_str would (a whole number of at most 15
-- digits; Redis 7.0 writes a larger one in exponent form), else its
-- int_str text. A number costs the call no formatting.
local function int_out(n)
  if n % 1 == 0 and n > -1e15 and n < 1e15 then
    return n
  end
  return int_str(n)
end

-- The server clock in ms: read at the call's first use and the same for
-- the rest of it, as the module's (clock.rs). Valkey freezes TIME in a
-- script; Redis 7.0 does not, and a call that read it twice (DRAIN, set by
-- set) scored its decisions a ms apart where the module scores them
-- alike. now_ms(true) forgets the reading: begin_call, at each call's
-- start.
local now_ms
do
  local read_ms = nil
  now_ms = function(forget)
    if forget then
      read_ms = nil
    elseif not read_ms then
      local t = redis.call('TIME')
      read_ms = tonumber(t[1]) * MS_PER_S + math.floor(tonumber(t[2]) / MS_PER_S)
    end
    return read_ms
  end
end

-- Parses the options that follow a command's fixed arguments: `spec` maps
-- an upper-case option word to 'flag' (no value), a function that takes
-- the value, or {rest = f}: f takes the list of every argument after the
-- word (at least one), which ends the options. Returns a table of the
-- options found.
local function options(first, spec)
  local found = {}
  local i = first
  while i <= #ARGV do
    local word = string.upper(ARGV[i])
    local kind = spec[word]
    if kind == nil then
      refuse('SYNTAX unknown option ' .. ARGV[i])
    elseif kind == 'flag' then
      found[word] = true
      i = i + 1
    elseif type(kind) == 'table' then
      found[word] = kind.rest({unpack(ARGV, i + 1)})
      i = #ARGV + 1
    else
      found[word] = kind(ARGV[i + 1])
      i = i + 2
    end
  end
  return found
end

-- A list of delays (ms, each >= 0, at least one), refused as BADARG name.
local function delays_arg(values, name)
  if #values == 0 then
    refuse('BADARG ' .. name)
  end
  for i, v in ipairs(values) do
    values[i] = int_arg(v, name)
  end
  return values
end

-- LIMIT's and GROUP.LIMIT's options from ARGV `first` on: MAX n with PER
-- ms (each >= 1), or OFF. MAX and PER go together; either excludes OFF.
local function limit_options(first)
  local opts = options(first, {
    MAX = function(v) return int_arg(v, 'max', 1) end,
    PER = function(v) return int_arg(v, 'per', 1) end,
    OFF = 'flag',
  })
  if opts.OFF and (opts.MAX or opts.PER) then
    refuse('SYNTAX MAX and OFF exclude each other')
  end
  if opts.MAX and not opts.PER then
    refuse('BADARG per')
  end
  if opts.PER and not opts.MAX then
    refuse('BADARG max')
  end
  return opts
end
