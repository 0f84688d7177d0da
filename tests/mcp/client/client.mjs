// Drives cairn-mcp with the official MCP TypeScript SDK (pinned in package-lock.json), as an MCP host would:
// lists the tools, runs the `feature` workflow of examples/workflow.cpp through tools/call (real files in a real
// workspace), then the artifact tools, then the error paths. Then it talks raw JSON-RPC to a second process for
// what the SDK client never sends (garbage, a 50 MB line, calls before initialize, batches, bad types).
//
//   node client.mjs <path-to-cairn-mcp> <workspace-dir>
//
// Any mismatch throws (node:assert) and the process exits non-zero. Run by ctest (tests/mcp/CMakeLists.txt).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

import { check, commandLine, freshDir, tally, toolCalls, writeTemplate } from './support.mjs';

const [server, workspaceArg] = commandLine('client.mjs', 'path-to-cairn-mcp', 'workspace-dir');
assert.ok(fs.existsSync(server), `cairn-mcp not found at ${server}`);

// A fresh workspace each run; the state file and the files the "agents" write live in it.
freshDir(workspaceArg, 'work', 'src');
const workspace = fs.realpathSync(path.join(workspaceArg, 'work'));
const templates = fs.realpathSync(workspaceArg);

// The `feature` template of examples/workflow.cpp.
const featureTemplate = {
  name: 'feature',
  description: 'Plan a feature, implement it task by task, review it twice',
  agents: { coder: { description: 'Writes the code' }, tester: { description: 'Writes and runs tests' } },
  loops: {
    implement: [
      { id: 'code', agent: 'coder', instructions: 'Implement {task.id}: {task.title}', artefacts: true },
      { id: 'test', agent: 'tester', instructions: 'Test {task.title}', on_fail: 'retry' },
    ],
  },
  steps: [
    { id: 'plan', type: 'action', instructions: 'Write the plan to plan.md.', artefacts: true },
    { id: 'define_tasks', type: 'action', instructions: 'Split the plan into tasks with workflow_set_tasks.' },
    { id: 'implement', type: 'loop' },
    { id: 'review', type: 'ralph', n: 2, instructions: 'Review the whole change.' },
  ],
};
const templatePath = writeTemplate(templates, featureTemplate);

// ---------------------------------------------------------------------------------------------------------------
// Part 1: the official client over stdio.
let stderrText = '';
const transport = new StdioClientTransport({
  command: server,
  args: ['--workspace', workspace, '--workflow', templatePath, '--tenant', 'acme'],
  stderr: 'pipe',
});
// Pipe reads can end anywhere in a line, so keep the text and split it into lines when checking.
transport.stderr.on('data', (d) => { stderrText += d.toString(); });
// The SDK asks for its newest version and tells the transport the version the server chose.
let negotiated;
transport.setProtocolVersion = (v) => { negotiated = v; };
const client = new Client({ name: 'cairn-mcp-test', version: '1.0.0' });
await client.connect(transport);
assert.equal(negotiated, LATEST_PROTOCOL_VERSION);

check(client.getServerVersion().name === 'cairn-mcp', 'serverInfo.name');
assert.deepEqual(client.getServerCapabilities(), { tools: { listChanged: false } });
check(/tenant 'acme'/.test(client.getInstructions() ?? ''), 'instructions name the tenant');

const { tools } = await client.listTools();
assert.deepEqual(
  tools.map((t) => t.name),
  ['workflow_start', 'workflow_set_tasks', 'workflow_status', 'workflow_advance', 'workflow_context',
   'register_artefacts', 'artifact_store', 'artifact_fetch', 'artifact_list', 'artifact_versions', 'artifact_delete',
   'search_artifacts'],
);
// Every tool has a title, annotations and an outputSchema; the SDK's callTool checks each structuredContent
// against its tool's outputSchema (AJV) and throws when it does not follow it.
for (const t of tools) {
  check(typeof t.description === 'string' && t.description.length > 20, `${t.name} has a description`);
  check(t.inputSchema.type === 'object', `${t.name} inputSchema is an object schema`);
  check(typeof t.title === 'string' && t.title.length > 3, `${t.name} has a title`);
  check(t.outputSchema?.type === 'object', `${t.name} has an outputSchema`);
  check(typeof t.annotations?.readOnlyHint === 'boolean', `${t.name} says whether it only reads`);
  check(t.annotations.openWorldHint === false, `${t.name} works in a closed world`);
}
const hint = (name) => tools.find((t) => t.name === name).annotations;
check(hint('artifact_delete').destructiveHint === true && hint('artifact_delete').readOnlyHint === false,
      'artifact_delete is destructive');
check(hint('artifact_store').destructiveHint === false, 'artifact_store only adds');
for (const name of ['workflow_status', 'workflow_context', 'artifact_fetch', 'artifact_list', 'artifact_versions',
                    'search_artifacts']) {
  check(hint(name).readOnlyHint === true, `${name} only reads`);
}
assert.deepEqual(tools.find((t) => t.name === 'register_artefacts').inputSchema.required, ['paths']);

// Calls a tool that must succeed (call) or fail with an error matching a pattern (callFails): support.mjs.
const { call, fails: callFails } = toolCalls(client);

