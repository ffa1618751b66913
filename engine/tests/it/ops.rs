//! Operations (issue 8): reload and the watcher, a run removed by gc while served, and damaged
//! files refused with `Corrupt { path, reason }` while the previous run keeps serving.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agrag_engine::format::{Layout, Verify};
use agrag_engine::query::evidence::EvidenceStatus;
use agrag_engine::{
    ConceptRequest, ConceptSelector, Engine, EngineConfig, EngineError, PassageRow,
};

use crate::common::concept_run;

const CONCEPTS: &[(&str, &str, &[&str])] = &[
    ("C1", "Analgesics", &[]),
    ("C2", "Aspirin", &["acetylsalicylic acid"]),
];
const EDGES: &[(&str, &str)] = &[("C2", "C1")];

/// A run with one document `key` whose text mentions aspirin. Returns the run id.
fn run_with(root: &Path, key: &str) -> String {
    let text = format!("Aspirin relieves pain in study {key}.");
    concept_run(
        root,
        &[(key, text.as_str())],
        CONCEPTS,
        EDGES,
        &[("concept", key, "C2")],
    )
}

fn run_dir(root: &Path, run_id: &str) -> PathBuf {
    Layout::new(root).run_dir(run_id)
}

/// Text of passage `id` as the engine serves it now.
fn passage_text(engine: &Engine, id: &str) -> Option<String> {
    let ev = engine.fetch_evidence(&[id.to_owned()]).unwrap();
    (ev[0].status == EvidenceStatus::Found).then(|| ev[0].text.clone().unwrap_or_default())
}

/// Documents about aspirin, ranked by a keyword (exercises the mapped text index too).
fn aspirin_documents(engine: &Engine) -> Vec<String> {
    let mut req = ConceptRequest::new(ConceptSelector::Term("aspirin".into()));
    req.keyword = Some("pain".into());
    let a = engine.find_by_meaning(&req).unwrap();
    a.sample.into_iter().map(|h| h.document_key).collect()
}

fn flip_byte(path: &Path, offset_from_middle: i64) {
    let mut bytes = std::fs::read(path).unwrap();
    let i = usize::try_from(bytes.len() as i64 / 2 + offset_from_middle).unwrap();
    bytes[i] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

fn truncate(path: &Path) {
    let len = std::fs::metadata(path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn reload_swaps_runs_and_queries_in_flight_finish_on_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with(dir.path(), "doc-a");
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    assert_eq!(engine.run_id().as_deref(), Some(a.as_str()));
    // A query in flight holds its view for its whole lifetime.
    let in_flight = engine.view().unwrap();

    let b = run_with(dir.path(), "doc-b");
    assert!(engine.reload().unwrap());
    assert_eq!(engine.run_id().as_deref(), Some(b.as_str()));
    assert!(!engine.reload().unwrap(), "same LATEST: nothing to swap");

    let old = in_flight.snapshot().unwrap();
    assert_eq!(old.run_id(), a);
    assert_eq!(old.num_passages(), 1);
    assert_eq!(old.passage(PassageRow(0)).id(), "doc-a#0");
    assert!(passage_text(&engine, "doc-a#0").is_none());
    assert!(passage_text(&engine, "doc-b#0").unwrap().contains("doc-b"));
    assert_eq!(aspirin_documents(&engine), vec!["doc-b".to_owned()]);
}

/// Lines of this process's memory map naming a file under `dir`.
#[cfg(target_os = "linux")]
fn mappings_under(dir: &Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let dir = dir.to_str().unwrap();
    maps.lines().filter(|l| l.contains(dir)).count()
}

/// The old run's files stay mapped while a query holds it and are unmapped when that query
/// ends: a swapped-out run costs no memory once nobody reads it.
#[cfg(target_os = "linux")]
#[test]
fn the_old_runs_memory_is_released_when_its_last_query_ends() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with(dir.path(), "doc-a");
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    // Answer a query of each kind, so every lazily opened part of run a is open too.
    assert!(passage_text(&engine, "doc-a#0").is_some());
    assert_eq!(aspirin_documents(&engine), vec!["doc-a".to_owned()]);
    let old = run_dir(dir.path(), &a);
    assert!(mappings_under(&old) > 0, "run a's column files are mapped");
    let in_flight = engine.view().unwrap();

    let b = run_with(dir.path(), "doc-b");
    assert!(engine.reload().unwrap());
    assert_eq!(engine.run_id().as_deref(), Some(b.as_str()));
    assert!(
        mappings_under(&old) > 0,
        "a query in flight keeps run a mapped"
    );
    assert_eq!(in_flight.snapshot().unwrap().run_id(), a);
    drop(in_flight);
    // Released off the query path, by a thread that waits for the last holder.
    wait_until("run a is unmapped once its last query ends", || {
        mappings_under(&old) == 0
    });
    assert!(mappings_under(&run_dir(dir.path(), &b)) > 0);
}

#[test]
fn watcher_serves_a_new_run_and_refuses_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with(dir.path(), "doc-a");
    let engine = Arc::new(Engine::open(dir.path(), EngineConfig::default()).unwrap());
    assert!(engine.watch(Duration::ZERO).is_err());
    let watcher = engine.watch(Duration::from_millis(10)).unwrap();

    let b = run_with(dir.path(), "doc-b");
    wait_until("the watcher serves run b", || {
        engine.run_id().as_deref() == Some(b.as_str())
    });
    assert_ne!(a, b);

    // A damaged run: refused, logged, and b keeps serving. It is written and damaged in
    // another root, then moved in and published, so the watcher never sees it intact.
    let other = tempfile::tempdir_in(dir.path()).unwrap();
    let c = run_with(other.path(), "doc-c");
    flip_byte(&run_dir(other.path(), &c).join("passages.parquet"), 0);
    std::fs::rename(run_dir(other.path(), &c), run_dir(dir.path(), &c)).unwrap();
    Layout::new(dir.path()).write_latest(&c).unwrap();
    wait_until("the watcher refuses run c", || {
        engine.last_refused().is_some_and(|r| r.run_id == c)
    });
    let refused = engine.last_refused().unwrap();
    assert!(
        refused.reason().contains("passages.parquet") && refused.reason().contains("checksum"),
        "{}",
        refused.reason()
    );
    assert_eq!(engine.run_id().as_deref(), Some(b.as_str()));
    assert!(passage_text(&engine, "doc-b#0").is_some());

    // A good run after the bad one is served again.
    let d = run_with(dir.path(), "doc-d");
    wait_until("the watcher serves run d", || {
        engine.run_id().as_deref() == Some(d.as_str())
    });
    assert!(engine.last_refused().is_none());
    drop(watcher);
    // Stopped: a newer run is no longer picked up.
    let e = run_with(dir.path(), "doc-e");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(engine.run_id().as_deref(), Some(d.as_str()));
    assert!(engine.reload().unwrap());
    assert_eq!(engine.run_id().as_deref(), Some(e.as_str()));
}

