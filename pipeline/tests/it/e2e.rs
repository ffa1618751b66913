//! End-to-end: the pipeline on a fixture cut from the real corpus (60 PubMedQA documents) with
//! the full shipped MeSH vocabulary, then the engine on the published snapshot.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use agrag_engine::embed::HashEmbedder;
use agrag_engine::format::{Layout, Manifest, Verify, verify_run};
use agrag_engine::query::theme::Status;
use agrag_engine::snapshot::Snapshot;
use agrag_engine::{Engine, EngineConfig, Scope, ThemeRequest};
use agrag_pipeline::leiden::LeidenConfig;
use agrag_pipeline::link::LinkConfig;
use agrag_pipeline::report::ExtractiveReportWriter;
use agrag_pipeline::run::{RunConfig, run};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The pipeline on the 60-document fixture with the full MeSH, hash embedder, 2 threads.
pub(crate) fn fixture_config(root: &Path) -> RunConfig {
    RunConfig {
        root: root.to_owned(),
        documents: repo().join("data/fixtures/pubmedqa-60.jsonl"),
        vocabulary: repo().join("data/mesh"),
        threads: Some(2),
        link: LinkConfig::default(),
        leiden: LeidenConfig::default(),
        embedder: Arc::new(HashEmbedder::default()),
        report_writer: Arc::new(ExtractiveReportWriter),
        community_vectors: agrag_pipeline::report::CommunityVectors::default(),
        progress: false,
        allow_empty: false,
        full: false,
    }
}

/// Components of `members` in the graph of `edges` restricted to them.
fn is_connected(members: &[u32], adj: &HashMap<u32, Vec<u32>>) -> bool {
    let set: HashSet<u32> = members.iter().copied().collect();
    let mut seen = HashSet::from([members[0]]);
    let mut stack = vec![members[0]];
    while let Some(u) = stack.pop() {
        for &v in adj.get(&u).map_or(&[][..], Vec::as_slice) {
            if set.contains(&v) && seen.insert(v) {
                stack.push(v);
            }
        }
    }
    seen.len() == set.len()
}