// --- the workflow ------------------------------------------------------------------------------------------------
await callFails('workflow_status', {}, /not started/);
let s = await call('workflow_start', { summary: 'Add CSV export to the report tool' });
assert.equal(s.status, 'running');
assert.equal(s.step, 'plan');
assert.equal(s.summary, 'Add CSV export to the report tool');
assert.match(s.instructions, /^Write the plan to plan\.md\.\n\n.*register_artefacts/s);
assert.deepEqual(s.progress.current_step, 1);
assert.deepEqual(s.progress.total_steps, 4);

// The plan step writes plan.md and registers it, with a duplicate and paths that must be refused.
fs.writeFileSync(path.join(workspace, 'plan.md'), '# Plan\n1. parser\n2. writer\n3. docs\n');
fs.writeFileSync(path.join(templates, 'outside.md'), 'not in the workspace');
let reg = await call('register_artefacts', { paths: ['plan.md', path.join(workspace, 'plan.md'), 'missing.md',
                                                     '../outside.md', ''] });
assert.deepEqual(reg.registered, [path.join(workspace, 'plan.md')]);
assert.deepEqual(reg.duplicates, [path.join(workspace, 'plan.md')]);
assert.equal(reg.invalid.length, 3);
assert.deepEqual(reg.invalid_reasons, ['cannot resolve the path: No such file or directory', 'outside the workspace',
                                       'the path is empty']);
s = await call('workflow_status');
assert.deepEqual(s.artefacts, [path.join(workspace, 'plan.md')]);

s = await call('workflow_advance', { output: 'Plan written to plan.md' });
assert.equal(s.step, 'define_tasks');
const set = await call('workflow_set_tasks', {
  loop_id: 'implement',
  tasks: [
    { id: 'parser', title: 'CSV parser' },
    { id: 'docs', title: 'User docs', depends_on: ['writer'] },
    { id: 'writer', title: 'CSV writer', description: 'Writes RFC 4180', depends_on: ['parser'] },
  ],
});
assert.equal(set.tasks_set, 3);
assert.deepEqual(set.order, ['parser', 'writer', 'docs']);
s = await call('workflow_advance', { output: 'Three tasks' });

// The loop: code (write and register a file), test (the parser's first test run fails and is retried).
const titles = { parser: 'CSV parser', writer: 'CSV writer', docs: 'User docs' };
for (const [index, id] of ['parser', 'writer', 'docs'].entries()) {
  assert.equal(s.step, 'implement');
  assert.equal(s.step_type, 'loop');
  assert.deepEqual({ index: s.task.index, id: s.task.id, total: s.task.total }, { index, id, total: 3 });
  assert.equal(s.sub_step, 'code');
  assert.equal(s.agent, 'coder');
  assert.equal(s.delegate, true);
  const spawn = `SPAWN the 'coder' sub-agent to handle this step:\n\nImplement ${id}: ${titles[id]}`;
  assert.ok(s.instructions.startsWith(spawn), s.instructions);
  const rel = `src/${id}.cpp`;
  fs.writeFileSync(path.join(workspace, rel), `// ${titles[id]}\n`);
  reg = await call('register_artefacts', { paths: [rel] });
  assert.deepEqual(reg, { registered: [path.join(workspace, rel)], duplicates: [], invalid: [], invalid_reasons: [] });
  s = await call('workflow_advance', { output: `wrote ${rel}` });
  assert.equal(s.sub_step, 'test');
  assert.equal(s.agent, 'tester');
  assert.match(s.instructions, new RegExp(`Test ${titles[id]}$`));
  if (id === 'parser') {
    s = await call('workflow_advance', { output: '2 tests fail', success: false });
    assert.equal(s.sub_step, 'test');
    assert.equal(s.attempt, 2);
  }
  s = await call('workflow_advance', { output: `tests of ${id} pass` });
}
assert.equal(s.step, 'review');
assert.equal(s.ralph_iteration, 1);
assert.equal(s.ralph_total, 2);
s = await call('workflow_advance', { output: 'review 1: rename a function' });
assert.equal(s.ralph_iteration, 2);
s = await call('workflow_advance', { output: 'review 2: fine' });
assert.equal(s.status, 'complete');
assert.equal(s.artefacts.length, 4);
await callFails('workflow_advance', { output: 'one more' }, /complete/);

const context = await call('workflow_context');
assert.deepEqual(Object.keys(context).sort(), [
  'define_tasks', 'implement.docs.code', 'implement.docs.test', 'implement.parser.code', 'implement.parser.test',
  'implement.writer.code', 'implement.writer.test', 'plan', 'review.1', 'review.2']);
assert.equal(context.plan, 'Plan written to plan.md');
assert.equal(context['implement.parser.test'], 'tests of parser pass');
// The state is on disk, in the workspace.
const state = JSON.parse(fs.readFileSync(path.join(workspace, 'workflow-state.json'), 'utf8'));
assert.equal(state.status, 'complete');
assert.equal(state.artefacts.length, 4);

