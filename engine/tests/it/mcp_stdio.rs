//! `agrag-engine serve` over stdio, spoken to in raw JSON-RPC (issue 7): initialize,
//! tools/list, tools/call for each tool with good and bad arguments, hostile input (a 1 MB
//! query, deeply nested JSON, a line that is not JSON, an unknown tool, limit 10^12), and the
//! server still answering afterwards; protocol errors answered (not JSON, over the line
//! limit, the wrong shape of `arguments`, a call before `initialize`), logs without colour
//! codes, and a run published while serving answered without a restart.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::concept_run;

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// What the server writes on stderr, line by line.
    log: Receiver<String>,
    next_id: u64,
}

/// Sends each line of `from` to the returned receiver.
fn line_channel(from: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

impl Server {
    fn start(root: &std::path::Path, env: &[(&str, &str)]) -> Self {
        let mut s = Self::spawn(root, &[], env);
        s.initialize();
        s
    }

    /// Starts `serve ARGS` on `root` without speaking to it.
    fn spawn(root: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agrag-engine"));
        cmd.arg("serve")
            .args(args)
            .env("AGRAG_ROOT", root)
            .env_remove("MCP_SCOPE")
            .env_remove("MCP_MAX_HITS")
            .env_remove("AGRAG_CONFIG")
            .env_remove("AGRAG_WATCH_INTERVAL")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = line_channel(child.stdout.take().unwrap());
        let log = line_channel(child.stderr.take().unwrap());
        Self {
            child,
            stdin,
            lines,
            log,
            next_id: 0,
        }
    }

    fn initialize(&mut self) {
        let s = self;
        let init = s.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "agrag-it", "version": "0"}
            }),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "agrag-engine",
            "{init}"
        );
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        s.send_raw(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    }

    /// The next line the server writes on stdout, as JSON.
    fn next_line(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the server answers within 60 s");
        serde_json::from_str(&line).expect("the server writes JSON lines")
    }

    /// Waits until the server logs a line containing `needle`, and returns it.
    fn wait_for_log(&mut self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(_) => panic!("the server did not log {needle:?} within 30 s"),
            }
        }
    }

    fn send_raw(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns the response with its id (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send_raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        self.response(id)
    }

    fn response(&mut self, id: u64) -> Value {
        loop {
            let v = self.next_line();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    concept_run(
        dir.path(),
        &[
            ("d-dog", "A dog on a leash walks in the park."),
            ("d-cat", "Cats purr when content."),
        ],
        &[
            ("C1", "Mammals", &["Mammal"]),
            ("C3", "Dogs", &["Dog"]),
            ("C5", "Cats", &["Cat"]),
        ],
        &[("C3", "C1"), ("C5", "C1")],
        &[("concept", "d-dog", "C3"), ("concept", "d-cat", "C5")],
    );
    dir
}

#[test]
fn tools_list_publishes_the_three_schemas() {
    let dir = run_root();
    let mut s = Server::start(dir.path(), &[]);
    let r = s.request("tools/list", json!({}));
    let tools = r["result"]["tools"].as_array().expect("a tool list");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["search_themes", "find_by_meaning", "fetch_evidence"]
    );
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["query"]["maxLength"],
        1000
    );
    assert_eq!(tools[0]["inputSchema"]["additionalProperties"], false);
    assert_eq!(
        tools[1]["inputSchema"]["properties"]["sample"]["maximum"],
        50
    );
    assert_eq!(tools[2]["inputSchema"]["properties"]["ids"]["maxItems"], 20);
}

