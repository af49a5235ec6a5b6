-- Core group kinds live directly under the root, as in Argo CD.
if obj.data ~= nil and obj.data.broken == "true" then
  return {status = "Degraded", message = "marked broken"}
end
return {status = "Healthy"}