// Registered files were also stored as `file` artifacts of the tenant.
const files = await call('artifact_list', { type: 'file' });
assert.deepEqual(files.artifacts.map((a) => a.value), [undefined, undefined, undefined, undefined]);
assert.deepEqual(files.artifacts.map((a) => a.title).sort(),
                 ['plan.md', 'src/docs.cpp', 'src/parser.cpp', 'src/writer.cpp']);
for (const a of files.artifacts) assert.equal(a.tenant_id, 'acme');

// --- the artifact tools ------------------------------------------------------------------------------------------
let stored = await call('artifact_store', { id: 'report', type: 'document', title: 'Weekly report',
                                            value: 'first draft', created_by: 'writer' });
assert.equal(stored.id, 'report');
assert.equal(stored.version, 1);
stored = await call('artifact_store', { id: 'report', type: 'document', title: 'Weekly report',
                                        value: { sections: ['sales', 'costs'] }, created_by: 'writer',
                                        metadata: { reviewed: true } });
assert.equal(stored.version, 2);
const fresh = await call('artifact_store', { type: 'data', description: 'row count', value: 42 });
assert.match(fresh.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
assert.equal(fresh.version, 1);

let rec = await call('artifact_fetch', { id: 'report' });
assert.equal(rec.version, 2);
assert.equal(rec.tenant_id, 'acme');
assert.deepEqual(rec.value, { sections: ['sales', 'costs'] });
assert.deepEqual(rec.metadata, { reviewed: true });
rec = await call('artifact_fetch', { id: 'report', version: 1 });
assert.equal(rec.version, 1);
assert.equal(rec.value, 'first draft');
const a2a = await call('artifact_fetch', { id: 'report', format: 'a2a' });
assert.equal(a2a.artifactId, 'report');
assert.equal(a2a.name, 'Weekly report');
assert.deepEqual(a2a.parts, [{ data: { sections: ['sales', 'costs'] } }]);
assert.equal(a2a.metadata['urn:cairn:a2a:v1'].version, 2);
assert.deepEqual(a2a.extensions, ['urn:cairn:a2a:v1']);
const a2aV1 = await call('artifact_fetch', { id: 'report', version: 1, format: 'a2a' });
assert.deepEqual(a2aV1.parts, [{ text: 'first draft' }]);
const a2aV03 = await call('artifact_fetch', { id: 'report', version: 1, format: 'a2a-v0.3' });
assert.deepEqual(a2aV03.parts, [{ kind: 'text', text: 'first draft' }]);
assert.deepEqual((await call('artifact_versions', { id: 'report' })).versions, [1, 2]);

// Paging: five notes, two per page.
for (let i = 1; i <= 5; i++) {
  await call('artifact_store', { id: `note-${i}`, type: 'document', title: `Note ${i}`, value: `text ${i}` });
}
const seen = [];
let cursor;
let pages = 0;
do {
  const page = await call('artifact_list', { prefix: 'note-', limit: 2, ...(cursor ? { cursor } : {}) });
  pages++;
  assert.ok(page.artifacts.length <= 2);
  for (const a of page.artifacts) {
    assert.equal(a.value, undefined, 'lists leave values out');
    seen.push(a.id);
  }
  cursor = page.next_cursor;
} while (cursor);
assert.equal(pages, 3);
assert.deepEqual(seen, ['note-1', 'note-2', 'note-3', 'note-4', 'note-5']);
const byWriter = await call('artifact_list', { created_by: 'writer' });
assert.deepEqual(byWriter.artifacts.map((a) => a.id), ['report']);

const del = await call('artifact_delete', { id: 'note-3' });
assert.deepEqual(del, { deleted: 'note-3', versions_removed: 1 });
const missingText = await callFails('artifact_fetch', { id: 'note-3' }, /artifact 'note-3' not found in tenant 'acme'/);
assert.equal(await callFails('artifact_delete', { id: 'note-3' }, /not found/), missingText);
assert.equal(await callFails('artifact_versions', { id: 'note-3' }, /not found/), missingText);
await callFails('artifact_fetch', { id: 'report', version: 3 }, /artifact 'report' version 3 not found/);

// The tenant is the server's: no tool takes a tenant, and nothing was written under another one.
for (const [name, args] of [
  ['artifact_store', { type: 'document', title: 'x', value: 'x', tenant_id: 'globex' }],
  ['artifact_fetch', { id: 'report', tenant_id: 'globex' }],
  ['artifact_list', { tenant_id: 'globex' }],
  ['artifact_versions', { id: 'report', tenant_id: 'globex' }],
  ['artifact_delete', { id: 'report', tenant_id: 'globex' }],
  ['search_artifacts', { query: 'report', tenant_id: 'globex' }],
  ['search_artifacts', { query: 'report', filter: { tenant_id: 'globex' } }],
]) {
  await callFails(name, args, /tenant_id is not an argument: the tenant is fixed by the server/);
}
assert.deepEqual((await call('artifact_versions', { id: 'report' })).versions, [1, 2], 'report untouched');
const all = await call('artifact_list', { limit: 1000 });
assert.equal(all.artifacts.length, 4 + 1 + 1 + 4);  // files, report, the data, notes 1, 2, 4, 5
for (const a of all.artifacts) assert.equal(a.tenant_id, 'acme');

// search_artifacts: words ranked best first (BM25), filters, what matched, a cursor; this tenant's artifacts only.
await call('artifact_store', { id: 'memo-1', type: 'document', title: 'Sales memo', value: 'sales grew in the north',
                               metadata: { region: 'north', quarter: 3 } });
await call('artifact_store', { id: 'memo-2', type: 'document', title: 'Costs memo',
                               value: 'sales, sales and more sales; costs grew',
                               metadata: { region: 'south', quarter: 4 } });
let found = await call('search_artifacts', { query: 'sales' });
assert.deepEqual(found.hits.map((h) => h.id), ['memo-2', 'memo-1', 'report']);  // sales 3 times, twice, once
assert.deepEqual(Object.keys(found.hits[0]).sort(), ['id', 'matched', 'score', 'title', 'type', 'version']);
assert.equal(found.hits[0].title, 'Costs memo');
assert.equal(found.hits[0].type, 'document');
assert.equal(found.hits[2].version, 2);
assert.deepEqual(found.hits[0].matched, { words: ['sales'], fields: ['value'], text_rank: 1 });
assert.deepEqual(found.hits[1].matched.fields, ['title', 'value']);
assert.ok(found.hits[0].score > found.hits[1].score && found.hits[1].score > found.hits[2].score,
          JSON.stringify(found));
assert.equal(found.next_cursor, undefined);
found = await call('search_artifacts', { query: 'sales grew', filter: { id_prefix: 'memo-',
  metadata: [{ pointer: '/quarter', op: 'ge', value: 4 },
             { pointer: '/region', op: 'in', value: ['south', 'west'] }] } });
assert.deepEqual(found.hits.map((h) => h.id), ['memo-2']);
found = await call('search_artifacts', { query: '"sales grew"', mode: 'text' });  // a phrase
assert.deepEqual(found.hits.map((h) => h.id), ['memo-1']);
found = await call('search_artifacts', { filter: { type: 'document', created_by: 'writer' } });  // filters alone
assert.deepEqual(found.hits.map((h) => [h.id, h.score]), [['report', 0]]);
const searched = [];
let next;
do {
  const page = await call('search_artifacts', { query: 'sales', limit: 1, ...(next ? { cursor: next } : {}) });
  assert.equal(page.hits.length, 1);
  searched.push(page.hits[0].id);
  next = page.next_cursor;
} while (next);
assert.deepEqual(searched, ['memo-2', 'memo-1', 'report']);
await callFails('search_artifacts',
                { query: 'sales', filter: { metadata: [{ pointer: '/quarter', op: 'between', value: 1 }] } },
                /search_artifacts: filter\.metadata\[0\]\.op must be one of eq, ne, lt, le, gt, ge, in, exists/);
await callFails('search_artifacts', { query: 'sales', limit: 500 },
                /search_artifacts: limit must be an integer from 1 to 100/);
await callFails('search_artifacts', { query: '"sales' },
                /search_artifacts: search: query text: the quote at byte 0 is not closed/);
await callFails('search_artifacts', { query: 'sales', cursor: 'abc' },
                /search_artifacts: search: cursor is not one this query gave/);
await callFails('search_artifacts', { query: 'sales', mode: 'similarity' },
                /search_artifacts: search: mode similarity/);
await callFails('search_artifacts', {}, /search_artifacts: search: nothing to search by/);

// --- error paths -------------------------------------------------------------------------------------------------
await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
                     (e) => e instanceof McpError && e.code === -32602 &&
                            /unknown tool 'no_such_tool'/.test(e.message));
