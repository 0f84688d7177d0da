// Checks cairn's A2A JSON against the A2A JavaScript SDK (@a2a-js/sdk, pinned in package-lock.json), as an A2A peer
// would see it:
//   1. cairn's v1.0 artifacts and references, parsed by the SDK's own v1.0 types, lose nothing;
//   2. the SDK's Artifact.toJSON of each part kind is read by cairn's from_a2a into the record it describes;
//   3. the SDK's server (started here on 127.0.0.1, stopped at the end) accepts a message/send carrying cairn's
//      references and parts, in v1.0 and through its v0.3 compatibility layer, and what it sends back reads into
//      the same records and references again.
//
//   node sdk.mjs <path-to-cairn_a2a_peer>
//
// Any mismatch throws (node:assert) and the process exits non-zero. Run by ctest (tests/artifact/CMakeLists.txt).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

import express from 'express';
import { Artifact, Part, Role, A2A_VERSION_HEADER } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const [peer] = process.argv.slice(2);
if (!peer) {
  console.error('usage: node sdk.mjs <path-to-cairn_a2a_peer>');
  process.exit(2);
}
const URI = 'urn:cairn:a2a:v1';

let checks = 0;
function equal(actual, expected, message) {
  assert.deepStrictEqual(actual, expected, message);
  checks++;
}

