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
-- KEYS[13] deadlines
-- ARGV[1] id
-- Reply: OK
-- Errors: NOJOB, BADSTATE, BADARG queue|id, SYNTAX, WRONGTYPE
-- Events: requeued

local function main()
  local id = id_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end

  local conf = settings(meta_key)
  local k = {seq = seq_key, pending = pending_key, meta = meta_key, events = events_key,
    signal = signal_key, groups = groups_key, groups_wait = groups_wait_key,
    group_index = group_index_key, fifo = fifo_key, deadlines = deadlines_key}
  local key, from, state, priority, group = pending_again(k, conf, id, {scheduled = schedule_key,
    active = active_key})
  local now = now_ms()
  redis.call('ZREM', from, id)
  if group and state == 'active' then
    leave_active(k, conf, group, now)
  end
  push_pending(k, conf, id, priority, group, now)
  keep_deadline(k, conf, id)
  redis.call('HSET', key, 'state', 'pending', 'run_at', int_str(now))
  redis.call('HDEL', key, 'cancel')
  if state == 'active' then
    redis.call('SPUBLISH', base .. ':cancel', id)
  end
  emit(events_key, conf.events_max, 'requeued', 'id', id)
  signal(signal_key, 0)
  return {ok = 'OK'}
end
