//! search_themes through the IVF candidate read (runs of ≥ `ivf::MIN_ROWS` communities).

use agrag_engine::embed::hash::HASH_MODEL;
use agrag_engine::embed::{Embedder, HashEmbedder, l2_normalize};
use agrag_engine::format::tables::report_ivf;
use agrag_engine::format::tables::{
    CommunityRecord, ConceptRecord, DocumentRecord, EntityRecord, MembershipRecord, PassageRecord,
    ReportRecord,
};
use agrag_engine::format::{Layout, RunData};
use agrag_engine::ivf::{CandidateSearch, MIN_ROWS};
use agrag_engine::query::theme::Status;
use agrag_engine::visibility::{Target, Visibility};
use agrag_engine::{
    CommunityRow, Engine, EngineConfig, EngineError, QueryInput, Scope, ThemeRequest,
};

const DIM: usize = 16;

/// Row `i` of a clustered set of unit vectors: 64 topics, deterministic.
fn vector(i: usize) -> Vec<f32> {
    let h = |a: usize, b: usize| {
        let x = (a as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (b as u64).wrapping_mul(31);
        ((x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 40) as f32 / (1u64 << 24) as f32
            - 0.5
    };
    let topic = i % 64;
    let mut v: Vec<f32> = (0..DIM)
        .map(|d| h(1_000 + topic, d) + 0.3 * h(i, d + 100))
        .collect();
    l2_normalize(&mut v);
    v
}

/// `n` communities of one entity each, each entity mentioned by its own one-passage document.
fn write(root: &std::path::Path, n: usize) -> String {
    publish(root, &data(n, 1))
}

fn publish(root: &std::path::Path, data: &RunData) -> String {
    crate::common::publish(root, data, &HashEmbedder::new(DIM))
}

/// The rows of [`write`], community `c` holding `per_community` vectors: `vector(c)`, then
/// `vector(k·n + c)` for k = 1, 2, …
fn data(n: usize, per_community: usize) -> RunData {
    let key = |c: usize| format!("doc{c:06}");
    let mut data = RunData {
        concepts: vec![ConceptRecord {
            concept_id: "C0".into(),
            preferred_term: "Topic".into(),
            synonyms: vec![],
        }],
        ..RunData::default()
    };
    for c in 0..n {
        data.documents.push(DocumentRecord {
            key: key(c),
            title: format!("document {c}"),
            year: None,
            num_passages: 1,
            linked: true,
        });
        data.passages.push(PassageRecord {
            passage_id: format!("{}#0", key(c)),
            document_key: key(c),
            position: 0,
            text: format!("passage {c}"),
        });
        data.entities.push(EntityRecord {
            concept_id: "C0".into(),
            name: format!("entity {c}"),
            num_passages: 1,
            degree: 1.0,
        });
        data.mentions.push((c as u32, format!("{}#0", key(c)), 1));
        data.membership.push(MembershipRecord {
            level: 0,
            entity: c as u32,
            community: c as u32,
            parent: None,
            is_leaf: true,
        });
        data.communities.push(CommunityRecord {
            level: 0,
            parent: None,
            size: 1,
            is_leaf: true,
        });
        data.reports.push(ReportRecord {
            level: 0,
            title: format!("theme {c}"),
            summary: String::new(),
            findings: vec![],
            rank: 1.0,
            full_content: format!("theme {c}"),
        });
        for k in 0..per_community {
            data.report_embeddings.extend(vector(k * n + c));
            data.report_embedding_communities.push(c as u32);
        }
        data.document_embeddings.extend(vector(c));
    }
    data
}

fn ask(engine: &Engine, i: usize, limit: usize) -> Vec<u32> {
    let a = engine
        .search_themes(&ThemeRequest {
            query: QueryInput::Vector {
                model: HASH_MODEL.into(),
                vector: vector(i),
            },
            scope: Scope::All,
            limit,
            support_limit: 1,
            timeout: None,
        })
        .unwrap();
    assert_eq!(a.status, Status::Ok);
    a.themes.iter().map(|t| t.theme_id).collect()
}

#[test]
fn ivf_read_finds_what_the_exact_scan_finds_and_respects_visibility() {
    let dir = tempfile::tempdir().unwrap();
    let n = MIN_ROWS + 100;
    let run_id = write(dir.path(), n);
    let manifest =
        agrag_engine::format::Manifest::read(&Layout::new(dir.path()).run_dir(&run_id)).unwrap();
    assert!(manifest.file(report_ivf::CENTROIDS_FILE).is_some());
    assert_eq!(
        manifest.file(report_ivf::LISTS_FILE).map(|f| f.rows),
        Some(n as u64)
    );

    let ivf = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let exact = Engine::open(
        dir.path(),
        EngineConfig {
            candidate_search: CandidateSearch::Exact,
            ..EngineConfig::default()
        },
    )
    .unwrap();
    assert!(
        ivf.view()
            .unwrap()
            .snapshot()
            .unwrap()
            .report_ivf()
            .is_some()
    );
    let (mut same, mut total) = (0, 0);
    for i in (0..n).step_by(211) {
        let a = ask(&ivf, i, 5);
        let b = ask(&exact, i, 5);
        // A report's own vector is its best match, through either read.
        assert_eq!(a[0], i as u32);
        assert_eq!(b[0], i as u32);
        total += b.len();
        same += b.iter().filter(|t| a.contains(t)).count();
    }
    assert!(
        same * 100 >= total * 95,
        "IVF kept {same} of {total} exact themes"
    );

    // Hiding the best theme's only passage removes it from the IVF answer too.
    ivf.set_visibility(Target::Passage, "doc000211#0", Visibility::Hidden, None)
        .unwrap();
    assert!(!ask(&ivf, 211, 5).contains(&211));
}

#[test]
fn a_corrupt_ivf_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = write(dir.path(), MIN_ROWS);
    let path = Layout::new(dir.path())
        .run_dir(&run_id)
        .join(report_ivf::LISTS_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&path, bytes).unwrap();
    let err = agrag_engine::snapshot::Snapshot::open_run(&Layout::new(dir.path()).run_dir(&run_id))
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::Corrupt { path: p, .. } if p.ends_with(report_ivf::LISTS_FILE)),
        "{err:?}"
    );
}

