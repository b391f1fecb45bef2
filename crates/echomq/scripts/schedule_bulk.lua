-- SCHEDULE_BULK: many SCHEDULEs in one call (wire 4's bulk path for
-- scheduled jobs); each job behaves exactly as SCHEDULE would, in order.
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
-- ARGV: groups of five, one per job: id ('*' generates), payload, run_at ('+ms': relative), priority, attempts
-- Tail: WAITED (optional, any case: as ENQUEUE.BULK's)
--   (no dedup key: the client sends a job with one as a single SCHEDULE)
-- Reply: flat [id1, created1, id2, created2, ...] (created 1 or 0)
-- Errors: BADARG queue|jobs|id|run_at|priority|attempts, WRONGTYPE
-- Events: scheduled (run_at; one per job not yet due), enqueued (one per job
--   already due); SCHEDULE's deduplicated comes only with DEDUP, which this
--   form does not take

local function main()
  -- WAITED after whole groups makes the count one more than a multiple.
  local width, waited = #ARGV, nil
  if width % 5 == 1 and string.upper(ARGV[width]) == 'WAITED' then
    width, waited = width - 1, true
  end
  if width == 0 or width % 5 ~= 0 then
    refuse('BADARG jobs')
  end
  local priorities, attempts = {}, {}
  local jobs = {}
  for i = 1, width, 5 do
    jobs[#jobs + 1] = {
      id = id_arg(ARGV[i], true),
      payload = text_arg(ARGV[i + 1], 'payload'),
      run_at = run_at_arg(ARGV[i + 2]),
      priority = repeated_int_arg(priorities, ARGV[i + 3], 'priority', 0, MAX_PRIORITY),
      attempts = repeated_int_arg(attempts, ARGV[i + 4], 'attempts', 1),
    }
  end

  return enqueue_checked({id = id_key, seq = seq_key, pending = pending_key,
    schedule = schedule_key, meta = meta_key, events = events_key, signal = signal_key,
    groups = groups_key, groups_wait = groups_wait_key, group_index = group_index_key,
    fifo = fifo_key}, jobs, true, waited)
end
