-- CANCEL: a pending, scheduled or blocked job -> cancelled at once; an active job
-- gets its `cancel` flag and its id is published on the cancel channel (again
-- on a repeated request). The flag only decides what FAIL and STALLED.CHECK
-- do: a COMPLETE or DELAY by the holder still goes ahead. A cancelled
-- waiting job frees a simple or debounce dedup key it holds, and counts in
-- the queue's metrics (docs/protocol.md "Metrics").
-- KEYS[1] base
-- KEYS[2] schedule
-- KEYS[3] pending
-- KEYS[4] cancelled
-- KEYS[5] meta
-- KEYS[6] events
-- KEYS[7] dedup_owner
-- KEYS[8] groups
-- KEYS[9] groups_wait
-- KEYS[10] group_index
-- KEYS[11] fifo
-- KEYS[12] blocked
-- KEYS[13] resolutions
-- ARGV[1] id
-- Reply: 'cancelled' (was waiting) or 'requested' (is active);
--   'relay_cancelled' for 'cancelled' when it wrote a resolution
-- Errors: NOJOB, BADSTATE, BADARG queue|id, SYNTAX, WRONGTYPE
-- Events: cancelled, or cancel_requested
-- Outcome: `<id> cancelled` for a waiting job someone waits for

local WAITING = {scheduled = schedule_key, pending = pending_key, blocked = blocked_key}

local function main()
  local id = id_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end

  local conf = settings(meta_key)
  local key = job_key(id)
  local job = job_fields_waited(conf, key, {'state', 'dedup', 'dedup_mode', 'group'})
  local state = job[1]
  if not state then
    refuse('NOJOB')
  end
  expect_type(cancelled_key, 'zset')
  expect_type(events_key, 'stream')
  expect_type(fifo_key, 'list')
  local dedup = {dedup_owner = dedup_owner_key}
  if state == 'active' then
    redis.call('HSET', key, 'cancel', '1')
    redis.call('SPUBLISH', base .. ':cancel', id)
    emit(events_key, conf.events_max, 'cancel_requested', 'id', id)
    return 'requested'
  end
  local from = WAITING[state]
  if not from then
    refuse('BADSTATE ' .. state)
  end
  expect_owner_type(dedup, {job[2]})
  local k = {pending = pending_key, groups = groups_key, groups_wait = groups_wait_key,
    group_index = group_index_key, fifo = fifo_key}
  local group = conf.groups and state == 'pending' and job[4] or nil
  read_group(k, conf, group)
  local now_n = now_ms()
  local metrics = read_metrics(conf, now_n)
  outbox.open(conf, resolutions_key)
  local due = outbox.due(conf, id, job.dependents)
  if state == 'pending' then
    leave_pending(k, conf, id, group)
  else
    redis.call('ZREM', from, id)
  end
  local relay = decide_waiting({cancelled = cancelled_key, events = events_key,
    dedup_owner = dedup_owner_key}, conf, id, {waited = job[5], dedup = job[2], dedup_mode = job[3]},
    {to = 'cancelled', due = due}, now_n)
  if conf.metrics then
    -- A waiting job: counted, with no wait or run sample.
    local tally = tally_new()
    tally_outcome(tally, 'cancelled')
    record_metrics(metrics, tally_fields(tally))
  end
  return relay and 'relay_cancelled' or 'cancelled'
end
