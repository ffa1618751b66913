//! find_by_meaning on crafted runs: the dog example, unknown terms, several parents, cycles,
//! coverage, visibility, bool and hybrid composition, and a 200,000-document set with no cap.

use agrag_engine::query::concept::{Combine, ConceptStatus, FORWARD_TEXT, Fusion, VectorClause};
use agrag_engine::visibility::{Target, Visibility};
use agrag_engine::{
    ConceptRequest, ConceptSelector, Direction, Engine, EngineConfig, EngineError, QueryInput,
    Scope,
};

use crate::common::concept_run;

const CONCEPTS: &[(&str, &str, &[&str])] = &[
    ("C1", "Mammals", &["Mammal"]),
    ("C2", "Canines", &["Canine", "Canidae"]),
    ("C3", "Dogs", &["Dog", "Canis familiaris"]),
    ("C4", "Poodles", &["Poodle"]),
    ("C5", "Cats", &["Cat"]),
    ("C6", "Young Animals", &[]),
    ("C7", "Puppies", &["Puppy"]),
];
const EDGES: &[(&str, &str)] = &[
    ("C2", "C1"),
    ("C3", "C2"),
    ("C4", "C3"),
    ("C5", "C1"),
    ("C7", "C3"),
    ("C7", "C6"),
];
const DOCS: &[(&str, &str)] = &[
    ("d-canine", "Wolves and other canines hunt in packs."),
    ("d-cat", "Cats purr when content."),
    ("d-dog", "A dog on a leash walks in the park."),
    ("d-mammal", "Mammals nurse their young with milk."),
    ("d-poodle", "Poodles need their coat clipped."),
    ("d-puppy", "A puppy chews on a leash."),
    ("d-unlinked", "A text that nobody linked to anything."),
];
const ANNOTATIONS: &[(&str, &str, &str)] = &[
    ("concept", "d-canine", "C2"),
    ("concept", "d-cat", "C5"),
    ("concept", "d-dog", "C3"),
    ("concept", "d-mammal", "C1"),
    ("concept", "d-poodle", "C4"),
    ("concept", "d-puppy", "C7"),
    ("mesh", "d-dog", "C3"),
];

fn engine() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    concept_run(dir.path(), DOCS, CONCEPTS, EDGES, ANNOTATIONS);
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    (dir, engine)
}

fn keys(a: &agrag_engine::query::concept::ConceptAnswer) -> Vec<&str> {
    a.sample.iter().map(|h| h.document_key.as_str()).collect()
}

#[test]
fn dog_finds_dog_canine_and_mammal_but_not_poodle() {
    let (_d, e) = engine();
    let a = e
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Term("dog".into())))
        .unwrap();
    assert_eq!(a.status, ConceptStatus::Ok);
    assert_eq!(a.total, 3);
    // Documents about the dog itself first, then the broader canine and mammal, nearest first.
    assert_eq!(keys(&a), vec!["d-dog", "d-canine", "d-mammal"]);
    let hops: Vec<u32> = a.sample.iter().map(|h| h.hops).collect();
    assert_eq!(hops, [0, 1, 2]);
    assert_eq!(a.ranked_by, "closeness");
    assert!(
        a.text
            .contains("documents about the concept itself first (1 of them), then those about broader concepts, nearest first"),
        "{}",
        a.text
    );
    assert_eq!(a.resolved[0].concept_id, "C3");
    assert_eq!(a.expanded, vec!["C1", "C2", "C3"]);
    assert_eq!(a.direction_text, FORWARD_TEXT);
    assert!(
        a.text.contains("documents about narrower ones are not"),
        "{}",
        a.text
    );
    // Coverage over the 7 visible documents, 6 of them linked.
    let c = a.coverage.as_ref().unwrap();
    assert_eq!((c.linked, c.total), (6, 7));
    assert!(
        a.coverage_text.starts_with("6 of 7 documents in run "),
        "{}",
        a.coverage_text
    );
    assert!(
        a.coverage_text
            .contains("(85.7%). Documents that are not linked CANNOT be found this way at all")
    );

    // Down instead: dog, poodle, puppy.
    let mut r = ConceptRequest::new(ConceptSelector::Concept("C3".into()));
    r.direction = Direction::Reverse;
    let a = e.find_by_meaning(&r).unwrap();
    assert_eq!(keys(&a), vec!["d-dog", "d-poodle", "d-puppy"]);
    // Depth bounds the walk.
    let mut r = ConceptRequest::new(ConceptSelector::Term("Poodle".into()));
    r.depth = Some(1);
    assert_eq!(
        keys(&e.find_by_meaning(&r).unwrap()),
        vec!["d-poodle", "d-dog"]
    );
}

