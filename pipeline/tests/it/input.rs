//! Input as users bring it, through the binary: compressed and byte-order-marked files, other
//! encodings, ambiguous and empty passages, HTML entities and Unicode forms in the text, a
//! vocabulary that links nothing, an output path that is the input, and communities that
//! cannot be split.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use agrag_engine::format::reader::read_parquet;
use agrag_engine::format::tables;
use agrag_engine::format::{Layout, Manifest};
use arrow_array::{Array, StringArray};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn pipeline() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agrag-pipeline"));
    c.env("EMBEDDING_PROVIDER", "hash")
        .env_remove("EMBEDDING_MODEL")
        .env_remove("EMBEDDING_DIM")
        .env_remove("AGRAG_ROOT");
    c
}

/// A small vocabulary: a few concepts whose terms the documents below use, one with an
/// ampersand and one with accents.
fn vocabulary(dir: &Path) -> PathBuf {
    let v = dir.join("vocabulary");
    std::fs::create_dir_all(&v).unwrap();
    std::fs::write(
        v.join("concepts.tsv"),
        "concept_id\tpreferred_term\tsynonyms\n\
         C1\tAspirin\tAcetylsalicylic Acid\n\
         C2\tMyocardial Infarction\tHeart Attack\n\
         C3\tMénière Disease\t\n\
         C4\tJohnson & Johnson\t\n\
         C5\tStroke\t\n\
         C6\tCardiovascular Diseases\t\n",
    )
    .unwrap();
    std::fs::write(
        v.join("broader.tsv"),
        "child_id\tparent_id\nC2\tC6\nC5\tC6\n",
    )
    .unwrap();
    v
}

/// A vocabulary of one concept that no document mentions (a broken export, say).
fn unrelated_vocabulary(dir: &Path) -> PathBuf {
    let v = dir.join("unrelated");
    std::fs::create_dir_all(&v).unwrap();
    std::fs::write(
        v.join("concepts.tsv"),
        "concept_id\tpreferred_term\tsynonyms\nX1\tZyxwvutsrq\t\n",
    )
    .unwrap();
    std::fs::write(v.join("broader.tsv"), "child_id\tparent_id\n").unwrap();
    v
}

/// Three documents that link to the vocabulary above.
const DOCUMENTS: &str = concat!(
    r#"{"document_key":"d1","title":"Aspirin after a heart attack","passages":["Aspirin lowers the risk of a second myocardial infarction.","Stroke and myocardial infarction share risk factors."]}"#,
    "\n",
    r#"{"document_key":"d2","title":"Stroke","passages":["Aspirin was given after the stroke.","Heart attack and stroke are cardiovascular diseases."]}"#,
    "\n",
    r#"{"document_key":"d3","title":"Aspirin","text":"Acetylsalicylic acid after myocardial infarction.\n\nStroke was rare."}"#,
    "\n"
);

