-- PROGRESS: the holder writes the job's progress (any text; the Rust
-- client writes JSON). Fenced by the token.
-- KEYS[1] base
-- KEYS[2] meta
-- KEYS[3] events
-- ARGV[1] id
-- ARGV[2] token
-- ARGV[3] value
-- Reply: OK
-- Errors: NOTACTIVE, BADARG queue|id|token|value, SYNTAX, WRONGTYPE
-- Events: progress (progress)

local function main()
  local id = id_arg(ARGV[1])
  local token = int_arg(ARGV[2], 'token')
  local value = text_arg(ARGV[3], 'value')
  if #ARGV > 3 then
    refuse('SYNTAX unknown option ' .. ARGV[4])
  end
  local conf = settings(meta_key)
  local key = fenced(id, token)
  expect_type(events_key, 'stream')
  redis.call('HSET', key, 'progress', value)
  emit(events_key, conf.events_max, 'progress', 'id', id, 'progress', value)
  return {ok = 'OK'}
end
