// cairn-mcp --http as an OAuth resource server, end to end: key pairs made here with openssl (RSA and EC P-256),
// tokens signed with them (and with a key the server does not know), every refusal (no token, expired, wrong
// audience, wrong issuer, wrong signature, HS256 signed with the public key, no tenant claim, too few scopes), the
// RFC 9728 metadata, and two tenants through the official SDKs on one server that never see each other.
//
//   node client-auth.mjs <path-to-cairn-mcp> <path-to-openssl> <workspace-dir>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';

import { commandLine, freshDir, modernBody, modernHeaders, startHttpServer, stopServer, tally, toolCalls }
  from './support.mjs';

const [server, openssl, dirArg] = commandLine('client-auth.mjs', 'path-to-cairn-mcp', 'path-to-openssl',
                                              'workspace-dir');
const dir = freshDir(dirArg);
const file = (name) => path.join(dir, name);
const ssl = (...args) => execFileSync(openssl, args, { stdio: ['ignore', 'ignore', 'pipe'] });
ssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', file('rsa.key'));
ssl('pkey', '-in', file('rsa.key'), '-pubout', '-out', file('rsa.pub'));
ssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file('ec.key'));
ssl('pkey', '-in', file('ec.key'), '-pubout', '-out', file('ec.pub'));
ssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', file('other.key'));

const audience = 'https://cairn.test/mcp';
const issuer = 'https://issuer.test';
const b64url = (b) => Buffer.from(b).toString('base64url');
function sign(alg, keyFile, claims) {
  const head = b64url(JSON.stringify({ alg, typ: 'JWT' }));
  const body = b64url(JSON.stringify(claims));
  const data = Buffer.from(`${head}.${body}`);
  let sig;
  if (alg === 'HS256') {
    sig = crypto.createHmac('sha256', fs.readFileSync(keyFile)).update(data).digest();
  } else {
    sig = crypto.sign('sha256', data, { key: fs.readFileSync(keyFile), dsaEncoding: 'ieee-p1363' });
  }
  return `${head}.${body}.${b64url(sig)}`;
}
const now = Math.floor(Date.now() / 1000);
const claims = (extra = {}) => ({ iss: issuer, aud: audience, exp: now + 600, iat: now, sub: 'agent',
                                  scope: 'cairn:read cairn:write cairn:delete', ...extra });
const tokenA = sign('RS256', file('rsa.key'), claims({ tenant: 'tenant-a' }));
const tokenB = sign('ES256', file('ec.key'), claims({ tenant: 'tenant-b', aud: ['other', audience] }));

const srv = await startHttpServer(server, ['--workspace', dir, '--auth-key', file('rsa.pub'), '--auth-key',
                                           file('ec.pub'), '--auth-audience', audience, '--auth-issuer', issuer,
                                           '--authorization-server', issuer]);
const { url } = srv;
assert.match(srv.stderr(), /to the tenant of each token/);

async function post(token, method, params = {}, extraHeaders = {}) {
  const headers = modernHeaders({ 'Mcp-Method': method, ...extraHeaders });
  if (params.name) headers['Mcp-Name'] = params.name;
  if (token) headers.Authorization = `Bearer ${token}`;
  const r = await fetch(url, { method: 'POST', headers, body: modernBody(method, params) });
  tally.checks++;
  return { status: r.status, auth: r.headers.get('www-authenticate'), body: await r.json() };
}
const metadataUrl = 'https://cairn.test/.well-known/oauth-protected-resource/mcp';

// No token: 401 pointing at the metadata, with no error (RFC 6750 §3.1).
let r = await post(null, 'tools/list');
assert.equal(r.status, 401);
assert.equal(r.auth, `Bearer resource_metadata="${metadataUrl}"`);
// The metadata (RFC 9728), served at the well-known path of the endpoint.
const prm = await (await fetch(url.replace('/mcp', '/.well-known/oauth-protected-resource/mcp'))).json();
assert.deepEqual(prm, { resource: audience, authorization_servers: [issuer], bearer_methods_supported: ['header'],
                        scopes_supported: ['cairn:read', 'cairn:write', 'cairn:delete'], resource_name: 'cairn' });
