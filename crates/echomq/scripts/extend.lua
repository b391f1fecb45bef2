-- EXTEND: a lease checkpoint of the job in hand: deadline = now+ms (may
-- shorten the lease), at most claimed_at + its time_limit; refused
-- TIMELIMIT once that has passed (docs/protocol.md, "Time limits, start-by
-- deadlines, LIFO and retention by age"). Fenced by the token; the reply
-- carries the cancel flag, so a holder learns of a cancellation even
-- without the channel. One HMGET reads the fence, cancel and time_limit.
-- KEYS[1] base
-- KEYS[2] active
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3] ms (>= 1)
-- Reply: [deadline_ms, cancel_requested 0|1] (integers)
-- Errors: NOTACTIVE, TIMELIMIT, BADARG queue|id|token|ms, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local lease = int_arg(ARGV[3], 'ms', 1)
  if #ARGV > 3 then
    refuse('SYNTAX unknown option ' .. ARGV[4])
  end

  local key = job_key(id)
  local found = redis.call('HMGET', key, 'state', 'claims', 'claimed_at', 'cancel', 'time_limit')
  if found[1] ~= 'active' or job_token(found[2], found[3]) ~= token then
    refuse('NOTACTIVE')
  end
  expect_type(active_key, 'zset')
  local now = now_ms()
  local deadline = now + lease
  local limit = tonumber(found[5])
  if limit then
    local ends = tonumber(found[3]) + limit
    if now >= ends then
      refuse('TIMELIMIT')
    end
    deadline = math.min(deadline, ends)
  end
  redis.call('ZADD', active_key, int_str(deadline), id)
  return {deadline, found[4] == '1' and 1 or 0}
end
