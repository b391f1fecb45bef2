-- Shared helpers, prepended to every script. Each script's body becomes
-- `local function main()`, run under pcall by include/epilogue.lua, so a
-- refusal raised anywhere returns as a clean error reply.

local base = KEYS[1]
local MAX_INT = 9007199254740991
local BAND = 17592186044416 -- 2^44: priority band width of a pending score

-- Refuses the command with an error reply whose first word is the code.
local function refuse(message)
  error({err = message})
end

-- A base-10 integer argument in [min, max] (max defaults to 2^53-1).
local function int_arg(value, name, min, max)
  if value == nil or #value == 0 or #value > 16 or not string.find(value, '^%d+$') then
    refuse('BADARG ' .. name)
  end
  local n = tonumber(value)
  if n > (max or MAX_INT) or n < (min or 0) then
    refuse('BADARG ' .. name)
  end
  return n
end

-- A job id: 1-256 bytes, no whitespace, no braces ('*' only where allowed).
local function id_arg(value, allow_generate)
  if value == nil or #value == 0 or #value > 256 or string.find(value, '[%s{}]') then
    refuse('BADARG id')
  end
  if value == '*' and not allow_generate then
    refuse('BADARG id')
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

-- The server clock in ms, read once per script (TIME is frozen in a script).
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function job_key(id)
  return base .. ':job:' .. id
end

local function logs_key(id)
  return base .. ':logs:' .. id
end

-- Refuses with WRONGTYPE unless key is absent or of the given type; called
-- before a script's first write so a refused command writes nothing.
local function expect_type(key, want)
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= want then
    refuse('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
end

-- Queue settings from the meta hash, with their protocol defaults.
local function settings(meta)
  local v = redis.call('HMGET', meta, 'paused', 'keep_completed', 'keep_dead', 'keep_cancelled', 'events_max')
  return {
    paused = v[1] == '1',
    keep_completed = tonumber(v[2] or 1000),
    keep_dead = tonumber(v[3] or 10000),
    keep_cancelled = tonumber(v[4] or 10000),
    events_max = tonumber(v[5] or 10000),
  }
end

-- Appends one lifecycle event (events_max 0 turns them off).
local function emit(events, max, ...)
  if max > 0 then
    redis.call('XADD', events, 'MAXLEN', '~', max, '*', ...)
  end
end

-- The pending score of a job: priority*2^44 + (seq mod 2^44), always a
-- fresh seq, so a job joins the back of its priority band.
local function push_pending(pending, seq_key, id, priority)
  local seq = redis.call('INCR', seq_key)
  redis.call('ZADD', pending, int_str(priority * BAND + (seq % BAND)), id)
end

-- Keeps at most `keep` members of a finished set: deletes the oldest (at
-- most 100 per call, amortised) with their hashes and logs.
local function trim_finished(set, keep)
  local excess = redis.call('ZCARD', set) - keep
  if excess <= 0 then
    return
  end
  if excess > 100 then
    excess = 100
  end
  local ids = redis.call('ZRANGE', set, 0, excess - 1)
  for _, old in ipairs(ids) do
    redis.call('DEL', job_key(old), logs_key(old))
  end
  redis.call('ZREMRANGEBYRANK', set, 0, excess - 1)
end

-- Wakes an idle worker: a marker on the signal set, scored by when work is due.
local function signal(key, due_ms)
  redis.call('ZADD', key, 'LT', due_ms, 'wake')
end

-- Moves due scheduled jobs (score <= now) to pending, oldest first, at most
-- `limit`; each takes a fresh seq. Returns how many moved.
local function promote_due(schedule, pending, seq_key, events, events_max, now, limit)
  local due = redis.call('ZRANGE', schedule, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
  for _, id in ipairs(due) do
    local key = job_key(id)
    local priority = tonumber(redis.call('HGET', key, 'priority') or 0)
    push_pending(pending, seq_key, id, priority)
    redis.call('HSET', key, 'state', 'pending')
    emit(events, events_max, 'event', 'promoted', 'id', id)
  end
  if #due > 0 then
    redis.call('ZREM', schedule, unpack(due))
  end
  return #due
end

-- The fencing check of every verb of the worker in hand: the job must be
-- active and its claims must equal the caller's token. Returns the job key.
local function fenced(id, token)
  local key = job_key(id)
  local found = redis.call('HMGET', key, 'state', 'claims')
  if found[1] ~= 'active' or tonumber(found[2]) ~= token then
    refuse('NOTACTIVE')
  end
  return key
end

-- Parses the options that follow a command's fixed arguments: `spec` maps
-- an upper-case option word to 'flag' (no value) or a function that takes
-- the value. Returns a table of the options found.
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
    else
      found[word] = kind(ARGV[i + 1])
      i = i + 2
    end
  end
  return found
end
