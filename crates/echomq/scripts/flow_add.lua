-- FLOW.ADD: a new job of a flow (docs/protocol.md, "Flows"). With
-- dependencies (`after`) -> blocked, one `wait` field per dependency in
-- its deps hash; without -> pending, or the schedule set for a later
-- RUN_AT, as ENQUEUE and SCHEDULE would. With dependents (`before`): one
-- `0` field per dependent in its dependents hash. An id that exists in
-- the same flow changes nothing.
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
-- ARGV[1] flow (the flow id: the job-id rule, at most 127 bytes)
-- ARGV[2] id (the job-id rule, not '*')
-- ARGV[3] ref (the job's name in its flow: the job-id rule, at most 128 bytes)
-- ARGV[4] payload
-- ARGV[5] after (its dependencies: `<queue> <id>` pairs joined by single spaces, empty for none)
-- ARGV[6] before (its dependents, as after)
-- ARGV[7..] options: PRIORITY p, ATTEMPTS n, ON_FAILURE fail|ignore|cancel
--           (default fail), RUN_AT ms (unix ms, or '+ms' from the server's
--           clock), GROUP g, TRACE tp, TIME_LIMIT ms, START_BY ms or
--           START_WITHIN ms, LIFO: as ENQUEUE's and SCHEDULE's
-- Reply: [id, 1] created, [id, 0] when the id exists in the same flow
-- Errors: CONFLICT (the flow holding the id, or - for a job of none),
--   BADARG queue|flow|id|ref|payload|after|before|priority|attempts|on_failure|run_at|group|traceparent|time_limit|start_by|start_within,
--   SYNTAX, WRONGTYPE
-- Events: blocked (deps), or enqueued, or scheduled (run_at)

local function main()
  local flow = flow_jobs.name_arg(ARGV[1], 'flow', MAX_FLOW_ID)
  local job = {id = id_arg(ARGV[2])}
  local ref = flow_jobs.name_arg(ARGV[3], 'ref', MAX_REF)
  job.payload = text_arg(ARGV[4], 'payload')
  local own = flow_jobs.own_field(job.id)
  local after = flow_jobs.edges_arg(ARGV[5], 'after', own)
  local before = flow_jobs.edges_arg(ARGV[6], 'before', own)
  local opts = options(7, with_deadline_words({
    PRIORITY = function(v) return int_arg(v, 'priority', 0, MAX_PRIORITY) end,
    ATTEMPTS = function(v) return int_arg(v, 'attempts', 1) end,
    ON_FAILURE = flow_jobs.policy_arg,
    RUN_AT = run_at_arg,
    GROUP = group_arg,
    TRACE = trace_arg,
    LIFO = 'flag',
  }))
  job.priority = opts.PRIORITY or 0
  job.attempts = opts.ATTEMPTS or DEFAULT_MAX_ATTEMPTS
  job.run_at = opts.RUN_AT
  deadline_options(job, opts)
  job.group = opts.GROUP
  job.traceparent = opts.TRACE
  job.lifo = opts.LIFO
  flow_jobs.job(job, flow, ref, opts.ON_FAILURE or 'fail', after, before)

  return flow_jobs.add({seq = seq_key, pending = pending_key, schedule = schedule_key,
    meta = meta_key, events = events_key, signal = signal_key, groups = groups_key,
    groups_wait = groups_wait_key, group_index = group_index_key, fifo = fifo_key,
    deadlines = deadlines_key, blocked = blocked_key}, flow, {job})
end
