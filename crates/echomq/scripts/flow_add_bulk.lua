-- FLOW_ADD_BULK: many FLOW.ADDs of one flow in one call; each job
-- behaves exactly as FLOW.ADD would treat it, in order, and every id is
-- checked for a CONFLICT before the first write.
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] pending
-- KEYS[4] schedule
-- KEYS[5] meta
-- KEYS[6] events
-- KEYS[7] signal
-- KEYS[8] groups
-- KEYS[9] groups_wait
-- KEYS[10] group_index
-- KEYS[11] fifo
-- KEYS[12] deadlines
-- KEYS[13] blocked
-- ARGV[1] flow (the flow id, as FLOW.ADD's)
-- ARGV: after the flow, groups of eight, one per job: id, ref, payload, after, before, priority, attempts, on_failure
--   (no other option: the client sends a job with one as a single FLOW.ADD)
-- Reply: flat [id1, created1, id2, created2, ...] (created 1 or 0)
-- Errors: CONFLICT (the flow holding an id, or -),
--   BADARG queue|flow|jobs|id|ref|after|before|priority|attempts|on_failure, WRONGTYPE
-- Events: enqueued (one per created job without dependencies), blocked (deps; one per
--   created job with dependencies); FLOW.ADD's scheduled comes only with RUN_AT, which
--   this form does not take

local function main()
  local flow = flow_jobs.name_arg(ARGV[1], 'flow', MAX_FLOW_ID)
  if #ARGV == 1 or (#ARGV - 1) % 8 ~= 0 then
    refuse('BADARG jobs')
  end
  local priorities, attempts = {}, {}
  local jobs = {}
  for i = 2, #ARGV, 8 do
    local job = {id = id_arg(ARGV[i])}
    local ref = flow_jobs.name_arg(ARGV[i + 1], 'ref', MAX_REF)
    job.payload = ARGV[i + 2]
    local own = flow_jobs.own_field(job.id)
    local after = flow_jobs.edges_arg(ARGV[i + 3], 'after', own)
    local before = flow_jobs.edges_arg(ARGV[i + 4], 'before', own)
    local priority, attempt = ARGV[i + 5], ARGV[i + 6]
    job.priority = priorities[priority] or repeated_int_arg(priorities, priority, 'priority', 0, MAX_PRIORITY)
    job.attempts = attempts[attempt] or repeated_int_arg(attempts, attempt, 'attempts', 1)
    jobs[#jobs + 1] = flow_jobs.job(job, flow, ref, flow_jobs.policy_arg(ARGV[i + 7]), after, before)
  end

  return flow_jobs.add({seq = seq_key, pending = pending_key, schedule = schedule_key,
    meta = meta_key, events = events_key, signal = signal_key, groups = groups_key,
    groups_wait = groups_wait_key, group_index = group_index_key, fifo = fifo_key,
    deadlines = deadlines_key, blocked = blocked_key}, flow, jobs)
end
