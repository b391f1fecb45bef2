-- Whether any of `keys` exists (one EXISTS per UNPACK_CHUNK keys).
local function any_exists(keys)
  for first = 1, #keys, UNPACK_CHUNK do
    if redis.call('EXISTS', unpack(keys, first, math.min(first + UNPACK_CHUNK - 1, #keys))) > 0 then
      return true
    end
  end
  return false
end

-- Creates each {id=, payload=, priority=, attempts=, run_at=, repeat=,
-- dedup=, group=, traceparent=} of `jobs` (id '*' takes the next free
-- counter value) unless its id exists: to pending when run_at is absent
-- or due, else to the schedule set. `k` names the keys (id, seq, pending,
-- schedule, meta, events, signal). Checks every
-- given id's key type before the first write. Returns [id, 1|0, ...].
local function enqueue_jobs(k, conf, jobs, now_s)
  local given, given_set, generated = {}, {}, 0
  for j = 1, #jobs do
    local job = jobs[j]
    if job.id == '*' then
      generated = generated + 1
    else
      local key = job_key(job.id)
      given[#given + 1] = key
      given_set[key] = true
    end
  end
  local taken = {}
  if #given > 0 and any_exists(given) then
    for _, key in ipairs(given) do
      local found = redis.call('TYPE', key)['ok']
      if found == 'hash' then
        taken[key] = true
      elseif found ~= 'none' then
        refuse('WRONGTYPE Operation against a key holding the wrong kind of value')
      end
    end
  end

  local fresh, fresh_keys = {}, {}
  if generated > 0 then
    local last = redis.call('INCRBY', k.id, generated)
    -- int_str and job_key written out: a call a job costs a batch more.
    local candidates, keys, clash = {}, {}, false
    for i = 1, generated do
      local id = string.format('%d', last - generated + i)
      candidates[i] = id
      keys[i] = job_prefix .. id
      clash = clash or given_set[keys[i]] ~= nil
    end
    -- A generated id skips ids already taken, and ids given in this batch.
    if clash or any_exists(keys) then
      for i, id in ipairs(candidates) do
        while given_set[job_key(id)] or redis.call('EXISTS', job_key(id)) == 1 do
          id = int_str(redis.call('INCR', k.id))
        end
        candidates[i] = id
        keys[i] = job_key(id)
      end
    end
    fresh, fresh_keys = candidates, keys
  end

  -- The jobs created, as parallel lists (no table per job): id, key, job.
  local reply, ids, keys, made, scored = {}, {}, {}, {}, {}
  local next_fresh, n = 1, 0
  for j = 1, #jobs do
    local job = jobs[j]
    local id = job.id
    local key
    if id == '*' then
      id = fresh[next_fresh]
      key = fresh_keys[next_fresh]
      next_fresh = next_fresh + 1
    else
      key = job_key(id)
    end
    reply[#reply + 1] = id
    if taken[key] then
      reply[#reply + 1] = 0
    else
      taken[key] = true
      n = n + 1
      ids[n], keys[n], made[n] = id, key, job
      reply[#reply + 1] = 1
    end
  end
  if n == 0 then
    return reply
  end

  -- Positions in the created lists: due now, and later.
  local now = tonumber(now_s)
  local due, later = {}, {}
  for i = 1, n do
    local job = made[i]
    -- (run_at tested first: a bulk enqueue's jobs have none, and type() is a call)
    if job.run_at and type(job.run_at) == 'function' then
      job.run_at = job.run_at(now)
    end
    if job.run_at and job.run_at > now then
      later[#later + 1] = i
    else
      due[#due + 1] = i
    end
  end
  -- Priorities and attempts repeat across a batch: each formatted once.
  local formatted = {}
  local function small_int(value)
    local text = formatted[value]
    if not text then
      text = int_str(value)
      formatted[value] = text
    end
    return text
  end
  -- Writes the hash of the i-th created job in `state`: its fields, none
  -- of the absent ones (a default is read where a field is absent).
  local function write_job(i, state)
    local job = made[i]
    if state == 'pending' and job.priority == 0 and job.attempts == DEFAULT_MAX_ATTEMPTS
        and not (job['repeat'] or job.dedup or job.group or job.traceparent) then
      -- The common job: three fields, no list built.
      redis.call('HSET', keys[i], 'state', state, 'payload', job.payload, 'created_at', now_s)
      return
    end
    local f = {'state', state, 'payload', job.payload}
    if job.priority ~= 0 then
      f[#f + 1] = 'priority'
      f[#f + 1] = small_int(job.priority)
    end
    if job.attempts ~= DEFAULT_MAX_ATTEMPTS then
      f[#f + 1] = 'max_attempts'
      f[#f + 1] = small_int(job.attempts)
    end
    f[#f + 1] = 'created_at'
    f[#f + 1] = now_s
    if state == 'scheduled' then
      f[#f + 1] = 'run_at'
      f[#f + 1] = int_str(job.run_at)
    end
    if job['repeat'] then
      f[#f + 1] = 'repeat'
      f[#f + 1] = job['repeat']
    end
    if job.dedup then
      f[#f + 1] = 'dedup'
      f[#f + 1] = job.dedup
      -- Simple is the mode of a key without one.
      if job.dedup_mode ~= 'simple' then
        f[#f + 1] = 'dedup_mode'
        f[#f + 1] = job.dedup_mode
      end
    end
    if job.group then
      f[#f + 1] = 'group'
      f[#f + 1] = job.group
    end
    if job.traceparent then
      f[#f + 1] = 'traceparent'
      f[#f + 1] = job.traceparent
    end
    redis.call('HSET', keys[i], unpack(f))
  end
  -- The first job of the queue sets the logs mark, before the call's
  -- other writes enter pending or the schedule. The first grouped job
  -- marks the queue; so does the first job with a trace context (CLAIM
  -- reads a job's traceparent only on a marked queue).
  mark_logs(k, conf)
  for i = 1, n do
    local job = made[i]
    if job.group then
      mark_groups(k, conf)
    end
    if job.traceparent and not conf.traced then
      redis.call('HSET', k.meta, 'traced', '1')
      conf.traced = true
    end
  end

  if #due > 0 then
    -- Seqs only for the jobs that enter the sorted set, in one INCRBY.
    local sequenced, fifo = 0, {}
    for d = 1, #due do
      local i = due[d]
      fifo[d] = by_fifo(conf, made[i].priority, made[i].group)
      if not fifo[d] then
        sequenced = sequenced + 1
      end
    end
    local first_seq, seq, queued, entered = 0, 0, {}, {}
    if sequenced > 0 then
      first_seq = redis.call('INCRBY', k.seq, sequenced) - sequenced
    end
    for d = 1, #due do
      local i = due[d]
      local id, job = ids[i], made[i]
      write_job(i, 'pending')
      entered[d] = id
      if fifo[d] then
        queued[#queued + 1] = id
      else
        seq = seq + 1
        local score = job.priority * PENDING_BAND + ((first_seq + seq) % PENDING_BAND)
        if job.group then
          enter_pending(k, conf, id, score, job.group, now)
        else
          scored[#scored + 1] = int_str(score)
          scored[#scored + 1] = id
        end
      end
    end
    emit_jobs(k.events, conf.events_max, 'enqueued', entered)
    if #queued > 0 then
      chunked({'RPUSH', k.fifo}, queued, 1)
    end
    if #scored > 0 then
      chunked({'ZADD', k.pending}, scored, 2)
      ungrouped_entered(k, conf)
    end
    signal(k.signal, 0)
  end
  if #later > 0 then
    local at, scheduled, run_ats, earliest = {}, {}, {}, nil
    for l, i in ipairs(later) do
      local job = made[i]
      local run_at = int_str(job.run_at)
      write_job(i, 'scheduled')
      scheduled[l], run_ats[l] = ids[i], run_at
      at[#at + 1] = run_at
      at[#at + 1] = ids[i]
      earliest = math.min(earliest or job.run_at, job.run_at)
    end
    emit_jobs(k.events, conf.events_max, 'scheduled', scheduled, 'run_at', run_ats)
    chunked({'ZADD', k.schedule}, at, 2)
    signal(k.signal, int_str(earliest))
  end
  return reply
end

-- ENQUEUE or SCHEDULE of one job with a dedup key (the other keys' types
-- checked; the dedup keys' are checked by their first read, before any
-- write): an id that exists changes nothing; a held key creates nothing
-- (or debounces its waiting debounced job); else the job is created and
-- takes the key. Only a throttle key enters the dedup set, and only a
-- throttle enqueue trims expired entries (throttle keys are the only ones
-- that expire); a simple or debounce key taken from an expired throttle
-- entry leaves the set.
local function enqueue_deduplicated(k, conf, job, now)
  if job.id ~= '*' then
    local found = redis.call('TYPE', job_key(job.id))['ok']
    if found == 'hash' then
      return {job.id, 0}
    elseif found ~= 'none' then
      refuse('WRONGTYPE Operation against a key holding the wrong kind of value')
    end
  end
  local holder, expired = dedup_holder(k, job.dedup, now)
  if holder then
    if job.dedup_mode == 'debounce' then
      local found = redis.call('HMGET', job_key(holder), 'state', 'dedup_mode', 'group')
      if found[2] == 'debounce' and (found[1] == 'scheduled' or found[1] == 'pending') then
        local group = conf.groups and found[3] or nil
        if group and found[1] == 'pending' then
          read_lane(k, group)
        end
        return debounce(k, conf, holder, found[1], group, job, now)
      end
    end
    emit(k.events, conf.events_max, 'deduplicated', 'id', holder, 'key', job.dedup,
      'requested', job.id)
    return {holder, 2}
  end
  local throttle = job.dedup_mode == 'throttle'
  if throttle then
    trim_dedup(k, now)
  end
  local reply = enqueue_jobs(k, conf, {job}, int_str(now))
  redis.call('HSET', k.dedup_owner, job.dedup, reply[1])
  if throttle then
    redis.call('ZADD', k.dedup, int_str(now + job.dedup_ms), job.dedup)
  elseif expired then
    redis.call('ZREM', k.dedup, job.dedup)
  end
  if not conf.dedup then
    redis.call('HSET', k.meta, 'dedup', '1')
  end
  return reply
end

-- The whole of ENQUEUE and SCHEDULE once arguments are checked: reads what
-- it needs of the settings, checks the type of every key it may write (the
-- dedup keys' when it reads them), then creates `jobs` (one job with a
-- dedup key goes through enqueue_deduplicated). `k` names
-- the keys (id, seq, pending, meta, events, signal, dedup, dedup_owner,
-- and schedule when a job may be scheduled).
local function enqueue_checked(k, jobs)
  local conf = enqueue_settings(k.meta)
  expect_type(k.id, 'string')
  expect_type(k.seq, 'string')
  expect_pending_types(k.pending, k.fifo)
  if k.schedule then
    expect_type(k.schedule, 'zset')
  end
  expect_type(k.events, 'stream')
  expect_type(k.signal, 'zset')
  -- A grouped job's keys are read (types checked) before the first write.
  if conf.groups or jobs[1].group then
    expect_group_keys(k)
  end
  if jobs[1].group then
    read_lane(k, jobs[1].group)
  end
  if jobs[1].dedup then
    return enqueue_deduplicated(k, conf, jobs[1], now_ms())
  end
  return enqueue_jobs(k, conf, jobs, int_str(now_ms()))
end

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

-- The server's default zset-max-listpack-value: the longest member a
-- sorted set keeps in a listpack (a script may not read the setting).
local LISTPACK_VALUE_MAX = 64

-- Makes the sorted set at `key` a skiplist: a member longer than
-- zset-max-listpack-value turns a set into one, and removing it does not
-- turn it back. A busy active set is then not a listpack that every
-- lease's ZADD and ZREM scans; the keyspace is the same. The member is
-- never a job id (ids hold no whitespace and no braces).
local function as_skiplist(key)
  local head = '{skiplist} '
  local pad = head .. string.rep('.', LISTPACK_VALUE_MAX + 1 - #head)
  redis.call('ZADD', key, 0, pad)
  redis.call('ZREM', key, pad)
end

-- CLAIM's body once its arguments are checked (`claim.lua`, and the
-- CLAIM tail of `complete_bulk.lua`): the keys' types, the due jobs
-- promoted, then unless paused up to `count` pending jobs -> active under
-- a lease of `lease` ms from `now`. `k` names every fixed key CLAIM
-- touches; `conf` is the settings with the limits. Returns CLAIM's reply.
local function claim_checked(k, conf, worker, lease, count, now)
  expect_type(k.seq, 'string')
  expect_type(k.schedule, 'zset')
  expect_pending_types(k.pending, k.fifo)
  expect_type(k.active, 'zset')
  expect_type(k.events, 'stream')
  expect_type(k.signal, 'zset')
  local grouped = conf.groups
  if grouped then
    expect_group_keys(k)
  end
  -- Every job hash this call may touch is read before its first write, so
  -- a key of the wrong type refuses the call whole: the due jobs, and the
  -- pending head (what ZPOPMIN takes comes from these two), or on a queue
  -- with groups the heads the round robin picks (and every group's hash
  -- and lane it may write).
  local due = due_ids(k.schedule, now, PROMOTE_PER_CLAIM)
  -- A job's dedup fields only when a job of the queue ever took a key
  -- (conf.dedup): a queue without keys reads no more than before.
  local jobs, debounced = {}, {}
  local names, at = job_field_names(conf, {'payload', 'failures', 'max_attempts', 'claims'})
  -- A job's trace context only once a job of the queue had one.
  if conf.traced then
    names[#names + 1] = 'traceparent'
    at.traceparent = #names
  end
  -- A due job's priority, last: only its promotion needs it.
  local due_names = {unpack(names)}
  due_names[#due_names + 1] = 'priority'
  local priority_at = #due_names
  -- A due job's group is read with it (its promotion writes the group's
  -- lane); a pending job's lane the round robin reads itself.
  -- A job is its HMGET reply, by position: payload, failures,
  -- max_attempts, claims, then the fields `at` names (a due job's
  -- priority after them).
  local job_keys, due_jobs = {}, {}
  local function read(id, due)
    local key = job_prefix .. id
    local f = redis.call('HMGET', key, unpack(due and due_names or names))
    if conf.dedup then
      debounced[#debounced + 1] = f[at.dedup_mode] == 'debounce'
    end
    if due then
      local group = conf.groups and f[at.group] or nil
      if group then
        read_lane(k, group)
      end
      due_jobs[id] = {priority = f[priority_at], group = group}
    end
    jobs[id], job_keys[id] = f, key
  end
  for _, id in ipairs(due) do
    read(id, true)
  end
  local bound, wait, window, used = math.huge, nil, nil, 0
  local take = count
  local picks, picked_from, lanes, states, again, reopened, line
  if not conf.paused then
    bound, wait, window, used = flow(conf, now, k.active)
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
      -- The head of pending: fifo's, then the sorted set's for the rest.
      local head = redis.call('LRANGE', k.fifo, 0, take - 1)
      if #head < take then
        for _, id in ipairs(redis.call('ZRANGE', k.pending, 0, take - #head - 1)) do
          head[#head + 1] = id
        end
      end
      for j = 1, #head do
        local id = head[j]
        if not jobs[id] then
          read(id)
        end
      end
    end
  end
  -- A debounced job frees its key once claimed: the key types are checked first.
  local dedup = {dedup_owner = k.dedup_owner}
  if conf.dedup then
    expect_owner_type(dedup, debounced)
  end
  local promoted = promote(k, conf, due, due_jobs, now)
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
      redis.call('ZREM', k.pending, unpack(picks))
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
    -- Fifo's head first (each id followed by a placeholder score, as
    -- ZPOPMIN answers), then the sorted set's lowest.
    local fifo = redis.call('LPOP', k.fifo, take) or {}
    for j = 1, #fifo do
      popped[2 * j - 1], popped[2 * j] = fifo[j], 0
    end
    if #popped / 2 < take then
      for _, v in ipairs(redis.call('ZPOPMIN', k.pending, take - #popped / 2)) do
        popped[#popped + 1] = v
      end
    end
  end
  local deadline = int_str(now + lease)
  local now_s = int_str(now)
  local claimed, leases, ids, tokens, n = {}, {}, {}, {}, 0
  -- Tokens and counts repeat across a batch (most jobs are on their first
  -- claim, all at one clock): each formatted once. An absent count is
  -- read without a call.
  local texts = {}
  for j = 1, #popped, 2 do
    local id = popped[j]
    local f = jobs[id]
    if f and f[1] then
      local claims, failures, attempts = 1, 0, DEFAULT_MAX_ATTEMPTS
      if f[4] then
        claims = tonumber(f[4]) + 1
      end
      -- job_token(claims, now), inline: the hot path.
      local token = now * TOKENS_PER_MS + claims % TOKENS_PER_MS
      if f[2] then
        failures = tonumber(f[2])
      end
      if f[3] then
        attempts = tonumber(f[3])
      end
      local token_s, claims_s = texts[token], texts[claims]
      if not token_s then
        token_s = int_str(token)
        texts[token] = token_s
      end
      if not claims_s then
        claims_s = int_str(claims)
        texts[claims] = claims_s
      end
      redis.call('HSET', job_keys[id], 'state', 'active', 'claims', claims_s, 'claimed_at', now_s,
        'worker', worker)
      n = n + 1
      ids[n], tokens[n] = id, token_s
      leases[2 * n - 1], leases[2 * n] = deadline, id
      local entry = {id, token, f[1], failures, attempts}
      if conf.traced and f[at.traceparent] then
        entry[6] = f[at.traceparent]
      end
      claimed[n] = entry
      if conf.dedup and f[at.dedup_mode] == 'debounce' then
        release_dedup(dedup, id, f[at.dedup], 'debounce')
      end
    end
  end
  emit_jobs(k.events, conf.events_max, 'claimed', ids, 'token', tokens, 'worker', worker)
  if #leases > 0 then
    local before = redis.call('ZCARD', k.active)
    chunked({'ZADD', k.active}, leases, 2)
    if before < SKIPLIST_LEASES and before + #leases / 2 >= SKIPLIST_LEASES then
      as_skiplist(k.active)
    end
  end
  if window and #claimed > 0 then
    redis.call('HSET', k.meta, 'limit_window', int_str(window), 'limit_used', int_str(used + #claimed))
  end
  if bound < count then
    -- Flow control bound: pending jobs left behind were withheld.
    if pending_count(k.pending, k.fifo) > 0 then
      claimed[#claimed + 1] = wait
    end
  elseif #claimed == count and bound > count
      and (grouped and redis.call('ZCARD', k.groups) or pending_count(k.pending, k.fifo)) > 0 then
    -- A full batch may leave work behind: wake the next idle worker for it.
    signal(k.signal, 0)
  elseif grouped and promoted > 0 then
    -- Jobs this claim promoted are claimable from the next claim on.
    signal(k.signal, 0)
  end
  return claimed
end
