-- Run by tests/integration/test_editor_neovim.py in a headless Neovim: wait for the diagnostics, apply the
-- first code action (resolved when it comes without its edit), wait for the finding to go.
local out = {}
local function log(s) table.insert(out, s) end
local ok = vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 100)
log("diagnostics arrived: " .. tostring(ok))
for _, d in ipairs(vim.diagnostic.get(0)) do log(string.format("%s %d:%d %s", d.code, d.lnum, d.col, d.message:gsub("\n.*", ""))) end
local params = vim.lsp.util.make_range_params()
params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics() }
local d = vim.diagnostic.get(0)[1]
params.range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } }
local res = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 30000)
local client_id, r = next(res)
local client = vim.lsp.get_client_by_id(client_id)
for _, a in ipairs(r.result or {}) do log("action: " .. a.title .. " edit=" .. tostring(a.edit ~= nil)) end
local action = r.result[1]
if action.edit == nil then
  local rr = client.request_sync("codeAction/resolve", action, 30000, 0)
  action = rr.result
  log("resolved edit: " .. tostring(action.edit ~= nil))
end
vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
local cleared = vim.wait(30000, function() return #vim.diagnostic.get(0) == 0 end, 100)
log("diagnostics cleared after the fix: " .. tostring(cleared))
for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do log(string.format("%2d| %s", i, l)) end
vim.fn.writefile(out, "/tmp/nvimtest/result.txt")
vim.cmd("qa!")
