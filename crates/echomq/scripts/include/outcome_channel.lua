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
-- #fields): a queue nobody waits on reads no more of the job.
local function job_fields_waited(conf, key, fields)
  if conf.waited then
    fields[#fields + 1] = 'waited'
  end
  return redis.call('HMGET', key, unpack(fields))
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
