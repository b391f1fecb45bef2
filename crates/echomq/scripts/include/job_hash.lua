-- The hash an enqueue writes for a new job: its fields, none of the absent
-- ones (include/enqueue.lua creates the jobs).

-- `value` as text, formatted once a batch (`texts` keeps them):
-- priorities and attempts repeat across a batch.
local function batch_int_str(texts, value)
  local text = texts[value]
  if not text then
    text = int_str(value)
    texts[value] = text
  end
  return text
end

-- Writes `job`'s hash at `key` in `state`, created at `now_s`: its fields,
-- none of the absent ones (a default is read where a field is absent).
-- `plain`: the job has no option (a bulk form's), so none is looked for.
-- `waited`: its enqueue said WAITED (docs/protocol.md, "Outcome waits").
-- A job's `extra` fields (a flow job's: include/flow_jobs.lua) come last;
-- a blocked job keeps the run_at it was given.
local function write_job(key, job, state, now_s, texts, plain, waited)
  if state == 'pending' and job.priority == 0 and job.attempts == DEFAULT_MAX_ATTEMPTS
      and (plain or not (job['repeat'] or job.dedup or job.group or job.traceparent
        or job.time_limit or job.start_by or job.lifo or job.extra)) then
    -- The common job: three fields (four when waited for), no list built.
    if waited then
      redis.call('HSET', key, 'state', state, 'payload', job.payload, 'created_at', now_s,
        'waited', '1')
    else
      redis.call('HSET', key, 'state', state, 'payload', job.payload, 'created_at', now_s)
    end
    return
  end
  local f = {'state', state, 'payload', job.payload}
  if job.priority ~= 0 then
    f[#f + 1] = 'priority'
    f[#f + 1] = batch_int_str(texts, job.priority)
  end
  if job.attempts ~= DEFAULT_MAX_ATTEMPTS then
    f[#f + 1] = 'max_attempts'
    f[#f + 1] = batch_int_str(texts, job.attempts)
  end
  f[#f + 1] = 'created_at'
  f[#f + 1] = now_s
  if state ~= 'pending' and job.run_at then
    f[#f + 1] = 'run_at'
    f[#f + 1] = int_str(job.run_at)
  end
  if job['repeat'] then
    f[#f + 1] = 'repeat'
    f[#f + 1] = job['repeat']
  end
  if job.dedup then
    f[#f + 1] = 'dedup'
    f[#f + 1] = job.dedup
    -- Simple is the mode of a key without one.
    if job.dedup_mode ~= 'simple' then
      f[#f + 1] = 'dedup_mode'
      f[#f + 1] = job.dedup_mode
    end
  end
  if job.group then
    f[#f + 1] = 'group'
    f[#f + 1] = job.group
  end
  if job.traceparent then
    f[#f + 1] = 'traceparent'
    f[#f + 1] = job.traceparent
  end
  if job.time_limit then
    f[#f + 1] = 'time_limit'
    f[#f + 1] = int_str(job.time_limit)
  end
  if job.start_by then
    f[#f + 1] = 'start_by'
    f[#f + 1] = int_str(job.start_by)
  end
  lifo_job.fields(f, job)
  if waited then
    f[#f + 1] = 'waited'
    f[#f + 1] = '1'
  end
  if job.extra then
    for i = 1, #job.extra do
      f[#f + 1] = job.extra[i]
    end
  end
  redis.call('HSET', key, unpack(f))
end
