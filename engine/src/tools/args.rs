//! The one argument checker of the agent tools and the MCP server.
//!
//! Every tool is described by a table of [`FieldSpec`]s; the JSON Schema published in
//! `tools/list` ([`ToolSpec::input_schema`]) and the checks of [`check_arguments`] are both
//! derived from that table, so they cannot drift apart. The checker is a pure function of the
//! tool name and the JSON arguments: it runs before any search and reports *every* bad field,
//! not just the first.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::query::concept::ConceptSelector;

/// Most characters (Unicode scalar values) of a `search_themes` or `find_by_meaning` query.
pub const MAX_QUERY_CHARS: usize = 1000;
/// Most characters of a concept id, term, node field, relation or evidence id.
pub const MAX_NAME_CHARS: usize = 200;
/// Most themes one `search_themes` call may ask for (before the `MCP_MAX_HITS` cap).
pub const MAX_LIMIT: u64 = 10;
/// Most passages per theme one `search_themes` call may ask for.
pub const MAX_SUPPORT_LIMIT: u64 = 10;
/// Most documents one `find_by_meaning` call may list.
pub const MAX_SAMPLE: u64 = 50;
/// Most evidence ids one `fetch_evidence` call may ask for.
pub const MAX_EVIDENCE_IDS: u64 = 20;
/// Most unknown fields named one by one in a rejection (the rest are counted), so a hostile
/// call cannot make the message large; field names are cut at 100 characters.
pub const MAX_UNKNOWN_REPORTED: usize = 10;

/// The type and range of one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A string of `min..=max` characters that is not only whitespace.
    Text {
        /// Fewest characters.
        min: usize,
        /// Most characters.
        max: usize,
    },
    /// An integer in `min..=max`; `default` applies when the field is absent.
    Integer {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
        /// Value used when the field is absent.
        default: u64,
    },
    /// An array of `min_items..=max_items` strings of `1..=max_chars` characters each.
    TextList {
        /// Fewest items.
        min_items: u64,
        /// Most items.
        max_items: u64,
        /// Most characters per item.
        max_chars: usize,
    },
}

/// One argument of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    /// The argument name.
    pub name: &'static str,
    /// Whether it must be present (see also [`ToolSpec::exactly_one_of`]).
    pub required: bool,
    /// Type and range.
    pub kind: FieldKind,
    /// What it means, for the schema's `description`.
    pub description: &'static str,
}

/// A tool: its name, description and arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// Tool name as called.
    pub name: &'static str,
    /// What the tool does and returns (shown to models).
    pub description: &'static str,
    /// Its arguments; any other field is rejected.
    pub fields: &'static [FieldSpec],
    /// Fields of which exactly one must be given (empty: no such rule).
    pub exactly_one_of: &'static [&'static str],
}

const SEARCH_THEMES: ToolSpec = ToolSpec {
    name: "search_themes",
    description: "Themes (communities of MeSH concepts found in the corpus) that match a question, best first, \
each with up to five member concepts and its supporting passages (evidence ids for fetch_evidence). \
Answers carry a status: ok, no_match, empty_scope, index_not_ready or failed; truncated=true means \
more themes may exist than were checked.",
    fields: &[
        FieldSpec {
            name: "query",
            required: true,
            kind: FieldKind::Text {
                min: 1,
                max: MAX_QUERY_CHARS,
            },
            description: "The question, in natural language (1-1000 characters).",
        },
        FieldSpec {
            name: "limit",
            required: false,
            kind: FieldKind::Integer {
                min: 1,
                max: MAX_LIMIT,
                default: 5,
            },
            description: "Most themes returned (1-10, default 5; the server may cap it lower).",
        },
        FieldSpec {
            name: "support_limit",
            required: false,
            kind: FieldKind::Integer {
                min: 1,
                max: MAX_SUPPORT_LIMIT,
                default: 3,
            },
            description: "Most supporting passages per theme (1-10, default 3).",
        },
    ],
    exactly_one_of: &[],
};

