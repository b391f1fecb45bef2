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

-- CLAIM's keys' types, checked before its first write (the group keys'
-- on a queue with groups).
local function expect_claim_types(k, conf)
  expect_type(k.seq, 'string')
  expect_type(k.schedule, 'zset')
  expect_pending_types(k.pending, k.fifo)
  expect_type(k.active, 'zset')
  expect_type(k.events, 'stream')
  expect_type(k.signal, 'zset')
  if conf.groups then
    expect_group_keys(k)
  end
end

-- What one claim reads of its jobs, and what it has read, as one table
-- (one per call, none per job). A job is its HMGET reply, by position:
-- payload, failures, max_attempts, claims, then the fields `at` names
-- (the dedup fields only when a job of the queue ever took a key, the
-- trace context only once a job of the queue had one, and a due job's
-- priority last: only its promotion needs it). `jobs` and `job_keys` by
-- id; `due_jobs` the due ones' priority and group; `debounced` whether
-- each job read is in debounce mode.
local function claim_reads(k, conf)
  local names, at = job_field_names(conf, {'payload', 'failures', 'max_attempts', 'claims'})
  if conf.traced then
    names[#names + 1] = 'traceparent'
    at.traceparent = #names
  end
  if conf.timed then
    names[#names + 1] = 'time_limit'
    at.time_limit = #names
  end
  local due_names = {unpack(names)}
  due_names[#due_names + 1] = 'priority'
  return {k = k, conf = conf, names = names, at = at, due_names = due_names,
    priority_at = #due_names, jobs = {}, job_keys = {}, due_jobs = {}, debounced = {}}
end

-- Reads the hash of job `id` into `c` (see claim_reads); a due job's
-- group is read with it and its lane too (its promotion writes the lane;
-- a pending job's lane the round robin reads itself).
local function read_claim_job(c, id, due)
  local conf = c.conf
  local key = job_prefix .. id
  local f = redis.call('HMGET', key, unpack(due and c.due_names or c.names))
  if conf.dedup then
    local debounced = c.debounced
    debounced[#debounced + 1] = f[c.at.dedup_mode] == 'debounce'
  end
  if due then
    local group = conf.groups and f[c.at.group] or nil
    if group then
      read_lane(c.k, group)
    end
    c.due_jobs[id] = {priority = f[c.priority_at], group = group}
  end
  c.jobs[id], c.job_keys[id] = f, key
end

-- The pending jobs a claim of `take` would pop on a queue without groups,
-- read: fifo's head, then the sorted set's for the rest.
local function read_pending_head(c, take)
  local k = c.k
  local head = redis.call('LRANGE', k.fifo, 0, take - 1)
  if #head < take then
    for _, id in ipairs(redis.call('ZRANGE', k.pending, 0, take - #head - 1)) do
      head[#head + 1] = id
    end
  end
  local jobs = c.jobs
  for j = 1, #head do
    local id = head[j]
    if not jobs[id] then
      read_claim_job(c, id)
    end
  end
end

-- Unless the queue is paused: flow control's bound on this claim (`bound`,
-- and `wait`, `window`, `used` of the rate limit), how many it takes
-- (`take`), and the jobs it will take read, into `c`: the round robin's
-- picks on a queue with groups (and the waiting groups that reopened),
-- else the pending head.
local function read_claim_heads(c, count, now)
  c.bound, c.used, c.take = math.huge, 0, count
  local k, conf = c.k, c.conf
  if conf.paused then
    return
  end
  c.bound, c.wait, c.window, c.used = flow(conf, now, k.active)
  local take = math.min(count, c.bound)
  c.take = take
  if not conf.groups then
    if take > 0 then
      read_pending_head(c, take)
    end
    return
  end
  if take > 0 then
    c.picks, c.picked_from, c.lanes, c.states, c.again, c.reopened, c.line = round_robin(k, conf, take, now)
  else
    c.picks, c.reopened = {}, reopened_groups(k, conf, now)
  end
  local jobs = c.jobs
  for _, id in ipairs(c.picks) do
    if not jobs[id] then
      read_claim_job(c, id)
    end
  end
end

-- Counts `taken` starts of the group of lane `lane` (state `st`): its
-- active jobs under a cap only, its starts under a rate limit only.
local function count_group_starts(lane, st, taken)
  local fields = {}
  if st and st.concurrency > 0 then
    st.active = st.active + taken
    fields = {'active', int_str(st.active)}
  end
  if st and st.window then
    st.limit_window, st.limit_used = st.window, st.used + taken
    fields[#fields + 1] = 'limit_window'
    fields[#fields + 1] = int_str(st.window)
    fields[#fields + 1] = 'limit_used'
    fields[#fields + 1] = int_str(st.limit_used)
  end
  if #fields > 0 then
    redis.call('HSET', group_key(lane), unpack(fields))
  end
end

-- On a queue with groups: the waiting groups whose window reopened put
-- where they belong, then the round robin's picks popped from pending and
-- their lanes, each group's starts counted, and the lanes settled.
-- Returns the picks as ZPOPMIN answers (each id, then a placeholder score).
local function pop_picks(c, now)
  local k = c.k
  for _, group in ipairs(c.reopened) do
    place(k, group, group_state(k, group), now, redis.call('EXISTS', lane_key(group)) == 1)
  end
  local picks, picked_from = c.picks, c.picked_from
  local popped, by_lane = {}, {}
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
    count_group_starts(lane, c.states[lane], #members)
  end
  if c.lanes then
    settle_lanes(k, c.lanes, c.states, c.again, c.line, now)
  end
  return popped
end

-- On a queue without groups: up to `take` pending jobs popped, fifo's head
-- first (each id followed by a placeholder score, as ZPOPMIN answers),
-- then the sorted set's lowest.
local function pop_pending(k, take)
  local popped = {}
  local fifo = redis.call('LPOP', k.fifo, take) or {}
  for j = 1, #fifo do
    popped[2 * j - 1], popped[2 * j] = fifo[j], 0
  end
  if #popped / 2 < take then
    for _, v in ipairs(redis.call('ZPOPMIN', k.pending, take - #popped / 2)) do
      popped[#popped + 1] = v
    end
  end
  return popped
end

-- Makes each popped job that exists active under a lease of `lease` ms
-- from `now`, at most its time limit on a timed queue, whose entries carry
-- seven elements (its hash written; a debounced one frees its dedup key).
-- Returns CLAIM's
-- reply entries, and the claimed ids, tokens and leases (deadline, id) as
-- lists. Tokens and counts repeat across a batch (most jobs are on their
-- first claim, all at one clock): each formatted once. An absent count is
-- read without a call.
local function activate_popped(c, dedup, popped, worker, lease, now)
  local jobs, job_keys, at = c.jobs, c.job_keys, c.at
  local traced, deduped, timed = c.conf.traced, c.conf.dedup, c.conf.timed
  local deadline = int_str(now + lease)
  local now_s = int_str(now)
  local claimed, leases, ids, tokens, n = {}, {}, {}, {}, 0
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
      if traced and f[at.traceparent] then
        entry[6] = f[at.traceparent]
      end
      if timed then
        local limit = tonumber(f[at.time_limit])
        entry[6], entry[7] = entry[6] or '', limit or 0
        if limit and limit < lease then
          leases[2 * n - 1] = int_str(now + limit)
        end
      end
      claimed[n] = entry
      if deduped and f[at.dedup_mode] == 'debounce' then
        release_dedup(dedup, id, f[at.dedup], 'debounce')
      end
    end
  end
  return claimed, ids, tokens, leases
end

-- Adds `leases` (deadline, id pairs) to the active set, made a skiplist
-- when they take it to SKIPLIST_LEASES.
local function add_leases(active, leases)
  if #leases > 0 then
    local before = redis.call('ZCARD', active)
    chunked({'ZADD', active}, leases, 2)
    if before < SKIPLIST_LEASES and before + #leases / 2 >= SKIPLIST_LEASES then
      as_skiplist(active)
    end
  end
end

-- After the jobs are claimed: the rate limit's count kept, and CLAIM's
-- reply `claimed` ended with wait_ms when flow control withheld pending
-- jobs, or a worker woken for work a full batch (or this claim's
-- promotion on a queue with groups) left behind.
local function end_claim(c, claimed, count, promoted)
  local k, conf = c.k, c.conf
  if c.window and #claimed > 0 then
    redis.call('HSET', k.meta, 'limit_window', int_str(c.window), 'limit_used', int_str(c.used + #claimed))
  end
  local bound, grouped = c.bound, conf.groups
  if bound < count then
    -- Flow control bound: pending jobs left behind were withheld.
    if pending_count(k.pending, k.fifo) > 0 then
      claimed[#claimed + 1] = c.wait
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

-- CLAIM's body once its arguments are checked (`claim.lua`, and the
-- CLAIM tail of `complete_bulk.lua`): the keys' types, the due jobs
-- promoted, then unless paused up to `count` pending jobs -> active under
-- a lease of `lease` ms from `now`. `k` names every fixed key CLAIM
-- touches; `conf` is the settings with the limits. Returns CLAIM's reply.
-- Every job hash the call may touch is read before its first write, so a
-- key of the wrong type refuses the call whole: the due jobs, and the
-- pending head (what ZPOPMIN takes comes from these two), or on a queue
-- with groups the heads the round robin picks (and every group's hash
-- and lane it may write).
local function claim_checked(k, conf, worker, lease, count, now)
  expect_claim_types(k, conf)
  local c = claim_reads(k, conf)
  local due = due_ids(k.schedule, now, PROMOTE_PER_CLAIM)
  for _, id in ipairs(due) do
    read_claim_job(c, id, true)
  end
  read_claim_heads(c, count, now)
  -- A debounced job frees its key once claimed: the key types are checked first.
  local dedup = {dedup_owner = k.dedup_owner}
  if conf.dedup then
    expect_owner_type(dedup, c.debounced)
  end
  local promoted = promote(k, conf, due, c.due_jobs, now)
  if conf.paused then
    return {}
  end
  local popped = {}
  if conf.groups then
    popped = pop_picks(c, now)
  elseif c.take > 0 then
    popped = pop_pending(k, c.take)
  end
  local claimed, ids, tokens, leases = activate_popped(c, dedup, popped, worker, lease, now)
  emit_jobs(k.events, conf.events_max, 'claimed', ids, 'token', tokens, 'worker', worker)
  add_leases(k.active, leases)
  return end_claim(c, claimed, count, promoted)
end
