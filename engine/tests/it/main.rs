//! Integration tests of agrag-engine (one binary, ripgrep style).

// Runs written through the real writer, for the tests below.
mod common;
// The CLI: `evidence` with no run served, effective visibility, roots without a snapshot.
mod cli;
// find_by_meaning: expansion, coverage, visibility, composition, scale.
mod concepts;
// Hidden text is unsearchable at once on every retrieval path, through the binary.
mod hidden_text;
// The deadline of a search (Rust API, CLI, MCP_TIMEOUT) and a caller's candidate window.
mod deadline;
// search_themes through the IVF index of large runs.
mod themes_ivf;
// The agent tools: the shared argument checker, scope, MCP_MAX_HITS, partial_retrieval.
mod tools;
// The MCP server over stdio: the real binary spoken to in JSON-RPC.
#[cfg(feature = "mcp")]
mod mcp_stdio;
// The MCP server over streamable HTTP: protocol errors answered with 400 and JSON-RPC.
#[cfg(feature = "mcp")]
mod mcp_http;
// Operations: reload and watcher, gc while served, damaged files refused, `verify`.
mod ops;
// The run report (`agrag-engine report`): page and JSON, bad input, bounds, a real browser.
mod run_report;
// Read-only snapshots: a read-only mount served and verified, writing nothing.
mod read_only;
// Concurrency: two processes flipping flags, four reader threads, on the golden run.
mod stress;
