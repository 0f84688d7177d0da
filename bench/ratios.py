"""Prints cairn's ratios against the baselines in Google Benchmark JSON results (one file, or several read as one
run: a benchmark and the rows a peer script wrote in the same shape, as bench/peers/w6_langgraph.mjs --out does).

Naming convention of the benchmarks in bench/: BM_<Operation>_Floor is the plain baseline (raw container, plain JSON
copy, raw sqlite3, ...); BM_<Operation>_<Other> is compared with it. A benchmark run with several arguments
(BM_X/10, BM_X/10000) is also reported as the ratio of its largest argument to its smallest ("flat" is close to 1).
Rows with a `bytes_per_artifact` counter compare bytes, rows with `recall_at_10` compare recall; times are compared
in nanoseconds whatever unit each row was reported in. A group with a _LangGraph row (the JS peer) also gets the
peer's time over each other variant's ("LangGraph vs Memory 25x": cairn answers 25 times faster).
"""
import json
import re
import sys
from collections import defaultdict

runs = []
for path in sys.argv[1:]:
    with open(path) as f:
        runs += json.load(f)["benchmarks"]
results = [b for b in runs if b.get("run_type", "iteration") == "iteration"]
# With --benchmark_repetitions, compare the medians (named like the benchmark) rather than the last repetition.
medians = [dict(b, name=b["run_name"]) for b in runs
           if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"]
if medians:
    results = medians


UNIT_NS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def cost(b):
    return b["real_time"] * UNIT_NS[b.get("time_unit", "ns")]


# A benchmark that could not run (SkipWithError: a backend without what it measures) is named, not compared.
skipped = [b for b in results if b.get("error_occurred")]
results = [b for b in results if not b.get("error_occurred")]
by_name = {b["name"]: b for b in results}
groups = defaultdict(dict)
args = defaultdict(list)
# Run options Google Benchmark appends to a name (/iterations:1, /manual_time, /real_time) are not arguments: a peer
# script's row, which has none, pairs with the benchmark's.
RUN_OPTIONS = re.compile(r"^(iterations:\d+|repeats:\d+|min_time:[0-9.]+s?|manual_time|real_time|process_time)$")
for b in results:
    base, _, arg = b["name"].partition("/")
    arg = "/".join(part for part in arg.split("/") if part and not RUN_OPTIONS.match(part))
    m = re.match(r"BM_(.+)_([A-Za-z0-9]+)$", base)
    if m:
        groups[(m.group(1), arg)][m.group(2)] = b
    if arg:
        args[base].append((arg, b))

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
        elif "recall_at_10" in b and "recall_at_10" in floor:
            rows.append((label + " (recall@10)", f"{b['recall_at_10']:.4f} vs {floor['recall_at_10']:.4f}",
                         b["recall_at_10"] / floor["recall_at_10"]))
        else:
            rows.append((label + " (time)", f"{cost(b):.4g} vs {cost(floor):.4g} ns", cost(b) / cost(floor)))
    peer = variants.get("LangGraph")
    if peer and "bytes_per_artifact" not in peer:
        for variant, b in sorted(variants.items()):
            if variant not in ("LangGraph", "Floor") and cost(b) > 0:
                rows.append((f"{op}{'/' + arg if arg else ''}: LangGraph vs {variant} (time)",
                             f"{cost(peer):.4g} vs {cost(b):.4g} ns", cost(peer) / cost(b)))
for base, bs in sorted(args.items()):
    if len(bs) < 2 or "bytes_per_artifact" in bs[0][1]:  # bytes rows take no time: their Floor row compares them
        continue
    bs.sort(key=lambda ab: float(ab[0].split("/")[0]))
    (lo_arg, lo), (hi_arg, hi) = bs[0], bs[-1]
    rows.append((f"{base}: {hi_arg} vs {lo_arg} (time)", f"{cost(hi):.4g} vs {cost(lo):.4g} ns", cost(hi) / cost(lo)))

width = max((len(r[0]) for r in rows), default=10)
for label, detail, ratio in rows:
    print(f"  {label:<{width}}  {ratio:6.2f}x   ({detail})")
for b in skipped:
    print(f"  {b['name']}: not measured ({b.get('error_message', 'skipped')})")