#[test]
fn calls_answer_structured_content_and_text() {
    let dir = run_root();
    let mut s = Server::start(dir.path(), &[("MCP_MAX_HITS", "2")]);
    let r = s.call("find_by_meaning", json!({"term": "dog", "sample": 5}));
    let res = &r["result"];
    assert_eq!(res["isError"], false, "{r}");
    assert_eq!(res["structuredContent"]["status"], "ok");
    assert_eq!(res["structuredContent"]["total"], 1);
    assert_eq!(
        res["structuredContent"]["sample"][0]["document_key"],
        "d-dog"
    );
    assert!(
        res["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("status: ok")
    );

    let r = s.call("search_themes", json!({"query": "dogs", "limit": 5}));
    let res = &r["result"];
    assert_eq!(res["isError"], false, "{r}");
    assert_eq!(res["structuredContent"]["status"], "no_match");
    let text = res["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("limit 5 capped at 2 by MCP_MAX_HITS"),
        "{text}"
    );

    let r = s.call("fetch_evidence", json!({"ids": ["d-cat#0", "x#9"]}));
    let ev = &r["result"]["structuredContent"]["evidence"];
    assert_eq!(ev[0]["status"], "found");
    assert_eq!(ev[0]["text"], "Cats purr when content.");
    assert_eq!(ev[1]["status"], "unknown");
}

#[test]
fn hostile_input_gets_clear_errors_and_the_server_keeps_serving() {
    let dir = run_root();
    let mut s = Server::start(dir.path(), &[]);

    // Wrong types, out of range, unknown field: one tool error naming each field.
    let r = s.call(
        "search_themes",
        json!({"query": 42, "limit": 1_000_000_000_000_u64, "support_limit": "3", "evil": true}),
    );
    let res = &r["result"];
    assert_eq!(res["isError"], true, "{r}");
    let text = res["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Invalid arguments."), "{text}");
    for field in ["`query`", "`limit`", "`support_limit`", "`evil`"] {
        assert!(text.contains(field), "{field} missing from {text}");
    }
    let fields: Vec<&str> = res["structuredContent"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["query", "limit", "support_limit", "evil"]);

    // A 1 MB query.
    let r = s.call("search_themes", json!({"query": "a".repeat(1 << 20)}));
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("`query` must be 1-1000 characters long, got 1048576"),
        "{text}"
    );

    // Deeply nested JSON inside an argument (parsed, then rejected by type).
    let mut nested = json!(1);
    for _ in 0..100 {
        nested = json!({"a": nested});
    }
    let r = s.call("fetch_evidence", json!({"ids": nested}));
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("`ids` must be an array"), "{text}");

    // Nesting past the JSON parser's depth limit, and a line that is not JSON at all: the
    // server answers a parse error and keeps serving.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    s.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":9000,"method":"tools/call","params":{{"name":"search_themes","arguments":{{"query":{deep}}}}}}}"#
    ));
    s.send_raw("this is not json");
    // A line over the transport's 16 MiB line limit is answered with an error.
    s.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":9001,"method":"tools/call","params":{{"name":"search_themes","arguments":{{"query":"{}"}}}}}}"#,
        "q".repeat(17 << 20)
    ));

    // Unknown tool: a JSON-RPC invalid-params error naming the tools.
    let r = s.call("rm_rf", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown tool `rm_rf`"),
        "{r}"
    );

    // Still serving.
    let r = s.call("fetch_evidence", json!({"ids": ["d-dog#0"]}));
    assert_eq!(
        r["result"]["structuredContent"]["evidence"][0]["status"], "found",
        "{r}"
    );
}

#[test]
fn fifty_concurrent_calls_all_answer() {
    let dir = run_root();
    let mut s = Server::start(dir.path(), &[]);
    let first = s.next_id + 1;
    for i in 0..50u64 {
        s.next_id += 1;
        let (tool, args) = match i % 3 {
            0 => ("search_themes", json!({"query": format!("dogs {i}")})),
            1 => ("find_by_meaning", json!({"term": "dog"})),
            _ => ("fetch_evidence", json!({"ids": ["d-dog#0"]})),
        };
        let line = json!({"jsonrpc": "2.0", "id": s.next_id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        s.send_raw(&line.to_string());
    }
    let mut answered = std::collections::BTreeMap::new();
    while answered.len() < 50 {
        let line = s
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("50 answers");
        let v: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = v["id"].as_u64() {
            answered.insert(id, v);
        }
    }
    for (id, v) in &answered {
        assert!((first..first + 50).contains(id));
        assert_eq!(v["result"]["isError"], false, "{v}");
    }
    let r = s.call("find_by_meaning", json!({"term": "dog"}));
    assert_eq!(r["result"]["structuredContent"]["total"], 1, "{r}");
}

#[test]
fn unusable_settings_stop_serve_with_exit_code_2() {
    let dir = run_root();
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agrag-engine"));
        cmd.arg("serve")
            .args(args)
            .env("AGRAG_ROOT", dir.path())
            .env_remove("MCP_SCOPE")
            .env_remove("MCP_MAX_HITS")
            .env_remove("AGRAG_CONFIG")
            .stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (env, args, named) in [
        (&[("MCP_MAX_HITS", "0")][..], &[][..], "MCP_MAX_HITS"),
        (
            &[("MCP_SCOPE", "/nonexistent/keys")][..],
            &[][..],
            "MCP_SCOPE",
        ),
        (
            &[("EMBEDDING_PROVIDER", "gpt")][..],
            &[][..],
            "EMBEDDING_PROVIDER",
        ),
        (&[][..], &["--http", "not an address"][..], "--http"),
        (
            &[][..],
            &["--config", "/nonexistent/agrag.toml"][..],
            "config",
        ),
    ] {
        let (code, stderr) = run(env, args);
        assert_eq!(code, Some(2), "{env:?} {args:?}: {stderr}");
        assert!(stderr.contains(named), "{named} not named in: {stderr}");
    }
    // Good settings and no client (stdin already at its end): nothing was asked, exit 0.
    let (code, stderr) = run(&[], &["--watch-interval", "off"]);
    assert_eq!(code, Some(0), "{stderr}");
}

/// Every protocol error gets a JSON-RPC answer (a client waiting for it would hang otherwise),
/// with the request's id when it can be read, and the session goes on.
#[test]
fn protocol_errors_are_answered() {
    let dir = run_root();
    let mut s = Server::start(dir.path(), &[]);

    // Not JSON: -32700, id null (there is none to read).
    s.send_raw("this is not json");
    let r = s.next_line();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert_eq!(r["id"], Value::Null, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{r}"
    );

    // Broken JSON whose id comes first: -32700 with that id.
    s.send_raw(r#"{"jsonrpc":"2.0","id":"broken-1","method":"tools/call","params":{"#);
    let r = s.next_line();
    assert_eq!(
        (&r["error"]["code"], &r["id"]),
        (&json!(-32700), &json!("broken-1")),
        "{r}"
    );

    // A line over the 16 MiB limit: an error naming the limit, with the request's id.
    s.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":9001,"method":"tools/call","params":{{"name":"search_themes","arguments":{{"query":"{}"}}}}}}"#,
        "q".repeat(17 << 20)
    ));
    let r = s.response(9001);
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("16 MiB"), "{message}");

    // `arguments` that is not an object: -32602 naming the field (not -32601 "tools/call").
    for bad in [json!([1, 2]), json!("d-dog#0"), json!(7)] {
        let r = s.request(
            "tools/call",
            json!({"name": "fetch_evidence", "arguments": bad}),
        );
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("`arguments`"),
            "{r}"
        );
        assert_eq!(r["error"]["data"]["field"], "arguments", "{r}");
    }

    // A batch (an array) is not a message: -32600.
    s.send_raw(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    let r = s.next_line();
    assert_eq!(r["error"]["code"], -32600, "{r}");

    // Still serving.
    let r = s.call("fetch_evidence", json!({"ids": ["d-dog#0"]}));
    assert_eq!(
        r["result"]["structuredContent"]["evidence"][0]["status"], "found",
        "{r}"
    );
}