tally.checks++;
await callFails('workflow_advance', { output: 5 }, /workflow_advance: output must be a string/);
await callFails('workflow_advance', {}, /output is required/);
await callFails('workflow_set_tasks', { loop_id: 'implement', tasks: 'all of them' }, /tasks must be an array/);
await callFails('workflow_status', { verbose: true }, /unknown argument 'verbose'/);
await callFails('register_artefacts', { paths: 'plan.md' }, /paths must be an array/);
await callFails('artifact_store', { type: 'Not A Type', title: 'x', value: 1 }, /artifact_store: type/);
await callFails('artifact_store', { type: 'document', value: 1 }, /title/);
await callFails('artifact_store', { type: 'document', title: 'no content' }, /value or a storage_url/);
await callFails('artifact_store', { type: 'document', title: 't', value: 1, version: 7 }, /unknown argument 'version'/);
await callFails('artifact_fetch', { id: 'report', version: '2' }, /version must be an integer/);
await callFails('artifact_fetch', { id: 'report', version: 0 }, /version must be an integer from 1/);
await callFails('artifact_fetch', { id: 'report', format: 'xml' }, /format must be/);
await callFails('artifact_fetch', {}, /id is required/);
await callFails('artifact_list', { limit: 0 }, /limit must be an integer from 1 to 1000/);
await callFails('artifact_list', { limit: 1001 }, /limit/);
await callFails('artifact_list', { type: 'BAD' }, /artifact_list/);
// After all of that the server still serves.
assert.equal((await call('artifact_fetch', { id: 'report' })).version, 2);
await client.ping();

