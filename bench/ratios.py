"""Prints cairn's ratios against the baselines in one Google Benchmark JSON result.

Naming convention of the benchmarks in bench/: BM_<Operation>_Floor is the plain baseline (raw container, plain JSON
copy, raw sqlite3, ...); BM_<Operation>_<Other> is compared with it. A benchmark run with several arguments
(BM_X/10, BM_X/10000) is also reported as the ratio of its largest argument to its smallest ("flat" is close to 1).
"""
import json
import re
import sys
from collections import defaultdict

with open(sys.argv[1]) as f:
    runs = json.load(f)["benchmarks"]
results = [b for b in runs if b.get("run_type", "iteration") == "iteration"]
# With --benchmark_repetitions, compare the medians (named like the benchmark) rather than the last repetition.
medians = [dict(b, name=b["run_name"]) for b in runs
           if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"]
if medians:
    results = medians


def cost(b):
    return b["real_time"]


by_name = {b["name"]: b for b in results}
groups = defaultdict(dict)
args = defaultdict(list)
for b in results:
    base, _, arg = b["name"].partition("/")
    m = re.match(r"BM_(.+)_([A-Za-z0-9]+)$", base)
    if m:
        groups[(m.group(1), arg)][m.group(2)] = b
    if arg:
        args[base].append(b)

rows = []
for (op, arg), variants in sorted(groups.items()):
    floor = variants.get("Floor")
    if not floor:
        continue
    for variant, b in sorted(variants.items()):
        if variant == "Floor":
            continue
        label = f"{op}{'/' + arg if arg else ''}: {variant} vs Floor"
        if "bytes_per_artifact" in b and "bytes_per_artifact" in floor:
            rows.append((label + " (bytes per artifact)",
                         f"{b['bytes_per_artifact']:.0f} vs {floor['bytes_per_artifact']:.0f}",
                         b["bytes_per_artifact"] / floor["bytes_per_artifact"]))
        else:
            rows.append((label + " (time)", f"{cost(b):.4g} vs {cost(floor):.4g} {b['time_unit']}",
                         cost(b) / cost(floor)))
for base, bs in sorted(args.items()):
    if len(bs) < 2:
        continue
    bs.sort(key=lambda b: float(b["name"].split("/")[1].split("/")[0]))
    lo, hi = bs[0], bs[-1]
    rows.append((f"{base}: {hi['name'].split('/', 1)[1]} vs {lo['name'].split('/', 1)[1]} (time)",
                 f"{cost(hi):.4g} vs {cost(lo):.4g} {hi['time_unit']}", cost(hi) / cost(lo)))

width = max((len(r[0]) for r in rows), default=10)
for label, detail, ratio in rows:
    print(f"  {label:<{width}}  {ratio:6.2f}x   ({detail})")
