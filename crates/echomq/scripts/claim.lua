-- CLAIM: promotes due scheduled jobs (at most 1000), then, unless paused,
-- pops up to COUNT pending jobs (lowest score first) -> active under a lease,
-- within flow control: nothing while the queue is held (limit_hold), at most
-- what the rate limit's window has left (counted in limit_window and
-- limit_used), at most the room under the cap on active jobs (concurrency).
-- KEYS[1] base
-- KEYS[2] seq
-- KEYS[3] schedule
-- KEYS[4] pending
-- KEYS[5] active
-- KEYS[6] meta
-- KEYS[7] events
-- KEYS[8] signal
-- KEYS[9] dedup_owner
-- KEYS[10] groups
-- KEYS[11] groups_wait
-- KEYS[12] group_index
-- KEYS[13] fifo
-- KEYS[14] cancelled
-- KEYS[15] deadlines
-- KEYS[16] resolutions
-- ARGV[1] worker name
-- ARGV[2] lease_ms (>= 1)
-- ARGV[3..] options: COUNT n (>= 1, default 1)
-- Reply: array of [id, token, payload, failures, max_attempts], and the
--        job's traceparent sixth when it has one (read only once the
--        queue is traced: docs/protocol.md, "Traces"); empty when
--        nothing is pending or the queue is paused; then, only when flow
--        control withheld pending jobs, wait_ms: > 0 until the window
--        reopens or the hold ends, 0 while the cap is full. A claimed job in
--        debounce mode frees its dedup key (the next enqueue with it makes a
--        new job).
-- Errors: BADARG queue|worker|lease_ms|count, SYNTAX, WRONGTYPE
-- On a queue with groups, the jobs are taken round robin across the ready
-- lanes (docs/protocol.md, "Groups"); the jobs it promotes are claimable
-- from the next claim on.
-- On a timed queue a job past its start_by is not handed out but expired
-- (-> cancelled, reason expired), and the claim fills its count from the
-- jobs behind it (docs/protocol.md, "Time limits, start-by deadlines, LIFO
-- and retention by age").
-- Events: promoted (per promoted job), expired (per expired job:
--   start_by), claimed (per job: token, worker)
-- Outcome: `<id> cancelled` for each expired job someone waits for

local function main()
  local worker = text_arg(ARGV[1], 'worker')
  local lease = int_arg(ARGV[2], 'lease_ms', 1)
  local opts = options(3, {COUNT = function(v) return int_arg(v, 'count', 1) end})
  local k = {seq = seq_key, schedule = schedule_key, pending = pending_key, active = active_key,
    meta = meta_key, events = events_key, signal = signal_key, dedup_owner = dedup_owner_key,
    groups = groups_key, groups_wait = groups_wait_key, group_index = group_index_key,
    fifo = fifo_key, cancelled = cancelled_key, deadlines = deadlines_key}
  local conf = settings(k.meta, true)
  outbox.open(conf, resolutions_key)
  return claim_checked(k, conf, worker, lease, opts.COUNT or 1, now_ms())
end
