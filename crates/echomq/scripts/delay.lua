-- DELAY: the job in hand -> the schedule set at now+ms; not a failure, no
-- attempt used. Fenced by the token; clears a cancellation request. Under a
-- cap on active jobs, wakes a worker waiting for room when jobs are pending.
-- KEYS[1] base
-- KEYS[2] schedule
-- KEYS[3] pending
-- KEYS[4] active
-- KEYS[5] meta
-- KEYS[6] events
-- KEYS[7] signal
-- KEYS[8] groups
-- KEYS[9] groups_wait
-- KEYS[10] group_index
-- KEYS[11] fifo
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3] ms (>= 0)
-- Reply: OK
-- Errors: NOTACTIVE, BADARG queue|id|token|ms, SYNTAX, WRONGTYPE
-- Events: delayed (delay)

local function main()
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local delay = int_arg(ARGV[3], 'ms')
  if #ARGV > 3 then
    refuse('SYNTAX unknown option ' .. ARGV[4])
  end

  local conf = settings(KEYS[5])
  local key = fenced(id, token)
  expect_type(KEYS[2], 'zset')
  expect_type(KEYS[4], 'zset')
  expect_type(KEYS[6], 'stream')
  expect_type(KEYS[7], 'zset')
  expect_freed_types(conf, KEYS[3], KEYS[11], KEYS[7])
  local k = {pending = KEYS[3], signal = KEYS[7], groups = KEYS[8], groups_wait = KEYS[9], group_index = KEYS[10], fifo = KEYS[11]}
  local group = conf.groups and redis.call('HGET', key, 'group') or nil
  read_group(k, conf, group)
  local now = now_ms()
  local run_at = int_str(now + delay)
  redis.call('ZREM', KEYS[4], id)
  if group then
    leave_active(k, conf, group, now)
  end
  redis.call('ZADD', KEYS[2], run_at, id)
  redis.call('HSET', key, 'state', 'scheduled', 'run_at', run_at)
  redis.call('HDEL', key, 'cancel')
  emit(KEYS[6], conf.events_max, 'delayed', 'id', id, 'delay', int_str(delay))
  signal(KEYS[7], run_at)
  freed(conf, KEYS[3], KEYS[11], KEYS[7])
  return {ok = 'OK'}
end
