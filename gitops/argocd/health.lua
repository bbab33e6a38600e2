-- Argo CD health check for sts.tableserver.dev/SimpleTableServer.
--
-- Healthy     the operator has seen the current spec (status.observedGeneration equals
--             metadata.generation) and the Ready condition is True.
-- Progressing the operator has not reported on the current spec yet, or Ready is Unknown or
--             absent, or Ready is False while the server starts (reason Starting, or the
--             Progressing condition True).
-- Degraded    the Degraded condition is True, or Ready is False for any other reason
--             (Unreachable, SourceMissing, ...).
--
-- Argo CD runs custom health scripts with only the base, table, package and a reduced os
-- library, so this script uses none of the string library.

local hs = {}

local function condition(conditionType)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == conditionType then
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

local generation = obj.metadata.generation
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
local degraded = condition("Degraded")
local progressing = condition("Progressing")

-- A condition written for an older generation says nothing about the current spec.
if ready ~= nil and generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition of generation " .. tostring(generation)
  return hs
end

if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(degraded, "Degraded")
  return hs
end

if ready == nil or ready.status == "Unknown" then
  hs.status = "Progressing"
  hs.message = describe(ready, "Waiting for the table server")
  return hs
end

if ready.status == "True" then
  hs.status = "Healthy"
  -- listCount and totalLines are omitted when zero.
  hs.message = "Serving " .. tostring(obj.status.listCount or 0) .. " lists, " ..
    tostring(obj.status.totalLines or 0) .. " lines"
  return hs
end

if ready.reason == "Starting" or (progressing ~= nil and progressing.status == "True") then
  hs.status = "Progressing"
  hs.message = describe(ready, describe(progressing, "Progressing"))
  return hs
end

hs.status = "Degraded"
hs.message = describe(ready, "Not ready")
return hs
