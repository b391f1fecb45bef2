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
  local conf = settings(meta_key)
  expect_type(events_key, 'stream')
  redis.call('HSET', meta_key, 'paused', '1')
  emit(events_key, conf.events_max, 'paused')
  return {ok = 'OK'}
end
