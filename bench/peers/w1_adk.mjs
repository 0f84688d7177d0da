// W1 (issue 15) on Google ADK's InMemoryArtifactService (@google/adk, TypeScript ADK), the other JS peer of
// InMemoryArtifactStore: the phases of bench/w1_bench.cpp (save, load, list, re-save every 10th, delete every 10th)
// with one shared document, best of 3 runs per phase. An ADK artifact is a genai `Part`: the document is its `text`
// (one JSON string, made once and shared by every artifact, as the other peers share one object), and the record's
// type, title and description are its `customMetadata`. A tenant is an ADK user (one app, one session each).
// ADK lists a session's artifact names all at once (no pages), scanning every stored path.
// Run: `cd bench/peers && npm install && node w1_adk.mjs [n ...]` (Node 20; not part of the tests).
import { InMemoryArtifactService } from "@google/adk";
import { doc, phases, report, tenants } from "./w1_common.mjs";
const key = (i) => ({ appName: "w1", userId: tenants[i % 100], sessionId: "s" });
async function run(n) {
  const text = JSON.stringify(doc(7));
  const ids = Array.from({ length: n }, (_, i) => `artifact-${String(i).padStart(8, "0")}`);
  const service = new InMemoryArtifactService();
  const { out, phase } = phases();
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
await report("adk", run);