/// Collects what a `tracing` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_refused_reload_is_logged_with_the_file_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with(dir.path(), "doc-a");
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let b = run_with(dir.path(), "doc-b");
    truncate(&run_dir(dir.path(), &b).join("documents.parquet"));
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let err = tracing::subscriber::with_default(subscriber, || engine.reload().unwrap_err());
    let log = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(matches!(err, EngineError::Corrupt { .. }), "{err:?}");
    assert!(log.contains("WARN"), "{log}");
    assert!(log.contains("reload refused"), "{log}");
    assert!(log.contains("documents.parquet"), "{log}");
    assert!(
        log.contains(&a),
        "the log names the run still served: {log}"
    );
    assert_eq!(engine.run_id().as_deref(), Some(a.as_str()));
}

/// Damages one file of a fresh run `b` with `damage`, reloads, and checks the typed error
/// names `file` while run `a` keeps answering.
fn refused_with_previous_kept(file: &str, damage: fn(&Path)) -> String {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with(dir.path(), "doc-a");
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let b = run_with(dir.path(), "doc-b");
    let path = run_dir(dir.path(), &b).join(file);
    damage(&path);
    let err = engine.reload().unwrap_err();
    let EngineError::Corrupt {
        path: at, reason, ..
    } = &err
    else {
        panic!("{file}: expected Corrupt, got {err:?}");
    };
    assert_eq!(at, &path, "{file}: {err}");
    assert_eq!(engine.run_id().as_deref(), Some(a.as_str()), "{file}");
    assert!(passage_text(&engine, "doc-a#0").is_some(), "{file}");
    assert_eq!(aspirin_documents(&engine), vec!["doc-a".to_owned()]);
    let refused = engine.last_refused().unwrap();
    assert_eq!(refused.run_id, b);
    reason.clone()
}

