//! Only the test `tests/open_with_polars.rs` matters here; see `Cargo.toml` for why this crate
//! stands outside the workspace.
