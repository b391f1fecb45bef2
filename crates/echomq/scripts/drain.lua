-- DRAIN: deletes up to COUNT (default 1000) pending jobs (then scheduled
-- ones with SCHEDULED, then blocked ones with BLOCKED) with their logs; active and finished jobs are left
-- alone. The caller repeats until it answers 0. A deleted job frees a
-- simple or debounce dedup key it holds.
-- KEYS[1] base
-- KEYS[2] pending
-- KEYS[3] schedule
-- KEYS[4] meta
-- KEYS[5] events
-- KEYS[6] dedup_owner
-- KEYS[7] groups
-- KEYS[8] groups_wait
-- KEYS[9] group_index
-- KEYS[10] fifo
-- KEYS[11] blocked
-- KEYS[12] resolutions
-- ARGV[1..] options: SCHEDULED, BLOCKED, COUNT n (>= 1)
-- Reply: count deleted (integer)
-- Errors: BADARG queue|count, SYNTAX, WRONGTYPE
-- Events: drained (count), once per call that deleted any job
-- Outcome: `<id> removed` for each deleted job someone waits for

local function main()
  local opts = options(1, {SCHEDULED = 'flag', BLOCKED = 'flag', COUNT = function(v) return int_arg(v, 'count', 1) end})
  local budget = opts.COUNT or DEFAULT_DELETE_COUNT

  local conf = settings(meta_key)
  expect_pending_types(pending_key, fifo_key)
  expect_type(schedule_key, 'zset')
  expect_type(blocked_key, 'zset')
  expect_type(events_key, 'stream')
  outbox.open(conf, resolutions_key)
  local sets = {pending_key}
  if opts.SCHEDULED then
    sets[#sets + 1] = schedule_key
  end
  if opts.BLOCKED then
    sets[#sets + 1] = blocked_key
  end
  -- The jobs to delete, set by set, found before the first write:
  -- pending's from the head of fifo first.
  local queued = redis.call('LRANGE', fifo_key, 0, budget - 1)
  local doomed, deleted = {}, #queued
  for i, set in ipairs(sets) do
    doomed[i] = {}
    if budget - deleted > 0 then
      doomed[i] = redis.call('ZRANGE', set, 0, budget - deleted - 1)
      deleted = deleted + #doomed[i]
    end
  end
  -- Pending's doomed: fifo's, then the sorted set's.
  local from_set = doomed[1]
  for _, id in ipairs(from_set) do
    queued[#queued + 1] = id
  end
  doomed[1] = queued
  local from_fifo = #queued - #from_set
  local dedup = {dedup_owner = dedup_owner_key}
  local held = deleted_dedup_keys(dedup, doomed)
  -- On a queue with groups, the pending jobs' groups (their lanes' and
  -- hashes' types checked).
  local k = {pending = pending_key, groups = groups_key, groups_wait = groups_wait_key,
    group_index = group_index_key, fifo = fifo_key}
  local lanes, order = {}, {}
  if conf.groups then
    expect_group_keys(k)
    for _, id in ipairs(doomed[1]) do
      local group = redis.call('HGET', job_key(id), 'group')
      if group then
        if not lanes[group] then
          read_lane(k, group)
          lanes[group] = {}
          order[#order + 1] = group
        end
        local ids = lanes[group]
        ids[#ids + 1] = id
      end
    end
  end
  for i, set in ipairs(sets) do
    local ids = doomed[i]
    if #ids > 0 then
      publish_removed(conf.waited, ids)
      outbox.removed(conf, ids, int_str(now_ms()))
      delete_jobs(ids)
      if i == 1 then
        if from_fifo > 0 then
          redis.call('LPOP', fifo_key, from_fifo)
        end
        ids = from_set
      end
      if #ids > 0 then
        chunked({'ZREM', set}, ids, 1)
      end
    end
  end
  for _, job in ipairs(held) do
    release_dedup(dedup, job.id, job.key, job.mode)
  end
  for _, group in ipairs(order) do
    lane_deleted(k, group, lanes[group])
  end
  if #doomed[1] > 0 then
    ungrouped_left(k, conf)
  end
  if deleted > 0 then
    emit(events_key, conf.events_max, 'drained', 'count', deleted)
  end
  return deleted
end
