-- FAIL: the holder reports a failed attempt, fenced by the token.
-- failures+1; while failures < max_attempts -> retry: pending (RETRY_IN 0,
-- the default) or schedule at now+ms; otherwise, or with DEAD -> dead.
-- CANCELLED, or a job whose cancellation was requested -> cancelled,
-- without counting a failure. Dead or cancelled, the job frees a simple
-- dedup key it holds (a retry does not). RATE_LIMITED ms: back to pending
-- without counting a failure, and the whole queue held: limit_hold becomes
-- max(limit_hold, now+ms), and no claim hands out a job before it. Under a
-- cap on active jobs, a job leaving for the schedule set, dead or cancelled
-- wakes a worker waiting for room when jobs are pending.
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] schedule
-- KEYS[4] pending
-- KEYS[5] active
-- KEYS[6] dead
-- KEYS[7] cancelled
-- KEYS[8] meta
-- KEYS[9] events
-- KEYS[10] signal
-- KEYS[11] dedup_owner
-- KEYS[12] groups
-- KEYS[13] groups_wait
-- KEYS[14] group_index
-- KEYS[15] fifo
-- KEYS[16] deadlines
-- KEYS[17] resolutions
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3] error message
-- ARGV[4..] options, at most one of: RETRY_IN ms, DEAD, CANCELLED,
--   RATE_LIMITED ms
-- Reply: 'retry', 'dead', 'cancelled' or 'rate_limited'; 'relay_dead' or
--   'relay_cancelled' when the decision wrote a resolution
-- Errors: NOTACTIVE, BADARG queue|id|token|error|retry_in|rate_limited, SYNTAX,
--   WRONGTYPE
-- Events: retried (error, delay), dead (error), cancelled or rate_limited
--   (retry_in)
-- Outcome: `<id> dead <failures> <error>` or `<id> cancelled` for a job
--   someone waits for (a retry publishes nothing)

local function main()
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local message = text_arg(ARGV[3], 'error')
  local opts = options(4, {
    RETRY_IN = function(v) return int_arg(v, 'retry_in') end,
    DEAD = 'flag',
    CANCELLED = 'flag',
    RATE_LIMITED = function(v) return int_arg(v, 'rate_limited') end,
  })
  local chosen = (opts.RETRY_IN and 1 or 0) + (opts.DEAD and 1 or 0) + (opts.CANCELLED and 1 or 0)
    + (opts.RATE_LIMITED and 1 or 0)
  if chosen > 1 then
    refuse('SYNTAX RETRY_IN, DEAD, CANCELLED and RATE_LIMITED exclude each other')
  end

  local conf = settings(meta_key)
  local key = fenced(id, token)
  outbox.open(conf, resolutions_key)
  expect_type(seq_key, 'string')
  expect_type(schedule_key, 'zset')
  expect_type(pending_key, 'zset')
  expect_type(active_key, 'zset')
  expect_type(dead_key, 'zset')
  expect_type(cancelled_key, 'zset')
  expect_type(fifo_key, 'list')
  expect_type(events_key, 'stream')
  expect_type(signal_key, 'zset')
  if conf.timed then
    expect_type(deadlines_key, 'zset')
  end
  local now = now_ms()
  local now_s = int_str(now)
  local job = job_fields(conf, key, {'failures', 'max_attempts', 'priority', 'cancel'}, true)
  local dedup = {dedup_owner = dedup_owner_key}
  expect_owner_type(dedup, {job.dedup})
  local metrics = read_metrics(conf, now)
  -- A cancel or a death decides the job: its resolution is read now,
  -- before the first write.
  local failures = tonumber(job[1] or 0) + 1
  local deciding = opts.CANCELLED or job[4] == '1'
    or (not opts.RATE_LIMITED and (opts.DEAD or failures >= tonumber(job[2] or DEFAULT_MAX_ATTEMPTS)))
  local due = deciding and outbox.due(conf, id, job.dependents)
  local k = {seq = seq_key, pending = pending_key, signal = signal_key, meta = meta_key,
    groups = groups_key, groups_wait = groups_wait_key, group_index = group_index_key,
    fifo = fifo_key, deadlines = deadlines_key, schedule = schedule_key, events = events_key}
  local group = job.group
  read_group(k, conf, group)
  redis.call('ZREM', active_key, id)
  if group then
    leave_active(k, conf, group, now)
  end

  if opts.CANCELLED or job[4] == '1' then
    redis.call('HSET', key, 'state', 'cancelled', 'finished_at', now_s, 'error', message)
    redis.call('ZADD', cancelled_key, now_s, id)
    emit(events_key, conf.events_max, 'cancelled', 'id', id)
    publish_outcome(job.waited, id, 'cancelled')
    release_dedup(dedup, id, job.dedup, job.dedup_mode)
    local relay = outbox.write(conf, id, due, 'cancelled', nil, now_s)
    trim_finished(conf, cancelled_key, conf.keep_cancelled, conf.keep_cancelled_for, now)
    freed(conf, pending_key, fifo_key, signal_key)
    record_finished(conf, metrics, 'cancelled', job, now)
    return relay and 'relay_cancelled' or 'cancelled'
  end

  if opts.RATE_LIMITED then
    local held = flow_setting(redis.call('HGET', meta_key, 'limit_hold'))
    local hold = math.min(math.max(held, now + opts.RATE_LIMITED), MAX_INT)
    push_pending(k, conf, id, tonumber(job[3] or 0), group, now)
    keep_deadline(k, conf, id)
    redis.call('HSET', key, 'state', 'pending', 'error', message, 'run_at', now_s)
    redis.call('HSET', meta_key, 'limit_hold', int_str(hold))
    signal(signal_key, 0)
    emit(events_key, conf.events_max, 'rate_limited', 'id', id, 'retry_in', int_str(opts.RATE_LIMITED))
    return 'rate_limited'
  end

  if not opts.DEAD and failures < tonumber(job[2] or DEFAULT_MAX_ATTEMPTS) then
    local delay = opts.RETRY_IN or 0
    retry_failed(k, conf, id, {priority = tonumber(job[3] or 0), group = group, failures = failures,
      error = message, delay = delay}, now)
    if delay > 0 then
      freed(conf, pending_key, fifo_key, signal_key)
    end
    record_finished(conf, metrics, 'failed', job, now)
    return 'retry'
  end

  redis.call('HSET', key, 'state', 'dead', 'failures', failures, 'error', message, 'finished_at', now_s)
  redis.call('ZADD', dead_key, now_s, id)
  emit(events_key, conf.events_max, 'dead', 'id', id, 'error', message)
  publish_outcome(job.waited, id, 'dead ' .. int_str(failures) .. ' ' .. message)
  release_dedup(dedup, id, job.dedup, job.dedup_mode)
  local relay = outbox.write(conf, id, due, 'dead', outbox.dead_tail(failures, message), now_s)
  trim_finished(conf, dead_key, conf.keep_dead, conf.keep_dead_for, now)
  freed(conf, pending_key, fifo_key, signal_key)
  record_finished(conf, metrics, 'dead', job, now)
  return relay and 'relay_dead' or 'dead'
end
