-- GROUPS: lists the groups that have keys (group_index), by name, COUNT at
-- a time after the name AFTER gives, each with its counts and settings.
-- KEYS[1] base
-- KEYS[2] group_index
-- ARGV[1..] options: AFTER g (a group), COUNT n (>= 1, default 100)
-- Reply: array of [group, pending, active, paused, concurrency, max, per]
-- Errors: BADARG queue|after|count, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local opts = options(1, {
    AFTER = function(v)
      if v == nil or #v == 0 or #v > MAX_GROUP or string.find(v, '[%s{}]') then
        refuse('BADARG after')
      end
      return v
    end,
    COUNT = function(v) return int_arg(v, 'count', 1) end,
  })
  local from = opts.AFTER and ('(' .. opts.AFTER) or '-'
  local names = redis.call('ZRANGE', KEYS[2], from, '+', 'BYLEX', 'LIMIT', 0, opts.COUNT or DEFAULT_GROUPS_PAGE)
  local reply = {}
  for _, group in ipairs(names) do
    local st = group_state({}, group)
    reply[#reply + 1] = {group, redis.call('ZCARD', lane_key(group)), st.active, st.paused and 1 or 0,
      st.concurrency, st.limit_max, st.limit_per}
  end
  return reply
end
