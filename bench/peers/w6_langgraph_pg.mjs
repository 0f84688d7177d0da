// W6's words rows on LangGraph.js's PostgresStore (@langchain/langgraph-checkpoint-postgres), the peer of cairn's
// PostgreSQL store for the modes it has without pgvector: the same corpus as bench/search_bench.cpp (w6_corpus.mjs),
// each artifact put into its tenant's namespace with no index (its vector search needs the pgvector extension, which
// Debian 12 does not package), then `store.search([tenant], {query: two words, filter: {type}, limit: 10})` per W6
// query: PostgresStore's text search (to_tsvector of each candidate's value, plainto_tsquery, ts_rank), with the
// type as W6Words's query has it. Best of 3 rounds of the 200 queries (1 round with CAIRN_W6_TENANTS=1), wall time:
// the work runs in the server, as the C++ PostgreSQL rows are.
//
// Run: `cd bench/peers && npm install && node w6_langgraph_pg.mjs <conninfo URL> [--out FILE]`, e.g.
// `postgresql://postgres@127.0.0.1:5432/postgres` (Node 20; not part of the tests). It writes into a schema of its
// own, `cairn_w6_langgraph`, dropped first. --out writes BM_W6IndexPg_LangGraph (time to put an artifact) and
// BM_W6WordsPg_LangGraph in Google Benchmark's JSON shape for bench/ratios.py.
import { writeFileSync } from "node:fs";
import pg from "pg";
import { PostgresStore } from "@langchain/langgraph-checkpoint-postgres/store";
import { kTenants, kQueries, kLimit, N, docOf, queryOf } from "./w6_corpus.mjs";

const args = process.argv.slice(2);
const outAt = args.indexOf("--out");
const outFile = outAt >= 0 ? args[outAt + 1] : null;
const url = args.find((a, k) => !a.startsWith("--") && (outAt < 0 || k !== outAt + 1));
if (!url) throw new Error("usage: node w6_langgraph_pg.mjs <postgresql:// URL> [--out FILE]");
const schema = "cairn_w6_langgraph";

const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
await admin.end();

const store = new PostgresStore({ connectionOptions: url, schema });
await store.setup();
const rows = [];
const row = (name, wallUs, iterations, extra = {}) =>
  rows.push({ name, run_name: name, run_type: "iteration", iterations, real_time: wallUs, cpu_time: wallUs,
              time_unit: "us", ...extra });

// Time to index: every artifact put, 100 to a batch (one round trip each).
let t0 = process.hrtime.bigint();
for (let i = 0; i < N; i += 100) {
  const ops = [];
  for (let k = i; k < Math.min(N, i + 100); ++k) {
    const d = docOf(k);
    ops.push({ namespace: [d.tenant], key: d.id,
               value: { type: d.type, title: d.title, description: d.description, text: d.body, bucket: d.bucket } });
  }
  await store.batch(ops);
}
let wall = Number(process.hrtime.bigint() - t0) / 1000;
row("BM_W6IndexPg_LangGraph", wall / N, 1, { artifacts: N });
console.log(`langgraph postgres index: ${(wall / N).toFixed(1)} us wall per artifact`);

const queries = Array.from({ length: kQueries }, (_, q) => queryOf(q));
const rounds = kTenants === 1 ? 1 : 3;
let best = null;
let found = 0;
for (let round = 0; round < rounds; ++round) {
  t0 = process.hrtime.bigint();
  found = 0;
  for (const q of queries) {
    found += (await store.search([q.tenant], { query: q.words, filter: { type: q.type }, limit: kLimit })).length;
  }
  wall = Number(process.hrtime.bigint() - t0) / 1000 / kQueries;
  if (best === null || wall < best) best = wall;
}
row("BM_W6WordsPg_LangGraph", best, kQueries, { hits_per_query: found / kQueries });
console.log(`langgraph postgres words: ${best.toFixed(1)} us wall per query (${(found / kQueries).toFixed(1)} hits)`);
await store.stop?.();
if (outFile) {
  writeFileSync(outFile, JSON.stringify({ context: { peer: "@langchain/langgraph-checkpoint-postgres PostgresStore",
                                                     node: process.version }, benchmarks: rows }, null, 1));
}
