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
-- (KEYS 12 and 13 serve the bulk form's CLAIM tail.)
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3..] options: RESULT r
-- Reply: OK
-- Errors: NOTACTIVE, BADARG queue|id|token|result, SYNTAX, WRONGTYPE
-- Events: completed; the bulk form's CLAIM tail also writes promoted and
--   claimed

local function main()
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local opts = options(3, {RESULT = function(v) return text_arg(v, 'result') end})

  local conf = settings(KEYS[5])
  expect_type(KEYS[3], 'zset')
  expect_type(KEYS[4], 'zset')
  expect_type(KEYS[6], 'stream')
  expect_freed_types(conf, KEYS[2], KEYS[14], KEYS[7])
  local keys = {pending = KEYS[2], active = KEYS[3], completed = KEYS[4], events = KEYS[6], signal = KEYS[7],
    dedup_owner = KEYS[8], groups = KEYS[9], groups_wait = KEYS[10], group_index = KEYS[11], fifo = KEYS[14]}
  local done = complete_jobs(keys, conf, {id}, {token}, {opts.RESULT or false}, int_str(now_ms()))
  if not done[1] then
    refuse('NOTACTIVE')
  end
  return {ok = 'OK'}
end
