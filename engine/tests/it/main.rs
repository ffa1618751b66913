//! Integration tests of agrag-engine (one binary, ripgrep style).

// Runs written through the real writer, for the tests below.
mod common;
// find_by_meaning: expansion, coverage, visibility, composition, scale.
mod concepts;
// Operations: reload and watcher, gc while served, damaged files refused, `verify`.
mod ops;
// Concurrency: two processes flipping flags, four reader threads, on the golden run.
mod stress;
