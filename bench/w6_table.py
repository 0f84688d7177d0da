"""Prints docs/search.md's table "What a query costs, measured" from one W6 run of both layouts.

Usage: python3 bench/w6_table.py --a w6A.json [peer.json ...] --b w6B.json [peer.json ...]

--a takes the Google Benchmark JSON of search_bench run with CAIRN_W6_TENANTS=1 (100,000 in one tenant), --b the
default layout (1,000 a tenant), each followed by the rows the LangGraph.js peers wrote for that layout
(w6_langgraph.mjs --out, w6_langgraph_pg.mjs --out). Every ratio is of two rows of the same layout's files; a row
that is missing prints as "-" (a build without PostgreSQL, a run without node). A peer's row is read at its wall
time (counter wall_us), as search_bench's rows are with CAIRN_W6_WALL=1.
"""
import json
import sys

UNIT_NS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(paths):
    rows = {}
    for path in paths:
        with open(path) as f:
            for b in json.load(f)["benchmarks"]:
                if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
                    continue
                # Drop run options (/iterations:1, /manual_time, /real_time): "BM_W6Filtered_Memory/1".
                parts = [p for p in b["name"].split("/")
                         if not p.startswith(("iterations:", "manual_time", "real_time", "min_time:"))]
                rows["/".join(parts)] = b
    return rows


class Layout:
    def __init__(self, rows):
        self.rows = rows

    def ns(self, name):
        b = self.rows.get("BM_W6" + name)
        if b is None:
            return None
        if "wall_us" in b:  # a peer's row: its real_time is the process's CPU time, its wall time this counter
            return b["wall_us"] * 1e3
        return b["real_time"] * UNIT_NS[b.get("time_unit", "ns")]

    def vs(self, name, floor):
        """A row's time and its ratio to its floor: "1.9 ms, 0.55x"."""
        return f"{time(self.ns(name))}, {ratio(self.ns(name), self.ns(floor))}"

    def counter(self, name, key):
        b = self.rows.get("BM_W6" + name)
        return None if b is None else b.get(key)


def time(ns):
    if ns is None:
        return "-"
    if ns < 1e6:
        return f"{ns / 1e3:,.0f} µs" if ns >= 1e5 else f"{ns / 1e3:,.1f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:,.1f} ms" if ns < 1e8 else f"{ns / 1e6:,.0f} ms"
    return f"{ns / 1e9:,.2f} s"


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def faster(slow, fast):
    if slow is None or fast is None or fast == 0:
        return "-"
    r = slow / fast
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x"


def ms(value):
    if value is None:
        return "-"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def slash(items):
    return " / ".join(items)


PCTS = (1, 10, 50)


