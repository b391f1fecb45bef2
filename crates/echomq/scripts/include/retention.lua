-- Retention: jobs deleted with their logs (in chunks, as a long list
-- needs), and a finished set trimmed to what the settings keep.

-- Runs redis.call(head..., args...) over a long flat argument list in
-- chunks of at most UNPACK_CHUNK arguments, so a large batch never overflows Lua's
-- unpack limit. `head` is the command, and its key when it takes one
-- (`{'DEL'}`, `{'ZADD', key}`); `width` keeps groups (score/member pairs)
-- together.
local function chunked(head, args, width)
  local step = UNPACK_CHUNK - (UNPACK_CHUNK % width)
  local command, key = head[1], head[2]
  for first = 1, #args, step do
    local last = math.min(first + step - 1, #args)
    if key then
      redis.call(command, key, unpack(args, first, last))
    else
      redis.call(command, unpack(args, first, last))
    end
  end
end

-- Deletes the hashes of the jobs `ids`, and their log lists unless
-- `logs` is false (a queue whose logs mark is 0 has none).
local function delete_jobs(ids, logs)
  local doomed = {}
  for _, id in ipairs(ids) do
    doomed[#doomed + 1] = job_key(id)
    if logs ~= false then
      doomed[#doomed + 1] = logs_key(id)
    end
  end
  chunked({'DEL'}, doomed, 1)
end

-- Trims a finished set (docs/protocol.md, "Retention by age"): deletes,
-- oldest first, the members scored <= now - `age` (ms; 0, no age rule),
-- then those beyond `keep`, at most `limit` in all (TRIM_PER_TRANSITION,
-- 100: amortised, never an unbounded batch), with their hashes and,
-- unless the queue's logs mark is 0 (`conf.logs` false), their logs, and
-- on a queue with flows their flow keys (outbox.forget). Both
-- rules take the lowest scores, so the doomed are the first ranks. A queue
-- without an age rule pays no more than the count rule did.
local function trim_finished(conf, set, keep, age, now, limit)
  local doomed = redis.call('ZCARD', set) - keep
  if age > 0 and age < now then
    doomed = math.max(doomed, redis.call('ZCOUNT', set, '-inf', int_str(now - age)))
  end
  if doomed <= 0 then
    return
  end
  doomed = math.min(doomed, limit or TRIM_PER_TRANSITION)
  local ids = redis.call('ZRANGE', set, 0, doomed - 1)
  outbox.forget(conf, ids)
  delete_jobs(ids, conf.logs)
  redis.call('ZREMRANGEBYRANK', set, 0, doomed - 1)
end
