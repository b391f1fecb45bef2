-- SCHEDULE: a new job -> the schedule set at run_at (-> pending at once
-- when run_at is already due). Idempotent by id, like ENQUEUE.
-- KEYS[1] base
-- KEYS[2] id
-- KEYS[3] seq
-- KEYS[4] pending
-- KEYS[5] schedule
-- KEYS[6] meta
-- KEYS[7] events
-- KEYS[8] signal
-- KEYS[9] dedup
-- KEYS[10] dedup_owner
-- KEYS[11] groups
-- KEYS[12] groups_wait
-- KEYS[13] group_index
-- KEYS[14] fifo
-- KEYS[15] deadlines
-- ARGV[1] id, or '*' for the next free counter value
-- ARGV[2] payload
-- ARGV[3] run_at (absolute, unix ms), or '+ms' relative to the server's clock
-- ARGV[4..] options: PRIORITY p, ATTEMPTS n, REPEAT key (the repeat
--           definition that produced the job; stored in its `repeat` field),
--           DEDUP key, and with it DEDUP_FOR ms (throttle); no DEBOUNCE; GROUP g;
--           TRACE tp, TIME_LIMIT ms, START_BY ms or START_WITHIN ms (as
--           ENQUEUE's; a deadline later than run_at), LIFO and WAITED (as ENQUEUE's)
-- Reply: [id, 1] created, [id, 0] already existed, [holder, 2] deduplicated
-- Errors: BADARG queue|id|payload|run_at|priority|attempts|repeat|dedup|dedup_for|group|traceparent|time_limit|start_by|start_within, SYNTAX, WRONGTYPE
-- Events: scheduled (run_at), or enqueued when due; deduplicated (key,
--   requested) when the key is held

local function main()
  local job = {
    id = id_arg(ARGV[1], true),
    payload = text_arg(ARGV[2], 'payload'),
    run_at = run_at_arg(ARGV[3]),
  }
  local opts = options(4, with_deadline_words({
    PRIORITY = function(v) return int_arg(v, 'priority', 0, MAX_PRIORITY) end,
    ATTEMPTS = function(v) return int_arg(v, 'attempts', 1) end,
    REPEAT = function(v) return text_arg(v, 'repeat') end,
    DEDUP = function(v) return key_arg(v, 'dedup') end,
    DEDUP_FOR = function(v) return int_arg(v, 'dedup_for', 1) end,
    GROUP = group_arg,
    TRACE = trace_arg,
    LIFO = 'flag',
    WAITED = 'flag',
  }))
  job.priority = opts.PRIORITY or 0
  job.attempts = opts.ATTEMPTS or DEFAULT_MAX_ATTEMPTS
  job['repeat'] = opts.REPEAT
  dedup_options(job, opts)
  deadline_options(job, opts)
  job.group = opts.GROUP
  job.traceparent = opts.TRACE
  job.lifo = opts.LIFO

  return enqueue_checked({id = id_key, seq = seq_key, pending = pending_key,
    schedule = schedule_key, meta = meta_key, events = events_key, signal = signal_key,
    dedup = dedup_key, dedup_owner = dedup_owner_key, groups = groups_key,
    groups_wait = groups_wait_key, group_index = group_index_key, fifo = fifo_key,
    deadlines = deadlines_key},
    {job}, nil, opts.WAITED)
end
