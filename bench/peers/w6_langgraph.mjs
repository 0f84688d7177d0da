// W6 (issue 27) on LangGraph's InMemoryStore, the JS peer of cairn's search: the corpus, the queries and the vectors
// of bench/search_bench.cpp, made here bit for bit (the same xorshift32 draws, the same words, the same
// feature-hashing embedder), stored with `index: {dims: 384, fields: ["text"], embeddings}` whose embeddings hand
// back those precomputed vectors (no model call). Measured: put() per artifact (time to index), the heap each
// stored artifact keeps, and `store.search([tenant], {query, limit: 10})` per query (top-10 similarity), alone and
// with `filter: {bucket: {$lt: p}}` (p = 1, 10, 50), best of 3 rounds of the 200 queries. Times are the process's
// CPU time (as search_bench's), the wall time beside it.
//
// Run: `cd bench/peers && npm install && node --expose-gc w6_langgraph.mjs [search_bench.json] [--out FILE]` (Node 20;
// not part of the tests). Given search_bench's JSON result, it checks that its vectors are the same (the
// fingerprint counter of BM_W6IndexMem_Floor) and stops if not. --out writes the rows in Google Benchmark's JSON
// shape (BM_W6IndexMem_LangGraph, BM_W6Bytes_LangGraph, BM_W6Similar_LangGraph, BM_W6Filtered_LangGraph/<p>) for
// bench/ratios.py, which reads both files: `python3 bench/ratios.py search_bench.json w6_langgraph.json`.
// CAIRN_W6_ARTIFACTS sets the corpus size as for the C++ bench (default 100,000).
import { readFileSync, writeFileSync } from "node:fs";
import { InMemoryStore } from "@langchain/langgraph";

import { kTenants, kDim, kQueries, kLimit, N, embedText, docOf, queryOf, fingerprint } from "./w6_corpus.mjs";

const args = process.argv.slice(2);
const outAt = args.indexOf("--out");
const outFile = outAt >= 0 ? args[outAt + 1] : null;
const checkFile = args.find((a, k) => !a.startsWith("--") && (outAt < 0 || k !== outAt + 1)) ?? null;

