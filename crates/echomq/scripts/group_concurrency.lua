-- GROUP.CONCURRENCY: reads, sets or clears a group's cap on active jobs:
-- at most MAX of the group's jobs active at once, across every worker. A
-- group counts its active jobs (`active`) only under a cap: a new cap
-- counts them once in the active set. A change puts the group where it
-- belongs (docs/protocol.md, "Groups").
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- KEYS[4] signal
-- KEYS[5] groups
-- KEYS[6] groups_wait
-- KEYS[7] group_index
-- KEYS[8] active
-- ARGV[1] group
-- ARGV[2..] options: MAX n (>= 1) or OFF; none reads only
-- Reply: flat [max, n, active, n] after the change (max 0 without a cap)
-- Errors: BADARG queue|group|max, SYNTAX, WRONGTYPE
-- Events: group_concurrency_set (group, max; 0 when cleared)

local function main()
  local group = group_arg(ARGV[1])
  local opts = options(2, {MAX = function(v) return int_arg(v, 'max', 1) end, OFF = 'flag'})
  if opts.MAX and opts.OFF then
    refuse('SYNTAX MAX and OFF exclude each other')
  end

  local conf = settings(meta_key)
  local k = {signal = signal_key, groups = groups_key, groups_wait = groups_wait_key,
    group_index = group_index_key}
  local st = group_state(k, group)
  -- Without a cap (before or after the change), the group's active jobs
  -- are counted in the active set, before any write.
  local counted = nil
  if st.concurrency == 0 or opts.OFF then
    counted = active_by_group(active_key)[group] or 0
  end
  if opts.MAX or opts.OFF then
    expect_type(events_key, 'stream')
    expect_group_keys(k)
    if opts.OFF then
      redis.call('HDEL', group_key(group), 'concurrency', 'active')
      st.concurrency, st.active = 0, 0
    else
      if st.concurrency == 0 then
        st.active = counted
      end
      st.concurrency = opts.MAX
      if st.active > 0 then
        redis.call('HSET', group_key(group), 'concurrency', int_str(opts.MAX), 'active', int_str(st.active))
      else
        redis.call('HSET', group_key(group), 'concurrency', int_str(opts.MAX))
      end
      mark_group_flow(meta_key, conf)
    end
    emit(events_key, conf.events_max, 'group_concurrency_set', 'group', group, 'max', int_str(st.concurrency))
    group_changed(k, group, st, now_ms())
  end
  if st.concurrency == 0 then
    return {'max', 0, 'active', counted}
  end
  return {'max', st.concurrency, 'active', st.active}
end
