-- REPROCESS: a completed, dead or cancelled job -> pending; failures,
-- stalls, error, result, progress and cancel are cleared (claims is kept,
-- so the next CLAIM issues a larger token).
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
-- ARGV[1] id
-- Reply: OK
-- Errors: NOJOB, BADSTATE, BADARG queue|id, SYNTAX, WRONGTYPE
-- Events: reprocessed

local function main()
  local id = id_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end
  local conf = settings(KEYS[7])
  local from = {completed = KEYS[4], dead = KEYS[5], cancelled = KEYS[6]}
  local k = {seq = KEYS[2], pending = KEYS[3], meta = KEYS[7], events = KEYS[8], signal = KEYS[9],
    groups = KEYS[10], groups_wait = KEYS[11], group_index = KEYS[12], fifo = KEYS[13]}
  local key, set, _, priority, group = pending_again(k, conf, id, from)
  local now = now_ms()
  redis.call('ZREM', set, id)
  push_pending(k, conf, id, priority, group, now)
  redis.call('HDEL', key, 'failures', 'stalls', 'error', 'result', 'progress', 'cancel', 'finished_at')
  redis.call('HSET', key, 'state', 'pending', 'run_at', int_str(now))
  emit(KEYS[8], conf.events_max, 'reprocessed', 'id', id)
  signal(KEYS[9], 0)
  return {ok = 'OK'}
end
