-- Argo CD health check for sts.tableserver.dev/SimpleTableServer.
--
-- Progressing the operator has not reported on the current spec yet (status.observedGeneration
--             or a condition's observedGeneration is behind metadata.generation), Reconciling
--             is True (pods roll out or start, one of several replicas is not available), or
--             Ready is absent or Unknown.
-- Degraded    Stalled is True (a missing source, a spec the server cannot run, a name taken by
--             another object, a rollout past its deadline, a refused reload), or Ready is False
--             with reason Unreachable (the pod is available but the server does not answer) or
--             BackendUnavailable (the table servers cannot reach their Redis).
-- Healthy     Ready is True. A source that changed under datasetUpdatePolicy Keep
--             (DatasetsInSync False, reason SourceChanged) is drift, not a fault: still
--             Healthy, with the drift in the message.
--
-- Argo CD runs custom health scripts with only the base, table, package and a reduced os
-- library, so this script uses none of the string library.

local hs = {}

local generation = obj.metadata.generation

-- condition returns the condition of that type, or nil when there is none or it was written
-- for an older generation (it says nothing about the current spec then).
local function condition(conditionType)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == conditionType then
      if generation ~= nil and c.observedGeneration ~= nil and c.observedGeneration < generation then
        return nil
      end
      return c
    end
  end
  return nil
end

-- describe gives the most useful text a condition has: its message, else its reason, else
-- the fallback (also for an absent condition).
local function describe(c, fallback)
  if c == nil then
    return fallback
  end
  if c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c.reason ~= nil and c.reason ~= "" then
    return c.reason
  end
  return fallback
end

local function isTrue(c)
  return c ~= nil and c.status == "True"
end

local observed = nil
if obj.status ~= nil then
  observed = obj.status.observedGeneration
end
if generation ~= nil and (observed == nil or observed < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end

local ready = condition("Ready")
local stalled = condition("Stalled")
local reconciling = condition("Reconciling")

if isTrue(stalled) then
  hs.status = "Degraded"
  hs.message = describe(stalled, "Stalled")
  return hs
end

if ready ~= nil and ready.status == "False" and (ready.reason == "Unreachable" or ready.reason == "BackendUnavailable") then
  hs.status = "Degraded"
  hs.message = describe(ready, ready.reason)
  return hs
end

if isTrue(reconciling) then
  hs.status = "Progressing"
  hs.message = describe(reconciling, "Reconciling")
  return hs
end

if isTrue(ready) then
  hs.status = "Healthy"
  -- listCount and totalLines are omitted when zero.
  hs.message = "Serving " .. tostring(obj.status.listCount or 0) .. " lists, " ..
    tostring(obj.status.totalLines or 0) .. " lines"
  local inSync = condition("DatasetsInSync")
  if inSync ~= nil and inSync.status == "False" then
    hs.message = hs.message .. "; " .. describe(inSync, "DatasetsInSync is False")
  end
  return hs
end

hs.status = "Progressing"
if ready == nil and generation ~= nil then
  hs.message = "Waiting for the Ready condition of generation " .. tostring(generation)
else
  hs.message = describe(ready, "Waiting for the table server")
end
return hs
