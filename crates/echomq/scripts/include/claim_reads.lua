-- What a claim reads before its first write (claim_checked, in
-- claim.lua): its jobs, and the heads of pending it would pop, as far as
-- the jobs past their start-by deadline among them reach.

-- What one claim reads of its jobs, and what it has read, as one table
-- (one per call, none per job). A job is its HMGET reply, by position:
-- payload, failures, max_attempts, claims, then the fields `at` names
-- (the dedup fields only when a job of the queue ever took a key, the
-- trace context only once a job of the queue had one, on a timed queue
-- the time limit, the start-by deadline and, on a queue someone waits on,
-- `waited`, and a due job's priority last: only its promotion needs it).
-- `jobs` and `job_keys` by id; `due_jobs` the due ones' priority and
-- group; `debounced` whether each job read is in debounce mode;
-- `expiring` whether a job read is past its start_by.
local function claim_reads(k, conf)
  local names, at = job_field_names(conf, {'payload', 'failures', 'max_attempts', 'claims'})
  if conf.traced then
    names[#names + 1] = 'traceparent'
    at.traceparent = #names
  end
  if conf.timed then
    names[#names + 1] = 'time_limit'
    at.time_limit = #names
    names[#names + 1] = 'start_by'
    at.start_by = #names
    if conf.waited then
      names[#names + 1] = 'waited'
      at.waited = #names
    end
    if conf.flows then
      names[#names + 1] = 'dependents'
      at.dependents = #names
    end
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

-- On a timed queue: whether job `id` is past its start_by at `now`, the
-- job read into `c` first when it was not (a due one with `due`); one that
-- is sets `c.expiring` (what its expiry writes is checked before the
-- claim's first write).
local function past_start_by(c, id, due, now)
  local f = c.jobs[id]
  if not f then
    read_claim_job(c, id, due)
    f = c.jobs[id]
  end
  local by = f[c.at.start_by]
  local past = by and tonumber(by) < now or false
  if past then
    c.expiring = true
  end
  return past
end

-- The first `n` pending jobs on a queue without groups, in the order a pop
-- takes them: fifo's head, then the sorted set's for the rest.
local function pending_head(k, n)
  local head = redis.call('LRANGE', k.fifo, 0, n - 1)
  if #head < n then
    for _, id in ipairs(redis.call('ZRANGE', k.pending, 0, n - #head - 1)) do
      head[#head + 1] = id
    end
  end
  return head
end

-- The pending jobs a claim of `take` would pop on a queue without groups,
-- read: the first `take`, and on a timed queue as many more as the ones
-- past their start_by among them leave to fill `take` (at most
-- PROMOTE_PER_CLAIM more). `c.reach` is how far the head was read.
local function read_pending_head(c, take, now)
  local jobs, want = c.jobs, take
  if not c.at.start_by then
    for _, id in ipairs(pending_head(c.k, take)) do
      if not jobs[id] then
        read_claim_job(c, id)
      end
    end
    return
  end
  while true do
    local head = pending_head(c.k, want)
    local past = 0
    for j = 1, #head do
      if past_start_by(c, head[j], false, now) then
        past = past + 1
      end
    end
    c.reach = want
    if #head < want or #head - past >= take or want >= take + PROMOTE_PER_CLAIM then
      return
    end
    want = math.min(math.max(2 * want, take + past), take + PROMOTE_PER_CLAIM)
  end
end

-- How many of the pending head (queue without groups) a claim of `take`
-- pops: `take`, unless jobs past their start_by are among them; then as
-- many as hand out `take` (the due jobs just promoted included), passing
-- at most PROMOTE_PER_CLAIM past ones, within what was read.
local function pop_reach(c, take, now)
  if not c.expiring then
    return take
  end
  local head = pending_head(c.k, c.reach or take)
  local live, past = 0, 0
  for j = 1, #head do
    if not c.jobs[head[j]] then
      return j - 1
    elseif not past_start_by(c, head[j], false, now) then
      live = live + 1
      if live == take then
        return j
      end
    elseif past == PROMOTE_PER_CLAIM then
      return j - 1
    else
      past = past + 1
    end
  end
  return #head
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
      read_pending_head(c, take, now)
    end
    return
  end
  local jobs = c.jobs
  if take > 0 then
    -- On a timed queue each head is read as the round robin reaches it.
    local past = conf.timed and function(id)
      return past_start_by(c, id, false, now)
    end
    c.picks, c.picked_from, c.lanes, c.states, c.again, c.reopened, c.line, c.passed, c.passed_from =
      round_robin(k, conf, take, now, past)
  else
    c.picks, c.reopened, c.passed = {}, reopened_groups(k, conf, now), {}
  end
  for _, id in ipairs(c.picks) do
    if not jobs[id] then
      read_claim_job(c, id)
    end
  end
end