#[test]
fn run_publishes_a_valid_snapshot_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let summary = run(&fixture_config(dir.path())).unwrap();
    assert_eq!(summary.documents, 60);
    assert!(summary.passages > 150, "{}", summary.passages);
    assert!(
        summary.mean_mentions_per_passage > 2.0,
        "{}",
        summary.mean_mentions_per_passage
    );
    assert!(summary.entities > 100 && summary.edges > 300, "{summary:?}");
    assert!(summary.modularity > 0.2, "{}", summary.modularity);

    // LATEST names the run; every file matches the manifest's sizes and checksums.
    let layout = Layout::new(dir.path());
    assert_eq!(
        layout.read_latest().unwrap().as_deref(),
        Some(summary.run_id.as_str())
    );
    let run_dir = layout.run_dir(&summary.run_id);
    let manifest = Manifest::read(&run_dir).unwrap();
    verify_run(&run_dir, &manifest, Verify::Checksums).unwrap();
    for name in [
        "documents.parquet",
        "passages.parquet",
        "concepts.parquet",
        "concept_edges.parquet",
        "document_concepts.parquet",
        "entities.parquet",
        "mentions.parquet",
        "relationships.parquet",
        "communities.parquet",
        "membership.parquet",
        "reports.parquet",
        "report_embeddings.parquet",
        "report_embeddings.arrow",
        "document_embeddings.parquet",
        "document_embeddings.arrow",
        "text_embeddings.arrow",
        "document_links.arrow",
        "text_index/meta.json",
    ]
    .iter()
    .chain(crate::parquet::MAPPED)
    {
        assert!(
            manifest.file(name).is_some(),
            "manifest lacks {name}: {:?}",
            manifest.files
        );
    }
    assert_eq!(manifest.embedder.model, "agrag-hash-v2");
    let snap = Snapshot::open_run(&run_dir).unwrap();
    assert_eq!(snap.num_documents(), 60);
    assert_eq!(snap.num_entities(), summary.entities);

    // Membership: every entity has exactly one community at level 0, at most one per level,
    // and exactly one leaf; every community is connected in the entity graph.
    let rel = agrag_engine::format::reader::read_parquet(
        &run_dir.join("relationships.parquet"),
        &agrag_engine::format::tables::relationships::schema(),
        Some(&summary.run_id),
    )
    .unwrap();
    let src = rel
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::UInt32Array>()
        .unwrap();
    let dst = rel
        .column(1)
        .as_any()
        .downcast_ref::<arrow_array::UInt32Array>()
        .unwrap();
    let mut adj: HashMap<u32, Vec<u32>> = HashMap::new();
    for i in 0..rel.num_rows() {
        adj.entry(src.value(i)).or_default().push(dst.value(i));
        adj.entry(dst.value(i)).or_default().push(src.value(i));
    }
    let mut per_level: HashMap<(u32, u32), u32> = HashMap::new();
    for c in snap.communities() {
        let members = snap.community(c).members();
        assert!(!members.is_empty(), "community {c} is empty");
        assert!(
            is_connected(members.as_u32s(), &adj),
            "community {c} is not connected"
        );
        for e in members.as_u32s().iter().copied() {
            *per_level.entry((snap.community(c).level(), e)).or_insert(0) += 1;
        }
    }
    assert!(per_level.values().all(|&n| n == 1));
    for e in 0..summary.entities as u32 {
        assert!(
            per_level.contains_key(&(0, e)),
            "entity {e} has no level-0 community"
        );
    }

    // The engine answers a theme question from it.
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let mut req = ThemeRequest::text(
        "Do mitochondria play a role in programmed cell death of lace plant leaves?",
    );
    req.support_limit = 5;
    let answer = engine.search_themes(&req).unwrap();
    assert_eq!(answer.status, Status::Ok);
    assert!(!answer.themes.is_empty() && answer.themes.len() <= 5);
    let keys: HashSet<&str> = answer
        .themes
        .iter()
        .flat_map(|t| t.passages.iter().map(|p| p.document_key.as_str()))
        .collect();
    assert!(
        keys.contains("pmid:21645374"),
        "the lace-plant abstract supports a theme: {keys:?}"
    );
    for t in &answer.themes {
        assert!(t.entities.len() <= 5 && !t.entities.is_empty());
        assert!(t.passages.len() <= 5);
        assert!(
            t.passages
                .windows(2)
                .all(|w| w[0].num_members >= w[1].num_members)
        );
    }
    assert!(answer.themes.windows(2).all(|w| w[0].score >= w[1].score));

    // A one-document scope returns only that document's passages.
    req.scope = Scope::Documents(vec!["pmid:21645374".into()]);
    let scoped = engine.search_themes(&req).unwrap();
    assert_eq!(scoped.status, Status::Ok);
    assert!(
        scoped
            .themes
            .iter()
            .all(|t| t.passages.iter().all(|p| p.document_key == "pmid:21645374"))
    );

    // A question the hashing embedder reads nothing of embeds to the zero vector: no match,
    // not the first themes by id with score 0.
    req.scope = Scope::All;
    req.query = agrag_engine::QueryInput::Text("🫀💊 ?!".into());
    let nothing = engine.search_themes(&req).unwrap();
    assert_eq!(nothing.status, Status::NoMatch, "{nothing:?}");
    assert!(nothing.themes.is_empty() && nothing.run_id.is_some());
}

#[test]
fn same_seed_gives_the_same_tables_whatever_the_thread_count() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let mut ca = fixture_config(a.path());
    ca.threads = Some(1);
    let mut cb = fixture_config(b.path());
    cb.threads = Some(2);
    let sa = run(&ca).unwrap();
    let sb = run(&cb).unwrap();
    let ra = Layout::new(a.path()).run_dir(&sa.run_id);
    let rb = Layout::new(b.path()).run_dir(&sb.run_id);
    for table in [
        "membership.parquet",
        "relationships.parquet",
        "reports.parquet",
        "mentions.parquet",
    ] {
        let read = |dir: &Path| {
            let f = std::fs::File::open(dir.join(table)).unwrap();
            let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
                .unwrap()
                .build()
                .unwrap();
            r.map(|b| b.unwrap()).collect::<Vec<_>>()
        };
        let (ta, tb) = (read(&ra), read(&rb));
        if table == "membership.parquet" {
            // Equal but for the run_id column.
            assert_eq!(
                ta[0].project(&[1, 2, 3, 4, 5]).unwrap(),
                tb[0].project(&[1, 2, 3, 4, 5]).unwrap()
            );
        } else {
            assert_eq!(ta, tb, "{table} differs");
        }
    }
}

fn pipeline_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agrag-pipeline"))
}

fn assert_nothing_published(root: &Path) {
    assert!(!root.join("LATEST").exists(), "LATEST must not exist");
    let runs = Layout::new(root).list_runs().unwrap();
    assert!(runs.is_empty(), "no run may be published: {runs:?}");
    if let Ok(entries) = std::fs::read_dir(root.join("runs")) {
        assert_eq!(entries.count(), 0, "no staging folder may be left");
    }
}

