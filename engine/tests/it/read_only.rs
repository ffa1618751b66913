//! A snapshot on a read-only file system (a read-only mount, an immutable deployment) is
//! served and verified like any other: the engine writes nothing into a run.
//!
//! The tests run as root, whom `chmod` does not stop, so the read-only file system is a
//! read-only bind mount. Where `mount` is not permitted the mount tests say so and pass; the
//! unit tests of `text.rs` then still check that opening writes nothing and that permission
//! errors are not reported as corruption.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::concept_run;

/// A read-only bind mount of a folder, over itself or at another place; unmounted on drop.
struct ReadOnlyMount {
    target: PathBuf,
}

impl ReadOnlyMount {
    /// Mounts `source` read-only at `target`, or `None` (with a note) when this sandbox does
    /// not allow mounting.
    fn new(source: &Path, target: &Path) -> Option<Self> {
        let ok = |args: &[&std::ffi::OsStr]| {
            Command::new("mount")
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !ok(&["--bind".as_ref(), source.as_os_str(), target.as_os_str()]) {
            eprintln!("note: `mount --bind` is not permitted here; read-only mount not tested");
            return None;
        }
        let mount = Self {
            target: target.to_owned(),
        };
        if !ok(&[
            "-o".as_ref(),
            "remount,bind,ro".as_ref(),
            target.as_os_str(),
        ]) {
            eprintln!("note: read-only remount is not permitted here; not tested");
            return None;
        }
        // The mount must really refuse writes, or the test proves nothing.
        let probe = target.join(".write-probe");
        assert!(
            std::fs::write(&probe, b"x").is_err(),
            "{} is writable after a read-only remount",
            target.display()
        );
        Some(mount)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.target).status();
    }
}

fn engine(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
        .args(args)
        .arg("--root")
        .arg(root)
        .env_remove("AGRAG_ROOT")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A run with two documents about aspirin and a keyword only one of them has.
fn aspirin_root(root: &Path) -> String {
    concept_run(
        root,
        &[
            ("d-pain", "Aspirin relieves pain."),
            ("d-heart", "Aspirin protects the heart."),
        ],
        &[("C1", "Analgesics", &[]), ("C2", "Aspirin", &[])],
        &[("C2", "C1")],
        &[("concept", "d-pain", "C2"), ("concept", "d-heart", "C2")],
    )
}

/// `verify`, a keyword concept search (the text index) and `evidence` all answer from `root`.
fn assert_served(root: &Path, run_id: &str) {
    let out = engine(root, &["verify"]);
    assert_eq!(out.status.code(), Some(0), "verify: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(run_id) && stdout.contains("verified"),
        "{stdout}"
    );

    let out = engine(
        root,
        &[
            "concepts",
            "--term",
            "aspirin",
            "--keyword",
            "pain",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "concepts: {}", text(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["status"], "ok", "{answer}");
    assert_eq!(answer["total"], 1, "{answer}");
    assert_eq!(answer["sample"][0]["document_key"], "d-pain", "{answer}");

    let out = engine(root, &["evidence", "d-heart#0"]);
    assert_eq!(out.status.code(), Some(0), "evidence: {}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Aspirin protects the heart."),
        "{}",
        text(&out)
    );
}

/// The whole root mounted read-only: served and verified, nothing reported corrupt.
#[test]
fn a_read_only_root_is_served_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    let mounted = dir.path().join("mounted");
    std::fs::create_dir_all(&mounted).unwrap();
    let run_id = aspirin_root(&source);
    let Some(_mount) = ReadOnlyMount::new(&source, &mounted) else {
        return;
    };
    assert_served(&mounted, &run_id);
}

/// Only `runs/` read-only (the root itself writable, for the visibility store): served, and a
/// flag set on the writable root still applies.
#[test]
fn read_only_runs_are_served_with_live_visibility() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = aspirin_root(dir.path());
    let runs = dir.path().join("runs");
    let Some(_mount) = ReadOnlyMount::new(&runs, &runs) else {
        return;
    };
    assert_served(dir.path(), &run_id);

    let out = engine(
        dir.path(),
        &[
            "visibility",
            "set",
            "--passage",
            "d-pain#0",
            "--state",
            "hidden",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = engine(dir.path(), &["evidence", "d-pain#0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("not visible (hidden)"),
        "{}",
        text(&out)
    );
}
