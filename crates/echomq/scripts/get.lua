-- GET: reads one job: its fields in protocol order (absent ones left out),
-- then id and logs (the log length).
-- KEYS[1] base
-- ARGV[1] id
-- Reply: flat [field, value, ..., 'id', id, 'logs', n]; nil when absent
-- Errors: BADARG queue|id, SYNTAX, WRONGTYPE
-- Events: none

local FIELDS = {'state', 'payload', 'priority', 'max_attempts', 'claims', 'failures',
  'stalls', 'created_at', 'run_at', 'claimed_at', 'finished_at', 'worker', 'progress',
  'result', 'error', 'cancel', 'repeat', 'dedup', 'dedup_mode', 'group', 'traceparent',
  'time_limit', 'start_by', 'reason', 'lifo', 'flow', 'ref', 'on_failure', 'deps', 'deps_left',
  'dependents'}
local INTEGERS = {priority = true, max_attempts = true, claims = true, failures = true,
  stalls = true, created_at = true, run_at = true, claimed_at = true, finished_at = true,
  cancel = true, time_limit = true, start_by = true, lifo = true, deps = true, deps_left = true,
  dependents = true}

local function main()
  local id = id_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end
  local key = job_key(id)
  local values = redis.call('HMGET', key, unpack(FIELDS))
  if not values[1] then
    return false
  end
  local reply = {}
  for i, field in ipairs(FIELDS) do
    local value = values[i]
    if value then
      reply[#reply + 1] = field
      if INTEGERS[field] then
        -- A value that is not a number goes out as it is stored.
        reply[#reply + 1] = tonumber(value) or value
      else
        reply[#reply + 1] = value
      end
    end
  end
  reply[#reply + 1] = 'id'
  reply[#reply + 1] = id
  reply[#reply + 1] = 'logs'
  reply[#reply + 1] = redis.call('LLEN', logs_key(id))
  return reply
end
