-- CLAIM: promotes due scheduled jobs (at most 1000), then, unless paused,
-- pops up to COUNT pending jobs (lowest score first) -> active under a lease,
-- within flow control: nothing while the queue is held (limit_hold), at most
-- what the rate limit's window has left (counted in limit_window and
-- limit_used), at most the room under the cap on active jobs (concurrency).
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] schedule
-- KEYS[4] pending
-- KEYS[5] active
-- KEYS[6] meta
-- KEYS[7] events
-- KEYS[8] signal
-- KEYS[9] dedup_owner
-- ARGV[1] worker name
-- ARGV[2] lease_ms (>= 1)
-- ARGV[3..] options: COUNT n (>= 1, default 1)
-- Reply: array of [id, token, payload, failures, max_attempts]; empty when
--        nothing is pending or the queue is paused; then, only when flow
--        control withheld pending jobs, wait_ms: > 0 until the window
--        reopens or the hold ends, 0 while the cap is full. A claimed job in
--        debounce mode frees its dedup key (the next enqueue with it makes a
--        new job).
-- Errors: BADARG queue|worker|lease_ms|count, SYNTAX, WRONGTYPE
-- Events: promoted (per promoted job), claimed (per job: token, worker)

local function main()
  local worker = text_arg(ARGV[1], 'worker')
  local lease = int_arg(ARGV[2], 'lease_ms', 1)
  local opts = options(3, {COUNT = function(v) return int_arg(v, 'count', 1) end})
  local count = opts.COUNT or 1

  local conf = settings(KEYS[6], true)
  expect_type(KEYS[2], 'string')
  expect_type(KEYS[3], 'zset')
  expect_type(KEYS[4], 'zset')
  expect_type(KEYS[5], 'zset')
  expect_type(KEYS[7], 'stream')
  expect_type(KEYS[8], 'zset')
  local now = now_ms()
  -- Every job hash this call may touch is read before its first write, so
  -- a key of the wrong type refuses the call whole: the due jobs, and the
  -- pending head (what ZPOPMIN takes comes from these two).
  local due = due_ids(KEYS[3], now, PROMOTE_PER_CLAIM)
  -- A job's dedup fields only when a job of the queue ever took a key
  -- (conf.dedup): a queue without keys reads no more than before.
  local jobs, debounced = {}, {}
  local function read(id)
    local f
    if conf.dedup then
      f = redis.call('HMGET', job_key(id), 'payload', 'failures', 'max_attempts', 'claims', 'priority',
        'dedup', 'dedup_mode')
      debounced[#debounced + 1] = f[7] == 'debounce'
    else
      f = redis.call('HMGET', job_key(id), 'payload', 'failures', 'max_attempts', 'claims', 'priority')
    end
    jobs[id] = {payload = f[1], failures = f[2], max_attempts = f[3], claims = f[4], priority = f[5],
      dedup = f[6], dedup_mode = f[7]}
  end
  for _, id in ipairs(due) do
    read(id)
  end
  local bound, wait, window, used = math.huge, nil, nil, 0
  local take = count
  if not conf.paused then
    bound, wait, window, used = flow(conf, now, KEYS[5])
    take = math.min(count, bound)
    if take > 0 then
      for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, take - 1)) do
        if not jobs[id] then
          read(id)
        end
      end
    end
  end
  -- A debounced job frees its key once claimed: the key types are checked first.
  local dedup = {dedup_owner = KEYS[9]}
  if conf.dedup then
    expect_owner_type(dedup, debounced)
  end
  promote(due, jobs, KEYS[3], KEYS[4], KEYS[2], KEYS[7], conf.events_max)
  if conf.paused then
    return {}
  end

  local popped = {}
  if take > 0 then
    popped = redis.call('ZPOPMIN', KEYS[4], take)
  end
  local deadline = int_str(now + lease)
  local now_s = int_str(now)
  local claimed = {}
  local leases = {}
  for j = 1, #popped, 2 do
    local id = popped[j]
    local job = jobs[id]
    if job and job.payload then
      local token = tonumber(job.claims or 0) + 1
      redis.call('HSET', job_key(id), 'state', 'active', 'claims', int_str(token),
        'claimed_at', now_s, 'worker', worker)
      emit(KEYS[7], conf.events_max, 'event', 'claimed', 'id', id, 'token', int_str(token), 'worker', worker)
      leases[#leases + 1] = deadline
      leases[#leases + 1] = id
      claimed[#claimed + 1] = {id, token, job.payload, tonumber(job.failures or 0), tonumber(job.max_attempts or DEFAULT_MAX_ATTEMPTS)}
      release_debounced(dedup, id, job)
    end
  end
  if #leases > 0 then
    chunked({'ZADD', KEYS[5]}, leases, 2)
  end
  if window and #claimed > 0 then
    redis.call('HSET', KEYS[6], 'limit_window', int_str(window), 'limit_used', int_str(used + #claimed))
  end
  if bound < count then
    -- Flow control bound: pending jobs left behind were withheld.
    if redis.call('ZCARD', KEYS[4]) > 0 then
      claimed[#claimed + 1] = wait
    end
  elseif #claimed == count and bound > count and redis.call('ZCARD', KEYS[4]) > 0 then
    -- A full batch may leave work behind: wake the next idle worker for it.
    signal(KEYS[8], 0)
  end
  return claimed
end