const FIND_BY_MEANING: ToolSpec = ToolSpec {
    name: "find_by_meaning",
    description: "Every document about a concept, expanded up the vocabulary hierarchy (documents about broader \
concepts are included, narrower ones are not). Give exactly one of `concept` (an id such as D009203) or \
`term` (a preferred term or synonym). Returns the total count, a sample of documents (ranked by `query` \
when given), the expansion direction and how much of the corpus is linked to any concept. An unknown \
term answers unknown_term: nothing was searched.",
    fields: &[
        FieldSpec {
            name: "concept",
            required: false,
            kind: FieldKind::Text {
                min: 1,
                max: MAX_NAME_CHARS,
            },
            description: "A concept id, e.g. D009203 (give this or `term`).",
        },
        FieldSpec {
            name: "term",
            required: false,
            kind: FieldKind::Text {
                min: 1,
                max: MAX_NAME_CHARS,
            },
            description: "A term: a concept's preferred term or synonym (give this or `concept`).",
        },
        FieldSpec {
            name: "query",
            required: false,
            kind: FieldKind::Text {
                min: 1,
                max: MAX_QUERY_CHARS,
            },
            description: "Text that ranks the matching documents (BM25); it never narrows the set.",
        },
        FieldSpec {
            name: "sample",
            required: false,
            kind: FieldKind::Integer {
                min: 1,
                max: MAX_SAMPLE,
                default: 10,
            },
            description: "Most documents listed (1-50, default 10); the count covers all.",
        },
        FieldSpec {
            name: "node_field",
            required: false,
            kind: FieldKind::Text {
                min: 1,
                max: MAX_NAME_CHARS,
            },
            description: "Which concept annotations to match: `concept` (linked, default) or `mesh` (the documents' own headings).",
        },
        FieldSpec {
            name: "relation",
            required: false,
            kind: FieldKind::Text {
                min: 1,
                max: MAX_NAME_CHARS,
            },
            description: "Vocabulary relation to expand along (default `subclass_of`).",
        },
    ],
    exactly_one_of: &["concept", "term"],
};

const FETCH_EVIDENCE: ToolSpec = ToolSpec {
    name: "fetch_evidence",
    description: "The text, document and position behind evidence ids (passage ids such as pmid:26175531#1, \
as returned by search_themes). Each id answers found (with text), not_visible (hidden, deleted or \
superseded: no text) or unknown.",
    fields: &[FieldSpec {
        name: "ids",
        required: true,
        kind: FieldKind::TextList {
            min_items: 1,
            max_items: MAX_EVIDENCE_IDS,
            max_chars: MAX_NAME_CHARS,
        },
        description: "Evidence ids (1-20).",
    }],
    exactly_one_of: &[],
};

/// The tools, in the order `tools/list` shows them.
pub const TOOLS: &[ToolSpec] = &[SEARCH_THEMES, FIND_BY_MEANING, FETCH_EVIDENCE];

/// The spec of a tool, by name.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

impl ToolSpec {
    /// The JSON Schema (draft 2020-12 subset) of the tool's arguments: an object with
    /// `additionalProperties: false`, each field's type and range, and `required`. The
    /// "exactly one of" rule is stated in the descriptions (and as `oneOf`).
    pub fn input_schema(&self) -> Value {
        let mut props = Map::new();
        for f in self.fields {
            let schema = match f.kind {
                FieldKind::Text { min, max } => json!({
                    "type": "string", "minLength": min, "maxLength": max, "description": f.description
                }),
                FieldKind::Integer { min, max, default } => json!({
                    "type": "integer", "minimum": min, "maximum": max, "default": default,
                    "description": f.description
                }),
                FieldKind::TextList {
                    min_items,
                    max_items,
                    max_chars,
                } => json!({
                    "type": "array", "minItems": min_items, "maxItems": max_items,
                    "items": {"type": "string", "minLength": 1, "maxLength": max_chars},
                    "description": f.description
                }),
            };
            props.insert(f.name.to_owned(), schema);
        }
        let required: Vec<&str> = self
            .fields
            .iter()
            .filter(|f| f.required)
            .map(|f| f.name)
            .collect();
        let mut schema = json!({
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": false,
        });
        if !self.exactly_one_of.is_empty() {
            schema["oneOf"] = Value::Array(
                self.exactly_one_of
                    .iter()
                    .map(|f| json!({"required": [f]}))
                    .collect(),
            );
        }
        schema
    }
}

/// One rejected argument: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgError {
    /// The field name (`arguments` when the arguments as a whole are wrong).
    pub field: String,
    /// Why, and what is allowed.
    pub reason: String,
}

/// Why a call was rejected before anything ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArgErrors {
    /// No tool has this name.
    UnknownTool {
        /// The name asked for (at most 200 characters of it).
        name: String,
    },
    /// The tool exists; these fields are wrong (at least one).
    Invalid {
        /// The tool.
        tool: &'static str,
        /// Every bad field, in schema order, then unknown fields in the order given.
        errors: Vec<ArgError>,
    },
}

impl fmt::Display for ArgErrors {
    /// `Invalid arguments. `field`: reason; `field`: reason.` — or, for an unknown tool,
    /// `Unknown tool `x`. The tools are: …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTool { name } => {
                let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
                write!(
                    f,
                    "Unknown tool `{name}`. The tools are: {}.",
                    names.join(", ")
                )
            }
            Self::Invalid { tool, errors } => {
                write!(f, "Invalid arguments. {tool}: ")?;
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "`{}` {}", e.field, e.reason)?;
                }
                f.write_str(".")
            }
        }
    }
}

