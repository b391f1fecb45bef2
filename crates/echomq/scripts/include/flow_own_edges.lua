-- Flows (docs/protocol.md, "Deciding a job that has dependents"): a
-- deciding call's dependents in its own queue. COMPLETE's and
-- FLOW.SETTLE's edges taken in the call (each as flow_jobs.take takes
-- it), and the unblocking of the jobs whose last edge a call resolved,
-- held until every edge of the call is taken.

-- The helpers of a call's own-queue edges, one table (one local of the
-- library's top level for the concern; see scripts.rs): each function
-- below is own_edges.<name>.
local own_edges = {}
-- On a queue with the flows mark, before COMPLETE's first write: the types
-- of the keys its own-queue dependents' edges may write besides the job's
-- (blocked, schedule, pending, signal, deadlines on a timed queue).
function own_edges.expect(k, conf)
  if not conf.flows then
    return
  end
  expect_type(k.blocked, 'zset')
  expect_type(k.schedule, 'zset')
  expect_type(k.signal, 'zset')
  expect_pending_types(k.pending, k.fifo)
  if conf.timed then
    expect_type(k.deadlines, 'zset')
  end
end
-- COMPLETE's dependents in its own queue (docs/protocol.md, "Deciding a
-- job that has dependents"): each `0` field of `dependents:<id>` (as
-- outbox.due read them, `due.fields`) naming a job of this queue, while
-- `budget.left` lasts, takes `text` as a group of FLOW.RESOLVE would (a
-- blocked dependent at its last edge held to be unblocked) and is told
-- (1), lowering `due.left` and `budget.left` (`budget.took` counts those
-- that took it); an edge whose keys have another type is left untold.
-- The takes' writes are gathered (own_edges.reads) until the call's
-- unblocking, and the told fields written once. Returns true when the
-- budget ran out before a `0` field of this queue (FLOW.SETTLE's page is
-- then read again).
function own_edges.completed(k, conf, id, due, text, budget)
  local field = flow_jobs.own_field(id)
  local here = string.sub(field, 1, #field - #id)
  local fields, told, stopped = due.fields, {}, false
  for i = 1, #fields, 2 do
    local dependent = fields[i + 1] == '0' and string.sub(fields[i], 1, #here) == here
      and string.sub(fields[i], #here + 1)
    if dependent and budget.left < 1 then
      stopped = true
      break
    end
    local word, f, left
    if dependent then
      local edge = {field = field, text = text, outcome = 'completed', id = dependent}
      local reads = own_edges.reads(k, conf, edge)
      word = 'untyped'
      if reads then
        word, f, left = flow_jobs.take(k, conf, edge, true, reads)
      end
    end
    if dependent and word ~= 'untyped' then
      if not word and f[1] == 'blocked' and left == 0 then
        own_edges.unblock(k, dependent, {priority = f[4], group = conf.groups and f[5] or nil, run_at = f[6]})
      end
      told[#told + 1] = fields[i]
      told[#told + 1] = '1'
      due.left = due.left - 1
      budget.left = budget.left - 1
      budget.took = budget.took + (word and 0 or 1)
    end
  end
  chunked({'HSET', outbox.dependents_key(id)}, told, 2)
  return stopped
end
-- The reads flow_jobs.take makes of own-queue edge `edge`, gathered in
-- `k.gathered` for the call (`by_id`, and the ids in the order first
-- met): the dependent's fields read once (its deps_left kept as the
-- call's takes lower it), each edge's field of its deps hash as the call
-- left it; `held` collects the takes' writes (`taken`, its deps fields
-- by name, and whether deps_left is to be written) for own_edges.flush.
-- nil when either key has another type.
function own_edges.reads(k, conf, edge)
  k.gathered = k.gathered or {by_id = {}, order = {}}
  local held = k.gathered.by_id[edge.id]
  if not held then
    local reads = flow_jobs.edge_reads(conf, edge, true)
    if not reads then
      return nil
    end
    held = {f = reads.f, taken = {}}
    k.gathered.by_id[edge.id] = held
    k.gathered.order[#k.gathered.order + 1] = edge.id
    reads.held = held
    return reads
  end
  local value = held.taken[edge.field] or redis.pcall('HGET', outbox.deps_key(edge.id), edge.field)
  if type(value) == 'table' then
    return nil
  end
  return {value = value, f = held.f, held = held}
end
-- The writes own_edges.reads gathered, one HSET a dependent's deps hash
-- (each field was `wait`, so the order they are set in changes nothing)
-- and one of its deps_left, in the order the dependents were first met.
function own_edges.flush(k)
  local gathered = k.gathered
  k.gathered = nil
  for _, id in ipairs(gathered and gathered.order or {}) do
    local held, fields = gathered.by_id[id], {}
    for field, text in pairs(held.taken) do
      fields[#fields + 1] = field
      fields[#fields + 1] = text
    end
    chunked({'HSET', outbox.deps_key(id)}, fields, 2)
    if held.left then
      redis.call('HSET', job_key(id), 'deps_left', held.f[2])
    end
  end
end
-- A blocked job whose last edge resolved (FLOW.RESOLVE, COMPLETE): held in
-- `k.unblocking` until every edge of the call is taken (then
-- own_edges.unblock_held), so the call's `dependency_resolved` events share
-- entries, and so do its `unblocked` ones. `job` holds its priority, group
-- and run_at.
function own_edges.unblock(k, id, job)
  k.unblocking = k.unblocking or {}
  job.id = id
  k.unblocking[#k.unblocking + 1] = job
end
-- Each job own_edges.unblock held, in order, once the call's gathered
-- writes are made (own_edges.flush), out of `blocked`: to the schedule
-- at its run_at when later than `now`, else into pending as every path
-- there (its band, LIFO, its group's lane), run_at = now; its deadline
-- kept, a worker signalled, the event `unblocked` (to), deps_left 0
-- (flow_jobs.take leaves it to this write). The ZREMs are one call, and
-- so are the pushes to the tail of `fifo`.
function own_edges.unblock_held(k, conf, now)
  if not (k.gathered or k.unblocking) then
    -- Nothing taken: a queue without flows makes no table here.
    return
  end
  own_edges.flush(k)
  local held, ids = k.unblocking or {}, {}
  k.unblocking = nil
  for i, job in ipairs(held) do
    ids[i] = job.id
  end
  chunked({'ZREM', k.blocked}, ids, 1)
  local tail = {}
  for _, job in ipairs(held) do
    own_edges.unblock_one(k, conf, job, now, tail)
  end
  chunked({'RPUSH', k.fifo}, tail, 1)
end
-- One held job, its id `job.id`; a push to the tail of `fifo` is left
-- in `tail` for unblock_held's one RPUSH.
function own_edges.unblock_one(k, conf, job, now, tail)
  local id = job.id
  local run_at = tonumber(job.run_at)
  local key = job_key(id)
  if run_at and run_at > now then
    redis.call('ZADD', k.schedule, job.run_at, id)
    redis.call('HSET', key, 'state', 'scheduled', 'deps_left', '0')
    signal(k.signal, job.run_at)
  else
    local priority = tonumber(job.priority or 0)
    if not conf.lifo and by_fifo(conf, priority, job.group) then
      tail[#tail + 1] = id
    else
      push_pending(k, conf, id, priority, job.group, now)
    end
    redis.call('HSET', key, 'state', 'pending', 'run_at', int_str(now), 'deps_left', '0')
    -- One marker a call: ZADD LT 0 again changes nothing.
    if not k.woken then
      signal(k.signal, 0)
      k.woken = true
    end
  end
  keep_deadline(k, conf, id)
  local to = run_at and run_at > now and 'scheduled' or 'pending'
  emit(k.events, conf.events_max, 'unblocked', 'id', id, 'to', to)
end
