// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package-lock.json; it needs
// Node >= 22, which npm's `node` package brings) against `cairn-mcp --http 127.0.0.1:0`, with the scenarios that do
// not apply to cairn-mcp listed in expected-failures.yml. The suite exits non-zero when another scenario fails or a
// listed one starts passing.
//
//   node run.mjs <path-to-cairn-mcp> <workspace-dir>     (run by ctest with this folder's node_modules/.bin/node)
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { commandLine, freshDir, startHttpServer, stopServer } from '../client/support.mjs';

const [server, workspaceArg] = commandLine('run.mjs', 'path-to-cairn-mcp', 'workspace-dir');
const here = path.dirname(fileURLToPath(import.meta.url));
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  console.error(`the conformance suite needs Node >= 22 (this is ${process.version})`);
  process.exit(2);
}
const workspace = freshDir(workspaceArg);

const srv = await startHttpServer(server, ['--workspace', workspace, '--tenant', 'conformance'],
                                  { stdout: 'inherit' });
const cli = path.join(here, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const suite = spawn(process.execPath, [cli, 'server', '--url', srv.url, '--expected-failures',
                                       path.join(here, 'expected-failures.yml')], { stdio: 'inherit' });
const code = await new Promise((resolve) => suite.on('exit', (c) => resolve(c ?? 1)));
await stopServer(srv);
process.exit(code);
