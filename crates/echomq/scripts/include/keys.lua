-- Keys: a job's hash and its logs, the queue's fixed keys the call's KEYS
-- do not name, and the check of a key's type before a command's first
-- write.

-- A job's hash. The batch loops write `job_prefix .. id` out: a call
-- a job costs a batch more than the concatenation.
local function job_key(id)
  return job_prefix .. id
end

local function logs_key(id)
  return base .. ':logs:' .. id
end

-- A fixed key of the queue that the call's KEYS do not name (the logs
-- mark's check): `<base>:<name>`.
local function queue_key(name)
  return base .. ':' .. name
end

-- The keys this call found absent or of the type it expects, each with
-- that type: no call writes a key as another type, so a key checked once
-- stays right for the rest of the call (a combined call's claim skips the
-- keys its completions checked). Set by begin_call.
local typed

-- Refuses with WRONGTYPE unless key is absent or of the given type; called
-- before a script's first write so a refused command writes nothing.
local function expect_type(key, want)
  if typed[key] == want then
    return
  end
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= want then
    refuse('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  typed[key] = want
end
