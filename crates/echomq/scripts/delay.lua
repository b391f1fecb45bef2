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
-- KEYS[12] deadlines
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

  local conf = settings(meta_key)
  local key = fenced(id, token)
  expect_type(schedule_key, 'zset')
  expect_type(active_key, 'zset')
  expect_type(events_key, 'stream')
  expect_type(signal_key, 'zset')
  expect_freed_types(conf, pending_key, fifo_key, signal_key)
  if conf.timed then
    expect_type(deadlines_key, 'zset')
  end
  local k = {pending = pending_key, signal = signal_key, groups = groups_key,
    groups_wait = groups_wait_key, group_index = group_index_key, fifo = fifo_key,
    deadlines = deadlines_key}
  local group = conf.groups and redis.call('HGET', key, 'group') or nil
  read_group(k, conf, group)
  local now = now_ms()
  local run_at = int_str(now + delay)
  redis.call('ZREM', active_key, id)
  if group then
    leave_active(k, conf, group, now)
  end
  redis.call('ZADD', schedule_key, run_at, id)
  keep_deadline(k, conf, id)
  redis.call('HSET', key, 'state', 'scheduled', 'run_at', run_at)
  redis.call('HDEL', key, 'cancel')
  emit(events_key, conf.events_max, 'delayed', 'id', id, 'delay', int_str(delay))
  signal(signal_key, run_at)
  freed(conf, pending_key, fifo_key, signal_key)
  return {ok = 'OK'}
end
