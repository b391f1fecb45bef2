-- FLOW.WAIT: the job in hand waits for the jobs it names (docs/protocol.md,
-- "Spawning and waiting"). Fenced by the token. Each edge not yet in its
-- deps hash is added `wait` (deps, deps_left raised, the `flows` mark).
-- With deps_left then above 0 the job leaves active as DELAY does (its
-- group's count, the cap's signal, its start-by kept, a cancellation
-- request cleared; no failure, no metrics) -> blocked, scored for its
-- check-up; otherwise nothing changes.
-- KEYS[1] base
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] blocked
-- KEYS[5] meta
-- KEYS[6] events
-- KEYS[7] signal
-- KEYS[8] groups
-- KEYS[9] groups_wait
-- KEYS[10] group_index
-- KEYS[11] fifo
-- KEYS[12] deadlines
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3] queue (a dependency's queue)
-- ARGV[4] dependency (its id)
-- ARGV[5..] more groups of queue, dependency
-- Reply: blocked, or ready (every named edge already resolved)
-- Errors: NOTACTIVE, BADARG queue|edges|id|token|dependency, WRONGTYPE
-- Events: blocked (deps)

local function main()
  if #ARGV < 4 or #ARGV % 2 ~= 0 then
    refuse('BADARG edges')
  end
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local own, named, seen = flow_jobs.own_field(id), {}, {}
  for at = 3, #ARGV, 2 do
    local queue = ARGV[at]
    if #queue == 0 or #queue > MAX_QUEUE_NAME or not string.find(queue, '^[A-Za-z0-9_%.:%-]+$') then
      refuse('BADARG queue')
    end
    local field = queue .. ' ' .. flow_jobs.name_arg(ARGV[at + 1], 'dependency', MAX_JOB_ID)
    if ARGV[at + 1] == '*' or field == own then
      refuse('BADARG dependency')
    end
    if not seen[field] then
      seen[field] = true
      named[#named + 1] = field
    end
  end

  local conf = settings(meta_key)
  local key = fenced(id, token)
  local deps = outbox.deps_key(id)
  expect_type(deps, 'hash')
  expect_type(active_key, 'zset')
  expect_type(blocked_key, 'zset')
  expect_type(events_key, 'stream')
  expect_type(signal_key, 'zset')
  expect_freed_types(conf, pending_key, fifo_key, signal_key)
  if conf.timed then
    expect_type(deadlines_key, 'zset')
  end
  local k = {pending = pending_key, signal = signal_key, groups = groups_key,
    groups_wait = groups_wait_key, group_index = group_index_key, fifo = fifo_key,
    deadlines = deadlines_key}
  local f = redis.call('HMGET', key, 'deps', 'deps_left', 'group')
  local group = conf.groups and f[3] or nil
  read_group(k, conf, group)
  local edges = {}
  for _, field in ipairs(named) do
    if not redis.call('HGET', deps, field) then
      edges[#edges + 1] = field
      edges[#edges + 1] = 'wait'
    end
  end
  local count = (tonumber(f[1]) or 0) + #edges / 2
  if count > FLOW_EDGES_MAX then
    refuse('BADARG edges')
  end
  local left = (tonumber(f[2]) or 0) + #edges / 2
  if left == 0 then
    return 'ready'
  end

  if #edges > 0 then
    redis.call('HSET', meta_key, 'flows', '1')
    chunked({'HSET', deps}, edges, 2)
  end
  local now = now_ms()
  redis.call('ZREM', active_key, id)
  if group then
    leave_active(k, conf, group, now)
  end
  redis.call('ZADD', blocked_key, int_str(now + FLOW_CHECKUP_MS), id)
  keep_deadline(k, conf, id)
  redis.call('HSET', key, 'state', 'blocked', 'deps', int_str(count), 'deps_left', int_str(left))
  redis.call('HDEL', key, 'cancel')
  emit(events_key, conf.events_max, 'blocked', 'id', id, 'deps', int_str(left))
  freed(conf, pending_key, fifo_key, signal_key)
  return 'blocked'
end
