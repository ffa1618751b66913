//! The shared argument checker and the agent tool path (issue 7): every bad field named,
//! defaults, scope that no call can widen, the `MCP_MAX_HITS` cap, `partial_retrieval`.

use agrag_engine::ConceptSelector;
use agrag_engine::query::Scope;
use agrag_engine::tools::{
    AgentRun, ArgErrors, Checked, Settings, TOOLS, ToolBox, check_arguments,
};
use serde_json::{Value, json};

use crate::common::concept_run;

const DOCS: &[(&str, &str)] = &[
    ("d-dog", "A dog on a leash walks in the park."),
    ("d-cat", "Cats purr when content."),
    ("d-mammal", "Mammals nurse their young with milk."),
];
const CONCEPTS: &[(&str, &str, &[&str])] = &[
    ("C1", "Mammals", &["Mammal"]),
    ("C3", "Dogs", &["Dog"]),
    ("C5", "Cats", &["Cat"]),
];
const EDGES: &[(&str, &str)] = &[("C3", "C1"), ("C5", "C1")];
const ANNOTATIONS: &[(&str, &str, &str)] = &[
    ("concept", "d-dog", "C3"),
    ("concept", "d-cat", "C5"),
    ("concept", "d-mammal", "C1"),
];

fn invalid_fields(tool: &str, args: &Value) -> Vec<String> {
    match check_arguments(tool, args) {
        Err(ArgErrors::Invalid { errors, .. }) => errors.into_iter().map(|e| e.field).collect(),
        other => panic!("{tool} {args}: expected Invalid, got {other:?}"),
    }
}

#[test]
fn every_bad_field_is_named_at_once() {
    let f = invalid_fields(
        "search_themes",
        &json!({"query": "", "limit": 0, "support_limit": "3", "scope": ["x"]}),
    );
    assert_eq!(f, ["query", "limit", "support_limit", "scope"]);
    let e = check_arguments("search_themes", &json!({"limit": 1_000_000_000_000_u64}))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("Invalid arguments."), "{e}");
    assert!(e.contains("`query` is required"), "{e}");
    assert!(
        e.contains("`limit` must be from 1 to 10, got 1000000000000"),
        "{e}"
    );
}

#[test]
fn ranges_types_and_lengths_are_exact() {
    let ok = |tool: &str, args: Value| check_arguments(tool, &args).is_ok();
    let q1000 = "x".repeat(1000);
    let q1001 = "x".repeat(1001);
    assert!(ok(
        "search_themes",
        json!({"query": q1000, "limit": 10, "support_limit": 10})
    ));
    assert!(!ok("search_themes", json!({"query": q1001})));
    // 1000 characters, not bytes: 1000 × 'é' is 2000 bytes and passes.
    assert!(ok("search_themes", json!({"query": "é".repeat(1000)})));
    assert!(!ok("search_themes", json!({"query": "   "})));
    assert!(!ok("search_themes", json!({"query": "q", "limit": 11})));
    assert!(!ok("search_themes", json!({"query": "q", "limit": -1})));
    assert!(!ok("search_themes", json!({"query": "q", "limit": 2.5})));
    assert!(!ok("search_themes", json!({"query": "q", "limit": 1e300})));
    assert!(!ok("search_themes", json!({"query": "q", "limit": null})));
    assert!(!ok("search_themes", json!({"query": "q", "limit": true})));
    assert!(!ok("search_themes", json!({"query": ["q"]})));
    assert!(!ok("search_themes", json!(["q"])));
    assert!(!ok("search_themes", json!("q")));
    assert!(ok("find_by_meaning", json!({"term": "dog", "sample": 50})));
    assert!(!ok("find_by_meaning", json!({"term": "dog", "sample": 51})));
    assert!(ok("fetch_evidence", json!({"ids": vec!["a#0"; 20]})));
    assert!(!ok("fetch_evidence", json!({"ids": vec!["a#0"; 21]})));
    assert!(!ok("fetch_evidence", json!({"ids": []})));
    assert_eq!(
        invalid_fields("fetch_evidence", &json!({"ids": ["a#0", 7, ""]})),
        ["ids"]
    );
    let e = check_arguments("fetch_evidence", &json!({"ids": ["a#0", 7, ""]}))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("item 1 must be a string") && e.contains("item 2 must be 1-200"),
        "{e}"
    );
}

