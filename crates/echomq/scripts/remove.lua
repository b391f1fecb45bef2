-- REMOVE: deletes a job and its logs, whatever its state; an active job only
-- with FORCE, which voids its lease and publishes its id on the cancel
-- channel so the holder stops; under a cap on active jobs, that wakes a
-- worker waiting for room when jobs are pending. A simple or debounce
-- dedup key the job holds is freed (a throttle key holds for its time).
-- KEYS[1] base
-- KEYS[2] schedule
-- KEYS[3] pending
-- KEYS[4] active
-- KEYS[5] completed
-- KEYS[6] dead
-- KEYS[7] cancelled
-- KEYS[8] meta
-- KEYS[9] events
-- KEYS[10] signal
-- KEYS[11] dedup_owner
-- KEYS[12] groups
-- KEYS[13] groups_wait
-- KEYS[14] group_index
-- KEYS[15] fifo
-- KEYS[16] blocked
-- KEYS[17] resolutions
-- ARGV[1] id
-- ARGV[2..] options: FORCE
-- Reply: 1 removed, 0 when absent
-- Errors: BADSTATE, BADARG queue|id, SYNTAX, WRONGTYPE
-- Events: removed
-- Outcome: `<id> removed` for an unfinished job someone waits for

local SETS = {scheduled = schedule_key, pending = pending_key, active = active_key,
  completed = completed_key, dead = dead_key, cancelled = cancelled_key, blocked = blocked_key}
-- The states whose deletion publishes an outcome (a finished job's was
-- published when it was decided).
local UNFINISHED = {scheduled = true, pending = true, active = true, blocked = true}

local function main()
  local id = id_arg(ARGV[1])
  local opts = options(2, {FORCE = 'flag'})

  local conf = settings(meta_key)
  local key = job_key(id)
  local job = job_fields_waited(conf, key, {'state', 'dedup', 'dedup_mode', 'group'})
  local state = job[1]
  if not state then
    return 0
  end
  if state == 'active' and not opts.FORCE then
    refuse('BADSTATE active')
  end
  expect_type(events_key, 'stream')
  expect_type(fifo_key, 'list')
  if state == 'active' then
    expect_freed_types(conf, pending_key, fifo_key, signal_key)
  end
  local dedup = {dedup_owner = dedup_owner_key}
  expect_owner_type(dedup, {job[2]})
  local k = {pending = pending_key, signal = signal_key, groups = groups_key,
    groups_wait = groups_wait_key, group_index = group_index_key, fifo = fifo_key}
  local group = conf.groups and (state == 'pending' or state == 'active') and job[4] or nil
  read_group(k, conf, group)
  outbox.open(conf, resolutions_key)
  local due = UNFINISHED[state] and outbox.due(conf, id, job.dependents)
  local set = SETS[state]
  if state == 'pending' then
    leave_pending(k, conf, id, group)
  elseif set then
    redis.call('ZREM', set, id)
  end
  redis.call('DEL', key, logs_key(id))
  if UNFINISHED[state] then
    publish_outcome(job[5], id, 'removed')
    outbox.write(conf, id, due, 'removed', nil, int_str(now_ms()))
  end
  outbox.forget(conf, {id})
  if state == 'active' then
    if group then
      leave_active(k, conf, group, now_ms())
    end
    redis.call('SPUBLISH', base .. ':cancel', id)
    freed(conf, pending_key, fifo_key, signal_key)
  end
  release_dedup(dedup, id, job[2], job[3])
  emit(events_key, conf.events_max, 'removed', 'id', id)
  return 1
end
