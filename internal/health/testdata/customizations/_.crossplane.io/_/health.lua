-- Any kind of any group ending in .crossplane.io: Ready and Synced must both be True.
local state = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    state[c.type] = c
  end
end
if state.Synced ~= nil and state.Synced.status == "False" then
  return {status = "Degraded", message = "not synced: " .. (state.Synced.message or "")}
end
if state.Ready ~= nil and state.Ready.status == "True" then
  return {status = "Healthy", message = obj.kind .. " is ready"}
end
return {status = "Progressing", message = obj.kind .. " is not ready yet"}
