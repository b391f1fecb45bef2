-- STALLED.CHECK: up to LIMIT (default 1000) active jobs whose lease ran out
-- (deadline < now), oldest first: stalls+1, then -> pending (recovered),
-- or -> dead with error 'stalled' once stalls > max_stalls; a job whose
-- cancellation was requested -> cancelled instead (counted in neither).
-- Dead or cancelled, a job frees a simple dedup key it holds. Under a cap
-- on active jobs, a job leaving for dead or cancelled wakes a worker
-- waiting for room when jobs are pending. On a timed queue, a job whose
-- lease ran out at its time limit fails instead (docs/protocol.md, "Time
-- limits, start-by deadlines, LIFO and retention by age"): retried after
-- RETRY_IN's delay for its failure count, or dead; and first, up to LIMIT
-- members of `deadlines` scored < now: a job pending, scheduled or
-- blocked with that start_by -> cancelled with reason expired (expired),
-- its dependents told `cancelled` through the outbox; any other
-- member dropped. Then trims the three finished sets, by age and by
-- count, so an idle queue still trims.
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] pending
-- KEYS[4] active
-- KEYS[5] dead
-- KEYS[6] cancelled
-- KEYS[7] meta
-- KEYS[8] events
-- KEYS[9] signal
-- KEYS[10] dedup_owner
-- KEYS[11] groups
-- KEYS[12] groups_wait
-- KEYS[13] group_index
-- KEYS[14] fifo
-- KEYS[15] completed
-- KEYS[16] schedule
-- KEYS[17] deadlines
-- KEYS[18] resolutions
-- KEYS[19] blocked
-- ARGV[1] max_stalls (>= 0)
-- ARGV[2..] options: LIMIT n (>= 1), RETRY_IN ms [ms ...] (each >= 0: the
--   delay after the 1st, 2nd, ... failure, the last repeating; last)
-- Reply: [recovered, dead, timed_out, expired] (integers)
-- Errors: BADARG queue|max_stalls|limit|retry_in, SYNTAX, WRONGTYPE
-- Events: stalled (to: pending or dead; one per job taken back), cancelled
--   (one per job whose cancellation was requested), retried (error, delay)
--   or dead (error) for a job failed at its time limit, expired (start_by)
--   per job whose start-by deadline passed
-- Outcome: `<id> dead <failures> <error>` or `<id> cancelled` for each such
--   job (and each expired one) someone waits for (a recovered or retried one publishes nothing)

