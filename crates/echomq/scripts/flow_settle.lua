-- FLOW.SETTLE: on a dependency's queue, goes on where COMPLETE's budget
-- stopped (docs/protocol.md, "Deciding a job that has dependents"): when
-- the job is in the outbox with a `completed` resolution, each `0` field
-- of dependents:<id> naming a job of this queue, in HSCAN pages from the
-- resolution's `cursor`, at most COUNT, takes the resolution as
-- COMPLETE's own-queue dependents do and is told (1), lowering the
-- resolution's `left` (written with the cursor the next call starts at);
-- at 0 the resolution is acknowledged whole, as FLOW.ACK's last edge is.
-- Another outcome, or an id not in the outbox: nothing written.
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] pending
-- KEYS[4] schedule
-- KEYS[5] blocked
-- KEYS[6] meta
-- KEYS[7] events
-- KEYS[8] signal
-- KEYS[9] groups
-- KEYS[10] groups_wait
-- KEYS[11] group_index
-- KEYS[12] fifo
-- KEYS[13] deadlines
-- KEYS[14] resolutions
-- ARGV[1] id
-- ARGV[2..] options: COUNT n (>= 1, default FLOW_INLINE_EDGES)
-- Reply: [told, resolved, unblocked]: the dependents told, those of them
--   whose edge took the resolution (the rest were resolved already, or
--   gone), and those of them unblocked
-- Errors: BADARG queue|id|count, SYNTAX, WRONGTYPE
-- Events: dependency_resolved (dependency, outcome), unblocked (to)

-- The pages of dependents:<id> (`told`) from `start`, each taken as
-- COMPLETE takes its own queue's dependents (own_edges.completed writes
-- its told fields before the next page is read) while the budget lasts. Returns the
-- cursor the next call starts at: a page the budget stopped in is read
-- again; a call stops when nothing is left to tell, and one that started
-- past 0 goes on once from 0 to the end.
local function settle_pages(k, conf, id, told, due, text, budget, start)
  local cursor, wrapped = start, false
  while true do
    local page = redis.call('HSCAN', told, cursor, 'COUNT', math.max(budget.left, FLOW_SETTLE_PAGE_MIN))
    due.fields = page[2]
    if own_edges.completed(k, conf, id, due, text, budget) then
      return cursor
    end
    cursor = page[1]
    if budget.left < 1 or due.left < 1 then
      return cursor
    end
    if cursor == '0' then
      if start == '0' or wrapped then
        return cursor
      end
      wrapped = true
    end
  end
end

local function main()
  local id = id_arg(ARGV[1])
  local opts = options(2, {COUNT = function(v) return int_arg(v, 'count', 1) end})
  local count = opts.COUNT or FLOW_INLINE_EDGES

  local conf = settings(meta_key)
  local k = {seq = seq_key, pending = pending_key, schedule = schedule_key, blocked = blocked_key,
    meta = meta_key, events = events_key, signal = signal_key, groups = groups_key,
    groups_wait = groups_wait_key, group_index = group_index_key, fifo = fifo_key,
    deadlines = deadlines_key}
  expect_type(resolutions_key, 'zset')
  local resolution, told = outbox.resolution_key(id), outbox.dependents_key(id)
  expect_type(resolution, 'hash')
  expect_type(told, 'hash')
  expect_type(job_key(id), 'hash')
  expect_type(seq_key, 'string')
  expect_type(events_key, 'stream')
  -- COMPLETE's checks on a flows queue (a queue without the mark has no
  -- resolution to settle, and writes nothing below).
  own_edges.expect(k, conf)
  if conf.groups then
    expect_group_keys(k)
  end
  if not conf.flows or not redis.call('ZSCORE', resolutions_key, id) then
    return {0, 0, 0}
  end
  local r = redis.call('HMGET', resolution, 'text', 'left', 'cursor')
  if not r[1] or string.find(r[1], 'completed ', 1, true) ~= 1 then
    return {0, 0, 0}
  end
  local due = {left = math.floor(tonumber(r[2]) or 0)}
  local budget = {left = count, took = 0}
  -- A cursor: at most SCAN_CURSOR_DIGITS digits (0 when absent or not one).
  local start = r[3] and #r[3] <= SCAN_CURSOR_DIGITS and string.match(r[3], '^%d+$') and r[3] or '0'
  local cursor = settle_pages(k, conf, id, told, due, r[1], budget, start)
  local unblocked = #(k.unblocking or {})
  own_edges.unblock_held(k, conf, now_ms())
  local told_now = count - budget.left
  if told_now > 0 then
    outbox.acknowledged(resolutions_key, id, due.left, cursor)
  end
  return {told_now, budget.took, unblocked}
end
