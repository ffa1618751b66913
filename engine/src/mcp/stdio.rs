//! The stdio transport: one JSON-RPC message per line, checked before rmcp sees it
//! ([`protocol`](super::protocol)), so that every request gets an answer.
//!
//! * A line is read into a buffer bounded by [`MAX_LINE_BYTES`]; a longer one is skipped to its
//!   end and answered `-32600`, with its `id` when its first bytes name it.
//! * A line that is not JSON is answered `-32700`; JSON that is not a message `-32600`.
//! * Before `initialize`, a request is answered `-32002` ("the session is not initialized"),
//!   except `ping` and requests that carry their own `_meta` (the stateless lifecycle of newer
//!   protocol versions, which rmcp judges); a notification or response is dropped, where rmcp
//!   would end the session.
//!
//! Everything written to stdout goes through one writer task, so that an answer written here
//! and a response written by rmcp never interleave, and a read cancelled by rmcp's event loop
//! never leaves half a line on stdout.

use std::collections::VecDeque;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::protocol::{self, Checked, ID_SCAN_BYTES, NOT_INITIALIZED, ProtocolError};

/// Longest message line read, in bytes (16 MiB, rmcp's own limit).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Lines waiting for the writer task.
const WRITE_QUEUE_LINES: usize = 64;

/// A line being skipped because it is over the limit.
#[derive(Debug)]
struct Oversized {
    /// Its first bytes, to find its `id`.
    head: Vec<u8>,
    /// Its length so far, in bytes.
    num_bytes: usize,
}

/// What one bounded line read gave.
enum LineRead {
    /// A whole line (without its newline) is in the buffer.
    Line,
    /// A line over the limit ended.
    Oversized(Oversized),
    /// End of input.
    Eof,
    /// Reading failed.
    Io(std::io::Error),
}

/// The server side of a stdio session (generic over the streams, for tests).
pub struct CheckedLines<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Set while the rest of a line over the limit is skipped; kept here, not in the read
    /// future, because rmcp may drop that future between two reads and call again.
    oversized: Option<Oversized>,
    max_line_bytes: usize,
    out: mpsc::Sender<Vec<u8>>,
    /// Answers not yet handed to the writer (kept here for the same reason as `oversized`).
    pending: VecDeque<Vec<u8>>,
    initialized: bool,
}

impl<R> std::fmt::Debug for CheckedLines<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedLines")
            .field("max_line_bytes", &self.max_line_bytes)
            .field("initialized", &self.initialized)
            .finish_non_exhaustive()
    }
}

/// Writes every line it receives to `write`, flushing after each, until the senders are gone
/// or the output fails.
///
/// # Errors
/// The output's I/O error.
pub async fn write_lines<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<Vec<u8>>,
    mut write: W,
) -> std::io::Result<()> {
    while let Some(line) = rx.recv().await {
        write.write_all(&line).await?;
        write.flush().await?;
    }
    Ok(())
}

