-- REQUEUE: a scheduled or active job -> pending now. An active job's lease
-- is voided (its token no longer fences) and its id is published on the
-- cancel channel so the old handler stops; a cancellation request is cleared.
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] schedule
-- KEYS[4] pending
-- KEYS[5] active
-- KEYS[6] meta
-- KEYS[7] events
-- KEYS[8] signal
-- KEYS[9] groups
-- KEYS[10] groups_wait
-- KEYS[11] group_index
-- KEYS[12] fifo
-- ARGV[1] id
-- Reply: OK
-- Errors: NOJOB, BADSTATE, BADARG queue|id, SYNTAX, WRONGTYPE
-- Events: requeued

local function main()
  local id = id_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end

  local conf = settings(KEYS[6])
  local k = {seq = KEYS[2], pending = KEYS[4], meta = KEYS[6], events = KEYS[7], signal = KEYS[8],
    groups = KEYS[9], groups_wait = KEYS[10], group_index = KEYS[11], fifo = KEYS[12]}
  local key, from, state, priority, group = pending_again(k, conf, id, {scheduled = KEYS[3], active = KEYS[5]})
  local now = now_ms()
  redis.call('ZREM', from, id)
  if group and state == 'active' then
    leave_active(k, conf, group, now)
  end
  push_pending(k, conf, id, priority, group, now)
  redis.call('HSET', key, 'state', 'pending', 'run_at', int_str(now))
  redis.call('HDEL', key, 'cancel')
  if state == 'active' then
    redis.call('SPUBLISH', base .. ':cancel', id)
  end
  emit(KEYS[7], conf.events_max, 'requeued', 'id', id)
  signal(KEYS[8], 0)
  return {ok = 'OK'}
end
