-- LIFO jobs (docs/protocol.md, "Time limits, start-by deadlines, LIFO and
-- retention by age"): what an enqueue writes for one. A LIFO job enters
-- pending by push_lifo (promote.lua).

-- LIFO's helpers, one table (one local of the library's top level for
-- the concern; see scripts.rs): each function below is lifo_job.<name>.
local lifo_job = {}
-- Marks the queue `lifo` (once: HSETNX) for a job created with LIFO,
-- before the job enters any set.
function lifo_job.mark(k, job)
  if job.lifo then
    redis.call('HSETNX', k.meta, 'lifo', '1')
  end
end
-- Appends a LIFO job's `lifo` field to the list `f` of a hash's fields.
function lifo_job.fields(f, job)
  if job.lifo then
    f[#f + 1] = 'lifo'
    f[#f + 1] = '1'
  end
end
