//! Fuzzes the vocabulary reader (`link::parse_vocabulary`). The input is split at the first NUL
//! byte into `concepts.tsv` and `broader.tsv`; any bytes give a vocabulary or an error, never a
//! panic, and every accepted edge names known concepts.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (concepts, broader) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"child_id\tparent_id\n"[..]),
    };
    if let Ok(v) = agrag_pipeline::link::parse_vocabulary(concepts, broader, Path::new("fuzz")) {
        assert!(!v.is_empty());
        for i in 0..v.len() as u32 {
            for p in v.parents(i) {
                assert!((p as usize) < v.len());
            }
            let _ = v.ancestors(i);
        }
    }
});