#[test]
fn a_community_is_found_by_its_best_vector_through_either_read() {
    let dir = tempfile::tempdir().unwrap();
    let n = MIN_ROWS / 2 + 50;
    let run_id = write_vectors(dir.path(), n);
    let manifest =
        agrag_engine::format::Manifest::read(&Layout::new(dir.path()).run_dir(&run_id)).unwrap();
    // 2 vectors per community: ≥ MIN_ROWS rows, so an IVF index over the rows.
    assert_eq!(
        manifest.file(report_ivf::LISTS_FILE).map(|f| f.rows),
        Some(2 * n as u64)
    );
    let ivf = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let exact = Engine::open(
        dir.path(),
        EngineConfig {
            candidate_search: CandidateSearch::Exact,
            ..EngineConfig::default()
        },
    )
    .unwrap();
    {
        let view = exact.view().unwrap();
        let snap = view.snapshot().unwrap();
        assert_eq!(snap.num_report_vectors(), 2 * n);
        assert_eq!(snap.community(CommunityRow(3)).report_rows(), 6..8);
    }
    for c in (0..n).step_by(157) {
        // Its first and its second vector each rank community c first, and once only.
        for q in [c, n + c] {
            for engine in [&ivf, &exact] {
                let themes = ask(engine, q, 5);
                assert_eq!(themes[0], c as u32, "query vector {q}");
                let mut unique = themes.clone();
                unique.sort_unstable();
                unique.dedup();
                assert_eq!(unique.len(), themes.len(), "{themes:?}");
            }
        }
    }
}

fn write_vectors(root: &std::path::Path, n: usize) -> String {
    publish(root, &data(n, 2))
}

#[test]
fn report_vectors_out_of_community_order_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = data(3, 1);
    d.report_embedding_communities = vec![0, 2, 1];
    let err = agrag_engine::format::write_run(
        &Layout::new(dir.path()),
        &agrag_engine::format::new_run_id(),
        &d,
        HashEmbedder::new(DIM).identity(),
        serde_json::json!({}),
        "fingerprint".into(),
        serde_json::json!({}),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("report embedding communities"),
        "{err}"
    );
}
