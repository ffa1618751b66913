//! Hidden text is unsearchable at once, on every retrieval path, through the real binary:
//! concept membership, BM25 (keyword clause and query ranking), the vector clause, linked
//! coverage and theme search. Each path is asked for a word ("xylophone") and a concept
//! (*Zebrafish*) that occur only in passages that get hidden, before and after.

use std::path::Path;
use std::process::Command;

use agrag_engine::embed::{Embedder, HashEmbedder};
use agrag_engine::format::RunData;
use agrag_engine::format::tables::{
    CommunityRecord, ConceptRecord, DocumentRecord, EntityRecord, MembershipRecord, PassageRecord,
    ReportRecord,
};
use serde_json::Value;

use crate::common::publish;

/// `(document key, title, passages)`.
const DOCS: &[(&str, &str, &[&str])] = &[
    (
        "doc-a",
        "A heart study",
        &[
            "Aspirin lowers the risk of stroke in adults.",
            "Zebrafish models of xylophone syndrome were examined.",
        ],
    ),
    (
        "doc-b",
        "Stroke care",
        &["Aspirin and stroke outcomes in the elderly."],
    ),
    ("doc-c", "Rivers", &["Unrelated text about rivers."]),
    (
        "doc-d",
        "Lakes",
        &["Lakes were sampled.", "Zebrafish were counted."],
    ),
];

/// A run of `DOCS` with concepts *Aspirin* (ASP), *Stroke* (STR) and *Zebrafish* (ZEB) linked
/// as the pipeline links them, with their evidence; entities for the three concepts; and
/// communities 0 = {ASP, STR, ZEB} (level 0), 1 = {ASP, STR} and 2 = {ZEB} (level 1).
fn write_run(root: &Path) -> String {
    let embedder = HashEmbedder::new(64);
    let mut data = RunData {
        documents: DOCS
            .iter()
            .map(|(k, t, ps)| DocumentRecord {
                key: (*k).into(),
                title: (*t).into(),
                year: None,
                num_passages: ps.len() as u32,
                linked: *k != "doc-c",
            })
            .collect(),
        passages: DOCS
            .iter()
            .flat_map(|(k, _, ps)| {
                ps.iter().enumerate().map(move |(i, t)| PassageRecord {
                    passage_id: format!("{k}#{i}"),
                    document_key: (*k).into(),
                    position: i as u32,
                    text: (*t).into(),
                })
            })
            .collect(),
        concepts: [("ASP", "Aspirin"), ("STR", "Stroke"), ("ZEB", "Zebrafish")]
            .iter()
            .map(|(id, t)| ConceptRecord {
                concept_id: (*id).into(),
                preferred_term: (*t).into(),
                synonyms: vec![],
            })
            .collect(),
        ..RunData::default()
    };
    // (document, concept, passage of its only way)
    let links = [
        ("doc-a", "ASP", "doc-a#0"),
        ("doc-a", "STR", "doc-a#0"),
        ("doc-a", "ZEB", "doc-a#1"),
        ("doc-b", "ASP", "doc-b#0"),
        ("doc-b", "STR", "doc-b#0"),
        ("doc-d", "ZEB", "doc-d#1"),
    ];
    for (d, c, p) in links {
        data.document_concepts
            .push(("concept".into(), d.into(), c.into()));
        data.concept_evidence
            .push((d.into(), c.into(), 0, Some(p.into())));
    }
    let entity = |c: &str, name: &str, n: u32| EntityRecord {
        concept_id: c.into(),
        name: name.into(),
        num_passages: n,
        degree: 1.0,
    };
    data.entities = vec![
        entity("ASP", "Aspirin", 2),
        entity("STR", "Stroke", 2),
        entity("ZEB", "Zebrafish", 2),
    ];
    data.mentions = vec![
        (0, "doc-a#0".into(), 1),
        (0, "doc-b#0".into(), 1),
        (1, "doc-a#0".into(), 1),
        (1, "doc-b#0".into(), 1),
        (2, "doc-a#1".into(), 1),
        (2, "doc-d#1".into(), 1),
    ];
    data.relationships = vec![(0, 1, 2.0)];
    data.communities = vec![
        CommunityRecord {
            level: 0,
            parent: None,
            size: 3,
            is_leaf: false,
        },
        CommunityRecord {
            level: 1,
            parent: Some(0),
            size: 2,
            is_leaf: true,
        },
        CommunityRecord {
            level: 1,
            parent: Some(0),
            size: 1,
            is_leaf: true,
        },
    ];
    for e in 0..3 {
        data.membership.push(MembershipRecord {
            level: 0,
            entity: e,
            community: 0,
            parent: None,
            is_leaf: false,
        });
    }
    for (e, c) in [(0, 1), (1, 1), (2, 2)] {
        data.membership.push(MembershipRecord {
            level: 1,
            entity: e,
            community: c,
            parent: Some(0),
            is_leaf: true,
        });
    }
    let texts = [
        "Aspirin, Stroke and Zebrafish. Aspirin and stroke outcomes in the elderly.",
        "Aspirin and Stroke. Aspirin lowers the risk of stroke in adults.",
        "Zebrafish. Zebrafish models of xylophone syndrome were examined.",
    ];
    for (c, t) in texts.iter().enumerate() {
        data.reports.push(ReportRecord {
            level: data.communities[c].level,
            title: format!("theme {c}"),
            summary: String::new(),
            findings: vec![(*t).into()],
            rank: 1.0,
            full_content: (*t).into(),
        });
        data.report_embeddings.extend(embedder.embed(t).unwrap());
    }
    data.report_sources = vec![
        (0, "doc-b#0".into()),
        (1, "doc-a#0".into()),
        (2, "doc-a#1".into()),
    ];
    for (_, title, ps) in DOCS {
        let text = format!("{title}\n{}", ps.join("\n"));
        data.document_embeddings
            .extend(embedder.embed(&text).unwrap());
    }
    publish(root, &data, &embedder)
}