#[test]
fn damaged_files_are_refused_and_the_previous_run_keeps_serving() {
    let r = refused_with_previous_kept("passages.parquet", |p| flip_byte(p, 0));
    assert!(r.starts_with("checksum is "), "{r}");
    let r = refused_with_previous_kept("concepts.parquet", |p| flip_byte(p, -7));
    assert!(r.starts_with("checksum is "), "{r}");
    let r = refused_with_previous_kept("documents.parquet", truncate);
    assert!(r.contains("the manifest says"), "{r}");
    let r = refused_with_previous_kept("report_embeddings.arrow", |p| flip_byte(p, 3));
    assert!(r.starts_with("checksum is "), "{r}");
    let r = refused_with_previous_kept("manifest.json", |p| flip_byte(p, 0));
    assert!(
        r.contains("manifest.blake3 says") || r.contains("not JSON"),
        "{r}"
    );
    let r = refused_with_previous_kept("manifest.json", truncate);
    assert!(
        r.contains("manifest.blake3 says") || r.contains("not JSON"),
        "{r}"
    );
    // A bit flip inside a JSON string keeps the manifest parseable: only its checksum sees it.
    let r = refused_with_previous_kept("manifest.json", |p| {
        let s = std::fs::read_to_string(p).unwrap();
        let i = s.find("\"created_at\": \"").unwrap() + 16;
        let mut b = s.into_bytes();
        b[i] ^= 0x01;
        std::fs::write(p, b).unwrap();
    });
    assert!(r.contains("manifest.blake3 says"), "{r}");
    // Without its checksum file an edited manifest could not be told from a good one.
    let r = refused_with_previous_kept("manifest.blake3", |p| std::fs::remove_file(p).unwrap());
    assert!(r.starts_with("missing, so manifest.json"), "{r}");
    // A checksum file emptied or overwritten is named, not the manifest it guards.
    let r = refused_with_previous_kept("manifest.blake3", |p| std::fs::write(p, "").unwrap());
    assert!(r.starts_with("holds \"\", not a BLAKE3 checksum"), "{r}");
    let r = refused_with_previous_kept("manifest.blake3", |p| std::fs::write(p, "zz\n").unwrap());
    assert!(r.starts_with("holds \"zz\", not a BLAKE3 checksum"), "{r}");
}

#[test]
fn without_checksums_a_truncated_file_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with(dir.path(), "doc-a");
    let config = EngineConfig {
        verify: Verify::Sizes,
        ..EngineConfig::default()
    };
    let engine = Engine::open(dir.path(), config).unwrap();
    let b = run_with(dir.path(), "doc-b");
    truncate(&run_dir(dir.path(), &b).join("passages.parquet"));
    assert!(matches!(
        engine.reload().unwrap_err(),
        EngineError::Corrupt { .. }
    ));
    assert_eq!(engine.run_id().as_deref(), Some(a.as_str()));
}

#[test]
fn an_engine_keeps_answering_from_a_run_gc_removed() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with(dir.path(), "doc-a");
    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let b = run_with(dir.path(), "doc-b");
    let c = run_with(dir.path(), "doc-c");
    let layout = Layout::new(dir.path());
    assert_eq!(layout.gc(1).unwrap(), vec![a.clone(), b]);
    assert!(!run_dir(dir.path(), &a).exists());
    // Still served from the unlinked files: tables in memory, maps and the text index open.
    assert_eq!(engine.run_id().as_deref(), Some(a.as_str()));
    assert!(passage_text(&engine, "doc-a#0").unwrap().contains("doc-a"));
    assert_eq!(aspirin_documents(&engine), vec!["doc-a".to_owned()]);
    let snap = engine.view().unwrap().snapshot().unwrap().clone();
    assert_eq!(snap.embedding_matrix().len(), 0);
    assert_eq!(snap.document_embedding_matrix().len(), snap.dim());
    assert!(engine.reload().unwrap());
    assert_eq!(engine.run_id().as_deref(), Some(c.as_str()));
}

fn engine_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
}

#[test]
fn verify_names_the_file_that_failed() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with(dir.path(), "doc-a");
    let out = engine_bin()
        .args(["verify", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&a) && stdout.contains("verified"),
        "{stdout}"
    );

    for file in ["mentions.parquet", "manifest.json", "text_index/meta.json"] {
        let dir = tempfile::tempdir().unwrap();
        let id = run_with(dir.path(), "doc-a");
        let path = run_dir(dir.path(), &id).join(file);
        flip_byte(&path, 0);
        let out = engine_bin()
            .args(["verify", "--root"])
            .arg(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{file}: {stderr}");
        assert!(
            stderr.contains(&format!("corrupt snapshot file {}", path.display())),
            "{file}: {stderr}"
        );
    }
}

/// A query the engine could not answer prints its answer and exits 1 (README: exit codes).
#[test]
fn a_query_answered_index_not_ready_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    for (command, name) in [("themes", "search_themes"), ("concepts", "find_by_meaning")] {
        let mut cmd = engine_bin();
        cmd.args([command, "--root"]).arg(dir.path());
        if command == "concepts" {
            cmd.args(["--term", "aspirin"]);
        } else {
            cmd.arg("aspirin");
        }
        let out = cmd.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(1), "{command}: {stdout} {stderr}");
        assert!(stdout.contains("status: index_not_ready"), "{stdout}");
        assert!(
            stderr.contains(&format!("{name} answered index_not_ready")),
            "{stderr}"
        );
        if command == "concepts" {
            // The answer says why: no LATEST under this root.
            assert!(stdout.contains("no LATEST file"), "{stdout}");
        }
    }
}

/// Output into a closed pipe (`agrag-engine … | head`) ends quietly with exit 0, not a panic.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    run_with(dir.path(), "doc-a");
    let mut child = engine_bin()
        .args(["themes", "--root"])
        .arg(dir.path())
        .arg("aspirin")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the engine has opened the run and printed anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
