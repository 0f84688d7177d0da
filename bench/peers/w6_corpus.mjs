// W6's corpus, queries and vectors as bench/search_bench.cpp makes them, bit for bit (the same xorshift32 draws, the
// same words, the same feature-hashing embedder): shared by the LangGraph.js peers (w6_langgraph.mjs for its
// InMemoryStore, w6_langgraph_pg.mjs for its PostgresStore). CAIRN_W6_TENANTS and CAIRN_W6_ARTIFACTS as for the C++
// bench.
export const kTenants = Math.min(1000, Math.max(1, Number(process.env.CAIRN_W6_TENANTS ?? 100)));
export const kDim = 384, kVocabulary = 5000, kQueries = 200, kLimit = 10;
const kTypes = ["document", "dataset", "report"];
const requested = Number(process.env.CAIRN_W6_ARTIFACTS ?? 100000);
export const N = Math.max(kTenants, requested - (requested % kTenants));

class Rng { // xorshift32, seeded per (stream, item) as in search_bench.cpp
  constructor(stream, item) {
    this.x = (Math.imul(item + 1, 0x9e3779b1) ^ Math.imul(stream, 0x85ebca77)) >>> 0;
    if (this.x === 0) this.x = 1;
    for (let k = 0; k < 4; ++k) this.next();
  }
  next() {
    let x = this.x;
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    this.x = x >>> 0;
    return this.x;
  }
}
function wordOf(k) {
  const cons = "bdfgklmnprstvz", vows = "aeiou";
  let w = "";
  for (let n = k + 70; n !== 0; n = Math.floor(n / 70)) w += cons[Math.floor((n % 70) / 5)] + vows[(n % 70) % 5];
  return w;
}
const vocabulary = Array.from({ length: kVocabulary }, (_, k) => wordOf(k));
function drawWord(r) {
  const a = r.next() % kVocabulary;
  const b = r.next() % kVocabulary;
  return vocabulary[Math.floor((a * b) / kVocabulary)];
}
function words(r, n) {
  const out = [];
  for (let k = 0; k < n; ++k) out.push(drawWord(r));
  return out.join(" ");
}
function fnv1a(s, h = 2166136261) {
  for (let i = 0; i < s.length; ++i) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return h;
}
// The host's embedder: feature hashing of the words, L2-normalised, rounded to float32 like the C++ floats.
export function embedText(text) {
  const acc = new Float64Array(kDim);
  for (const w of text.split(/[^a-z0-9]+/)) {
    if (!w) continue;
    const h = fnv1a(w);
    acc[h % kDim] += (h >>> 31 ? -1 : 1) * (1 + ((h >>> 9) & 3));
  }
  let sq = 0;
  for (const a of acc) sq += a * a;
  const norm = Math.sqrt(sq);
  const v = new Float32Array(kDim);
  for (let d = 0; d < kDim; ++d) v[d] = acc[d] / norm;
  return v;
}
export function docOf(i) {
  const r = new Rng(1, i);
  const d = {
    tenant: `tenant-${String(i % kTenants).padStart(3, "0")}`,
    id: `doc-${String(i).padStart(6, "0")}`,
    type: kTypes[Math.floor(i / kTenants) % 3],
    title: words(r, 4),
    description: words(r, 8),
    body: "",
    bucket: Math.floor(i / kTenants) % 100, // as search_bench's bucket_of: the filtered rows' `bucket < p`
  };
  const body = []; // joined once: a string grown by += is a rope that V8 flattens later, which skews the heap figure
  for (let length = 0; length < 1000; length += (body.length > 1 ? 1 : 0) + body[body.length - 1].length) {
    body.push(drawWord(r));
  }
  d.body = body.join(" ");
  return d;
}
export function queryOf(q) {
  const r = new Rng(2, q);
  const tenant = q % kTenants;
  const d = docOf(tenant + kTenants * (r.next() % (N / kTenants)));
  const body = d.body.split(" ");
  const pick = () => body[r.next() % body.length];
  const w1 = pick(), w2 = pick();
  const text = Array.from({ length: 12 }, pick).join(" ");
  return { tenant: d.tenant, type: d.type, words: `${w1} ${w2}`, text, vector: embedText(text) };
}
export function fingerprint(v, h) {
  const bits = new Uint32Array(v.buffer, v.byteOffset, v.length);
  for (const b of bits) h = Math.imul(h ^ b, 16777619) >>> 0;
  return h;
}

