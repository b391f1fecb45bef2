-- ENQUEUE_BULK: many ENQUEUEs in one call (wire 4's bulk path); each job
-- behaves exactly as ENQUEUE would, in order.
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
-- ARGV: groups of four, one per job: id ('*' generates), payload, priority, attempts
--   (no dedup key: the client sends a job with one as a single ENQUEUE)
-- Tail: WAITED (optional, any case: each job created is marked waited for,
--   as ENQUEUE's WAITED marks it)
-- Reply: flat [id1, created1, id2, created2, ...] (created 1 or 0)
-- Errors: BADARG queue|jobs|id|priority|attempts, WRONGTYPE
-- Events: enqueued (one per created job); ENQUEUE's scheduled, deduplicated and
--   debounced come only with DEDUP, which this form does not take

local function main()
  -- WAITED after whole groups makes the count one more than a multiple.
  local width, waited = #ARGV, nil
  if width % 4 == 1 and string.upper(ARGV[width]) == 'WAITED' then
    width, waited = width - 1, true
  end
  if width == 0 or width % 4 ~= 0 then
    refuse('BADARG jobs')
  end
  local priorities, attempts = {}, {}
  local jobs = {}
  -- Each job has its four arguments (the count is checked above), so a
  -- payload is never absent; a generated id ('*') needs no check; and a
  -- batch's priorities and attempts repeat: a text seen before is looked
  -- up here, not checked again by a call.
  for i = 1, width, 4 do
    local id, priority, attempt = ARGV[i], ARGV[i + 2], ARGV[i + 3]
    jobs[#jobs + 1] = {
      id = id == '*' and id or id_arg(id),
      payload = ARGV[i + 1],
      priority = priorities[priority] or repeated_int_arg(priorities, priority, 'priority', 0, MAX_PRIORITY),
      attempts = attempts[attempt] or repeated_int_arg(attempts, attempt, 'attempts', 1),
    }
  end

  return enqueue_checked({id = id_key, seq = seq_key, pending = pending_key, meta = meta_key,
    events = events_key, signal = signal_key, groups = groups_key, groups_wait = groups_wait_key,
    group_index = group_index_key, fifo = fifo_key}, jobs, true, waited)
end
