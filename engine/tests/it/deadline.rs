//! The deadline of a search and a candidate window given by the caller's vector store, on the
//! committed golden run: the Rust API, the CLI's `--timeout` and the `MCP_TIMEOUT` setting give
//! the same `timeout` failure; a given window is checked, ordered and searched like the index's.

use std::path::PathBuf;
use std::time::Duration;

use agrag_engine::query::concept::{ConceptRequest, ConceptSelector, ConceptStatus};
use agrag_engine::query::theme::{Status, window_size};
use agrag_engine::tools::{Settings, ToolBox};
use agrag_engine::{Engine, EngineConfig, EngineError, ThemeRequest};

use super::common::{describe, engine_at};

const QUESTION: &str = "surgery outcomes and mortality";

fn golden_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/fixtures/snapshots/v1")
}

fn engine() -> Engine {
    Engine::open(golden_root(), EngineConfig::default()).unwrap()
}

#[test]
fn a_passed_deadline_answers_failed_with_a_timeout_leg_and_nothing_else() {
    let e = engine();
    let relaxed = e
        .search_themes(&ThemeRequest {
            timeout: Some(Duration::from_secs(60)),
            ..ThemeRequest::text(QUESTION)
        })
        .unwrap();
    assert_eq!(relaxed.status, Status::Ok);
    assert_eq!(
        relaxed,
        e.search_themes(&ThemeRequest::text(QUESTION)).unwrap()
    );
    let expired = e
        .search_themes(&ThemeRequest {
            timeout: Some(Duration::from_nanos(1)),
            ..ThemeRequest::text(QUESTION)
        })
        .unwrap();
    assert_eq!(expired.status, Status::Failed);
    assert!(expired.themes.is_empty());
    assert_eq!(expired.failures.len(), 1);
    assert_eq!(expired.failures[0].leg, "timeout");
    assert!(expired.run_id.is_some());
    let zero = e.search_themes(&ThemeRequest {
        timeout: Some(Duration::ZERO),
        ..ThemeRequest::text(QUESTION)
    });
    assert!(matches!(
        zero,
        Err(EngineError::InvalidArgument {
            field: "timeout",
            ..
        })
    ));

    // A member of a theme is a concept the run resolves.
    let term = relaxed.themes[0].entities[0].clone();
    let mut concept = ConceptRequest::new(ConceptSelector::Term(term));
    assert_eq!(
        e.find_by_meaning(&concept).unwrap().status,
        ConceptStatus::Ok
    );
    concept.timeout = Some(Duration::from_nanos(1));
    let a = e.find_by_meaning(&concept).unwrap();
    assert_eq!(a.status, ConceptStatus::Failed);
    assert_eq!(a.failures[0].leg, "timeout");
    assert!(a.sample.is_empty());
}

#[test]
fn the_cli_and_the_tool_settings_carry_the_same_deadline() {
    let root = golden_root();
    let root = root.to_str().unwrap();
    let o = engine_at(
        std::path::Path::new(root),
        &["themes", "--json", "--timeout", "0.000000001", QUESTION],
    );
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "failed");
    assert_eq!(v["failures"][0]["leg"], "timeout");
    let bad = engine_at(
        std::path::Path::new(root),
        &["themes", "--timeout", "0", QUESTION],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", describe(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("timeout"));

    let settings = Settings::load(None, |k| match k {
        "AGRAG_ROOT" => Some(root.to_owned()),
        "MCP_TIMEOUT" => Some("1e-9".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(settings.timeout, Some(Duration::from_nanos(1)));
    let out = ToolBox::open(settings)
        .unwrap()
        .call("search_themes", &serde_json::json!({"query": QUESTION}));
    assert_eq!(out.structured["status"], "failed");
    assert!(out.partial_retrieval);
    for bad in ["0", "-1", "soon", "inf"] {
        let e = Settings::load(None, |k| (k == "MCP_TIMEOUT").then(|| bad.to_owned()));
        assert!(
            matches!(
                e,
                Err(EngineError::InvalidArgument {
                    field: "MCP_TIMEOUT",
                    ..
                })
            ),
            "{bad}: {e:?}"
        );
    }
}

#[test]
fn a_given_window_is_checked_ordered_and_searched_like_the_indexs() {
    let e = engine();
    let req = ThemeRequest {
        limit: 3,
        ..ThemeRequest::text(QUESTION)
    };
    let own = e.search_themes(&req).unwrap();
    assert_eq!(own.status, Status::Ok);
    // The index's own window, handed back as a store's answer (shuffled, with a repeat at a
    // worse score), gives the same themes and scores.
    let ids: Vec<u32> = own.themes.iter().map(|t| t.theme_id).collect();
    let mut hits: Vec<(u32, f32)> = own.themes.iter().map(|t| (t.theme_id, t.score)).collect();
    hits.reverse();
    hits.push((ids[0], -1.0));
    let given = e.search_themes_in_window(&req, &hits).unwrap();
    assert_eq!(given.themes, own.themes);
    // The window is cut to min(limit × 3, 100), best first.
    assert_eq!(window_size(3), 9);
    let many: Vec<(u32, f32)> = (0..50).map(|c| (c, c as f32 / 100.0)).collect();
    let cut = e.search_themes_in_window(&req, &many).unwrap();
    assert!(
        cut.themes.iter().all(|t| t.theme_id >= 41),
        "{:?}",
        cut.themes
    );
    let unknown = e.search_themes_in_window(&req, &[(u32::MAX, 1.0)]).unwrap();
    assert_eq!(unknown.status, Status::Failed);
    assert_eq!(unknown.failures[0].leg, "vector_store");
    let nan = e
        .search_themes_in_window(&req, &[(ids[0], f32::NAN)])
        .unwrap();
    assert_eq!(nan.failures[0].leg, "vector_store");
    let none = e.search_themes_in_window(&req, &[]).unwrap();
    assert_eq!(none.status, Status::NoMatch);
    assert!(!none.truncated);
}