const heap = async () => {
  for (let k = 0; k < 3; ++k) { globalThis.gc?.(); await new Promise((done) => setTimeout(done, 20)); }
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const heap0 = await heap(); // before the corpus: what the store keeps of it is counted below, as cairn's store is

// The corpus and its vectors, keyed by the text LangGraph hands its embeddings (the indexed field, or the query).
const docs = [];
const vectors = new Map();
let print = 2166136261;
for (let i = 0; i < N; ++i) {
  const d = docOf(i);
  const v = embedText(`${d.title}\n${d.description}\n${d.body}`);
  print = fingerprint(v, print);
  vectors.set(d.body, Array.from(v));
  docs.push(d);
}
if (vectors.size !== N) throw new Error(`two artifacts have the same text (${vectors.size} of ${N})`);
const queries = Array.from({ length: kQueries }, (_, q) => queryOf(q));
for (const q of queries) {
  print = fingerprint(q.vector, print);
  vectors.set(q.text, Array.from(q.vector));
}
console.log(`w6 corpus: ${N} artifacts, ${kQueries} queries, vector fingerprint ${print}`);
if (checkFile) {
  const runs = JSON.parse(readFileSync(checkFile, "utf8")).benchmarks;
  const floor = runs.find((b) => b.name.startsWith("BM_W6IndexMem_Floor"));
  if (!floor) throw new Error(`${checkFile} has no BM_W6IndexMem_Floor row to check the vectors against`);
  if (floor.fingerprint !== print || floor.artifacts !== N) {
    throw new Error(`the vectors differ from search_bench's: fingerprint ${print} for ${N} artifacts here, ` +
                    `${floor.fingerprint} for ${floor.artifacts} there`);
  }
  console.log(`w6 corpus: the same vectors as ${checkFile}`);
}
const lookup = (text) => {
  const v = vectors.get(text);
  if (!v) throw new Error(`no precomputed vector for a text of ${text.length} characters`);
  return v;
};
const embeddings = {
  embedDocuments: async (texts) => texts.map(lookup),
  embedQuery: async (text) => lookup(text),
};

const rows = [];
// real_time is the process's CPU time, as search_bench's in-process rows are its thread's (the machine is shared);
// the wall time is the counter wall_us.
const row = (name, wallUs, cpuUs, iterations, extra = {}) =>
  rows.push({ name, run_name: name, run_type: "iteration", iterations, real_time: cpuUs, cpu_time: cpuUs, wall_us: wallUs, time_unit: "us", ...extra });

// Time to index: every artifact put into its tenant's namespace, embedded through the index (a lookup here).
const store = new InMemoryStore({ index: { dims: kDim, fields: ["text"], embeddings } });
let c0 = process.cpuUsage(), t0 = process.hrtime.bigint();
for (const d of docs) {
  await store.put([d.tenant], d.id,
                  { type: d.type, title: d.title, description: d.description, text: d.body, bucket: d.bucket });
}
let wall = Number(process.hrtime.bigint() - t0) / 1000, cpu = process.cpuUsage(c0);
row("BM_W6IndexMem_LangGraph", wall / N, (cpu.user + cpu.system) / N, 1, { artifacts: N });
console.log(`langgraph index: ${((cpu.user + cpu.system) / N).toFixed(3)} us cpu, ${(wall / N).toFixed(3)} us wall per artifact`);
// The heap the store keeps: its items, their values and vectors (V8's heap and array buffers, after a GC when node
// runs with --expose-gc), once the script has let go of its own references to the corpus and the artifacts' vectors.
for (const d of docs) vectors.delete(d.body);
docs.length = 0;
const held = (await heap()) - heap0;
row("BM_W6Bytes_LangGraph", 0, 0, 1, { artifacts: N, bytes_per_artifact: held / N, gc: globalThis.gc ? 1 : 0 });
console.log(`langgraph heap: ${(held / N).toFixed(0)} bytes per artifact${globalThis.gc ? "" : " (no --expose-gc: not collected first)"}`);

// Top-10 similarity per query, best of 3 rounds of the 200.
let best = null;
let found = 0;
for (let round = 0; round < 3; ++round) {
  c0 = process.cpuUsage(); t0 = process.hrtime.bigint();
  found = 0;
  for (const q of queries) found += (await store.search([q.tenant], { query: q.text, limit: kLimit })).length;
  wall = Number(process.hrtime.bigint() - t0) / 1000; cpu = process.cpuUsage(c0);
  const r = { wall: wall / kQueries, cpu: (cpu.user + cpu.system) / kQueries };
  if (!best || r.cpu < best.cpu) best = r;
}
row("BM_W6Similar_LangGraph", best.wall, best.cpu, kQueries, { hits_per_query: found / kQueries });
console.log(`langgraph similarity: ${best.cpu.toFixed(1)} us cpu, ${best.wall.toFixed(1)} us wall per query (${(found / kQueries).toFixed(1)} hits)`);

// The same with the filter `bucket < p` (p % of the tenant passes), as W6Filtered/<p>: LangGraph filters the
// tenant's items on their value, then ranks what passes. Best of 3 rounds of the 200.
for (const p of [1, 10, 50]) {
  let bestFiltered = null;
  let passed = 0;
  for (let round = 0; round < 3; ++round) {
    c0 = process.cpuUsage(); t0 = process.hrtime.bigint();
    passed = 0;
    for (const q of queries) {
      const filter = { bucket: { $lt: p } };
      passed += (await store.search([q.tenant], { query: q.text, filter, limit: kLimit })).length;
    }
    wall = Number(process.hrtime.bigint() - t0) / 1000; cpu = process.cpuUsage(c0);
    const r = { wall: wall / kQueries, cpu: (cpu.user + cpu.system) / kQueries };
    if (!bestFiltered || r.cpu < bestFiltered.cpu) bestFiltered = r;
  }
  row(`BM_W6Filtered_LangGraph/${p}`, bestFiltered.wall, bestFiltered.cpu, kQueries,
      { hits_per_query: passed / kQueries });
  console.log(`langgraph filtered ${p} %: ${bestFiltered.cpu.toFixed(1)} us cpu, ` +
              `${bestFiltered.wall.toFixed(1)} us wall per query`);
}

if (outFile) writeFileSync(outFile, JSON.stringify({ context: { peer: "@langchain/langgraph InMemoryStore", node: process.version }, benchmarks: rows }, null, 1));
