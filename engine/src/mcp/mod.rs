//! The MCP server (feature `mcp`): the [`tools`](crate::tools) over the Model Context
//! Protocol, on stdio or streamable HTTP, with the official Rust SDK `rmcp`.
//!
//! * `tools/list` publishes [`TOOLS`]: name, description and the JSON Schema derived from the
//!   same table as the argument checker.
//! * `tools/call` runs [`check_arguments`] before anything else. Bad arguments answer a tool
//!   result with `isError: true`, the text `Invalid arguments. …` naming each bad field, and
//!   the structured `{"error": "invalid_arguments", "errors": [{field, reason}]}`; no search
//!   runs. An unknown tool is a JSON-RPC `invalid params` error (-32602) naming the tools.
//! * Protocol errors are answered, never dropped (module `protocol`): input that is not JSON gets
//!   -32700 (over HTTP with status 400), JSON that is not a message -32600, a stdio line over
//!   [`MAX_LINE_BYTES`] -32600, a `tools/call` whose `params`, `name` or `arguments` has the
//!   wrong shape -32602 naming that field, and a request before `initialize` on stdio -32002
//!   saying the session is not initialized.
//! * Checked calls run on Tokio's blocking pool ([`ToolBox::call`]), so slow searches never
//!   stall the protocol loop; results carry `structuredContent` (the library's answer, same
//!   fields and statuses) and a short text rendering.
//!
//! This module is the single place where an engine error becomes a protocol answer.

use std::net::SocketAddr;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorData, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::tools::{ArgErrors, TOOLS, ToolBox, ToolOutput, check_arguments};

mod protocol;
mod stdio;

pub use stdio::MAX_LINE_BYTES;

/// The server: a [`ToolBox`] behind the MCP protocol. Cheap to clone (one per HTTP session).
#[derive(Debug, Clone)]
pub struct McpServer {
    tools: ToolBox,
}

impl McpServer {
    /// A server answering with `tools`.
    pub fn new(tools: ToolBox) -> Self {
        Self { tools }
    }

    /// The tools as MCP `Tool`s (name, description, input schema).
    pub fn tool_list() -> Vec<Tool> {
        TOOLS
            .iter()
            .map(|t| {
                let schema = match t.input_schema() {
                    Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                Tool::new(t.name, t.description, schema)
            })
            .collect()
    }
}

fn to_result(out: ToolOutput) -> CallToolResult {
    let mut r = if out.is_error {
        CallToolResult::error(vec![ContentBlock::text(out.text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(out.text)])
    };
    r.structured_content = Some(out.structured);
    r
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let s = self.tools.settings();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "agrag-engine",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(format!(
                "Theme and concept search over a biomedical corpus (snapshot root {}). \
                 search_themes finds themes for a question with evidence ids; find_by_meaning \
                 lists documents about a MeSH concept; fetch_evidence returns passage text. \
                 Scope: {}; at most {} themes per search.",
                s.root.display(),
                s.scope_source,
                s.max_hits
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Self::tool_list()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        Self::tool_list().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let checked = match check_arguments(&request.name, &args) {
            Ok(c) => c,
            Err(e @ ArgErrors::UnknownTool { .. }) => {
                let out = ToolBox::rejected(&request.name, &e);
                return Err(ErrorData::invalid_params(out.text, Some(out.structured)));
            }
            Err(e) => return Ok(to_result(ToolBox::rejected(&request.name, &e)).into()),
        };
        let tools = self.tools.clone();
        let out = tokio::task::spawn_blocking(move || tools.run(&checked))
            .await
            .map_err(|e| {
                ErrorData::internal_error(format!("the tool call did not finish: {e}"), None)
            })?;
        Ok(to_result(out).into())
    }

    /// rmcp hands over as a "custom request" every request it cannot read as a method it
    /// knows, including a known method whose params do not fit (a `tools/call` whose
    /// `arguments` is an array, say): say which field, rather than "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(protocol::custom_request_error(
            &request.method,
            request.params.as_ref(),
        ))
    }
}

