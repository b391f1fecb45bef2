-- EXTEND: a lease checkpoint of the job in hand: deadline = now+ms (may
-- shorten the lease). Fenced by the token; the reply carries the cancel
-- flag, so a holder learns of a cancellation even without the channel.
-- KEYS[1] base
-- KEYS[2] active
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3] ms (>= 1)
-- Reply: [deadline_ms, cancel_requested 0|1] (integers)
-- Errors: NOTACTIVE, BADARG queue|id|token|ms, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local lease = int_arg(ARGV[3], 'ms', 1)
  if #ARGV > 3 then
    refuse('SYNTAX unknown option ' .. ARGV[4])
  end

  local key = fenced(id, token)
  expect_type(active_key, 'zset')
  local deadline = now_ms() + lease
  redis.call('ZADD', active_key, int_str(deadline), id)
  local cancel = redis.call('HGET', key, 'cancel') == '1' and 1 or 0
  return {deadline, cancel}
end
