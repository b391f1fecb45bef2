-- CLAIM once its arguments are checked (claim.lua, and the CLAIM tail of
-- complete_bulk.lua), and the active set kept a skiplist.

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
