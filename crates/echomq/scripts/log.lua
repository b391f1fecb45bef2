-- LOG: appends a line to a job's log, keeping the newest KEEP (default 1000),
-- and sets the queue's logs mark to 1 (docs/protocol.md, "The logs mark").
-- KEYS[1] base
-- ARGV[1] id
-- ARGV[2] line
-- ARGV[3..] options: KEEP n (>= 1)
-- Reply: the log's length (integer)
-- Errors: NOJOB, BADARG queue|id|line|keep, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local id = id_arg(ARGV[1])
  local line = text_arg(ARGV[2], 'line')
  local opts = options(3, {KEEP = function(v) return int_arg(v, 'keep', 1) end})
  local keep = opts.KEEP or DEFAULT_LOG_KEEP
  if not redis.call('HGET', job_key(id), 'state') then
    refuse('NOJOB')
  end
  local logs = logs_key(id)
  expect_type(logs, 'list')
  -- The queue's logs mark: retention deletes log keys from now on.
  local meta = queue_key('meta')
  expect_type(meta, 'hash')
  if redis.call('HGET', meta, 'logs') ~= '1' then
    redis.call('HSET', meta, 'logs', '1')
  end
  local length = redis.call('RPUSH', logs, line)
  if length > keep then
    redis.call('LTRIM', logs, length - keep, -1)
    length = keep
  end
  return length
end