#[test]
fn exactly_one_of_concept_and_term() {
    assert_eq!(invalid_fields("find_by_meaning", &json!({})), ["concept"]);
    let e = check_arguments("find_by_meaning", &json!({"concept": "C1", "term": "dog"}))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "`term` cannot be given with `concept`: give exactly one of `concept` and `term`"
        ),
        "{e}"
    );
    assert_eq!(
        check_arguments(
            "find_by_meaning",
            &json!({"concept": "C1", "query": "milk"})
        )
        .unwrap(),
        Checked::FindByMeaning {
            selector: ConceptSelector::Concept("C1".into()),
            query: Some("milk".into()),
            sample: 10,
            node_field: None,
            relation: None,
        }
    );
}

#[test]
fn unknown_tools_and_deep_or_huge_input_are_clear_errors() {
    let e = check_arguments("drop_tables", &json!({})).unwrap_err();
    assert!(matches!(e, ArgErrors::UnknownTool { .. }));
    assert!(
        e.to_string()
            .contains("The tools are: search_themes, find_by_meaning, fetch_evidence")
    );
    let huge = "q".repeat(1 << 20);
    let e = check_arguments("search_themes", &json!({"query": huge}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("got 1048576 characters"), "{e}");
    assert!(
        e.len() < 300,
        "the message does not echo the input: {} bytes",
        e.len()
    );
    let mut nested = json!("deep");
    for _ in 0..100 {
        nested = json!([nested]);
    }
    let e = check_arguments("search_themes", &json!({"query": nested}))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`query` must be a string of 1-1000 characters, got an array"),
        "{e}"
    );
}

#[test]
fn published_schemas_match_the_checker() {
    let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        ["search_themes", "find_by_meaning", "fetch_evidence"]
    );
    let s = TOOLS[0].input_schema();
    assert_eq!(s["properties"]["query"]["maxLength"], 1000);
    assert_eq!(s["properties"]["limit"]["maximum"], 10);
    assert_eq!(s["required"], json!(["query"]));
    let s = TOOLS[1].input_schema();
    assert_eq!(s["properties"]["sample"]["maximum"], 50);
    assert_eq!(
        s["oneOf"],
        json!([{"required": ["concept"]}, {"required": ["term"]}])
    );
    assert_eq!(TOOLS[2].input_schema()["properties"]["ids"]["maxItems"], 20);
}

fn toolbox(dir: &std::path::Path, scope: Scope, max_hits: usize) -> ToolBox {
    ToolBox::open(Settings {
        root: dir.to_owned(),
        max_hits,
        scope,
        ..Settings::default()
    })
    .unwrap()
}

#[test]
fn scope_from_settings_cannot_be_widened() {
    let dir = tempfile::tempdir().unwrap();
    concept_run(dir.path(), DOCS, CONCEPTS, EDGES, ANNOTATIONS);
    let tools = toolbox(dir.path(), Scope::Documents(vec!["d-dog".into()]), 10);
    let out = tools.call("find_by_meaning", &json!({"term": "dog"}));
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.structured["total"], 1);
    // A call cannot pass its own scope: the field is rejected.
    let out = tools.call("find_by_meaning", &json!({"term": "dog", "scope": "all"}));
    assert!(
        out.rejected && out.text.contains("`scope` is not an argument"),
        "{}",
        out.text
    );
    let out = tools.call(
        "fetch_evidence",
        &json!({"ids": ["d-dog#0", "d-cat#0", "nope"]}),
    );
    let ev = out.structured["evidence"].as_array().unwrap();
    let statuses: Vec<&str> = ev.iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["found", "unknown", "unknown"]);
    assert!(
        ev[1]["text"].is_null(),
        "out-of-scope text is never returned"
    );
    let all = toolbox(dir.path(), Scope::All, 10);
    let out = all.call("fetch_evidence", &json!({"ids": ["d-cat#0"]}));
    assert_eq!(out.structured["evidence"][0]["status"], "found");
    assert!(out.text.contains("Cats purr"), "{}", out.text);
}

