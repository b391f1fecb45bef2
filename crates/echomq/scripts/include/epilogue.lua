-- A fresh call (see begin_call).
begin_call(base_key)

-- The base key is `<prefix>:{<queue>}`, prefix and queue each 1-MAX_QUEUE_NAME bytes
-- of [A-Za-z0-9_.:-] (the queue-name rule). Any other is refused before
-- main checks an argument or reads a key: one match per run.
local _, _, base_prefix, base_queue =
  string.find(base_key or '', '^([A-Za-z0-9_%.:%-]+):{([A-Za-z0-9_%.:%-]+)}$')
if not base_queue or #base_prefix > MAX_QUEUE_NAME or #base_queue > MAX_QUEUE_NAME then
  return {err = 'BADARG queue'}
end

-- Runs main(); a refusal raised anywhere returns as an error reply
-- whose first word is its code (see guarded). The job event main held
-- back is written last (see emit).
local reply = guarded(main)
flush_events()
return reply
