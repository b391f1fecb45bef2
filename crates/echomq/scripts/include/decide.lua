-- Flows' decisions that no worker makes (docs/protocol.md, "Flows"): a
-- waiting job decided at once, by CANCEL or by a dependent's failure
-- policy in FLOW.RESOLVE.

-- A waiting job (pending, scheduled or blocked) already out of its set,
-- decided at once (CANCEL; a failure policy of FLOW.RESOLVE): to
-- `decision.to`, 'cancelled' or 'dead' (its error `decision.error`,
-- failures unchanged), with `decision.reason` when given; the event, the
-- outcome to a waiter (`job.waited`), its dedup key (`job.dedup`,
-- `job.dedup_mode`) released, its resolution (`decision.due`, outbox.due)
-- written, the finished set trimmed. `k` names dead or cancelled, events
-- and dedup_owner; the caller counts the metrics (no sample). Returns
-- whether it wrote a resolution. The module's twin is
-- Store::decide_waiting (store/flow_resolve.rs).
local function decide_waiting(k, conf, id, job, decision, now)
  local now_s, to = int_str(now), decision.to
  local fields, tail, outcome = {'state', to, 'finished_at', now_s}, nil, to
  if decision.reason then
    fields[5], fields[6] = 'reason', decision.reason
  end
  redis.call('ZADD', k[to], now_s, id)
  if to == 'dead' then
    fields[#fields + 1], fields[#fields + 2] = 'error', decision.error
    tail = outbox.dead_tail(job.failures, decision.error)
    outcome = 'dead ' .. int_str(tonumber(job.failures) or 0) .. ' ' .. decision.error
    redis.call('HSET', job_key(id), unpack(fields))
    emit(k.events, conf.events_max, 'dead', 'id', id, 'error', decision.error)
  else
    redis.call('HSET', job_key(id), unpack(fields))
    emit(k.events, conf.events_max, 'cancelled', 'id', id)
  end
  publish_outcome(job.waited, id, outcome)
  release_dedup(k, id, job.dedup, job.dedup_mode)
  local relay = outbox.write(conf, id, decision.due, to, tail, now_s)
  trim_finished(conf, k[to], conf['keep_' .. to], conf['keep_' .. to .. '_for'], now)
  return relay
end
