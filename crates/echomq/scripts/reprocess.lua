-- REPROCESS: a completed, dead or cancelled job -> pending, or blocked
-- (scored for its check-up) when, on a flows queue, its deps_left is above
-- 0; failures, stalls, error, result, progress, cancel and reason are
-- cleared (claims is kept, so the next CLAIM issues a larger token).
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] pending
-- KEYS[4] completed
-- KEYS[5] dead
-- KEYS[6] cancelled
-- KEYS[7] meta
-- KEYS[8] events
-- KEYS[9] signal
-- KEYS[10] groups
-- KEYS[11] groups_wait
-- KEYS[12] group_index
-- KEYS[13] fifo
-- KEYS[14] deadlines
-- KEYS[15] blocked
-- ARGV[1] id
-- Reply: OK
-- Errors: NOJOB, BADSTATE, BADARG queue|id, SYNTAX, WRONGTYPE
-- Events: reprocessed, then blocked (deps) for a job that blocks

local function main()
  local id = id_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end
  local conf = settings(meta_key)
  local from = {completed = completed_key, dead = dead_key, cancelled = cancelled_key}
  local k = {seq = seq_key, pending = pending_key, meta = meta_key, events = events_key,
    signal = signal_key, groups = groups_key, groups_wait = groups_wait_key,
    group_index = group_index_key, fifo = fifo_key, deadlines = deadlines_key}
  local key, set, _, priority, group = pending_again(k, conf, id, from)
  -- On a flows queue, a job with dependencies still `wait` goes back to
  -- blocked (docs/protocol.md, "The state blocked").
  local left = conf.flows and tonumber(redis.call('HGET', key, 'deps_left')) or 0
  if left > 0 then
    expect_type(blocked_key, 'zset')
  end
  local now = now_ms()
  redis.call('ZREM', set, id)
  if left == 0 then
    push_pending(k, conf, id, priority, group, now)
  end
  keep_deadline(k, conf, id)
  redis.call('HDEL', key, 'failures', 'stalls', 'error', 'result', 'progress', 'cancel', 'finished_at',
    'reason')
  redis.call('HSET', key, 'state', left > 0 and 'blocked' or 'pending', 'run_at', int_str(now))
  emit(events_key, conf.events_max, 'reprocessed', 'id', id)
  if left > 0 then
    redis.call('ZADD', blocked_key, int_str(now + FLOW_CHECKUP_MS), id)
    emit(events_key, conf.events_max, 'blocked', 'id', id, 'deps', int_str(left))
  else
    signal(signal_key, 0)
  end
  return {ok = 'OK'}
end
