-- RETENTION: reads or sets how many finished jobs each set keeps
-- (keep_completed, keep_dead, keep_cancelled; 0 keeps none) and for how
-- long (keep_<set>_for, ms; 0 deletes the field: no age rule). Trims
-- nothing itself: each set's next trim applies the rules.
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- ARGV[1..] options: COMPLETED n, COMPLETED_FOR ms, DEAD n, DEAD_FOR ms,
--   CANCELLED n, CANCELLED_FOR ms (each >= 0); none reads only
-- Reply: flat [completed, n, completed_for, ms, dead, n, dead_for, ms,
--   cancelled, n, cancelled_for, ms] after the change
-- Errors: BADARG queue|completed|completed_for|dead|dead_for|cancelled|cancelled_for, SYNTAX, WRONGTYPE
-- Events: retention_set (completed, completed_for, dead, dead_for,
--   cancelled, cancelled_for: the six settings after the change)

-- Each option: its reply name, which is also its BADARG name, and the
-- meta field it writes.
local RETENTION = {
  {word = 'COMPLETED', name = 'completed', field = 'keep_completed'},
  {word = 'COMPLETED_FOR', name = 'completed_for', field = 'keep_completed_for'},
  {word = 'DEAD', name = 'dead', field = 'keep_dead'},
  {word = 'DEAD_FOR', name = 'dead_for', field = 'keep_dead_for'},
  {word = 'CANCELLED', name = 'cancelled', field = 'keep_cancelled'},
  {word = 'CANCELLED_FOR', name = 'cancelled_for', field = 'keep_cancelled_for'},
}

-- An entry without a job and with any number of fields (`fields`, the
-- flat [field, value, …] list after `event name`): RETENTION's six.
local function emit_fields(events, max, name, fields)
  if max <= 0 then
    return
  end
  flush_events()
  local all = {'event', name}
  for i = 1, #fields do
    all[#all + 1] = fields[i]
  end
  held_event = {events = events, max = max, jobs = 1, fields = all}
  flush_events()
end

local function main()
  local spec = {}
  for _, o in ipairs(RETENTION) do
    spec[o.word] = function(v) return int_arg(v, o.name) end
  end
  local opts = options(1, spec)

  local conf = settings(meta_key)
  local changed = false
  for _, o in ipairs(RETENTION) do
    if opts[o.word] then
      changed = true
    end
  end
  if changed then
    expect_type(events_key, 'stream')
    local set, unset = {}, {}
    for _, o in ipairs(RETENTION) do
      local n = opts[o.word]
      if n == 0 and string.find(o.word, '_FOR$') then
        unset[#unset + 1] = o.field
        conf[o.field] = 0
      elseif n then
        set[#set + 1] = o.field
        set[#set + 1] = int_str(n)
        conf[o.field] = n
      end
    end
    if #set > 0 then
      redis.call('HSET', meta_key, unpack(set))
    end
    if #unset > 0 then
      redis.call('HDEL', meta_key, unpack(unset))
    end
  end
  local reply = {}
  for _, o in ipairs(RETENTION) do
    reply[#reply + 1] = o.name
    reply[#reply + 1] = conf[o.field]
  end
  if changed then
    local fields = {}
    for i = 1, #reply, 2 do
      fields[i], fields[i + 1] = reply[i], int_str(reply[i + 1])
    end
    emit_fields(events_key, conf.events_max, 'retention_set', fields)
  end
  return reply
end
