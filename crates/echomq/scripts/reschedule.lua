-- RESCHEDULE: moves a scheduled job's run-at. A past run-at stays
-- scheduled until the next PROMOTE or CLAIM.
-- KEYS[1] base
-- KEYS[2] schedule
-- KEYS[3] meta
-- KEYS[4] events
-- KEYS[5] signal
-- ARGV[1] id
-- ARGV[2] run_at (absolute, unix ms)
-- Reply: OK
-- Errors: NOJOB, BADSTATE, BADARG queue|id|run_at, SYNTAX, WRONGTYPE
-- Events: rescheduled (run_at)

local function main()
  local id = id_arg(ARGV[1])
  local run_at = int_str(int_arg(ARGV[2], 'run_at'))
  if #ARGV > 2 then
    refuse('SYNTAX unknown option ' .. ARGV[3])
  end

  local conf = settings(meta_key)
  local key = job_key(id)
  local state = redis.call('HGET', key, 'state')
  if not state then
    refuse('NOJOB')
  elseif state ~= 'scheduled' then
    refuse('BADSTATE ' .. state)
  end
  expect_type(schedule_key, 'zset')
  expect_type(events_key, 'stream')
  expect_type(signal_key, 'zset')
  redis.call('ZADD', schedule_key, run_at, id)
  redis.call('HSET', key, 'run_at', run_at)
  emit(events_key, conf.events_max, 'rescheduled', 'id', id, 'run_at', run_at)
  signal(signal_key, run_at)
  return {ok = 'OK'}
end
