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
-- KEYS[10] groups
-- KEYS[11] groups_wait
-- KEYS[12] group_index
-- ARGV[1] worker name
-- ARGV[2] lease_ms (>= 1)
-- ARGV[3..] options: COUNT n (>= 1, default 1)
-- Reply: array of [id, token, payload, failures, max_attempts], and the
--        job's traceparent sixth when it has one (read only once the
--        queue is traced: docs/protocol.md, "Traces"); empty when
--        nothing is pending or the queue is paused; then, only when flow
--        control withheld pending jobs, wait_ms: > 0 until the window
--        reopens or the hold ends, 0 while the cap is full. A claimed job in
--        debounce mode frees its dedup key (the next enqueue with it makes a
--        new job).
-- Errors: BADARG queue|worker|lease_ms|count, SYNTAX, WRONGTYPE
-- On a queue with groups, the jobs are taken round robin across the ready
-- lanes (docs/protocol.md, "Groups"); the jobs it promotes are claimable
-- from the next claim on.
-- Events: promoted (per promoted job), claimed (per job: token, worker)

-- The waiting groups whose window reopened by `now` (at most
-- PROMOTE_PER_CLAIM), each one's state read; none unless a group ever had
-- a cap or a limit.
local function reopened_groups(k, conf, now)
  if not conf.group_flow then
    return {}
  end
  local reopened = redis.call('ZRANGE', k.groups_wait, '-inf', int_str(now), 'BYSCORE', 'LIMIT', 0,
    PROMOTE_PER_CLAIM)
  for _, group in ipairs(reopened) do
    group_state(k, group)
  end
  return reopened
end

