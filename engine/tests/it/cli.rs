//! The command line where it meets visibility and unready snapshots: `evidence` with no run
//! served, the effective state `visibility get` reports, and roots that hold no snapshot.

use std::path::Path;

use agrag_engine::format::Layout;
use serde_json::Value;

use crate::common::{concept_run, describe as show, engine_at};

/// A run with two documents of one passage each: `d1` (`d1#0`) and `d2` (`d2#0`).
fn two_documents(root: &Path) -> String {
    concept_run(
        root,
        &[
            ("d1", "Aspirin relieves pain."),
            ("d2", "Ibuprofen reduces fever."),
        ],
        &[("C1", "Analgesics", &[])],
        &[],
        &[("concept", "d1", "C1"), ("concept", "d2", "C1")],
    )
}

/// `evidence` with no run served (a damaged run, or none yet) answers `index_not_ready` and
/// exits 1, as `themes` and `concepts` do, instead of calling every id unknown.
#[test]
fn evidence_on_an_unready_snapshot_answers_index_not_ready() {
    let damaged = tempfile::tempdir().unwrap();
    let run_id = two_documents(damaged.path());
    let passages = Layout::new(damaged.path())
        .run_dir(&run_id)
        .join("passages.parquet");
    let len = std::fs::metadata(&passages).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&passages)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let empty = tempfile::tempdir().unwrap();

    for root in [damaged.path(), empty.path()] {
        let out = engine_at(root, &["evidence", "d1#0", "d2#0"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        assert!(stdout.contains("status: index_not_ready"), "{}", show(&out));
        assert!(stdout.contains("not ready: "), "{}", show(&out));
        assert!(!stdout.contains("unknown evidence id"), "{}", show(&out));
        assert!(
            stderr.contains("fetch_evidence answered index_not_ready"),
            "{}",
            show(&out)
        );

        let out = engine_at(root, &["evidence", "--json", "d1#0"]);
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer["status"], "index_not_ready", "{answer}");
        assert!(answer["not_ready_reason"].is_string(), "{answer}");
        assert_eq!(answer["evidence"], serde_json::json!([]), "{answer}");
    }

    // A served run: `ok`, exit 0.
    let good = tempfile::tempdir().unwrap();
    let run_id = two_documents(good.path());
    let out = engine_at(good.path(), &["evidence", "--json", "d1#0", "x#9"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["status"], "ok", "{answer}");
    assert_eq!(answer["run_id"], run_id.as_str(), "{answer}");
    assert_eq!(answer["evidence"][0]["status"], "found", "{answer}");
    assert_eq!(answer["evidence"][1]["status"], "unknown", "{answer}");
}

/// `visibility get` gives the effective state and the flag that decides it: a passage of a
/// deleted document is deleted, by its document's flag.
#[test]
fn visibility_get_gives_the_effective_state_and_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    two_documents(dir.path());
    let set = |args: &[&str]| {
        let mut all = vec!["visibility", "set"];
        all.extend_from_slice(args);
        let out = engine_at(dir.path(), &all);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    };
    let get = |args: &[&str]| {
        let mut all = vec!["visibility", "get"];
        all.extend_from_slice(args);
        let out = engine_at(dir.path(), &all);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let get_json = |args: &[&str]| -> Value {
        let mut all = vec!["visibility", "get", "--json"];
        all.extend_from_slice(args);
        let out = engine_at(dir.path(), &all);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };

    assert_eq!(
        get(&["--passage", "d1#0"]),
        "d1#0: visible (no flag restricts it; the passage's own flag: none, its document d1's flag: none)"
    );

    set(&["--document", "d1", "--state", "deleted"]);
    assert_eq!(
        get(&["--passage", "d1#0"]),
        "d1#0: deleted (decided by its document d1's flag; the passage's own flag: none)"
    );
    let j = get_json(&["--passage", "d1#0"]);
    assert_eq!(j["state"], "deleted", "{j}");
    assert_eq!(j["decided_by"], "document", "{j}");
    assert_eq!(j["document_key"], "d1", "{j}");
    assert_eq!(j["document_flag"]["state"], "deleted", "{j}");
    assert_eq!(j["own_flag"], Value::Null, "{j}");
    assert_eq!(
        get(&["--document", "d1"]),
        "d1: deleted (decided by the document's own flag)"
    );

    // The passage's own flag, less restrictive than its document's, does not decide.
    set(&["--passage", "d1#0", "--state", "hidden"]);
    let j = get_json(&["--passage", "d1#0"]);
    assert_eq!(
        (&j["state"], &j["decided_by"]),
        (&"deleted".into(), &"document".into()),
        "{j}"
    );
    assert_eq!(j["own_flag"]["state"], "hidden", "{j}");

    // With the document visible again, the passage's own flag decides.
    set(&["--document", "d1", "--state", "visible"]);
    assert_eq!(
        get(&["--passage", "d1#0"]),
        "d1#0: hidden (decided by the passage's own flag; its document d1's flag: visible)"
    );
    let j = get_json(&["--passage", "d1#0"]);
    assert_eq!(j["decided_by"], "own", "{j}");

    // The other document is untouched.
    assert!(get(&["--passage", "d2#0"]).starts_with("d2#0: visible"));
}

/// A mistyped `--root` is refused with exit code 2 by every visibility command, and nothing
/// is created there.
#[test]
fn visibility_commands_refuse_a_root_that_holds_no_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("agrga");
    let commands: [&[&str]; 3] = [
        &[
            "visibility",
            "set",
            "--passage",
            "d1#0",
            "--state",
            "hidden",
        ],
        &["visibility", "get", "--passage", "d1#0"],
        &["visibility", "list"],
    ];
    for args in commands {
        let out = engine_at(&typo, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", show(&out));
        assert!(
            stderr.contains(&format!("{} is not a snapshot root", typo.display())),
            "{args:?}: {stderr}"
        );
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
    // An existing folder that is not a root is refused too, and left as it was.
    let plain = tempfile::tempdir().unwrap();
    let out = engine_at(plain.path(), commands[0]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert_eq!(std::fs::read_dir(plain.path()).unwrap().count(), 0);

    // A real root works.
    let root = tempfile::tempdir().unwrap();
    two_documents(root.path());
    for args in commands {
        let out = engine_at(root.path(), args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", show(&out));
    }
}

/// Every `--json` answer carries `not_ready_reason`: a string while no run is served, null
/// once one is.
#[test]
fn json_answers_say_why_no_run_is_served() {
    let empty = tempfile::tempdir().unwrap();
    let good = tempfile::tempdir().unwrap();
    two_documents(good.path());
    for (root, ready) in [(empty.path(), false), (good.path(), true)] {
        for args in [
            &["themes", "--json", "aspirin"][..],
            &["concepts", "--json", "--concept", "C1"][..],
            &["evidence", "--json", "d1#0"][..],
        ] {
            let out = engine_at(root, args);
            let answer: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", show(&out)));
            let reason = &answer["not_ready_reason"];
            assert!(
                answer.get("not_ready_reason").is_some(),
                "{args:?}: {answer}"
            );
            if ready {
                assert!(reason.is_null(), "{args:?}: {answer}");
                assert_eq!(out.status.code(), Some(0), "{args:?}: {}", show(&out));
            } else {
                assert!(reason.is_string(), "{args:?}: {answer}");
                assert_eq!(answer["status"], "index_not_ready", "{args:?}: {answer}");
                assert_eq!(out.status.code(), Some(1), "{args:?}: {}", show(&out));
            }
        }
    }
}

/// `visibility set` refuses an id the served run does not hold (a typo, exit 2, nothing
/// stored) unless `--allow-unknown` says the flag is meant for a later run.
#[test]
fn visibility_set_refuses_an_unknown_id_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    two_documents(dir.path());
    let out = engine_at(
        dir.path(),
        &[
            "visibility",
            "set",
            "--passage",
            "garbage",
            "--state",
            "hidden",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("has no passage \"garbage\"") && stderr.contains("--allow-unknown"),
        "{stderr}"
    );
    let listed = engine_at(dir.path(), &["visibility", "list"]);
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains("garbage"),
        "{}",
        show(&listed)
    );

    let out = engine_at(
        dir.path(),
        &[
            "visibility",
            "set",
            "--document",
            "d9",
            "--state",
            "deleted",
            "--allow-unknown",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let listed = engine_at(dir.path(), &["visibility", "list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("d9"),
        "{}",
        show(&listed)
    );
    // `get` says when the id is not in the served run, so "visible" does not hide a typo.
    for (args, noted) in [
        (["--document", "d9"], true),
        (["--passage", "nope#0"], true),
        (["--passage", "d1#0"], false),
    ] {
        let mut all = vec!["visibility", "get"];
        all.extend_from_slice(&args);
        let out = engine_at(dir.path(), &all);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout.contains("note: the served run"), noted, "{stdout}");
    }
}

/// A question longer than the MCP tools accept is refused by the command line too, naming
/// the argument and its length, not echoing the text.
#[test]
fn an_overlong_question_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    two_documents(dir.path());
    let long = "pain ".repeat(400);
    for (args, field) in [
        (vec!["themes", long.as_str()], "question"),
        (
            vec!["concepts", "--concept", "C1", "--query", long.as_str()],
            "query",
        ),
    ] {
        let out = engine_at(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(field) && stderr.contains("2000 characters"),
            "{stderr}"
        );
        assert!(stderr.len() < 500, "{stderr}");
    }
}

/// A blank question, keyword or evidence id is refused (exit 2, naming the argument), as the
/// MCP tools refuse it, instead of being searched.
#[test]
fn a_blank_question_keyword_or_evidence_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    two_documents(dir.path());
    for (args, field) in [
        (vec!["themes", ""], "question"),
        (vec!["themes", "  \t"], "question"),
        (
            vec!["concepts", "--concept", "C1", "--keyword", ""],
            "keyword",
        ),
        (vec!["concepts", "--concept", "C1", "--query", " "], "query"),
        (vec!["evidence", "pmid:1#0", ""], "id"),
    ] {
        let out = engine_at(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(field), "{args:?}: {stderr}");
    }
}

/// Accents are folded in term lookup and in the keyword clause: "Sjögren" and "Sjogren" are
/// one word, written either way in the vocabulary, the text or the question.
#[test]
fn accents_are_folded_in_terms_and_keywords() {
    let dir = tempfile::tempdir().unwrap();
    concept_run(
        dir.path(),
        &[
            ("d1", "Sjögren syndrome dries the eyes."),
            ("d2", "Gout inflames the joints."),
        ],
        &[
            ("C1", "Sjogren's Syndrome", &["Sicca Syndrome"]),
            ("C2", "Gout", &["Goût"]),
        ],
        &[],
        &[("concept", "d1", "C1"), ("concept", "d2", "C2")],
    );
    let total = |args: &[&str]| -> Value {
        let mut all = vec!["concepts", "--json"];
        all.extend_from_slice(args);
        let out = engine_at(dir.path(), &all);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", show(&out));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        answer["total"].clone()
    };
    for term in [
        "Sjögren's Syndrome",
        "SJOGREN'S SYNDROME",
        "Sjo\u{308}gren's syndrome",
    ] {
        assert_eq!(total(&["--term", term]), 1, "{term}");
    }
    assert_eq!(total(&["--term", "gout"]), 1);
    assert_eq!(total(&["--term", "goût"]), 1);
    for keyword in ["Sjogren", "sjögren", "SJÖGREN"] {
        assert_eq!(
            total(&["--concept", "C1", "--keyword", keyword]),
            1,
            "{keyword}"
        );
    }
}
