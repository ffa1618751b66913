//! `agrag-engine serve` over stdio, spoken to in raw JSON-RPC (issue 7): initialize,
//! tools/list, tools/call for each tool with good and bad arguments, hostile input (a 1 MB
//! query, deeply nested JSON, a line that is not JSON, an unknown tool, limit 10^12), and the
//! server still answering afterwards.

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
    next_id: u64,
}

impl Server {
    fn start(root: &std::path::Path, env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agrag-engine"));
        cmd.arg("serve")
            .env("AGRAG_ROOT", root)
            .env_remove("MCP_SCOPE")
            .env_remove("MCP_MAX_HITS")
            .env_remove("AGRAG_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Self {
            child,
            stdin,
            lines,
            next_id: 0,
        };
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
        s
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
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the server answers within 60 s");
            let v: Value = serde_json::from_str(&line).expect("the server writes JSON lines");
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
    // server drops the line (or answers a parse error) and keeps serving.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    s.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":9000,"method":"tools/call","params":{{"name":"search_themes","arguments":{{"query":{deep}}}}}}}"#
    ));
    s.send_raw("this is not json");
    // A line over the transport's 16 MiB line limit is dropped unanswered.
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
}
