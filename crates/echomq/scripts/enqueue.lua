-- ENQUEUE: a new job -> pending (also while paused). Idempotent by id: an id
-- that exists in any state changes nothing.
-- KEYS[1] base
-- KEYS[2] id
-- KEYS[3] seq
-- KEYS[4] pending
-- KEYS[5] meta
-- KEYS[6] events
-- KEYS[7] signal
-- ARGV[1] id, or '*' for the next free counter value
-- ARGV[2] payload
-- ARGV[3..] options: PRIORITY p (0-255, default 0), ATTEMPTS n (>= 1, default 3)
-- Reply: [id, 1] created, [id, 0] already existed
-- Errors: BADARG id|payload|priority|attempts, SYNTAX, WRONGTYPE
-- Events: enqueued

local function main()
  local id = id_arg(ARGV[1], true)
  local payload = text_arg(ARGV[2], 'payload')
  local priority, attempts = 0, 3
  local i = 3
  while i <= #ARGV do
    local option = string.upper(ARGV[i])
    if option == 'PRIORITY' then
      priority = int_arg(ARGV[i + 1], 'priority', 0, 255)
    elseif option == 'ATTEMPTS' then
      attempts = int_arg(ARGV[i + 1], 'attempts', 1)
    else
      refuse('SYNTAX unknown option ' .. ARGV[i])
    end
    i = i + 2
  end

  local conf = settings(KEYS[5])
  expect_type(KEYS[2], 'string')
  expect_type(KEYS[3], 'string')
  expect_type(KEYS[4], 'zset')
  expect_type(KEYS[6], 'stream')
  expect_type(KEYS[7], 'zset')
  if id == '*' then
    repeat
      id = int_str(redis.call('INCR', KEYS[2]))
    until redis.call('EXISTS', job_key(id)) == 0
  else
    local found = redis.call('TYPE', job_key(id))['ok']
    if found == 'hash' then
      return {id, 0}
    elseif found ~= 'none' then
      refuse('WRONGTYPE Operation against a key holding the wrong kind of value')
    end
  end

  local now = int_str(now_ms())
  push_pending(KEYS[4], KEYS[3], id, priority)
  redis.call('HSET', job_key(id), 'state', 'pending', 'payload', payload,
    'priority', int_str(priority), 'max_attempts', int_str(attempts), 'claims', 0,
    'failures', 0, 'stalls', 0, 'created_at', now, 'run_at', now)
  signal(KEYS[7], 0)
  emit(KEYS[6], conf.events_max, 'event', 'enqueued', 'id', id)
  return {id, 1}
end
