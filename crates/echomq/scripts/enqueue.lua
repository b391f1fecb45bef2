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
-- Errors: BADARG queue|id|payload|priority|attempts, SYNTAX, WRONGTYPE
-- Events: enqueued

local function main()
  local job = {id = id_arg(ARGV[1], true), payload = text_arg(ARGV[2], 'payload')}
  local opts = options(3, {
    PRIORITY = function(v) return int_arg(v, 'priority', 0, MAX_PRIORITY) end,
    ATTEMPTS = function(v) return int_arg(v, 'attempts', 1) end,
  })
  job.priority = opts.PRIORITY or 0
  job.attempts = opts.ATTEMPTS or DEFAULT_MAX_ATTEMPTS

  return enqueue_checked({id = KEYS[2], seq = KEYS[3], pending = KEYS[4], meta = KEYS[5],
    events = KEYS[6], signal = KEYS[7]}, {job})
end
