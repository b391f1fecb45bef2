-- OUTCOME: reads a job's outcome (docs/protocol.md, "Outcome waits"). A
-- finished or absent job writes nothing; an unfinished one gets its
-- `waited` field and the queue its `waited` mark, each only when not 1.
-- KEYS[1] base
-- KEYS[2] meta
-- ARGV[1] id
-- Reply: [completed, result] (result '' when none), [dead, error, failures],
--   [cancelled]; [state] when unfinished; nil when absent
-- Errors: BADARG queue|id, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local id = id_arg(ARGV[1])
  if #ARGV > 1 then
    refuse('SYNTAX unknown option ' .. ARGV[2])
  end
  return outcomes_of(meta_key, {id})[1]
end
