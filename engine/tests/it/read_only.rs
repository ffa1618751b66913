//! A snapshot on a read-only file system (a read-only mount, an immutable deployment) is
//! served and verified like any other: the engine writes nothing into a run.
//!
//! The tests run as root, whom `chmod` does not stop, so the read-only file system is a
//! read-only bind mount. Where `mount` is not permitted the mount tests say so and pass; the
//! unit tests of `text.rs` then still check that opening writes nothing and that permission
//! errors are not reported as corruption, and one test runs the engine as another user.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{concept_run, describe as text, engine_at as engine};

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

/// The whole root read-only with flags already set: they apply, and setting one fails with
/// a message naming the store (exit 1) instead of pretending to succeed.
#[test]
fn a_read_only_root_applies_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    let mounted = dir.path().join("mounted");
    std::fs::create_dir_all(&mounted).unwrap();
    aspirin_root(&source);
    let out = engine(
        &source,
        &[
            "visibility",
            "set",
            "--document",
            "d-heart",
            "--state",
            "hidden",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let Some(_mount) = ReadOnlyMount::new(&source, &mounted) else {
        return;
    };

    let out = engine(&mounted, &["evidence", "d-heart#0", "d-pain#0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("d-heart#0: not visible (hidden)"),
        "{stdout}"
    );
    assert!(stdout.contains("Aspirin relieves pain."), "{stdout}");

    let out = engine(&mounted, &["concepts", "--term", "aspirin", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["total"], 1, "{answer}");

    let out = engine(&mounted, &["visibility", "get", "--passage", "d-heart#0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("d-heart#0: hidden"),
        "{}",
        text(&out)
    );

    let out = engine(
        &mounted,
        &[
            "visibility",
            "set",
            "--passage",
            "d-pain#0",
            "--state",
            "hidden",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("visibility.sqlite"),
        "{}",
        text(&out)
    );
}

/// A file the operating system refuses to read is reported as such (an I/O error naming it,
/// `Permission denied`), never as a corrupt snapshot. Root reads everything, so the engine is
/// run as `nobody` (through `setpriv`, from a hard link to the binary where `nobody` can reach
/// it); where that is not possible the test says so and passes.
#[test]
fn a_permission_problem_is_not_reported_as_corruption() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = dir.path().join("agrag-engine");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_agrag-engine"), &binary).is_err() {
        eprintln!("note: cannot link the binary where another user can run it; not tested");
        return;
    }
    let root = dir.path().join("root");
    let run_id = aspirin_root(&root);
    // Readable by everyone to begin with (tantivy writes some of its files owner-only).
    let status = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&root)
        .status()
        .unwrap();
    assert!(status.success());
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&binary)
            .args(args)
            .arg("--root")
            .arg(&root)
            .env_remove("AGRAG_ROOT")
            .output()
    };
    match as_nobody(&["verify"]) {
        Ok(o) if o.status.success() => {}
        other => {
            eprintln!("note: cannot run the engine as another user ({other:?}); not tested");
            return;
        }
    }
    let text_index = root.join("runs").join(&run_id).join("text_index");
    std::fs::set_permissions(&text_index, std::fs::Permissions::from_mode(0o000)).unwrap();

    let out = as_nobody(&["verify"]).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(
        stderr.contains(&text_index.display().to_string()),
        "{stderr}"
    );
    assert!(!stderr.contains("corrupt"), "{stderr}");

    // A query says why no run is served, in the same terms.
    let out = as_nobody(&["evidence", "d-pain#0"]).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stdout.contains("Permission denied"), "{stdout}");
    assert!(!stdout.contains("corrupt"), "{stdout}");
    std::fs::set_permissions(&text_index, std::fs::Permissions::from_mode(0o755)).unwrap();
}
