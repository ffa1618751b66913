//! `agrag-engine serve --http`, spoken to in raw HTTP: a JSON body that is not a JSON-RPC
//! message gets `400 Bad Request` with the JSON-RPC error, not `415 Unsupported Media Type`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::concept_run;

struct HttpServer {
    child: Child,
    /// `HOST:PORT` it listens on.
    addr: String,
}

impl HttpServer {
    fn start(root: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
            .args(["serve", "--http", "127.0.0.1:0", "--watch-interval", "off"])
            .env("AGRAG_ROOT", root)
            .env_remove("MCP_SCOPE")
            .env_remove("MCP_MAX_HITS")
            .env_remove("AGRAG_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut addr = None;
        let mut line = String::new();
        while stderr.read_line(&mut line).unwrap_or(0) > 0 {
            if let Some(rest) = line
                .trim()
                .strip_prefix("agrag-engine MCP server listening on http://")
            {
                addr = rest.strip_suffix("/mcp").map(str::to_owned);
                break;
            }
            line.clear();
        }
        // Keep draining stderr so that the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Self {
            addr: addr.expect("the server prints the address it listens on"),
            child,
        }
    }

    /// POSTs `body` as `content_type` to /mcp; returns the status code and the body.
    fn post(&self, content_type: &str, body: &[u8]) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
             Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = response
            .split_once("\r\n\r\n")
            .map_or(String::new(), |(_, b)| b.to_owned());
        (status, body)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn malformed_json_over_http_gets_400_with_the_json_rpc_error() {
    let dir = tempfile::tempdir().unwrap();
    concept_run(
        dir.path(),
        &[("d-dog", "A dog walks.")],
        &[("C3", "Dogs", &["Dog"])],
        &[],
        &[("concept", "d-dog", "C3")],
    );
    let server = HttpServer::start(dir.path());

    let (status, body) = server.post("application/json", b"this is not json");
    assert_eq!(status, 400, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("a JSON-RPC error body");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");

    let (status, body) = server.post(
        "application/json",
        br#"{"jsonrpc":"2.0","id":42,"method":"initialize","params":{"#,
    );
    assert_eq!(status, 400, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (&answer["error"]["code"], &answer["id"]),
        (&(-32700).into(), &42.into()),
        "{answer}"
    );

    // JSON that is not a message: -32600.
    let (status, body) = server.post("application/json", b"[1, 2, 3]");
    assert_eq!(status, 400, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");

    // Another content type is still the transport's 415; a good request still works.
    let (status, _) = server.post("text/plain", b"{}");
    assert_eq!(status, 415);
    let (status, body) = server.post(
        "application/json",
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"0"}}}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("agrag-engine"), "{body}");
}
