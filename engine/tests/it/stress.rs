//! Concurrency (issue 8): two processes flip visibility flags while four threads query one
//! engine on the golden run. No call errors, and no answer holds a passage that was hidden
//! when the query began.
//!
//! Passages are split in two sets. Set A is hide-only (once hidden, hidden for good), so a
//! passage of A seen hidden in the store before a query must be absent from its answer. Set B
//! flips both ways; when the store's version did not move during a query, the answer must
//! exclude every passage hidden at its start.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agrag_engine::format::Layout;
use agrag_engine::query::evidence::EvidenceStatus;
use agrag_engine::query::theme::Status;
use agrag_engine::visibility::{Target, Visibility, VisibilityStore};
use agrag_engine::{Engine, EngineConfig, Scope, ThemeRequest};

const QUESTIONS: &[&str] = &[
    "surgery outcomes and mortality",
    "children with asthma",
    "cancer survival after treatment",
    "pregnancy and diabetes risk",
    "depression in older patients",
    "risk factors for infection",
];
const FLIPS_PER_PROCESS: usize = 500;

fn golden_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/fixtures/snapshots/v1")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

fn request(q: &str) -> ThemeRequest {
    ThemeRequest {
        limit: 10,
        support_limit: 10,
        timeout: None,
        scope: Scope::All,
        ..ThemeRequest::text(q)
    }
}

/// xorshift64*: a few random numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

/// The flipping process's side (a no-op when run as an ordinary test): hides its share of set
/// A one by one and toggles random passages of set B, through its own store connection.
#[test]
fn flipper_process() {
    let Ok(root) = std::env::var("AGRAG_FLIP_ROOT") else {
        return;
    };
    let seed: u64 = std::env::var("AGRAG_FLIP_SEED").unwrap().parse().unwrap();
    let a: Vec<String> = std::env::var("AGRAG_FLIP_A")
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    let b: Vec<String> = std::env::var("AGRAG_FLIP_B")
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    let mut store = VisibilityStore::open(&Layout::new(&root).visibility_path()).unwrap();
    let mut rng = Rng(seed);
    let mut next_a = 0;
    for i in 0..FLIPS_PER_PROCESS {
        if i % 5 == 0 && next_a < a.len() {
            store
                .set(
                    Target::Passage,
                    &a[next_a],
                    Visibility::Hidden,
                    Some("stress"),
                )
                .unwrap();
            next_a += 1;
        } else {
            let key = &b[rng.below(b.len())];
            let now = store.get(Target::Passage, key).unwrap().map(|f| f.state);
            let state = if now == Some(Visibility::Hidden) {
                Visibility::Visible
            } else {
                Visibility::Hidden
            };
            store
                .set(Target::Passage, key, state, Some("stress"))
                .unwrap();
        }
    }
}

fn spawn_flipper(root: &Path, seed: u64, a: &[String], b: &[String]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "stress::flipper_process", "--test-threads", "1"])
        .env("AGRAG_FLIP_ROOT", root)
        .env("AGRAG_FLIP_SEED", seed.to_string())
        .env("AGRAG_FLIP_A", a.join(","))
        .env("AGRAG_FLIP_B", b.join(","))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Passages hidden in the store now, with the store's version read before them.
fn hidden_now(store: &VisibilityStore) -> (i64, HashSet<String>) {
    let version = store.version().unwrap();
    let hidden = store
        .list()
        .unwrap()
        .into_iter()
        .filter(|f| f.target == Target::Passage && f.state != Visibility::Visible)
        .map(|f| f.key)
        .collect();
    (version, hidden)
}

