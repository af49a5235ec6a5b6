-- Widget is Healthy once its phase is Ready and a Ready condition is True;
-- a Failed phase is Degraded.
local hs = {status = "Progressing", message = "waiting for the widget controller"}
if obj.status == nil then
  return hs
end
local ready = false
for _, c in ipairs(obj.status.conditions or {}) do
  if c.type == "Ready" and c.status == "True" then
    ready = true
  end
end
if obj.status.phase == "Failed" then
  hs.status = "Degraded"
  hs.message = string.format("widget %s failed: %s", obj.metadata.name, obj.status.reason or "no reason given")
elseif obj.status.phase == "Ready" and ready then
  hs.status = "Healthy"
  hs.message = string.format("%d of %d parts ready", obj.status.readyParts, #obj.spec.parts)
end
return hs
