//! Crash safety (issue 8): `agrag-pipeline run` is SIGKILLed 50 times at points of publishing,
//! on the 60-document fixture with a small vocabulary (so that one run costs well under a
//! second). Most kills land on a named publish step (the `AGRAG_FAULT_AT` hook pauses the
//! process there and the test kills it); the rest land after a random delay inside the
//! publish window measured on a clean run (every run after the first continues the published
//! one: it warm-starts detection and takes its parent's vectors). After every kill, `LATEST` names a complete run
//! whose checksums verify and which the engine serves; no partial run is ever visible; and the
//! next run succeeds despite the leftovers.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agrag_engine::format::writer::{FAULT_ENV, FAULT_TRACE_ENV};
use agrag_engine::format::{Layout, Manifest, Verify, verify_run};
use agrag_engine::snapshot::Snapshot;
use agrag_engine::{Engine, EngineConfig};
use rand::{RngExt, SeedableRng};

const MARK: &str = "agrag fault point ";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Twelve MeSH descriptors the fixture mentions often, with their broader edges.
pub(crate) fn write_small_vocabulary(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("concepts.tsv"),
        "concept_id\tpreferred_term\tsynonyms\n\
         D010361\tPatients\t\n\
         D009026\tMortality\t\n\
         D013502\tSurgical Procedures, Operative\tsurgery\n\
         D002648\tChild\tchildren\n\
         D011247\tPregnancy\t\n\
         D003920\tDiabetes Mellitus\tdiabetes\n\
         D009369\tNeoplasms\tcancer|tumor\n\
         D003863\tDepression\t\n\
         D014930\tWomen\t\n\
         D012307\tRisk Factors\t\n\
         D013534\tSurvival\t\n\
         D006801\tHumans\t\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("broader.tsv"),
        "child_id\tparent_id\nD010361\tD006801\nD002648\tD006801\nD014930\tD006801\n",
    )
    .unwrap();
}

struct Setup {
    root: PathBuf,
    vocabulary: PathBuf,
}

impl Setup {
    fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_agrag-pipeline"));
        c.args(["run", "--threads", "1", "--root"])
            .arg(&self.root)
            .arg("--documents")
            .arg(repo().join("data/fixtures/pubmedqa-60.jsonl"))
            .arg("--vocabulary")
            .arg(&self.vocabulary)
            .env_remove(FAULT_ENV)
            .env_remove(FAULT_TRACE_ENV)
            // Publishing is what is under test: the built-in embedder keeps each run short
            // whether or not the MiniLM model is installed.
            .env("EMBEDDING_PROVIDER", "hash")
            .env_remove("EMBEDDING_MODEL")
            .env_remove("EMBEDDING_DIM")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    }
}

/// Reads stderr lines of `child` until the fault-point line of `step`; returns when it was seen.
fn wait_for_step(stderr: &mut impl BufRead, step: &str) -> Instant {
    let mut line = String::new();
    loop {
        line.clear();
        let n = stderr.read_line(&mut line).unwrap();
        assert!(n > 0, "the pipeline ended before fault point {step}");
        if line.trim_end() == format!("{MARK}{step}") {
            return Instant::now();
        }
    }
}

/// What must hold after every kill: LATEST names a complete, checksum-valid run that the
/// engine serves, every complete run folder verifies, and staging folders are never served.
fn check_root(root: &Path, expected_latest: Option<&str>, context: &str) -> String {
    let layout = Layout::new(root);
    let latest = layout
        .read_latest()
        .unwrap_or_else(|e| panic!("{context}: LATEST unreadable: {e}"))
        .unwrap_or_else(|| panic!("{context}: LATEST missing"));
    if let Some(want) = expected_latest {
        assert_eq!(
            latest, want,
            "{context}: LATEST moved before publishing ended"
        );
    }
    for id in layout.list_runs().unwrap() {
        let dir = layout.run_dir(&id);
        let manifest = Manifest::read(&dir)
            .unwrap_or_else(|e| panic!("{context}: run {id} has no valid manifest: {e}"));
        verify_run(&dir, &manifest, Verify::Checksums)
            .unwrap_or_else(|e| panic!("{context}: run {id}: {e}"));
    }
    let snap = Snapshot::open_run_verified(&layout.run_dir(&latest), Verify::Checksums)
        .unwrap_or_else(|e| panic!("{context}: LATEST run {latest}: {e}"));
    assert_eq!(snap.num_documents(), 60, "{context}");
    let engine = Engine::open(root, EngineConfig::default()).unwrap();
    assert_eq!(
        engine.run_id().as_deref(),
        Some(latest.as_str()),
        "{context}"
    );
    let ev = engine
        .fetch_evidence(&[snap.passage(agrag_engine::PassageRow(0)).id()])
        .unwrap();
    assert!(ev[0].text.is_some(), "{context}: {ev:?}");
    latest
}