/// Runs `agrag-pipeline run --root ROOT ARGS`, checks that it exits 2 and publishes nothing,
/// and returns what it wrote to stderr. `case` names the run in a failed assertion.
fn refused_run(root: &Path, args: &[&std::ffi::OsStr], case: &str) -> String {
    let out = pipeline_bin()
        .args(["run", "--root"])
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{case}: {stderr}");
    assert_nothing_published(root);
    stderr
}

#[test]
fn bad_input_fails_clearly_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let vocab = repo().join("data/mesh");
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "cannot read"),
        ("{\"document_key\":\"a\",\"passages\":[\"Aspirin.\"]}\n{\"document_key\": \"b\", \"passages\": [\n".into(), ":2: malformed JSON"),
        ("\n".into(), "the corpus holds no document"),
        ("{\"document_key\":\"a\",\"passages\":[\"x\"]}\n{\"document_key\":\"a\",\"passages\":[\"y\"]}\n".into(), ":2: duplicate document_key \"a\""),
    ];
    for (i, (content, expected)) in cases.iter().enumerate() {
        let docs = dir.path().join(format!("docs{i}.jsonl"));
        if i > 0 {
            std::fs::write(&docs, content).unwrap();
        }
        let case = format!("case {i}");
        let stderr = refused_run(
            &root,
            &[
                "--documents".as_ref(),
                docs.as_os_str(),
                "--vocabulary".as_ref(),
                vocab.as_os_str(),
            ],
            &case,
        );
        assert!(stderr.contains(expected), "{case}: {stderr}");
        assert!(stderr.contains("nothing was published"), "{case}: {stderr}");
    }
    // A bad parameter is named too.
    for (option, value, named) in [
        ("--resolution", "-1", "resolution"),
        ("--tolerance", "-0.5", "tolerance"),
        ("--tolerance", "NaN", "tolerance"),
    ] {
        let case = format!("{option} {value}");
        let stderr = refused_run(&root, &[option.as_ref(), value.as_ref()], &case);
        assert!(stderr.contains(named), "{case}: {stderr}");
    }
}

#[test]
fn a_failed_run_keeps_the_published_one() {
    let dir = tempfile::tempdir().unwrap();
    let first = run(&fixture_config(dir.path())).unwrap();
    let mut bad = fixture_config(dir.path());
    bad.documents = dir.path().join("missing.jsonl");
    assert!(run(&bad).is_err());
    let layout = Layout::new(dir.path());
    assert_eq!(
        layout.read_latest().unwrap().as_deref(),
        Some(first.run_id.as_str())
    );
    assert_eq!(layout.list_runs().unwrap(), vec![first.run_id]);
}

