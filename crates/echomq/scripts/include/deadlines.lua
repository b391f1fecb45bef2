-- Time limits and start-by deadlines (docs/protocol.md, "Time limits,
-- start-by deadlines, LIFO and retention by age"): the options of ENQUEUE
-- and SCHEDULE, and the queue's `timed` mark.

-- The time options of ENQUEUE and SCHEDULE (`opts` as options() read
-- them, after dedup_options) on `job`: its time_limit and start_by. The
-- two SYNTAX refusals come first, then the checks against the clock,
-- which is read only when a deadline is given: START_BY must be later
-- than now and than the job's run-at, as must now + START_WITHIN
-- (capped at MAX_INT).
local function deadline_options(job, opts)
  if opts.START_BY and opts.START_WITHIN then
    refuse('SYNTAX START_BY and START_WITHIN exclude each other')
  end
  local within = opts.START_WITHIN
  if (opts.START_BY or within) and opts.DEBOUNCE then
    refuse('SYNTAX DEBOUNCE and a start-by deadline exclude each other')
  end
  job.time_limit = opts.TIME_LIMIT
  if not (opts.START_BY or within) then
    return
  end
  local now = now_ms()
  local run_at = job.run_at and job.run_at(now)
  if within then
    job.start_by = math.min(now + within, MAX_INT)
    if run_at and job.start_by <= run_at then
      refuse('BADARG start_within')
    end
  else
    job.start_by = opts.START_BY
    if job.start_by <= now or (run_at and job.start_by <= run_at) then
      refuse('BADARG start_by')
    end
  end
end

-- The options' words and their checks, for options() of ENQUEUE and
-- SCHEDULE: added to `spec`, which it returns.
local function with_deadline_words(spec)
  spec.TIME_LIMIT = function(v) return int_arg(v, 'time_limit', 1) end
  spec.START_BY = function(v) return int_arg(v, 'start_by', 1) end
  spec.START_WITHIN = function(v) return int_arg(v, 'start_within', 1) end
  return spec
end

-- Marks the queue `timed` (once) for a job created with a time limit or a
-- deadline, before the job enters any set.
local function mark_timed(k, conf, job)
  if (job.time_limit or job.start_by) and not conf.timed then
    redis.call('HSET', k.meta, 'timed', '1')
    conf.timed = true
  end
end

-- Adds each created job of `batch` that has a start_by to `deadlines`,
-- scored by it.
local function add_deadlines(k, batch)
  local scored = {}
  for i = 1, batch.n do
    local job = batch.jobs[i]
    if job.start_by then
      scored[#scored + 1] = int_str(job.start_by)
      scored[#scored + 1] = batch.ids[i]
    end
  end
  if #scored > 0 then
    redis.call('ZADD', k.deadlines, unpack(scored))
  end
end

-- A job that enters pending or the schedule again (a retry, DELAY,
-- REQUEUE, REPROCESS, a stall recovered, RATE_LIMITED): on a timed queue,
-- back in `deadlines` (k.deadlines, type checked by the caller) when it
-- has a start_by, so it keeps its deadline.
local function keep_deadline(k, conf, id)
  if not conf.timed then
    return
  end
  local start_by = redis.call('HGET', job_key(id), 'start_by')
  if start_by then
    redis.call('ZADD', k.deadlines, start_by, id)
  end
end

-- A failed job with attempts left (FAIL, STALLED.CHECK's failure at a
-- time limit), already out of active: back to pending now when
-- `retry.delay` is 0, else scheduled at now + delay; the job's state,
-- failures (`retry.failures`), error (`retry.error`) and run_at written,
-- its deadline kept, a worker signalled, and the event `retried` (error,
-- delay). `retry.priority` and `retry.group` place it in pending. k needs
-- schedule, signal and events besides what push_pending and keep_deadline
-- use. The module's twin is Store::retry (store/deadlines.rs).
local function retry_failed(k, conf, id, retry, now)
  local key = job_key(id)
  local now_s = int_str(now)
  if retry.delay == 0 then
    push_pending(k, conf, id, retry.priority, retry.group, now)
    keep_deadline(k, conf, id)
    redis.call('HSET', key, 'state', 'pending', 'failures', retry.failures, 'error', retry.error, 'run_at', now_s)
    signal(k.signal, 0)
  else
    local run_at = int_str(now + retry.delay)
    redis.call('ZADD', k.schedule, run_at, id)
    keep_deadline(k, conf, id)
    redis.call('HSET', key, 'state', 'scheduled', 'failures', retry.failures, 'error', retry.error, 'run_at', run_at)
    signal(k.signal, run_at)
  end
  emit(k.events, conf.events_max, 'retried', 'id', id, 'error', retry.error, 'delay', int_str(retry.delay))
end

-- STALLED.CHECK's failure of an active job at its time limit, as FAIL with
-- the error `time limit <d> exceeded` would (the job already left active):
-- failures + 1, then retried after delays[failures] (the last repeating;
-- none: at once) while attempts remain (retry_failed), else dead. `job`
-- holds `failures`, `max_attempts`, `priority`, `time_limit` by name,
-- what job_fields read, and `due`, its resolution (outbox.due) should it
-- die. Returns the metrics' outcome ('failed' or 'dead')
-- and the state the job went to.
local function fail_at_limit(k, conf, dedup, id, job, delays, now)
  local key = job_key(id)
  -- The limit in the largest unit that divides it (2h, 30m, 45s, else
  -- 1500ms), as echomq_protocol::time_limit::shown writes it (inline: the
  -- library's top level is at Lua's 200 locals).
  local ms, shown = tonumber(job.time_limit), nil
  if ms % MS_PER_HOUR == 0 then
    shown = int_str(ms / MS_PER_HOUR) .. 'h'
  elseif ms % MS_PER_MINUTE == 0 then
    shown = int_str(ms / MS_PER_MINUTE) .. 'm'
  elseif ms % MS_PER_S == 0 then
    shown = int_str(ms / MS_PER_S) .. 's'
  else
    shown = int_str(ms) .. 'ms'
  end
  local message = 'time limit ' .. shown .. ' exceeded'
  local failures = tonumber(job.failures or 0) + 1
  if failures < tonumber(job.max_attempts or DEFAULT_MAX_ATTEMPTS) then
    local delay = delays and delays[math.min(failures, #delays)] or 0
    retry_failed(k, conf, id, {priority = tonumber(job.priority or 0), group = job.group, failures = failures,
      error = message, delay = delay}, now)
    return 'failed', delay == 0 and 'pending' or 'scheduled'
  end
  redis.call('HSET', key, 'state', 'dead', 'failures', failures, 'error', message, 'finished_at', int_str(now))
  redis.call('ZADD', k.dead, int_str(now), id)
  emit(k.events, conf.events_max, 'dead', 'id', id, 'error', message)
  publish_outcome(job.waited, id, 'dead ' .. int_str(failures) .. ' ' .. message)
  release_dedup(dedup, id, job.dedup, job.dedup_mode)
  outbox.write(conf, id, job.due, 'dead', outbox.dead_tail(failures, message), int_str(now))
  return 'dead', 'dead'
end

-- Up to `limit` members of `deadlines` scored < now, each with its job
-- read (state, start_by, dedup, dedup_mode, group, and waited on a queue
-- someone waits on) and, for a pending grouped job, its lane (before the
-- sweep's first write). Returns {id=, live=, job=} per member: `live`
-- when the job waits (pending, scheduled or blocked) with that start_by.
local function read_past_deadlines(k, conf, now, limit)
  local scored = redis.call('ZRANGE', k.deadlines, '-inf', '(' .. int_str(now), 'BYSCORE', 'LIMIT', 0, limit,
    'WITHSCORES')
  local past = {}
  for i = 1, #scored, 2 do
    local id = scored[i]
    local f = job_fields_waited(conf, job_key(id), {'state', 'start_by', 'dedup', 'dedup_mode', 'group'})
    local job = {state = f[1], start_by = f[2], dedup = f[3], dedup_mode = f[4], waited = f[6]}
    local live = (job.state == 'pending' or job.state == 'scheduled' or job.state == 'blocked')
      and tonumber(job.start_by) == tonumber(scored[i + 1])
    if live then
      job.due = outbox.due(conf, id, f.dependents) or false
    end
    if live and conf.groups and job.state == 'pending' and f[5] then
      job.group = f[5]
      read_lane(k, job.group)
    end
    past[#past + 1] = {id = id, live = live, job = job}
  end
  return past
end

-- A job past its start_by that has left its waiting set (and `deadlines`,
-- or is about to) -> cancelled: `reason` expired, the event `expired`
-- (`job.start_by`), `<id> cancelled` published to a waiter (`job.waited`),
-- its dedup key (`job.dedup`, `job.dedup_mode`) released, its resolution
-- written (`job.due`, or `job.dependents` read). The caller trims
-- `cancelled` and counts the metrics.
local function cancel_expired(k, conf, dedup, id, job, now_s)
  -- Its resolution, read before the sweep's first write (`job.due`), or
  -- now by a claim (leniently: it popped the job already).
  local due = job.due
  if due == nil then
    due = outbox.due(conf, id, job.dependents, true)
  end
  redis.call('ZADD', k.cancelled, now_s, id)
  redis.call('HSET', job_key(id), 'state', 'cancelled', 'reason', 'expired', 'finished_at', now_s)
  emit(k.events, conf.events_max, 'expired', 'id', id, 'start_by', job.start_by)
  publish_outcome(job.waited, id, 'cancelled')
  release_dedup(dedup, id, job.dedup, job.dedup_mode)
  outbox.write(conf, id, due, 'cancelled', nil, now_s)
end

-- A waiting job (`job.state` pending, scheduled or blocked: k.blocked)
-- whose start_by passed
-- -> cancelled as CANCEL of it would (out of its set and lane, its dedup
-- key released, `<id> cancelled` published to a waiter), with `reason`
-- expired and the event `expired` (start_by) in place of `cancelled`; out
-- of `deadlines`. The caller trims `cancelled` and counts the metrics.
local function expire_waiting(k, conf, dedup, id, job, now_s)
  if job.state == 'pending' then
    leave_pending(k, conf, id, job.group)
  elseif job.state == 'blocked' then
    redis.call('ZREM', k.blocked, id)
  else
    redis.call('ZREM', k.schedule, id)
  end
  redis.call('ZREM', k.deadlines, id)
  cancel_expired(k, conf, dedup, id, job, now_s)
end

-- STALLED.CHECK's expiry of the members `past` (read_past_deadlines): a
-- live one expires (expire_waiting), any other is dropped without a write
-- to its job. Returns how many expired.
local function expire_past(k, conf, dedup, past, now_s)
  local expired = 0
  for _, member in ipairs(past) do
    if member.live then
      expire_waiting(k, conf, dedup, member.id, member.job, now_s)
      expired = expired + 1
    else
      redis.call('ZREM', k.deadlines, member.id)
    end
  end
  return expired
end
