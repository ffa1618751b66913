#!/usr/bin/env python3
"""Runs one peer community-detection implementation on one edge list, for `leiden-compare`.

Usage: run_peer.py PEER EDGES OUT [--threads N] [--seed S]

PEER is one of: igraph-leiden, leidenalg, graspologic-native, networkit-leiden, networkit-plm.
EDGES is a `u<TAB>v[<TAB>w]` edge list (gzip ok, `#` comments), node ids 0..n-1.
OUT receives the membership as little-endian uint32, one per node.

Prints one JSON line on stdout:
  {"peer", "wall_s", "cpu_s", "peak_rss_bytes", "peak_rss_algo_bytes", "communities", "version"}
or {"peer", "skipped": reason} when the peer cannot be imported. Loading and conversion to the
peer's graph type are excluded from wall_s and cpu_s; peak_rss_bytes is the whole process
(interpreter, loading and algorithm), peak_rss_algo_bytes the peak during the algorithm alone
(VmHWM reset through /proc/self/clear_refs just before it).
"""

import argparse
import json
import os
import random
import sys
import time

import numpy as np

PEERS = ["igraph-leiden", "leidenalg", "graspologic-native", "networkit-leiden", "networkit-plm"]


def vm_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def load(path):
    data = np.loadtxt(path, comments="#", ndmin=2)
    u = data[:, 0].astype(np.int64)
    v = data[:, 1].astype(np.int64)
    w = data[:, 2].astype(np.float64) if data.shape[1] > 2 else None
    n = int(max(u.max(), v.max())) + 1 if len(u) else 0
    return n, u, v, w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("peer", choices=PEERS)
    ap.add_argument("edges")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()

    try:
        if a.peer in ("igraph-leiden", "leidenalg"):
            import igraph as ig
            version = ig.__version__
            if a.peer == "leidenalg":
                import leidenalg as la
                version = la.__version__
        elif a.peer == "graspologic-native":
            import graspologic_native as gn
            version = getattr(gn, "__version__", "?")
        else:
            import networkit as nk
            version = nk.__version__
    except Exception as e:  # noqa: BLE001 - any import failure means "skip this peer"
        print(json.dumps({"peer": a.peer, "skipped": f"cannot import: {e}"}))
        return

    n, u, v, w = load(a.edges)
    # Build the peer's graph (excluded from the timings).
    if a.peer in ("igraph-leiden", "leidenalg"):
        g = ig.Graph(n=n, edges=np.column_stack([u, v]).tolist())
        if w is not None:
            g.es["weight"] = w.tolist()
        weights = "weight" if w is not None else None
    elif a.peer == "graspologic-native":
        ws = w.tolist() if w is not None else [1.0] * len(u)
        edges = list(zip(map(str, u.tolist()), map(str, v.tolist()), ws))
    else:
        nk.setNumberOfThreads(a.threads)
        # Seeds networkit's global generator; its parallel runs still depend on the scheduling.
        nk.setSeed(a.seed, False)
        g = nk.Graph(n, weighted=w is not None)
        if w is None:
            g.addEdges((u.astype(np.uint64), v.astype(np.uint64)))
        else:
            g.addEdges((w, (u.astype(np.uint64), v.astype(np.uint64))))
    del u, v, w

    peak_load = vm_kib("VmHWM:")
    reset_ok = reset_peak()
    # python-igraph draws from Python's `random` module by default, so this seeds igraph-leiden.
    random.seed(a.seed)
    cpu0, t0 = time.process_time(), time.perf_counter()
    if a.peer == "igraph-leiden":
        # The reference configuration.
        part = g.community_leiden(objective_function="modularity", weights=weights, n_iterations=2)
        membership = part.membership
    elif a.peer == "leidenalg":
        part = la.find_partition(g, la.ModularityVertexPartition, weights=weights, n_iterations=2, seed=a.seed)
        membership = part.membership
    elif a.peer == "graspologic-native":
        # What GraphRAG calls (through graspologic), with graspologic-native's defaults.
        _, mapping = gn.leiden(edges=edges, resolution=1.0, randomness=0.001, iterations=1,
                               use_modularity=True, seed=a.seed, trials=1)
    elif a.peer == "networkit-leiden":
        membership = nk.community.ParallelLeiden(g, randomize=True, iterations=3, gamma=1.0).run().getPartition().getVector()
    else:
        membership = nk.community.PLM(g, refine=False, gamma=1.0).run().getPartition().getVector()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    peak_algo = vm_kib("VmHWM:")

    if a.peer == "graspologic-native":
        membership = np.full(n, -1, dtype=np.int64)
        for node, c in mapping.items():
            membership[int(node)] = c
        nxt = membership.max() + 1
        for i in np.nonzero(membership < 0)[0]:  # nodes without edges are not in the output
            membership[i] = nxt
            nxt += 1
    membership = np.asarray(membership, dtype=np.int64)
    # Dense relabelling.
    _, dense = np.unique(membership, return_inverse=True)
    dense.astype("<u4").tofile(a.out)
    print(json.dumps({
        "peer": a.peer,
        "version": version,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_bytes": max(peak_load, peak_algo) * 1024,
        "peak_rss_algo_bytes": peak_algo * 1024 if reset_ok else None,
        "communities": int(dense.max()) + 1 if n else 0,
        "threads": a.threads if a.peer.startswith("networkit") else 1,
    }))


if __name__ == "__main__":
    sys.exit(main())
