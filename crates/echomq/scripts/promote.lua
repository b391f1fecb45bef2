-- PROMOTE: due scheduled jobs (run-at <= the server's now) -> pending,
-- oldest first, at most LIMIT (default 1000).
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] schedule
-- KEYS[4] pending
-- KEYS[5] meta
-- KEYS[6] events
-- KEYS[7] signal
-- ARGV[1..] options: LIMIT n (>= 1)
-- Reply: count promoted (integer)
-- Errors: BADARG queue|limit, SYNTAX, WRONGTYPE
-- Events: promoted (one per job)

local function main()
  local opts = options(1, {LIMIT = function(v) return int_arg(v, 'limit', 1) end})

  local conf = settings(KEYS[5])
  expect_type(KEYS[2], 'string')
  expect_type(KEYS[3], 'zset')
  expect_type(KEYS[4], 'zset')
  expect_type(KEYS[6], 'stream')
  expect_type(KEYS[7], 'zset')
  local due = due_ids(KEYS[3], now_ms(), opts.LIMIT or DEFAULT_PROMOTE_LIMIT)
  local jobs = {}
  for _, id in ipairs(due) do
    jobs[id] = {priority = redis.call('HGET', job_key(id), 'priority')}
  end
  local moved = promote(due, jobs, KEYS[3], KEYS[4], KEYS[2], KEYS[6], conf.events_max)
  if moved > 0 then
    signal(KEYS[7], 0)
  end
  return moved
end