#[test]
fn unknown_term_and_concept_search_nothing() {
    let (_d, e) = engine();
    let a = e
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Term(
            "unicorn".into(),
        )))
        .unwrap();
    assert_eq!(
        (a.status, a.searched, a.total),
        (ConceptStatus::UnknownTerm, false, 0)
    );
    assert!(a.text.starts_with("Nothing was searched"), "{}", a.text);
    let a = e
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Concept("C99".into())))
        .unwrap();
    assert_eq!(a.status, ConceptStatus::UnknownConcept);
    let mut r = ConceptRequest::new(ConceptSelector::Term("dog".into()));
    r.node_field = "nope".into();
    assert_eq!(
        e.find_by_meaning(&r).unwrap().status,
        ConceptStatus::UnknownNodeField
    );
    r.node_field = "mesh".into();
    let a = e.find_by_meaning(&r).unwrap();
    assert_eq!(keys(&a), vec!["d-dog"]);
    assert_eq!(a.coverage.as_ref().unwrap().linked, 1);
    // Case folding and Unicode normalization of terms.
    let a = e
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Term(
            "  CANIS\u{00A0}familiaris ".into(),
        )))
        .unwrap();
    assert_eq!(a.resolved[0].concept_id, "C3");
    // Bad arguments name the field.
    let mut r = ConceptRequest::new(ConceptSelector::Term("dog".into()));
    r.sample = 0;
    assert!(matches!(
        e.find_by_meaning(&r),
        Err(EngineError::InvalidArgument {
            field: "sample",
            ..
        })
    ));
    r.sample = 1;
    r.relation = "part_of".into();
    assert!(matches!(
        e.find_by_meaning(&r),
        Err(EngineError::InvalidArgument {
            field: "relation",
            ..
        })
    ));
}

#[test]
fn two_parents_are_both_walked() {
    let (_d, e) = engine();
    let a = e
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Term("puppy".into())))
        .unwrap();
    assert_eq!(a.expanded, vec!["C1", "C2", "C3", "C6", "C7"]);
    assert_eq!(keys(&a), vec!["d-puppy", "d-dog", "d-canine", "d-mammal"]);
}

#[test]
fn a_cycle_does_not_loop() {
    let dir = tempfile::tempdir().unwrap();
    concept_run(
        dir.path(),
        &[("a", "alpha"), ("b", "beta")],
        &[("A", "Alpha", &[]), ("B", "Beta", &[])],
        &[("A", "B"), ("B", "A")],
        &[("concept", "a", "A"), ("concept", "b", "B")],
    );
    let e = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    for d in [Direction::Forward, Direction::Reverse] {
        let mut r = ConceptRequest::new(ConceptSelector::Term("alpha".into()));
        r.direction = d;
        let a = e.find_by_meaning(&r).unwrap();
        assert_eq!((a.expanded.len(), a.total), (2, 2));
    }
}

#[test]
fn hidden_and_out_of_scope_documents_are_neither_counted_nor_listed() {
    let (d, e) = engine();
    e.set_visibility(Target::Document, "d-dog", Visibility::Hidden, None)
        .unwrap();
    let a = e
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Term("dog".into())))
        .unwrap();
    assert_eq!((a.total, keys(&a)), (2, vec!["d-canine", "d-mammal"]));
    let c = a.coverage.unwrap();
    assert_eq!((c.linked, c.total), (5, 6));
    let mut r = ConceptRequest::new(ConceptSelector::Term("dog".into()));
    r.scope = Scope::Documents(vec!["d-mammal".into(), "d-unlinked".into()]);
    let a = e.find_by_meaning(&r).unwrap();
    assert_eq!((a.total, a.coverage.unwrap().linked), (1, 1));
    r.scope = Scope::Documents(vec![]);
    assert_eq!(
        e.find_by_meaning(&r).unwrap().status,
        ConceptStatus::EmptyScope
    );
    drop(d);
}

