-- COUNTS: the size of each state set, and whether the queue is paused.
-- KEYS[1] base
-- KEYS[2] schedule
-- KEYS[3] pending
-- KEYS[4] active
-- KEYS[5] completed
-- KEYS[6] dead
-- KEYS[7] cancelled
-- KEYS[8] meta
-- KEYS[9] fifo
-- KEYS[10] blocked
-- Reply: flat [scheduled, n, pending, n, active, n, completed, n, dead, n, cancelled, n, blocked, n,
--        paused, 0|1]
-- Errors: BADARG queue, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  if #ARGV > 0 then
    refuse('SYNTAX unknown option ' .. ARGV[1])
  end
  local names = {'scheduled', 'pending', 'active', 'completed', 'dead', 'cancelled', 'blocked'}
  local sets = {schedule_key, pending_key, active_key, completed_key, dead_key, cancelled_key,
    blocked_key}
  local reply = {}
  for i, name in ipairs(names) do
    reply[#reply + 1] = name
    local n = redis.call('ZCARD', sets[i])
    if name == 'pending' then
      n = n + redis.call('LLEN', fifo_key)
    end
    reply[#reply + 1] = n
  end
  reply[#reply + 1] = 'paused'
  reply[#reply + 1] = redis.call('HGET', meta_key, 'paused') == '1' and 1 or 0
  return reply
end
