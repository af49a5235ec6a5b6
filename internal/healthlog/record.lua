-- Records health transitions. KEYS[1]: the state hash (field -> state
-- JSON); KEYS[2]: the transition list, newest first. ARGV: now, the
-- list's limit, the keys' TTL in seconds, and the JSON array of entries
-- [field, health, message, resource key JSON]. Returns the number of
-- transitions recorded.
local now, limit, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local entries = cjson.decode(ARGV[4])
local seen, n = {}, 0
for _, e in ipairs(entries) do
  local field, health, msg, res = e[1], e[2], e[3], e[4]
  seen[field] = true
  local old = redis.call('HGET', KEYS[1], field)
  local from, since = '', now
  if old then
    local o = cjson.decode(old)
    from, since = o.health, o.lastTransitionTime
  end
  if from ~= health then
    since = now
    local t = '{"time":' .. cjson.encode(now)
    if res ~= '' then t = t .. ',"resource":' .. res end
    if from ~= '' then t = t .. ',"from":' .. cjson.encode(from) end
    t = t .. ',"to":' .. cjson.encode(health)
    if msg ~= '' then t = t .. ',"message":' .. cjson.encode(msg) end
    -- One record's changes share a time: past the limit they would be
    -- trimmed at once, so they are not pushed.
    if n < limit then redis.call('LPUSH', KEYS[2], t .. '}') end
    n = n + 1
  end
  local st = '{"health":' .. cjson.encode(health) .. ',"lastTransitionTime":' .. cjson.encode(since)
  if msg ~= '' then st = st .. ',"message":' .. cjson.encode(msg) end
  redis.call('HSET', KEYS[1], field, st .. '}')
end
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if not seen[field] then redis.call('HDEL', KEYS[1], field) end
end
if n > 0 then redis.call('LTRIM', KEYS[2], 0, limit - 1) end
redis.call('EXPIRE', KEYS[1], ttl)
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('EXPIRE', KEYS[2], ttl) end
return n
