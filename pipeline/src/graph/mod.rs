//! Graphs: the co-occurrence builder (and the CSR used by detection).
pub mod builder;
