-- Outcome waits (docs/protocol.md "Outcome waits"): what a command that
-- decides or deletes a job publishes on the queue's outcome channel, only
-- for a job someone waits for.

-- Publishes `<id> <outcome>` on the queue's outcome channel (SPUBLISH)
-- when the job's `waited` field read '1'. `waited` is read only on a queue
-- whose meta mark `waited` is set (conf.waited): elsewhere it is nil and
-- nothing is published.
local function publish_outcome(waited, id, outcome)
  if waited == '1' then
    redis.call('SPUBLISH', base .. ':outcome', id .. ' ' .. outcome)
  end
end

-- A job's `fields` (a list, extended in place) in one HMGET, and its
-- `waited` after them on a queue whose meta mark `waited` is set (then at
-- #fields + 1): a queue nobody waits on reads no more of the job. On a
-- queue with the `flows` mark, `waited` (at the same place, whatever the
-- waited mark: a job has it only once the queue has the mark) and then
-- `dependents`, also by name (`.dependents`). `read` sends the HMGET:
-- redis.call unless given (redis.pcall answers a key of another type with
-- its error table).
local function job_fields_waited(conf, key, fields, read)
  read = read or redis.call
  if conf.waited or conf.flows then
    fields[#fields + 1] = 'waited'
  end
  if not conf.flows then
    return read('HMGET', key, unpack(fields))
  end
  fields[#fields + 1] = 'dependents'
  local f = read('HMGET', key, unpack(fields))
  f.dependents = f[#fields]
  return f
end

-- Publishes `<id> removed` for each of `ids`, unfinished jobs about to be
-- deleted, whose `waited` is 1; reads nothing unless `marked` (the queue's
-- meta mark `waited`). DRAIN and OBLITERATE delete a job key of another
-- type as they find it: such a key holds no `waited` (read by pcall, so it
-- refuses nothing after their first write).
local function publish_removed(marked, ids)
  if not marked then
    return
  end
  for _, id in ipairs(ids) do
    local waited = redis.pcall('HGET', job_key(id), 'waited')
    if type(waited) == 'string' then
      publish_outcome(waited, id, 'removed')
    end
  end
end

-- OUTCOME of each of `ids` (checked), in order: a finished job's outcome,
-- false for an absent one, `{state}` for an unfinished one, which gets
-- `waited` (when not 1) and the queue its mark (once, when not 1). Every
-- key is read before the first write, so a key of the wrong type refuses
-- the call with nothing written.
local function outcomes_of(meta, ids)
  local marked = redis.call('HGET', meta, 'waited')
  local read = {}
  for i, id in ipairs(ids) do
    read[i] = redis.call('HMGET', job_key(id), 'state', 'result', 'error', 'failures', 'waited')
  end
  local replies = {}
  for i, f in ipairs(read) do
    local state = f[1]
    if not state then
      replies[i] = false
    elseif state == 'completed' then
      replies[i] = {state, f[2] or ''}
    elseif state == 'dead' then
      replies[i] = {state, f[3] or '', tonumber(f[4]) or 0}
    elseif state == 'cancelled' then
      replies[i] = {state}
    else
      if f[5] ~= '1' then
        redis.call('HSET', job_key(ids[i]), 'waited', '1')
      end
      if marked ~= '1' then
        redis.call('HSET', meta, 'waited', '1')
        marked = '1'
      end
      replies[i] = {state}
    end
  end
  return replies
end
