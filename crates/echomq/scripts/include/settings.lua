-- Queue settings: the meta hash read with the protocol's defaults, the
-- logs mark, and what flow control (the cap on active jobs, the rate
-- limit) lets a claim hand out.

-- A count setting: the stored whole number >= 0, else the default.
local function count_setting(value, default)
  local n = tonumber(value)
  if n and n >= 0 and n < math.huge and n == math.floor(n) then
    return n
  end
  return default
end

-- A flow setting or its state (the cap on active jobs, the rate limit, its
-- window, count and hold): the stored whole number in [0, MAX_INT], else 0
-- (off), so every sum of them stays exact.
local function flow_setting(value)
  local n = count_setting(value, 0)
  if n > MAX_INT then
    return 0
  end
  return n
end

-- A metrics window's width: the stored whole number >= 1, else the default.
local function width_setting(value, default)
  local n = count_setting(value, 0)
  if n < 1 or n > MAX_INT then
    return default
  end
  return n
end

-- Queue settings from the meta hash, with their protocol defaults (also for
-- a stored value that is not a whole number >= 0; flow settings default to
-- 0, off; `dedup`, whether a job of the queue ever took a dedup key;
-- `waited`, whether a job of it ever had a waiter;
-- `groups`, whether a job of the queue ever had a group; `group_flow`,
-- whether a group of it ever had a cap or a rate limit; `metrics`, unless
-- `metrics` is 0, and the metrics `windows`). With `limits`, also the rate
-- limit and its state (CLAIM, LIMIT), and `traced`. One HGETALL: the meta
-- hash holds a few settings at most, and reading those beats asking for
-- twenty fields that are mostly absent (2.4 µs less per script run).
local function settings(meta, limits)
  local v = {}
  local flat = redis.call('HGETALL', meta)
  for i = 1, #flat, 2 do
    v[flat[i]] = flat[i + 1]
  end
  local conf = {
    paused = v.paused == '1',
    keep_completed = count_setting(v.keep_completed, DEFAULT_KEEP_COMPLETED),
    keep_dead = count_setting(v.keep_dead, DEFAULT_KEEP_DEAD),
    keep_cancelled = count_setting(v.keep_cancelled, DEFAULT_KEEP_CANCELLED),
    -- The age rules of retention, ms (0: none).
    keep_completed_for = count_setting(v.keep_completed_for, 0),
    keep_dead_for = count_setting(v.keep_dead_for, 0),
    keep_cancelled_for = count_setting(v.keep_cancelled_for, 0),
    events_max = count_setting(v.events_max, DEFAULT_EVENTS_MAX),
    concurrency = flow_setting(v.concurrency),
    dedup = v.dedup == '1',
    groups = v.groups == '1',
    group_flow = v.group_flow == '1',
    -- Whether a job of the queue ever had a waiter: only then do the
    -- commands that decide or delete a job read its `waited`.
    waited = v.waited == '1',
    -- Whether a job of the queue ever had a time limit or a deadline:
    -- only then do the commands read them.
    timed = v.timed == '1',
    -- Whether a job of the queue was ever enqueued with LIFO: only then do
    -- the paths into pending read a job's `lifo`.
    lifo = v.lifo == '1',
    -- Whether a job of the queue ever took part in a flow: only then do
    -- the commands that decide or delete a job read its `dependents`
    -- (outbox.open sets conf.outbox in those that write resolutions).
    flows = v.flows == '1',
    metrics = v.metrics ~= '0',
    -- False when the logs mark is 0: no job of the queue has a log.
    logs = v.logs ~= '0',
    windows = {
      {name = 'fine', ms = width_setting(v.metrics_fine_ms, DEFAULT_METRICS_FINE_MS),
        keep = math.min(count_setting(v.metrics_fine_keep, DEFAULT_METRICS_FINE_KEEP), MAX_METRICS_KEEP)},
      {name = 'coarse', ms = width_setting(v.metrics_coarse_ms, DEFAULT_METRICS_COARSE_MS),
        keep = math.min(count_setting(v.metrics_coarse_keep, DEFAULT_METRICS_COARSE_KEEP), MAX_METRICS_KEEP)},
    },
  }
  if limits then
    -- Whether a job of the queue was ever enqueued with a trace context:
    -- only then does CLAIM read a job's traceparent.
    conf.traced = v.traced == '1'
    conf.limit_max = flow_setting(v.limit_max)
    conf.limit_per = flow_setting(v.limit_per)
    conf.limit_window = flow_setting(v.limit_window)
    conf.limit_used = flow_setting(v.limit_used)
    conf.limit_hold = flow_setting(v.limit_hold)
  end
  return conf
end

-- What an enqueue reads of the settings: the events cap, the dedup mark,
-- the groups mark, the traced mark, whether the logs mark is set, and the
-- waited mark (REPEAT.ADD deletes jobs) (nothing else matters to ENQUEUE,
-- SCHEDULE or their bulk forms, so a queue with a meta hash pays six
-- lookups, not ten).
local function enqueue_settings(meta)
  local v = redis.call('HMGET', meta, 'events_max', 'dedup', 'groups', 'traced', 'logs', 'waited', 'timed')
  return {events_max = count_setting(v[1], DEFAULT_EVENTS_MAX), dedup = v[2] == '1', groups = v[3] == '1',
    traced = v[4] == '1', logs_marked = v[5] ~= false, waited = v[6] == '1', timed = v[7] == '1'}
end

-- The logs mark (docs/protocol.md, "The logs mark"), set by the enqueue
-- that creates a job on a queue without one, before its jobs enter any
-- set: 0 when the queue holds no job yet, else 1 (its jobs may have logs).
local function mark_logs(k, conf)
  if conf.logs_marked then
    return
  end
  local held = redis.call('EXISTS', k.pending, k.fifo, queue_key('schedule'), queue_key('active'),
    queue_key('completed'), queue_key('dead'), queue_key('cancelled'), queue_key('blocked'))
  redis.call('HSET', k.meta, 'logs', held > 0 and '1' or '0')
  conf.logs_marked = true
end

-- The rate limit's current window at `now` (windows of limit_per ms aligned
-- on the server clock: now - now mod per, exact for integers below 2^53),
-- and the starts counted in it; nil without a limit (max or per 0).
local function rate_window(conf, now)
  if conf.limit_max == 0 or conf.limit_per == 0 then
    return nil, 0
  end
  local window = now - math.fmod(now, conf.limit_per)
  if conf.limit_window == window then
    return window, conf.limit_used
  end
  return window, 0
end

-- What flow control lets a claim hand out at `now`: `bound` jobs at most
-- (math.huge when nothing binds), and when it binds, the wait_ms CLAIM
-- answers: nothing while held (the ms until limit_hold), what the rate
-- limit's window has left (the ms until it ends), the room under the cap
-- on active jobs (0: a finishing job wakes a worker), whichever is least
-- (the window's wait on a tie). Also the window and its use.
local function flow(conf, now, active)
  if now < conf.limit_hold then
    return 0, conf.limit_hold - now, nil, 0
  end
  local bound, wait = math.huge, nil
  local window, used = rate_window(conf, now)
  if window then
    bound, wait = math.max(conf.limit_max - used, 0), window + conf.limit_per - now
  end
  if conf.concurrency > 0 then
    local room = math.max(conf.concurrency - redis.call('ZCARD', active), 0)
    if room < bound then
      bound, wait = room, 0
    end
  end
  return bound, wait, window, used
end
