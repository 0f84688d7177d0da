// Drives `cairn-mcp --http 127.0.0.1:0` (Streamable HTTP) with the official MCP TypeScript SDKs, as remote hosts
// would (traffic to 127.0.0.1 only):
// - the v1 SDK (@modelcontextprotocol/sdk, 2025-11-25: initialize, Mcp-Session-Id) and the v2 SDK pinned to
//   2026-07-28 (stateless; MCP-Protocol-Version, Mcp-Method and Mcp-Name headers) each run the whole `feature`
//   workflow and every artifact tool, on servers of their own;
// - 32 v2 clients at once store, fetch and search on one server: every write is there exactly once;
// - raw HTTP for what no SDK sends: a foreign Origin (403), an oversized body (413), malformed JSON, a wrong
//   Content-Type, missing and mismatched headers, an unknown session, GET and DELETE, a notification (202).
//
//   node client-http.mjs <path-to-cairn-mcp> <workspace-dir>
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';

import { commandLine, freshDir, modernBody as modern, modernHeaders as headers, modernMeta as meta, startHttpServer,
         stopServer, tally, toolCalls, writeTemplate } from './support.mjs';

const [server, workspaceArg] = commandLine('client-http.mjs', 'path-to-cairn-mcp', 'workspace-dir');
const root = freshDir(workspaceArg);
const templatePath = writeTemplate(root);

// Starts cairn-mcp --http on a free port with a workspace of its own.
async function startServer(name, extra = []) {
  const ws = path.join(root, name);
  fs.mkdirSync(ws);
  const srv = await startHttpServer(server, ['--workspace', ws, '--workflow', templatePath, '--tenant', 'acme',
                                             ...extra], { name: `cairn-mcp (${name})` });
  return { ...srv, ws };
}

// The whole workflow and every artifact tool through `client`.
async function everyTool(client, ws, label) {
  const { call, fails } = toolCalls(client, label);
  const { tools } = await client.listTools();
  assert.equal(tools.length, 12, label);
  for (const t of tools) assert.equal(t.outputSchema?.type, 'object', `${label} ${t.name}`);
  await fails('workflow_status', {}, /not started/);
  assert.equal((await call('workflow_start', { summary: 'Add CSV export' })).step, 'plan');
  fs.writeFileSync(path.join(ws, 'plan.md'), '# Plan\n');
  assert.deepEqual((await call('register_artefacts', { paths: ['plan.md'] })).registered, [path.join(ws, 'plan.md')]);
  assert.equal((await call('workflow_advance', { output: 'planned' })).step, 'define_tasks');
  await call('workflow_set_tasks', { loop_id: 'implement', tasks: [{ id: 'parse', title: 'Parser' },
                                                                   { id: 'write', title: 'Writer' }] });
  let s;
  for (const output of ['tasks set', 'parser coded', 'parser tested', 'writer coded', 'writer tested', 'review 1',
                        'review 2']) {
    s = await call('workflow_advance', { output });
  }
  assert.equal(s.status, 'complete', label);
  assert.equal((await call('workflow_context')).plan, 'planned');
  const stored = await call('artifact_store', { type: 'document', title: 'CSV plan', value: 'export csv' });
  await call('artifact_store', { id: stored.id, type: 'document', title: 'CSV plan v2', value: { csv: true } });
  assert.equal((await call('artifact_fetch', { id: stored.id })).version, 2);
  assert.equal((await call('artifact_fetch', { id: stored.id, format: 'a2a' })).artifactId, stored.id);
  assert.equal((await call('artifact_list', { type: 'document' })).artifacts.length, 1);
  assert.deepEqual((await call('artifact_versions', { id: stored.id })).versions, [1, 2]);
  assert.deepEqual((await call('search_artifacts', { query: 'csv', filter: { type: 'document' } })).hits
    .map((h) => h.id), [stored.id]);
  assert.equal((await call('artifact_delete', { id: stored.id })).versions_removed, 2);
  await fails('artifact_fetch', { id: stored.id }, /not found/);
  await fails('artifact_store', { type: 'document', title: 'x', value: 1, tenant_id: 'other' }, /tenant_id/);
}

