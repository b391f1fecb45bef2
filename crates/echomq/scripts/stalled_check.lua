-- STALLED.CHECK: up to LIMIT (default 1000) active jobs whose lease ran out
-- (deadline < now), oldest first: stalls+1, then -> pending (recovered),
-- or -> dead with error 'stalled' once stalls > max_stalls; a job whose
-- cancellation was requested -> cancelled instead (counted in neither).
-- Dead or cancelled, a job frees a simple dedup key it holds. Under a cap
-- on active jobs, a job leaving for dead or cancelled wakes a worker
-- waiting for room when jobs are pending. Then trims the three finished
-- sets, by age and by count, so an idle queue still trims.
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
-- ARGV[1] max_stalls (>= 0)
-- ARGV[2..] options: LIMIT n (>= 1)
-- Reply: [recovered, dead] (integers)
-- Errors: BADARG queue|max_stalls|limit, SYNTAX, WRONGTYPE
-- Events: stalled (to: pending or dead; one per job taken back), cancelled
--   (one per job whose cancellation was requested)
-- Outcome: `<id> dead <failures> stalled` or `<id> cancelled` for each such
--   job someone waits for (a recovered one publishes nothing)

local function main()
  local max_stalls = int_arg(ARGV[1], 'max_stalls')
  local opts = options(2, {LIMIT = function(v) return int_arg(v, 'limit', 1) end})

  local conf = settings(meta_key)
  expect_type(seq_key, 'string')
  expect_type(pending_key, 'zset')
  expect_type(active_key, 'zset')
  expect_type(dead_key, 'zset')
  expect_type(cancelled_key, 'zset')
  expect_type(completed_key, 'zset')
  expect_type(fifo_key, 'list')
  expect_type(events_key, 'stream')
  expect_type(signal_key, 'zset')
  local now = now_ms()
  local now_s = int_str(now)
  local expired = redis.call('ZRANGE', active_key, '-inf', '(' .. now_s, 'BYSCORE', 'LIMIT', 0, opts.LIMIT or DEFAULT_STALLED_LIMIT)
  local recovered, dead, cancelled = 0, 0, 0
  -- Every job hash is read before the first write: a key of the wrong type
  -- refuses the whole call.
  local k = {seq = seq_key, pending = pending_key, signal = signal_key, meta = meta_key,
    groups = groups_key, groups_wait = groups_wait_key, group_index = group_index_key,
    fifo = fifo_key}
  if conf.groups then
    expect_group_keys(k)
  end
  local jobs, keys = {}, {}
  for i, id in ipairs(expired) do
    local fields = {'stalls', 'priority', 'cancel'}
    if conf.waited then
      -- A dead job's outcome names its failures: read where someone waits.
      fields[4] = 'failures'
    end
    jobs[i] = job_fields(conf, job_key(id), fields, true)
    keys[i] = jobs[i].dedup
    if jobs[i].group then
      read_lane(k, jobs[i].group)
    end
  end
  local dedup = {dedup_owner = dedup_owner_key}
  expect_owner_type(dedup, keys)
  local metrics = read_metrics(conf, now)
  local tally = tally_new()
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
      cancelled = cancelled + 1
      outcome = 'cancelled'
    elseif stalls > max_stalls then
      redis.call('HSET', key, 'state', 'dead', 'stalls', stalls, 'error', 'stalled', 'finished_at', now_s)
      redis.call('ZADD', dead_key, now_s, id)
      emit(events_key, conf.events_max, 'stalled', 'id', id, 'to', 'dead')
      publish_outcome(job.waited, id, 'dead ' .. (job[4] or '0') .. ' stalled')
      release_dedup(dedup, id, job.dedup, job.dedup_mode)
      dead = dead + 1
      outcome = 'dead'
    else
      push_pending(k, conf, id, tonumber(job[2] or 0), job.group, now)
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
    TRIM_PER_TRANSITION * math.max(dead, 1))
  trim_finished(conf, cancelled_key, conf.keep_cancelled, conf.keep_cancelled_for, now,
    TRIM_PER_TRANSITION * math.max(cancelled, 1))
  record_metrics(metrics, tally_fields(tally))
  if recovered > 0 then
    signal(signal_key, 0)
  elseif #expired > 0 then
    freed(conf, pending_key, fifo_key, signal_key)
  end
  return {recovered, dead}
end