/// Serves MCP on stdin/stdout until the client closes stdin. Every message line is checked
/// before the protocol sees it (see the module docs): malformed, oversized and premature
/// messages are answered with JSON-RPC errors, and the session goes on.
///
/// # Errors
/// An I/O error (the transport's message inside) when the session cannot start or ends abnormally.
pub async fn serve_stdio(tools: ToolBox) -> std::io::Result<()> {
    let (stdin, stdout) = rmcp::transport::stdio();
    let (transport, writer) = stdio::CheckedLines::spawn(stdin, stdout);
    let session = async {
        let running = match McpServer::new(tools).serve(transport).await {
            Ok(running) => running,
            // Stdin ended before a client initialized a session (a client that gave up, or a
            // server started with no client): nothing was asked, so nothing failed.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
                tracing::info!("stdin closed before a client initialized a session");
                return Ok(());
            }
            Err(e) => return Err(std::io::Error::other(e)),
        };
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok::<_, std::io::Error>(())
    };
    let result = session.await;
    // The transport is gone: the writer ends once every answer is written.
    let written = writer
        .await
        .map_err(|e| std::io::Error::other(format!("the stdout writer failed: {e}")))?;
    result?;
    // A client that closed its end of stdout is not an error of ours.
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Largest request body the HTTP transport reads, in bytes (4 MiB).
pub const MAX_HTTP_BODY_BYTES: usize = 4 << 20;

/// Answers `413 Payload Too Large` before reading any of the body when a request declares a
/// `Content-Length` over [`MAX_HTTP_BODY_BYTES`], so a client that sent `Expect: 100-continue`
/// gets the refusal instead of uploading the body. (A body without a declared length is cut at
/// the same limit by the MCP transport while it is read.)
async fn refuse_declared_oversize(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(len) if len > MAX_HTTP_BODY_BYTES as u64 => (
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body of {len} bytes is over the limit of {MAX_HTTP_BODY_BYTES} bytes"),
        )
            .into_response(),
        _ => next.run(request).await,
    }
}

/// Answers a JSON body that is not one JSON-RPC message with `400 Bad Request` and the
/// JSON-RPC error (-32700 for input that is not JSON, -32600 for anything else that is not a
/// message), where the transport would answer `415 Unsupported Media Type`. Bodies of other
/// content types go on to the transport, which refuses them with `415`.
async fn answer_malformed_json(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    if request.method() != axum::http::Method::POST || !is_json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_HTTP_BODY_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "request body not read within the limit of {MAX_HTTP_BODY_BYTES} bytes: {e}"
                ),
            )
                .into_response();
        }
    };
    let rejected = match protocol::parse(&bytes).map(protocol::to_message) {
        Err(e) | Ok(protocol::Checked::Reject(e)) => Some(e),
        Ok(protocol::Checked::Message(_) | protocol::Checked::Ignore) => None,
    };
    if let Some(e) = rejected {
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            e.to_json().to_string(),
        )
            .into_response();
    }
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

/// Serves MCP over streamable HTTP at `http://ADDR/mcp` until Ctrl-C. Prints the URL on
/// stderr once listening. Requests whose `Host` is not loopback or the bound address are
/// refused (DNS-rebinding protection); bodies over [`MAX_HTTP_BODY_BYTES`] are refused with
/// `413`, before any of the body is read when the request declares its length; a JSON body
/// that is not a JSON-RPC message gets `400` with the JSON-RPC error.
///
/// # Errors
/// When `addr` cannot be bound, or the server fails.
pub async fn serve_http(tools: ToolBox, addr: SocketAddr) -> std::io::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
    let local = listener.local_addr()?;
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    hosts.push(local.ip().to_string());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_max_request_body_bytes(MAX_HTTP_BODY_BYTES);
    let server = McpServer::new(tools);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(answer_malformed_json))
        .layer(axum::middleware::from_fn(refuse_declared_oversize));
    eprintln!("agrag-engine MCP server listening on http://{local}/mcp");
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
