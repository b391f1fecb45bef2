-- Groups (docs/protocol.md, "Groups"). `k` names the keys: pending, seq,
-- signal, groups, groups_wait, group_index; `k.gst` caches each group's
-- state for the length of one command.

-- The lane of the ungrouped jobs in the ready set.
local UNGROUPED = '{}'

local function lane_key(group)
  return base .. ':glane:' .. group
end

local function group_key(group)
  return base .. ':group:' .. group
end

-- A group: the job-id rule with at most MAX_GROUP bytes; refused as
-- BADARG name (group unless said).
local function group_arg(value, name)
  if value == nil or #value == 0 or #value > MAX_GROUP or string.find(value, ID_REFUSED) then
    refuse('BADARG ' .. (name or 'group'))
  end
  return value
end

-- A W3C trace context (TRACE tp): version-trace_id-parent_id-flags in
-- lowercase hex, the ids TRACE_ID_HEX and PARENT_ID_HEX digits long, the
-- version and flags two, the version not ff, neither id all zeros;
-- refused as BADARG traceparent.
local function trace_arg(value)
  local version, trace, parent, flags = string.match(value or '',
    '^([0-9a-f]+)%-([0-9a-f]+)%-([0-9a-f]+)%-([0-9a-f]+)$')
  if not version or #version ~= 2 or #trace ~= TRACE_ID_HEX or #parent ~= PARENT_ID_HEX or #flags ~= 2
      or version == 'ff' or not string.find(trace, '[^0]') or not string.find(parent, '[^0]') then
    refuse('BADARG traceparent')
  end
  return value
end

-- Checks the types of the queue's group keys (before a command's first
-- write, on a queue with groups).
local function expect_group_keys(k)
  expect_type(k.groups, 'zset')
  expect_type(k.groups_wait, 'zset')
  expect_type(k.group_index, 'zset')
  -- What the lanes' moves write besides: pending, and the signal key.
  if k.pending then
    expect_pending_types(k.pending, k.fifo)
  end
  if k.signal then
    expect_type(k.signal, 'zset')
  end
end

-- A group's state and settings, read once per command (the HMGET checks
-- the hash's type): active (kept only under a cap), paused, concurrency
-- and the rate limit with its window, each 0 when absent.
local function group_state(k, group)
  k.gst = k.gst or {}
  local st = k.gst[group]
  if st then
    return st
  end
  local v = redis.call('HMGET', group_key(group), 'active', 'paused', 'concurrency', 'limit_max', 'limit_per',
    'limit_window', 'limit_used')
  st = {active = flow_setting(v[1]), paused = v[2] == '1', concurrency = flow_setting(v[3]),
    limit_max = flow_setting(v[4]), limit_per = flow_setting(v[5]), limit_window = flow_setting(v[6]),
    limit_used = flow_setting(v[7])}
  k.gst[group] = st
  return st
end

