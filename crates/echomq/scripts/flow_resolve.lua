-- FLOW.RESOLVE: on the dependents' queue, applies dependencies'
-- resolutions to their edges (docs/protocol.md, "Flows"). For each group
-- in order: no job `dependent`, or no field `<queue> <dependency>` in its
-- deps hash -> gone; a field not `wait` -> already; else the field takes
-- the resolution, deps_left - 1, the event dependency_resolved, then for
-- a blocked dependent: a dead, cancelled or removed resolution applies
-- its on_failure (fail -> dead, cancel -> cancelled, reason dependency,
-- its own resolution written when it has dependents; ignore counts as
-- resolved), and at deps_left 0 it is unblocked (-> pending, or the
-- schedule when its run_at is later than now) once every group is taken.
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] pending
-- KEYS[4] schedule
-- KEYS[5] blocked
-- KEYS[6] dead
-- KEYS[7] cancelled
-- KEYS[8] meta
-- KEYS[9] events
-- KEYS[10] signal
-- KEYS[11] dedup_owner
-- KEYS[12] groups
-- KEYS[13] groups_wait
-- KEYS[14] group_index
-- KEYS[15] fifo
-- KEYS[16] deadlines
-- KEYS[17] resolutions
-- ARGV[1] queue (the dependency's queue)
-- ARGV[2] dependency (its id)
-- ARGV[3] resolution (its resolution text)
-- ARGV[4] dependent (the id of a job of this queue)
-- ARGV[5..] more groups of queue, dependency, resolution, dependent
-- Reply: one word per group: resolved, unblocked, dead, cancelled,
--   relay_dead, relay_cancelled, already or gone
-- Errors: BADARG queue|edges|dependency|resolution|dependent, WRONGTYPE
-- Events: dependency_resolved (dependency, outcome), unblocked (to),
--   dead (error), cancelled
-- Outcome: `<id> dead <failures> <error>` or `<id> cancelled` for a
--   dependent its policy decided that someone waits for

-- What a failure policy decides: nothing (ignore), or the state it sends
-- the dependent to.
local decides = {fail = 'dead', cancel = 'cancelled'}

-- A resolution text (FLOW.RESOLVE's `resolution`): `completed <ref>
-- <size> <result>` (the result exactly <size> bytes when <size> is at
-- most FLOW_RESULT_MAX, empty otherwise), `dead <ref> <failures>
-- <error>` (the error at most FLOW_ERROR_MAX bytes), `cancelled <ref>` or
-- `removed <ref>`; a ref by the job-id rule with at most MAX_REF bytes, a
-- number by digits alone, at most MAX_INT. Returns its outcome word;
-- refused as BADARG resolution. The module's twin is
-- echomq_protocol::name::resolution_outcome.
local function resolution_arg(text)
  local word, ref, rest = string.match(text or '', '^(%l+) ([^ ]*)(.*)$')
  local count, tail = string.match(rest or '', '^ (%d+) (.*)$')
  local n = count and #count <= MAX_INT_DIGITS and tonumber(count)
  local whole, named = false, ref and #ref > 0 and #ref <= MAX_REF
  if named and not string.find(ref, ID_REFUSED) then
    if word == 'cancelled' or word == 'removed' then
      whole = rest == ''
    elseif word == 'completed' and n and n <= MAX_INT then
      whole = #tail == (n <= FLOW_RESULT_MAX and n or 0)
    elseif word == 'dead' and n and n <= MAX_INT then
      whole = #tail <= FLOW_ERROR_MAX
    end
  end
  if not whole then
    refuse('BADARG resolution')
  end
  return word
end

-- One group's arguments, checked in their order.
local function edge_arg(at)
  local queue = ARGV[at]
  if #queue == 0 or #queue > MAX_QUEUE_NAME or not string.find(queue, '^[A-Za-z0-9_%.:%-]+$') then
    refuse('BADARG queue')
  end
  local dependency = flow_jobs.name_arg(ARGV[at + 1], 'dependency', MAX_JOB_ID)
  if dependency == '*' then
    refuse('BADARG dependency')
  end
  local outcome = resolution_arg(ARGV[at + 2])
  local dependent = flow_jobs.name_arg(ARGV[at + 3], 'dependent', MAX_JOB_ID)
  if dependent == '*' then
    refuse('BADARG dependent')
  end
  return {field = queue .. ' ' .. dependency, text = ARGV[at + 2], outcome = outcome, id = dependent}
end

-- Every key a group may touch, its type checked before the first write:
-- the dependent's hash and deps hash, its dependents hash and resolution
-- when its policy may decide it (a resolution not `completed`), its
-- group's lane, and the dedup owner hash for a job with a dedup key.
-- Returns the group's reads (flow_jobs.edge_reads), which check the
-- dependent's hash and deps hash, for its take.
local function expect_group_types(k, conf, edge)
  local reads = flow_jobs.edge_reads(conf, edge)
  if not reads then
    refuse('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  if conf.outbox and edge.outcome ~= 'completed' then
    expect_type(outbox.dependents_key(edge.id), 'hash')
    expect_type(outbox.resolution_key(edge.id), 'hash')
  end
  local f = reads.f
  if conf.groups and f[5] then
    read_lane(k, f[5])
  end
  expect_owner_type(k, {f[8]})
  return reads
end

-- One group once every type is checked: its answer. `reads` are the
-- type pass's, nil when an earlier group of the call took an edge of the
-- same dependent (they are stale then).
local function resolve(k, conf, edge, now, tally, reads)
  local word, f, left = flow_jobs.take(k, conf, edge, false, reads)
  if word then
    return word
  elseif f[1] ~= 'blocked' then
    return 'resolved'
  end
  local to = edge.outcome ~= 'completed' and decides[f[3] or 'fail']
  if to then
    local due = outbox.due(conf, edge.id, f.dependents, true)
    redis.call('ZREM', k.blocked, edge.id)
    if left == 0 then
      -- flow_jobs.take left a last edge's deps_left to this decision.
      redis.call('HSET', job_key(edge.id), 'deps_left', '0')
    end
    local job = {failures = f[7], waited = f.waited, dedup = f[8], dedup_mode = f[9]}
    local relay = decide_waiting(k, conf, edge.id, job, {to = to, due = due, reason = 'dependency',
      error = 'dependency ' .. edge.field .. ' is ' .. edge.outcome}, now)
    tally_outcome(tally, to)
    return relay and 'relay_' .. to or to
  elseif left == 0 then
    own_edges.unblock(k, edge.id, {priority = f[4], group = conf.groups and f[5] or nil, run_at = f[6]})
    return 'unblocked'
  end
  return 'resolved'
end

local function main()
  if #ARGV == 0 or #ARGV % 4 ~= 0 then
    refuse('BADARG edges')
  end
  local edges = {}
  for at = 1, #ARGV, 4 do
    edges[#edges + 1] = edge_arg(at)
  end

  local conf = settings(meta_key)
  local k = {seq = seq_key, pending = pending_key, schedule = schedule_key, blocked = blocked_key,
    dead = dead_key, cancelled = cancelled_key, meta = meta_key, events = events_key, signal = signal_key,
    dedup_owner = dedup_owner_key, groups = groups_key, groups_wait = groups_wait_key,
    group_index = group_index_key, fifo = fifo_key, deadlines = deadlines_key}
  outbox.open(conf, resolutions_key)
  expect_type(seq_key, 'string')
  expect_pending_types(pending_key, fifo_key)
  for _, key in ipairs({schedule_key, blocked_key, dead_key, cancelled_key, signal_key}) do
    expect_type(key, 'zset')
  end
  expect_type(events_key, 'stream')
  if conf.timed then
    expect_type(deadlines_key, 'zset')
  end
  read_group(k, conf, nil)
  local reads = {}
  for i, edge in ipairs(edges) do
    reads[i] = expect_group_types(k, conf, edge)
  end
  local now = now_ms()
  local metrics = read_metrics(conf, now)

  local words, tally, taken = {}, tally_new(), {}
  for i, edge in ipairs(edges) do
    words[i] = resolve(k, conf, edge, now, tally, not taken[edge.id] and reads[i] or nil)
    taken[edge.id] = true
  end
  own_edges.unblock_held(k, conf, now)
  if conf.metrics then
    -- Dependents a policy decided: counted, with no wait or run sample.
    local counted = tally_fields(tally)
    if #counted > 0 then
      record_metrics(metrics, counted)
    end
  end
  return words
end
