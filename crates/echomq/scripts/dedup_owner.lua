-- DEDUP.OWNER: which job holds a deduplication key (held: it has an owner
-- entry and is not a throttle key whose time is up, server clock).
-- KEYS[1] base
-- KEYS[2] dedup
-- KEYS[3] dedup_owner
-- ARGV[1] dedup key (the job-id rule, not '*')
-- Reply: the holder's id; nil when the key is not held
-- Errors: BADARG queue|dedup, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local key = key_arg(ARGV[1], 'dedup')
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end
  return dedup_holder({dedup = dedup_key, dedup_owner = dedup_owner_key}, key, now_ms()) or false
end
