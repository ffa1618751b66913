//! Benchmark support: seeded graph generators ([`common`]), process measurements ([`measure`]),
//! partition comparison ([`nmi`]) and retrieval measurements ([`retrieval`]) for the criterion
//! benches and the `leiden-compare`, `theme-recall` and `embed-throughput` binaries.

pub mod common;
pub mod measure;
pub mod nmi;
pub mod retrieval;