-- The round robin of a claim on a queue with groups, computed before any
-- write: the first `take` ready lanes (then the waiting groups whose window
-- reopened and that are ready now), each giving its head in turn while it
-- has jobs and room. Returns the picks in order (their ids, and each one's
-- lane at the same index), each
-- served lane's count and what becomes of it, the lanes in the line's
-- final order, and the waiting groups to put back.
local function round_robin(k, conf, take, now)
  -- The heads of a lane not read yet (never written to).
  local EMPTY = {}
  local line, states = {}, {}
  for _, lane in ipairs(redis.call('ZRANGE', k.groups, 0, take - 1)) do
    line[#line + 1] = lane
  end
  local reopened = reopened_groups(k, conf, now)
  for _, group in ipairs(reopened) do
    local st = group_state(k, group)
    if group_place(st, now, redis.call('EXISTS', lane_key(group)) == 1) == 'ready' then
      line[#line + 1] = group
    end
  end
  -- Each lane's heads, fetched as the round robin reaches them.
  local lanes = {}
  for _, lane in ipairs(line) do
    local room = take
    -- A group's cap and window matter only once a group ever had one.
    if lane ~= UNGROUPED and conf.group_flow then
      states[lane] = group_state(k, lane)
      local st = states[lane]
      if st.concurrency > 0 then
        room = math.min(room, math.max(st.concurrency - st.active, 0))
      end
      local window, used = rate_window(st, now)
      if window then
        room = math.min(room, math.max(st.limit_max - used, 0))
        st.window, st.used = window, used
      end
    end
    lanes[lane] = {room = room, taken = 0, heads = EMPTY}
  end
  -- The i-th head of a lane: read two at first (one to take, one to know
  -- whether more are left), then twice as many as read so far, never more
  -- than the lane may give plus one.
  local function head(lane, i)
    local l = lanes[lane]
    while l.heads[i] == nil and not l.ended do
      local from = #l.heads
      local n = math.max(1, math.min(math.max(2, from), math.min(l.room, take) + 1 - from))
      local ids
      if lane == UNGROUPED then
        ids = redis.call('ZRANGE', k.pending, 0, '+inf', 'BYSCORE', 'LIMIT', from, n)
      else
        ids = redis.call('ZRANGE', lane_key(lane), from, from + n - 1)
      end
      if from == 0 then
        l.heads = ids
      else
        for _, id in ipairs(ids) do
          l.heads[#l.heads + 1] = id
        end
      end
      l.ended = #ids < n
    end
    return l.heads[i]
  end
  local picks, picked_from, queue, first = {}, {}, {}, 1
  for i, lane in ipairs(line) do
    queue[i] = lane
  end
  while #picks < take and first <= #queue do
    local lane = queue[first]
    first = first + 1
    local l = lanes[lane]
    l.reached = true
    local id = head(lane, l.taken + 1)
    if id and l.taken < l.room then
      l.taken = l.taken + 1
      picks[#picks + 1] = id
      picked_from[#picks] = lane
      if l.taken < l.room and head(lane, l.taken + 1) then
        queue[#queue + 1] = lane
      end
    end
  end
  -- The line's final order: lanes not reached keep their turn, the served
  -- ones still in the line go to the back in order.
  local again = {}
  for i = first, #queue do
    local lane = queue[i]
    if lanes[lane].taken > 0 then
      again[#again + 1] = lane
    end
  end
  return picks, picked_from, lanes, states, again, reopened, line
end

-- Puts the lanes a claim served where they now belong, in one write per
-- set: back of the ready set (`again`, in order, then the other lanes it
-- reached that are still ready, in the line's order), the wait set, or out.
local function settle_lanes(k, lanes, states, again, line, now)
  -- A lane without a read state is one with neither cap nor limit (and
  -- not paused: a paused group is in no line).
  local UNLIMITED = {active = 0, paused = false, concurrency = 0, limit_max = 0, limit_per = 0}
  local back = {}
  for _, lane in ipairs(again) do
    back[lane] = true
  end
  local turn = next_turn(k)
  local ready, waiting, gone = {}, {}, {}
  for _, lane in ipairs(again) do
    ready[#ready + 1] = int_str(turn)
    ready[#ready + 1] = lane
    turn = turn + 1
  end
  for _, lane in ipairs(line) do
    if lanes[lane].reached and not back[lane] then
      local has_jobs
      if lane == UNGROUPED then
        has_jobs = #redis.call('ZRANGE', k.pending, 0, '+inf', 'BYSCORE', 'LIMIT', 0, 1) > 0
        if has_jobs then
          ready[#ready + 1] = int_str(turn)
          ready[#ready + 1] = lane
          turn = turn + 1
        else
          gone[#gone + 1] = lane
        end
      else
        has_jobs = redis.call('EXISTS', lane_key(lane)) == 1
        if not has_jobs then
          -- A group whose last pending job the claim took may have no key left.
          index_group(k, lane)
        end
        local where, reopen = group_place(states[lane] or UNLIMITED, now, has_jobs)
        if where == 'ready' then
          ready[#ready + 1] = int_str(turn)
          ready[#ready + 1] = lane
          turn = turn + 1
        else
          gone[#gone + 1] = lane
          if where == 'wait' then
            waiting[#waiting + 1] = int_str(reopen)
            waiting[#waiting + 1] = lane
          end
        end
      end
    end
  end
  if #gone > 0 then
    redis.call('ZREM', k.groups, unpack(gone))
  end
  if #ready > 0 then
    redis.call('ZADD', k.groups, unpack(ready))
  end
  if #waiting > 0 then
    redis.call('ZADD', k.groups_wait, unpack(waiting))
  end
end

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
  local k = {seq = KEYS[2], schedule = KEYS[3], pending = KEYS[4], events = KEYS[7], signal = KEYS[8],
    groups = KEYS[10], groups_wait = KEYS[11], group_index = KEYS[12]}
  local grouped = conf.groups
  if grouped then
    expect_group_keys(k)
  end
  local now = now_ms()
  -- Every job hash this call may touch is read before its first write, so
  -- a key of the wrong type refuses the call whole: the due jobs, and the
  -- pending head (what ZPOPMIN takes comes from these two), or on a queue
  -- with groups the heads the round robin picks (and every group's hash
  -- and lane it may write).
  local due = due_ids(KEYS[3], now, PROMOTE_PER_CLAIM)
  -- A job's dedup fields only when a job of the queue ever took a key
  -- (conf.dedup): a queue without keys reads no more than before.
  local jobs, debounced = {}, {}
  local names, at = job_field_names(conf, {'payload', 'failures', 'max_attempts', 'claims', 'priority'})
  -- A job's trace context only once a job of the queue had one.
  if conf.traced then
    names[#names + 1] = 'traceparent'
    at.traceparent = #names
  end
  -- A due job's group is read with it (its promotion writes the group's
  -- lane); a pending job's lane the round robin reads itself.
  local function read(id, due)
    local f = redis.call('HMGET', job_key(id), unpack(names))
    local job = {payload = f[1], failures = f[2], max_attempts = f[3], claims = f[4], priority = f[5],
      dedup = f[at.dedup], dedup_mode = f[at.dedup_mode], group = f[at.group], traceparent = f[at.traceparent]}
    if conf.dedup then
      debounced[#debounced + 1] = job.dedup_mode == 'debounce'
    end
    if due and job.group then
      read_lane(k, job.group)
    end
    jobs[id] = job
  end
  for _, id in ipairs(due) do
    read(id, true)
  end
  local bound, wait, window, used = math.huge, nil, nil, 0
  local take = count
  local picks, picked_from, lanes, states, again, reopened, line
  if not conf.paused then
    bound, wait, window, used = flow(conf, now, KEYS[5])
    take = math.min(count, bound)
    if grouped then
      if take > 0 then
        picks, picked_from, lanes, states, again, reopened, line = round_robin(k, conf, take, now)
      else
        picks, reopened = {}, reopened_groups(k, conf, now)
      end
      for _, id in ipairs(picks) do
        if not jobs[id] then
          read(id)
        end
      end
    elseif take > 0 then
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
  local promoted = promote(k, conf, due, jobs, now)
  if conf.paused then
    return {}
  end

  local popped = {}
  if grouped then
    -- Waiting groups whose window reopened are put where they belong.
    for _, group in ipairs(reopened) do
      place(k, group, group_state(k, group), now, redis.call('EXISTS', lane_key(group)) == 1)
    end
    local by_lane = {}
    for i, id in ipairs(picks) do
      popped[#popped + 1] = id
      popped[#popped + 1] = 0
      local lane = picked_from[i]
      if lane ~= UNGROUPED then
        local members = by_lane[lane]
        if members then
          members[#members + 1] = id
        else
          by_lane[lane] = {id}
        end
      end
    end
    if #picks > 0 then
      redis.call('ZREM', KEYS[4], unpack(picks))
    end
    for lane, members in pairs(by_lane) do
      redis.call('ZREM', lane_key(lane), unpack(members))
      -- A group counts its active jobs under a cap only, and its starts
      -- under a rate limit only.
      local st = states[lane]
      local fields = {}
      if st and st.concurrency > 0 then
        st.active = st.active + #members
        fields = {'active', int_str(st.active)}
      end
      if st and st.window then
        st.limit_window, st.limit_used = st.window, st.used + #members
        fields[#fields + 1] = 'limit_window'
        fields[#fields + 1] = int_str(st.window)
        fields[#fields + 1] = 'limit_used'
        fields[#fields + 1] = int_str(st.limit_used)
      end
      if #fields > 0 then
        redis.call('HSET', group_key(lane), unpack(fields))
      end
    end
    if lanes then
      settle_lanes(k, lanes, states, again, line, now)
    end
  elseif take > 0 then
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
      local entry = {id, token, job.payload, tonumber(job.failures or 0),
        tonumber(job.max_attempts or DEFAULT_MAX_ATTEMPTS)}
      if job.traceparent then
        entry[#entry + 1] = job.traceparent
      end
      claimed[#claimed + 1] = entry
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
  elseif #claimed == count and bound > count and redis.call('ZCARD', grouped and k.groups or KEYS[4]) > 0 then
    -- A full batch may leave work behind: wake the next idle worker for it.
    signal(KEYS[8], 0)
  elseif grouped and promoted > 0 then
    -- Jobs this claim promoted are claimable from the next claim on.
    signal(KEYS[8], 0)
  end
  return claimed
end