impl<R: AsyncRead + Unpin + Send> CheckedLines<R> {
    /// A transport reading `read` and handing every line to write to `out` (drained by
    /// [`write_lines`]), with lines limited to `max_line_bytes`.
    pub fn new(read: R, out: mpsc::Sender<Vec<u8>>, max_line_bytes: usize) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            oversized: None,
            max_line_bytes,
            out,
            pending: VecDeque::new(),
            initialized: false,
        }
    }

    /// A channel and its writer task on `write`, and a transport reading `read` that answers
    /// through them. The task ends once the transport and every response are written.
    pub fn spawn(
        read: R,
        write: impl AsyncWrite + Unpin + Send + 'static,
    ) -> (Self, tokio::task::JoinHandle<std::io::Result<()>>) {
        let (tx, rx) = mpsc::channel(WRITE_QUEUE_LINES);
        let writer = tokio::spawn(write_lines(rx, write));
        (Self::new(read, tx, MAX_LINE_BYTES), writer)
    }

    /// Reads one line into `self.line`, never letting it grow past the limit. Cancel-safe:
    /// a partial line stays in `self.line` (or `self.oversized`) for the next call.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (consumed, ended) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) => a,
                    Err(e) => return LineRead::Io(e),
                };
                if available.is_empty() {
                    return LineRead::Eof;
                }
                let newline = available.iter().position(|&b| b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                let content = newline.unwrap_or(available.len());
                if let Some(o) = &mut self.oversized {
                    o.num_bytes += content;
                } else if self.line.len() + content > self.max_line_bytes {
                    let num_bytes = self.line.len() + content;
                    // The buffer goes (and its memory with it); its first bytes stay.
                    let mut head = std::mem::take(&mut self.line);
                    head.truncate(ID_SCAN_BYTES);
                    let more = ID_SCAN_BYTES.saturating_sub(head.len()).min(content);
                    head.extend_from_slice(&available[..more]);
                    self.oversized = Some(Oversized { head, num_bytes });
                } else {
                    self.line.extend_from_slice(&available[..content]);
                }
                (take, newline.is_some())
            };
            self.read.consume(consumed);
            if ended {
                return match self.oversized.take() {
                    Some(o) => LineRead::Oversized(o),
                    None => LineRead::Line,
                };
            }
        }
    }

    /// Hands the pending answers to the writer. Cancel-safe: an answer leaves `pending` only
    /// once the channel has room for it. Returns `false` when the writer is gone.
    async fn flush_pending(&mut self) -> bool {
        while !self.pending.is_empty() {
            let Ok(permit) = self.out.reserve().await else {
                return false;
            };
            if let Some(line) = self.pending.pop_front() {
                permit.send(line);
            }
        }
        true
    }

    /// What to do with one line.
    fn check(&mut self, line: &[u8]) -> Checked {
        let message = match protocol::parse(line) {
            Ok(m) => m,
            Err(e) => return Checked::Reject(e),
        };
        if !self.initialized {
            let has_meta = message
                .get("params")
                .and_then(|p| p.get("_meta"))
                .is_some_and(Value::is_object);
            match (protocol::method_of(&message), protocol::id_of(&message)) {
                (Some("initialize" | "ping" | "server/discover"), Some(_)) => {}
                (Some(_), Some(_)) if has_meta => {}
                (Some(method), Some(id)) => {
                    let mut e = ProtocolError {
                        id,
                        code: NOT_INITIALIZED,
                        message: format!(
                            "Session not initialized: send `initialize` (then the \
                             `notifications/initialized` notification) before `{method}`"
                        ),
                        data: None,
                    };
                    e.data = Some(json!({"method": method}));
                    return Checked::Reject(e);
                }
                (method, _) => {
                    tracing::debug!(
                        method,
                        "dropped a message without an id before `initialize`"
                    );
                    return Checked::Ignore;
                }
            }
        }
        let checked = protocol::to_message(message);
        if let Checked::Message(m) = &checked
            && let ClientJsonRpcMessage::Request(r) = m.as_ref()
            && matches!(r.request, ClientRequest::InitializeRequest(_))
        {
            self.initialized = true;
        }
        checked
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for CheckedLines<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let line = serde_json::to_vec(&item).map(|mut l| {
            l.push(b'\n');
            l
        });
        async move {
            let line = line.map_err(std::io::Error::other)?;
            out.send(line).await.map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed")
            })
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if !self.flush_pending().await {
                return None;
            }
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::Oversized(o) => {
                    tracing::warn!(
                        num_bytes = o.num_bytes,
                        max_bytes = self.max_line_bytes,
                        "answered a message over the line limit with an error"
                    );
                    let e = protocol::too_large(&o.head, o.num_bytes, self.max_line_bytes);
                    self.pending.push_back(e.to_line());
                    continue;
                }
                LineRead::Eof => {
                    // A partial last line without its newline is not a message.
                    self.flush_pending().await;
                    return None;
                }
                LineRead::Io(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    self.flush_pending().await;
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\r").unwrap_or(&line);
            let checked = if text.iter().all(u8::is_ascii_whitespace) {
                Checked::Ignore
            } else {
                self.check(text)
            };
            // Keep the buffer's capacity for the next line.
            self.line = line;
            self.line.clear();
            match checked {
                Checked::Message(m) => return Some(*m),
                Checked::Ignore => {}
                Checked::Reject(e) => {
                    tracing::debug!(code = e.code, "answered a protocol error: {}", e.message);
                    self.pending.push_back(e.to_line());
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.flush_pending().await;
        Ok(())
    }
}
