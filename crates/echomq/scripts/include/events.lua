-- Events: the start of a call (which drops any held event), and the
-- lifecycle events it appends to the queue's stream, a batch's job events
-- held and written as one entry.

-- The call's newest job event, not yet written: the same event for the
-- next jobs joins its entry (`id` and the job's fields again, at most
-- EVENT_JOBS jobs), so a batch writes one entry, not one per job. Any
-- other event, and the end of the call (epilogue.lua), writes it.
local held_event = nil

-- Starts a call (the epilogue's first step): the base key `call_base`, and
-- what the helpers keep for one call (the key types checked, the held
-- event, the clock's reading) made fresh. A script's run starts clean
-- anyway; a function of wire 4's library keeps its helpers between calls,
-- and starts clean by this.
local function begin_call(call_base)
  base, typed, held_event = call_base, {}, nil
  now_ms(true)
  -- A call without a base key is refused right after (BADARG queue).
  job_prefix = (base or '') .. ':job:'
end

-- Writes the held entry: `MAXLEN ~ ceil(events_max / jobs)`, so the stream
-- keeps about events_max jobs' events however many an entry carries.
local function flush_events()
  local held = held_event
  if held then
    held_event = nil
    redis.call('XADD', held.events, 'MAXLEN', '~', math.ceil(held.max / held.jobs), '*',
      unpack(held.fields))
  end
end

-- Appends the job event `name` of each of `ids`, in order: as emit of
-- each job in turn, in one call for a batch (a batch's events are the hot
-- path; a job joining the held entry makes no table). A job's `id`, then
-- up to two more fields, each value one for every job or, given as a
-- table, the job's by its position in `ids`.
local function emit_jobs(events, max, name, ids, f2, v2, f3, v3)
  if max <= 0 then
    return
  end
  local each2, each3 = type(v2) == 'table', type(v3) == 'table'
  local held = held_event
  for j = 1, #ids do
    if not (held and held.fields[2] == name and held.jobs < EVENT_JOBS) then
      flush_events()
      held = {events = events, max = max, jobs = 0, fields = {'event', name}}
      held_event = held
    end
    local entry = held.fields
    local n = #entry
    entry[n + 1], entry[n + 2] = 'id', ids[j]
    if f2 then
      local a, b = v2, v3
      if each2 then
        a = v2[j]
      end
      if each3 then
        b = v3[j]
      end
      entry[n + 3], entry[n + 4] = f2, a
      if f3 then
        entry[n + 5], entry[n + 6] = f3, b
      end
    end
    held.jobs = held.jobs + 1
  end
end

-- Appends a lifecycle event: `name`, then its fields, up to three pairs
-- (`id` and the job's fields first for a job's event; the first absent
-- field ends them); events_max 0 turns them off. A job's event is held:
-- the same event for the next job joins its entry, and anything else, or
-- the end of the call, writes it (another event is written at once).
local function emit(events, max, name, f1, v1, f2, v2, f3, v3)
  if f1 == 'id' then
    emit_jobs(events, max, name, {v1}, f2, v2, f3, v3)
    return
  end
  if max <= 0 then
    return
  end
  flush_events()
  local fields = {'event', name}
  if f1 then
    fields[3], fields[4] = f1, v1
    if f2 then
      fields[5], fields[6] = f2, v2
      if f3 then
        fields[7], fields[8] = f3, v3
      end
    end
  end
  held_event = {events = events, max = max, jobs = 1, fields = fields}
  flush_events()
end
