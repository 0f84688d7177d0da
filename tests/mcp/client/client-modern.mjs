// Drives cairn-mcp over stdio with the official MCP TypeScript SDK v2 (@modelcontextprotocol/client, pinned in
// package-lock.json), which implements protocol revision 2026-07-28:
// - a client pinned to 2026-07-28 (no initialize; every request carries its version and capabilities in _meta, the
//   SDK checks resultType and each structuredContent against its tool's outputSchema) runs the `feature` workflow
//   and every artifact tool, bad calls included;
// - a client in the SDK's `auto` mode probes with server/discover and must choose 2026-07-28;
// - a legacy client of the same SDK (its default, the 2025-11-25 initialize) works against the same server.
//
//   node client-modern.mjs <path-to-cairn-mcp> <workspace-dir>
//
// Any mismatch throws (node:assert) and the process exits non-zero. Run by ctest (tests/mcp/CMakeLists.txt).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { check, commandLine, freshDir, tally, toolCalls, writeTemplate } from './support.mjs';

const [server, workspaceArg] = commandLine('client-modern.mjs', 'path-to-cairn-mcp', 'workspace-dir');
assert.ok(fs.existsSync(server), `cairn-mcp not found at ${server}`);
const workspace = freshDir(workspaceArg, 'work');
const templatePath = writeTemplate(fs.realpathSync(workspaceArg));
const serverArgs = ['--workspace', workspace, '--workflow', templatePath, '--tenant', 'acme'];


async function connect(mode) {
  const transport = new StdioClientTransport({ command: server, args: serverArgs, stderr: 'ignore' });
  const client = new Client({ name: 'cairn-mcp-modern-test', version: '1.0.0' },
                            mode ? { versionNegotiation: { mode } } : {});
  await client.connect(transport);
  return client;
}

// --- a 2026-07-28-only client: the whole workflow and every artifact tool ---------------------------------------
const client = await connect({ pin: '2026-07-28' });
assert.equal(client.getProtocolEra(), 'modern');
assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
const discovered = client.getDiscoverResult();
assert.ok(discovered.supportedVersions.includes('2026-07-28'), JSON.stringify(discovered));
assert.ok(discovered.supportedVersions.includes('2025-11-25'), JSON.stringify(discovered));
assert.deepEqual(client.getServerCapabilities(), { tools: {} });
check(client.getServerVersion()?.name === 'cairn-mcp', 'serverInfo from server/discover');
check(/tenant 'acme'/.test(client.getInstructions() ?? ''), 'instructions name the tenant');

const { tools } = await client.listTools();
assert.equal(tools.length, 12);
for (const t of tools) {
  check(typeof t.title === 'string' && t.outputSchema?.type === 'object', `${t.name}: title and outputSchema`);
  check(typeof t.annotations?.readOnlyHint === 'boolean', `${t.name}: annotations`);
}

const { call, fails: callFails } = toolCalls(client);

await callFails('workflow_status', {}, /not started/);
let s = await call('workflow_start', { summary: 'Add CSV export' });
assert.equal(s.step, 'plan');
fs.writeFileSync(path.join(workspace, 'plan.md'), '# Plan\n');
const reg = await call('register_artefacts', { paths: ['plan.md', 'missing.md'] });
assert.deepEqual(reg.registered, [path.join(workspace, 'plan.md')]);
assert.equal(reg.invalid.length, 1);
s = await call('workflow_advance', { output: 'planned' });
assert.equal(s.step, 'define_tasks');
const set = await call('workflow_set_tasks', { loop_id: 'implement', tasks: [
  { id: 'parse', title: 'Parser' }, { id: 'write', title: 'Writer', depends_on: ['parse'] }] });
assert.deepEqual(set.order, ['parse', 'write']);
s = await call('workflow_advance', { output: 'tasks set' });
assert.equal(s.task.id, 'parse');
s = await call('workflow_advance', { output: 'parser coded' });
s = await call('workflow_advance', { output: 'tests fail', success: false });
assert.equal(s.sub_step, 'test');
for (const output of ['parser tested', 'writer coded', 'writer tested', 'review 1']) {
  s = await call('workflow_advance', { output });
}
assert.equal(s.ralph_iteration, 2);
s = await call('workflow_advance', { output: 'review 2' });
assert.equal(s.status, 'complete');
assert.equal((await call('workflow_context')).plan, 'planned');
await callFails('workflow_advance', { output: 5 }, /output must be a string/);

const stored = await call('artifact_store', { type: 'document', title: 'CSV plan', value: '# Plan\nexport csv',
                                              metadata: { region: 'eu' } });
assert.equal(stored.version, 1);
assert.equal((await call('artifact_store', { id: stored.id, type: 'document', title: 'CSV plan v2',
                                             value: { csv: true } })).version, 2);
assert.equal((await call('artifact_fetch', { id: stored.id })).title, 'CSV plan v2');
assert.equal((await call('artifact_fetch', { id: stored.id, version: 1 })).value, '# Plan\nexport csv');
assert.equal((await call('artifact_fetch', { id: stored.id, format: 'a2a' })).artifactId, stored.id);
// plan.md was stored as a `file` artifact when it was registered.
assert.deepEqual((await call('artifact_list')).artifacts.map((a) => a.type).sort(), ['document', 'file']);
assert.equal((await call('artifact_list', { type: 'document' })).artifacts.length, 1);
assert.deepEqual((await call('artifact_versions', { id: stored.id })).versions, [1, 2]);
const found = await call('search_artifacts', { query: 'csv', filter: { type: 'document' } });
assert.deepEqual(found.hits.map((h) => h.id), [stored.id]);
await callFails('artifact_fetch', { id: 'missing' }, /not found/);
await callFails('artifact_store', { type: 'document', tenant_id: 'other', title: 'x', value: 1 },
                /tenant_id is not an argument/);
assert.equal((await call('artifact_delete', { id: stored.id })).versions_removed, 2);
await callFails('artifact_delete', { id: stored.id }, /not found/);
// An unknown tool is a protocol error, not a result.
await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /unknown tool 'no_such_tool'/);
tally.checks++;
await client.close();

// --- the SDK's auto mode probes with server/discover and chooses 2026-07-28 ---------------------------------------
const auto = await connect('auto');
assert.equal(auto.getProtocolEra(), 'modern');
assert.equal(auto.getNegotiatedProtocolVersion(), '2026-07-28');
assert.equal((await auto.callTool({ name: 'workflow_status', arguments: {} })).structuredContent.status, 'complete');
await auto.close();
tally.checks++;

// --- the same SDK as a legacy (2025-11-25) client against the same server ----------------------------------------
const legacy = await connect(undefined);
assert.equal(legacy.getProtocolEra(), 'legacy');
assert.equal(legacy.getNegotiatedProtocolVersion(), '2025-11-25');
assert.equal((await legacy.listTools()).tools.length, 12);
assert.equal((await legacy.callTool({ name: 'workflow_status', arguments: {} })).structuredContent.status,
             'complete');
await legacy.close();
tally.checks++;

console.log(`ok: ${tally.checks} checks against cairn-mcp with @modelcontextprotocol/client ` +
            '(2026-07-28 and 2025-11-25)');