fn run(root: &Path, documents: &Path, vocabulary: &Path, extra: &[&str]) -> Output {
    pipeline()
        .args(["run", "--json", "--root"])
        .arg(root)
        .arg("--documents")
        .arg(documents)
        .arg("--vocabulary")
        .arg(vocabulary)
        .args(extra)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn summary(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn latest(root: &Path) -> Option<String> {
    Layout::new(root).read_latest().unwrap()
}

/// A root with one good run published; returns its run id.
fn published(dir: &Path, vocabulary: &Path) -> (PathBuf, String) {
    let root = dir.join("root");
    let docs = dir.join("good.jsonl");
    std::fs::write(&docs, DOCUMENTS).unwrap();
    let s = summary(&run(&root, &docs, vocabulary, &[]));
    let id = s["run_id"].as_str().unwrap().to_owned();
    assert_eq!(latest(&root).as_deref(), Some(id.as_str()));
    (root, id)
}

/// Asserts a refused run: exit 2, every `needle` in the message, and the root as it was.
fn assert_refused(o: &Output, needles: &[&str], root: &Path, latest_before: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    for n in needles {
        assert!(e.contains(n), "{n:?} not in: {e}");
    }
    assert!(e.contains("nothing was published"), "{e}");
    assert_eq!(latest(root).as_deref(), Some(latest_before));
    assert_eq!(
        Layout::new(root).list_runs().unwrap(),
        vec![latest_before.to_owned()]
    );
}

#[test]
fn a_vocabulary_that_links_nothing_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let (root, good) = published(dir.path(), &vocabulary(dir.path()));
    let docs = dir.path().join("good.jsonl");
    let broken = unrelated_vocabulary(dir.path());
    let refused = run(&root, &docs, &broken, &[]);
    assert_refused(
        &refused,
        &[
            "0 entities",
            "0 communities",
            "0 of 3 documents linked",
            "unrelated",
            "--allow-empty",
        ],
        &root,
        &good,
    );
    // Asked for explicitly, the empty run is published.
    let s = summary(&run(&root, &docs, &broken, &["--allow-empty"]));
    assert_eq!(s["entities"], 0);
    assert_eq!(latest(&root).as_deref(), s["run_id"].as_str());
}

#[test]
fn gzip_and_a_byte_order_mark_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let vocab = vocabulary(dir.path());
    let gz_path = dir.path().join("documents.jsonl.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz_path).unwrap(),
        flate2::Compression::default(),
    );
    gz.write_all(DOCUMENTS.as_bytes()).unwrap();
    gz.finish().unwrap();
    let s = summary(&run(&dir.path().join("a"), &gz_path, &vocab, &[]));
    assert_eq!(s["documents"], 3);
    let bom = dir.path().join("bom.jsonl");
    std::fs::write(&bom, format!("\u{feff}{DOCUMENTS}")).unwrap();
    let t = summary(&run(&dir.path().join("b"), &bom, &vocab, &[]));
    assert_eq!(t["documents"], 3);
    assert_eq!(s["mentions"], t["mentions"]);
}

#[test]
fn other_encodings_ambiguous_fields_and_bad_bytes_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let vocab = vocabulary(dir.path());
    let (root, good) = published(dir.path(), &vocab);
    let utf16 = dir.path().join("utf16.jsonl");
    let bytes: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(DOCUMENTS.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    std::fs::write(&utf16, bytes).unwrap();
    assert_refused(
        &run(&root, &utf16, &vocab, &[]),
        &["utf16.jsonl", "UTF-16 (little-endian", "must be UTF-8"],
        &root,
        &good,
    );
    let latin1 = dir.path().join("latin1.jsonl");
    let mut bytes = DOCUMENTS.as_bytes().to_vec();
    bytes.extend_from_slice(b"{\"document_key\":\"d4\",\"passages\":[\"Caf\xe9\"]}\n");
    std::fs::write(&latin1, bytes).unwrap();
    assert_refused(
        &run(&root, &latin1, &vocab, &[]),
        &["latin1.jsonl:4:", "byte 0xE9", "not UTF-8"],
        &root,
        &good,
    );
    let both = dir.path().join("both.jsonl");
    std::fs::write(
        &both,
        format!(
            "{DOCUMENTS}{}\n",
            r#"{"document_key":"d4","passages":["Aspirin."],"text":"Stroke."}"#
        ),
    )
    .unwrap();
    assert_refused(
        &run(&root, &both, &vocab, &[]),
        &["both.jsonl:4:", "\"d4\"", "both `passages` and `text`"],
        &root,
        &good,
    );
}

/// The text of every passage of the run LATEST names, by passage id.
fn passages(root: &Path) -> Vec<(String, String)> {
    let layout = Layout::new(root);
    let id = latest(root).unwrap();
    let b = read_parquet(
        &layout.run_dir(&id).join("passages.parquet"),
        &tables::passages::schema(),
        Some(&id),
    )
    .unwrap();
    let col = |name: &str| {
        b.column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .clone()
    };
    let (ids, texts) = (col("passage_id"), col("text"));
    (0..ids.len())
        .map(|i| (ids.value(i).to_owned(), texts.value(i).to_owned()))
        .collect()
}

