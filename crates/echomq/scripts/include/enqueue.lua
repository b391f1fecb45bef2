-- ENQUEUE and SCHEDULE (and their bulk forms) once arguments are checked:
-- the jobs created, one with a dedup key through enqueue_deduplicated.

-- Whether any of `keys` exists (one EXISTS per UNPACK_CHUNK keys).
local function any_exists(keys)
  for first = 1, #keys, UNPACK_CHUNK do
    if redis.call('EXISTS', unpack(keys, first, math.min(first + UNPACK_CHUNK - 1, #keys))) > 0 then
      return true
    end
  end
  return false
end

-- The given ids of `jobs` (id '*' asks for a generated one): the set of
-- their keys, the set of those that exist (each checked a hash: WRONGTYPE
-- before any write), and how many ids to generate.
local function read_given_ids(jobs)
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
  return given_set, taken, generated
end

-- `generated` ids from the counter at `k.id`, and their keys: a generated
-- id skips ids already taken, and ids given in this batch (`given_set`).
local function generate_ids(k, generated, given_set)
  local last = redis.call('INCRBY', k.id, generated)
  -- int_str and job_key written out: a call a job costs a batch more.
  local candidates, keys, clash = {}, {}, false
  for i = 1, generated do
    local id = string.format('%d', last - generated + i)
    candidates[i] = id
    keys[i] = job_prefix .. id
    clash = clash or given_set[keys[i]] ~= nil
  end
  if clash or any_exists(keys) then
    for i, id in ipairs(candidates) do
      while given_set[job_key(id)] or redis.call('EXISTS', job_key(id)) == 1 do
        id = int_str(redis.call('INCR', k.id))
      end
      candidates[i] = id
      keys[i] = job_key(id)
    end
  end
  return candidates, keys
end

-- The reply ([id, 1|0, ...]: 0 for an id `taken`) and the batch of jobs to
-- create, as parallel lists (no table per job): `ids`, `keys`, `jobs`,
-- `n` of them, and `texts` for batch_int_str. A '*' takes the next of
-- `fresh` (and its key, of `fresh_keys`).
local function list_created(jobs, taken, fresh, fresh_keys)
  local reply, ids, keys, made = {}, {}, {}, {}
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
  return reply, {ids = ids, keys = keys, jobs = made, n = n, texts = {}}
end

-- Positions in the batch's lists: due at `now`, and later (a run_at given
-- as a function of now is resolved first).
local function split_due(batch, now)
  local made = batch.jobs
  local due, later = {}, {}
  for i = 1, batch.n do
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
  return due, later
end

-- The marks the batch sets, before the call's other writes enter pending
-- or the schedule: the first job of the queue sets the logs mark; the
-- first grouped job marks the queue; so does the first job with a trace
-- context (CLAIM reads a job's traceparent only on a marked queue), and
-- the first with a time limit or a deadline (`timed`). Returns whether a
-- job has a deadline. A plain batch (a bulk form's: no job has an option)
-- sets the logs mark only, looking at no job. A batch enqueued WAITED
-- sets the `waited` mark.
local function mark_queue(k, conf, batch)
  mark_logs(k, conf)
  if batch.waited and not conf.waited then
    redis.call('HSET', k.meta, 'waited', '1')
    conf.waited = true
  end
  if batch.plain then
    return false
  end
  local made, deadlined = batch.jobs, false
  for i = 1, batch.n do
    local job = made[i]
    if job.group then
      mark_groups(k, conf)
    end
    if job.traceparent and not conf.traced then
      redis.call('HSET', k.meta, 'traced', '1')
      conf.traced = true
    end
    -- Checked here, not in a call per job: the common job has neither.
    if job.time_limit or job.start_by then
      mark_timed(k, conf, job)
      deadlined = deadlined or job.start_by ~= nil
    end
    if job.lifo then
      lifo_job.mark(k, job)
    end
  end
  return deadlined
end

-- Which due jobs (by position in `due`) go to fifo, and the first of the
-- seqs taken for the others, in one INCRBY (only the jobs that enter the
-- sorted set take one).
local function take_seqs(k, conf, made, due)
  local sequenced, fifo = 0, {}
  for d = 1, #due do
    local i = due[d]
    fifo[d] = by_fifo(conf, made[i].priority, made[i].group)
    if not (fifo[d] or made[i].lifo) then
      sequenced = sequenced + 1
    end
  end
  local first_seq = 0
  if sequenced > 0 then
    first_seq = redis.call('INCRBY', k.seq, sequenced) - sequenced
  end
  return fifo, first_seq
end

-- Creates the batch's jobs at positions `due` pending: fifo's, the sorted
-- set's, or their group's lane; `enqueued` events, and a worker woken.
local function enter_due(k, conf, batch, due, now, now_s)
  local ids, keys, made, texts, plain = batch.ids, batch.keys, batch.jobs, batch.texts, batch.plain
  local waited = batch.waited
  local fifo, first_seq = take_seqs(k, conf, made, due)
  local seq, queued, entered, scored = 0, {}, {}, {}
  for d = 1, #due do
    local i = due[d]
    local id, job = ids[i], made[i]
    write_job(keys[i], job, 'pending', now_s, texts, plain, waited)
    entered[d] = id
    if not plain and job.lifo then -- alone in its call: no bulk form takes LIFO
      push_lifo(k, conf, id, job.priority, job.group, now)
    elseif fifo[d] then
      queued[#queued + 1] = id
    else
      seq = seq + 1
      local score = seq_score(job.priority, first_seq + seq)
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

-- Creates the batch's jobs at positions `later` scheduled: `scheduled`
-- events, and a worker woken for the earliest.
local function enter_later(k, conf, batch, later, now_s)
  local ids, keys, made, texts = batch.ids, batch.keys, batch.jobs, batch.texts
  local at, scheduled, run_ats, earliest = {}, {}, {}, nil
  for l, i in ipairs(later) do
    local job = made[i]
    local run_at = int_str(job.run_at)
    write_job(keys[i], job, 'scheduled', now_s, texts, nil, batch.waited)
    scheduled[l], run_ats[l] = ids[i], run_at
    at[#at + 1] = run_at
    at[#at + 1] = ids[i]
    earliest = math.min(earliest or job.run_at, job.run_at)
  end
  emit_jobs(k.events, conf.events_max, 'scheduled', scheduled, 'run_at', run_ats)
  chunked({'ZADD', k.schedule}, at, 2)
  signal(k.signal, int_str(earliest))
end

-- Creates each {id=, payload=, priority=, attempts=, run_at=, repeat=,
-- dedup=, group=, traceparent=} of `jobs` (id '*' takes the next free
-- counter value) unless its id exists: to pending when run_at is absent
-- or due, else to the schedule set. `k` names the keys (id, seq, pending,
-- schedule, meta, events, signal). Checks every
-- given id's key type before the first write. `plain`: the jobs carry
-- none of the options (ENQUEUE.BULK, SCHEDULE.BULK), so no job is read
-- for one. `waited`: the enqueue said WAITED, so each job created is
-- marked waited for. Returns [id, 1|0, ...].
local function enqueue_jobs(k, conf, jobs, now_s, plain, waited)
  local given_set, taken, generated = read_given_ids(jobs)
  local fresh, fresh_keys = {}, {}
  if generated > 0 then
    fresh, fresh_keys = generate_ids(k, generated, given_set)
  end
  local reply, batch = list_created(jobs, taken, fresh, fresh_keys)
  batch.plain, batch.waited = plain, waited
  if batch.n == 0 then
    return reply
  end
  local now = tonumber(now_s)
  local due, later = split_due(batch, now)
  local deadlined = mark_queue(k, conf, batch)
  if #due > 0 then
    enter_due(k, conf, batch, due, now, now_s)
  end
  if #later > 0 then
    enter_later(k, conf, batch, later, now_s)
  end
  if deadlined then
    add_deadlines(k, batch)
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
local function enqueue_deduplicated(k, conf, job, now, waited)
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
  local reply = enqueue_jobs(k, conf, {job}, int_str(now), nil, waited)
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
-- and schedule when a job may be scheduled); `plain` and `waited` as
-- enqueue_jobs'.
local function enqueue_checked(k, jobs, plain, waited)
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
  -- Only a job with a deadline enters (and type-checks) the deadlines set.
  if jobs[1].start_by then
    expect_type(k.deadlines, 'zset')
  end
  if jobs[1].dedup then
    return enqueue_deduplicated(k, conf, jobs[1], now_ms(), waited)
  end
  return enqueue_jobs(k, conf, jobs, int_str(now_ms()), plain, waited)
end
