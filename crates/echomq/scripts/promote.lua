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

  local conf = settings(KEYS[5])
  expect_type(KEYS[2], 'string')
  expect_type(KEYS[3], 'zset')
  expect_pending_types(KEYS[4], KEYS[11])
  expect_type(KEYS[6], 'stream')
  expect_type(KEYS[7], 'zset')
  local k = {seq = KEYS[2], schedule = KEYS[3], pending = KEYS[4], events = KEYS[6], signal = KEYS[7],
    groups = KEYS[8], groups_wait = KEYS[9], group_index = KEYS[10], fifo = KEYS[11]}
  if conf.groups then
    expect_group_keys(k)
  end
  local now = now_ms()
  local due = due_ids(KEYS[3], now, opts.LIMIT or DEFAULT_PROMOTE_LIMIT)
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
    signal(KEYS[7], 0)
  end
  return moved
end
