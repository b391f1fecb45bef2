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
  local conf = settings(KEYS[2])
  expect_type(KEYS[3], 'stream')
  expect_type(KEYS[4], 'zset')
  redis.call('HSET', KEYS[2], 'paused', '0')
  emit(KEYS[3], conf.events_max, 'resumed')
  signal(KEYS[4], 0)
  return {ok = 'OK'}
end
