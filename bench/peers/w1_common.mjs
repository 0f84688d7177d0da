// What W1's JS peers share (w1_langgraph.mjs, w1_adk.mjs): the document, the tenants, the timing of one phase, and
// the best of 3 runs per phase printed as `<peer> n=<n> <phase>: <cpu> us cpu/op, <wall> us wall/op`.
export function doc(seed) {
  const rows = [];
  for (let r = 0; r < 16; ++r) {
    rows.push({ id: seed * 16 + r, name: `row-${seed}-${r}`, score: 0.5 + r, tags: ["alpha", "beta"] });
  }
  return { rows };
}

export const tenants = Array.from({ length: 100 }, (_, t) => `tenant-${String(t).padStart(3, "0")}`);

// A recorder of phases: `await phase(name, count, body)` times body() and keeps its CPU and wall time per operation.
export function phases() {
  const out = {};
  const phase = async (name, count, body) => {
    const c0 = process.cpuUsage(); const t0 = process.hrtime.bigint();
    await body();
    const t1 = process.hrtime.bigint(); const c1 = process.cpuUsage(c0);
    out[name] = { cpu_us_per_op: (c1.user + c1.system) / count, wall_us_per_op: Number(t1 - t0) / 1000 / count };
  };
  return { out, phase };
}

// Runs `run(n)` (which returns phases().out) 3 times for each n of `sizes` (the command line's numbers, else 10,000
// and 100,000) and prints each phase's best CPU time.
const argSizes = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [10000, 100000];
export async function report(peer, run, sizes = argSizes) {
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
      console.log(`${peer} n=${n} ${k}: ${v.cpu_us_per_op.toFixed(3)} us cpu/op, ` +
                  `${v.wall_us_per_op.toFixed(3)} us wall/op`);
    }
  }
}
