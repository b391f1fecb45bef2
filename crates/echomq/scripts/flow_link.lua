-- FLOW.LINK: on a dependency's queue, links dependents to job `id`, or
-- tells them again (docs/protocol.md, "Flow commands", "The check-up"):
-- each named dependent's field of dependents:<id> := 0 (a new field
-- raises the job's `dependents`, event linked; a 1 goes back to 0), and
-- the `flows` mark. A job in the outbox has its resolution's `left`
-- raised for each field turned to 0, and answers that resolution's text;
-- a decided job not in it has its resolution written as its decision
-- would have (the text from its hash, scored its finished_at); an
-- undecided one answers waiting.
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- KEYS[4] resolutions
-- ARGV[1] id (the dependency, a job of this queue)
-- ARGV[2] queue (a dependent's queue)
-- ARGV[3] dependent (its id)
-- ARGV[4..] more groups of queue, dependent
-- Reply: [waiting], or [decided, text]: the caller delivers the text
-- Errors: BADARG queue|id|edges|dependent, NOJOB, WRONGTYPE
-- Events: linked (dependent)

-- What follows the ref in the text of a job decided `state`, from the
-- job's fields `f` (result, failures, error): nil for cancelled.
local function decided_tail(state, f)
  if state == 'completed' then
    return outbox.completed_tail(f[1])
  elseif state == 'dead' then
    return outbox.dead_tail(f[2], f[3])
  end
  return nil
end

local function main()
  local id = id_arg(ARGV[1])
  if #ARGV < 3 or #ARGV % 2 ~= 1 then
    refuse('BADARG edges')
  end
  local fields = {}
  for at = 2, #ARGV, 2 do
    local queue = ARGV[at]
    if #queue == 0 or #queue > MAX_QUEUE_NAME or not string.find(queue, '^[A-Za-z0-9_%.:%-]+$') then
      refuse('BADARG queue')
    end
    local dependent = flow_jobs.name_arg(ARGV[at + 1], 'dependent', MAX_JOB_ID)
    if dependent == '*' then
      refuse('BADARG dependent')
    end
    fields[#fields + 1] = queue .. ' ' .. dependent
  end

  local conf = settings(meta_key)
  local key, told = job_key(id), outbox.dependents_key(id)
  expect_type(events_key, 'stream')
  expect_type(resolutions_key, 'zset')
  expect_type(key, 'hash')
  expect_type(told, 'hash')
  expect_type(outbox.resolution_key(id), 'hash')
  local queued = redis.call('ZSCORE', resolutions_key, id)
  local exists = redis.call('EXISTS', key) == 1
  if not exists and not queued then
    refuse('NOJOB')
  end

  if not conf.flows then
    redis.call('HSET', meta_key, 'flows', '1')
  end
  local added, turned = 0, 0
  for _, field in ipairs(fields) do
    local value = redis.call('HGET', told, field)
    if value ~= '0' then
      redis.call('HSET', told, field, '0')
      turned = turned + 1
      if not value then
        added = added + 1
        emit(events_key, conf.events_max, 'linked', 'id', id, 'dependent', field)
      end
    end
  end
  local f = exists and redis.call('HMGET', key, 'state', 'dependents', 'finished_at') or {}
  if added > 0 and exists then
    redis.call('HSET', key, 'dependents', int_str((tonumber(f[2]) or 0) + added))
  end

  local resolution = outbox.resolution_key(id)
  if queued then
    if turned > 0 then
      local left = math.floor(tonumber(redis.call('HGET', resolution, 'left')) or 0) + turned
      redis.call('HSET', resolution, 'left', int_str(left))
    end
    return {'decided', redis.call('HGET', resolution, 'text') or ''}
  end
  local state = f[1]
  if state ~= 'completed' and state ~= 'dead' and state ~= 'cancelled' then
    return {'waiting'}
  end
  conf.outbox = resolutions_key
  local due = outbox.due(conf, id, '1')
  local tail = decided_tail(state, redis.call('HMGET', key, 'result', 'failures', 'error'))
  local finished_at = tonumber(f[3])
  outbox.write(conf, id, due, state, tail, finished_at and int_str(finished_at) or int_str(now_ms()))
  return {'decided', redis.call('HGET', resolution, 'text')}
end