/// Aspirin documents, with the ten nearest to the hidden words as a vector clause.
const VECTOR_CLAUSE: &[&str] = &[
    "--term",
    "Aspirin",
    "--vector",
    "zebrafish xylophone",
    "--vector-k",
    "10",
];

fn engine(root: &Path, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
        .args(args)
        .arg("--root")
        .arg(root)
        .arg("--json")
        .env("EMBEDDING_PROVIDER", "hash")
        .env("EMBEDDING_DIM", "64")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"))
}

fn hide(root: &Path, passage: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
        .args([
            "visibility",
            "set",
            "--passage",
            passage,
            "--state",
            "hidden",
            "--root",
        ])
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The listed documents of a concept answer, in order.
fn listed(answer: &Value) -> Vec<String> {
    answer["sample"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["document_key"].as_str().unwrap().to_owned())
        .collect()
}

fn score_of(answer: &Value, key: &str) -> Option<f64> {
    answer["sample"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["document_key"] == key)
        .and_then(|h| h["score"].as_f64())
}

fn theme_ids(answer: &Value) -> Vec<u64> {
    let mut ids: Vec<u64> = answer["themes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["theme_id"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn hidden_words_and_concepts_are_unsearchable_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_run(root);
    let concepts = |extra: &[&str]| {
        let mut args = vec!["concepts"];
        args.extend_from_slice(extra);
        engine(root, &args)
    };

    // Before: every path finds doc-a through the words of its second passage.
    let zebrafish = concepts(&["--term", "Zebrafish"]);
    assert_eq!(listed(&zebrafish), ["doc-a", "doc-d"]);
    assert_eq!(zebrafish["coverage"]["linked"], 3);
    let keyword = concepts(&["--term", "Aspirin", "--keyword", "xylophone"]);
    assert_eq!(listed(&keyword), ["doc-a"]);
    let ranked = concepts(&["--term", "Aspirin", "--query", "xylophone"]);
    assert!(score_of(&ranked, "doc-a").unwrap() > 0.0, "{ranked}");
    let vector = concepts(VECTOR_CLAUSE);
    assert_eq!(listed(&vector)[0], "doc-a", "{vector}");
    let themes = engine(root, &["themes", "zebrafish xylophone", "--limit", "5"]);
    assert_eq!(theme_ids(&themes), [0, 1, 2], "{themes}");
    let aspirin_score = score_of(
        &concepts(&["--term", "Aspirin", "--query", "aspirin"]),
        "doc-a",
    );

    hide(root, "doc-a#1");

    // Concept membership: doc-a no longer holds Zebrafish; doc-d still does.
    let zebrafish = concepts(&["--term", "Zebrafish"]);
    assert_eq!(listed(&zebrafish), ["doc-d"], "{zebrafish}");
    assert_eq!(zebrafish["total"], 1);
    assert!(
        zebrafish["sample"][0]["matched"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m == "ZEB")
    );
    // Its other concepts stand, and name only what still stands.
    let aspirin = concepts(&["--term", "Aspirin"]);
    assert_eq!(listed(&aspirin), ["doc-a", "doc-b"]);
    // BM25: the keyword clause no longer finds it, the query no longer ranks it by the hidden
    // word, and a word of its visible passage scores as before (same corpus statistics, and
    // the title and visible passage are the same text as in the run's index but for the
    // hidden passage).
    let keyword = concepts(&["--term", "Aspirin", "--keyword", "xylophone"]);
    assert_eq!(keyword["total"], 0, "{keyword}");
    assert_eq!(keyword["status"], "no_match");
    let ranked = concepts(&["--term", "Aspirin", "--query", "xylophone"]);
    assert_eq!(score_of(&ranked, "doc-a"), Some(0.0), "{ranked}");
    let after = score_of(
        &concepts(&["--term", "Aspirin", "--query", "aspirin"]),
        "doc-a",
    );
    assert!(after.unwrap() > 0.0);
    // A shorter document: BM25's length normalisation raises the score a little, never to 0.
    assert!(after >= aspirin_score, "{after:?} vs {aspirin_score:?}");
    // The vector clause leaves out the document whose vector carries the hidden words.
    let vector = concepts(VECTOR_CLAUSE);
    assert_eq!(listed(&vector), ["doc-b"], "{vector}");
    // Theme search: community 2 quotes the hidden passage; 0 and 1 do not.
    let themes = engine(root, &["themes", "zebrafish xylophone", "--limit", "5"]);
    assert_eq!(theme_ids(&themes), [0, 1], "{themes}");

    // The other Zebrafish passage too: doc-d is no longer linked at all (coverage), and
    // community 0 has a member no visible passage mentions.
    hide(root, "doc-d#1");
    let zebrafish = concepts(&["--term", "Zebrafish"]);
    assert_eq!(zebrafish["status"], "no_match", "{zebrafish}");
    assert_eq!(zebrafish["coverage"]["linked"], 2, "{zebrafish}");
    assert_eq!(zebrafish["coverage"]["total"], 4);
    let themes = engine(root, &["themes", "zebrafish xylophone", "--limit", "5"]);
    assert_eq!(theme_ids(&themes), [1], "{themes}");

    // Visible again: everything comes back, without a new run.
    for p in ["doc-a#1", "doc-d#1"] {
        let out = Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
            .args([
                "visibility",
                "set",
                "--passage",
                p,
                "--state",
                "visible",
                "--root",
            ])
            .arg(root)
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    assert_eq!(
        listed(&concepts(&["--term", "Zebrafish"])),
        ["doc-a", "doc-d"]
    );
    assert_eq!(
        listed(&concepts(&["--term", "Aspirin", "--keyword", "xylophone"])),
        ["doc-a"]
    );
    let themes = engine(root, &["themes", "zebrafish xylophone", "--limit", "5"]);
    assert_eq!(theme_ids(&themes), [0, 1, 2]);
}

/// A run without concept evidence (written before it existed) withdraws every concept of a
/// document that has a hidden passage, rather than guess which ones the passage justified.
#[test]
fn a_run_without_evidence_withdraws_every_concept_of_a_partly_hidden_document() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let run_id = write_run(root);
    // Remove the evidence from the manifest and the folder, as in a run that predates it.
    let run_dir = root.join("runs").join(&run_id);
    std::fs::remove_file(run_dir.join("concept_evidence.parquet")).unwrap();
    let manifest_path = run_dir.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest["files"]
        .as_array_mut()
        .unwrap()
        .retain(|f| f["name"] != "concept_evidence.parquet");
    let bytes = manifest.to_string();
    std::fs::write(&manifest_path, &bytes).unwrap();
    std::fs::write(
        run_dir.join("manifest.blake3"),
        blake3::hash(bytes.as_bytes()).to_hex().as_str(),
    )
    .unwrap();

    let aspirin = engine(root, &["concepts", "--term", "Aspirin"]);
    assert_eq!(listed(&aspirin), ["doc-a", "doc-b"], "{aspirin}");
    hide(root, "doc-a#1");
    let aspirin = engine(root, &["concepts", "--term", "Aspirin"]);
    assert_eq!(listed(&aspirin), ["doc-b"], "{aspirin}");
}
