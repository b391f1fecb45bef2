-- LIMIT: reads, sets or clears the queue's rate limit: at most MAX jobs
-- start (are handed out by CLAIM) per window of PER ms, across every
-- worker; windows are aligned on the server clock (now - now mod per). A
-- new limit keeps the current window's count (limit_window, limit_used);
-- OFF deletes the limit, the count and any hold (limit_hold).
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- ARGV[1..] options: MAX n with PER ms (each >= 1), or OFF; none reads only
-- Reply: flat [max, n, per, ms, used, n, reset_ms, n, hold_ms, n] after the
--   change: the starts counted in the current window and the ms until it
--   ends (0s without a limit), and the ms the queue is still held for
-- Errors: BADARG queue|max|per, SYNTAX, WRONGTYPE
-- Events: limit_set (max, per; 0 and 0 when cleared)

local function main()
  local opts = limit_options(1)

  local conf = settings(meta_key, true)
  if opts.MAX or opts.OFF then
    expect_type(events_key, 'stream')
    if opts.OFF then
      redis.call('HDEL', meta_key, 'limit_max', 'limit_per', 'limit_window', 'limit_used', 'limit_hold')
      conf.limit_max, conf.limit_per, conf.limit_hold = 0, 0, 0
    else
      redis.call('HSET', meta_key, 'limit_max', int_str(opts.MAX), 'limit_per', int_str(opts.PER))
      conf.limit_max, conf.limit_per = opts.MAX, opts.PER
    end
    emit(events_key, conf.events_max, 'limit_set', 'max', int_str(conf.limit_max),
      'per', int_str(conf.limit_per))
  end
  local now = now_ms()
  local window, used = rate_window(conf, now)
  local max, per, reset = 0, 0, 0
  if window then
    max, per, reset = conf.limit_max, conf.limit_per, window + conf.limit_per - now
  end
  return {'max', max, 'per', per, 'used', used, 'reset_ms', reset,
    'hold_ms', math.max(conf.limit_hold - now, 0)}
end