impl std::error::Error for ArgErrors {}

/// Arguments that passed [`check_arguments`], with defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// `search_themes`.
    SearchThemes {
        /// The question (1–1000 characters, not blank).
        query: String,
        /// 1–10 (before the `MCP_MAX_HITS` cap).
        limit: usize,
        /// 1–10.
        support_limit: usize,
    },
    /// `find_by_meaning`.
    FindByMeaning {
        /// The concept id or term.
        selector: ConceptSelector,
        /// Ranking text.
        query: Option<String>,
        /// 1–50.
        sample: usize,
        /// Node field, when given.
        node_field: Option<String>,
        /// Relation, when given.
        relation: Option<String>,
    },
    /// `fetch_evidence`.
    FetchEvidence {
        /// 1–20 ids.
        ids: Vec<String>,
    },
}

impl Checked {
    /// The tool these arguments are for.
    pub fn tool(&self) -> &'static str {
        match self {
            Self::SearchThemes { .. } => SEARCH_THEMES.name,
            Self::FindByMeaning { .. } => FIND_BY_MEANING.name,
            Self::FetchEvidence { .. } => FETCH_EVIDENCE.name,
        }
    }
}

/// A checked value of one field.
enum Got {
    Text(String),
    Integer(u64),
    TextList(Vec<String>),
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "an integer",
        Value::Number(_) => "a non-integer number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_text(v: &Value, min: usize, max: usize) -> Result<String, String> {
    let Value::String(s) = v else {
        return Err(format!(
            "must be a string of {min}-{max} characters, got {}",
            type_name(v)
        ));
    };
    let n = s.chars().count();
    if n < min || n > max {
        return Err(format!(
            "must be {min}-{max} characters long, got {n} characters"
        ));
    }
    if s.trim().is_empty() {
        return Err("must not be blank".into());
    }
    Ok(s.clone())
}

fn check_integer(v: &Value, min: u64, max: u64) -> Result<u64, String> {
    let Value::Number(n) = v else {
        return Err(format!(
            "must be an integer from {min} to {max}, got {}",
            type_name(v)
        ));
    };
    if let Some(i) = n.as_u64() {
        if (min..=max).contains(&i) {
            return Ok(i);
        }
        return Err(format!("must be from {min} to {max}, got {i}"));
    }
    if let Some(i) = n.as_i64() {
        return Err(format!("must be from {min} to {max}, got {i}"));
    }
    Err(format!(
        "must be an integer from {min} to {max}, got the non-integer number {n}"
    ))
}

