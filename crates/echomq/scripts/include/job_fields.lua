-- A job's fields as a command reads them: what it asks for, and what the
-- queue ever used (dedup keys, groups, metrics' timing).

-- The fields a command reads of each job: `fields` (extended in place),
-- then, only on a queue that ever had them, `dedup` and `dedup_mode`, and
-- `group`, in the same HMGET (a queue without keys or groups reads no more
-- of its jobs than before); with their positions (`at.dedup`,
-- `at.dedup_mode`, `at.group`; nil when not read). With `timing`, on a
-- queue whose metrics are on, also `claimed_at`, `run_at` and `created_at`
-- (what a finishing job's metrics sample), and on a queue whose meta mark
-- `waited` is set, `waited` (`at.waited`: whether the job leaving active
-- publishes its outcome), and on a queue with the `flows` mark,
-- `dependents` (`at.dependents`: whether its decision writes a
-- resolution). Built once per command.
local function job_field_names(conf, fields, timing)
  local at = {}
  if timing and conf.metrics then
    -- A field the caller reads itself (the fence's claimed_at) is not
    -- read twice.
    for i, name in ipairs(fields) do
      at[name] = i
    end
    for _, name in ipairs({'claimed_at', 'run_at', 'created_at'}) do
      if not at[name] then
        fields[#fields + 1] = name
        at[name] = #fields
      end
    end
  end
  if conf.dedup then
    fields[#fields + 1] = 'dedup'
    at.dedup = #fields
    fields[#fields + 1] = 'dedup_mode'
    at.dedup_mode = #fields
  end
  if conf.groups then
    fields[#fields + 1] = 'group'
    at.group = #fields
  end
  if timing and conf.waited then
    fields[#fields + 1] = 'waited'
    at.waited = #fields
  end
  if timing and conf.flows then
    fields[#fields + 1] = 'dependents'
    at.dependents = #fields
  end
  return fields, at
end

-- One job's fields as job_field_names lists them, the extra ones by name
-- (`ready_at` is the run_at, else the created_at; `waited`).
local function job_fields(conf, key, fields, timing)
  local names, at = job_field_names(conf, fields, timing)
  local f = redis.call('HMGET', key, unpack(names))
  f.dedup, f.dedup_mode, f.group, f.waited = f[at.dedup], f[at.dedup_mode], f[at.group], f[at.waited]
  f.dependents = f[at.dependents]
  if at.claimed_at then
    f.claimed_at = f[at.claimed_at]
    f.ready_at = f[at.run_at] or f[at.created_at]
  end
  return f
end
