// Two `cairn-mcp --http` processes on one PostgreSQL database serve one workflow and one artifact set (docs/mcp.md,
// "Streamable HTTP"): the v2 SDK (2026-07-28, stateless) sends each request to either process in turn, and each
// process sees the other's writes at once. Then both processes take concurrent writes — new artifacts, and versions
// of one artifact — and every write is there exactly once. Traffic to 127.0.0.1 only.
//
//   CAIRN_TEST_PG_CONNINFO=... node client-cluster.mjs <path-to-cairn-mcp> <workspace-dir>
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { commandLine, freshDir, startHttpServer, stopServer, tally, toolCalls, writeTemplate } from './support.mjs';

const [server, workspaceArg] = commandLine('client-cluster.mjs', 'path-to-cairn-mcp', 'workspace-dir');
const conninfo = process.env.CAIRN_TEST_PG_CONNINFO;
if (!conninfo) {  // fails, never skips: scripts/test starts a PostgreSQL server and sets it
  console.error('CAIRN_TEST_PG_CONNINFO is not set: run the tests with scripts/test, which starts a PostgreSQL server');
  process.exit(1);
}
const ws = freshDir(workspaceArg);
const templatePath = writeTemplate(ws);
// A tenant of this run alone: the database may hold earlier runs' artifacts and workflows.
const tenant = `cluster-${process.pid}-${Date.now()}`;

async function startServer() {
  const srv = await startHttpServer(server, ['--store', `postgres:${conninfo}`, '--workflow-state', 'journal',
                                             '--workflow', templatePath, '--workspace', ws, '--tenant', tenant],
                                    { stdout: 'ignore' });
  const client = new Client({ name: 'cairn-cluster', version: '1.0.0' },
                            { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url)));
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  return { ...srv, client };
}

const a = await startServer();
const b = await startServer();
assert.notEqual(a.url, b.url);

const calls = { a: toolCalls(a.client, 'a'), b: toolCalls(b.client, 'b') };
const call = (on, name, args = {}) => calls[on].call(name, args);
const fails = (on, name, args, pattern) => calls[on].fails(name, args, pattern);
// Both processes report the same workflow position.
const sameStatus = async (expected) => {
  const [sa, sb] = [await call('a', 'workflow_status'), await call('b', 'workflow_status')];
  assert.deepEqual(sa, sb, 'a and b see one workflow');
  if (expected) assert.equal(sa.step, expected);
  return sa;
};

// --- one workflow, each request to the other process ---------------------------------------------------------------
await fails('a', 'workflow_status', {}, /not started/);
await fails('b', 'workflow_status', {}, /not started/);
assert.equal((await call('b', 'workflow_start', { summary: 'Add CSV export' })).step, 'plan');
await sameStatus('plan');
// b's start is a's too: starting again changes nothing
assert.equal((await call('a', 'workflow_start', { summary: 'again' })).step, 'plan');
fs.writeFileSync(path.join(ws, 'plan.md'), '# Plan\n');
await call('a', 'register_artefacts', { paths: ['plan.md'] });
assert.equal((await call('b', 'workflow_advance', { output: 'planned' })).step, 'define_tasks');
await sameStatus('define_tasks');
await call('a', 'workflow_set_tasks', { loop_id: 'implement', tasks: [{ id: 'parse', title: 'Parser' },
                                                                      { id: 'write', title: 'Writer' }] });
let s;
const outputs = ['tasks set', 'parser coded', 'parser tested', 'writer coded', 'writer tested', 'review 1', 'review 2'];
for (const [i, output] of outputs.entries()) {
  s = await call(i % 2 ? 'a' : 'b', 'workflow_advance', { output });
  const seen = await call(i % 2 ? 'b' : 'a', 'workflow_status');  // the other process sees this advance
  assert.equal(seen.step, s.step, `after '${output}'`);
  assert.equal(seen.status, s.status, `after '${output}'`);
}
assert.equal(s.status, 'complete');
await fails('a', 'workflow_advance', { output: 'one more' }, /complete/);
await fails('b', 'workflow_advance', { output: 'one more' }, /complete/);
assert.equal((await call('a', 'workflow_context')).plan, 'planned');
assert.deepEqual(await call('a', 'workflow_context'), await call('b', 'workflow_context'));

// --- one artifact set, each request to the other process -----------------------------------------------------------
const stored = await call('a', 'artifact_store', { type: 'document', title: 'CSV plan', value: 'export csv' });
assert.equal((await call('b', 'artifact_fetch', { id: stored.id })).value, 'export csv');
await call('b', 'artifact_store', { id: stored.id, type: 'document', title: 'CSV plan v2', value: { csv: true } });
assert.equal((await call('a', 'artifact_fetch', { id: stored.id })).version, 2);
assert.deepEqual((await call('a', 'artifact_versions', { id: stored.id })).versions, [1, 2]);
assert.deepEqual((await call('b', 'artifact_list', { type: 'document' })).artifacts.map((r) => r.id), [stored.id]);
assert.deepEqual((await call('a', 'search_artifacts', { query: 'csv', filter: { type: 'document' } })).hits
  .map((h) => h.id), [stored.id]);
assert.equal((await call('b', 'artifact_delete', { id: stored.id })).versions_removed, 2);
await fails('a', 'artifact_fetch', { id: stored.id }, /not found/);

// --- concurrent writes through both processes: none lost, none doubled ---------------------------------------------
const perServer = 20;
await Promise.all(['a', 'b'].flatMap((on) => Array.from({ length: perServer }, (_, k) =>
  call(on, 'artifact_store', { id: `${on}-${k}`, type: 'data', title: `item ${on} ${k}`, value: { on, k } }))));
for (const on of ['a', 'b']) {
  const listed = [];
  let cursor;
  do {
    const page = await call(on, 'artifact_list', { type: 'data', limit: 7, ...(cursor ? { cursor } : {}) });
    listed.push(...page.artifacts);
    cursor = page.next_cursor;
  } while (cursor);
  assert.equal(listed.length, 2 * perServer, `${on} lists every write`);
  assert.equal(new Set(listed.map((r) => r.id)).size, 2 * perServer, `${on}: no write doubled`);
  assert.ok(listed.every((r) => r.version === 1), `${on}: each stored once`);
}
// Versions of one artifact written by both processes at once: 1..2n, each exactly once.
await Promise.all(['a', 'b'].flatMap((on) => Array.from({ length: perServer }, (_, k) =>
  call(on, 'artifact_store', { id: 'shared', type: 'data', title: `from ${on}`, value: { on, k } }))));
const versions = (await call('b', 'artifact_versions', { id: 'shared' })).versions;
assert.deepEqual(versions, Array.from({ length: 2 * perServer }, (_, i) => i + 1), 'every version once');
const values = await Promise.all(versions.map((v) =>
  call(v % 2 ? 'a' : 'b', 'artifact_fetch', { id: 'shared', version: v })));
const written = new Set(values.map((r) => `${r.value.on}-${r.value.k}`));
assert.equal(written.size, 2 * perServer, 'each write is one version');

await a.client.close();
await b.client.close();
await stopServer(a);
await stopServer(b);
console.log(`client-cluster: ${tally.checks} checks passed (tenant ${tenant})`);
