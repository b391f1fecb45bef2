-- FLOW.DEPS: reads a job's dependencies, HSCAN's page of its deps hash:
-- each dependency's queue and id, and its edge's value (`wait`, or the
-- resolution text that resolved it).
-- KEYS[1] base
-- ARGV[1] id
-- ARGV[2..] options: CURSOR c (HSCAN's cursor, 0 first), COUNT n (its count hint, default 100)
-- Reply: [next_cursor, [queue, dependency, value, ...]] (next_cursor 0 at the end)
-- Errors: NOJOB, BADARG queue|id|cursor|count, SYNTAX, WRONGTYPE
-- Events: none

local function main()
  local id = id_arg(ARGV[1])
  local page = flow_jobs.edge_page(base .. ':deps:' .. id, 2, false)
  expect_type(job_key(id), 'hash')
  if redis.call('EXISTS', job_key(id)) == 0 then
    refuse('NOJOB')
  end
  return page()
end
