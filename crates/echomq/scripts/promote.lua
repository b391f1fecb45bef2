-- PROMOTE: due scheduled jobs (run-at <= the server's now) -> pending,
-- oldest first, at most LIMIT (default 1000).
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] schedule
-- KEYS[4] pending
-- KEYS[5] meta
-- KEYS[6] events
-- KEYS[7] signal
-- KEYS[8] groups
-- KEYS[9] groups_wait
-- KEYS[10] group_index
-- KEYS[11] fifo
-- ARGV[1..] options: LIMIT n (>= 1)
-- Reply: count promoted (integer)
-- Errors: BADARG queue|limit, SYNTAX, WRONGTYPE
-- Events: promoted (one per job)

local function main()
  local opts = options(1, {LIMIT = function(v) return int_arg(v, 'limit', 1) end})

  local conf = settings(meta_key)
  expect_type(seq_key, 'string')
  expect_type(schedule_key, 'zset')
  expect_pending_types(pending_key, fifo_key)
  expect_type(events_key, 'stream')
  expect_type(signal_key, 'zset')
  local k = {seq = seq_key, schedule = schedule_key, pending = pending_key, events = events_key,
    signal = signal_key, groups = groups_key, groups_wait = groups_wait_key,
    group_index = group_index_key, fifo = fifo_key, meta = meta_key}
  if conf.groups then
    expect_group_keys(k)
  end
  local now = now_ms()
  local due = due_ids(schedule_key, now, opts.LIMIT or DEFAULT_PROMOTE_LIMIT)
  local jobs = {}
  for _, id in ipairs(due) do
    local f = redis.call('HMGET', job_key(id), 'priority', 'group')
    jobs[id] = {priority = f[1], group = conf.groups and f[2] or nil}
    if jobs[id].group then
      read_lane(k, jobs[id].group)
    end
  end
  local moved = promote(k, conf, due, jobs, now)
  if moved > 0 then
    signal(signal_key, 0)
  end
  return moved
end
