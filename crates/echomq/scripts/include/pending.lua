-- Pending: a worker woken, the pending set's two keys (docs/protocol.md,
-- "The fifo"), and the room a job leaving active frees.

-- Wakes an idle worker: a marker on the signal set, scored by when work is due.
local function signal(key, due_ms)
  redis.call('ZADD', key, 'LT', due_ms, 'wake')
end

-- The pending set is two keys (docs/protocol.md, "The fifo"): `pending`,
-- a sorted set, and `fifo`, the list of a queue without groups' jobs of
-- priority 0. Both must be of their type before a command's first write.
local function expect_pending_types(pending, fifo)
  expect_type(pending, 'zset')
  expect_type(fifo, 'list')
end

-- The pending score of a job that is not LIFO: priority*2^44 + 2^43 +
-- (seq mod 2^43), the upper half of its band (docs/protocol.md, "LIFO").
local function seq_score(priority, seq)
  return priority * PENDING_BAND + LIFO_HALF + seq % LIFO_HALF
end

-- The pending score of a LIFO job: priority*2^44 + 2^43 - 1 - (lifo_seq
-- mod 2^43), below the band's other jobs, the newest lowest.
local function lifo_score(priority, lifo_seq)
  return priority * PENDING_BAND + LIFO_HALF - 1 - lifo_seq % LIFO_HALF
end

-- How many jobs are pending: both keys.
local function pending_count(pending, fifo)
  return redis.call('ZCARD', pending) + redis.call('LLEN', fifo)
end

-- With a cap on active jobs, what `freed` touches must be of its type
-- (checked before a command's first write).
local function expect_freed_types(conf, pending, fifo, wake)
  if conf.concurrency > 0 then
    expect_pending_types(pending, fifo)
    expect_type(wake, 'zset')
  end
end

-- A job left active: under a cap on active jobs, one worker waiting for
-- room may claim now, when jobs are pending.
local function freed(conf, pending, fifo, wake)
  if conf.concurrency > 0 and pending_count(pending, fifo) > 0 then
    signal(wake, 0)
  end
end
