-- UPDATE: replaces a job's payload, in any state.
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- ARGV[1] id
-- ARGV[2] payload
-- Reply: OK
-- Errors: NOJOB, BADARG queue|id|payload, SYNTAX, WRONGTYPE
-- Events: updated

local function main()
  local id = id_arg(ARGV[1])
  local payload = text_arg(ARGV[2], 'payload')
  if #ARGV > 2 then
    refuse('SYNTAX unknown option ' .. ARGV[3])
  end
  local conf = settings(meta_key)
  local key = job_key(id)
  if not redis.call('HGET', key, 'state') then
    refuse('NOJOB')
  end
  expect_type(events_key, 'stream')
  redis.call('HSET', key, 'payload', payload)
  emit(events_key, conf.events_max, 'updated', 'id', id)
  return {ok = 'OK'}
end
