-- COMPLETE: active -> completed, fenced by the token; retention trims the
-- completed set to keep_completed (0 deletes the job at once). A simple
-- dedup key the job holds is freed.
-- KEYS[1] base
-- KEYS[2] active
-- KEYS[3] completed
-- KEYS[4] meta
-- KEYS[5] events
-- KEYS[6] dedup
-- KEYS[7] dedup_owner
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3..] options: RESULT r
-- Reply: OK
-- Errors: NOTACTIVE, BADARG queue|id|token|result, SYNTAX, WRONGTYPE
-- Events: completed

local function main()
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local opts = options(3, {RESULT = function(v) return text_arg(v, 'result') end})

  local conf = settings(KEYS[4])
  expect_type(KEYS[2], 'zset')
  expect_type(KEYS[3], 'zset')
  expect_type(KEYS[5], 'stream')
  local keys = {active = KEYS[2], completed = KEYS[3], events = KEYS[5], dedup = KEYS[6],
    dedup_owner = KEYS[7]}
  local done = complete_jobs(keys, conf, {{id = id, token = token, result = opts.RESULT}}, int_str(now_ms()))
  if not done[1] then
    refuse('NOTACTIVE')
  end
  return {ok = 'OK'}
end
