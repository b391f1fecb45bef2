-- CONCURRENCY: reads, sets or clears the queue's cap on active jobs: a
-- claim hands out at most MAX minus the active jobs, across every worker.
-- A change wakes a worker waiting for room when jobs are pending.
-- KEYS[1] base
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] meta
-- KEYS[5] events
-- KEYS[6] signal
-- KEYS[7] fifo
-- ARGV[1..] options: MAX n (>= 1) or OFF; none reads only
-- Reply: flat [max, n, active, n] after the change (max 0 without a cap)
-- Errors: BADARG queue|max, SYNTAX, WRONGTYPE
-- Events: concurrency_set (max; 0 when cleared)

local function main()
  local opts = options(1, {MAX = function(v) return int_arg(v, 'max', 1) end, OFF = 'flag'})
  if opts.MAX and opts.OFF then
    refuse('SYNTAX MAX and OFF exclude each other')
  end

  local conf = settings(meta_key)
  expect_type(active_key, 'zset')
  if opts.MAX or opts.OFF then
    expect_pending_types(pending_key, fifo_key)
    expect_type(events_key, 'stream')
    expect_type(signal_key, 'zset')
    if opts.OFF then
      redis.call('HDEL', meta_key, 'concurrency')
      conf.concurrency = 0
    else
      redis.call('HSET', meta_key, 'concurrency', int_str(opts.MAX))
      conf.concurrency = opts.MAX
    end
    emit(events_key, conf.events_max, 'concurrency_set', 'max', int_str(conf.concurrency))
    if pending_count(pending_key, fifo_key) > 0 then
      signal(signal_key, 0)
    end
  end
  return {'max', conf.concurrency, 'active', redis.call('ZCARD', active_key)}
end