#[test]
fn two_flipping_processes_and_four_readers_never_see_a_hidden_passage() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&golden_root(), dir.path());
    let engine = Arc::new(Engine::open(dir.path(), EngineConfig::default()).unwrap());

    // Passages the questions return, split into the hide-only set A and the flipping set B.
    let mut seen: Vec<String> = Vec::new();
    for q in QUESTIONS {
        for t in engine.search_themes(&request(q)).unwrap().themes {
            for p in t.passages {
                if !seen.contains(&p.evidence_id) {
                    seen.push(p.evidence_id);
                }
            }
        }
    }
    assert!(seen.len() >= 40, "only {} passages in answers", seen.len());
    seen.truncate(80);
    let (a, b) = seen.split_at(seen.len() / 2);
    let set_a: HashSet<String> = a.iter().cloned().collect();
    // Each process hides its own half of A; both toggle all of B.
    let (a1, a2) = a.split_at(a.len() / 2);
    // Create the store before the processes race to.
    drop(VisibilityStore::open(&Layout::new(dir.path()).visibility_path()).unwrap());
    let mut flippers = [
        spawn_flipper(dir.path(), 1, a1, b),
        spawn_flipper(dir.path(), 2, a2, b),
    ];

    let done = Arc::new(AtomicBool::new(false));
    let queries = Arc::new(AtomicUsize::new(0));
    let quiet_checks = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..4)
        .map(|r| {
            let engine = engine.clone();
            let done = done.clone();
            let queries = queries.clone();
            let quiet_checks = quiet_checks.clone();
            let set_a = set_a.clone();
            let ids = seen.clone();
            let root = dir.path().to_owned();
            std::thread::spawn(move || {
                let store = VisibilityStore::open(&Layout::new(&root).visibility_path()).unwrap();
                let start = Instant::now();
                let mut i = r;
                // Keep querying until the flippers are done (and at least a few rounds).
                while (!done.load(Ordering::SeqCst) || i < r + 8)
                    && start.elapsed() < Duration::from_secs(90)
                {
                    i += 1;
                    let (v0, hidden) = hidden_now(&store);
                    let answered: Vec<String> = if i % 2 == 0 {
                        let a = engine
                            .search_themes(&request(QUESTIONS[i % QUESTIONS.len()]))
                            .unwrap();
                        assert!(
                            matches!(a.status, Status::Ok | Status::NoMatch),
                            "reader {r}: {a:?}"
                        );
                        a.themes
                            .into_iter()
                            .flat_map(|t| t.passages)
                            .map(|p| p.evidence_id)
                            .collect()
                    } else {
                        engine
                            .fetch_evidence(&ids)
                            .unwrap()
                            .into_iter()
                            .filter(|e| e.status == EvidenceStatus::Found)
                            .map(|e| e.evidence_id)
                            .collect()
                    };
                    let v1 = store.version().unwrap();
                    for p in &answered {
                        assert!(
                            !(set_a.contains(p) && hidden.contains(p)),
                            "reader {r}: {p} was hidden (for good) before the query began"
                        );
                        if v0 == v1 {
                            assert!(
                                !hidden.contains(p),
                                "reader {r}: {p} was hidden during the whole query"
                            );
                        }
                    }
                    if v0 == v1 {
                        quiet_checks.fetch_add(1, Ordering::Relaxed);
                    }
                    queries.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    for f in &mut flippers {
        let out = f.wait().unwrap();
        assert!(out.success(), "a flipping process failed");
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        r.join().unwrap();
    }
    // The flips landed: A is hidden entirely, and the engine says so.
    let store = VisibilityStore::open(&Layout::new(dir.path()).visibility_path()).unwrap();
    let (version, hidden) = hidden_now(&store);
    assert_eq!(version, 2 * FLIPS_PER_PROCESS as i64);
    assert!(set_a.iter().all(|p| hidden.contains(p)));
    for e in engine.fetch_evidence(&seen).unwrap() {
        assert_eq!(
            e.status == EvidenceStatus::NotVisible,
            hidden.contains(&e.evidence_id),
            "{e:?}"
        );
    }
    let n = queries.load(Ordering::Relaxed);
    assert!(n >= 32, "only {n} queries ran");
    assert!(quiet_checks.load(Ordering::Relaxed) > 0);
}
