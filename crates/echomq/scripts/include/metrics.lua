-- Metrics (docs/protocol.md "Metrics"). A call tallies its jobs (counts
-- per outcome, samples per bin, sums), then writes each field once per
-- metrics key, in a fixed order: the outcomes, w0..w16, ws, r0..r16, rs.
local METRICS_OUTCOMES = {'completed', 'failed', 'dead', 'cancelled', 'stalled'}

local function tally_new()
  return {outcomes = {}, w = {}, r = {}, ws = 0, rs = 0, samples = 0, numbers = {}, bins = {}}
end

-- Counts one job with `outcome` (without a sample: a cancelled waiting job).
local function tally_outcome(t, outcome)
  t.outcomes[outcome] = (t.outcomes[outcome] or 0) + 1
end

-- The histogram bin of a sample of `ms`: how many bounds lie below it (a
-- search in steps of 8, 4, 2 and 1 over the 16 bounds, no division).
local function metrics_bin(ms)
  local b = METRICS_BOUNDS
  local i = 0
  if b[8] < ms then
    i = 8
  end
  if b[i + 4] < ms then
    i = i + 4
  end
  if b[i + 2] < ms then
    i = i + 2
  end
  if b[i + 1] < ms then
    i = i + 1
  end
  if i == #b - 1 and b[#b] < ms then
    i = #b
  end
  return i
end

-- The number of a stored timestamp's text (nil when absent or not a
-- number), and the bin of a sample, each worked out once per tally: the
-- jobs of a batch share their claim's clock, and often their enqueue's.
local function tally_number(t, text)
  if not text then
    return nil
  end
  local n = t.numbers[text]
  if n == nil then
    n = tonumber(text) or false
    t.numbers[text] = n
  end
  return n or nil
end

local function tally_bin(t, ms)
  local bin = t.bins[ms]
  if not bin then
    bin = metrics_bin(ms)
    t.bins[ms] = bin
  end
  return bin
end

-- Tallies `jobs` jobs (1 when absent) that leave active with `outcome`
-- at `now`, each claimed at `claimed_at`, ready since `ready_at` (its
-- run_at, else its created_at): a batch claimed together, and enqueued
-- together, is one call for all its jobs.
local function tally_finished(t, outcome, claimed_at, ready_at, now, jobs)
  jobs = jobs or 1
  local outcomes = t.outcomes
  outcomes[outcome] = (outcomes[outcome] or 0) + jobs
  local claimed = tally_number(t, claimed_at) or now
  local wait = claimed - (tally_number(t, ready_at) or claimed)
  if wait < 0 then
    wait = 0
  end
  local run = now - claimed
  if run < 0 then
    run = 0
  end
  local w, r = tally_bin(t, wait), tally_bin(t, run)
  local tw, tr = t.w, t.r
  tw[w] = (tw[w] or 0) + jobs
  tr[r] = (tr[r] or 0) + jobs
  t.ws = t.ws + wait * jobs
  t.rs = t.rs + run * jobs
  t.samples = t.samples + jobs
end

-- A histogram's field names, bin by bin, and its sum's (made once: the
-- library's top runs without the global functions, ipairs among them).
local function histogram_fields(h)
  local names = {sum = h .. 's'}
  for bin = 0, #METRICS_BOUNDS do
    names[bin] = h .. bin
  end
  return names
end
local METRICS_FIELDS = {w = histogram_fields('w'), r = histogram_fields('r')}

-- A tally's fields and sums, flat, in the fixed order (only what it
-- counted; the sums whenever it has a sample).
local function tally_fields(t)
  local out = {}
  for _, outcome in ipairs(METRICS_OUTCOMES) do
    if t.outcomes[outcome] then
      out[#out + 1] = outcome
      out[#out + 1] = t.outcomes[outcome]
    end
  end
  if t.samples > 0 then
    for _, h in ipairs({'w', 'r'}) do
      local names, counts = METRICS_FIELDS[h], t[h]
      for bin = 0, #METRICS_BOUNDS do
        if counts[bin] then
          out[#out + 1] = names[bin]
          out[#out + 1] = counts[bin]
        end
      end
      out[#out + 1] = names.sum
      out[#out + 1] = t[names.sum]
    end
  end
  return out
end

-- `<base>:metrics:<tail>`: `total`, or `<resolution>:<start>` of a window.
local function metrics_key(tail)
  return base .. ':metrics:' .. tail
end

-- The metrics keys a call at `now` writes (`total`, then the window of
-- each resolution kept, with its expiry); none when metrics are off.
local function metrics_keys(conf, now)
  local keys = {}
  if conf.metrics then
    keys[1] = {key = metrics_key('total')}
    for _, w in ipairs(conf.windows) do
      if w.keep > 0 then
        local start = now - now % w.ms
        keys[#keys + 1] = {key = metrics_key(w.name .. ':' .. int_str(start)),
          expire = int_str(start + w.keep * w.ms)}
      end
    end
  end
  return keys
end

-- Reads the metrics keys a call at `now` writes, before its first write
-- (which also refuses a key of the wrong type): the fields of `fields` (a
-- flat name/value list, tally_fields'), or every field (HGETALL) without
-- it. Each key with its stored values, and whether any was there.
local function read_metrics(conf, now, fields)
  local keys = metrics_keys(conf, now)
  local names = {}
  for i = 1, #(fields or {}), 2 do
    names[#names + 1] = fields[i]
  end
  for _, m in ipairs(keys) do
    m.values = {}
    if not fields then
      local flat = redis.call('HGETALL', m.key)
      for i = 1, #flat, 2 do
        m.values[flat[i]] = flat[i + 1]
      end
      m.existed = #flat > 0
    elseif #names > 0 then
      local stored = redis.call('HMGET', m.key, unpack(names))
      for i, name in ipairs(names) do
        m.values[name] = stored[i]
        m.existed = m.existed or stored[i] ~= false
      end
    end
  end
  return keys
end

-- Writes `fields` (tally_fields') into the keys read_metrics read: one
-- HSET of the new values per key (a stored value that is not a number
-- counts from 0), and a window's expiry when it has none (PEXPIREAT NX).
local function record_metrics(keys, fields)
  if #fields == 0 then
    return
  end
  for _, m in ipairs(keys) do
    local args = {'HSET', m.key}
    for i = 1, #fields, 2 do
      args[#args + 1] = fields[i]
      args[#args + 1] = int_out((tonumber(m.values[fields[i]]) or 0) + fields[i + 1])
    end
    redis.call(unpack(args))
    -- A window that held a value has its expiry: the call that created
    -- it set one.
    if m.expire and not m.existed then
      redis.call('PEXPIREAT', m.key, m.expire, 'NX')
    end
  end
end

-- Every metrics key the settings keep at `now` (OBLITERATE deletes them):
-- the total and, per resolution, the `keep` windows up to now's.
local function metrics_windows_kept(conf, now)
  local keys = {metrics_key('total')}
  for _, w in ipairs(conf.windows) do
    local start = now - now % w.ms
    for i = 0, w.keep - 1 do
      keys[#keys + 1] = metrics_key(w.name .. ':' .. int_str(start - i * w.ms))
    end
  end
  return keys
end

-- Records one job of `job_fields(…, true)` that leaves active with
-- `outcome` at `now` into the keys read_metrics read (a call that finishes
-- one job).
local function record_finished(conf, metrics, outcome, job, now)
  if conf.metrics then
    local t = tally_new()
    tally_finished(t, outcome, job.claimed_at, job.ready_at, now)
    record_metrics(metrics, tally_fields(t))
  end
end
