-- Flows (docs/protocol.md, "Flows"): the arguments of a flow's jobs, and
-- FLOW.ADD and its bulk form once arguments are checked: each job created
-- blocked on its dependencies, or waiting as ENQUEUE and SCHEDULE create
-- one (include/enqueue.lua), with its edges' halves in its own queue; and
-- an edge of a dependent in the call's queue taking its resolution
-- (FLOW.RESOLVE's groups, COMPLETE's own-queue dependents, whose loop
-- and the unblocking a call holds are in include/flow_own_edges.lua).

-- The helpers of flows, one table (one local of the
-- library's top level for the concern; see scripts.rs): each function
-- below is flow_jobs.<name>.
local flow_jobs = {}
-- A flow id or a ref: the job-id rule with at most `max` bytes; refused as
-- BADARG name.
function flow_jobs.name_arg(value, name, max)
  if value == nil or #value == 0 or #value > max or string.find(value, ID_REFUSED) then
    refuse('BADARG ' .. name)
  end
  return value
end
-- A dependent's failure policy: fail (the default, stored as no field),
-- ignore or cancel; refused as BADARG on_failure.
function flow_jobs.policy_arg(value)
  if value ~= 'fail' and value ~= 'ignore' and value ~= 'cancel' then
    refuse('BADARG on_failure')
  end
  return value
end
-- The field that names a job of the call's queue in an edge list or a
-- deps or dependents hash: `<queue> <id>`.
function flow_jobs.own_field(id)
  return string.match(base, '{([^{}]*)}$') .. ' ' .. id
end
-- A list argument (`after`, `before`): `<queue> <id>` pairs joined by
-- single spaces, empty for none; each queue by the queue-name rule, each
-- id by the job-id rule and not '*', no pair twice, not `own` (the job
-- itself), at most FLOW_EDGES_MAX pairs. Returns the pairs as the fields
-- of a deps or dependents hash; refused as BADARG name.
function flow_jobs.edges_arg(value, name, own)
  if value == nil then
    refuse('BADARG ' .. name)
  end
  local fields, seen, at = {}, {}, 1
  while at <= #value do
    local gap = string.find(value, ' ', at, true)
    local stop = gap and string.find(value, ' ', gap + 1, true)
    local queue = gap and string.sub(value, at, gap - 1) or ''
    local id = gap and string.sub(value, gap + 1, (stop or 0) - 1) or ''
    local field = queue .. ' ' .. id
    if #queue == 0 or #queue > MAX_QUEUE_NAME or not string.find(queue, '^[A-Za-z0-9_%.:%-]+$')
        or #id == 0 or #id > MAX_JOB_ID or string.find(id, ID_REFUSED) or id == '*'
        or seen[field] or field == own or #fields >= FLOW_EDGES_MAX
        or stop == #value then
      refuse('BADARG ' .. name)
    end
    seen[field] = true
    fields[#fields + 1] = field
    at = stop and stop + 1 or #value + 1
  end
  return fields
end
-- Makes `job` a job of flow `flow`: its ref, policy and edges (`after`,
-- `before`: fields), and the fields its hash gets past an enqueue's
-- (`extra`): flow, ref, on_failure (unless fail), deps and deps_left
-- (with dependencies), dependents (with dependents).
function flow_jobs.job(job, flow, ref, policy, after, before)
  job.after, job.before = after, before
  local extra = {'flow', flow, 'ref', ref}
  if policy ~= 'fail' then
    extra[#extra + 1] = 'on_failure'
    extra[#extra + 1] = policy
  end
  if #after > 0 then
    extra[#extra + 1] = 'deps'
    extra[#extra + 1] = #after
    extra[#extra + 1] = 'deps_left'
    extra[#extra + 1] = #after
  end
  if #before > 0 then
    extra[#extra + 1] = 'dependents'
    extra[#extra + 1] = #before
  end
  job.extra = extra
  return job
end
-- Who holds the id `id`: nothing (nil), or its flow id (false for none)
-- read from its job hash, or from its resolution when only that is left.
-- Each key checked a hash (WRONGTYPE before any write).
function flow_jobs.id_holder(id)
  local key = job_key(id)
  local found = redis.call('TYPE', key)['ok']
  if found == 'hash' then
    return redis.call('HGET', key, 'flow')
  elseif found ~= 'none' then
    refuse('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  local resolution = base .. ':resolution:' .. id
  found = redis.call('TYPE', resolution)['ok']
  if found == 'hash' then
    local flow = redis.call('HGET', resolution, 'flow')
    return flow ~= '' and flow
  elseif found ~= 'none' then
    refuse('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  return nil
end
-- Which of `jobs` to create, checking every id before any write: an id
-- held in flow `flow` (or given twice) is answered 0; an id held by
-- another flow, or by a job of none, refuses the call CONFLICT <flow>
-- (CONFLICT -). The edge hashes of the jobs to create are checked hashes.
-- Returns the reply [id, 1|0, …] and the lists of jobs to create with
-- dependencies (blocked) and without (free).
function flow_jobs.to_create(flow, jobs)
  local reply, seen, blocked, free = {}, {}, {}, {}
  for _, job in ipairs(jobs) do
    local id = job.id
    local created = 0
    if not seen[id] then
      seen[id] = true
      local deps, dependents = outbox.deps_key(id), outbox.dependents_key(id)
      -- A new id's keys are all absent: one call says so, and nothing
      -- then has a type to check.
      local fresh = redis.call('EXISTS', job_key(id), outbox.resolution_key(id), deps, dependents) == 0
      local held = nil
      if not fresh then
        held = flow_jobs.id_holder(id)
      end
      if held == nil then
        created = 1
        if #job.after > 0 then
          if not fresh then
            expect_type(deps, 'hash')
          end
          blocked[#blocked + 1] = job
        else
          free[#free + 1] = job
        end
        if #job.before > 0 and not fresh then
          expect_type(dependents, 'hash')
        end
      elseif held ~= flow then
        refuse('CONFLICT ' .. (held or '-'))
      end
    end
    reply[#reply + 1] = id
    reply[#reply + 1] = created
  end
  return reply, blocked, free
end
-- Creates the `blocked` jobs (their run_at, if any, resolved at `now`):
-- each hash in state blocked, in `blocked` scored for its check-up, its
-- `deps` hash of `wait` fields, a start-by deadline in `deadlines`, and
-- the event `blocked` (deps).
function flow_jobs.enter_blocked(k, conf, blocked, now, now_s)
  local batch = {ids = {}, keys = {}, jobs = blocked, n = #blocked, texts = {}}
  local scored, counts = {}, {}
  local checkup = int_str(now + FLOW_CHECKUP_MS)
  for i, job in ipairs(blocked) do
    batch.ids[i], batch.keys[i] = job.id, job_key(job.id)
    if job.run_at then
      job.run_at = job.run_at(now)
    end
    counts[i] = #job.after
  end
  local deadlined = mark_queue(k, conf, batch)
  for i, job in ipairs(blocked) do
    write_job(batch.keys[i], job, 'blocked', now_s, batch.texts)
    local edges = {}
    for _, field in ipairs(job.after) do
      edges[#edges + 1] = field
      edges[#edges + 1] = 'wait'
    end
    chunked({'HSET', base .. ':deps:' .. job.id}, edges, 2)
    scored[#scored + 1] = checkup
    scored[#scored + 1] = job.id
  end
  chunked({'ZADD', k.blocked}, scored, 2)
  emit_jobs(k.events, conf.events_max, 'blocked', batch.ids, 'deps', counts)
  if deadlined then
    add_deadlines(k, batch)
  end
end
-- FLOW.ADD and FLOW.ADD.BULK once arguments are checked: the settings
-- read, every key's type checked and every id's holder read before the
-- first write (flow_jobs.to_create), then the `flows` mark, the jobs
-- without dependencies created as ENQUEUE and SCHEDULE create them, the
-- blocked ones, and each new job's `dependents` hash of `0` fields. `k`
-- names the keys (enqueue_jobs' and `blocked`). Returns [id, 1|0, …].
function flow_jobs.add(k, flow, jobs)
  local conf = enqueue_settings(k.meta)
  expect_type(k.seq, 'string')
  expect_pending_types(k.pending, k.fifo)
  expect_type(k.schedule, 'zset')
  expect_type(k.events, 'stream')
  expect_type(k.signal, 'zset')
  expect_type(k.blocked, 'zset')
  if conf.groups or jobs[1].group then
    expect_group_keys(k)
  end
  if jobs[1].group then
    read_lane(k, jobs[1].group)
  end
  if jobs[1].start_by then
    expect_type(k.deadlines, 'zset')
  end
  local reply, blocked, free = flow_jobs.to_create(flow, jobs)
  if #blocked + #free == 0 then
    return reply
  end
  redis.call('HSET', k.meta, 'flows', '1')
  local now_s = int_str(now_ms())
  if #free > 0 then
    enqueue_jobs(k, conf, free, now_s)
  end
  if #blocked > 0 then
    flow_jobs.enter_blocked(k, conf, blocked, tonumber(now_s), now_s)
  end
  for _, list in ipairs({free, blocked}) do
    for _, job in ipairs(list) do
      if #job.before > 0 then
        local told = {}
        for _, field in ipairs(job.before) do
          told[#told + 1] = field
          told[#told + 1] = '0'
        end
        chunked({'HSET', base .. ':dependents:' .. job.id}, told, 2)
      end
    end
  end
  return reply
end
-- FLOW.DEPS and FLOW.DEPENDENTS: the page of the edge hash `key` from
-- ARGV `first` on (CURSOR c, COUNT n: HSCAN's cursor and count hint), as
-- [next_cursor, [queue, id, value, …]]; `told` gives each value as the
-- integer it is (a dependent's 0 or 1).
function flow_jobs.edge_page(key, first, told)
  local opts = options(first, {
    CURSOR = function(v) return int_arg(v, 'cursor', 0) end,
    COUNT = function(v) return int_arg(v, 'count', 1) end,
  })
  return function()
    expect_type(key, 'hash')
    local page = redis.call('HSCAN', key, int_str(opts.CURSOR or 0), 'COUNT',
      int_str(opts.COUNT or DEFAULT_FLOW_PAGE))
    local items, out = page[2], {}
    for i = 1, #items, 2 do
      local gap = string.find(items[i], ' ', 1, true)
      out[#out + 1] = string.sub(items[i], 1, gap - 1)
      out[#out + 1] = string.sub(items[i], gap + 1)
      out[#out + 1] = told and tonumber(items[i + 1]) or items[i + 1]
    end
    return {page[1], out}
  end
end
-- The reads of edge `edge` ({field, text, outcome, id}), each under pcall
-- (the read is its key's type check): {value = its field of the
-- dependent's deps hash, f = the dependent's fields as flow_jobs.take
-- names them}, or nil when either key has another type. With
-- `unblocking` (an own-queue edge of a completed dependency, which decides
-- no dependent), only the fields its unblocking reads: state, deps_left,
-- on_failure, priority, group, run_at.
function flow_jobs.edge_reads(conf, edge, unblocking)
  local value = redis.pcall('HGET', outbox.deps_key(edge.id), edge.field)
  local names = {'state', 'deps_left', 'on_failure', 'priority', 'group', 'run_at'}
  local f
  if unblocking then
    f = redis.pcall('HMGET', job_key(edge.id), unpack(names))
  else
    names[7], names[8], names[9] = 'failures', 'dedup', 'dedup_mode'
    local waited_at = #names + 1
    f = job_fields_waited(conf, job_key(edge.id), names, redis.pcall)
    f.waited = f[waited_at]
  end
  if type(value) == 'table' or f.err then
    return nil
  end
  return {value = value, f = f}
end
-- Edge `edge` ({field, text, outcome, id}) takes its resolution, as a
-- group of FLOW.RESOLVE: 'gone' (no job `edge.id`, or no such field in
-- its deps hash) or 'already' (the field is not `wait`); else nil, the
-- dependent's fields (state, deps_left, on_failure, priority, group,
-- run_at, failures, dedup, dedup_mode, then `waited` and `dependents` by
-- name; an own-queue edge's reads hold the first six alone), and its
-- deps_left after this edge (the event dependency_resolved). deps_left
-- is written here unless the dependent is blocked and this was its last
-- edge: the caller's unblocking, or its policy's decision, writes it with
-- the job's other fields.
-- `reads` are flow_jobs.edge_reads' (FLOW.RESOLVE's type pass made them),
-- own_edges.reads' (whose `held` gathers those writes for the call, its
-- cached fields' deps_left lowered), or made here; a key of another type
-- answers 'untyped', nothing written (COMPLETE's own-queue edges, after
-- its first write: the edge is left to the outbox, whose FLOW.RESOLVE
-- refuses it), and so do, when `lenient`, the dependent's group keys.
function flow_jobs.take(k, conf, edge, lenient, reads)
  local key, deps = job_key(edge.id), outbox.deps_key(edge.id)
  reads = reads or flow_jobs.edge_reads(conf, edge)
  if not reads then
    return 'untyped'
  end
  local value, f = reads.value, reads.f
  local group = conf.groups and f[5]
  if lenient and group and not (outbox.typed_as(lane_key(group), 'zset', true)
      and outbox.typed_as(group_key(group), 'hash', true)) then
    return 'untyped'
  end
  if not value or not f[1] then
    return 'gone'
  elseif value ~= 'wait' then
    return 'already'
  end
  local left = math.max((tonumber(f[2]) or 0) - 1, 0)
  local held = reads.held
  if held then
    held.taken[edge.field], f[2] = edge.text, int_str(left)
    held.left = held.left or left > 0 or f[1] ~= 'blocked'
  else
    redis.call('HSET', deps, edge.field, edge.text)
    if left > 0 or f[1] ~= 'blocked' then
      redis.call('HSET', key, 'deps_left', int_str(left))
    end
  end
  emit(k.events, conf.events_max, 'dependency_resolved', 'id', edge.id, 'dependency', edge.field,
    'outcome', edge.outcome)
  return nil, f, left
end
