-- A claim on a queue with groups: the round robin over the ready lanes
-- (and the waiting groups whose window reopened), and the lanes it served
-- put back where they now belong.

-- The waiting groups whose window reopened by `now` (at most
-- PROMOTE_PER_CLAIM), each one's state read; none unless a group ever had
-- a cap or a limit.
local function reopened_groups(k, conf, now)
  if not conf.group_flow then
    return {}
  end
  local reopened = redis.call('ZRANGE', k.groups_wait, '-inf', int_str(now), 'BYSCORE', 'LIMIT', 0,
    PROMOTE_PER_CLAIM)
  for _, group in ipairs(reopened) do
    group_state(k, group)
  end
  return reopened
end

-- The round robin of a claim on a queue with groups, computed before any
-- write: the first `take` ready lanes (then the waiting groups whose window
-- reopened and that are ready now), each giving its head in turn while it
-- has jobs and room. Returns the picks in order (their ids, and each one's
-- lane at the same index), each
-- served lane's count and what becomes of it, the lanes in the line's
-- final order, the waiting groups to put back, and the heads passed over
-- (ids, and their lanes): with `past` (a function of an id, on a timed
-- queue), a head past its start_by is passed over for the lane's next,
-- counting in no room, at most PROMOTE_PER_CLAIM of them (the round robin
-- stops at the next).
local function round_robin(k, conf, take, now, past)
  -- The heads of a lane not read yet (never written to).
  local EMPTY = {}
  local line, states = {}, {}
  for _, lane in ipairs(redis.call('ZRANGE', k.groups, 0, take - 1)) do
    line[#line + 1] = lane
  end
  local reopened = reopened_groups(k, conf, now)
  for _, group in ipairs(reopened) do
    local st = group_state(k, group)
    if group_place(st, now, redis.call('EXISTS', lane_key(group)) == 1) == 'ready' then
      line[#line + 1] = group
    end
  end
  -- Each lane's heads, fetched as the round robin reaches them.
  local lanes = {}
  for _, lane in ipairs(line) do
    local room = take
    -- A group's cap and window matter only once a group ever had one.
    if lane ~= UNGROUPED and conf.group_flow then
      states[lane] = group_state(k, lane)
      local st = states[lane]
      if st.concurrency > 0 then
        room = math.min(room, math.max(st.concurrency - st.active, 0))
      end
      local window, used = rate_window(st, now)
      if window then
        room = math.min(room, math.max(st.limit_max - used, 0))
        st.window, st.used = window, used
      end
    end
    lanes[lane] = {room = room, taken = 0, at = 0, heads = EMPTY}
  end
  -- The i-th head of a lane: read two at first (one to take, one to know
  -- whether more are left), then twice as many as read so far, never more
  -- than the lane may give plus one.
  local function head(lane, i)
    local l = lanes[lane]
    while l.heads[i] == nil and not l.ended do
      local from = #l.heads
      local n = math.max(1, math.min(math.max(2, from), math.min(l.room, take) + 1 - from))
      local ids
      if lane == UNGROUPED then
        ids = redis.call('ZRANGE', k.pending, 0, '+inf', 'BYSCORE', 'LIMIT', from, n)
      else
        ids = redis.call('ZRANGE', lane_key(lane), from, from + n - 1)
      end
      if from == 0 then
        l.heads = ids
      else
        for _, id in ipairs(ids) do
          l.heads[#l.heads + 1] = id
        end
      end
      l.ended = #ids < n
    end
    return l.heads[i]
  end
  local picks, picked_from, queue, first = {}, {}, {}, 1
  local passed, passed_from = {}, {}
  for i, lane in ipairs(line) do
    queue[i] = lane
  end
  while #picks < take and first <= #queue do
    local lane = queue[first]
    first = first + 1
    local l = lanes[lane]
    l.reached = true
    local id = head(lane, l.at + 1)
    while id and l.taken < l.room and past and past(id) do
      if #passed == PROMOTE_PER_CLAIM then
        -- As many passed over as a claim expires: no more picks.
        id, take = nil, #picks
        break
      end
      passed[#passed + 1], passed_from[#passed + 1] = id, lane
      l.at = l.at + 1
      id = head(lane, l.at + 1)
    end
    if id and l.taken < l.room then
      l.taken, l.at = l.taken + 1, l.at + 1
      picks[#picks + 1] = id
      picked_from[#picks] = lane
      if l.taken < l.room and head(lane, l.at + 1) then
        queue[#queue + 1] = lane
      end
    end
  end
  -- The line's final order: lanes not reached keep their turn, the served
  -- ones still in the line go to the back in order.
  local again = {}
  for i = first, #queue do
    local lane = queue[i]
    if lanes[lane].taken > 0 then
      again[#again + 1] = lane
    end
  end
  return picks, picked_from, lanes, states, again, reopened, line, passed, passed_from
end

-- Puts the lanes a claim served where they now belong, in one write per
-- set: back of the ready set (`again`, in order, then the other lanes it
-- reached that are still ready, in the line's order), the wait set, or out.
local function settle_lanes(k, lanes, states, again, line, now)
  -- A lane without a read state is one with neither cap nor limit (and
  -- not paused: a paused group is in no line).
  local UNLIMITED = {active = 0, paused = false, concurrency = 0, limit_max = 0, limit_per = 0}
  local back = {}
  for _, lane in ipairs(again) do
    back[lane] = true
  end
  local turn = next_turn(k)
  local ready, waiting, gone = {}, {}, {}
  for _, lane in ipairs(again) do
    ready[#ready + 1] = int_str(turn)
    ready[#ready + 1] = lane
    turn = turn + 1
  end
  for _, lane in ipairs(line) do
    if lanes[lane].reached and not back[lane] then
      local has_jobs
      if lane == UNGROUPED then
        has_jobs = #redis.call('ZRANGE', k.pending, 0, '+inf', 'BYSCORE', 'LIMIT', 0, 1) > 0
        if has_jobs then
          ready[#ready + 1] = int_str(turn)
          ready[#ready + 1] = lane
          turn = turn + 1
        else
          gone[#gone + 1] = lane
        end
      else
        has_jobs = redis.call('EXISTS', lane_key(lane)) == 1
        if not has_jobs then
          -- A group whose last pending job the claim took may have no key left.
          index_group(k, lane)
        end
        local where, reopen = group_place(states[lane] or UNLIMITED, now, has_jobs)
        if where == 'ready' then
          ready[#ready + 1] = int_str(turn)
          ready[#ready + 1] = lane
          turn = turn + 1
        else
          gone[#gone + 1] = lane
          if where == 'wait' then
            waiting[#waiting + 1] = int_str(reopen)
            waiting[#waiting + 1] = lane
          end
        end
      end
    end
  end
  if #gone > 0 then
    redis.call('ZREM', k.groups, unpack(gone))
  end
  if #ready > 0 then
    redis.call('ZADD', k.groups, unpack(ready))
  end
  if #waiting > 0 then
    redis.call('ZADD', k.groups_wait, unpack(waiting))
  end
end
