//! Benchmark support: seeded graph generators ([`common`]), process measurements ([`measure`]) and
//! partition comparison ([`nmi`]) for the criterion benches and the `leiden-compare` binary.

pub mod common;
pub mod measure;
pub mod nmi;
