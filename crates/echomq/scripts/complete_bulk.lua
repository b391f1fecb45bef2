-- COMPLETE_BULK: many COMPLETEs in one call (wire 4's path for a worker's
-- batch of outcomes); each job behaves exactly as COMPLETE would, in order,
-- and a job its caller no longer holds is reported, not fatal. With the
-- CLAIM tail, the call then claims as CLAIM would, at the same clock: a
-- worker's one command per cycle.
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
-- ARGV: groups of three, one per job: id, token, result ('' stores none)
-- Tail: CLAIM worker lease_ms count (optional, after the groups)
-- Reply: one entry per job, in order: 'OK' or 'NOTACTIVE'; with CLAIM,
--        then CLAIM's reply as one more entry (an error entry, the claim's
--        refusal, when the claim was refused: the completions stand)
-- Errors: BADARG queue|jobs|id|token|lease_ms|count, WRONGTYPE
-- Events: completed (one per completed job), then dependency_resolved
--   and unblocked for their dependents in this queue; with CLAIM, then promoted,
--   expired and claimed as CLAIM writes them
-- Outcome: `<id> completed <result>` for each completed job someone waits
--   for; with CLAIM, `<id> cancelled` for each job it expired

-- The CLAIM tail's arguments, checked, and how many ARGV the jobs take;
-- a fourth-last word other than CLAIM is not a tail but a short group.
local function claim_tail()
  local n = #ARGV
  if n % 3 ~= 1 or n < 7 or string.upper(ARGV[n - 3]) ~= 'CLAIM' then
    return nil, n
  end
  return {
    worker = text_arg(ARGV[n - 2], 'worker'),
    lease = int_arg(ARGV[n - 1], 'lease_ms', 1),
    count = int_arg(ARGV[n], 'count', 1),
  }, n - 4
end

local function main()
  local tail, width = claim_tail()
  if width == 0 or width % 3 ~= 0 then
    refuse('BADARG jobs')
  end
  -- Tokens repeat across a batch (most jobs are on their first claim).
  local ids, tokens, results, token_texts, n = {}, {}, {}, {}, 0
  for i = 1, width, 3 do
    n = n + 1
    ids[n] = id_arg(ARGV[i])
    local token = ARGV[i + 1]
    tokens[n] = token_texts[token] or repeated_int_arg(token_texts, token, 'token')
    results[n] = ARGV[i + 2] ~= '' and ARGV[i + 2]
  end

  local conf = settings(meta_key, tail ~= nil)
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
  local now = now_ms()
  local outcome = complete_jobs(keys, conf, ids, tokens, results, int_str(now))
  local reply = {}
  for i = 1, #outcome do
    reply[i] = outcome[i] == 'relay' and 'relay_completed' or outcome[i] and 'OK' or 'NOTACTIVE'
  end
  if tail then
    -- The claim's refusal is its entry; the completions stand.
    keys.cancelled = cancelled_key
    reply[#reply + 1] = guarded(claim_checked, keys, conf, tail.worker, tail.lease, tail.count, now)
  end
  return reply
end