await client.close();
check(stderrText.split('\n').some((l) => l.startsWith('cairn-mcp: serving 12 tools')), 'diagnostics go to stderr');

// ---------------------------------------------------------------------------------------------------------------
// Part 2: raw JSON-RPC, for what the SDK never sends. Every stdout line must be one JSON-RPC message.
class Raw {
  constructor(args) {
    this.args = args;
    this.proc = spawn(server, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.sent = '';
    this.lines = [];
    this.waiters = [];  // [resolve, reject] of each next() still waiting for a line
    this.stderr = '';
    this.ended = false;  // stdout ended: no more replies will come
    // Set up at once, so that a process that exits early (a bad store, a crash) is never missed: its exit code
    // once it has exited and its stdout and stderr have ended.
    this.closed = new Promise((resolve) => this.proc.on('close', resolve));
    this.proc.stdin.on('error', () => {});  // a write to a process that exited: its end is reported by next()
    this.proc.stderr.on('data', (d) => { this.stderr += d.toString(); });
    const out = readline.createInterface({ input: this.proc.stdout });
    out.on('line', (line) => {
      const msg = JSON.parse(line);  // throws (fails the test) on anything but JSON
      for (const m of Array.isArray(msg) ? msg : [msg]) assert.equal(m.jsonrpc, '2.0', line.slice(0, 300));
      const w = this.waiters.shift();
      if (w) w[0](msg); else this.lines.push(msg);
    });
    out.on('close', () => {
      this.ended = true;
      for (const [, reject] of this.waiters.splice(0)) reject(this.failure('its stdout ended'));
    });
  }
  // An error naming the process, the last line sent to it, what went wrong and everything it wrote to stderr.
  failure(what) {
    return new Error(`cairn-mcp ${this.args.join(' ')} (pid ${this.proc.pid}), after ${this.sent.slice(0, 300)}: ` +
                     `${what}; its stderr: ${this.stderr}`);
  }
  next() {
    if (this.lines.length) return Promise.resolve(this.lines.shift());
    if (this.ended) return Promise.reject(this.failure('its stdout ended'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(this.failure('no reply within 60 s')), 60000);
      this.waiters.push([(m) => { clearTimeout(timer); resolve(m); }, (e) => { clearTimeout(timer); reject(e); }]);
    });
  }
  async send(text) {
    this.sent = text;
    if (this.ended) throw this.failure('its stdout ended');
    if (!this.proc.stdin.write(text + '\n')) {
      await Promise.race([new Promise((r) => this.proc.stdin.once('drain', r)), this.closed]);
    }
  }
  async request(msg) {
    await this.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
    return this.next();
  }
  async close() {
    this.proc.stdin.end();
    let timer;
    const code = await Promise.race([
      this.closed,
      new Promise((resolve, reject) => {
        timer = setTimeout(() => reject(this.failure('not exited within 60 s of the end of its stdin')), 60000);
      }),
    ]);
    clearTimeout(timer);
    assert.equal(code, 0, `cairn-mcp exited with ${code}: ${this.stderr}`);
    assert.equal(this.lines.length, 0, `unexpected extra replies: ${JSON.stringify(this.lines)}`);
  }
}
function expectError(reply, id, code, pattern) {
  assert.deepEqual(reply.id, id, JSON.stringify(reply));
  assert.equal(reply.error?.code, code, JSON.stringify(reply));
  if (pattern) assert.match(reply.error.message, pattern);
  assert.equal(reply.result, undefined);
  tally.checks++;
}

const raw = new Raw(['--workspace', workspace, '--workflow', templatePath, '--tenant', 'acme']);
const init = (id, version) => ({ jsonrpc: '2.0', id, method: 'initialize',
                                 params: { protocolVersion: version, capabilities: {},
                                           clientInfo: { name: 'raw', version: '0' } } });
// Before initialize: only ping works.
assert.deepEqual(await raw.request({ jsonrpc: '2.0', id: 'p', method: 'ping' }),
                 { jsonrpc: '2.0', id: 'p', result: {} });
expectError(await raw.request({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), 1, -32600, /not initialized/);
expectError(await raw.request({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'workflow_status' } }),
            2, -32600, /not initialized/);
expectError(await raw.request('[{"jsonrpc":"2.0","id":3,"method":"ping"}]'), null, -32600, /batch/);
expectError(await raw.request({ jsonrpc: '2.0', id: 4, method: 'initialize', params: {} }), 4, -32602,
            /protocolVersion/);
// Garbage and bad shapes.
expectError(await raw.request('this is not json'), null, -32700, /invalid JSON/);
expectError(await raw.request('{"jsonrpc":"2.0","id":5,"method":'), null, -32700);
expectError(await raw.request('"just a string"'), null, -32600);
expectError(await raw.request('[]'), null, -32600);
expectError(await raw.request({ jsonrpc: '1.0', id: 6, method: 'ping' }), 6, -32600, /jsonrpc/);
expectError(await raw.request({ jsonrpc: '2.0', id: { x: 1 }, method: 'ping' }), null, -32600, /id must be/);
expectError(await raw.request({ jsonrpc: '2.0', id: null, method: 'ping' }), null, -32600, /id must be/);
expectError(await raw.request({ jsonrpc: '2.0', id: 7, method: 42 }), 7, -32600, /method must be a string/);
expectError(await raw.request({ jsonrpc: '2.0', id: 8 }), 8, -32600, /method is missing/);
expectError(await raw.request('['.repeat(100000) + ']'.repeat(100000)), null, -32600, /deeper than/);
// A 50 MB line is refused without stopping the server; the next line is served.
await raw.send(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping',
                               params: { pad: 'x'.repeat(50 * 1024 * 1024) } }));
