#!/usr/bin/env python3
"""Generates one LFR benchmark graph with its planted communities, for `leiden-compare`.

Usage: make_lfr.py --nodes N --mu MU --seed S --out PREFIX
       [--avg-degree 13] [--max-degree 366] [--tau1 2.5] [--tau2 1.5]
       [--min-community 20] [--max-community 2000]

The generator is networkit's `LFRGenerator` (networkit.generators), an implementation of the
benchmark of Lancichinetti, Fortunato & Radicchi (2008), "Benchmark graphs for testing community
detection algorithms", Phys. Rev. E 78, 046110, <https://doi.org/10.1103/PhysRevE.78.046110>:
power-law degrees (exponent tau1) and community sizes (exponent tau2), and each node keeps a
fraction MU of its edges outside its own community. networkit assigns communities as in that
paper and builds the edges as in the follow-up (Lancichinetti & Fortunato 2009, Phys. Rev. E 80,
016118, <https://doi.org/10.1103/PhysRevE.80.016118>), with its own edge-switching Markov chain
(see the class documentation of `networkit.generators.LFRGenerator`). It takes seconds at 10^5
nodes, where networkx's pure-Python LFR takes minutes.

Determinism: networkit draws every random number from one global generator seeded by
`networkit.setSeed(S, False)`, and the run is pinned to one thread, so the same seed, parameters
and networkit version give the same graph. The networkit version goes into the file headers.

Writes, in the format of the shipped graphs (see `../shared/data/graphs/README.md`):
  PREFIX.edges.tsv.gz        `#` header, then `u<TAB>v` with u < v, sorted, no duplicates
  PREFIX.communities.tsv.gz  `#` header, then `node<TAB>community`
both gzip with a zero timestamp (byte-identical on every run). Each file is written to a temporary
name and renamed, so an interrupted run leaves no half-written graph behind.

Prints one JSON line: {"nodes", "edges", "communities", "mixing", "seconds", "networkit"} where
mixing is the measured fraction of edges between communities.
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np


def write_gz(path, header, rows):
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw:
        # mtime=0 and no file name in the gzip header: the bytes depend on the content only.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(header.encode())
            f.write(rows)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--mu", type=float, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--avg-degree", type=float, default=13.0)
    ap.add_argument("--max-degree", type=int, default=366)
    ap.add_argument("--tau1", type=float, default=2.5)
    ap.add_argument("--tau2", type=float, default=1.5)
    ap.add_argument("--min-community", type=int, default=20)
    ap.add_argument("--max-community", type=int, default=2000)
    a = ap.parse_args()
    if not 0.0 <= a.mu < 1.0:
        ap.error("--mu must be in [0, 1)")

    import networkit as nk

    nk.setNumberOfThreads(1)
    nk.setSeed(a.seed, False)
    t0 = time.perf_counter()
    gen = nk.generators.LFRGenerator(a.nodes)
    gen.generatePowerlawDegreeSequence(a.avg_degree, a.max_degree, -a.tau1)
    gen.generatePowerlawCommunitySizeSequence(a.min_community, a.max_community, -a.tau2)
    gen.setMu(a.mu)
    gen.run()
    g = gen.getGraph()
    part = gen.getPartition()
    seconds = time.perf_counter() - t0

    edges = np.array([(min(u, v), max(u, v)) for u, v in g.iterEdges() if u != v], dtype=np.int64)
    edges = np.unique(edges, axis=0)  # sorted, without duplicates
    labels = np.asarray(part.getVector(), dtype=np.int64)
    _, labels = np.unique(labels, return_inverse=True)  # dense labels from 0
    n = a.nodes
    mixing = float(np.mean(labels[edges[:, 0]] != labels[edges[:, 1]])) if len(edges) else 0.0
    params = (
        f"networkit {nk.__version__} LFRGenerator(n={n}, avg_degree={a.avg_degree:g}, "
        f"max_degree={a.max_degree}, tau1={a.tau1:g}, tau2={a.tau2:g}, "
        f"communities {a.min_community}-{a.max_community}, mu={a.mu:g}), seed={a.seed}, 1 thread"
    )
    header = (
        f"# LFR benchmark graph: {params}\n"
        f"# nodes {n} edges {len(edges)} communities {labels.max() + 1} measured mixing {mixing:.4f}\n"
    )
    body = "".join(f"{u}\t{v}\n" for u, v in edges.tolist()).encode()
    write_gz(a.out + ".edges.tsv.gz", header, body)
    body = "".join(f"{i}\t{c}\n" for i, c in enumerate(labels.tolist())).encode()
    write_gz(a.out + ".communities.tsv.gz", header, body)
    print(json.dumps({
        "nodes": n,
        "edges": int(len(edges)),
        "communities": int(labels.max()) + 1,
        "mixing": mixing,
        "seconds": seconds,
        "networkit": nk.__version__,
    }))


if __name__ == "__main__":
    sys.exit(main())
