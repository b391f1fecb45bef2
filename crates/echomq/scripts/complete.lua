-- COMPLETE: active -> completed, fenced by the token; retention trims the
-- completed set to keep_completed (0 deletes the job at once).
-- KEYS[1] base
-- KEYS[2] active
-- KEYS[3] completed
-- KEYS[4] meta
-- KEYS[5] events
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3..] options: RESULT r
-- Reply: OK
-- Errors: NOTACTIVE (absent, not active, or stale token), BADARG id|token|result, SYNTAX, WRONGTYPE
-- Events: completed

local function main()
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local opts = options(3, {RESULT = function(v) return text_arg(v, 'result') end})

  local conf = settings(KEYS[4])
  local key = fenced(id, token)
  expect_type(KEYS[2], 'zset')
  expect_type(KEYS[3], 'zset')
  expect_type(KEYS[5], 'stream')
  local now = int_str(now_ms())
  redis.call('ZREM', KEYS[2], id)
  if opts.RESULT then
    redis.call('HSET', key, 'state', 'completed', 'finished_at', now, 'result', opts.RESULT)
  else
    redis.call('HSET', key, 'state', 'completed', 'finished_at', now)
  end
  redis.call('ZADD', KEYS[3], now, id)
  emit(KEYS[5], conf.events_max, 'event', 'completed', 'id', id)
  trim_finished(KEYS[3], conf.keep_completed)
  return {ok = 'OK'}
end