#[test]
fn empty_passages_are_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let vocab = vocabulary(dir.path());
    let docs = dir.path().join("docs.jsonl");
    std::fs::write(
        &docs,
        format!(
            "{DOCUMENTS}{}\n",
            r#"{"document_key":"d4","passages":["", "   ", "Aspirin for stroke.", "\n\t"]}"#
        ),
    )
    .unwrap();
    let root = dir.path().join("root");
    let s = summary(&run(&root, &docs, &vocab, &[]));
    assert_eq!(s["empty_passages_dropped"], 3);
    let stored = passages(&root);
    assert!(
        stored.iter().all(|(_, t)| !t.trim().is_empty()),
        "{stored:?}"
    );
    assert!(
        stored
            .iter()
            .any(|(id, t)| id == "d4#0" && t == "Aspirin for stroke."),
        "{stored:?}"
    );
    assert_eq!(s["passages"].as_u64().unwrap() as usize, stored.len());
    // The text summary says so too.
    let o = pipeline()
        .args(["run", "--root"])
        .arg(dir.path().join("text"))
        .arg("--documents")
        .arg(&docs)
        .arg("--vocabulary")
        .arg(&vocab)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("3 empty dropped"), "{out}");
}

/// The concept ids of each document's `concept` node field in the run LATEST names.
fn document_concepts(root: &Path) -> Vec<(String, String)> {
    let layout = Layout::new(root);
    let id = latest(root).unwrap();
    let b = read_parquet(
        &layout.run_dir(&id).join("document_concepts.parquet"),
        &tables::document_concepts::schema(),
        Some(&id),
    )
    .unwrap();
    let col = |name: &str| {
        b.column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .clone()
    };
    let (docs, fields, concepts) = (col("document_key"), col("node_field"), col("concept_id"));
    (0..docs.len())
        .filter(|&i| fields.value(i) == "concept")
        .map(|i| (docs.value(i).to_owned(), concepts.value(i).to_owned()))
        .collect()
}

#[test]
fn decomposed_unicode_and_html_entities_link_like_their_plain_forms() {
    let dir = tempfile::tempdir().unwrap();
    let vocab = vocabulary(dir.path());
    let docs = dir.path().join("docs.jsonl");
    // "Ménière" in NFD (e + U+0301, e + U+0300), an ampersand as an HTML entity, a full-width
    // and a line-broken term.
    std::fs::write(
        &docs,
        format!(
            "{DOCUMENTS}{}\n{}\n",
            r#"{"document_key":"d4","title":"Vertigo","passages":["Patients with Me\u0301nie\u0300re disease had a stroke.","Funded by Johnson &amp; Johnson; no &lt;conflicts&gt;."]}"#,
            r#"{"document_key":"d5","passages":["ＡＳＰＩＲＩＮ after a myocardial\n   infarction."]}"#,
        ),
    )
    .unwrap();
    let root = dir.path().join("root");
    summary(&run(&root, &docs, &vocab, &[]));
    let linked = document_concepts(&root);
    for (doc, concept) in [("d4", "C3"), ("d4", "C4"), ("d5", "C1"), ("d5", "C2")] {
        assert!(
            linked.iter().any(|(d, c)| d == doc && c == concept),
            "{doc} lacks {concept}: {linked:?}"
        );
    }
    // The stored text is the normal form: NFC, entities decoded once.
    let stored = passages(&root);
    let text = |id: &str| stored.iter().find(|(p, _)| p == id).unwrap().1.clone();
    assert_eq!(
        text("d4#0"),
        "Patients with M\u{e9}ni\u{e8}re disease had a stroke."
    );
    assert_eq!(text("d4#1"), "Funded by Johnson & Johnson; no <conflicts>.");
}

