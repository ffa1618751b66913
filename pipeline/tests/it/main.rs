//! Integration tests of agrag-pipeline (one binary, ripgrep style).

// The whole job on a fixture from the real corpus; bad input; determinism of the tables.
mod e2e;
// The embedder identity end to end: manifest, MiniLM query embedder, mismatches answer failed,
// precomputed vectors, the pipeline's fallback notice.
mod embedder;
// Linking quality: exact F1 of the `concept` field against the corpus's MeSH headings (floor).
mod linking;
// Input through the binary: gzip, byte-order marks, other encodings, ambiguous and empty
// passages, HTML entities and Unicode forms, an empty run, detect-graph's output over its
// input, leaves that cannot be split.
mod input;
// A long passage links in time linear in its length (by scaling, no time target).
mod long_passages;
// Community detection: quality bar vs igraph, connectivity, hierarchy, determinism, input policy.
mod leiden;
// Live visibility, scope and every status of search_themes on a real snapshot.
mod visibility;
// Crash safety: SIGKILL at publish steps and random points; LATEST always names a whole run.
mod crash;
// Every file of a run opens as README documents; the golden run of format 1 still answers.
mod parquet;
// Inputs as tables: documents as Parquet and CSV give the run JSON Lines gives; communities
// computed elsewhere (--membership) round-trip with detect-graph; each broken rule refused.
mod tables;
// A GraphRAG index as input: the shipped index publishes and answers, GraphRAG's own
// communities come in as a membership table, a broken index is refused naming file and field.
mod graphrag;
// Runs that continue the published run: warm-started detection, community ids that survive,
// the lineage table, deletions.
mod incremental;