// --- v1 SDK: 2025-11-25 with a session ----------------------------------------------------------------------------
const a = await startServer('v1');
const v1 = new ClientV1({ name: 'cairn-http-v1', version: '1.0.0' });
const t1 = new HttpV1(new URL(a.url));
await v1.connect(t1);
assert.equal(t1.protocolVersion, '2025-11-25');  // the SDK sends it as MCP-Protocol-Version
assert.match(t1.sessionId, /^[0-9a-f]{32}$/);
await everyTool(v1, a.ws, 'v1');
await t1.terminateSession();  // DELETE ends the session
await v1.close();
tally.checks++;

// --- v2 SDK pinned to 2026-07-28: stateless ----------------------------------------------------------------------
const b = await startServer('v2');
const v2 = new ClientV2({ name: 'cairn-http-v2', version: '1.0.0' },
                        { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await v2.connect(new HttpV2(new URL(b.url)));
assert.equal(v2.getProtocolEra(), 'modern');
assert.equal(v2.getNegotiatedProtocolVersion(), '2026-07-28');
await everyTool(v2, b.ws, 'v2');
await v2.close();
tally.checks++;

// --- 32 clients at once on one server -------------------------------------------------------------------------------
const c = await startServer('many');
const clients = await Promise.all(Array.from({ length: 32 }, async (_, i) => {
  const cl = new ClientV2({ name: `many-${i}`, version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await cl.connect(new HttpV2(new URL(c.url)));
  return cl;
}));
const perClient = 10;
await Promise.all(clients.map(async (cl, i) => {
  for (let k = 0; k < perClient; k++) {
    const args = { id: `c${i}-${k}`, type: 'data', title: `item ${i} ${k}`, value: { i, k } };
    const r = await cl.callTool({ name: 'artifact_store', arguments: args });
    assert.equal(r.isError, false, JSON.stringify(r.content));
    const f = await cl.callTool({ name: 'artifact_fetch', arguments: { id: `c${i}-${k}` } });
    assert.deepEqual(f.structuredContent.value, { i, k });
  }
}));
const listed = [];
let cursor;
do {
  const page = (await clients[0].callTool({ name: 'artifact_list', arguments: cursor ? { cursor, limit: 100 }
                                                                                   : { limit: 100 } }))
    .structuredContent;
  listed.push(...page.artifacts);
  cursor = page.next_cursor;
} while (cursor);
assert.equal(listed.length, 32 * perClient, 'every write is there');
assert.equal(new Set(listed.map((r) => r.id)).size, 32 * perClient, 'no write doubled');
assert.ok(listed.every((r) => r.version === 1), 'each stored once');
await Promise.all(clients.map((cl) => cl.close()));
tally.checks++;

// --- raw HTTP: hostile and malformed requests ----------------------------------------------------------------------
async function post(body, hdrs, expectStatus, code, pattern) {
  const r = await fetch(c.url, { method: 'POST', headers: hdrs, body });
  const text = await r.text();
  assert.equal(r.status, expectStatus, `${r.status} ${text}`);
  if (code !== undefined) {
    const j = JSON.parse(text);
    assert.equal(j.error?.code, code, text);
    if (pattern) assert.match(j.error.message, pattern);
  }
  tally.checks++;
  return text;
}
// DNS rebinding: a foreign Origin is refused; loopback origins pass.
await post(modern('server/discover'), headers({ 'Mcp-Method': 'server/discover', Origin: 'http://evil.example' }), 403,
           -32600, /origin 'http:\/\/evil.example' is not allowed/);
await post(modern('server/discover'), headers({ 'Mcp-Method': 'server/discover', Origin: 'http://localhost' }), 200);
// Size, syntax, type.
await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta,
                                                                                      pad: 'x'.repeat(17 << 20) } }),
           headers({ 'Mcp-Method': 'server/discover' }), 413, -32600, /longer than the limit of 16777216 bytes/);
