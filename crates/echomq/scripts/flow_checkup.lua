-- FLOW.CHECKUP: the blocked jobs whose check-up is due (docs/protocol.md,
-- "The check-up"): scored at most now, lowest score first, each with all
-- its `wait` edges (its deps hash's fields valued wait, each `<queue>
-- <id>` split at its space), while the edges listed stay within COUNT
-- (default DEFAULT_CHECKUP_COUNT; the first job is listed whatever its
-- count, and the first that does not fit ends the list); each job listed
-- is scored again now + AGAIN (default FLOW_CHECKUP_MS, at most MAX_INT).
-- KEYS[1] base
-- KEYS[2] blocked
-- ARGV[1..] options: COUNT n (>= 1), AGAIN ms (>= 1)
-- Reply: array of [id, [queue, dependency, queue, dependency, ...]]
-- Errors: BADARG queue|count|again, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local opts = options(1, {
    COUNT = function(v) return int_arg(v, 'count', 1) end,
    AGAIN = function(v) return int_arg(v, 'again', 1) end,
  })
  local count = opts.COUNT or DEFAULT_CHECKUP_COUNT
  expect_type(blocked_key, 'zset')
  local now = now_ms()
  local due = redis.call('ZRANGE', blocked_key, '-inf', int_str(now), 'BYSCORE', 'LIMIT', 0, int_str(count))
  local reply, scored, listed = {}, {}, 0
  local again = now + (opts.AGAIN or FLOW_CHECKUP_MS)
  again = int_str(math.min(again, MAX_INT))
  for _, id in ipairs(due) do
    local deps = outbox.deps_key(id)
    expect_type(deps, 'hash')
    local edges = {}
    local fields = redis.call('HGETALL', deps)
    for i = 1, #fields, 2 do
      local space = string.find(fields[i], ' ', 1, true)
      if fields[i + 1] == 'wait' and space then
        edges[#edges + 1] = string.sub(fields[i], 1, space - 1)
        edges[#edges + 1] = string.sub(fields[i], space + 1)
      end
    end
    if #reply > 0 and listed + #edges / 2 > count then
      break
    end
    listed = listed + #edges / 2
    reply[#reply + 1] = {id, edges}
    scored[#scored + 1] = again
    scored[#scored + 1] = id
  end
  chunked({'ZADD', blocked_key}, scored, 2)
  return reply
end
