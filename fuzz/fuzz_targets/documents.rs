//! Fuzzes the documents reader (`ingest::parse_jsonl`): any bytes give a corpus or an error,
//! never a panic; an accepted corpus holds a document and a passage.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(corpus) = agrag_pipeline::ingest::parse_jsonl(data, Path::new("fuzz.jsonl")) {
        assert!(!corpus.documents.is_empty());
        assert!(corpus.num_passages() > 0);
        for d in &corpus.documents {
            assert!(!d.key.contains('#'));
        }
    }
});