#[test]
fn query_ranks_without_narrowing_and_clauses_compose() {
    let (_d, e) = engine();
    // The query ranks: "leash" hits d-dog; the other matches follow; nothing is dropped.
    let mut r = ConceptRequest::new(ConceptSelector::Term("dog".into()));
    r.query = Some("leash".into());
    let a = e.find_by_meaning(&r).unwrap();
    assert_eq!((a.total, a.ranked_by.as_str()), (3, "query"));
    assert_eq!(keys(&a)[0], "d-dog");
    assert!(a.sample[0].score.unwrap() > 0.0 && a.sample[1].score == Some(0.0));

    // Bool: the keyword clause narrows to its hits within the filter.
    let mut r = ConceptRequest::new(ConceptSelector::Term("puppy".into()));
    r.keyword = Some("leash".into());
    let a = e.find_by_meaning(&r).unwrap();
    let mut got = keys(&a);
    got.sort_unstable();
    assert_eq!(
        (got, a.ranked_by.as_str()),
        (vec!["d-dog", "d-puppy"], "keyword")
    );
    assert!(a.sample.iter().all(|h| h.score.unwrap() > 0.0));
    // Bool with a vector clause (k = 1: only the nearest document).
    r.keyword = None;
    r.vector = Some(VectorClause {
        input: QueryInput::Text("Mammals nurse their young with milk.".into()),
        k: 1,
    });
    assert_eq!(keys(&e.find_by_meaning(&r).unwrap()), vec!["d-mammal"]);
    // Both clauses, bool: the intersection of both with the filter (empty here).
    r.keyword = Some("leash".into());
    let a = e.find_by_meaning(&r).unwrap();
    assert_eq!((a.status, a.total), (ConceptStatus::NoMatch, 0));
    // Hybrid: the union of clause hits within the filter, fused.
    r.combine = Combine::Hybrid(Fusion::Rrf { k: 60.0 });
    let a = e.find_by_meaning(&r).unwrap();
    assert_eq!(a.ranked_by, "rrf");
    let mut got = keys(&a);
    got.sort_unstable();
    assert_eq!(got, vec!["d-dog", "d-mammal", "d-puppy"]);
    r.combine = Combine::Hybrid(Fusion::WeightedSum {
        keyword_weight: 1.0,
    });
    let a = e.find_by_meaning(&r).unwrap();
    assert_eq!(a.ranked_by, "weighted_sum");
    assert!(["d-dog", "d-puppy"].contains(&keys(&a)[0]));
    assert_eq!(a.sample[2].score, Some(0.0));
    // A vector from another model fails, naming both.
    r.vector = Some(VectorClause {
        input: QueryInput::Vector {
            model: "m2".into(),
            vector: vec![0.0; 16],
        },
        k: 3,
    });
    let a = e.find_by_meaning(&r).unwrap();
    assert_eq!(a.status, ConceptStatus::Failed);
    assert!(
        a.failures[0].message.contains("m2") && a.failures[0].message.contains("agrag-hash-v2")
    );
}

#[test]
fn two_hundred_thousand_documents_match_without_a_cap() {
    let dir = tempfile::tempdir().unwrap();
    let n = 200_000;
    let keys: Vec<String> = (0..n).map(|i| format!("doc{i:06}")).collect();
    let docs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "x")).collect();
    let ann: Vec<(&str, &str, &str)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| ("concept", k.as_str(), if i % 2 == 0 { "C3" } else { "C5" }))
        .collect();
    concept_run(dir.path(), &docs, CONCEPTS, EDGES, &ann);
    let e = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let a = e
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Term("mammal".into())))
        .unwrap();
    assert_eq!(a.total, 0, "nobody is annotated with Mammals itself");
    let mut r = ConceptRequest::new(ConceptSelector::Term("mammal".into()));
    r.direction = Direction::Reverse;
    let a = e.find_by_meaning(&r).unwrap();
    assert_eq!(a.total, n as u64);
    assert_eq!(a.sample.len(), 10);
    let a = e
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Term("dog".into())))
        .unwrap();
    assert_eq!(a.total, (n / 2) as u64);
}

/// Through the binary, as a user reads it: a small sample lists the documents about the asked
/// concept before those about broader ones, and says so.
#[test]
fn the_sample_lists_the_concept_itself_before_broader_concepts() {
    let dir = tempfile::tempdir().unwrap();
    concept_run(dir.path(), DOCS, CONCEPTS, EDGES, ANNOTATIONS);
    let run = |sample: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
            .args(["concepts", "--term", "puppy", "--sample", sample, "--root"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let two = run("2");
    let first = two.find("d-puppy").expect("the puppy document is listed");
    let second = two.find("d-dog").expect("then the dog document");
    assert!(first < second, "{two}");
    assert!(!two.contains("d-mammal"), "{two}");
    assert!(
        two.contains("documents about the concept itself first (1 of them)"),
        "{two}"
    );
}
