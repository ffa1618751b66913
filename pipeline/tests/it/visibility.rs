//! Live visibility and the search_themes contract on a real snapshot (issue 4): hiding,
//! deleting, scope, every status, `truncated`, and a second process on the same root.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use agrag_engine::embed::HashEmbedder;
use agrag_engine::query::evidence::EvidenceStatus;
use agrag_engine::query::theme::{IndexState, Status};
use agrag_engine::visibility::{Target, Visibility};
use agrag_engine::{
    CommunityRow, ConceptRow, DocumentRow, Engine, EngineConfig, EngineError, PassageRow,
    QueryInput, Scope, ThemeRequest,
};
use agrag_pipeline::run::{RunConfig, RunSummary, run};

fn config(root: &Path) -> RunConfig {
    crate::e2e::fixture_config(root)
}

/// The query vector that ranks community `c` first: its own first report embedding.
fn vector_of(engine: &Engine, c: usize) -> QueryInput {
    let view = engine.view().unwrap();
    let snap = view.snapshot().unwrap();
    let dim = snap.dim();
    let row = snap.community(CommunityRow(c as u32)).report_rows().start;
    QueryInput::Vector {
        model: snap.manifest.embedder.model.clone(),
        vector: snap.embedding_matrix()[row * dim..(row + 1) * dim].to_vec(),
    }
}

fn request(query: QueryInput, limit: usize, support_limit: usize) -> ThemeRequest {
    ThemeRequest {
        query,
        scope: Scope::All,
        limit,
        support_limit,
        timeout: None,
    }
}

/// A community whose members are mentioned by exactly one passage in all.
fn single_passage_community(engine: &Engine) -> (usize, String) {
    let view = engine.view().unwrap();
    let snap = view.snapshot().unwrap();
    for c in 0..snap.num_communities() {
        let passages: HashSet<PassageRow> = snap
            .community(CommunityRow(c as u32))
            .members()
            .iter()
            .flat_map(|e| snap.entity(e).passages())
            .collect();
        if passages.len() == 1 {
            let p = *passages.iter().next().unwrap();
            return (c, snap.passage(p).id());
        }
    }
    panic!("the fixture has no community supported by a single passage");
}

fn theme_ids(engine: &Engine, req: &ThemeRequest) -> Vec<u32> {
    engine
        .search_themes(req)
        .unwrap()
        .themes
        .iter()
        .map(|t| t.theme_id)
        .collect()
}

