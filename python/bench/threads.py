"""How the Python API scales over threads and what a call costs over Rust (a benchmark, not a
test).

    python python/bench/threads.py --root .agrag [--queries 900] [--rounds 9]

Queries are the titles of the shipped abstracts (data/pubmedqa/documents.jsonl). Prints:
- the batch's wall time through ``search_themes_sync`` on 1 thread and on 2 threads (each a
  half of the batch), interleaved over rounds, medians; the engine releases the GIL, so 2
  threads should be at least 1.6 times faster on a 2-core machine (target line). The same
  batch through ``ThreadPoolExecutor(2).map`` is shown too: its per-task bookkeeping runs
  under the GIL, which costs a call of a few hundred microseconds a visible share;
- per-call p50 and p99 of the same queries through Python and inside Rust (timed around
  ``Engine::search_themes`` by ``agrag._agrag._time_search_themes``), and the difference of the
  p50s: Python's per-call overhead.
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import statistics
import threading
import time

import agrag
from agrag import _agrag
from agrag.evidence import search_themes_sync

REPO = pathlib.Path(__file__).resolve().parents[2]


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.environ.get("AGRAG_ROOT", ".agrag"))
    ap.add_argument("--queries", type=int, default=900)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()

    with open(REPO / "data" / "pubmedqa" / "documents.jsonl") as f:
        queries = [json.loads(line)["title"] for line in f][: args.queries]
    store = agrag.open_store(args.root)
    embedder = store.embedder()
    print(f"run {store.run_id} at {store.root}, embedder {embedder}, {len(queries)} queries, "
          f"{args.rounds} rounds, load {os.getloadavg()[0]:.2f}")

    def one(q):
        return search_themes_sync(store, None, q)

    for q in queries[:20]:  # warm caches and the query embedder
        one(q)
    def batch(part):
        for q in part:
            one(q)

    serial, parallel, pooled = [], [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(args.rounds):
            t = time.perf_counter()
            batch(queries)
            serial.append(time.perf_counter() - t)
            t = time.perf_counter()
            threads = [threading.Thread(target=batch, args=(queries[i::2],)) for i in range(2)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            parallel.append(time.perf_counter() - t)
            t = time.perf_counter()
            list(pool.map(one, queries))
            pooled.append(time.perf_counter() - t)
    s, p, pl = (statistics.median(x) for x in (serial, parallel, pooled))
    speedup = s / p
    print(f"batch wall, 1 thread          : {s * 1e3:9.1f} ms (median of {args.rounds})")
    print(f"batch wall, 2 threads (halves): {p * 1e3:9.1f} ms")
    print(f"batch wall, pool.map on 2     : {pl * 1e3:9.1f} ms ({s / pl:.2f}x)")
    print(f"speedup {speedup:.2f}x  target >= 1.6x: {'met' if speedup >= 1.6 else 'NOT met'}")

    py_times, rust_times = [], []
    for _ in range(args.rounds):
        for q in queries:
            t = time.perf_counter()
            one(q)
            py_times.append(time.perf_counter() - t)
        rust_times.extend(_agrag._time_search_themes(store, queries))
    py50, rs50 = percentile(py_times, 0.5), percentile(rust_times, 0.5)
    print(f"per call through Python: p50 {py50 * 1e6:8.1f} us  p99 {percentile(py_times, 0.99) * 1e6:8.1f} us")
    print(f"per call inside Rust   : p50 {rs50 * 1e6:8.1f} us  p99 {percentile(rust_times, 0.99) * 1e6:8.1f} us")
    print(f"Python's per-call overhead (p50 difference): {(py50 - rs50) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