/// A call before `initialize` is told that the session is not initialized, a notification
/// before it does not end the session, and `initialize` then works as usual.
#[test]
fn a_call_before_initialize_says_the_session_is_not_initialized() {
    let dir = run_root();
    let mut s = Server::spawn(dir.path(), &[], &[]);
    s.send_raw(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    let r = s.request(
        "tools/call",
        json!({"name": "fetch_evidence", "arguments": {"ids": ["d-dog#0"]}}),
    );
    assert!(r["error"].is_object(), "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("not initialized"), "{message}");
    assert!(message.contains("`initialize`"), "{message}");
    assert!(!message.contains("_meta"), "{message}");

    s.initialize();
    let r = s.call("fetch_evidence", json!({"ids": ["d-dog#0"]}));
    assert_eq!(
        r["result"]["structuredContent"]["evidence"][0]["status"], "found",
        "{r}"
    );
}

/// With stderr not a terminal (a pipe, a log file), log lines carry no ANSI colour codes.
#[test]
fn logs_carry_no_colour_codes_when_stderr_is_not_a_terminal() {
    let empty = tempfile::tempdir().unwrap();
    let mut s = Server::spawn(empty.path(), &[], &[("RUST_LOG", "info")]);
    // The engine's tracing warning (not the plain notice `serve` prints as well).
    let line = s.wait_for_log("no run served from");
    assert!(!line.contains('\u{1b}'), "{line:?}");
    s.initialize();
    let _ = s.call("fetch_evidence", json!({"ids": ["x#0"]}));
    for line in s.log.try_iter() {
        assert!(!line.contains('\u{1b}'), "{line:?}");
    }
}

/// `serve` watches `LATEST`: a run published while it serves is answered from without a
/// restart, and the swap is logged on stderr.
#[test]
fn serve_answers_from_a_run_published_while_it_serves() {
    let dir = run_root();
    let mut s = Server::spawn(dir.path(), &["--watch-interval", "50ms"], &[]);
    s.initialize();
    let ask = |s: &mut Server| {
        let r = s.call("fetch_evidence", json!({"ids": ["d-bird#0"]}));
        r["result"]["structuredContent"]["evidence"][0]["status"].clone()
    };
    assert_eq!(ask(&mut s), "unknown");

    let second = concept_run(
        dir.path(),
        &[("d-bird", "Birds sing at dawn.")],
        &[("C1", "Animals", &[]), ("C7", "Birds", &["Bird"])],
        &[("C7", "C1")],
        &[("concept", "d-bird", "C7")],
    );
    let start = std::time::Instant::now();
    while ask(&mut s) != "found" {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the new run was not served within 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let line = s.wait_for_log(&format!("now serving run {second}"));
    assert!(line.contains("INFO"), "{line}");
    let r = s.call("find_by_meaning", json!({"term": "bird"}));
    assert_eq!(r["result"]["structuredContent"]["total"], 1, "{r}");
}

/// A bad `--watch-interval` stops `serve` with exit code 2 naming it; `--help` documents it.
#[test]
fn the_watch_interval_is_checked_and_documented() {
    let dir = run_root();
    for bad in ["soon", "5", "-1s", "30d"] {
        let out = Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
            .arg("serve")
            .arg(format!("--watch-interval={bad}"))
            .env("AGRAG_ROOT", dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--watch-interval"), "{bad}: {stderr}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("--watch-interval") && help.contains("AGRAG_WATCH_INTERVAL"),
        "{help}"
    );
    assert!(help.contains("[default: 2s]"), "{help}");
}
