-- OBLITERATE: deletes the whole queue, COUNT jobs (with their logs) per
-- call (default 1000), and with the last call every other key of the
-- queue. Only a paused queue; with active jobs only with FORCE (which
-- publishes each active id on the cancel channel before deleting it).
-- Every call that gets past its checks deletes the dedup keys: an
-- obliterated queue holds no deduplication key. Groups go first, COUNT
-- per call from the index, each with its lane and hash. The last call also
-- deletes the queue's metrics: the total and the windows the settings keep.
-- KEYS[1] base
-- KEYS[2] id
-- KEYS[3] seq
-- KEYS[4] schedule
-- KEYS[5] pending
-- KEYS[6] active
-- KEYS[7] completed
-- KEYS[8] dead
-- KEYS[9] cancelled
-- KEYS[10] meta
-- KEYS[11] events
-- KEYS[12] signal
-- KEYS[13] repeat
-- KEYS[14] dedup
-- KEYS[15] dedup_owner
-- KEYS[16] groups
-- KEYS[17] groups_wait
-- KEYS[18] group_index
-- KEYS[19] fifo
-- KEYS[20] deadlines
-- KEYS[21] blocked
-- KEYS[22] resolutions
-- ARGV[1..] options: FORCE, COUNT n (>= 1)
-- Reply: job hashes and groups left (integer); 0 when the queue is gone
-- Errors: NOTPAUSED, BADSTATE, BADARG queue|count, SYNTAX, WRONGTYPE
-- Events: none (the events stream is deleted with the rest)
-- Outcome: `<id> removed` for each unfinished job (scheduled, pending,
--   active, blocked) someone waits for

local function main()
  local opts = options(1, {FORCE = 'flag', COUNT = function(v) return int_arg(v, 'count', 1) end})
  local budget = opts.COUNT or DEFAULT_DELETE_COUNT

  -- Every fixed key the call is passed but the base (which holds nothing)
  -- and the outbox, the hand-off that outlives the queue (last).
  local exists = redis.call('EXISTS', unpack(KEYS, 2, #KEYS - 1))
  if exists == 0 then
    return 0
  end
  -- The paused state and the waited mark (only then are the unfinished
  -- jobs' `waited` read).
  local marks = redis.call('HMGET', meta_key, 'paused', 'waited', 'flows')
  if marks[1] ~= '1' then
    refuse('NOTPAUSED')
  end
  local waited = marks[2] == '1'
  local conf = {flows = marks[3] == '1'}
  outbox.open(conf, resolutions_key)
  local now_s = int_str(now_ms())
  if not opts.FORCE and redis.call('ZCARD', active_key) > 0 then
    refuse('BADSTATE active')
  end
  -- The job sets, emptied in this order.
  local sets = {schedule_key, pending_key, active_key, completed_key, dead_key, cancelled_key,
    blocked_key}
  -- The sets of unfinished jobs: deleting one publishes its outcome.
  local unfinished = {[schedule_key] = true, [pending_key] = true, [active_key] = true,
    [blocked_key] = true}
  for _, set in ipairs(sets) do
    expect_type(set, 'zset')
  end
  expect_type(group_index_key, 'zset')
  expect_type(fifo_key, 'list')
  redis.call('DEL', dedup_key, dedup_owner_key)
  local left = 0
  local groups = redis.call('ZRANGE', group_index_key, 0, budget - 1)
  if #groups > 0 then
    local doomed = {}
    for _, group in ipairs(groups) do
      doomed[#doomed + 1] = lane_key(group)
      doomed[#doomed + 1] = group_key(group)
    end
    chunked({'DEL'}, doomed, 1)
    chunked({'ZREM', group_index_key}, groups, 1)
    budget = budget - #groups
  end
  left = left + redis.call('ZCARD', group_index_key)
  for _, set in ipairs(sets) do
    if budget > 0 then
      local ids = redis.call('ZRANGE', set, 0, budget - 1)
      if #ids > 0 then
        if unfinished[set] then
          publish_removed(waited, ids)
          outbox.removed(conf, ids, now_s)
        else
          outbox.forget(conf, ids)
        end
        if set == active_key then
          for _, id in ipairs(ids) do
            redis.call('SPUBLISH', base .. ':cancel', id)
          end
        end
        delete_jobs(ids)
        chunked({'ZREM', set}, ids, 1)
        budget = budget - #ids
      end
    end
    left = left + redis.call('ZCARD', set)
  end
  -- Then the fifo's jobs, from its head.
  if budget > 0 then
    local ids = redis.call('LPOP', fifo_key, budget) or {}
    publish_removed(waited, ids)
    outbox.removed(conf, ids, now_s)
    delete_jobs(ids)
  end
  left = left + redis.call('LLEN', fifo_key)
  if left == 0 then
    chunked({'DEL'}, metrics_windows_kept(settings(meta_key), now_ms()), 1)
    redis.call('DEL', unpack(KEYS, 2, #KEYS - 1))
    redis.call('DEL', base .. ':sweep')
  end
  return left
end
