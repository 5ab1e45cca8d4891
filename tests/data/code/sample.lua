local M = {}

-- Adds two numbers.
function M.add(a, b)
  return a + b
end

--- A method on the object.
function M:describe()
  return "{" .. self.name .. "}"
end

local function helper(x)
  return x * 2
end

M.double = function(x)
  return x * 2
end

local greet = function(name)
  print("hi " .. name)
end

return M
