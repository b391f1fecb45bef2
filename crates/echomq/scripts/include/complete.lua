-- COMPLETE's work once its arguments are checked, shared by complete.lua
-- and complete_bulk.lua.

-- Completes the i-th job of `ids` whose holder still holds it (active,
-- holding tokens[i]), storing results[i] unless it is false, and frees
-- its dedup key; `k` names the keys (pending, active, completed, events,
-- signal, dedup_owner, the group keys, and for own-queue dependents seq,
-- schedule, blocked and deadlines), and publishes its outcome when
-- someone waits for it. Parallel lists, not a table per
-- job: a batch's completions are the hot path. Returns one value per
-- job: true done, 'relay' done with a resolution written for dependents
-- in other queues (docs/protocol.md, "Deciding a job that has
-- dependents": those of its own queue took it in this call), false
-- NOTACTIVE.
local function complete_jobs(k, conf, ids, tokens, results, now_s)
  local outcome, done, scored, found, keys = {}, {}, {}, {}, {}
  -- Every job hash is read before the first write: a key of the wrong type
  -- refuses the whole call.
  -- A job's dedup fields only when a job of the queue ever took a key
  -- (conf.dedup): a queue without keys reads no more than before.
  local dedup = conf.dedup
  if conf.groups then
    expect_group_keys(k)
  end
  local names, at = job_field_names(conf, {'state', 'claims', 'claimed_at'}, true)
  if at.dependents then
    -- What a resolution names the job by (outbox.due), in the same read.
    names[#names + 1] = 'ref'
    names[#names + 1] = 'flow'
  end
  local now = tonumber(now_s)
  local tally = tally_new()
  local run, run_claimed, run_ready = 0, nil, nil
  local held, job_keys, splits, due = {}, {}, {}, {}
  for i = 1, #ids do
    local id = ids[i]
    local key = job_prefix .. id
    job_keys[i] = key
    local f = redis.call('HMGET', key, unpack(names))
    found[i] = f
    keys[i] = f[at.dedup]
    if conf.group_flow and f[at.group] and f[1] == 'active' then
      group_state(k, f[at.group])
    end
    -- job_token(f[2], f[3]) == tokens[i], the hot path's way: first the
    -- stored texts against the caller's token split once (a batch's
    -- tokens mostly repeat), by number only where a text differs.
    local token = tokens[i]
    local split = splits[token]
    if not split then
      local ms, count = math.floor(token / TOKENS_PER_MS), token % TOKENS_PER_MS
      split = {int_str(ms), int_str(count), ms, count}
      splits[token] = split
    end
    held[i] = f[1] == 'active'
      and (f[3] == split[1] or tonumber(f[3]) == split[3])
      and (f[2] == split[2] or count_part(f[2]) == split[4])
    if held[i] and at.dependents then
      due[i] = outbox.due(conf, id, f[at.dependents], false, {f[#names - 1], f[#names]})
    end
    if held[i] and conf.metrics then
      -- A run of jobs with the same clocks (claimed together, enqueued
      -- together) is tallied at once, when it ends.
      local claimed_at, ready_at = f[at.claimed_at], f[at.run_at] or f[at.created_at]
      if run > 0 and claimed_at == run_claimed and ready_at == run_ready then
        run = run + 1
      else
        if run > 0 then
          tally_finished(tally, 'completed', run_claimed, run_ready, now, run)
        end
        run, run_claimed, run_ready = 1, claimed_at, ready_at
      end
    end
  end
  if run > 0 then
    tally_finished(tally, 'completed', run_claimed, run_ready, now, run)
  end
  if dedup then
    expect_owner_type(k, keys)
  end
  local counted = tally_fields(tally)
  local metrics = read_metrics(conf, now, counted)
  for i = 1, #ids do
    local id = ids[i]
    local key = job_keys[i]
    if held[i] then
      local result = results[i]
      if result then
        redis.call('HSET', key, 'state', 'completed', 'finished_at', now_s, 'result', result)
      else
        redis.call('HSET', key, 'state', 'completed', 'finished_at', now_s)
      end
      if at.waited then
        publish_outcome(found[i][at.waited], id, 'completed ' .. (result or ''))
      end
      if dedup then
        release_dedup(k, id, found[i][at.dedup], found[i][at.dedup_mode])
      end
      if found[i][at.group] then
        leave_active(k, conf, found[i][at.group], tonumber(now_s))
      end
      done[#done + 1] = id
      scored[#scored + 1] = now_s
      scored[#scored + 1] = id
      outcome[i] = true
    else
      outcome[i] = false
    end
  end
  if #done > 0 then
    emit_jobs(k.events, conf.events_max, 'completed', done)
    chunked({'ZREM', k.active}, done, 1)
    chunked({'ZADD', k.completed}, scored, 2)
    -- Resolutions after the moves: the own queue's dependents told in this
    -- call, the rest through the outbox.
    local budget = {left = FLOW_INLINE_EDGES, took = 0}
    for i = 1, #ids do
      if held[i] and due[i] then
        local tail = outbox.completed_tail(results[i])
        own_edges.completed(k, conf, ids[i], due[i], outbox.text(due[i], 'completed', tail), budget)
        if outbox.write(conf, ids[i], due[i], 'completed', tail, now_s) then
          outcome[i] = 'relay'
        end
      end
    end
    own_edges.unblock_held(k, conf, now)
    trim_finished(conf, k.completed, conf.keep_completed, conf.keep_completed_for, now,
      TRIM_PER_TRANSITION * #done)
    freed(conf, k.pending, k.fifo, k.signal)
    record_metrics(metrics, counted)
  end
  return outcome
end