#[test]
fn detect_graph_refuses_to_write_its_membership_over_the_edge_list() {
    let dir = tempfile::tempdir().unwrap();
    let edges = dir.path().join("g.tsv");
    let content = "0\t1\n1\t2\n2\t0\n";
    std::fs::write(&edges, content).unwrap();
    let link = dir.path().join("link.tsv");
    std::os::unix::fs::symlink(&edges, &link).unwrap();
    // The same file through the same name, a `./` prefix, its parent folder and a symbolic
    // link either way round.
    let folder = dir.path().file_name().unwrap().to_str().unwrap();
    let cases = [
        ("g.tsv", "g.tsv".to_owned()),
        ("g.tsv", "./g.tsv".to_owned()),
        ("./g.tsv", format!("../{folder}/g.tsv")),
        ("g.tsv", "link.tsv".to_owned()),
        ("link.tsv", "g.tsv".to_owned()),
    ];
    for (edges_arg, out_arg) in &cases {
        let o = pipeline()
            .current_dir(dir.path())
            .args(["detect-graph", "--edges", edges_arg, "--membership-out"])
            .arg(out_arg)
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{edges_arg} / {out_arg}: {e}");
        assert!(e.contains("membership_out"), "{e}");
        assert!(e.contains(out_arg.as_str()), "{e}");
        assert!(e.contains("overwrite the input"), "{e}");
        assert_eq!(std::fs::read_to_string(&edges).unwrap(), content);
    }
    // Another file is written as before.
    let o = pipeline()
        .current_dir(dir.path())
        .args([
            "detect-graph",
            "--edges",
            "link.tsv",
            "--membership-out",
            "m.parquet",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.path().join("m.parquet").exists());
}

#[test]
fn leaves_that_cannot_be_split_are_counted_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    // A star of 301 nodes: Leiden finds no split of it.
    let star = dir.path().join("star.tsv");
    let edges: String = (1..=300).map(|v| format!("0\t{v}\n")).collect();
    std::fs::write(&star, edges).unwrap();
    let o = pipeline()
        .args(["detect-graph", "--json", "--edges"])
        .arg(&star)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["stats"]["oversized_leaves"], 1, "{j}");
    assert_eq!(j["stats"]["largest_leaf"], 301, "{j}");
    let o = pipeline()
        .args(["detect-graph", "--edges"])
        .arg(&star)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("leaves over max_cluster_size 10: 1 (largest 301; 1 that Leiden cannot split"),
        "{out}"
    );

    // A run counts them in its summary and its manifest.
    let vocab = vocabulary(dir.path());
    let docs = dir.path().join("docs.jsonl");
    std::fs::write(&docs, DOCUMENTS).unwrap();
    let root = dir.path().join("root");
    let s = summary(&run(&root, &docs, &vocab, &["--max-cluster-size", "1"]));
    let n = s["oversized_leaves"].as_u64().unwrap();
    assert!(n > 0, "{s}");
    assert_eq!(s["detection"]["oversized_leaves"], n);
    let id = s["run_id"].as_str().unwrap();
    let manifest = Manifest::read(&Layout::new(&root).run_dir(id)).unwrap();
    assert_eq!(manifest.oversized_leaves, Some(n));
    let o = pipeline()
        .args(["run", "--max-cluster-size", "1", "--root"])
        .arg(dir.path().join("text"))
        .arg("--documents")
        .arg(&docs)
        .arg("--vocabulary")
        .arg(&vocab)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("leaves over max_cluster_size 1: {n} (largest")),
        "{out}"
    );
}

#[test]
fn old_manifests_without_the_count_still_open() {
    let golden = repo().join("data/fixtures/snapshots/v1");
    let layout = Layout::new(&golden);
    let id = layout.read_latest().unwrap().unwrap();
    let m = Manifest::read(&layout.run_dir(&id)).unwrap();
    assert_eq!(m.oversized_leaves, None);
}

/// A bad line deep in a large file (document 900,000) is refused by its line number before
/// any work past reading: nothing is published and LATEST keeps the good run.
#[test]
fn a_bad_line_at_document_900000_is_named_and_nothing_is_published() {
    let dir = tempfile::tempdir().unwrap();
    let v = vocabulary(dir.path());
    let (root, good) = published(dir.path(), &v);
    let docs = dir.path().join("large.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&docs).unwrap());
    for i in 1..900_000u32 {
        writeln!(
            out,
            r#"{{"document_key":"d{i}","title":"Aspirin {i}","text":"Aspirin after a heart attack."}}"#
        )
        .unwrap();
    }
    writeln!(out, r#"{{"document_key":"d900000","title":"broken"#).unwrap();
    out.flush().unwrap();
    drop(out);
    let o = run(&root, &docs, &v, &[]);
    assert_refused(&o, &["large.jsonl:900000"], &root, &good);
}