expectError(await raw.next(), null, -32600, /longer than the limit of 16777216 bytes/);
// Initialize with a version from the future: the server offers its newest.
let reply = await raw.request(init(10, '2099-01-01'));
assert.equal(reply.result.protocolVersion, LATEST_PROTOCOL_VERSION);
assert.equal(reply.result.serverInfo.name, 'cairn-mcp');
assert.equal(reply.result.serverInfo.title, 'cairn');
assert.deepEqual(reply.result.capabilities, { tools: { listChanged: false } });
await raw.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
expectError(await raw.request(init(11, '2025-06-18')), 11, -32600, /already initialized/);
expectError(await raw.request({ jsonrpc: '2.0', id: 12, method: 'resources/list' }), 12, -32601, /method not found/);
expectError(await raw.request({ jsonrpc: '2.0', id: 13, method: 'tools/call', params: [1] }), 13, -32602, /params/);
expectError(await raw.request({ jsonrpc: '2.0', id: 14, method: 'tools/call', params: {} }), 14, -32602, /name/);
expectError(await raw.request({ jsonrpc: '2.0', id: 15, method: 'tools/call',
                                params: { name: 'workflow_status', arguments: [] } }), 15, -32602, /arguments/);
expectError(await raw.request({ jsonrpc: '2.0', id: 16, method: 'tools/list', params: { cursor: 'zz' } }),
            16, -32602, /cursor/);
// Notifications and stray responses get no reply; the next request's reply comes next.
await raw.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }));
await raw.send(JSON.stringify({ jsonrpc: '2.0', method: 'no/such/notification' }));
await raw.send(JSON.stringify({ jsonrpc: '2.0', id: 99, result: {} }));
await raw.send('');
expectError(await raw.request('[{"jsonrpc":"2.0","id":17,"method":"ping"}]'), null, -32600,
            /not supported in protocol version 2025-11-25/);
reply = await raw.request({ jsonrpc: '2.0', id: 'last', method: 'tools/call',
                            params: { name: 'workflow_status', arguments: {} } });
assert.equal(reply.id, 'last');
assert.equal(reply.result.isError, false);
assert.equal(reply.result.structuredContent.status, 'complete');
// 2026-07-28 requests on the same connection: each carries its version in _meta and needs no initialize.
const meta = (version) => ({ 'io.modelcontextprotocol/protocolVersion': version,
                             'io.modelcontextprotocol/clientCapabilities': {} });
const allVersions = ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
reply = await raw.request({ jsonrpc: '2.0', id: 'd', method: 'server/discover',
                            params: { _meta: meta('2026-07-28') } });
assert.equal(reply.result.resultType, 'complete');
assert.deepEqual(reply.result.supportedVersions, allVersions);
assert.equal(reply.result._meta['io.modelcontextprotocol/serverInfo'].name, 'cairn-mcp');
reply = await raw.request({ jsonrpc: '2.0', id: 'v', method: 'tools/list', params: { _meta: meta('1900-01-01') } });
expectError(reply, 'v', -32022, /Unsupported protocol version/);
assert.deepEqual(reply.error.data, { supported: allVersions, requested: '1900-01-01' });
expectError(await raw.request({ jsonrpc: '2.0', id: 'm', method: 'server/discover' }), 'm', -32602, /_meta/);
expectError(await raw.request({ jsonrpc: '2.0', id: 'c', method: 'tools/list',
                                params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }),
            'c', -32602, /clientCapabilities/);
expectError(await raw.request({ jsonrpc: '2.0', id: 'p', method: 'ping', params: { _meta: meta('2026-07-28') } }),
            'p', -32601, /not part of protocol version 2026-07-28/);
await raw.close();
check(raw.stderr.includes('invalid JSON'), 'parse errors are logged to stderr');

