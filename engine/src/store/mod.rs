//! Storage access: memory maps of snapshot files.

pub mod mmap;
