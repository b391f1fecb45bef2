-- CLAIM once its arguments are checked (claim.lua, and the CLAIM tail of
-- complete_bulk.lua), and the active set kept a skiplist.

-- The server's default zset-max-listpack-value: the longest member a
-- sorted set keeps in a listpack (a script may not read the setting).
local LISTPACK_VALUE_MAX = 64

-- A member that makes a sorted set a skiplist: longer than
-- zset-max-listpack-value, and removing it does not turn the set back. A
-- busy active set is then not a listpack that every lease's ZADD and ZREM
-- scans; the keyspace is the same. The member is never a job id (ids hold
-- no whitespace and no braces).
local function skiplist_pad()
  local head = '{skiplist} '
  return head .. string.rep('.', LISTPACK_VALUE_MAX + 1 - #head)
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

-- Adds `ids` (each from the lane at the same index of `from`) to `popped`
-- (each id, then a placeholder score, as ZPOPMIN answers) and to
-- `by_lane` (a grouped lane's ids, and how many of them `start`).
local function popped_by_lane(popped, by_lane, ids, from, start)
  for i, id in ipairs(ids) do
    popped[#popped + 1] = id
    popped[#popped + 1] = 0
    local lane = from[i]
    if lane ~= UNGROUPED then
      local members = by_lane[lane]
      if not members then
        members = {starts = 0}
        by_lane[lane] = members
      end
      members[#members + 1] = id
      if start then
        members.starts = members.starts + 1
      end
    end
  end
end

-- On a queue with groups: the waiting groups whose window reopened put
-- where they belong, then the round robin's picks and the heads it passed
-- over popped from pending and their lanes, each group's starts (its
-- picks) counted, and the lanes settled. Returns the picks, then the
-- heads passed over, as ZPOPMIN answers (each id, then a placeholder
-- score).
local function pop_picks(c, now)
  local k = c.k
  for _, group in ipairs(c.reopened) do
    place(k, group, group_state(k, group), now, redis.call('EXISTS', lane_key(group)) == 1)
  end
  local popped, by_lane = {}, {}
  popped_by_lane(popped, by_lane, c.picks, c.picked_from, true)
  popped_by_lane(popped, by_lane, c.passed, c.passed_from, false)
  local ids = {}
  for j = 1, #popped, 2 do
    ids[#ids + 1] = popped[j]
  end
  if #ids > 0 then
    chunked({'ZREM', k.pending}, ids, 1)
  end
  for lane, members in pairs(by_lane) do
    redis.call('ZREM', lane_key(lane), unpack(members))
    if members.starts > 0 then
      count_group_starts(lane, c.states[lane], members.starts)
    end
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
-- A job past its start_by is left for expire_popped (`c.expired`), as is
-- the id of each claimed job with a start_by (`c.left_deadlines`).
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
  local expired, left = {}, {}
  c.expired, c.left_deadlines = expired, left
  for j = 1, #popped, 2 do
    local id = popped[j]
    local f = jobs[id]
    if f and f[1] and timed and past_start_by(c, id, false, now) then
      expired[#expired + 1] = id
    elseif f and f[1] then
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
        if f[at.start_by] then
          left[#left + 1] = id
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

-- CLAIM's expiry of the jobs it popped past their start_by (`c.expired`):
-- each cancelled as the sweep expires one (cancel_expired), out of
-- `deadlines` with the claimed jobs that had a start_by, counted
-- `cancelled` in the metrics (`metrics`, read_metrics' keys), and
-- `cancelled` trimmed. Writes nothing when none expired and no claimed
-- job had a deadline.
local function expire_popped(c, dedup, metrics, now)
  local k, conf, at, jobs = c.k, c.conf, c.at, c.jobs
  local expired, out = c.expired or {}, c.left_deadlines or {}
  local now_s = int_str(now)
  local tally = tally_new()
  for _, id in ipairs(expired) do
    local f = jobs[id]
    cancel_expired(k, conf, dedup, id, {start_by = f[at.start_by], waited = at.waited and f[at.waited],
      dedup = at.dedup and f[at.dedup], dedup_mode = at.dedup_mode and f[at.dedup_mode],
      dependents = at.dependents and f[at.dependents]}, now_s)
    out[#out + 1] = id
    tally_outcome(tally, 'cancelled')
  end
  if #out > 0 then
    chunked({'ZREM', k.deadlines}, out, 1)
  end
  if #expired > 0 then
    trim_finished(conf, k.cancelled, conf.keep_cancelled, conf.keep_cancelled_for, now,
      TRIM_PER_TRANSITION * #expired)
    if conf.metrics then
      record_metrics(metrics, tally_fields(tally))
    end
  end
end

-- Adds `leases` (deadline, id pairs) to the active set, made a skiplist
-- when they take it to SKIPLIST_LEASES: the pad goes in before the
-- leases and out after, so they go straight into the skiplist, with no
-- listpack to scan and convert (a worker over several queues empties and
-- refills a queue's set at every batch), as the module does.
local function add_leases(active, leases)
  if #leases > 0 then
    local before = redis.call('ZCARD', active)
    local pad = before < SKIPLIST_LEASES and before + #leases / 2 >= SKIPLIST_LEASES
      and skiplist_pad()
    if pad then
      redis.call('ZADD', active, 0, pad)
    end
    chunked({'ZADD', active}, leases, 2)
    if pad then
      redis.call('ZREM', active, pad)
    end
  end
end

-- After the jobs are claimed: the rate limit's count kept, and CLAIM's
-- reply `claimed` ended with wait_ms when flow control withheld pending
-- jobs, or a worker woken for work a full batch (or this claim's
-- promotion on a queue with groups) left behind; on a queue with flows
-- and no groups, a claim that leaves nothing pending deletes a wake-up
-- marker already due (docs/protocol.md, "The signal key").
local function end_claim(c, claimed, count, promoted, now)
  local k, conf = c.k, c.conf
  if c.window and #claimed > 0 then
    redis.call('HSET', k.meta, 'limit_window', int_str(c.window), 'limit_used', int_str(c.used + #claimed))
  end
  local bound, grouped = c.bound, conf.groups
  local full = #claimed == count and bound > count
  -- The pending jobs left, counted once, where a branch below asks.
  local left = (bound < count or not grouped and (full or conf.flows)) and pending_count(k.pending, k.fifo)
  if bound < count then
    -- Flow control bound: pending jobs left behind were withheld.
    if left > 0 then
      claimed[#claimed + 1] = c.wait
    end
  elseif full and (grouped and redis.call('ZCARD', k.groups) or left) > 0 then
    -- A full batch may leave work behind: wake the next idle worker for it.
    signal(k.signal, 0)
  elseif grouped and promoted > 0 then
    -- Jobs this claim promoted are claimable from the next claim on.
    signal(k.signal, 0)
  elseif conf.flows and not grouped and left == 0 then
    -- The marker would wake a worker for jobs this claim took (a
    -- completion's unblocked dependents, claimed by its CLAIM tail).
    local at = redis.call('ZSCORE', k.signal, 'wake')
    if at and tonumber(at) <= now then
      redis.call('ZREM', k.signal, 'wake')
    end
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
    if conf.timed then
      past_start_by(c, id, true, now)
    else
      read_claim_job(c, id, true)
    end
  end
  read_claim_heads(c, count, now)
  -- A debounced job frees its key once claimed: the key types are checked first.
  local dedup = {dedup_owner = k.dedup_owner}
  if conf.dedup then
    expect_owner_type(dedup, c.debounced)
  end
  -- What an expiry writes, checked and read first (docs/protocol.md,
  -- "Time limits, start-by deadlines, LIFO and retention by age").
  local metrics
  if conf.timed then
    expect_type(k.deadlines, 'zset')
    if c.expiring and not conf.paused then
      expect_type(k.cancelled, 'zset')
      expect_owner_type(dedup, {conf.dedup})
      metrics = read_metrics(conf, now)
    end
  end
  local promoted = promote(k, conf, due, c.due_jobs, now)
  if conf.paused then
    return {}
  end
  local popped = {}
  if conf.groups then
    popped = pop_picks(c, now)
  elseif c.take > 0 then
    local reach = pop_reach(c, c.take, now)
    if reach > 0 then
      popped = pop_pending(k, reach)
    end
  end
  local claimed, ids, tokens, leases = activate_popped(c, dedup, popped, worker, lease, now)
  if conf.timed then
    expire_popped(c, dedup, metrics, now)
  end
  emit_jobs(k.events, conf.events_max, 'claimed', ids, 'token', tokens, 'worker', worker)
  add_leases(k.active, leases)
  return end_claim(c, claimed, count, promoted, now)
end