#[test]
fn sigkill_at_random_points_of_publishing_never_serves_a_partial_run() {
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup {
        root: dir.path().join("root"),
        vocabulary: dir.path().join("vocabulary"),
    };
    write_small_vocabulary(&setup.vocabulary);

    // A clean run, traced: the publish steps in order and the publish window.
    let mut child = setup.command().env(FAULT_TRACE_ENV, "1").spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut steps = Vec::new();
    let mut started: Option<Instant> = None;
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(step) = line.trim_end().strip_prefix(MARK) {
            started.get_or_insert_with(Instant::now);
            steps.push(step.to_owned());
        }
        line.clear();
    }
    let window = started.unwrap().elapsed();
    assert!(child.wait().unwrap().success());
    assert_eq!(steps.first().map(String::as_str), Some("staging"));
    assert_eq!(steps.last().map(String::as_str), Some("latest"));
    assert!(steps.len() > 20, "{steps:?}");
    let mut latest = check_root(&setup.root, None, "clean run");

    let mut rng = rand_pcg::Pcg64::seed_from_u64(8);
    let deadline = Instant::now() + Duration::from_secs(240);
    for i in 0..50 {
        assert!(Instant::now() < deadline, "crash loop took too long");
        let mut command = setup.command();
        command.env(FAULT_TRACE_ENV, "1");
        // Every step once (in order), then random steps; every fourth kill a random delay.
        let named = if i % 4 == 3 {
            None
        } else if i < steps.len() {
            Some(steps[i].clone())
        } else {
            Some(steps[rng.random_range(0..steps.len())].clone())
        };
        if let Some(step) = &named {
            command.env(FAULT_ENV, step);
        }
        let mut child = command.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let context = match &named {
            Some(step) => {
                wait_for_step(&mut stderr, step);
                format!("kill {i} at step {step}")
            }
            None => {
                let at = wait_for_step(&mut stderr, "staging");
                let delay = window.mul_f64(rng.random_range(0.0..1.0));
                std::thread::sleep(delay.saturating_sub(at.elapsed()));
                format!("kill {i} after {delay:?} of publishing")
            }
        };
        // `Child::kill` sends SIGKILL on Unix.
        let _ = child.kill();
        let status = child.wait().unwrap();
        drop(stderr);
        // Until LATEST itself moved, the previous run must still be the one named.
        let moved = named.as_deref() == Some("latest") || (named.is_none() && status.success());
        let expected = (named.is_some() && !moved).then_some(latest.as_str());
        latest = check_root(&setup.root, expected, &context);
    }

    // The leftovers (staging folders, temporary LATEST files) do not break the next run, and
    // the runs killed above were continuing runs: this one, on the same input, takes every
    // document's links and every title, passage and report vector from the run LATEST names.
    let out = setup
        .command()
        .arg("--json")
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["parent_run_id"].as_str(), Some(latest.as_str()));
    assert_eq!(summary["recomputed"]["text_embeddings"], 0, "{summary}");
    assert_eq!(summary["recomputed"]["report_embeddings"], 0, "{summary}");
    assert!(summary["reused"]["text_embeddings"].as_u64() > Some(60));
    assert_eq!(summary["recomputed"]["linked_passages"], 0, "{summary}");
    assert_eq!(
        summary["reused"]["linked_passages"], summary["passages"],
        "{summary}"
    );
    let last = check_root(&setup.root, None, "run after the kills");
    assert_ne!(last, latest, "the clean run after the kills is published");
    // gc clears staging leftovers of runs older than the one served.
    let layout = Layout::new(&setup.root);
    layout.gc(1).unwrap();
    let left: Vec<String> = std::fs::read_dir(layout.runs_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![last.clone()], "gc leaves only the served run");
    check_root(&setup.root, Some(&last), "after gc");
}

/// One run at a time: while a run is paused in publishing, a second run on the same root is
/// refused at once with exit 2, naming the holder's process id, and LATEST does not move; once
/// the holder is SIGKILLed, the next run takes the root (the lock died with its process).
#[test]
fn a_second_run_is_refused_while_one_holds_the_root_and_a_killed_runs_lock_is_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup {
        root: dir.path().join("root"),
        vocabulary: dir.path().join("vocabulary"),
    };
    write_small_vocabulary(&setup.vocabulary);
    assert!(setup.command().status().unwrap().success());
    let first = check_root(&setup.root, None, "first run");

    let mut holder = setup.command().env(FAULT_ENV, "manifest").spawn().unwrap();
    let mut stderr = BufReader::new(holder.stderr.take().unwrap());
    wait_for_step(&mut stderr, "manifest");
    // The holder sleeps until killed: a second run that waited for the lock would never end,
    // so it must end by itself while the holder is still paused.
    let mut second = setup.command().spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = second.kill();
            let _ = holder.kill();
            panic!("the second run waited for the lock instead of being refused");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut message = String::new();
    std::io::Read::read_to_string(&mut second.stderr.take().unwrap(), &mut message).unwrap();
    assert_eq!(status.code(), Some(2), "{message}");
    assert!(
        message.contains(&format!("process {}", holder.id())),
        "the refusal names the holder: {message}"
    );
    check_root(&setup.root, Some(&first), "after the refusal");

    let _ = holder.kill();
    holder.wait().unwrap();
    drop(stderr);
    assert!(setup.command().status().unwrap().success());
    let after = check_root(&setup.root, None, "run after the holder was killed");
    assert_ne!(after, first);
}
