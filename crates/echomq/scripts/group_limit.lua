-- GROUP.LIMIT: reads, sets or clears a group's rate limit: at most MAX of
-- its jobs start per window of PER ms, across every worker, windows as the
-- queue's. A new limit keeps the current window's count; OFF deletes the
-- limit and the count. A change puts the group where it belongs.
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- KEYS[4] signal
-- KEYS[5] groups
-- KEYS[6] groups_wait
-- KEYS[7] group_index
-- ARGV[1] group
-- ARGV[2..] options: MAX n with PER ms (each >= 1), or OFF; none reads only
-- Reply: flat [max, n, per, ms, used, n, reset_ms, n] after the change: the
--   starts counted in the current window and the ms until it ends (0s
--   without a limit)
-- Errors: BADARG queue|group|max|per, SYNTAX, WRONGTYPE
-- Events: group_limit_set (group, max, per; 0 and 0 when cleared)

local function main()
  local group = group_arg(ARGV[1])
  local opts = limit_options(2)

  local conf = settings(meta_key)
  local k = {signal = signal_key, groups = groups_key, groups_wait = groups_wait_key,
    group_index = group_index_key}
  local st = group_state(k, group)
  local now = now_ms()
  if opts.MAX or opts.OFF then
    expect_type(events_key, 'stream')
    expect_group_keys(k)
    if opts.OFF then
      redis.call('HDEL', group_key(group), 'limit_max', 'limit_per', 'limit_window', 'limit_used')
      st.limit_max, st.limit_per, st.limit_window, st.limit_used = 0, 0, 0, 0
    else
      redis.call('HSET', group_key(group), 'limit_max', int_str(opts.MAX), 'limit_per', int_str(opts.PER))
      st.limit_max, st.limit_per = opts.MAX, opts.PER
      mark_group_flow(meta_key, conf)
    end
    emit(events_key, conf.events_max, 'group_limit_set', 'group', group, 'max', int_str(st.limit_max),
      'per', int_str(st.limit_per))
    group_changed(k, group, st, now)
  end
  local window, used = rate_window(st, now)
  local max, per, reset = 0, 0, 0
  if window then
    max, per, reset = st.limit_max, st.limit_per, window + st.limit_per - now
  end
  return {'max', max, 'per', per, 'used', used, 'reset_ms', reset}
end
