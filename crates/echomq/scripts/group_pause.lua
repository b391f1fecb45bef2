-- GROUP.PAUSE: claims take none of its jobs until GROUP.RESUME; its active jobs run on
-- (docs/protocol.md, "Groups").
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- KEYS[4] signal
-- KEYS[5] groups
-- KEYS[6] groups_wait
-- KEYS[7] group_index
-- ARGV[1] group
-- Reply: OK
-- Errors: BADARG queue|group, SYNTAX, WRONGTYPE
-- Events: group_paused (group)

local function main()
  local k = {meta = meta_key, events = events_key, signal = signal_key, groups = groups_key,
    groups_wait = groups_wait_key, group_index = group_index_key}
  return set_group_paused(k, true, 'group_paused')
end