tally.checks++;
// Every bad token is 401 invalid_token, saying why.
const refused = [
  ['expired', sign('RS256', file('rsa.key'), claims({ tenant: 'a', exp: now - 3600 })), /expired/],
  ['no exp', sign('RS256', file('rsa.key'), claims({ tenant: 'a', exp: undefined })), /no exp/],
  ['wrong audience', sign('RS256', file('rsa.key'), claims({ tenant: 'a', aud: 'https://elsewhere/mcp' })),
   /audience/],
  ['wrong issuer', sign('ES256', file('ec.key'), claims({ tenant: 'a', iss: 'https://evil.test' })), /issuer/],
  ['unknown key', sign('RS256', file('other.key'), claims({ tenant: 'a' })), /signature matches no configured key/],
  ['HS256 with the public key as secret', sign('HS256', file('rsa.pub'), claims({ tenant: 'a' })),
   /RS256 or ES256|signature/],
  ['no tenant', sign('RS256', file('rsa.key'), claims()), /names no tenant \(claim 'tenant'\)/],
  ['tampered', tokenA.replace(/\.[^.]+\./, `.${b64url(JSON.stringify(claims({ tenant: 'tenant-b' })))}.`),
   /signature/],
  ['garbage', 'not.a.jwt', /signature/],
];
for (const [what, token, pattern] of refused) {
  r = await post(token, 'tools/list');
  assert.equal(r.status, 401, what);
  assert.match(r.auth, /^Bearer resource_metadata="[^"]+", error="invalid_token", error_description="/, what);
  assert.match(r.auth, pattern, what);
}
r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Basic eDp5' },
                       body: '{}' });
assert.equal(r.status, 401);
assert.match(r.headers.get('www-authenticate'), /error="invalid_request"/);
tally.checks++;

// Too few scopes: a read-only token lists only the read tools and gets 403 insufficient_scope for a write.
const reader = sign('ES256', file('ec.key'), claims({ tenant: 'tenant-a', scope: 'cairn:read' }));
r = await post(reader, 'tools/list');
assert.equal(r.status, 200);
assert.deepEqual(r.body.result.tools.map((t) => t.name),
                 ['artifact_fetch', 'artifact_list', 'artifact_versions', 'search_artifacts']);
r = await post(reader, 'tools/call', { name: 'artifact_store', arguments: { type: 'data', title: 'x', value: 1 } });
assert.equal(r.status, 403);
assert.equal(r.auth, `Bearer error="insufficient_scope", scope="cairn:write", resource_metadata="${metadataUrl}"`);
assert.match(r.body.error.message, /insufficient_scope: tool 'artifact_store' needs scope 'cairn:write'/);
const writer = sign('RS256', file('rsa.key'), claims({ tenant: 'tenant-a', scope: 'cairn:read cairn:write' }));
r = await post(writer, 'tools/call', { name: 'artifact_delete', arguments: { id: 'x' } });
assert.equal(r.status, 403);
assert.match(r.auth, /scope="cairn:delete"/);

// Two tenants through the SDKs: tenant-a with the v1 SDK (2025-11-25, a session), tenant-b with the v2 SDK pinned
// to 2026-07-28; the same artifact id in each, neither sees the other's.
const a = new ClientV1({ name: 'tenant-a', version: '1' });
const ta = new HttpV1(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${tokenA}` } } });
await a.connect(ta);
const b = new ClientV2({ name: 'tenant-b', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await b.connect(new HttpV2(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${tokenB}` } } }));
const ca = toolCalls(a, 'tenant-a');
const cb = toolCalls(b, 'tenant-b');
await ca.call('artifact_store', { id: 'plan', type: 'document', title: 'A', value: 'secret of a' });
await cb.fails('artifact_fetch', { id: 'plan' }, /not found in tenant 'tenant-b'/);
assert.deepEqual((await cb.call('artifact_list', {})).artifacts, []);
assert.deepEqual((await cb.call('search_artifacts', { query: 'secret' })).hits, []);
assert.equal((await cb.call('artifact_store', { id: 'plan', type: 'document', title: 'B', value: 'of b' })).version, 1);
assert.equal((await ca.call('artifact_fetch', { id: 'plan' })).value, 'secret of a');
assert.equal((await cb.call('artifact_fetch', { id: 'plan' })).value, 'of b');
// tenant-a's session, presented with tenant-b's token, reads like an unknown session.
const hijack = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json',
                                                              Accept: 'application/json, text/event-stream',
                                                              'Mcp-Session-Id': ta.sessionId,
                                                              'MCP-Protocol-Version': '2025-11-25',
                                                              Authorization: `Bearer ${tokenB}` },
                                  body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }) });
assert.equal(hijack.status, 404);
tally.checks++;
await a.close();
await b.close();
await stopServer(srv);
console.log(`ok: ${tally.checks} checks of cairn-mcp --http --auth-key`);