#[test]
fn agent_run_records_partial_retrieval() {
    let empty = tempfile::tempdir().unwrap();
    let mut run = AgentRun::new(toolbox(empty.path(), Scope::All, 10));
    let out = run.call_json("search_themes", "{\"query\": \"dogs\", \"limit\": 3");
    assert!(
        out.rejected && out.text.starts_with("Invalid arguments."),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("`arguments` are not valid JSON"),
        "{}",
        out.text
    );
    assert!(!run.partial_retrieval(), "a rejected call searched nothing");
    let out = run.call("search_themes", &json!({"query": "dogs"}));
    assert_eq!(out.structured["status"], "index_not_ready");
    assert!(out.partial_retrieval && run.partial_retrieval());
    assert_eq!(run.calls().len(), 2);
    // Evidence with no run served: nothing was looked up, and the answer says so rather than
    // calling every id unknown.
    let out = run.call("fetch_evidence", &json!({"ids": ["d-cat#0"]}));
    assert_eq!(out.structured["status"], "index_not_ready", "{}", out.text);
    assert!(out.text.contains("nothing was looked up"), "{}", out.text);
    assert!(out.partial_retrieval);

    // A run with no themes answers no_match: not partial.
    let dir = tempfile::tempdir().unwrap();
    concept_run(dir.path(), DOCS, CONCEPTS, EDGES, ANNOTATIONS);
    let mut run = AgentRun::new(toolbox(dir.path(), Scope::All, 10));
    let out = run.call("search_themes", &json!({"query": "dogs", "limit": 10}));
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.structured["status"], "no_match");
    assert!(!run.partial_retrieval());
    // An empty scope answers empty_scope: not partial either.
    let mut run = AgentRun::new(toolbox(dir.path(), Scope::Documents(vec![]), 10));
    let out = run.call("search_themes", &json!({"query": "dogs"}));
    assert_eq!(out.structured["status"], "empty_scope");
    assert!(!run.partial_retrieval());
}

#[test]
fn embedding_settings_that_differ_from_the_run_answer_failed() {
    let dir = tempfile::tempdir().unwrap();
    concept_run(dir.path(), DOCS, CONCEPTS, EDGES, ANNOTATIONS); // hash embedder, dim 16
    let settings = Settings::load(None, |k| match k {
        "AGRAG_ROOT" => Some(dir.path().display().to_string()),
        "EMBEDDING_PROVIDER" => Some("hash".into()),
        "EMBEDDING_DIM" => Some("32".into()),
        _ => None,
    })
    .unwrap();
    let mut run = AgentRun::new(ToolBox::open(settings).unwrap());
    let out = run.call("search_themes", &json!({"query": "dogs"}));
    assert_eq!(out.structured["status"], "failed", "{}", out.text);
    assert!(out.text.contains("failure [embed]"), "{}", out.text);
    assert!(run.partial_retrieval());
}

#[test]
fn many_or_long_unknown_fields_keep_the_message_short() {
    let mut args = serde_json::Map::new();
    args.insert("query".into(), json!("q"));
    for i in 0..10_000 {
        args.insert(format!("{}{i}", "k".repeat(1000)), json!(i));
    }
    let e = check_arguments("search_themes", &Value::Object(args)).unwrap_err();
    let ArgErrors::Invalid { errors, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(errors.len(), 11);
    assert_eq!(errors[10].field, "arguments");
    assert!(
        errors[10].reason.contains("9990 more unknown fields"),
        "{:?}",
        errors[10]
    );
    assert!(e.to_string().len() < 4000, "{} bytes", e.to_string().len());
}
