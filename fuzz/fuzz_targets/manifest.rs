//! Fuzzes the manifest parser (`format::Manifest::parse`): any bytes give a manifest or a typed
//! error (`Corrupt` or `UnsupportedFormat`), never a panic; an accepted manifest round-trips.
#![no_main]

use agrag_engine::error::EngineError;
use agrag_engine::format::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match Manifest::parse(data) {
        Ok(m) => {
            let json = serde_json::to_vec(&m).expect("a parsed manifest serializes");
            assert_eq!(Manifest::parse(&json).expect("round trip"), m);
        }
        Err(EngineError::Corrupt { .. } | EngineError::UnsupportedFormat { .. }) => {}
        Err(other) => panic!("unexpected error kind: {other:?}"),
    }
});
