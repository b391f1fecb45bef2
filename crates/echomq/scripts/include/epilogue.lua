
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
