-- Deduplication (docs/protocol.md): a key freed once its job leaves, the
-- owner hash checked, the options of ENQUEUE and SCHEDULE, who holds a
-- key, expired throttle keys trimmed, and a waiting debounced job pushed
-- back.

-- Frees the dedup key `key` of job `id` once it finished or is deleted,
-- unless it is a throttle key (which holds for its time), and only while
-- `id` owns it: its owner entry goes (simple and debounce keys are not in
-- the dedup set). `k` names the keys (dedup_owner).
local function release_dedup(k, id, key, mode)
  if key and mode ~= 'throttle' and redis.call('HGET', k.dedup_owner, key) == id then
    redis.call('HDEL', k.dedup_owner, key)
  end
end

-- Checks the owner hash's type before a command's first write when it may
-- free a key: `keys` holds one value per job, truthy when that job's key
-- may be freed (its dedup field, or whether it is debounced).
local function expect_owner_type(k, keys)
  for _, key in pairs(keys) do
    if key then
      expect_type(k.dedup_owner, 'hash')
      return
    end
  end
end

-- The dedup keys the jobs of `doomed` (lists of ids) carry, read before a
-- command deletes them: {id=, key=, mode=} per job with one, the owner
-- hash's type checked. Reads nothing when no job holds a key (no owners).
local function deleted_dedup_keys(k, doomed)
  local held = {}
  if redis.call('EXISTS', k.dedup_owner) == 0 then
    return held
  end
  for _, ids in ipairs(doomed) do
    for _, id in ipairs(ids) do
      local job = redis.call('HMGET', job_key(id), 'dedup', 'dedup_mode')
      if job[1] then
        held[#held + 1] = {id = id, key = job[1], mode = job[2]}
      end
    end
  end
  expect_type(k.dedup_owner, 'hash')
  return held
end

-- The dedup options of ENQUEUE and SCHEDULE (`opts` as options() read
-- them) on `job`: its key, mode and the mode's ms. DEDUP_FOR and DEBOUNCE
-- exclude each other, and each needs DEDUP.
local function dedup_options(job, opts)
  if opts.DEDUP_FOR and opts.DEBOUNCE then
    refuse('SYNTAX DEDUP_FOR and DEBOUNCE exclude each other')
  end
  if not opts.DEDUP then
    if opts.DEDUP_FOR then
      refuse('SYNTAX DEDUP_FOR needs DEDUP')
    elseif opts.DEBOUNCE then
      refuse('SYNTAX DEBOUNCE needs DEDUP')
    end
    return
  end
  job.dedup = opts.DEDUP
  if opts.DEDUP_FOR then
    job.dedup_mode, job.dedup_ms = 'throttle', opts.DEDUP_FOR
  elseif opts.DEBOUNCE then
    job.dedup_mode, job.dedup_ms = 'debounce', opts.DEBOUNCE
    job.run_at = function(now) return now + opts.DEBOUNCE end
  else
    job.dedup_mode = 'simple'
  end
end

-- Whether deduplication key `key` is held (server clock `now`): held when
-- it has an owner entry, unless it is a member of the dedup set (a throttle
-- key) scored <= now. Returns the holder's id (nil when not held) and true
-- when the key is an expired throttle entry not yet removed. The HGET
-- checks the owner hash's type, the ZSCORE (only for a key with an owner)
-- the dedup set's.
local function dedup_holder(k, key, now)
  local owner = redis.call('HGET', k.dedup_owner, key)
  if not owner then
    return nil, false
  end
  local score = redis.call('ZSCORE', k.dedup, key)
  if score and tonumber(score) <= now then
    return nil, true
  end
  return owner, false
end

-- Removes at most TRIM_PER_TRANSITION expired throttle keys (score <= now),
-- oldest first, with their owners: key expiry on the server clock,
-- amortised. The ZRANGE checks the dedup set's type.
local function trim_dedup(k, now)
  local expired = redis.call('ZRANGE', k.dedup, '-inf', int_str(now), 'BYSCORE', 'LIMIT', 0,
    TRIM_PER_TRANSITION)
  if #expired > 0 then
    redis.call('ZREM', k.dedup, unpack(expired))
    redis.call('HDEL', k.dedup_owner, unpack(expired))
  end
end

-- A debounced job that still waits (`state`): its payload replaced, its
-- run-at pushed to now + the request's ms, back in the schedule set.
local function debounce(k, conf, id, state, group, job, now)
  local run_at = int_str(now + job.dedup_ms)
  if state == 'pending' then
    leave_pending(k, conf, id, group)
  end
  redis.call('ZADD', k.schedule, run_at, id)
  redis.call('HSET', job_key(id), 'state', 'scheduled', 'payload', job.payload, 'run_at', run_at)
  emit(k.events, conf.events_max, 'debounced', 'id', id, 'key', job.dedup, 'run_at', run_at)
  signal(k.signal, run_at)
  return {id, 3}
end