local function main()
  local max_stalls = int_arg(ARGV[1], 'max_stalls')
  local opts = options(2, {
    LIMIT = function(v) return int_arg(v, 'limit', 1) end,
    RETRY_IN = {rest = function(values) return delays_arg(values, 'retry_in') end},
  })

  local conf = settings(meta_key)
  outbox.open(conf, resolutions_key)
  expect_type(seq_key, 'string')
  expect_type(pending_key, 'zset')
  expect_type(active_key, 'zset')
  expect_type(dead_key, 'zset')
  expect_type(cancelled_key, 'zset')
  expect_type(completed_key, 'zset')
  expect_type(fifo_key, 'list')
  expect_type(events_key, 'stream')
  expect_type(signal_key, 'zset')
  local timed = conf.timed
  if timed then
    expect_type(schedule_key, 'zset')
    expect_type(deadlines_key, 'zset')
    if conf.flows then
      expect_type(blocked_key, 'zset')
    end
  end
  local now = now_ms()
  local now_s = int_str(now)
  local limit = opts.LIMIT or DEFAULT_STALLED_LIMIT
  local expired, deadlines = {}, {}
  if timed then
    -- The leases' deadlines tell a stall from a time limit reached.
    local scored = redis.call('ZRANGE', active_key, '-inf', '(' .. now_s, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
    for i = 1, #scored, 2 do
      expired[#expired + 1], deadlines[#expired + 1] = scored[i], tonumber(scored[i + 1])
    end
  else
    expired = redis.call('ZRANGE', active_key, '-inf', '(' .. now_s, 'BYSCORE', 'LIMIT', 0, limit)
  end
  local recovered, dead, cancelled, timed_out, retried, limit_dead = 0, 0, 0, 0, 0, 0
  -- Every job hash is read before the first write: a key of the wrong type
  -- refuses the whole call.
  local k = {seq = seq_key, pending = pending_key, signal = signal_key, meta = meta_key,
    groups = groups_key, groups_wait = groups_wait_key, group_index = group_index_key,
    fifo = fifo_key, schedule = schedule_key, dead = dead_key, events = events_key,
    deadlines = deadlines_key, blocked = blocked_key}
  if conf.groups then
    expect_group_keys(k)
  end
  local jobs, keys = {}, {}
  for i, id in ipairs(expired) do
    local fields = {'stalls', 'priority', 'cancel'}
    if conf.waited or timed or conf.flows then
      -- A dead job's outcome names its failures: read where someone waits.
      fields[4] = 'failures'
    end
    if timed then
      fields[5], fields[6], fields[7] = 'max_attempts', 'time_limit', 'claimed_at'
    end
    jobs[i] = job_fields(conf, job_key(id), fields, true)
    if timed then
      local job = jobs[i]
      job.failures, job.max_attempts, job.priority = job[4], job[5], job[2]
      job.time_limit, job.claimed_at = job[6], job[7]
    end
    -- Its resolution, should the sweep decide it.
    jobs[i].due = outbox.due(conf, id, jobs[i].dependents)
    keys[i] = jobs[i].dedup
    if jobs[i].group then
      read_lane(k, jobs[i].group)
    end
  end
  local past = {}
  if timed then
    k.cancelled = cancelled_key
    past = read_past_deadlines(k, conf, now, limit)
  end
  local dedup = {dedup_owner = dedup_owner_key}
  expect_owner_type(dedup, keys)
  for _, member in ipairs(past) do
    if member.live then
      expect_owner_type(dedup, {member.job.dedup})
    end
  end
  local metrics = read_metrics(conf, now)
  local tally = tally_new()
  -- Past deadlines first: a job expired is waiting, none of the stalled.
  local gone = expire_past(k, conf, dedup, past, now_s)
  if conf.metrics then
    for _ = 1, gone do
      tally_outcome(tally, 'cancelled')
    end
  end
  for i, id in ipairs(expired) do
    local key = job_key(id)
    local job = jobs[i]
    local stalls = tonumber(job[1] or 0) + 1
    local outcome
    redis.call('ZREM', active_key, id)
    if job.group then
      leave_active(k, conf, job.group, now)
    end
    if job[3] == '1' then
      redis.call('HSET', key, 'state', 'cancelled', 'stalls', stalls, 'finished_at', now_s)
      redis.call('ZADD', cancelled_key, now_s, id)
      emit(events_key, conf.events_max, 'cancelled', 'id', id)
      publish_outcome(job.waited, id, 'cancelled')
      release_dedup(dedup, id, job.dedup, job.dedup_mode)
      outbox.write(conf, id, job.due, 'cancelled', nil, now_s)
      cancelled = cancelled + 1
      outcome = 'cancelled'
    elseif timed and tonumber(job.time_limit) and tonumber(job.claimed_at)
      and deadlines[i] >= tonumber(job.claimed_at) + tonumber(job.time_limit) then
      -- Its lease ran out at its time limit (at_time_limit of the module;
      -- inline: the library's top level is at its locals' headroom).
      local to
      outcome, to = fail_at_limit(k, conf, dedup, id, job, opts.RETRY_IN, now)
      timed_out = timed_out + 1
      if to == 'dead' then
        limit_dead = limit_dead + 1
      elseif to == 'pending' then
        retried = retried + 1
      end
    elseif stalls > max_stalls then
      redis.call('HSET', key, 'state', 'dead', 'stalls', stalls, 'error', 'stalled', 'finished_at', now_s)
      redis.call('ZADD', dead_key, now_s, id)
      emit(events_key, conf.events_max, 'stalled', 'id', id, 'to', 'dead')
      publish_outcome(job.waited, id, 'dead ' .. (job[4] or '0') .. ' stalled')
      release_dedup(dedup, id, job.dedup, job.dedup_mode)
      outbox.write(conf, id, job.due, 'dead', outbox.dead_tail(job[4], 'stalled'), now_s)
      dead = dead + 1
      outcome = 'dead'
    else
      push_pending(k, conf, id, tonumber(job[2] or 0), job.group, now)
      keep_deadline(k, conf, id)
      redis.call('HSET', key, 'state', 'pending', 'stalls', stalls, 'run_at', now_s)
      emit(events_key, conf.events_max, 'stalled', 'id', id, 'to', 'pending')
      recovered = recovered + 1
      outcome = 'stalled'
    end
    if conf.metrics then
      tally_finished(tally, outcome, job.claimed_at, job.ready_at, now)
    end
  end
  -- Every set, every call (docs/protocol.md, "Retention by age").
  trim_finished(conf, completed_key, conf.keep_completed, conf.keep_completed_for, now)
  trim_finished(conf, dead_key, conf.keep_dead, conf.keep_dead_for, now,
    TRIM_PER_TRANSITION * math.max(dead + limit_dead, 1))
  trim_finished(conf, cancelled_key, conf.keep_cancelled, conf.keep_cancelled_for, now,
    TRIM_PER_TRANSITION * math.max(cancelled + gone, 1))
  record_metrics(metrics, tally_fields(tally))
  if recovered + retried > 0 then
    signal(signal_key, 0)
  elseif #expired > 0 then
    freed(conf, pending_key, fifo_key, signal_key)
  end
  return {recovered, dead, timed_out, gone}
end
