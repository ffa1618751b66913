//! Integration tests of agrag-engine (one binary, ripgrep style).

// Runs written through the real writer, for the tests below.
mod common;
// find_by_meaning: expansion, coverage, visibility, composition, scale.
mod concepts;
