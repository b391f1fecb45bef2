-- COMPLETE_BULK: many COMPLETEs in one call (wire 4's path for a worker's
-- batch of outcomes); each job behaves exactly as COMPLETE would, in order,
-- and a job its caller no longer holds is reported, not fatal.
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
-- ARGV: groups of three, one per job: id, token, result ('' stores none)
-- Reply: one entry per job, in order: 'OK' or 'NOTACTIVE'
-- Errors: BADARG queue|jobs|id|token, WRONGTYPE
-- Events: completed (one per completed job)

local function main()
  if #ARGV == 0 or #ARGV % 3 ~= 0 then
    refuse('BADARG jobs')
  end
  local jobs = {}
  for i = 1, #ARGV, 3 do
    local result = ARGV[i + 2]
    jobs[#jobs + 1] = {
      id = id_arg(ARGV[i]),
      token = int_arg(ARGV[i + 1], 'token'),
      result = result ~= '' and result or nil,
    }
  end

  local conf = settings(KEYS[5])
  expect_type(KEYS[3], 'zset')
  expect_type(KEYS[4], 'zset')
  expect_type(KEYS[6], 'stream')
  expect_freed_types(conf, KEYS[2], KEYS[7])
  local keys = {pending = KEYS[2], active = KEYS[3], completed = KEYS[4], events = KEYS[6], signal = KEYS[7],
    dedup_owner = KEYS[8], groups = KEYS[9], groups_wait = KEYS[10], group_index = KEYS[11]}
  local outcome = complete_jobs(keys, conf, jobs, int_str(now_ms()))
  local reply = {}
  for i, done in ipairs(outcome) do
    reply[i] = done and 'OK' or 'NOTACTIVE'
  end
  return reply
end