/// Runs this test binary again as a second process doing `action` on `root`.
fn child(action: &str, root: &Path, passage: &str, theme: usize) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "visibility::child_process",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("AGRAG_CHILD_ACTION", action)
        .env("AGRAG_CHILD_ROOT", root)
        .env("AGRAG_CHILD_PASSAGE", passage)
        .env("AGRAG_CHILD_THEME", theme.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "child {action} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The second process's side (a no-op when run as an ordinary test).
#[test]
fn child_process() {
    let Ok(action) = std::env::var("AGRAG_CHILD_ACTION") else {
        return;
    };
    let root = std::env::var("AGRAG_CHILD_ROOT").unwrap();
    let passage = std::env::var("AGRAG_CHILD_PASSAGE").unwrap();
    let theme: usize = std::env::var("AGRAG_CHILD_THEME").unwrap().parse().unwrap();
    let engine = Engine::open(&root, EngineConfig::default()).unwrap();
    match action.as_str() {
        "hide" => engine
            .set_visibility(Target::Passage, &passage, Visibility::Hidden, Some("child"))
            .unwrap(),
        "check-hidden" => {
            let req = request(vector_of(&engine, theme), 5, 10);
            assert!(!theme_ids(&engine, &req).contains(&(theme as u32)));
        }
        other => panic!("unknown child action {other}"),
    }
}

#[test]
fn hiding_the_only_supporting_passage_removes_the_theme_in_every_process() {
    let dir = tempfile::tempdir().unwrap();
    run(&config(dir.path())).unwrap();
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let (c, passage) = single_passage_community(&engine);
    let req = request(vector_of(&engine, c), 5, 10);
    let before = engine.search_themes(&req).unwrap();
    assert_eq!(before.themes[0].theme_id, c as u32);
    assert_eq!(before.themes[0].passages[0].evidence_id, passage);

    // Hidden by this process: gone from the next answer here, and in a second process.
    engine
        .set_visibility(Target::Passage, &passage, Visibility::Hidden, Some("test"))
        .unwrap();
    assert!(!theme_ids(&engine, &req).contains(&(c as u32)));
    child("check-hidden", dir.path(), &passage, c);
    let ev = engine
        .fetch_evidence(std::slice::from_ref(&passage))
        .unwrap();
    assert_eq!(ev[0].status, EvidenceStatus::NotVisible);
    assert_eq!(ev[0].text, None);

    // Visible again, then hidden by a second process: this engine sees it without a new run.
    engine
        .set_visibility(Target::Passage, &passage, Visibility::Visible, None)
        .unwrap();
    assert_eq!(theme_ids(&engine, &req)[0], c as u32);
    child("hide", dir.path(), &passage, c);
    assert!(!theme_ids(&engine, &req).contains(&(c as u32)));
    assert_eq!(
        engine.visibility(Target::Passage, &passage).unwrap(),
        Visibility::Hidden
    );
}

fn summary_excluded(s: &RunSummary) -> usize {
    s.excluded_passages
}

#[test]
fn a_deleted_document_appears_nowhere_and_leaves_the_next_graph() {
    let dir = tempfile::tempdir().unwrap();
    run(&config(dir.path())).unwrap();
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let doc = "pmid:21645374";
    engine
        .set_visibility(
            Target::Document,
            doc,
            Visibility::Deleted,
            Some("retracted"),
        )
        .unwrap();
    let view = engine.view().unwrap();
    let snap = view.snapshot().unwrap().clone();
    let d = snap.document_row(doc).unwrap();
    let ids: Vec<String> = snap
        .document(d)
        .passages()
        .map(|p| snap.passage(p).id())
        .collect();
    // Every community's own vector, every passage it may show: none from the deleted document.
    for c in 0..snap.num_communities() {
        let a = engine
            .search_themes(&request(vector_of(&engine, c), 10, 10))
            .unwrap();
        for t in &a.themes {
            assert!(
                t.passages.iter().all(|p| p.document_key != doc),
                "theme {} shows {doc}",
                t.theme_id
            );
        }
    }
    for e in engine.fetch_evidence(&ids).unwrap() {
        assert_eq!(
            (e.status, e.visibility),
            (EvidenceStatus::NotVisible, Some(Visibility::Deleted))
        );
        assert!(e.text.is_none());
    }
    // The next run leaves its passages out of the graph; a hidden passage stays among the
    // run's passages (unhiding it works at once) but leaves the graph and the reports.
    let other_row = snap
        .entities()
        .flat_map(|e| snap.entity(e).passages())
        .find(|&p| snap.passage(p).document() != d)
        .unwrap();
    let other = snap.passage(other_row).id();
    engine
        .set_visibility(Target::Passage, &other, Visibility::Hidden, None)
        .unwrap();
    let second = run(&config(dir.path())).unwrap();
    assert_eq!(summary_excluded(&second), ids.len());
    engine.reload().unwrap();
    let view = engine.view().unwrap();
    let snap = view.snapshot().unwrap();
    let excluded: HashSet<PassageRow> =
        ids.iter().map(|id| snap.passage_row(id).unwrap()).collect();
    for e in snap.entities() {
        assert!(
            snap.entity(e)
                .passages()
                .iter()
                .all(|p| !excluded.contains(&p))
        );
    }
    let hidden = snap.passage_row(&other).unwrap();
    assert!(!snap.passage(hidden).text().is_empty());
    assert!(
        snap.entities()
            .all(|e| !snap.entity(e).passages().contains(hidden))
    );
    assert!(
        snap.communities()
            .all(|c| !snap.community(c).report_sources().contains(hidden))
    );
    assert!(
        snap.communities()
            .any(|c| !snap.community(c).report_sources().is_empty()),
        "reports name the passages they quote"
    );
    // Nothing the hidden passage fed is withdrawn from theme search: it fed nothing.
    assert!(view.withdrawn().communities.is_empty());
}

#[test]
fn every_status_is_reachable() {
    let dir = tempfile::tempdir().unwrap();
    // index_not_ready: nothing published yet.
    let empty = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let a = empty
        .search_themes(&ThemeRequest::text("anything"))
        .unwrap();
    assert_eq!(
        (a.status, a.index_state),
        (Status::IndexNotReady, Some(IndexState::NotReady))
    );

    run(&config(dir.path())).unwrap();
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let ok = engine
        .search_themes(&ThemeRequest::text("cancer surgery outcomes"))
        .unwrap();
    assert_eq!(
        (ok.status, ok.index_state),
        (Status::Ok, Some(IndexState::Ready))
    );
    assert!(ok.failures.is_empty());

    // empty_scope: nothing searched, no index checked.
    let mut req = ThemeRequest::text("cancer");
    req.scope = Scope::Documents(vec![]);
    let a = engine.search_themes(&req).unwrap();
    assert_eq!(
        (a.status, a.index_state, a.themes.len()),
        (Status::EmptyScope, None, 0)
    );

    // no_match: the read ran, but the scope's only key is unknown.
    req.scope = Scope::Documents(vec!["pmid:does-not-exist".into()]);
    let a = engine.search_themes(&req).unwrap();
    assert_eq!(
        (a.status, a.index_state),
        (Status::NoMatch, Some(IndexState::Ready))
    );

    // failed: a vector from another model, or a configured embedder of another dimension.
    let a = engine
        .search_themes(&request(
            QueryInput::Vector {
                model: "other-model".into(),
                vector: vec![0.1; 384],
            },
            5,
            3,
        ))
        .unwrap();
    assert_eq!(a.status, Status::Failed);
    assert!(
        a.failures[0].message.contains("agrag-hash-v2")
            && a.failures[0].message.contains("other-model")
    );
    let mismatched = Engine::open(
        dir.path(),
        EngineConfig {
            embedder: Some(Arc::new(HashEmbedder::new(64))),
            ..EngineConfig::default()
        },
    )
    .unwrap();
    let a = mismatched
        .search_themes(&ThemeRequest::text("cancer"))
        .unwrap();
    assert_eq!(a.status, Status::Failed);
    assert!(
        a.failures[0].message.contains("dim 384") && a.failures[0].message.contains("dim 64"),
        "{:?}",
        a.failures
    );

    // Invalid arguments are errors naming the field.
    for (limit, support, field) in [(0, 3, "limit"), (5, 0, "support_limit")] {
        let mut r = ThemeRequest::text("x");
        r.limit = limit;
        r.support_limit = support;
        match engine.search_themes(&r) {
            Err(EngineError::InvalidArgument { field: f, .. }) => assert_eq!(f, field),
            other => panic!("expected InvalidArgument for {field}, got {other:?}"),
        }
    }
    let ev = engine.fetch_evidence(&["nope#0".to_owned()]).unwrap();
    assert_eq!(ev[0].status, EvidenceStatus::Unknown);
}

#[test]
fn hidden_candidates_filling_the_window_give_truncated() {
    let dir = tempfile::tempdir().unwrap();
    run(&config(dir.path())).unwrap();
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    // limit 1 reads a window of 3 candidates; hide every passage supporting them.
    let query = vector_of(&engine, 0);
    let req = request(query, 1, 3);
    let view = engine.view().unwrap();
    let snap = view.snapshot().unwrap().clone();
    let dim = snap.dim();
    let q: Vec<f32> = snap.embedding_matrix()[..dim].to_vec();
    let scores = agrag_engine::query::theme::community_scores(&snap, &q);
    let window = agrag_engine::query::theme::top_k(&scores, 3);
    let mut hidden = HashSet::new();
    for &(c, _) in &window {
        for e in snap.community(CommunityRow(c)).members() {
            for p in snap.entity(e).passages() {
                if hidden.insert(p) {
                    engine
                        .set_visibility(
                            Target::Passage,
                            &snap.passage(p).id(),
                            Visibility::Hidden,
                            None,
                        )
                        .unwrap();
                }
            }
        }
    }
    // Some community below the window still has a visible passage: a theme exists that this
    // answer did not read, so it must say truncated.
    let exists_below = snap.communities().any(|c| {
        !window.iter().any(|w| w.0 == c.0)
            && snap.community(c).members().iter().any(|e| {
                snap.entity(e)
                    .passages()
                    .iter()
                    .any(|p| !hidden.contains(&p))
            })
    });
    assert!(exists_below);
    let a = engine.search_themes(&req).unwrap();
    assert_eq!(a.status, Status::NoMatch);
    assert!(a.themes.is_empty());
    assert!(
        a.truncated,
        "dropping the whole window must be reported as truncated"
    );
}

#[test]
fn a_one_document_scope_names_only_members_its_passages_mention() {
    let dir = tempfile::tempdir().unwrap();
    run(&config(dir.path())).unwrap();
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let doc = "pmid:21645374";
    let mut req = ThemeRequest::text("mitochondria programmed cell death plants");
    req.scope = Scope::Documents(vec![doc.into()]);
    req.limit = 10;
    req.support_limit = 10;
    let a = engine.search_themes(&req).unwrap();
    assert_eq!(a.status, Status::Ok);
    let view = engine.view().unwrap();
    let snap = view.snapshot().unwrap();
    let d = snap.document_row(doc).unwrap();
    for t in &a.themes {
        assert!(t.passages.iter().all(|p| p.document_key == doc));
        for name in &t.entities {
            let e = snap
                .entities()
                .find(|&e| snap.entity(e).name() == name)
                .unwrap();
            assert!(
                snap.entity(e)
                    .passages()
                    .iter()
                    .any(|p| snap.passage(p).document() == d),
                "{name} is named but no in-scope passage mentions it"
            );
        }
    }
}

/// On the real corpus, with the real linker's evidence: hiding a passage withdraws at once the
/// concepts only it justified and the words only it holds from its document, and keeps the
/// rest of the document findable.
#[test]
fn a_hidden_passage_no_longer_finds_its_document_by_its_own_concepts_or_words() {
    use agrag_engine::{ConceptRequest, ConceptSelector};
    let dir = tempfile::tempdir().unwrap();
    run(&config(dir.path())).unwrap();
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let view = engine.view().unwrap();
    let snap = view.snapshot().unwrap().clone();
    let all: roaring::RoaringBitmap = (0..snap.num_documents() as u32).collect();
    let evidence = snap
        .concept_evidence_of(&all)
        .unwrap()
        .expect("a new run has evidence");
    // A passage with a concept that only it justifies in its document, and a word that
    // occurs nowhere else in the document, while another concept stays.
    let words = |t: &str| -> HashSet<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() >= 6 && w.chars().all(|c| c.is_ascii_lowercase()))
            .map(str::to_owned)
            .collect()
    };
    let mut found = None;
    'docs: for d in 0..snap.num_documents() as u32 {
        let rows: Vec<u32> = snap
            .document(DocumentRow(d))
            .passages()
            .map(|p| p.0)
            .collect();
        for &p in &rows {
            let before: Vec<u32> = evidence.supported_concepts(d, |_| false).collect();
            let after: Vec<u32> = evidence.supported_concepts(d, |q| q == p).collect();
            let Some(&only) = before.iter().find(|c| !after.contains(c)) else {
                continue;
            };
            let Some(&stays) = after.first() else {
                continue;
            };
            let mut elsewhere = words(snap.document(DocumentRow(d)).title());
            for &q in rows.iter().filter(|&&q| q != p) {
                elsewhere.extend(words(snap.passage(PassageRow(q)).text()));
            }
            if let Some(w) = words(snap.passage(PassageRow(p)).text())
                .into_iter()
                .filter(|w| !elsewhere.contains(w))
                .min()
            {
                found = Some((d, p, only, stays, w));
                break 'docs;
            }
        }
    }
    let (d, p, only, stays, word) = found.expect("the fixture has such a passage");
    let key = snap.document(DocumentRow(d)).key().to_owned();
    let id = |c: u32| snap.concept(ConceptRow(c)).id().to_owned();
    let docs_of = |req: &ConceptRequest| -> Vec<String> {
        let mut req = req.clone();
        req.sample = 1000;
        engine
            .find_by_meaning(&req)
            .unwrap()
            .sample
            .into_iter()
            .map(|h| h.document_key)
            .collect()
    };
    let by_concept = ConceptRequest::new(ConceptSelector::Concept(id(only)));
    let by_word = ConceptRequest {
        keyword: Some(word.clone()),
        ..ConceptRequest::new(ConceptSelector::Concept(id(stays)))
    };
    assert!(docs_of(&by_concept).contains(&key));
    assert!(docs_of(&by_word).contains(&key), "{word}");

    engine
        .set_visibility(
            Target::Passage,
            &snap.passage(PassageRow(p)).id(),
            Visibility::Hidden,
            None,
        )
        .unwrap();
    assert!(!docs_of(&by_concept).contains(&key), "{}", id(only));
    assert!(!docs_of(&by_word).contains(&key), "{word}");
    let still = ConceptRequest::new(ConceptSelector::Concept(id(stays)));
    assert!(docs_of(&still).contains(&key), "{}", id(stays));
}
