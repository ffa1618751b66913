//! Fuzzes the MCP tool-argument checker (`tools::check_arguments`), the one gate every MCP and
//! agent tool call passes through.
//!
//! Input: the first byte picks the tool (`search_themes`, `find_by_meaning`, `fetch_evidence`, or
//! a name read from the input up to the first newline); the rest is the JSON arguments (inputs
//! that are not JSON are skipped: the transport rejects them before the checker).
//!
//! Properties: no panic; the same input gives the same answer; an unknown tool is answered
//! `UnknownTool` with its name cut to 200 characters; a rejection names at least one field, only
//! fields of the tool (alone, or joined as `concept`/`term` for a rule over several), `arguments`
//! or keys of the input, and its message is bounded whatever the
//! input's size; accepted arguments are in range, and checking them again as JSON gives the same
//! typed arguments.
#![no_main]

use agrag_engine::query::concept::ConceptSelector;
use agrag_engine::tools::{ArgErrors, Checked, TOOLS, check_arguments};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

/// Largest rejection message the checker may produce (the MCP server returns it verbatim).
const MAX_MESSAGE_BYTES: usize = 16 * 1024;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (tool, json) = match pick % 4 {
        3 => {
            let cut = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let name = String::from_utf8_lossy(&rest[..cut]).into_owned();
            (name, rest.get(cut + 1..).unwrap_or(&[]))
        }
        i => (TOOLS[i as usize].name.to_owned(), rest),
    };
    let Ok(args) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    let answer = check_arguments(&tool, &args);
    assert_eq!(answer, check_arguments(&tool, &args), "not deterministic");
    let Some(spec) = TOOLS.iter().find(|t| t.name == tool) else {
        match &answer {
            Err(ArgErrors::UnknownTool { name }) => assert!(name.chars().count() <= 201),
            other => panic!("unknown tool {tool:?} answered {other:?}"),
        }
        return;
    };
    match answer {
        Ok(checked) => {
            assert!(
                args.is_object() || args.is_null(),
                "accepted non-object {args}"
            );
            assert_eq!(checked.tool(), spec.name);
            assert_in_range(&checked);
            let again = check_arguments(spec.name, &to_json(&checked));
            assert_eq!(
                again.as_ref(),
                Ok(&checked),
                "re-checking the typed arguments"
            );
        }
        Err(ArgErrors::UnknownTool { .. }) => panic!("known tool {tool} answered UnknownTool"),
        Err(e @ ArgErrors::Invalid { .. }) => {
            let message = e.to_string();
            assert!(message.starts_with("Invalid arguments."), "{message}");
            assert!(
                message.len() <= MAX_MESSAGE_BYTES,
                "message of {} bytes",
                message.len()
            );
            let ArgErrors::Invalid { tool: t, errors } = e else {
                unreachable!()
            };
            assert_eq!(t, spec.name);
            assert!(!errors.is_empty(), "a rejection names no field");
            let keys: Vec<String> = args
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            for err in &errors {
                // A rule over several fields names them joined by "`/`" (`concept`/`term`).
                let is_field = |n: &str| spec.fields.iter().any(|f| f.name == n);
                let known = err.field.split("`/`").all(is_field)
                    || err.field == "arguments"
                    || keys.iter().any(|k| {
                        k == &err.field
                            || err
                                .field
                                .strip_suffix('…')
                                .is_some_and(|p| k.starts_with(p))
                    });
                assert!(
                    known,
                    "error names {:?}, not a field of the call",
                    err.field
                );
                assert!(!err.reason.is_empty());
            }
        }
    }
});

/// The ranges of `engine/src/tools/args.rs`, restated.
fn assert_in_range(checked: &Checked) {
    let text = |s: &str, max: usize| {
        let n = s.chars().count();
        assert!(n >= 1 && n <= max && !s.trim().is_empty(), "text {s:?}");
    };
    match checked {
        Checked::SearchThemes {
            query,
            limit,
            support_limit,
        } => {
            text(query, 1000);
            assert!((1..=10).contains(limit) && (1..=10).contains(support_limit));
        }
        Checked::FindByMeaning {
            selector,
            query,
            sample,
            node_field,
            relation,
        } => {
            match selector {
                ConceptSelector::Concept(s) | ConceptSelector::Term(s) => text(s, 200),
            }
            if let Some(q) = query {
                text(q, 1000);
            }
            for s in [node_field, relation].into_iter().flatten() {
                text(s, 200);
            }
            assert!((1..=50).contains(sample));
        }
        Checked::FetchEvidence { ids } => {
            assert!((1..=20).contains(&ids.len()));
            for id in ids {
                text(id, 200);
            }
        }
    }
}

/// Typed arguments back as the JSON a client would send.
fn to_json(checked: &Checked) -> Value {
    match checked {
        Checked::SearchThemes {
            query,
            limit,
            support_limit,
        } => json!({"query": query, "limit": limit, "support_limit": support_limit}),
        Checked::FindByMeaning {
            selector,
            query,
            sample,
            node_field,
            relation,
        } => {
            let mut m = Map::new();
            match selector {
                ConceptSelector::Concept(c) => m.insert("concept".into(), json!(c)),
                ConceptSelector::Term(t) => m.insert("term".into(), json!(t)),
            };
            m.insert("sample".into(), json!(sample));
            for (k, v) in [
                ("query", query),
                ("node_field", node_field),
                ("relation", relation),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), json!(v));
                }
            }
            Value::Object(m)
        }
        Checked::FetchEvidence { ids } => json!({"ids": ids}),
    }
}