function cairn(command, input) {
  const run = spawnSync(peer, [command], { input: input === undefined ? '' : JSON.stringify(input), encoding: 'utf8' });
  assert.equal(run.status, 0, `cairn_a2a_peer ${command} failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

// cairn's record as it should come back from A2A: what from_a2a gives for the artifact to_a2a made.
function readArtifacts(artifacts) {
  return cairn('read', artifacts.map((artifact) => ({ artifact })));
}

// The file name a peer should see for a record: metadata.filename, else the URL's last path segment, decoded.
function expectedFilename(record) {
  if (typeof record.metadata?.filename === 'string') return record.metadata.filename;
  if (!record.storage_url) return undefined;
  const path = new URL(record.storage_url).pathname;
  return decodeURIComponent(path.slice(path.lastIndexOf('/') + 1));
}

const written = cairn('write');
assert.ok(written.records.length >= 9 && written.references.length === 2);

// ---------------------------------------------------------------------------------------------------------------
// 1. cairn's v1.0 output through the SDK's v1.0 types.
for (const { name, record, v1 } of written.records) {
  const artifact = Artifact.fromJSON(v1);
  equal(Artifact.toJSON(artifact), v1, `${name}: the SDK's Artifact round trip changes cairn's artifact`);
  equal(artifact.artifactId, record.id, `${name}: artifactId`);
  equal(artifact.extensions, [URI], `${name}: extensions`);
  equal(artifact.metadata[URI].id, record.id, `${name}: the record's id in the extension metadata`);
  equal(artifact.metadata[URI].version, record.version, `${name}: the record's version in the extension metadata`);
  assert.ok(!JSON.stringify(v1).includes(record.tenant_id), `${name}: the tenant must not leave cairn`);
  const parts = [...artifact.parts];
  equal(parts.every((p) => p.content !== undefined), true, `${name}: a part without content`);
  const hasValue = record.value !== undefined && record.value !== null;
  equal(parts.length, (hasValue ? 1 : 0) + (record.storage_url ? 1 : 0), `${name}: one part per content`);
  const fileOnValue = !record.storage_url;
  if (hasValue) {
    const p = parts.shift();
    if (record.metadata?.encoding === 'base64') {
      equal(p.content.$case, 'raw', `${name}: bytes as raw`);
      equal(Buffer.compare(p.content.value, Buffer.from(record.value, 'base64')), 0, `${name}: the bytes`);
    } else if (typeof record.value === 'string') {
      equal(p.content, { $case: 'text', value: record.value }, `${name}: text`);
    } else {
      equal(p.content, { $case: 'data', value: record.value }, `${name}: data, unwrapped`);
    }
    equal(p.mediaType, fileOnValue ? record.mime_type ?? '' : '', `${name}: the value part's mediaType`);
    equal(p.filename, fileOnValue ? expectedFilename(record) ?? '' : '', `${name}: the value part's filename`);
  }
  if (record.storage_url) {
    const p = parts.shift();
    equal(p.content, { $case: 'url', value: record.storage_url }, `${name}: url`);
    equal(p.mediaType, record.mime_type ?? '', `${name}: mediaType`);
    equal(p.filename, expectedFilename(record), `${name}: filename`);
    assert.notEqual(p.filename, record.title, `${name}: the title is not a file name`);
  }
}
for (const { ref, v1 } of written.references) {
  const part = Part.fromJSON(v1);
  equal(part.content, { $case: 'data', value: ref }, 'a reference is a data part holding the id and title');
  equal(part.metadata, { [URI]: 'reference' }, "a reference is marked with cairn's extension");
  equal(Part.toJSON(part), v1, "the SDK's Part round trip changes cairn's reference");
}
// And back: every record comes out of from_a2a as it went in.
const again = readArtifacts(written.records.map((r) => r.v1));
written.records.forEach((r, i) => equal(again[i], { record: r.record }, `${r.name}: from_a2a(to_a2a(r)) == r`));

// ---------------------------------------------------------------------------------------------------------------
// 2. The SDK's own v1.0 artifacts, one per part kind, read by from_a2a.
function sdkArtifact(artifactId, name, part) {
  return Artifact.toJSON({
    artifactId, name, description: '', metadata: undefined, extensions: [],
    parts: [{ metadata: undefined, filename: '', mediaType: '', ...part }],
  });
}
const sdkCases = [
  {
    json: sdkArtifact('sdk-text', 'Greeting', { content: { $case: 'text', value: 'Hello' }, mediaType: 'text/plain' }),
    expect: { type: 'document', title: 'Greeting', value: 'Hello', mime_type: 'text/plain' },
  },
  {
    json: sdkArtifact('sdk-data', 'Rows', { content: { $case: 'data', value: { rows: [1, 2] } } }),
    expect: { type: 'structured', title: 'Rows', value: { rows: [1, 2] } },
  },
  {
    json: sdkArtifact('sdk-list', 'List', { content: { $case: 'data', value: ['a', 1, null] } }),
    expect: { type: 'structured', title: 'List', value: ['a', 1, null] },
  },
  {
    json: sdkArtifact('sdk-url', 'Report', {
      content: { $case: 'url', value: 'https://cdn.example.com/r/9f2c' }, filename: 'report.pdf',
      mediaType: 'application/pdf',
    }),
    expect: {
      type: 'file', title: 'Report', storage_url: 'https://cdn.example.com/r/9f2c', mime_type: 'application/pdf',
      metadata: { filename: 'report.pdf' },
    },
  },
  {
    json: sdkArtifact('sdk-raw', 'Bytes', {
      content: { $case: 'raw', value: Buffer.from('hello bytes') }, filename: 'h.bin',
      mediaType: 'application/octet-stream',
    }),
    expect: {
      type: 'file', title: 'Bytes', value: Buffer.from('hello bytes').toString('base64'),
      mime_type: 'application/octet-stream', metadata: { filename: 'h.bin', encoding: 'base64' },
    },
  },
];
const sdkRead = readArtifacts(sdkCases.map((c) => c.json));
sdkCases.forEach((c, i) => {
  const got = sdkRead[i];
  assert.ok(got.record, `${c.json.artifactId}: from_a2a refused the SDK's artifact: ${got.error}`);
  for (const [key, want] of Object.entries(c.expect)) equal(got.record[key], want, `${c.json.artifactId}.${key}`);
  equal(got.record.id, c.json.artifactId, `${c.json.artifactId}: id`);
  if (!c.expect.metadata) equal(got.record.metadata, {}, `${c.json.artifactId}: metadata`);
});

// ---------------------------------------------------------------------------------------------------------------
// 3. The SDK's server: message/send with cairn's references and parts, v1.0 and v0.3.
const received = [];
const executor = {
  async execute(ctx, bus) {
    const message = ctx.userMessage;
    received.push(message);
    bus.publish(AgentEvent.message({
      messageId: `echo-${received.length}`, contextId: ctx.contextId, taskId: '', role: Role.ROLE_AGENT,
      parts: message.parts, metadata: message.metadata, extensions: [], referenceTaskIds: [],
    }));
    bus.finished();
  },
  async cancelTask() {},
};
const app = express();
const server = await new Promise((resolve) => {
  const s = app.listen(0, '127.0.0.1', () => resolve(s));
});
try {
  const url = `http://127.0.0.1:${server.address().port}/a2a/jsonrpc`;
  const card = {
    name: 'cairn echo', description: 'Echoes the parts it is sent (cairn A2A test)', version: '1.0.0',
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
    ],
    provider: undefined,
    capabilities: {
      streaming: false, pushNotifications: false, extendedAgentCard: false,
      extensions: [{ uri: URI, description: 'cairn records and references', required: false, params: undefined }],
    },
    securitySchemes: {}, securityRequirements: [], signatures: [],
    defaultInputModes: ['text/plain', 'application/json'], defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{
      id: 'echo', name: 'Echo', description: 'Echoes parts', tags: ['echo'], examples: [], inputModes: [],
      outputModes: [], securityRequirements: [],
    }],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/a2a/jsonrpc', express.json({ limit: '10mb' }),
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication,
                     legacyCompat: { enabled: true } }));

  async function rpc(method, params, version) {
    const headers = { 'Content-Type': 'application/json' };
    if (version) headers[A2A_VERSION_HEADER] = version;
    const res = await fetch(url, {
      method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: checks, method, params }),
    });
    const body = await res.json();
    assert.equal(body.error, undefined, `${method} (${version ?? '0.3'}) refused: ${JSON.stringify(body.error)}`);
    checks++;
    return body.result;
  }

  // v1.0: every reference and every part of every record in one message.
  const v1Parts = [...written.references.map((r) => r.v1), ...written.records.flatMap((r) => r.v1.parts)];
  const v1Result = await rpc('SendMessage', {
    message: { messageId: 'm-v1', role: 'ROLE_USER', parts: v1Parts, extensions: [URI] },
  }, '1.0');
  equal(v1Result.message.parts, v1Parts, 'the SDK server sends back in v1.0 exactly the parts cairn sent');
  const v1Refs = cairn('read', v1Result.message.parts.slice(0, 2).map((part) => ({ part })));
  written.references.forEach((r, i) => equal(v1Refs[i], { part: r.v1 }, 'a reference survives the SDK server (v1.0)'));

  // v0.3 through the compatibility layer: cairn's v0.3 references and each record's v0.3 parts, one message per
  // record (so its artifact can be rebuilt from what the server received and sent back).
  const v03Refs = await rpc('message/send', {
    message: { kind: 'message', messageId: 'm-v03-refs', role: 'user', parts: written.references.map((r) => r.v03) },
  });
  equal(v03Refs.kind, 'message', 'the v0.3 answer is a message');
  const backRefs = cairn('read', v03Refs.parts.map((part) => ({ part })));
  written.references.forEach((r, i) => equal(backRefs[i], { part: r.v1 },
                                              'a reference survives the SDK server (v0.3)'));
  const receivedRefs = received.at(-1).parts.map((p) => Part.toJSON(p));
  equal(receivedRefs, written.references.map((r) => r.v1), 'the SDK reads a v0.3 reference as cairn writes it in v1.0');

  for (const { name, record, v03 } of written.records) {
    const answer = await rpc('message/send', {
      message: { kind: 'message', messageId: `m-v03-${record.id}`, role: 'user', parts: v03.parts,
                 metadata: v03.metadata, extensions: v03.extensions },
    });
    // What the server's agent received, in v1.0 terms, and what it sent back, in v0.3 terms (the SDK's own
    // translation, data_part_compat and all): both are the record again.
    const inV1 = { ...v03, parts: received.at(-1).parts.map((p) => Part.toJSON(p)) };
    const backV03 = { ...v03, parts: answer.parts };
    const [fromV1, fromV03] = readArtifacts([inV1, backV03]);
    equal(fromV1, { record }, `${name}: cairn's v0.3 artifact, read by the SDK's compatibility layer`);
    equal(fromV03, { record }, `${name}: the SDK's v0.3 translation back`);
  }
} finally {
  await new Promise((resolve) => server.close(resolve));
}
console.log(`cairn A2A: ${checks} checks against @a2a-js/sdk passed`);