// A 2025-03-26 client: batches work, results carry no structuredContent (it came with 2025-06-18).
const old = new Raw(['--tenant', 'acme']);
reply = await old.request(init(1, '2025-03-26'));
assert.equal(reply.result.protocolVersion, '2025-03-26');
assert.equal(reply.result.serverInfo.title, undefined);
await old.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
const batch = await old.request(JSON.stringify([
  { jsonrpc: '2.0', id: 'a', method: 'ping' },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 'b', method: 'tools/call',
    params: { name: 'artifact_store', arguments: { id: 'x', type: 'data', title: 'x', value: [1, 2] } } },
  { jsonrpc: '2.0', id: 'c', method: 'initialize', params: { protocolVersion: '2025-03-26' } },
  { jsonrpc: '2.0', id: 'd', method: 'nope' },
  7,
]));
assert.ok(Array.isArray(batch), JSON.stringify(batch));
assert.deepEqual(batch.map((r) => r.id), ['a', 'b', 'c', 'd', null]);
assert.deepEqual(batch[0].result, {});
assert.equal(batch[1].result.isError, false);
assert.equal(batch[1].result.structuredContent, undefined);
assert.deepEqual(JSON.parse(batch[1].result.content[0].text).version, 1);
assert.equal(batch[2].error.code, -32600);
assert.equal(batch[3].error.code, -32601);
assert.equal(batch[4].error.code, -32600);
// Without --workflow there are only the artifact tools.
reply = await old.request({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
assert.deepEqual(reply.result.tools.map((t) => t.name),
                 ['artifact_store', 'artifact_fetch', 'artifact_list', 'artifact_versions', 'artifact_delete',
                  'search_artifacts']);
await old.close();
tally.checks++;

// A YAML template, when cairn-mcp was built with cairn::yaml.
if (process.env.CAIRN_MCP_YAML === '1') {
  const yamlWs = path.join(templates, 'yaml-ws');
  fs.mkdirSync(yamlWs);
  const yamlPath = path.join(templates, 'fix.yaml');
  fs.writeFileSync(yamlPath, 'name: fix\nsteps:\n  - id: fix\n    type: action\n    artefacts: true\n' +
                             '    instructions: |\n      Fix the bug.\n');
  const y = new Raw(['--workspace', yamlWs, '--workflow', yamlPath, '--tenant', 't']);
  await y.request(init(1, '2025-06-18'));
  reply = await y.request({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'workflow_start' } });
  assert.equal(reply.result.structuredContent.step, 'fix');
  assert.match(reply.result.structuredContent.instructions, /^Fix the bug\.\n\n/);
  await y.close();
  tally.checks++;
}

// Two cairn-mcp processes for two tenants on one SQLite file (when built with cairn::sqlite): each sees only its
// own tenant's artifacts, and what one stored survives into a later process of the same tenant.
if (process.env.CAIRN_MCP_SQLITE === '1') {
  const db = path.join(templates, 'shared.db');
  const tool = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  const a = new Raw(['--store', `sqlite:${db}`, '--tenant', 'tenant-a']);
  const b = new Raw(['--store', `sqlite:${db}`, '--tenant', 'tenant-b']);
  await a.request(init(1, '2025-06-18'));
  await b.request(init(1, '2025-06-18'));
  reply = await a.request(tool(2, 'artifact_store',
                               { id: 'plan', type: 'document', title: 'A plan', value: 'from a' }));
  assert.equal(reply.result.isError, false, JSON.stringify(reply));
  reply = await b.request(tool(2, 'artifact_fetch', { id: 'plan' }));
  assert.equal(reply.result.isError, true, 'tenant-b must not see tenant-a\'s artifact');
  reply = await b.request(tool(3, 'artifact_store',
                               { id: 'plan', type: 'document', title: 'B plan', value: 'from b' }));
  assert.equal(reply.result.structuredContent.version, 1, JSON.stringify(reply.result));
  reply = await a.request(tool(3, 'artifact_list', {}));
  assert.deepEqual(reply.result.structuredContent.artifacts.map((r) => r.title), ["A plan"]);
  reply = await b.request(tool(4, 'search_artifacts', { query: 'plan' }));  // the same words in both tenants
  assert.deepEqual(reply.result.structuredContent.hits.map((h) => h.title), ['B plan'], JSON.stringify(reply));
  await a.close();
  await b.close();
  const a2 = new Raw(['--store', `sqlite:${db}`, '--tenant', 'tenant-a']);
  await a2.request(init(1, '2025-06-18'));
  reply = await a2.request(tool(2, 'artifact_fetch', { id: 'plan' }));
  assert.equal(reply.result.structuredContent.value, 'from a', JSON.stringify(reply.result));
  await a2.close();
  tally.checks++;

  // Two workflow servers on one SQLite store share the workflow through the store's run journal: what one does,
  // the other sees; no state file is written. `--workflow-state file` keeps the file instead.
  const sharedWs = path.join(templates, 'shared-ws');
  fs.mkdirSync(sharedWs);
  fs.writeFileSync(path.join(sharedWs, 'plan.md'), '# plan');
  const wfArgs = ['--workspace', sharedWs, '--workflow', templatePath, '--tenant', 'acme', '--store', `sqlite:${db}`];
  const s1 = new Raw([...wfArgs, '--run', 'feature-42']);
  const s2 = new Raw([...wfArgs, '--run', 'feature-42']);
  await s1.request(init(1, '2025-06-18'));
  await s2.request(init(1, '2025-06-18'));
  reply = await s1.request(tool(2, 'workflow_start', { summary: 'shared' }));
  assert.equal(reply.result.structuredContent.step, 'plan', JSON.stringify(reply.result));
  reply = await s2.request(tool(2, 'workflow_status', {}));
  assert.equal(reply.result.structuredContent.summary, 'shared', JSON.stringify(reply.result));
  reply = await s2.request(tool(3, 'register_artefacts', { paths: ['plan.md'] }));
  assert.deepEqual(reply.result.structuredContent.registered, [path.join(fs.realpathSync(sharedWs), 'plan.md')]);
  reply = await s2.request(tool(4, 'workflow_advance', { output: 'planned by s2' }));
  assert.equal(reply.result.structuredContent.step, 'define_tasks');
  reply = await s1.request(tool(3, 'workflow_advance', { output: 'tasks by s1' }));
  assert.equal(reply.result.structuredContent.step, 'implement', JSON.stringify(reply.result));
  reply = await s1.request(tool(4, 'workflow_context', {}));
  assert.deepEqual(reply.result.structuredContent, { plan: 'planned by s2', define_tasks: 'tasks by s1' });
  // The registered file is an artifact of the tenant too.
  reply = await s1.request(tool(5, 'artifact_list', {}));
  check(reply.result.structuredContent.artifacts.some((r) => r.type === 'file'), 'registered file stored');
  await s1.close();
  await s2.close();
  check(!fs.existsSync(path.join(sharedWs, 'workflow-state.json')), 'no state file with a journal');
  // A new server resumes the run; another run id is another workflow.
  const s3 = new Raw([...wfArgs, '--run', 'feature-42']);
  await s3.request(init(1, '2025-06-18'));
  reply = await s3.request(tool(2, 'workflow_status', {}));
  assert.equal(reply.result.structuredContent.step, 'implement');
  await s3.close();
  const s4 = new Raw(wfArgs);  // default run id: the template's name
  await s4.request(init(1, '2025-06-18'));
  reply = await s4.request(tool(2, 'workflow_status', {}));
  assert.equal(reply.result.isError, true);
  assert.match(JSON.parse(reply.result.content[0].text).error, /not started/);
  await s4.close();
  const f = new Raw([...wfArgs, '--workflow-state', 'file']);
  await f.request(init(1, '2025-06-18'));
  reply = await f.request(tool(2, 'workflow_start', {}));
  assert.equal(reply.result.isError, false);
  await f.close();
  check(fs.existsSync(path.join(sharedWs, 'workflow-state.json')), '--workflow-state file writes the file');
  tally.checks++;
}

// Two workflow servers on one PostgreSQL database (the test server of scripts/test) serve one workflow through the
// database's run journal, as servers on two machines would.
if (process.env.CAIRN_MCP_POSTGRES === '1' && process.env.CAIRN_TEST_PG_CONNINFO) {
  const tool = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  const pgWs = path.join(templates, 'pg-ws');
  fs.mkdirSync(pgWs);
  const run = `feature-${process.pid}-${Date.now()}`;
  const pgArgs = ['--workspace', pgWs, '--workflow', templatePath, '--tenant', 'acme', '--run', run,
                  '--store', `postgres:${process.env.CAIRN_TEST_PG_CONNINFO}`];
  const p1 = new Raw(pgArgs);
  const p2 = new Raw(pgArgs);
  await p1.request(init(1, '2025-06-18'));
  await p2.request(init(1, '2025-06-18'));
  reply = await p1.request(tool(2, 'workflow_start', { summary: 'on postgres' }));
  assert.equal(reply.result.isError, false, JSON.stringify(reply.result));
  reply = await p2.request(tool(2, 'workflow_advance', { output: 'planned by p2' }));
  assert.equal(reply.result.structuredContent.step, 'define_tasks', JSON.stringify(reply.result));
  reply = await p1.request(tool(3, 'workflow_advance', { output: 'tasks by p1' }));
  assert.equal(reply.result.structuredContent.step, 'implement', JSON.stringify(reply.result));
  reply = await p2.request(tool(3, 'workflow_context', {}));
  assert.deepEqual(reply.result.structuredContent, { plan: 'planned by p2', define_tasks: 'tasks by p1' });
  await p1.close();
  await p2.close();
  check(!fs.existsSync(path.join(pgWs, 'workflow-state.json')), 'no state file with a PostgreSQL journal');
}

// A bad command line fails at once, on stderr, with nothing on stdout.
for (const [args, pattern] of [
  [['--store', 'nosuch:/tmp/x.db'], /--store: .*nosuch/],
  [['--tenant', ''], /--tenant must not be empty/],
  [['--workspace', path.join(templates, 'no-such-dir')], /workspace/i],
  [['--workflow', path.join(templates, 'outside.md')], /outside\.md/],
  [['--workflow', templatePath, '--workflow-state', 'journal'],
   /--workflow-state journal needs a sqlite: or postgres:/],
  [['--workflow', templatePath, '--run', 'r1'], /--run is only used with a journal/],
  [['--workflow-state', 'cloud'], /workflow-state/],
]) {
  const r = spawnSync(server, args, { input: '', encoding: 'utf8' });
  assert.notEqual(r.status, 0, `${args.join(' ')} should fail`);
  assert.equal(r.stdout, '', `${args.join(' ')} wrote to stdout`);
  assert.match(r.stderr, pattern);
  tally.checks++;
}

console.log(`mcp client test: ${tally.checks} checks passed (SDK ${LATEST_PROTOCOL_VERSION}, tools ${tools.length})`);
