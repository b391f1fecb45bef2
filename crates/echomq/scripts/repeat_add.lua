-- REPEAT.ADD: stores a repeat definition under its key, replacing the one
-- the key held, in one step: the key's occurrences on the schedule set are
-- deleted (as REMOVE would delete them) and, with FIRST, the definition's
-- first occurrence is scheduled (as SCHEDULE ... REPEAT key would).
-- KEYS[1] base
-- KEYS[2] repeat
-- KEYS[3] id
-- KEYS[4] seq
-- KEYS[5] pending
-- KEYS[6] schedule
-- KEYS[7] meta
-- KEYS[8] events
-- KEYS[9] signal
-- KEYS[10] dedup_owner
-- KEYS[11] groups
-- KEYS[12] groups_wait
-- KEYS[13] group_index
-- KEYS[14] fifo
-- ARGV[1] key (the repeat-key rule)
-- ARGV[2] definition (the host's text, stored as given)
-- ARGV[3] payload of the first occurrence
-- ARGV[4..] options: FIRST run_at (absolute unix ms), PRIORITY p, ATTEMPTS n
-- Reply: [replaced definition or nil, occurrences deleted]
-- Errors: BADARG queue|key|definition|payload|first|priority|attempts, SYNTAX, WRONGTYPE
-- Events: removed (each occurrence deleted); scheduled (run_at), or enqueued
--   when the first occurrence is due
-- Outcome: `<id> removed` for each occurrence deleted that someone waits for

-- The ids of `key`'s occurrences on the schedule set, `repeat:<key>:<digits>`
-- (the key's glob characters escaped: `a*` must not match `ab`'s).
local function scheduled_occurrences(schedule, key)
  local prefix = 'repeat:' .. key .. ':'
  local pattern = string.gsub(prefix, '([%*%?%[%]\\])', '\\%1') .. '*'
  local found, seen, cursor = {}, {}, '0'
  repeat
    local page = redis.call('ZSCAN', schedule, cursor, 'MATCH', pattern, 'COUNT', REPEAT_SCAN_COUNT)
    cursor = page[1]
    for i = 1, #page[2], 2 do
      local id = page[2][i]
      if not seen[id] and string.find(string.sub(id, #prefix + 1), '^%d+$') then
        seen[id] = true
        found[#found + 1] = id
      end
    end
  until cursor == '0'
  table.sort(found)
  return found
end

-- A repeat key: the job-id rule with at most MAX_REPEAT_KEY bytes, and no
-- ':' (an occurrence id `repeat:<key>:<run_at>` names one key).
local function repeat_key_arg(value)
  if value == nil or #value == 0 or #value > MAX_REPEAT_KEY
      or string.find(value, ID_REFUSED) or string.find(value, ':', 1, true) then
    refuse('BADARG key')
  end
  return value
end

local function main()
  local key = repeat_key_arg(ARGV[1])
  local definition = text_arg(ARGV[2], 'definition')
  local payload = text_arg(ARGV[3], 'payload')
  local opts = options(4, {
    FIRST = function(v) return int_arg(v, 'first') end,
    PRIORITY = function(v) return int_arg(v, 'priority', 0, MAX_PRIORITY) end,
    ATTEMPTS = function(v) return int_arg(v, 'attempts', 1) end,
  })

  local k = {id = id_key, seq = seq_key, pending = pending_key, schedule = schedule_key,
    meta = meta_key, events = events_key, signal = signal_key, dedup_owner = dedup_owner_key,
    groups = groups_key, groups_wait = groups_wait_key, group_index = group_index_key,
    fifo = fifo_key}
  local conf = enqueue_settings(k.meta)
  expect_type(repeat_key, 'hash')
  expect_type(k.schedule, 'zset')
  expect_type(k.events, 'stream')
  local doomed = scheduled_occurrences(k.schedule, key)
  local held = {}
  for i, id in ipairs(doomed) do
    held[i] = job_fields_waited(conf, job_key(id), {'dedup', 'dedup_mode'})
    if held[i][1] then
      expect_type(k.dedup_owner, 'hash')
    end
  end
  local first
  if opts.FIRST then
    first = {id = 'repeat:' .. key .. ':' .. int_str(opts.FIRST), payload = payload,
      run_at = function() return opts.FIRST end, priority = opts.PRIORITY or 0,
      attempts = opts.ATTEMPTS or DEFAULT_MAX_ATTEMPTS, ['repeat'] = key}
    -- What enqueue_checked checks, checked here before the first write.
    expect_type(job_key(first.id), 'hash')
    expect_type(k.id, 'string')
    expect_type(k.seq, 'string')
    expect_pending_types(k.pending, k.fifo)
    expect_type(k.signal, 'zset')
    if conf.groups then
      expect_group_keys(k)
    end
  end

  local replaced = redis.call('HGET', repeat_key, key)
  redis.call('HSET', repeat_key, key, definition)
  for i, id in ipairs(doomed) do
    redis.call('ZREM', k.schedule, id)
    redis.call('DEL', job_key(id), logs_key(id))
    publish_outcome(held[i][3], id, 'removed')
    release_dedup(k, id, held[i][1], held[i][2])
    emit(k.events, conf.events_max, 'removed', 'id', id)
  end
  if first then
    enqueue_checked(k, {first})
  end
  return {replaced, #doomed}
end
