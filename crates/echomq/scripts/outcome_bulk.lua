-- OUTCOME_BULK: many OUTCOMEs in one call (docs/protocol.md, "Outcome
-- waits"), each id as OUTCOME would treat it, in order: what a client
-- sends for the waits begun together, and for all of them each time its
-- subscription opens.
-- KEYS[1] base
-- KEYS[2] meta
-- ARGV: one per job: id
-- Reply: one OUTCOME reply per id, in order
-- Errors: BADARG queue|jobs|id, WRONGTYPE
-- Events: none

local function main()
  if #ARGV == 0 then
    refuse('BADARG jobs')
  end
  local ids = {}
  for i = 1, #ARGV do
    ids[i] = id_arg(ARGV[i])
  end
  return outcomes_of(meta_key, ids)
end