await post('{"jsonrpc":"2.0","id":1,', headers(), 400, -32700, /invalid JSON/);
await post('['.repeat(1000) + ']'.repeat(1000), headers(), 400, -32600, /deeper than/);
await post(modern('server/discover'), { ...headers({ 'Mcp-Method': 'server/discover' }), 'Content-Type': 'text/plain' },
           415, -32600, /Content-Type must be application\/json/);
// 2026-07-28 headers: required, and equal to the body.
const noVersion = headers({ 'Mcp-Method': 'tools/list' });
delete noVersion['MCP-Protocol-Version'];
await post(modern('tools/list'), noVersion, 400, -32020, /MCP-Protocol-Version header is required/);
await post(modern('tools/list'), headers(), 400, -32020, /Mcp-Method header is required/);
await post(modern('tools/list'), headers({ 'Mcp-Method': 'tools/call' }), 400, -32020,
           /Mcp-Method header value 'tools\/call' does not match body value 'tools\/list'/);
await post(modern('tools/list'), headers({ 'Mcp-Method': 'tools/list', 'MCP-Protocol-Version': '2025-11-25' }), 400,
           -32020, /does not match body value '2026-07-28'/);
await post(modern('tools/call', { name: 'artifact_list' }), headers({ 'Mcp-Method': 'tools/call' }), 400, -32020,
           /Mcp-Name header is required/);
await post(modern('tools/call', { name: 'artifact_list' }), headers({ 'Mcp-Method': 'tools/call', 'Mcp-Name': 'x' }),
           400, -32020, /Mcp-Name header value 'x' does not match body value 'artifact_list'/);
const b64 = `=?base64?${Buffer.from('artifact_list').toString('base64')}?=`;
await post(modern('tools/call', { name: 'artifact_list' }), headers({ 'Mcp-Method': 'tools/call', 'Mcp-Name': b64 }),
           200);
await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list',
                            params: { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '1900-01-01' } } }),
           headers({ 'Mcp-Method': 'tools/list', 'MCP-Protocol-Version': '1900-01-01' }), 400, -32022);
await post(modern('ping'), headers({ 'Mcp-Method': 'ping' }), 404, -32601);
await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
           headers({ 'Mcp-Method': 'tools/list' }), 400, -32602, /_meta/);
// Legacy requests need a session; an unknown one is 404.
await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
           { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, 400, -32600,
           /send initialize first/);
await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
           { 'Content-Type': 'application/json', 'Mcp-Session-Id': 'f'.repeat(32) }, 404, -32600, /unknown or expired/);
// A notification is 202 with no body; an SSE-only client gets one SSE event.
const note = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled',
                                         params: { requestId: 1, _meta: meta } }),
                        headers({ 'Mcp-Method': 'notifications/cancelled' }), 202);
assert.equal(note, '');
const sse = await post(modern('server/discover'), { ...headers({ 'Mcp-Method': 'server/discover' }),
                                                    Accept: 'text/event-stream' }, 200);
assert.match(sse, /^event: message\ndata: \{.*"supportedVersions".*\}\n\n$/s);
assert.equal((await fetch(c.url)).status, 405);
assert.equal((await fetch(c.url, { method: 'DELETE' })).status, 405);
assert.equal((await fetch(c.url.replace('/mcp', '/other'), { method: 'POST' })).status, 404);
tally.checks += 3;
// Still serving, and stdout stayed empty.
await post(modern('server/discover'), headers({ 'Mcp-Method': 'server/discover' }), 200);
for (const srv of [a, b, c]) assert.equal(srv.stdout(), '');

for (const srv of [a, b, c]) {
  await stopServer(srv);
  assert.match(srv.stderr(), /stopped; bye/);
}
console.log(`ok: ${tally.checks} checks against cairn-mcp --http with the v1 and v2 SDKs`);
