// W1 (issue 15) on Google ADK's InMemoryArtifactService (@google/adk, TypeScript ADK), the other JS peer of
// InMemoryArtifactStore: the phases of bench/w1_bench.cpp (save, load, list, re-save every 10th, delete every 10th)
// with one shared document, best of 3 runs per phase. An ADK artifact is a genai `Part`: the document is its `text`
// (one JSON string, made once and shared by every artifact, as the other peers share one object), and the record's
// type, title and description are its `customMetadata`. A tenant is an ADK user (one app, one session each).
// ADK lists a session's artifact names all at once (no pages), scanning every stored path.
// Run: `cd bench/peers && npm install && node w1_adk.mjs` (Node 20; not part of the tests).
import { InMemoryArtifactService } from "@google/adk";
function doc(seed) {
  const rows = [];
  for (let r = 0; r < 16; ++r) {
    rows.push({ id: seed * 16 + r, name: `row-${seed}-${r}`, score: 0.5 + r, tags: ["alpha", "beta"] });
  }
  return { rows };
}
const tenants = Array.from({ length: 100 }, (_, t) => `tenant-${String(t).padStart(3, "0")}`);
const key = (i) => ({ appName: "w1", userId: tenants[i % 100], sessionId: "s" });
async function run(n) {
  const text = JSON.stringify(doc(7));
  const ids = Array.from({ length: n }, (_, i) => `artifact-${String(i).padStart(8, "0")}`);
  const service = new InMemoryArtifactService();
  const out = {};
  const phase = async (name, count, body) => {
    const c0 = process.cpuUsage(); const t0 = process.hrtime.bigint();
    await body();
    const t1 = process.hrtime.bigint(); const c1 = process.cpuUsage(c0);
    out[name] = { cpu_us_per_op: (c1.user + c1.system) / count, wall_us_per_op: Number(t1 - t0) / 1000 / count };
  };
  await phase("save", n, async () => {
    for (let i = 0; i < n; ++i) {
      await service.saveArtifact({
        ...key(i), filename: ids[i], artifact: { text },
        customMetadata: { type: "document", title: `artifact ${i}`, description: "a benchmark artifact" },
      });
    }
  });
  let sum = 0;
  await phase("load", n, async () => {
    for (let i = 0; i < n; ++i) {
      const part = await service.loadArtifact({ ...key(i), filename: ids[i] });
      sum += part.text.length;
    }
  });
  let listed = 0;
  await phase("list", n, async () => {
    for (let t = 0; t < 100; ++t) listed += (await service.listArtifactKeys(key(t))).length;
  });
  if (listed !== n) throw new Error(`listed ${listed}`);
  await phase("resave", Math.ceil(n / 10), async () => {
    for (let i = 0; i < n; i += 10) {
      const description = "a benchmark artifact, revised";
      await service.saveArtifact({
        ...key(i), filename: ids[i], artifact: { text },
        customMetadata: { type: "document", title: `artifact ${i}`, description },
      });
    }
  });
  let removed = 0; for (let i = 5; i < n; i += 10) ++removed;
  await phase("delete", removed, async () => {
    for (let i = 5; i < n; i += 10) await service.deleteArtifact({ ...key(i), filename: ids[i] });
  });
  return out;
}
const sizes = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [10000, 100000];
for (const n of sizes) {
  let best = null;
  for (let rep = 0; rep < 3; ++rep) {
    const r = await run(n);
    if (!best) {
      best = r;
    } else {
      for (const k of Object.keys(r)) if (r[k].cpu_us_per_op < best[k].cpu_us_per_op) best[k] = r[k];
    }
  }
  for (const [k, v] of Object.entries(best)) {
    console.log(`adk n=${n} ${k}: ${v.cpu_us_per_op.toFixed(3)} us cpu/op, ` +
                `${v.wall_us_per_op.toFixed(3)} us wall/op`);
  }
}
