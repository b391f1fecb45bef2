-- DRAIN: deletes up to COUNT (default 1000) pending jobs (and scheduled
-- ones with SCHEDULED) with their logs; active and finished jobs are left
-- alone. The caller repeats until it answers 0.
-- KEYS[1] base
-- KEYS[2] pending
-- KEYS[3] schedule
-- KEYS[4] meta
-- KEYS[5] events
-- ARGV[1..] options: SCHEDULED, COUNT n (>= 1)
-- Reply: count deleted (integer)
-- Errors: BADARG queue|count, SYNTAX, WRONGTYPE
-- Events: drained (count), once per call that deleted any job

local function main()
  local opts = options(1, {SCHEDULED = 'flag', COUNT = function(v) return int_arg(v, 'count', 1) end})
  local budget = opts.COUNT or DEFAULT_DELETE_COUNT

  local conf = settings(KEYS[4])
  expect_type(KEYS[2], 'zset')
  expect_type(KEYS[3], 'zset')
  expect_type(KEYS[5], 'stream')
  local deleted = 0
  local sets = {KEYS[2]}
  if opts.SCHEDULED then
    sets[2] = KEYS[3]
  end
  for _, set in ipairs(sets) do
    if budget - deleted > 0 then
      local ids = redis.call('ZRANGE', set, 0, budget - deleted - 1)
      if #ids > 0 then
        local doomed = {}
        for _, id in ipairs(ids) do
          doomed[#doomed + 1] = job_key(id)
          doomed[#doomed + 1] = logs_key(id)
        end
        chunked({'DEL'}, doomed, 1)
        chunked({'ZREM', set}, ids, 1)
        deleted = deleted + #ids
      end
    end
  end
  if deleted > 0 then
    emit(KEYS[5], conf.events_max, 'event', 'drained', 'count', deleted)
  end
  return deleted
end
