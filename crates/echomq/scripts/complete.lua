-- COMPLETE: active -> completed, fenced by the token; retention trims the
-- completed set to keep_completed (0 deletes the job at once). A simple
-- dedup key the job holds is freed. Under a cap on active jobs, wakes a
-- worker waiting for room when jobs are pending.
-- KEYS[1] base
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] completed
-- KEYS[5] meta
-- KEYS[6] events
-- KEYS[7] signal
-- KEYS[8] dedup_owner
-- KEYS[9] groups
-- KEYS[10] groups_wait
-- KEYS[11] group_index
-- KEYS[12] seq
-- KEYS[13] schedule
-- KEYS[14] fifo
-- KEYS[15] cancelled
-- KEYS[16] deadlines
-- KEYS[17] resolutions
-- KEYS[18] blocked
-- (KEYS 12, 13, 15 and 16 serve the bulk form's CLAIM tail.)
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3..] options: RESULT r
-- Reply: OK
-- Errors: NOTACTIVE, BADARG queue|id|token|result, SYNTAX, WRONGTYPE
-- Events: completed, then dependency_resolved and unblocked for its
--   dependents in this queue; the bulk form's CLAIM tail also writes promoted,
--   expired and claimed
-- Outcome: `<id> completed <result>` for a job someone waits for

local function main()
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local opts = options(3, {RESULT = function(v) return text_arg(v, 'result') end})

  local conf = settings(meta_key)
  outbox.open(conf, resolutions_key)
  expect_type(active_key, 'zset')
  expect_type(completed_key, 'zset')
  expect_type(events_key, 'stream')
  expect_freed_types(conf, pending_key, fifo_key, signal_key)
  local keys = {pending = pending_key, active = active_key, completed = completed_key,
    events = events_key, signal = signal_key, dedup_owner = dedup_owner_key, groups = groups_key,
    groups_wait = groups_wait_key, group_index = group_index_key, fifo = fifo_key, seq = seq_key,
    schedule = schedule_key, blocked = blocked_key, deadlines = deadlines_key, meta = meta_key}
  own_edges.expect(keys, conf)
  local done = complete_jobs(keys, conf, {id}, {token}, {opts.RESULT or false}, int_str(now_ms()))
  if not done[1] then
    refuse('NOTACTIVE')
  elseif done[1] == 'relay' then
    return 'relay_completed'
  end
  return {ok = 'OK'}
end