fn check_list(
    v: &Value,
    min_items: u64,
    max_items: u64,
    max_chars: usize,
) -> Result<Vec<String>, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "must be an array of {min_items}-{max_items} strings, got {}",
            type_name(v)
        ));
    };
    let n = items.len() as u64;
    if n < min_items || n > max_items {
        return Err(format!("must hold {min_items}-{max_items} items, got {n}"));
    }
    let mut out = Vec::with_capacity(items.len());
    let mut bad = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match check_text(item, 1, max_chars) {
            Ok(s) => out.push(s),
            Err(why) => bad.push(format!("item {i} {why}")),
        }
    }
    if bad.is_empty() {
        Ok(out)
    } else {
        Err(bad.join(", "))
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

/// Checks `args` against the spec of `tool` and returns them typed, with defaults filled in.
///
/// Rules, each reported per field: the arguments must be a JSON object (`null` counts as `{}`);
/// every field must be one of the tool's; strings are counted in characters (Unicode scalar
/// values) and must not be blank; integers must be JSON integers in range (no strings, no
/// fractions, no `null`); for `find_by_meaning` exactly one of `concept` and `term`.
///
/// # Errors
/// [`ArgErrors::UnknownTool`] for a name that is not in [`TOOLS`];
/// [`ArgErrors::Invalid`] listing every bad field and why.
pub fn check_arguments(tool: &str, args: &Value) -> Result<Checked, ArgErrors> {
    let Some(spec) = spec(tool) else {
        return Err(ArgErrors::UnknownTool {
            name: clip(tool, MAX_NAME_CHARS),
        });
    };
    let invalid = |errors: Vec<ArgError>| ArgErrors::Invalid {
        tool: spec.name,
        errors,
    };
    let empty = Map::new();
    let obj = match args {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => {
            return Err(invalid(vec![ArgError {
                field: "arguments".into(),
                reason: format!("must be a JSON object, got {}", type_name(other)),
            }]));
        }
    };
    let mut errors = Vec::new();
    let mut got: Vec<(&'static str, Got)> = Vec::new();
    for f in spec.fields {
        let Some(v) = obj.get(f.name) else {
            if f.required {
                errors.push(ArgError {
                    field: f.name.into(),
                    reason: "is required".into(),
                });
            }
            continue;
        };
        let checked = match f.kind {
            FieldKind::Text { min, max } => check_text(v, min, max).map(Got::Text),
            FieldKind::Integer { min, max, .. } => check_integer(v, min, max).map(Got::Integer),
            FieldKind::TextList {
                min_items,
                max_items,
                max_chars,
            } => check_list(v, min_items, max_items, max_chars).map(Got::TextList),
        };
        match checked {
            Ok(g) => got.push((f.name, g)),
            Err(reason) => errors.push(ArgError {
                field: f.name.into(),
                reason,
            }),
        }
    }
    let names: Vec<&str> = spec.fields.iter().map(|f| f.name).collect();
    let unknown: Vec<&String> = obj
        .keys()
        .filter(|k| !names.contains(&k.as_str()))
        .collect();
    for key in unknown.iter().take(MAX_UNKNOWN_REPORTED) {
        errors.push(ArgError {
            field: clip(key, 100),
            reason: format!(
                "is not an argument of {}; they are: {}",
                spec.name,
                names.join(", ")
            ),
        });
    }
    if unknown.len() > MAX_UNKNOWN_REPORTED {
        errors.push(ArgError {
            field: "arguments".into(),
            reason: format!(
                "hold {} more unknown fields (not listed)",
                unknown.len() - MAX_UNKNOWN_REPORTED
            ),
        });
    }
    if !spec.exactly_one_of.is_empty() {
        let given: Vec<&str> = spec
            .exactly_one_of
            .iter()
            .copied()
            .filter(|n| obj.contains_key(*n))
            .collect();
        let names: Vec<String> = spec
            .exactly_one_of
            .iter()
            .map(|n| format!("`{n}`"))
            .collect();
        let rule = format!("give exactly one of {}", names.join(" and "));
        match given.as_slice() {
            // None given: the first of them is the one missing.
            [] => errors.push(ArgError {
                field: spec.exactly_one_of[0].into(),
                reason: format!(
                    "is required unless {} is given: {rule}",
                    names[1..].join(" or ")
                ),
            }),
            [_] => {}
            // Several given: each after the first is the one too many.
            [first, rest @ ..] => {
                for extra in rest {
                    errors.push(ArgError {
                        field: (*extra).into(),
                        reason: format!("cannot be given with `{first}`: {rule}"),
                    });
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(invalid(errors));
    }
    let text = |name: &str| {
        got.iter().find_map(|(n, g)| match g {
            Got::Text(s) if *n == name => Some(s.clone()),
            _ => None,
        })
    };
    let integer = |name: &str| {
        got.iter()
            .find_map(|(n, g)| match g {
                Got::Integer(i) if *n == name => Some(*i),
                _ => None,
            })
            .or_else(|| {
                spec.fields.iter().find_map(|f| match f.kind {
                    FieldKind::Integer { default, .. } if f.name == name => Some(default),
                    _ => None,
                })
            })
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(1)
    };
    Ok(match spec.name {
        "search_themes" => Checked::SearchThemes {
            query: text("query").unwrap_or_default(),
            limit: integer("limit"),
            support_limit: integer("support_limit"),
        },
        "find_by_meaning" => Checked::FindByMeaning {
            selector: match (text("concept"), text("term")) {
                (Some(c), _) => ConceptSelector::Concept(c),
                (None, t) => ConceptSelector::Term(t.unwrap_or_default()),
            },
            query: text("query"),
            sample: integer("sample"),
            node_field: text("node_field"),
            relation: text("relation"),
        },
        _ => Checked::FetchEvidence {
            ids: got
                .into_iter()
                .find_map(|(_, g)| match g {
                    Got::TextList(v) => Some(v),
                    _ => None,
                })
                .unwrap_or_default(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_and_checker_agree_on_the_fields() {
        for t in TOOLS {
            let s = t.input_schema();
            let props = s["properties"].as_object().unwrap();
            assert_eq!(props.len(), t.fields.len(), "{}", t.name);
            assert_eq!(s["additionalProperties"], false);
        }
    }

    #[test]
    fn defaults_are_filled_in() {
        let c = check_arguments("search_themes", &json!({"query": "statins"})).unwrap();
        assert_eq!(
            c,
            Checked::SearchThemes {
                query: "statins".into(),
                limit: 5,
                support_limit: 3
            }
        );
    }
}
