// What the MCP client tests share: their command line, a fresh workspace, the `feature` workflow template, starting
// `cairn-mcp --http`, tool calls through an SDK client that check the result's shape, and the parts of a raw
// 2026-07-28 request. Node's own modules only, so conformance/run.mjs (whose folder has no SDK) imports it too.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/// The checks a test has passed, for its last line.
export const tally = { checks: 0 };

/// assert.ok, counted in tally.
export function check(cond, message) {
  assert.ok(cond, message);
  tally.checks++;
}

/// The command line after the script: `names` are its required arguments, in order. Exits with status 2 and the
/// usage when one is missing; otherwise returns them, then any more.
export function commandLine(script, ...names) {
  const given = process.argv.slice(2);
  if (given.length < names.length || given.slice(0, names.length).some((a) => !a)) {
    console.error(`usage: node ${script} ${names.map((n) => `<${n}>`).join(' ')}`);
    process.exit(2);
  }
  return given;
}

/// Removes `dir` with everything in it, makes `dir/...sub` anew and returns its real path.
export function freshDir(dir, ...sub) {
  fs.rmSync(dir, { recursive: true, force: true });
  const made = path.join(dir, ...sub);
  fs.mkdirSync(made, { recursive: true });
  return fs.realpathSync(made);
}

/// The `feature` workflow: a plan, its tasks, a loop that codes and tests each, two reviews (12 workflow_advance
/// calls for two tasks).
export const featureTemplate = {
  name: 'feature',
  loops: { implement: [{ id: 'code', instructions: 'Implement {task.title}' },
                       { id: 'test', instructions: 'Test {task.title}', on_fail: 'retry' }] },
  steps: [
    { id: 'plan', type: 'action', instructions: 'Write the plan to plan.md.', artefacts: true },
    { id: 'define_tasks', type: 'action', instructions: 'Split the plan into tasks.' },
    { id: 'implement', type: 'loop' },
    { id: 'review', type: 'ralph', n: 2, instructions: 'Review the change.' },
  ],
};

/// Writes `template` (by default featureTemplate) to `dir/feature.json` and returns that path.
export function writeTemplate(dir, template = featureTemplate) {
  const file = path.join(dir, 'feature.json');
  fs.writeFileSync(file, JSON.stringify(template, null, 2));
  return file;
}

const children = [];
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });

/// Starts `server --http 127.0.0.1:0 ...args` and resolves, once it says where it listens, with
/// `{url, child, stdout(), stderr()}`. `stdout` is what becomes of its standard output ('pipe' keeps it for
/// stdout(), 'inherit', 'ignore'). A server that dies mid-test (a crash, a sanitizer report) says why on stderr,
/// instead of its clients' "other side closed"; every server still running is killed when this process exits.
export async function startHttpServer(server, args, { name = 'cairn-mcp', stdout = 'pipe' } = {}) {
  const child = spawn(server, ['--http', '127.0.0.1:0', ...args], { stdio: ['ignore', stdout, 'pipe'] });
  children.push(child);
  let err = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      err += d.toString();
      const m = /on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`${name} exited with ${code}: ${err}`)));
  });
  child.on('exit', (code, signal) => {
    if (code || (signal && signal !== 'SIGTERM' && signal !== 'SIGKILL')) {
      console.error(`${name} exited with ${code ?? signal}:\n${err}`);
    }
  });
  let out = '';
  if (stdout === 'pipe') child.stdout.on('data', (d) => { out += d.toString(); });
  return { url, child, stdout: () => out, stderr: () => err };
}

/// Stops a server started by startHttpServer (SIGTERM) and resolves once it has exited.
export async function stopServer(srv) {
  srv.child.kill('SIGTERM');
  await new Promise((resolve) => srv.child.on('exit', resolve));
}

/// Tool calls through an SDK client (either SDK), each counted in tally. `label` starts every failure message.
/// - call(name, args): must succeed with one text content whose JSON is the structuredContent; returns that.
/// - fails(name, args, pattern): must be an error result (isError, no structuredContent: the error does not follow
///   the tool's outputSchema) whose error message matches `pattern`; returns the message.
export function toolCalls(client, label = '') {
  const prefix = label ? `${label}: ` : '';
  return {
    async call(name, args = {}) {
      const r = await client.callTool({ name, arguments: args });
      assert.equal(r.isError, false, `${prefix}${name} failed: ${JSON.stringify(r.content)}`);
      assert.equal(r.content.length, 1, `${prefix}${name}`);
      assert.equal(r.content[0].type, 'text', `${prefix}${name}`);
      assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent, `${prefix}${name}`);
      tally.checks++;
      return r.structuredContent;
    },
    async fails(name, args, pattern) {
      const r = await client.callTool({ name, arguments: args });
      assert.equal(r.isError, true, `${prefix}${name} ${JSON.stringify(args).slice(0, 200)} should fail`);
      assert.equal(r.structuredContent, undefined, `${prefix}${name}: a failed call carries no structuredContent`);
      const { error } = JSON.parse(r.content[0].text);
      assert.match(error, pattern);
      tally.checks++;
      return error;
    },
  };
}

/// The `_meta` a raw 2026-07-28 request carries.
export const modernMeta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                            'io.modelcontextprotocol/clientCapabilities': {} };

/// The body of a raw 2026-07-28 request (id 1).
export function modernBody(method, params = {}) {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta } });
}

/// The headers of a raw 2026-07-28 request over HTTP, with `extra` added (Mcp-Method, Mcp-Name, Authorization, ...).
export function modernHeaders(extra = {}) {
  return { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
           'MCP-Protocol-Version': '2026-07-28', ...extra };
}