def cells(L):
    """The table's rows for one layout, as (label, text) pairs."""
    out = []
    recalls = [L.counter(f"Recall_{s}", "recall_at_10") for s in ("Memory", "Sqlite", "Postgres")]
    for group, stores in (("Filtered", ("Memory",)), ("FilteredSql", ("Sqlite", "SqliteRows")),
                          ("FilteredPg", ("Postgres", "PostgresRows"))):
        for s in stores:
            recalls += [L.counter(f"{group}_{s}/{p}", "recall_at_10") for p in PCTS]
    recalls = [r for r in recalls if r is not None]
    out.append(("recall@10 of the default, every store, filtered or not (the lowest of "
                f"{len(recalls) if recalls else 0} rows)", f"{min(recalls):.3f}" if recalls else "-"))

    lg = L.ns("Similar_LangGraph")
    mem = L.ns("SimilarMatched_Memory")
    ef = L.counter("SimilarMatched_Floor", "ef")
    fr = L.counter("SimilarMatched_Floor", "floor_recall_at_10")
    out.append(("similarity, memory (floor: hnswlib alone at recall 0.95; LangGraph.js slower by)",
                f"{time(mem)}; {ratio(mem, L.ns('SimilarMatched_Floor'))} (ef {ef:.0f}, recall {fr:.2f}); "
                f"{faster(lg, mem)}" if ef is not None and fr is not None else "-"))
    out.append(("similarity, SQLite / PostgreSQL (floor: hnswlib at recall 0.95 + the rows read)",
                slash([L.vs("SimilarMatchedSql_Sqlite", "SimilarMatchedSql_Floor"),
                       L.vs("SimilarMatchedPg_Postgres", "SimilarMatchedPg_Floor")])))
    out.append(("similarity, LangGraph.js slower than memory / SQLite / PostgreSQL",
                slash([faster(lg, L.ns("Similar_Memory")), faster(lg, L.ns("SimilarSql_Sqlite")),
                       faster(lg, L.ns("SimilarPg_Postgres"))])))
    out.append(("exact, memory / SQLite / PostgreSQL (floor: a plain float scan)",
                slash([L.vs(n, f) for n, f in (
                    ("SimilarExact_Memory", "SimilarExact_Floor"), ("SimilarExact_Sqlite", "SimilarExact_Floor"),
                    ("SimilarExactPg_Postgres", "SimilarExactPg_Floor"))])))
    out.append(("exact, LangGraph.js (its only mode) slower than memory / SQLite / PostgreSQL",
                slash([faster(lg, L.ns(n)) for n in
                       ("SimilarExact_Memory", "SimilarExact_Sqlite", "SimilarExactPg_Postgres")])))
    out.append(("filter 1 % / 10 % / 50 %, memory (floor: a filtered float scan)",
                slash([ratio(L.ns(f"Filtered_Memory/{p}"), L.ns(f"Filtered_Floor/{p}")) for p in PCTS])))
    for label, group, store in (("SQLite", "FilteredSql", "Sqlite"), ("PostgreSQL", "FilteredPg", "Postgres")):
        main = slash([ratio(L.ns(f"{group}_{store}/{p}"), L.ns(f"{group}_Floor/{p}")) for p in PCTS])
        first = slash([ratio(L.ns(f"{group}_{store}Rows/{p}"), L.ns(f"{group}_Floor/{p}")) for p in PCTS])
        out.append((f"filter 1 % / 10 % / 50 %, {label} (floor: the filtered scan + the rows read; in brackets a "
                    "page's first read of its records)", f"{main} ({first})"))
    lgf = L.ns("Filtered_LangGraph/1")
    out.append(("filter 1 %: cairn's time, memory / SQLite / PostgreSQL; LangGraph.js slower by",
                slash([time(L.ns(n)) for n in ("Filtered_Memory/1", "FilteredSql_Sqlite/1", "FilteredPg_Postgres/1")])
                + "; " + slash([faster(lgf, L.ns(n)) for n in
                                ("Filtered_Memory/1", "FilteredSql_Sqlite/1", "FilteredPg_Postgres/1")])
                + f" (LangGraph.js {time(lgf)})"))
    w = [("Words_Memory", "Words_Floor"), ("Words_Sqlite", "Words_Floor"), ("WordsPg_Postgres", "WordsPg_Floor")]
    out.append(("words, memory / SQLite / PostgreSQL (floor: raw FTS5 / raw PostgreSQL full text)",
                slash([L.vs(n, f) for n, f in w])
                + "; PostgreSQL asked again: " + L.vs("WordsPgAgain_Postgres", "WordsPg_Floor")))
    out.append(("words, LangGraph.js's `PostgresStore` slower than cairn's PostgreSQL store",
                faster(L.ns("WordsPg_LangGraph"), L.ns("WordsPg_Postgres"))))
    for label, kind in (("hybrid, two words", ""), ("hybrid, four words joined by OR", "Or")):
        out.append((f"{label}, memory / SQLite / PostgreSQL (floor: raw words + hnswlib ef 64 + fusion)",
                    slash([L.vs(n, f) for n, f in (
                        (f"Hybrid{kind}_Memory", f"Hybrid{kind}_Floor"), (f"Hybrid{kind}_Sqlite", f"Hybrid{kind}_Floor"),
                        (f"Hybrid{kind}Pg_Postgres", f"Hybrid{kind}Pg_Floor"))])))

        def apart(hybrid, words, similar):
            h, w, s = L.ns(hybrid), L.ns(words), L.ns(similar)
            return ratio(h, None if w is None or s is None else w + s)

        out.append((f"{label}, against its words half and similarity asked apart, memory / SQLite / PostgreSQL",
                    slash([apart(f"Hybrid{kind}_Memory", f"Hybrid{kind}Words_Memory", "Similar_Memory"),
                           apart(f"Hybrid{kind}_Sqlite", f"Hybrid{kind}Words_Sqlite", "SimilarSql_Sqlite"),
                           apart(f"Hybrid{kind}Pg_Postgres", f"Hybrid{kind}WordsPg_Postgres", "SimilarPg_Postgres")])))
    out.append(("a new store object's first similarity query, SQLite / PostgreSQL",
                slash([ms(L.counter("Restart_Sqlite", "first_query_ms")),
                       ms(L.counter("RestartPg_Postgres", "first_query_ms"))])))
    out.append(("the in-memory store's first similarity search / first search by words (its indexes made)",
                slash([ms(L.counter("Similar_Memory", "first_query_ms")),
                       ms(L.counter("Words_Memory", "first_query_ms"))])))
    out.append(("storing one artifact, memory / SQLite / PostgreSQL (floor: the raw writes of the same rows; "
                "PostgreSQL's under cairn's key, in brackets the plain floor's integer key)",
                slash([L.vs(n, f) for n, f in (
                    ("IndexMem_Memory", "IndexMem_Floor"), ("IndexSql_Sqlite", "IndexSql_Floor"),
                    ("IndexPgKeyed_Postgres", "IndexPgKeyed_Floor"))])
                + f" ({ratio(L.ns('IndexPg_Postgres'), L.ns('IndexPg_Floor'))})"))
    heap = L.counter("Bytes_Memory", "bytes_per_artifact")
    out.append(("bytes per artifact: memory heap / SQLite file / PostgreSQL database (ratio to the floor's)",
                slash([f"{b:,.0f} B, {ratio(b, f)}" if b is not None else "-" for b, f in (
                    (heap, L.counter("Bytes_Floor", "bytes_per_artifact")),
                    (L.counter("DiskSql_Sqlite", "bytes_per_artifact"), L.counter("DiskSql_Floor", "bytes_per_artifact")),
                    (L.counter("DiskPg_Postgres", "bytes_per_artifact"), L.counter("DiskPg_Floor", "bytes_per_artifact")))])))
    c, ch = L.ns("Clustered_Memory"), L.ns("Clustered_Hnswlib")
    out.append(("the clustered set (`W6Clustered`): the default / hnswlib ef 64 (recall)",
                f"{time(c)} ({L.counter('Clustered_Memory', 'recall_at_10') or 0:.3f}) / "
                f"{time(ch)} ({L.counter('Clustered_Hnswlib', 'recall_at_10') or 0:.3f})"))
    return out


def main(argv):
    files = {"--a": [], "--b": []}
    at = None
    for arg in argv:
        if arg in files:
            at = arg
        elif at is None:
            sys.exit(__doc__)
        else:
            files[at].append(arg)
    if not files["--a"] or not files["--b"]:
        sys.exit(__doc__)
    a, b = cells(Layout(load(files["--a"]))), cells(Layout(load(files["--b"])))
    print("| | 100,000 in one tenant | 1,000 per tenant |")
    print("|---|---|---|")
    for (label, x), (_, y) in zip(a, b):
        print(f"| {label} | {x} | {y} |")


if __name__ == "__main__":
    main(sys.argv[1:])
