-- FLOW.OUTBOX: reads the outbox (docs/protocol.md, "The relay"): its
-- resolutions oldest first (with JOBS, only those of the ids named, in
-- their order; an id not in the outbox is left out), each with its
-- dependents not told yet (the `0` fields of dependents:<id>, each field
-- `<queue> <id>` split at its space), at most COUNT dependents in all
-- (default 1000; a resolution with more lists COUNT of them).
-- KEYS[1] base
-- KEYS[2] resolutions
-- ARGV[1..] options: COUNT n (>= 1), JOBS id [id ...] (last: every argument
--   after it, at least one)
-- Reply: array of [id, text, [queue, dependent, queue, dependent, ...]]
-- Errors: BADARG queue|count|jobs, SYNTAX, WRONGTYPE
-- Events: none

-- Job ids (the job-id rule, not '*'), at least one, refused BADARG jobs.
local function ids_arg(values)
  if #values == 0 then
    refuse('BADARG jobs')
  end
  for _, id in ipairs(values) do
    if #id == 0 or #id > MAX_JOB_ID or string.find(id, '[%s{}%c]') or id == '*' then
      refuse('BADARG jobs')
    end
  end
  return values
end

local function main()
  local opts = options(1, {
    COUNT = function(v) return int_arg(v, 'count', 1) end,
    JOBS = {rest = ids_arg},
  })
  local count = opts.COUNT or DEFAULT_OUTBOX_COUNT
  expect_type(resolutions_key, 'zset')
  -- Each resolution has a dependent not told: COUNT of them are enough.
  local ids = opts.JOBS or redis.call('ZRANGE', resolutions_key, 0, count - 1)
  local reply, listed = {}, 0
  for _, id in ipairs(ids) do
    if listed >= count then
      break
    end
    if redis.call('ZSCORE', resolutions_key, id) then
      local resolution, told = outbox.resolution_key(id), outbox.dependents_key(id)
      expect_type(resolution, 'hash')
      expect_type(told, 'hash')
      local untold = {}
      local fields = redis.call('HGETALL', told)
      for i = 1, #fields, 2 do
        if listed >= count then
          break
        end
        local space = string.find(fields[i], ' ', 1, true)
        if fields[i + 1] == '0' and space then
          untold[#untold + 1] = string.sub(fields[i], 1, space - 1)
          untold[#untold + 1] = string.sub(fields[i], space + 1)
          listed = listed + 1
        end
      end
      reply[#reply + 1] = {id, redis.call('HGET', resolution, 'text') or '', untold}
    end
  end
  return reply
end
