-- GROUP.COUNTS: reads one group: its pending jobs (its lane), its active
-- jobs (counted in the active set unless it has a cap), whether it is
-- paused, its cap and its rate limit.
-- KEYS[1] base
-- KEYS[2] active
-- ARGV[1] group
-- Reply: flat [pending, n, active, n, paused, 0|1, concurrency, n, max, n, per, n]
--   (all 0 for a group without keys)
-- Errors: BADARG queue|group, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local group = group_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end
  local st = group_state({}, group)
  local active = st.active
  if st.concurrency == 0 then
    active = active_by_group(active_key)[group] or 0
  end
  return {'pending', redis.call('ZCARD', lane_key(group)), 'active', active, 'paused',
    st.paused and 1 or 0, 'concurrency', st.concurrency, 'max', st.limit_max, 'per', st.limit_per}
end
