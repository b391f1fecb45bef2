-- GROUPS: lists the groups that have keys (group_index) and the groups
-- with jobs running (found in the active set), by name in byte order,
-- COUNT at a time after the name AFTER gives, each with its counts and
-- settings.
-- KEYS[1] base
-- KEYS[2] group_index
-- KEYS[3] active
-- ARGV[1..] options: AFTER g (a group), COUNT n (>= 1, default 100)
-- Reply: array of [group, pending, active, paused, concurrency, max, per]
-- Errors: BADARG queue|after|count, SYNTAX, WRONGTYPE
-- Events: none

-- Whether `a` sorts before `b` byte by byte (as BYLEX does; Lua's `<`
-- follows the server's locale).
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end

local function main()
  local opts = options(1, {
    AFTER = function(v) return group_arg(v, 'after') end,
    COUNT = function(v) return int_arg(v, 'count', 1) end,
  })
  local count = opts.COUNT or DEFAULT_GROUPS_PAGE
  local from = opts.AFTER and ('(' .. opts.AFTER) or '-'
  -- The page's candidates: the index's first `count` after AFTER, and
  -- every group with jobs running after AFTER.
  local running = active_by_group(active_key)
  local seen, names = {}, {}
  for _, group in ipairs(redis.call('ZRANGE', group_index_key, from, '+', 'BYLEX', 'LIMIT', 0, count)) do
    seen[group] = true
    names[#names + 1] = group
  end
  for group in pairs(running) do
    if not seen[group] and (not opts.AFTER or before(opts.AFTER, group)) then
      names[#names + 1] = group
    end
  end
  table.sort(names, before)
  local reply = {}
  for i = 1, math.min(count, #names) do
    local group = names[i]
    local st = group_state({}, group)
    local active = st.active
    if st.concurrency == 0 then
      active = running[group] or 0
    end
    reply[#reply + 1] = {group, redis.call('ZCARD', lane_key(group)), active, st.paused and 1 or 0,
      st.concurrency, st.limit_max, st.limit_per}
  end
  return reply
end
