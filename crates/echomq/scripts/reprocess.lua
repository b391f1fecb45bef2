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
  local key, set, _, priority = pending_again(id, from, KEYS[2], KEYS[3], KEYS[8], KEYS[9])
  redis.call('ZREM', set, id)
  push_pending(KEYS[3], KEYS[2], id, priority)
  redis.call('HDEL', key, 'failures', 'stalls', 'error', 'result', 'progress', 'cancel', 'finished_at')
  redis.call('HSET', key, 'state', 'pending', 'run_at', int_str(now_ms()))
  emit(KEYS[8], conf.events_max, 'event', 'reprocessed', 'id', id)
  signal(KEYS[9], 0)
  return {ok = 'OK'}
end
