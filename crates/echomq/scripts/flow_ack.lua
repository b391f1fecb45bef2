-- FLOW.ACK: acknowledges delivered edges on the dependency's queue
-- (docs/protocol.md, "The relay"): for each group, the field
-- `<queue> <dependent>` of dependents:<id> goes from 0 to 1 (absent or 1:
-- nothing); each change lowers the resolution's `left`, and at 0 deletes
-- resolution:<id>, the id's member of the outbox, and dependents:<id>
-- when the job hash is gone or holds no `dependents` (a new job took the
-- id). Only lowers counts and deletes: registered without deny-oom.
-- KEYS[1] base
-- KEYS[2] resolutions
-- ARGV[1] id
-- ARGV[2] queue
-- ARGV[3] dependent
-- ARGV[4..] more groups of id, queue, dependent
-- Reply: the number of fields changed (integer)
-- Errors: BADARG queue|edges|id|dependent, WRONGTYPE
-- Events: none

local function main()
  if #ARGV == 0 or #ARGV % 3 ~= 0 then
    refuse('BADARG edges')
  end
  local edges = {}
  for i = 1, #ARGV, 3 do
    local queue = ARGV[i + 1]
    local id = id_arg(ARGV[i])
    if #queue == 0 or #queue > MAX_QUEUE_NAME or not string.find(queue, '^[A-Za-z0-9_%.:%-]+$') then
      refuse('BADARG queue')
    end
    local dependent = ARGV[i + 2]
    if #dependent == 0 or #dependent > MAX_JOB_ID or string.find(dependent, '[%s{}%c]')
      or dependent == '*' then
      refuse('BADARG dependent')
    end
    edges[#edges + 1] = {id = id, field = queue .. ' ' .. dependent}
  end
  -- Every key's type before the first write.
  expect_type(resolutions_key, 'zset')
  for _, edge in ipairs(edges) do
    expect_type(outbox.dependents_key(edge.id), 'hash')
    expect_type(outbox.resolution_key(edge.id), 'hash')
    expect_type(job_key(edge.id), 'hash')
  end
  local changed = 0
  for _, edge in ipairs(edges) do
    local told = outbox.dependents_key(edge.id)
    if redis.call('HGET', told, edge.field) == '0' then
      redis.call('HSET', told, edge.field, '1')
      changed = changed + 1
      local resolution = outbox.resolution_key(edge.id)
      if redis.call('EXISTS', resolution) == 1 then
        local left = math.floor(tonumber(redis.call('HGET', resolution, 'left')) or 0) - 1
        outbox.acknowledged(resolutions_key, edge.id, left)
      end
    end
  end
  return changed
end