-- A group whose lane a command may write: its state read and its lane's
-- type checked (before the command's first write).
local function read_lane(k, group)
  expect_type(lane_key(group), 'zset')
  return group_state(k, group)
end

-- Before a command's first write, on a queue with groups: the group keys'
-- types checked, and the state and lane of `group` (the job's, or none)
-- read.
local function read_group(k, conf, group)
  if conf.groups then
    expect_group_keys(k)
  end
  if group then
    read_lane(k, group)
  end
end

-- Where a group belongs at `now`: 'ready', 'wait' (with the ms its window
-- reopens), or nil (no jobs in its lane, paused, or at its cap).
local function group_place(st, now, has_jobs)
  if not has_jobs or st.paused or (st.concurrency > 0 and st.active >= st.concurrency) then
    return nil
  end
  local window, used = rate_window(st, now)
  if window and used >= st.limit_max then
    return 'wait', window + st.limit_per
  end
  return 'ready'
end

-- The turn of a lane joining the ready set: 1 + the highest (the back of
-- the line).
local function next_turn(k)
  local last = redis.call('ZRANGE', k.groups, -1, -1, 'WITHSCORES')
  return (tonumber(last[2]) or 0) + 1
end

-- Puts a group where it belongs (a lane already ready keeps its turn; one
-- that becomes ready wakes a worker).
local function place(k, group, st, now, has_jobs)
  local where, reopen = group_place(st, now, has_jobs)
  if where == 'ready' then
    redis.call('ZREM', k.groups_wait, group)
    if not redis.call('ZSCORE', k.groups, group) then
      redis.call('ZADD', k.groups, int_str(next_turn(k)), group)
      signal(k.signal, 0)
    end
  else
    redis.call('ZREM', k.groups, group)
    if where == 'wait' then
      redis.call('ZADD', k.groups_wait, int_str(reopen), group)
    else
      redis.call('ZREM', k.groups_wait, group)
    end
  end
end

-- Keeps group_index exact: a group is listed iff its lane or hash exists.
local function index_group(k, group)
  if redis.call('EXISTS', lane_key(group), group_key(group)) > 0 then
    redis.call('ZADD', k.group_index, 0, group)
  else
    redis.call('ZREM', k.group_index, group)
  end
end

-- A group's settings changed (its state `st` as they leave it): it is
-- put where it belongs, and listed iff it has keys.
local function group_changed(k, group, st, now)
  place(k, group, st, now, redis.call('EXISTS', lane_key(group)) == 1)
  index_group(k, group)
end

-- GROUP.PAUSE and GROUP.RESUME: `paused` set or deleted in the group's
-- hash (ARGV[1]), event `event`, and the group put where it belongs. `k`
-- names the keys (meta, events, signal and the group keys).
local function set_group_paused(k, paused, event)
  local group = group_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end
  local conf = settings(k.meta)
  local st = group_state(k, group)
  expect_type(k.events, 'stream')
  expect_group_keys(k)
  if paused then
    redis.call('HSET', group_key(group), 'paused', '1')
  else
    redis.call('HDEL', group_key(group), 'paused')
  end
  st.paused = paused
  emit(k.events, conf.events_max, event, 'group', group)
  group_changed(k, group, st, now_ms())
  return {ok = 'OK'}
end

-- Sets the groups mark on the first grouped job: ungrouped jobs already
-- pending make the {} lane ready.
local function mark_groups(k, conf)
  if conf.groups then
    return
  end
  redis.call('HSET', k.meta, 'groups', '1')
  conf.groups = true
  -- A queue with groups keeps no fifo: its jobs join priority 0's band of
  -- pending, in order, each with a fresh seq.
  local ids = redis.call('LRANGE', k.fifo, 0, -1)
  if #ids > 0 then
    local first = redis.call('INCRBY', k.seq, #ids) - #ids
    local scored = {}
    for i, id in ipairs(ids) do
      scored[#scored + 1] = int_str(seq_score(0, first + i))
      scored[#scored + 1] = id
    end
    chunked({'ZADD', k.pending}, scored, 2)
    redis.call('DEL', k.fifo)
  end
  if redis.call('ZCARD', k.pending) > 0 then
    redis.call('ZADD', k.groups, int_str(next_turn(k)), UNGROUPED)
  end
end

-- On a queue with groups, ungrouped jobs entered pending: the {} lane is
-- ready (keeping its turn when it was).
local function ungrouped_entered(k, conf)
  if conf.groups and not redis.call('ZSCORE', k.groups, UNGROUPED) then
    redis.call('ZADD', k.groups, int_str(next_turn(k)), UNGROUPED)
  end
end

-- Ungrouped jobs left pending other than by a claim: the {} lane leaves
-- the ready set once no ungrouped job is pending.
local function ungrouped_left(k, conf)
  if conf.groups and #redis.call('ZRANGE', k.pending, 0, '+inf', 'BYSCORE', 'LIMIT', 0, 1) == 0 then
    redis.call('ZREM', k.groups, UNGROUPED)
  end
end

-- Job `id` enters pending at `score` (seq_score, lifo_score): a grouped one
-- scored 2^52 lower there and at `score` in its lane (a lane that was
-- empty joins the index and is put where it belongs).
local function enter_pending(k, conf, id, score, group, now)
  if not group then
    redis.call('ZADD', k.pending, int_str(score), id)
    ungrouped_entered(k, conf)
    return
  end
  redis.call('ZADD', k.pending, int_str(score - GROUPED_OFFSET), id)
  local lane = lane_key(group)
  local fresh = redis.call('EXISTS', lane) == 0
  redis.call('ZADD', lane, int_str(score), id)
  if fresh then
    redis.call('ZADD', k.group_index, 0, group)
    place(k, group, group_state(k, group), now, true)
  end
end

-- Jobs of `group` (ids) that left pending other than by a claim: out of
-- their lane, and a lane left empty out of the ready and wait sets and,
-- with no hash left, out of the index.
local function lane_deleted(k, group, ids)
  local lane = lane_key(group)
  chunked({'ZREM', lane}, ids, 1)
  if redis.call('EXISTS', lane) == 0 then
    redis.call('ZREM', k.groups, group)
    redis.call('ZREM', k.groups_wait, group)
    index_group(k, group)
  end
end

-- Job `id` (of `group`, or none) left pending other than by a claim: out
-- of its lane, and a lane left empty out of the ready and wait sets.
local function leave_pending(k, conf, id, group)
  if redis.call('ZREM', k.pending, id) == 0 then
    redis.call('LREM', k.fifo, 1, id)
  end
  if not group then
    ungrouped_left(k, conf)
    return
  end
  lane_deleted(k, group, {id})
end

-- A job of `group` left active: under the group's cap, its active drops
-- (the field goes at 0), and a group that was at its cap is put where it
-- belongs. Only a queue where a group ever had a cap or a limit
-- (conf.group_flow) reads the group at all.
local function leave_active(k, conf, group, now)
  if not conf.group_flow then
    return
  end
  local st = group_state(k, group)
  if st.concurrency == 0 then
    return
  end
  local capped = st.active >= st.concurrency
  st.active = math.max(st.active - 1, 0)
  if st.active == 0 then
    redis.call('HDEL', group_key(group), 'active')
  else
    redis.call('HSET', group_key(group), 'active', int_str(st.active))
  end
  if capped then
    place(k, group, st, now, redis.call('EXISTS', lane_key(group)) == 1)
  end
end

-- The active jobs of each group (one pass over the active set): what a
-- group without a cap counts as active.
local function active_by_group(active)
  local counts = {}
  for _, id in ipairs(redis.call('ZRANGE', active, 0, -1)) do
    local group = redis.call('HGET', job_key(id), 'group')
    if group then
      counts[group] = (counts[group] or 0) + 1
    end
  end
  return counts
end

-- Marks the queue once a group gets a cap or a rate limit: from then on
-- claims read groups' settings and finishing jobs their group's cap.
local function mark_group_flow(meta, conf)
  if not conf.group_flow then
    redis.call('HSET', meta, 'group_flow', '1')
    conf.group_flow = true
  end
end
