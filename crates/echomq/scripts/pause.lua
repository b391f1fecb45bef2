-- PAUSE: claims hand out nothing until RESUME; active jobs run on.
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- ARGV: none
-- Reply: OK
-- Errors: BADARG queue, SYNTAX, WRONGTYPE
-- Events: paused

local function main()
  if #ARGV > 0 then
    refuse('SYNTAX unknown option ' .. ARGV[1])
  end
  local conf = settings(KEYS[2])
  expect_type(KEYS[3], 'stream')
  redis.call('HSET', KEYS[2], 'paused', '1')
  emit(KEYS[3], conf.events_max, 'paused')
  return {ok = 'OK'}
end
