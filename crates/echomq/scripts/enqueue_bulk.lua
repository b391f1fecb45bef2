-- ENQUEUE_BULK: many ENQUEUEs in one call (wire 4's bulk path); each job
-- behaves exactly as ENQUEUE would, in order.
-- KEYS[1] base
-- KEYS[2] id
-- KEYS[3] seq
-- KEYS[4] pending
-- KEYS[5] meta
-- KEYS[6] events
-- KEYS[7] signal
-- ARGV: groups of four, one per job: id ('*' generates), payload, priority, attempts
-- Reply: flat [id1, created1, id2, created2, ...] (created 1 or 0)
-- Errors: BADARG id|payload|priority|attempts (nothing is written), WRONGTYPE
-- Events: enqueued (one per created job)

local function main()
  if #ARGV % 4 ~= 0 then
    refuse('BADARG jobs')
  end
  local jobs = {}
  for i = 1, #ARGV, 4 do
    jobs[#jobs + 1] = {
      id = id_arg(ARGV[i], true),
      payload = text_arg(ARGV[i + 1], 'payload'),
      priority = int_arg(ARGV[i + 2], 'priority', 0, 255),
      attempts = int_str(int_arg(ARGV[i + 3], 'attempts', 1)),
    }
  end

  local conf = settings(KEYS[5])
  expect_type(KEYS[2], 'string')
  expect_type(KEYS[3], 'string')
  expect_type(KEYS[4], 'zset')
  expect_type(KEYS[6], 'stream')
  expect_type(KEYS[7], 'zset')
  for _, job in ipairs(jobs) do
    if job.id ~= '*' then
      local found = redis.call('TYPE', job_key(job.id))['ok']
      if found ~= 'none' and found ~= 'hash' then
        refuse('WRONGTYPE Operation against a key holding the wrong kind of value')
      end
    end
  end

  local now = int_str(now_ms())
  local reply = {}
  local created = 0
  for _, job in ipairs(jobs) do
    local id = job.id
    local fresh = 1
    if id == '*' then
      repeat
        id = int_str(redis.call('INCR', KEYS[2]))
      until redis.call('EXISTS', job_key(id)) == 0
    elseif redis.call('EXISTS', job_key(id)) == 1 then
      fresh = 0
    end
    if fresh == 1 then
      push_pending(KEYS[4], KEYS[3], id, job.priority)
      redis.call('HSET', job_key(id), 'state', 'pending', 'payload', job.payload,
        'priority', int_str(job.priority), 'max_attempts', job.attempts, 'claims', 0,
        'failures', 0, 'stalls', 0, 'created_at', now, 'run_at', now)
      emit(KEYS[6], conf.events_max, 'event', 'enqueued', 'id', id)
      created = created + 1
    end
    reply[#reply + 1] = id
    reply[#reply + 1] = fresh
  end
  if created > 0 then
    signal(KEYS[7], 0)
  end
  return reply
end