/// `gc` on a mistyped root says so (exit 2) instead of reporting "0 runs removed".
#[test]
fn gc_refuses_a_folder_that_is_not_a_snapshot_root() {
    let dir = tempfile::tempdir().unwrap();
    let out = pipeline_bin()
        .args(["gc", "--keep", "1", "--root"])
        .arg(dir.path().join("typo"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not a snapshot root"), "{stderr}");
}

/// `--help` states the default of every detection option, taken from `LeidenConfig::default`.
#[test]
fn help_shows_the_default_of_every_detection_option() {
    let d = LeidenConfig::default();
    for command in ["run", "detect-graph"] {
        let out = Command::new(env!("CARGO_BIN_EXE_agrag-pipeline"))
            .args([command, "--help"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        for (option, default) in [
            ("--seed", d.seed.to_string()),
            ("--resolution", d.resolution.to_string()),
            ("--randomness", d.randomness.to_string()),
            ("--tolerance", d.tolerance.to_string()),
            ("--max-cluster-size", d.max_cluster_size.to_string()),
            ("--max-levels", d.max_levels.to_string()),
            ("--objective", "modularity".to_owned()),
            ("--threads", "one per core".to_owned()),
        ] {
            let at = help
                .find(&format!("{option} <"))
                .unwrap_or_else(|| panic!("{command}: no {option} in\n{help}"));
            let entry = &help[at..];
            let end = entry[2..].find("\n      --").map_or(entry.len(), |e| e + 2);
            assert!(
                entry[..end].contains(&format!("[default: {default}]")),
                "{command} {option}: {}",
                &entry[..end]
            );
        }
    }
}

/// README's sample output is what the binary prints: the same lines, in the same order, with
/// the same labels (the figures belong to the shipped corpus and the embedder, so they are
/// not compared).
#[test]
fn readme_sample_output_has_the_layout_the_binary_prints() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme
        .find("```text\npublished run ")
        .expect("README has a sample run");
    let block = &readme[start + "```text\n".len()..];
    let block = &block[..block.find("\nstatus: ").expect("then a sample answer")];
    let label = |line: &str| -> String {
        line.split("  ")
            .map(str::trim)
            .find(|s| !s.is_empty())
            .unwrap_or_default()
            .split(|c: char| c.is_ascii_digit())
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agrag-pipeline"))
        .args(["run", "--threads", "2", "--root"])
        .arg(dir.path())
        .arg("--documents")
        .arg(repo().join("data/fixtures/pubmedqa-60.jsonl"))
        .env("EMBEDDING_PROVIDER", "hash")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    let want: Vec<String> = block.lines().map(label).collect();
    let got: Vec<String> = printed.lines().map(label).collect();
    assert_eq!(got, want, "README:\n{block}\nprinted:\n{printed}");
}

/// The string column `name` of every row of Parquet file `table` of the run in `dir`.
fn strings_of(dir: &Path, table: &str, name: &str) -> Vec<Option<String>> {
    use arrow_array::Array as _;
    let f = std::fs::File::open(dir.join(table)).unwrap();
    let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for b in r {
        let b = b.unwrap();
        let col = b.column_by_name(name).unwrap();
        if let Some(s) = col.as_any().downcast_ref::<arrow_array::StringArray>() {
            out.extend((0..s.len()).map(|i| s.is_valid(i).then(|| s.value(i).to_owned())));
        } else {
            let u = col
                .as_any()
                .downcast_ref::<arrow_array::UInt32Array>()
                .unwrap();
            // Zero-padded, so that string order is number order.
            out.extend((0..u.len()).map(|i| Some(format!("{:010}", u.value(i)))));
        }
    }
    out
}

/// Rows of `table` as tuples of the named columns.
fn rows_of(dir: &Path, table: &str, names: &[&str]) -> Vec<Vec<Option<String>>> {
    let cols: Vec<Vec<Option<String>>> = names.iter().map(|n| strings_of(dir, table, n)).collect();
    (0..cols[0].len())
        .map(|i| cols.iter().map(|c| c[i].clone()).collect())
        .collect()
}

/// The writer sorts integer rows by the ranks of the strings they stand for; on the real
/// fixture every table is sorted by its strings as the README says (passage ids compared as
/// strings, so `k#10` before `k#2`), deduplicated where it says so, and every passage id is
/// `<document_key>#<position>` of a passage of the run.
#[test]
fn published_tables_are_sorted_by_their_strings() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(&fixture_config(dir.path())).unwrap();
    let run_dir = Layout::new(dir.path()).run_dir(&s.run_id);
    let passages = rows_of(
        &run_dir,
        "passages.parquet",
        &["passage_id", "document_key", "position"],
    );
    let mut ids = HashSet::new();
    for p in &passages {
        let (id, key, pos) = (
            p[0].clone().unwrap(),
            p[1].clone().unwrap(),
            p[2].clone().unwrap(),
        );
        assert_eq!(id, format!("{key}#{}", pos.parse::<u32>().unwrap()));
        ids.insert(id);
    }
    assert!(
        passages
            .windows(2)
            .all(|w| (&w[0][1], &w[0][2]) < (&w[1][1], &w[1][2]))
    );
    let strictly = |rows: &[Vec<Option<String>>]| rows.windows(2).all(|w| w[0] < w[1]);
    let checks: &[(&str, &[&str], bool)] = &[
        (
            "mentions.parquet",
            &["entity_id", "passage_id", "num_occurrences"],
            false,
        ),
        (
            "report_sources.parquet",
            &["community_id", "passage_id"],
            true,
        ),
        (
            "concept_evidence.parquet",
            &["document_key", "concept_id", "way", "passage_id"],
            true,
        ),
        (
            "document_concepts.parquet",
            &["node_field", "document_key", "concept_id"],
            true,
        ),
        (
            "concept_edges.parquet",
            &["child", "parent", "relation"],
            true,
        ),
        ("concepts.parquet", &["concept_id"], true),
    ];
    for &(table, names, strict) in checks {
        let rows = rows_of(&run_dir, table, names);
        assert!(rows.len() > 1, "{table}");
        if strict {
            assert!(strictly(&rows), "{table} is not sorted and deduplicated");
        } else {
            assert!(
                rows.windows(2).all(|w| w[0] <= w[1]),
                "{table} is not sorted"
            );
        }
        if let Some(i) = names.iter().position(|n| *n == "passage_id") {
            assert!(
                rows.iter()
                    .all(|r| r[i].as_ref().is_none_or(|p| ids.contains(p))),
                "{table} names a passage the run lacks"
            );
        }
    }
}
