-- Flows' outbox (docs/protocol.md, "Deciding a job that has dependents"):
-- the one place a command that decides or deletes a job writes its
-- resolution for the dependents not told yet, and the flow keys that go
-- with a deleted job. Nothing here runs on a queue without the `flows`
-- mark: its commands read no `dependents` field and touch no flow key.
-- One table, `outbox`, one block (no blank line: the script book keeps a
-- block whole): the library's top level is at its locals' headroom.
local outbox = {}
function outbox.deps_key(id)
  return base .. ':deps:' .. id
end
function outbox.dependents_key(id)
  return base .. ':dependents:' .. id
end
function outbox.resolution_key(id)
  return base .. ':resolution:' .. id
end
-- On a queue with the flows mark, the outbox a deciding command writes
-- (`resolutions`, from its KEYS) kept in conf.outbox, its type checked
-- before the first write; nothing on a queue without flows.
function outbox.open(conf, key)
  if conf.flows then
    expect_type(key, 'zset')
    conf.outbox = key
  end
end
-- Whether `key` is absent or of type `want`: refused WRONGTYPE otherwise,
-- unless `lenient` (a check after the command's first write), which
-- answers false instead.
function outbox.typed_as(key, want, lenient)
  if not lenient then
    expect_type(key, want)
    return true
  end
  local found = redis.call('TYPE', key)['ok']
  return found == 'none' or found == want
end
-- What deciding or deleting job `id`, whose `dependents` field read
-- `dependents`, must write, read before the command's first write (with
-- `lenient`, after it: a key of another type then writes nothing): nil
-- unless the queue has flows, the job has dependents not told yet (the
-- `0` fields of `dependents:<id>`) and is not in `resolutions` (a
-- resolution waiting keeps its text); else its `left`, `ref` (`-` when
-- none), `flow` (empty when none) and `fields` (the dependents hash, field
-- by field). `known`, when given, holds the job's ref and flow fields as
-- read by the caller ({ref, flow}, nil for an absent one).
function outbox.due(conf, id, dependents, lenient, known)
  if not conf.outbox or (tonumber(dependents) or 0) < 1 then
    return nil
  end
  if redis.call('ZSCORE', conf.outbox, id) then
    return nil
  end
  if not outbox.typed_as(outbox.resolution_key(id), 'hash', lenient) then
    return nil
  end
  -- The read checks the dependents hash's type.
  local fields = redis.pcall('HGETALL', outbox.dependents_key(id))
  if fields.err then
    outbox.typed_as(outbox.dependents_key(id), 'hash', lenient)
    return nil
  end
  local left = 0
  for i = 2, #fields, 2 do
    if fields[i] == '0' then
      left = left + 1
    end
  end
  if left == 0 then
    return nil
  end
  local f = known or redis.call('HMGET', job_prefix .. id, 'ref', 'flow')
  return {left = left, ref = f[1] or '-', flow = f[2] or '', fields = fields}
end
-- The text of resolution `due` (outbox.due): the outcome `word`, the
-- ref, then `tail` unless nil.
function outbox.text(due, word, tail)
  if tail then
    return word .. ' ' .. due.ref .. ' ' .. tail
  end
  return word .. ' ' .. due.ref
end
-- Writes the resolution `due` (outbox.due) of job `id`: its text, the
-- outcome `word`, the ref, then `tail` unless nil, into
-- `resolution:<id>`, and the id into the outbox scored `now_s`. Returns
-- true when it wrote (the caller answers `relay_<word>`), false without a
-- due or with none of its dependents left to tell (COMPLETE told its own
-- queue's).
function outbox.write(conf, id, due, word, tail, now_s)
  if not due or due.left < 1 then
    return false
  end
  redis.call('HSET', outbox.resolution_key(id), 'text', outbox.text(due, word, tail), 'flow', due.flow,
    'left', due.left)
  redis.call('ZADD', conf.outbox, now_s, id)
  return true
end
-- What follows the ref in a `completed` text: the result's size, then the
-- result itself when at most FLOW_RESULT_MAX bytes (empty otherwise; an
-- empty result ends the text in the space).
function outbox.completed_tail(result)
  result = result or ''
  if #result > FLOW_RESULT_MAX then
    return int_str(#result) .. ' '
  end
  return int_str(#result) .. ' ' .. result
end
-- What follows the ref in a `dead` text: the failures, then the first
-- FLOW_ERROR_MAX bytes of the error.
function outbox.dead_tail(failures, message)
  return int_str(tonumber(failures) or 0) .. ' ' .. string.sub(message or '', 1, FLOW_ERROR_MAX)
end
-- Job `id`'s resolution with `left` of its dependents still to tell
-- (FLOW.ACK, FLOW.SETTLE): `left` written (with FLOW.SETTLE's `cursor`
-- when given), or at 0 the resolution and its member of `outbox_key`
-- deleted, and dependents:<id> with them when the job hash is gone or
-- holds no `dependents` (a new job took the id).
function outbox.acknowledged(outbox_key, id, left, cursor)
  local resolution = outbox.resolution_key(id)
  if left > 0 then
    if cursor then
      redis.call('HSET', resolution, 'left', int_str(left), 'cursor', cursor)
    else
      redis.call('HSET', resolution, 'left', int_str(left))
    end
    return
  end
  redis.call('DEL', resolution)
  redis.call('ZREM', outbox_key, id)
  if (tonumber(redis.call('HGET', job_prefix .. id, 'dependents')) or 0) < 1 then
    redis.call('DEL', outbox.dependents_key(id))
  end
end
-- The flow keys of jobs `ids` about to be deleted (retention, REMOVE,
-- DRAIN, OBLITERATE), on a queue with flows, after any resolution was
-- written: each one's `deps:<id>`, and its `dependents:<id>` unless it is
-- in `resolutions` (the hand-off outlives the job). A key of another type
-- is deleted as found, as the job's own.
function outbox.forget(conf, ids)
  if not conf.outbox then
    return
  end
  local doomed = {}
  for _, id in ipairs(ids) do
    doomed[#doomed + 1] = outbox.deps_key(id)
    if not redis.call('ZSCORE', conf.outbox, id) then
      doomed[#doomed + 1] = outbox.dependents_key(id)
    end
  end
  for first = 1, #doomed, UNPACK_CHUNK do
    redis.call('DEL', unpack(doomed, first, math.min(first + UNPACK_CHUNK - 1, #doomed)))
  end
end
-- The resolution `removed` of each of `ids`, undecided jobs about to be
-- deleted (DRAIN, OBLITERATE), then their flow keys. A job key of another
-- type holds no `dependents` (read by pcall, and the rest leniently: it
-- refuses nothing after the command's first write).
function outbox.removed(conf, ids, now_s)
  if not conf.outbox then
    return
  end
  for _, id in ipairs(ids) do
    local dependents = redis.pcall('HGET', job_prefix .. id, 'dependents')
    if type(dependents) == 'string' then
      outbox.write(conf, id, outbox.due(conf, id, dependents, true), 'removed', nil, now_s)
    end
  end
  outbox.forget(conf, ids)
end
