//! JSON-RPC checks made before rmcp sees a message, so that every request gets an answer that
//! says what is wrong with it.
//!
//! rmcp drops input that is not JSON (stdio) or answers it `415 Unsupported Media Type`
//! (HTTP), drops a line over its length limit, and reads a `tools/call` whose `arguments` is
//! not an object as an unknown method. A client waiting for its answer then hangs, or is told
//! the wrong thing. Here:
//!
//! * input that is not JSON answers `-32700` (parse error);
//! * JSON that is not one JSON-RPC message answers `-32600` (invalid request);
//! * a message over the size limit answers `-32600`, naming the limit;
//! * a known method whose params do not fit answers `-32602` naming the field
//!   ([`custom_request_error`]); only an unknown method answers `-32601`.
//!
//! An answer carries the request's `id` when it can be read, even from a line that is not
//! JSON or is cut at the limit (the `id` member usually comes before `params`), so that the
//! client can match it to its request; else `null`, as JSON-RPC asks.

use rmcp::model::{CallToolRequestParams, ClientJsonRpcMessage, ErrorCode, ErrorData};
use serde_json::{Value, json};

/// JSON-RPC: the input is not valid JSON.
pub const PARSE_ERROR: i32 = -32700;
/// JSON-RPC: the JSON is not a valid request object.
pub const INVALID_REQUEST: i32 = -32600;
/// A request before the session is initialized (the code LSP and several MCP servers use;
/// JSON-RPC leaves -32000 to -32099 to servers).
pub const NOT_INITIALIZED: i32 = -32002;

/// How much of a message's beginning is kept to find its `id` when the message is not used
/// (too long, or not JSON), in bytes.
pub const ID_SCAN_BYTES: usize = 4096;

/// A JSON-RPC error answer to a message that never reaches rmcp.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolError {
    /// The request's id, or `null` when it cannot be read.
    pub id: Value,
    /// The JSON-RPC error code.
    pub code: i32,
    /// What is wrong, for people.
    pub message: String,
    /// Structured detail (`{"field": …}` and the like).
    pub data: Option<Value>,
}

impl ProtocolError {
    fn new(id: Value, code: i32, message: impl Into<String>) -> Self {
        Self {
            id,
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The JSON-RPC error response object.
    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            error["data"] = d.clone();
        }
        json!({"jsonrpc": "2.0", "id": self.id, "error": error})
    }

    /// The response as one line of JSON, newline included (the stdio framing).
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = self.to_json().to_string().into_bytes();
        line.push(b'\n');
        line
    }
}

/// What to do with one incoming message.
#[derive(Debug)]
pub enum Checked {
    /// A JSON-RPC message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Nothing to pass on or answer (a notification rmcp ignores, for compatibility with
    /// clients that send non-MCP notifications).
    Ignore,
    /// Answer this error; the message goes no further.
    Reject(ProtocolError),
}

/// The answer to a message of `num_bytes` bytes over `max_bytes`, with the id read from its
/// first bytes `head` when possible.
pub fn too_large(head: &[u8], num_bytes: usize, max_bytes: usize) -> ProtocolError {
    let mut e = ProtocolError::new(
        id_in_prefix(head).unwrap_or(Value::Null),
        INVALID_REQUEST,
        format!(
            "Invalid Request: the message is {num_bytes} bytes long, over the limit of {max_bytes} bytes ({} MiB); it was not read",
            max_bytes >> 20
        ),
    );
    e.data = Some(json!({"num_bytes": num_bytes, "max_bytes": max_bytes}));
    e
}

/// Parses one message (`line` without its newline; a UTF-8 byte-order mark is skipped).
///
/// # Errors
/// A [`PARSE_ERROR`] when `line` is not JSON.
pub fn parse(line: &[u8]) -> Result<Value, ProtocolError> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    serde_json::from_slice(line).map_err(|e| {
        ProtocolError::new(
            id_in_prefix(&line[..line.len().min(ID_SCAN_BYTES)]).unwrap_or(Value::Null),
            PARSE_ERROR,
            format!("Parse error: the message is not valid JSON ({e})"),
        )
    })
}

/// The `id` of a message, when it is a valid one (a string or a number).
pub fn id_of(message: &Value) -> Option<Value> {
    message
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
}

/// The `method` of a message, when it has one.
pub fn method_of(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

/// A JSON-RPC message for rmcp from a parsed one.
pub fn to_message(message: Value) -> Checked {
    let id = id_of(&message).unwrap_or(Value::Null);
    if !message.is_object() {
        let what = if message.is_array() {
            "a batch (an array); send one message per line"
        } else {
            "not an object"
        };
        return Checked::Reject(ProtocolError::new(
            id,
            INVALID_REQUEST,
            format!("Invalid Request: the message is {what}"),
        ));
    }
    let notification = message.get("id").is_none();
    let ignorable = notification && method_of(&message).is_some_and(|m| !is_mcp_method(m));
    match serde_json::from_value::<ClientJsonRpcMessage>(message) {
        Ok(m) => Checked::Message(Box::new(m)),
        // rmcp ignores notifications that are not MCP's (clients send LSP ones, for instance).
        Err(_) if ignorable => Checked::Ignore,
        Err(e) => Checked::Reject(ProtocolError::new(
            id,
            INVALID_REQUEST,
            format!("Invalid Request: not a JSON-RPC 2.0 request, notification or response ({e})"),
        )),
    }
}

/// Whether `method` is one of MCP's requests or notifications.
fn is_mcp_method(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "server/discover"
            | "tools/call"
            | "tools/list"
            | "prompts/get"
            | "prompts/list"
            | "resources/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "resources/templates/list"
            | "completion/complete"
            | "logging/setLevel"
    ) || method.starts_with("notifications/")
}

