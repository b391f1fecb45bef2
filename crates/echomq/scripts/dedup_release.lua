-- DEDUP.RELEASE: frees a held deduplication key, whatever its mode, so the
-- next enqueue with it creates a job; a key not held changes nothing, but
-- an expired throttle entry met here is removed (answering 0).
-- KEYS[1] base
-- KEYS[2] dedup
-- KEYS[3] dedup_owner
-- KEYS[4] meta
-- KEYS[5] events
-- ARGV[1] dedup key (the job-id rule, not '*')
-- Reply: 1 released, 0 not held
-- Errors: BADARG queue|dedup, SYNTAX, WRONGTYPE
-- Events: dedup_released (key; id: the job that held it)

local function main()
  local key = key_arg(ARGV[1], 'dedup')
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end
  local conf = settings(meta_key)
  local k = {dedup = dedup_key, dedup_owner = dedup_owner_key}
  local holder, expired = dedup_holder(k, key, now_ms())
  if not holder then
    if expired then
      -- An expired throttle entry met here goes too; it was not held.
      redis.call('ZREM', k.dedup, key)
      redis.call('HDEL', k.dedup_owner, key)
    end
    return 0
  end
  expect_type(events_key, 'stream')
  redis.call('ZREM', k.dedup, key)
  redis.call('HDEL', k.dedup_owner, key)
  emit(events_key, conf.events_max, 'dedup_released', 'id', holder, 'key', key)
  return 1
end
