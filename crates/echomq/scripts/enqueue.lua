-- ENQUEUE: a new job -> pending (also while paused). Idempotent by id: an id
-- that exists in any state changes nothing. With DEDUP, a key held by
-- another job creates nothing (docs/protocol.md, "Deduplication").
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
-- ARGV[3..] options: PRIORITY p (0-255, default 0), ATTEMPTS n (>= 1, default 3),
--           DEDUP key, and with it at most one of DEDUP_FOR ms (throttle) or
--           DEBOUNCE ms (the job is scheduled at now + ms), GROUP g (the job's
--           group: docs/protocol.md, "Groups"), TRACE tp (the W3C trace
--           context stored in its traceparent: docs/protocol.md, "Traces"),
--           TIME_LIMIT ms (>= 1), and at most one of START_BY ms (later than
--           now) or START_WITHIN ms (>= 1; not with DEBOUNCE), LIFO (the job
--           enters pending at the front of its priority): docs/protocol.md,
--           "Time limits, start-by deadlines, LIFO and retention by age";
--           WAITED (the caller will wait for the outcome: a created job is
--           marked waited for: docs/protocol.md, "Outcome waits")
-- Reply: [id, 1] created, [id, 0] already existed, [holder, 2] deduplicated,
--        [holder, 3] debounced
-- Errors: BADARG queue|id|payload|priority|attempts|dedup|dedup_for|debounce|group|traceparent|time_limit|start_by|start_within, SYNTAX, WRONGTYPE
-- Events: enqueued, scheduled (run_at; with DEBOUNCE), deduplicated (key,
--   requested), debounced (key, run_at)

local function main()
  local job = {id = id_arg(ARGV[1], true), payload = text_arg(ARGV[2], 'payload')}
  local opts = options(3, with_deadline_words({
    PRIORITY = function(v) return int_arg(v, 'priority', 0, MAX_PRIORITY) end,
    ATTEMPTS = function(v) return int_arg(v, 'attempts', 1) end,
    DEDUP = function(v) return key_arg(v, 'dedup') end,
    DEDUP_FOR = function(v) return int_arg(v, 'dedup_for', 1) end,
    DEBOUNCE = function(v) return int_arg(v, 'debounce', 1) end,
    GROUP = group_arg,
    TRACE = trace_arg,
    LIFO = 'flag',
    WAITED = 'flag',
  }))
  job.priority = opts.PRIORITY or 0
  job.attempts = opts.ATTEMPTS or DEFAULT_MAX_ATTEMPTS
  dedup_options(job, opts)
  deadline_options(job, opts)
  job.group = opts.GROUP
  job.traceparent = opts.TRACE
  job.lifo = opts.LIFO

  local k = {id = id_key, seq = seq_key, pending = pending_key, meta = meta_key,
    events = events_key, signal = signal_key, dedup = dedup_key, dedup_owner = dedup_owner_key,
    groups = groups_key, groups_wait = groups_wait_key, group_index = group_index_key,
    fifo = fifo_key, deadlines = deadlines_key}
  -- Only a debounced job may be scheduled (the type is checked only then).
  if job.dedup_mode == 'debounce' then
    k.schedule = schedule_key
  end
  return enqueue_checked(k, {job}, nil, opts.WAITED)
end
