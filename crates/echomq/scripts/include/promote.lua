-- Into pending: due scheduled jobs promoted, a job pushed to the back of
-- its priority band (the fifo or the pending set), and the first half of
-- a move back (REQUEUE, REPROCESS).

-- The due scheduled jobs (score <= now), oldest first, at most `limit`.
local function due_ids(schedule, now, limit)
  return redis.call('ZRANGE', schedule, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
end

-- Whether a job of `priority` and `group` enters pending by `fifo`: on a
-- queue without groups, a job of priority 0.
local function by_fifo(conf, priority, group)
  return not conf.groups and not group and priority == 0
end

-- Job `id` (a LIFO job) enters pending at the front of its priority band:
-- at the head of `fifo` (by_fifo), else scored lifo_score with a fresh
-- `lifo_seq` of the meta hash, and its group's lane.
local function push_lifo(k, conf, id, priority, group, now)
  if by_fifo(conf, priority, group) then
    redis.call('LPUSH', k.fifo, id)
    return
  end
  local lifo_seq = redis.call('HINCRBY', k.meta, 'lifo_seq', 1)
  enter_pending(k, conf, id, lifo_score(priority, lifo_seq), group, now)
end

-- Job `id` enters pending at the back of its priority band: by `fifo`
-- (by_fifo), else with a fresh seq (seq_score), and its group's lane; on
-- a queue with the `lifo` mark, a job whose `lifo` is 1 at the front
-- instead (push_lifo).
local function push_pending(k, conf, id, priority, group, now)
  if conf.lifo and redis.call('HGET', job_key(id), 'lifo') == '1' then
    push_lifo(k, conf, id, priority, group, now)
    return
  end
  if by_fifo(conf, priority, group) then
    redis.call('RPUSH', k.fifo, id)
    return
  end
  local seq = redis.call('INCR', k.seq)
  enter_pending(k, conf, id, seq_score(priority, seq), group, now)
end

-- Moves `due` (from due_ids) to pending, each with a fresh seq; `jobs[id]`
-- holds each job's `priority` and `group` read before the command's first
-- write (so a job key of the wrong type refuses the whole command), and
-- each group's state read. `k` names the keys
-- (schedule, pending, seq, events and the group keys).
local function promote(k, conf, due, jobs, now)
  for _, id in ipairs(due) do
    push_pending(k, conf, id, tonumber(jobs[id].priority or 0), jobs[id].group, now)
    redis.call('HSET', job_key(id), 'state', 'pending')
    emit(k.events, conf.events_max, 'promoted', 'id', id)
  end
  if #due > 0 then
    redis.call('ZREM', k.schedule, unpack(due))
  end
  return #due
end

-- The first half of a move back to pending (REQUEUE, REPROCESS): the
-- job's state must be a key of `from` (a state -> the set a job in it is
-- in); NOJOB when absent, BADSTATE otherwise; then the types of what the
-- move writes are checked (on a queue with groups, the group keys and the
-- job's group's; on a timed queue, deadlines). `k` names the keys (seq,
-- pending, events, signal, deadlines and the group keys). Returns the job key, the set it leaves, its state, its
-- priority and its group.
local function pending_again(k, conf, id, from)
  local key = job_key(id)
  local job = redis.call('HMGET', key, 'state', 'priority', 'group')
  local state = job[1]
  if not state then
    refuse('NOJOB')
  end
  local set = from[state]
  if not set then
    refuse('BADSTATE ' .. state)
  end
  expect_type(k.seq, 'string')
  expect_pending_types(k.pending, k.fifo)
  expect_type(k.events, 'stream')
  expect_type(k.signal, 'zset')
  if conf.timed then
    expect_type(k.deadlines, 'zset')
  end
  local group = conf.groups and job[3] or nil
  read_group(k, conf, group)
  return key, set, state, tonumber(job[2] or 0), group
end
