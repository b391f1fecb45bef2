
-- The base key is `<prefix>:{<queue>}`, prefix and queue each 1-MAX_QUEUE_NAME bytes
-- of [A-Za-z0-9_.:-] (the queue-name rule). Any other is refused before
-- main checks an argument or reads a key: one match per run.
local _, _, base_prefix, base_queue =
  string.find(KEYS[1] or '', '^([A-Za-z0-9_%.:%-]+):{([A-Za-z0-9_%.:%-]+)}$')
if not base_queue or #base_prefix > MAX_QUEUE_NAME or #base_queue > MAX_QUEUE_NAME then
  return {err = 'BADARG queue'}
end

-- Runs main(); a refusal raised anywhere (and any error of a redis.call,
-- which pcall hands back as its message string) returns as an error reply
-- whose first word is its code. Anything else is a bug: reported as ERR.
local ok, reply = pcall(main)
if ok then
  return reply
end
if type(reply) == 'table' and reply.err then
  return reply
end
reply = tostring(reply)
if not string.find(reply, '^[A-Z][A-Z_]*$') and not string.find(reply, '^[A-Z][A-Z_]* ') then
  reply = 'ERR ' .. reply
end
return {err = reply}
