-- FLOW.DEPENDENTS: reads a job's dependents, HSCAN's page of its
-- dependents hash: each dependent's queue and id, and whether it was told
-- (0 or 1). The hash outlives the job while its resolution waits in the
-- outbox, so a job whose hash is gone is read while its dependents are.
-- KEYS[1] base
-- ARGV[1] id
-- ARGV[2..] options: CURSOR c (HSCAN's cursor, 0 first), COUNT n (its count hint, default 100)
-- Reply: [next_cursor, [queue, dependent, told 0|1, ...]] (next_cursor 0 at the end)
-- Errors: NOJOB (neither the job nor its dependents exist), BADARG queue|id|cursor|count,
--   SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local id = id_arg(ARGV[1])
  local key = base .. ':dependents:' .. id
  local page = flow_jobs.edge_page(key, 2, true)
  expect_type(job_key(id), 'hash')
  if redis.call('EXISTS', job_key(id), key) == 0 then
    refuse('NOJOB')
  end
  return page()
end
