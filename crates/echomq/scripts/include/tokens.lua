-- Fencing: a claim's token, and the check every verb of the worker in
-- hand makes.

-- A claim's token (docs/protocol.md, Fencing): its clock × TOKENS_PER_MS
-- plus its count mod TOKENS_PER_MS, so a claim a failover lost shares no
-- token with the promoted server's next. From the job's `claims` and
-- `claimed_at` (numbers or their text); nil when either is absent.
local function job_token(claims, claimed_at)
  claims, claimed_at = tonumber(claims), tonumber(claimed_at)
  if claims and claimed_at then
    return claimed_at * TOKENS_PER_MS + claims % TOKENS_PER_MS
  end
end

-- The part of a token `claims` (as stored) gives: claims mod
-- TOKENS_PER_MS; nil when it is not a number.
local function count_part(claims)
  claims = tonumber(claims)
  return claims and claims % TOKENS_PER_MS
end

-- The fencing check of every verb of the worker in hand: the job must be
-- active and hold the caller's token. Returns the job key.
local function fenced(id, token)
  local key = job_key(id)
  local found = redis.call('HMGET', key, 'state', 'claims', 'claimed_at')
  if found[1] ~= 'active' or job_token(found[2], found[3]) ~= token then
    refuse('NOTACTIVE')
  end
  return key
end
