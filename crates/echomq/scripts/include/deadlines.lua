-- Time limits and start-by deadlines (docs/protocol.md, "Time limits,
-- start-by deadlines, LIFO and retention by age"): the options of ENQUEUE
-- and SCHEDULE, and the queue's `timed` mark.

-- The time options of ENQUEUE and SCHEDULE (`opts` as options() read
-- them, after dedup_options) on `job`: its time_limit and start_by. The
-- two SYNTAX refusals come first, then the checks against the clock,
-- which is read only when a deadline is given: START_BY must be later
-- than now and than the job's run-at, as must now + START_WITHIN
-- (capped at MAX_INT).
local function deadline_options(job, opts)
  if opts.START_BY and opts.START_WITHIN then
    refuse('SYNTAX START_BY and START_WITHIN exclude each other')
  end
  local within = opts.START_WITHIN
  if (opts.START_BY or within) and opts.DEBOUNCE then
    refuse('SYNTAX DEBOUNCE and a start-by deadline exclude each other')
  end
  job.time_limit = opts.TIME_LIMIT
  if not (opts.START_BY or within) then
    return
  end
  local now = now_ms()
  local run_at = job.run_at and job.run_at(now)
  if within then
    job.start_by = math.min(now + within, MAX_INT)
    if run_at and job.start_by <= run_at then
      refuse('BADARG start_within')
    end
  else
    job.start_by = opts.START_BY
    if job.start_by <= now or (run_at and job.start_by <= run_at) then
      refuse('BADARG start_by')
    end
  end
end

-- The options' words and their checks, for options() of ENQUEUE and
-- SCHEDULE: added to `spec`, which it returns.
local function with_deadline_words(spec)
  spec.TIME_LIMIT = function(v) return int_arg(v, 'time_limit', 1) end
  spec.START_BY = function(v) return int_arg(v, 'start_by', 1) end
  spec.START_WITHIN = function(v) return int_arg(v, 'start_within', 1) end
  return spec
end

-- Marks the queue `timed` (once) for a job created with a time limit or a
-- deadline, before the job enters any set.
local function mark_timed(k, conf, job)
  if (job.time_limit or job.start_by) and not conf.timed then
    redis.call('HSET', k.meta, 'timed', '1')
    conf.timed = true
  end
end

-- Adds each created job of `batch` that has a start_by to `deadlines`,
-- scored by it.
local function add_deadlines(k, batch)
  local scored = {}
  for i = 1, batch.n do
    local job = batch.jobs[i]
    if job.start_by then
      scored[#scored + 1] = int_str(job.start_by)
      scored[#scored + 1] = batch.ids[i]
    end
  end
  if #scored > 0 then
    redis.call('ZADD', k.deadlines, unpack(scored))
  end
end