/// The answer to a request rmcp could not read as any method it knows ("custom request"): for
/// a known method, its params did not fit, so `-32602` naming the field (for `tools/call`:
/// `params`, `name` or `arguments`); for an unknown one, `-32601`.
pub fn custom_request_error(method: &str, params: Option<&Value>) -> ErrorData {
    if method == "tools/call" {
        return tools_call_params_error(params);
    }
    if is_mcp_method(method) {
        return ErrorData::invalid_params(
            format!("Invalid params: the params of `{method}` do not fit the method"),
            Some(json!({"method": method})),
        );
    }
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: `{method}`"),
        Some(json!({"method": method})),
    )
}

/// The JSON type of a value, as a message names it.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn tools_call_params_error(params: Option<&Value>) -> ErrorData {
    let (field, reason) = match params {
        None | Some(Value::Null) => (
            "params",
            "is missing: `tools/call` takes an object with `name` and `arguments`".to_owned(),
        ),
        Some(p) if !p.is_object() => ("params", format!("must be an object, got {}", kind(p))),
        Some(p) => match (p.get("name"), p.get("arguments")) {
            (None, _) => ("name", "is missing: name the tool to call".to_owned()),
            (Some(n), _) if !n.is_string() => {
                ("name", format!("must be a string, got {}", kind(n)))
            }
            (_, Some(a)) if !(a.is_object() || a.is_null()) => (
                "arguments",
                format!("must be an object of named arguments, got {}", kind(a)),
            ),
            _ => match serde_json::from_value::<CallToolRequestParams>(p.clone()) {
                Err(e) => ("params", format!("do not fit `tools/call`: {e}")),
                Ok(_) => ("params", "could not be read".to_owned()),
            },
        },
    };
    ErrorData::invalid_params(
        format!("Invalid params: `{field}` {reason}"),
        Some(json!({"field": field, "reason": reason})),
    )
}

/// The `id` member of a JSON object that may be cut short or broken after it: the members are
/// read in order until `id` (a string or a number), the end of what is readable, or anything
/// that is not JSON.
pub fn id_in_prefix(prefix: &[u8]) -> Option<Value> {
    let text = match std::str::from_utf8(prefix) {
        Ok(t) => t,
        // Cut inside a character: keep what is whole.
        Err(e) => std::str::from_utf8(&prefix[..e.valid_up_to()]).ok()?,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rest = text.trim_start().strip_prefix('{')?;
    loop {
        let mut members = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let key = members.next()?.ok()?;
        let key = key.as_str()?.to_owned();
        rest = rest[members.byte_offset()..]
            .trim_start()
            .strip_prefix(':')?;
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let value = values.next()?.ok()?;
        if key == "id" {
            // A number that ends the prefix may have been cut (`12` of `1234`).
            let whole = value.is_string() || values.byte_offset() < rest.len();
            return (whole && (value.is_string() || value.is_number())).then_some(value);
        }
        rest = rest[values.byte_offset()..]
            .trim_start()
            .strip_prefix(',')?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_read_from_a_cut_or_broken_message() {
        let head = br#"{"jsonrpc":"2.0","id":9001,"method":"tools/call","params":{"name":"search_themes","arguments":{"query":"qqqqq"#;
        assert_eq!(id_in_prefix(head), Some(json!(9001)));
        assert_eq!(
            id_in_prefix(br#" { "method" : "x", "id" : "a-1" , "params": {oops"#),
            Some(json!("a-1"))
        );
        assert_eq!(
            id_in_prefix(br#"{"method":"x","params":{"id":3},"id":4}"#),
            Some(json!(4))
        );
        assert_eq!(id_in_prefix(br#"{"params":{"big":"#), None);
        assert_eq!(id_in_prefix(b"this is not json"), None);
        assert_eq!(id_in_prefix(br#"{"id":{"x":1}}"#), None);
        assert_eq!(id_in_prefix(br#"{"id":12"#), None, "a number cut short");
        let e = parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"#).unwrap_err();
        assert_eq!((e.code, e.id), (PARSE_ERROR, json!(7)));
    }

    #[test]
    fn tools_call_params_errors_name_the_field() {
        let field = |params: Value| {
            let e = custom_request_error("tools/call", Some(&params));
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{params}");
            e.data.unwrap()["field"].as_str().unwrap().to_owned()
        };
        assert_eq!(
            field(json!({"name": "fetch_evidence", "arguments": [1]})),
            "arguments"
        );
        assert_eq!(
            field(json!({"name": "fetch_evidence", "arguments": "x"})),
            "arguments"
        );
        assert_eq!(field(json!({"name": 3, "arguments": {}})), "name");
        assert_eq!(field(json!({"arguments": {}})), "name");
        assert_eq!(field(json!([1, 2])), "params");
        let e = custom_request_error("rm -rf", None);
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(e.message.contains("`rm -rf`"), "{}", e.message);
    }

    #[test]
    fn non_messages_are_invalid_requests() {
        for v in [json!([1]), json!(3), json!({"jsonrpc": "2.0", "id": 5})] {
            match to_message(v.clone()) {
                Checked::Reject(e) => assert_eq!(e.code, INVALID_REQUEST, "{v}"),
                other => panic!("{v}: {other:?}"),
            }
        }
        let lsp = json!({"jsonrpc": "2.0", "method": "$/progress", "params": 3});
        assert!(matches!(
            to_message(lsp),
            Checked::Ignore | Checked::Message(_)
        ));
    }
}
