// W1 (issue 15) on LangGraph's InMemoryStore, the JS peer of InMemoryArtifactStore: the phases of bench/w1_bench.cpp
// (save, load, list in pages of 100, re-save every 10th, delete every 10th) with one shared document, best of 3
// runs per phase. Run: `cd bench/peers && npm install && node w1_langgraph.mjs` (Node 20; not part of the tests).
import { InMemoryStore } from "@langchain/langgraph";
import { doc, phases, report, tenants } from "./w1_common.mjs";
async function run(n) {
  const d = doc(7);
  const ids = Array.from({ length: n }, (_, i) => `artifact-${String(i).padStart(8, "0")}`);
  const store = new InMemoryStore();
  const { out, phase } = phases();
  await phase("save", n, async () => {
    for (let i = 0; i < n; ++i) {
      await store.put([tenants[i % 100]], ids[i],
                      { type: "document", title: `artifact ${i}`, description: "a benchmark artifact", value: d });
    }
  });
  let sum = 0;
  await phase("load", n, async () => {
    for (let i = 0; i < n; ++i) {
      const it = await store.get([tenants[i % 100]], ids[i]);
      sum += it.value.value.rows.length;
    }
  });
  let listed = 0;
  await phase("list", n, async () => {
    for (const t of tenants) {
      for (let off = 0; ; off += 100) {
        const page = await store.search([t], { limit: 100, offset: off });
        listed += page.length;
        if (page.length < 100) break;
      }
    }
  });
  if (listed !== n) throw new Error(`listed ${listed}`);
  await phase("resave", Math.ceil(n / 10), async () => {
    for (let i = 0; i < n; i += 10) {
      const description = "a benchmark artifact, revised";
      const revised = { type: "document", title: `artifact ${i}`, description, value: d };
      await store.put([tenants[i % 100]], ids[i], revised);
    }
  });
  let removed = 0; for (let i = 5; i < n; i += 10) ++removed;
  await phase("delete", removed, async () => {
    for (let i = 5; i < n; i += 10) await store.delete([tenants[i % 100]], ids[i]);
  });
  return out;
}
await report("langgraph", run);
