-- RESUME: claims hand out jobs again; idle workers are woken.
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- KEYS[4] signal
-- ARGV: none
-- Reply: OK
-- Errors: BADARG queue, SYNTAX, WRONGTYPE
-- Events: resumed

local function main()
  if #ARGV > 0 then
    refuse('SYNTAX unknown option ' .. ARGV[1])
  end
  local conf = settings(meta_key)
  expect_type(events_key, 'stream')
  expect_type(signal_key, 'zset')
  redis.call('HSET', meta_key, 'paused', '0')
  emit(events_key, conf.events_max, 'resumed')
  signal(signal_key, 0)
  return {ok = 'OK'}
end
