-- OUTCOME: reads a job's outcome (docs/protocol.md, "Outcome waits"). A
-- finished or absent job writes nothing; an unfinished one gets its
-- `waited` field and the queue its `waited` mark, each only when not 1.
-- KEYS[1] base
-- KEYS[2] meta
-- ARGV[1] id
-- Reply: [completed, result] (result '' when none), [dead, error, failures],
--   [cancelled]; [state] when unfinished; nil when absent
-- Errors: BADARG queue|id, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local id = id_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end
  local key = job_key(id)
  local f = redis.call('HMGET', key, 'state', 'result', 'error', 'failures', 'waited')
  local state = f[1]
  if not state then
    return false
  end
  if state == 'completed' then
    return {state, f[2] or ''}
  elseif state == 'dead' then
    return {state, f[3] or '', tonumber(f[4]) or 0}
  elseif state == 'cancelled' then
    return {state}
  end
  -- Unfinished: both types are known before the first write.
  local marked = redis.call('HGET', meta_key, 'waited')
  if f[5] ~= '1' then
    redis.call('HSET', key, 'waited', '1')
  end
  if marked ~= '1' then
    redis.call('HSET', meta_key, 'waited', '1')
  end
  return {state}
end
