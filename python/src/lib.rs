//! `agrag._agrag`: the Rust half of the Python package `agrag`, over the engine's public API
//! (`agrag_engine::Engine` and its requests and answers). Nothing is re-implemented here: every
//! search runs in the engine, with the GIL released for its whole duration, so several Python
//! threads search in parallel. The Python half (`agrag/`) adds the coroutines and the enums.
//!
//! Errors: a bad argument raises `ValueError` naming it; a damaged run raises
//! `IndexCorruptError` (a `RuntimeError`); every other outcome is a status in the answer.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agrag_engine::embed::query::QueryEmbedder;
use agrag_engine::embed::{Embedder as EngineEmbedder, EmbedderSettings};
use agrag_engine::query::concept::{
    Combine, ConceptAnswer, ConceptRequest, ConceptSelector, Direction, Fusion, VectorClause,
};
use agrag_engine::query::evidence::{Evidence as EngineEvidence, within_scope};
use agrag_engine::query::theme::{self, IndexState, Status, ThemeAnswer};
use agrag_engine::query::{Deadline, QueryInput, Scope as EngineScope};
use agrag_engine::tools::args::MAX_QUERY_CHARS;
use agrag_engine::tools::settings::EMBEDDING_KEYS;
use agrag_engine::tools::{AgentRun, Settings, TOOLS, ToolBox, ToolOutput};
use agrag_engine::visibility::{Target, Visibility};
use agrag_engine::{Engine, EngineConfig, EngineError, ThemeRequest};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString};

pyo3::create_exception!(
    agrag,
    IndexCorruptError,
    PyRuntimeError,
    "The served run, or the run `LATEST` names, is damaged: a file fails its manifest's size or \
     checksum, a table is unreadable, or the format version is unknown. The message names the \
     file at fault; a run already served keeps serving."
);

/// The `MCP_*` settings a `settings` mapping may hold (besides `EMBEDDING_*`; `open_store`
/// also takes `AGRAG_ROOT`).
const SETTING_KEYS: [&str; 3] = ["MCP_MAX_HITS", "MCP_SCOPE", "MCP_TIMEOUT"];

/// The setting `open_store` alone takes: a call cannot move its store to another root.
const ROOT_KEY: &str = "AGRAG_ROOT";

fn value_error(field: &str, message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{field}: {message}"))
}

/// Whether `e` is only a `BaseException` (`KeyboardInterrupt`, `SystemExit`): such an error
/// raised while an argument is read passes through, never becomes a `ValueError`.
fn is_interrupt(py: Python<'_>, e: &PyErr) -> bool {
    !e.is_instance_of::<PyException>(py)
}

/// `e` as the `ValueError` `make` builds, unless it is an interrupt (then unchanged).
fn or_value_error(py: Python<'_>, e: PyErr, make: impl FnOnce() -> PyErr) -> PyErr {
    if is_interrupt(py, &e) { e } else { make() }
}

/// A `str` argument; `ValueError` naming `field` for another type or for a str Rust cannot
/// hold (a lone surrogate such as `"\ud800"` is not Unicode text).
fn str_arg(field: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = v
        .cast::<PyString>()
        .map_err(|_| value_error(field, format!("must be a str, got {}", type_name(v))))?;
    s.to_cow().map(Cow::into_owned).map_err(|e| {
        or_value_error(v.py(), e, || {
            value_error(field, "is not valid Unicode (it holds a lone surrogate)")
        })
    })
}

/// An optional `str` argument: None (or Python `None`) is `None`.
fn opt_str_arg(field: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    v.filter(|v| !v.is_none())
        .map(|v| str_arg(field, v))
        .transpose()
}

/// A file-system path argument: a non-empty str or `os.PathLike`; `ValueError` naming
/// `field` otherwise (bytes paths included).
fn path_arg(field: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<PathBuf>> {
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if v.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(value_error(
            field,
            "must be a str or os.PathLike, got bytes",
        ));
    }
    let path: PathBuf = v.extract().map_err(|e| {
        or_value_error(v.py(), e, || {
            value_error(
                field,
                format!("must be a str or os.PathLike, got {}", type_name(v)),
            )
        })
    })?;
    if path.as_os_str().is_empty() {
        return Err(value_error(field, "must not be empty"));
    }
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(value_error(field, "must not contain a NUL character"));
    }
    Ok(Some(path))
}

/// An optional text clause of a search: not blank, at most [`MAX_QUERY_CHARS`] characters
/// (the CLI's and the MCP server's bound).
fn bounded_text(field: &str, text: Option<String>) -> PyResult<Option<String>> {
    if let Some(t) = &text {
        if t.trim().is_empty() {
            return Err(value_error(field, "must not be empty"));
        }
        let n = t.chars().count();
        if n > MAX_QUERY_CHARS {
            return Err(value_error(
                field,
                format!("must be at most {MAX_QUERY_CHARS} characters, got {n}"),
            ));
        }
    }
    Ok(text)
}

/// A list (any iterable but a str) of str; `ValueError` naming `field` and the item at fault.
fn str_list_arg(field: &str, v: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if v.is_instance_of::<PyString>() {
        return Err(value_error(field, "must be a list of str, not one str"));
    }
    if v.is_instance_of::<pyo3::types::PyBytes>() || v.is_instance_of::<pyo3::types::PyByteArray>()
    {
        return Err(value_error(
            field,
            format!("must be a list of str, got {}", type_name(v)),
        ));
    }
    let items = v.try_iter().map_err(|e| {
        or_value_error(v.py(), e, || {
            value_error(
                field,
                format!("must be a list of str, got {}", type_name(v)),
            )
        })
    })?;
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        let item = item?;
        if !item.is_instance_of::<PyString>() {
            return Err(value_error(
                field,
                format!("item {i} is {}, not a str", type_name(&item)),
            ));
        }
        out.push(str_arg(&format!("{field}[{i}]"), &item)?);
    }
    Ok(out)
}

/// The `Store` argument `store`; `ValueError` for anything else.
fn store_arg<'py>(store: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Store>> {
    store.cast::<Store>().cloned().map_err(|_| {
        value_error(
            "store",
            format!(
                "must be an agrag.Store (agrag.open_store()), got {}",
                type_name(store)
            ),
        )
    })
}

/// The Python exception for an engine error: `ValueError` for a bad argument (the message
/// names it), `IndexCorruptError` for a damaged run, `RuntimeError` otherwise; the message
/// carries the whole chain of causes.
fn py_error(e: &EngineError) -> PyErr {
    match e {
        EngineError::InvalidArgument { field, .. } => value_error(field, e.with_causes()),
        EngineError::Corrupt { .. }
        | EngineError::UnsupportedFormat { .. }
        | EngineError::Parquet { .. } => IndexCorruptError::new_err(e.with_causes()),
        _ => PyRuntimeError::new_err(e.with_causes()),
    }
}

/// An integer argument: a Python `int` or anything with `__index__` (a NumPy integer), not a
/// bool; `ValueError` naming `field` for any other type or a value outside `i64`.
fn int_arg(field: &str, v: &Bound<'_, PyAny>) -> PyResult<i64> {
    if v.is_instance_of::<PyBool>() {
        return Err(value_error(field, "must be an int, got a bool"));
    }
    v.extract::<i64>().map_err(|e| {
        if is_interrupt(v.py(), &e) {
            e
        } else if v.is_instance_of::<PyInt>() {
            value_error(field, format!("{v} is out of range"))
        } else {
            value_error(field, format!("must be an int, got {}", type_name(v)))
        }
    })
}

/// A positive integer argument, `default` when None.
fn positive(field: &str, value: Option<&Bound<'_, PyAny>>, default: usize) -> PyResult<usize> {
    let Some(v) = value.filter(|v| !v.is_none()) else {
        return Ok(default);
    };
    let n = int_arg(field, v)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| value_error(field, format!("must be an integer ≥ 1, got {n}")))
}

/// A float argument (an `int` or `float`, not a bool) within `range`, `default` when None.
fn number_in(
    field: &str,
    value: Option<&Bound<'_, PyAny>>,
    default: f32,
    range: std::ops::RangeInclusive<f32>,
) -> PyResult<f32> {
    let Some(v) = value.filter(|v| !v.is_none()) else {
        return Ok(default);
    };
    if v.is_instance_of::<PyBool>()
        || !(v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>())
    {
        return Err(value_error(
            field,
            format!("must be a number, got {}", type_name(v)),
        ));
    }
    let x: f64 = v.extract()?;
    #[allow(clippy::cast_possible_truncation)]
    let x = x as f32;
    if !range.contains(&x) {
        return Err(value_error(
            field,
            format!(
                "must be a number in [{}, {}], got {x}",
                range.start(),
                range.end()
            ),
        ));
    }
    Ok(x)
}

/// The seconds of a `datetime.timedelta` (anything with `total_seconds()`), or None for
/// anything else.
fn timedelta_seconds(v: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    if v.hasattr("total_seconds")? {
        v.call_method0("total_seconds")?.extract().map(Some)
    } else {
        Ok(None)
    }
}

/// `timeout` as a duration: `None`, a positive number of seconds, or a `datetime.timedelta`.
fn timeout_arg(timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Duration>> {
    let Some(t) = timeout.filter(|t| !t.is_none()) else {
        return Ok(None);
    };
    let seconds: f64 = if let Some(s) = timedelta_seconds(t)? {
        s
    } else if t.is_instance_of::<pyo3::types::PyBool>() {
        return Err(value_error(
            "timeout",
            "must be seconds or a timedelta, got a bool",
        ));
    } else {
        t.extract().map_err(|_| {
            value_error(
                "timeout",
                format!("must be seconds or a timedelta, got {}", type_name(t)),
            )
        })?
    };
    if seconds.is_nan() || seconds <= 0.0 {
        return Err(value_error(
            "timeout",
            format!("must be a positive number of seconds, got {seconds:e}"),
        ));
    }
    // A timeout past what a `Duration` holds (about 5.8e11 years) never ends, and one under a
    // nanosecond has ended at once: both are usable, as the nearest duration.
    Ok(Some(
        Duration::try_from_secs_f64(seconds)
            .unwrap_or(Duration::MAX)
            .max(Duration::from_nanos(1)),
    ))
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// A `query` argument: text, or a 1-D NumPy `float32` vector.
enum Query {
    Text(String),
    Vector(Vec<f32>),
}

/// A query on its way to the engine: a checked vector input, or text still to embed.
enum Prepared {
    Input(QueryInput),
    Text(String),
}

fn query_arg(field: &str, q: &Bound<'_, PyAny>) -> PyResult<Query> {
    if q.is_instance_of::<PyString>() {
        // A query is a question: embedding a megabyte of text would outlast any timeout.
        let text = bounded_text(field, Some(str_arg(field, q)?))?.unwrap_or_default();
        return Ok(Query::Text(text));
    }
    if let Ok(a) = q.extract::<PyReadonlyArray1<'_, f32>>() {
        let v = a
            .as_slice()
            .map_or_else(|_| a.as_array().to_vec(), <[f32]>::to_vec);
        if v.is_empty() || v.iter().any(|x| !x.is_finite()) {
            return Err(value_error(
                field,
                "must be a non-empty vector of finite float32 values",
            ));
        }
        return Ok(Query::Vector(v));
    }
    Err(value_error(
        field,
        format!(
            "must be a str or a 1-D numpy float32 array, got {}",
            type_name(q)
        ),
    ))
}

/// The values of a `settings` mapping (`MCP_*` and `EMBEDDING_*` names, and `AGRAG_ROOT` when
/// `with_root`); a value that is not a str is taken as its `str()`. An unknown key, or a mapping
/// that is not a dict, is a `ValueError` naming `settings`.
fn settings_values(
    settings: Option<&Bound<'_, PyAny>>,
    with_root: bool,
) -> PyResult<HashMap<String, String>> {
    let mut values = HashMap::new();
    let Some(s) = settings.filter(|s| !s.is_none()) else {
        return Ok(values);
    };
    let mapping = s.cast::<PyMapping>().map_err(|_| {
        value_error(
            "settings",
            format!("must be a dict or another mapping, got {}", type_name(s)),
        )
    })?;
    for item in mapping.items()?.iter() {
        let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        if !k.is_instance_of::<PyString>() {
            return Err(value_error(
                "settings",
                format!("keys must be str, got {}", type_name(&k)),
            ));
        }
        let key = str_arg("settings", &k)?;
        let known = SETTING_KEYS.contains(&key.as_str())
            || EMBEDDING_KEYS.contains(&key.as_str())
            || (with_root && key == ROOT_KEY);
        if !known {
            let mut names: Vec<&str> = Vec::new();
            if with_root {
                names.push(ROOT_KEY);
            }
            names.extend(SETTING_KEYS);
            names.extend(EMBEDDING_KEYS);
            return Err(value_error(
                "settings",
                format!("unknown setting {key:?} (known: {})", names.join(", ")),
            ));
        }
        let field = format!("settings[{key:?}]");
        // `MCP_TIMEOUT` may be a `timedelta`, as the `timeout` argument.
        let seconds = if key == "MCP_TIMEOUT" {
            timedelta_seconds(&v)?
        } else {
            None
        };
        let value = if let Some(seconds) = seconds {
            seconds.to_string()
        } else if v.is_instance_of::<PyString>() {
            str_arg(&field, &v)?
        } else {
            str_arg(&field, v.str()?.as_any())?
        };
        values.insert(key, value);
    }
    Ok(values)
}

/// Whether `MCP_MAX_HITS` is set in `values` or the environment: only then does it cap
/// `limit` (its default of 10 is the MCP server's, not a Python caller's).
fn max_hits_set(values: &HashMap<String, String>) -> bool {
    values.contains_key("MCP_MAX_HITS") || std::env::var_os("MCP_MAX_HITS").is_some()
}

/// The settings one call runs under: its own `settings` mapping over the store's.
struct CallSettings<'a> {
    settings: Cow<'a, Settings>,
    /// The mapping names an `EMBEDDING_*` key: the call builds that embedder.
    embedder_given: bool,
    /// `MCP_MAX_HITS` when it was set anywhere.
    max_hits: Option<usize>,
}

/// The settings of a call on `store`: the call's `settings` mapping, then the store's
/// (`open_store`'s mapping, then the environment), key by key.
fn call_settings<'a>(
    store: &'a Store,
    settings: Option<&Bound<'_, PyAny>>,
) -> PyResult<CallSettings<'a>> {
    let call = settings_values(settings, false)?;
    if call.is_empty() {
        return Ok(CallSettings {
            settings: Cow::Borrowed(&store.settings),
            embedder_given: false,
            max_hits: store.max_hits,
        });
    }
    let mut s = Settings::load(None, |k| {
        call.get(k)
            .or_else(|| store.values.get(k))
            .cloned()
            .or_else(|| std::env::var(k).ok())
    })
    .map_err(|e| py_error(&e))?;
    s.root.clone_from(&store.settings.root);
    // A call narrows the store's scope, never widens it: its `MCP_SCOPE` ("all" included)
    // is read within the store's.
    if call.contains_key("MCP_SCOPE") {
        s.scope = effective_scope(&s.scope, &store.settings.scope);
    }
    let max_hits =
        (call.contains_key("MCP_MAX_HITS") || store.max_hits.is_some()).then_some(s.max_hits);
    Ok(CallSettings {
        settings: Cow::Owned(s),
        embedder_given: call.keys().any(|k| EMBEDDING_KEYS.contains(&k.as_str())),
        max_hits,
    })
}

/// The documents a call may read: the call's scope within the settings' scope.
fn effective_scope(call: &EngineScope, settings: &EngineScope) -> EngineScope {
    match (call, settings) {
        (EngineScope::All, s) => s.clone(),
        (c, EngineScope::All) => c.clone(),
        (EngineScope::Documents(a), EngineScope::Documents(b)) => {
            let b: std::collections::HashSet<&String> = b.iter().collect();
            EngineScope::Documents(a.iter().filter(|k| b.contains(k)).cloned().collect())
        }
    }
}

/// A snapshot root, served by the engine: the run `LATEST` names, swapped by
/// [`Store::reload`]. Safe to share between threads; every method releases the GIL.
#[pyclass(frozen, module = "agrag")]
struct Store {
    engine: Arc<Engine>,
    settings: Settings,
    /// `open_store`'s own `settings` mapping, under each call's.
    values: HashMap<String, String>,
    /// `MCP_MAX_HITS` when `open_store`'s mapping or the environment sets it.
    max_hits: Option<usize>,
}

#[pymethods]
impl Store {
    /// The id of the served run, or None.
    #[getter]
    fn run_id(&self) -> Option<String> {
        self.engine.run_id()
    }

    /// The snapshot root.
    #[getter]
    fn root<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        // As `os.fsdecode` gives it: a name that is not UTF-8 round-trips through open_store.
        let Ok(root) = self.engine.root().as_os_str().into_pyobject(py);
        root.into_any()
    }

    /// Re-reads `LATEST` and serves the run it names when it is new and valid. Returns whether
    /// the served run changed; False when there is no run to serve yet. Raises
    /// `IndexCorruptError` when the named run is damaged (the served run stays).
    fn reload(&self, py: Python<'_>) -> PyResult<bool> {
        match py.detach(|| self.engine.reload()) {
            Ok(changed) => Ok(changed),
            Err(EngineError::NotReady { .. }) => Ok(false),
            Err(e) => Err(py_error(&e)),
        }
    }

    /// The embedder the served run was built with, as the `EMBEDDING_*` settings of
    /// `open_store` choose it; None when no run is served.
    fn embedder(&self, py: Python<'_>) -> PyResult<Option<Embedder>> {
        py.detach(|| self.engine.query_embedder())
            .map(|e| e.map(|inner| Embedder { inner }))
            .map_err(|e| py_error(&e))
    }

    /// Sets the live visibility of a passage (`target="passage"`, by passage id = evidence
    /// id) or a whole document (`target="document"`, by document key). `state` is `visible`,
    /// `hidden`, `deleted` or `superseded`. Seen by the next query of every store on this root.
    /// A key the served run does not hold raises `ValueError` (a typo must not pass as
    /// success) unless `allow_unknown=True`, which stores the flag for a later run.
    #[pyo3(signature = (key, state, target = None, reason = None, *, allow_unknown = None))]
    fn set_visibility(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        state: &Bound<'_, PyAny>,
        target: Option<&Bound<'_, PyAny>>,
        reason: Option<&Bound<'_, PyAny>>,
        allow_unknown: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let allow_unknown = match allow_unknown.filter(|v| !v.is_none()) {
            None => false,
            Some(v) => v.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| {
                value_error(
                    "allow_unknown",
                    format!("must be a bool, got {}", type_name(v)),
                )
            })?,
        };
        let key = str_arg("key", key)?;
        let state: Visibility = str_arg("state", state)?
            .parse()
            .map_err(|e: EngineError| py_error(&e))?;
        let target = target_arg(target)?;
        let reason = opt_str_arg("reason", reason)?;
        if !allow_unknown {
            let why = match self.engine.served_run_lacking(target, &key) {
                Some(run_id) => Some(format!(
                    "the served run {run_id} has no {} {key:?}; check the id, or pass",
                    target.as_str()
                )),
                None if self.engine.run_id().is_none() => Some(format!(
                    "no run is served under {}, so {key:?} cannot be checked; pass",
                    self.engine.root().display()
                )),
                None => None,
            };
            if let Some(why) = why {
                return Err(value_error(
                    "key",
                    format!("{why} allow_unknown=True to store the flag for a later run"),
                ));
            }
        }
        py.detach(|| {
            self.engine
                .set_visibility(target, &key, state, reason.as_deref())
        })
        .map_err(|e| py_error(&e))
    }

    /// The effective visibility of a passage or document: the state queries apply (for a
    /// passage, the more restrictive of its own flag and its document's), `visible` when
    /// neither was ever flagged; as `agrag-engine visibility get` prints it.
    #[pyo3(signature = (key, target = None))]
    fn visibility(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        target: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let key = str_arg("key", key)?;
        if key.trim().is_empty() {
            return Err(value_error("key", "must not be empty"));
        }
        let target = target_arg(target)?;
        py.detach(|| self.engine.effective_visibility(target, &key))
            .map(|v| v.state.as_str().to_owned())
            .map_err(|e| py_error(&e))
    }

    fn __repr__(&self) -> String {
        format!(
            "Store(root={:?}, run_id={})",
            self.engine.root().display().to_string(),
            self.run_id()
                .map_or_else(|| "None".to_owned(), |r| format!("{r:?}"))
        )
    }
}

/// `target`: `"passage"` (the default) or `"document"`.
fn target_arg(target: Option<&Bound<'_, PyAny>>) -> PyResult<Target> {
    match opt_str_arg("target", target)?
        .as_deref()
        .unwrap_or("passage")
    {
        "passage" => Ok(Target::Passage),
        "document" => Ok(Target::Document),
        other => Err(value_error(
            "target",
            format!("must be 'passage' or 'document', got {other:?}"),
        )),
    }
}

/// Opens the snapshot root `root` (default: `AGRAG_ROOT`, else `./.agrag`) and serves the run
/// `LATEST` names. A root without a run opens (searches answer `index_not_ready` until
/// `reload` finds one); a damaged run, or a `LATEST` that names no run, raises
/// `IndexCorruptError`. `settings` mirrors the environment (`AGRAG_ROOT`, `EMBEDDING_*`,
/// `MCP_*`), which it overrides; an unknown key is a `ValueError`.
#[pyfunction]
#[pyo3(signature = (root = None, settings = None))]
fn open_store(
    py: Python<'_>,
    root: Option<&Bound<'_, PyAny>>,
    settings: Option<&Bound<'_, PyAny>>,
) -> PyResult<Store> {
    let root = path_arg("root", root)?;
    let values = settings_values(settings, true)?;
    let mut s = Settings::load(None, |k| {
        values.get(k).cloned().or_else(|| std::env::var(k).ok())
    })
    .map_err(|e| py_error(&e))?;
    if let Some(r) = root {
        s.root = r;
    }
    if s.root.exists() && !s.root.is_dir() {
        return Err(value_error(
            "root",
            format!("{} is a file, not a snapshot root folder", s.root.display()),
        ));
    }
    let config = EngineConfig {
        embedder: s.embedding.build_embedder().map_err(|e| py_error(&e))?,
        model_path: s.embedding.model_path(),
        ..EngineConfig::default()
    };
    let root = s.root.clone();
    let engine = py
        .detach(|| Engine::open(root, config))
        .map_err(|e| py_error(&e))?;
    if engine.run_id().is_none() {
        // `Engine::open` serves what it can and logs the rest; a store that would only ever
        // answer `index_not_ready` because `LATEST` or its run is damaged is refused here.
        match py.detach(|| engine.reload()) {
            Ok(_) | Err(EngineError::NotReady { .. }) => {}
            Err(e) => {
                return Err(match engine.last_refused() {
                    Some(refused) => IndexCorruptError::new_err(format!(
                        "run {} under {} cannot be served: {}",
                        refused.run_id,
                        engine.root().display(),
                        refused.reason()
                    )),
                    None => py_error(&e),
                });
            }
        }
    }
    let max_hits = max_hits_set(&values).then_some(s.max_hits);
    Ok(Store {
        engine: Arc::new(engine),
        settings: s,
        values,
        max_hits,
    })
}

/// A query embedder: all-MiniLM-L6-v2, the built-in hashing embedder, or the identity of
/// vectors a service computes itself (`precomputed`: it embeds nothing).
#[pyclass(frozen, module = "agrag", from_py_object)]
#[derive(Clone)]
struct Embedder {
    inner: Arc<dyn EngineEmbedder>,
}

/// The settings an `Embedder` constructor does not set itself but reads from the environment,
/// as `open_store` does: where the MiniLM folder is and how it embeds long texts.
const EMBEDDER_ENV_KEYS: [&str; 4] = [
    "EMBEDDING_MODEL_PATH",
    "EMBEDDING_LONG_TEXTS",
    "XDG_CACHE_HOME",
    "HOME",
];

/// Builds the embedder `values` (setting, value, the Python argument it came from) name,
/// the other settings of [`EMBEDDER_ENV_KEYS`] from the environment. An invalid value is a
/// `ValueError` naming the caller's argument (`dim`, `model`, `path`), not the setting.
fn build_embedder(py: Python<'_>, values: &[(&str, String, &str)]) -> PyResult<Embedder> {
    let lookup = |k: &str| match values.iter().find(|(n, _, _)| *n == k) {
        Some((_, v, _)) => Some(v.clone()),
        None if EMBEDDER_ENV_KEYS.contains(&k) => std::env::var(k).ok(),
        None => None,
    };
    let as_argument = |e: EngineError| match e {
        EngineError::InvalidArgument {
            field,
            value,
            expected,
        } => match values.iter().find(|(n, _, _)| *n == field) {
            Some((_, _, arg)) => {
                value_error(arg, format!("invalid {value:?}: expected {expected}"))
            }
            None => py_error(&EngineError::InvalidArgument {
                field,
                value,
                expected,
            }),
        },
        e => py_error(&e),
    };
    let settings = EmbedderSettings::from_lookup(lookup).map_err(as_argument)?;
    py.detach(|| settings.build())
        .map(|c| Embedder { inner: c.embedder })
        .map_err(as_argument)
}

#[pymethods]
impl Embedder {
    /// all-MiniLM-L6-v2 from `path` (default: `EMBEDDING_MODEL_PATH`, else the cache folder
    /// `scripts/fetch-model.sh` fills). Raises RuntimeError when the model is not there.
    #[staticmethod]
    #[pyo3(signature = (path = None))]
    fn minilm(py: Python<'_>, path: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut values = vec![("EMBEDDING_PROVIDER", "minilm".to_owned(), "provider")];
        if let Some(p) = path_arg("path", path)? {
            values.push(("EMBEDDING_MODEL_PATH", p.display().to_string(), "path"));
        }
        build_embedder(py, &values)
    }

    /// The built-in hashing embedder (`agrag-hash-v2`) with `dim` components (1 to 65,536;
    /// default 384).
    #[staticmethod]
    #[pyo3(signature = (dim = None))]
    fn hash(py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let dim = positive("dim", dim, 384)?;
        build_embedder(
            py,
            &[
                ("EMBEDDING_PROVIDER", "hash".to_owned(), "provider"),
                ("EMBEDDING_DIM", dim.to_string(), "dim"),
            ],
        )
    }

    /// Vectors of `model` with `dim` components (1 to 65,536), computed by the caller:
    /// queries must then be NumPy vectors (a text query answers `failed`).
    #[staticmethod]
    fn precomputed(
        py: Python<'_>,
        model: &Bound<'_, PyAny>,
        dim: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let model = str_arg("model", model)?;
        if model.trim().is_empty() {
            return Err(value_error("model", "must not be empty"));
        }
        if dim.is_none() {
            return Err(value_error(
                "dim",
                "must be given: the length of the vectors you send",
            ));
        }
        let dim = int_arg("dim", dim)?;
        build_embedder(
            py,
            &[
                ("EMBEDDING_PROVIDER", "precomputed".to_owned(), "provider"),
                ("EMBEDDING_MODEL", model, "model"),
                ("EMBEDDING_DIM", dim.to_string(), "dim"),
            ],
        )
    }

    /// The model name recorded in runs (`agrag-hash-v2`, `sentence-transformers/all-MiniLM-L6-v2`).
    #[getter]
    fn model(&self) -> String {
        self.inner.identity().model.clone()
    }

    /// The vector length.
    #[getter]
    fn dim(&self) -> usize {
        self.inner.identity().dim
    }

    /// The fingerprint of the weights (empty when unknown).
    #[getter]
    fn fingerprint(&self) -> String {
        self.inner.identity().fingerprint.clone()
    }

    /// Embeds one text: a NumPy `float32` array of shape `(dim,)`.
    fn embed<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let text = str_arg("text", text)?;
        let v = py
            .detach(|| self.inner.embed(&text))
            .map_err(|e| py_error(&e))?;
        Ok(PyArray1::from_vec(py, v))
    }

    fn __repr__(&self) -> String {
        format!("Embedder(model={:?}, dim={})", self.model(), self.dim())
    }

    /// Embedders are equal when they embed into the same space: same model, dimension and
    /// weights' fingerprint (the identity a run records).
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Embedder>()
            .is_ok_and(|o| o.get().inner.identity() == self.inner.identity())
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let id = self.inner.identity();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&id.model, id.dim, &id.fingerprint).hash(&mut h);
        h.finish()
    }
}

/// The documents a search may read: every document (`Scope.all()`), or only these document
/// keys (`Scope(["pmid:1", …])`; unknown keys match nothing, an empty list answers
/// `empty_scope`).
#[pyclass(frozen, module = "agrag", eq, hash, from_py_object)]
#[derive(Clone, PartialEq, Eq, Hash)]
struct Scope {
    keys: Option<Vec<String>>,
}

#[pymethods]
impl Scope {
    /// Raises `ValueError` naming `document_keys` unless it is an iterable of str (a single
    /// str is refused: it would be read as its characters).
    #[new]
    fn new(document_keys: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut keys = str_list_arg("document_keys", document_keys)?;
        // A scope is a set of documents: the same keys in another order, or repeated, are the
        // same scope (equal, same hash).
        keys.sort_unstable();
        keys.dedup();
        Ok(Self { keys: Some(keys) })
    }

    /// Every document of the run.
    #[staticmethod]
    fn all() -> Self {
        Self { keys: None }
    }

    /// The document keys, sorted and without repeats, or None for every document.
    #[getter]
    fn document_keys(&self) -> Option<Vec<String>> {
        self.keys.clone()
    }

    fn __repr__(&self) -> String {
        match &self.keys {
            None => "Scope.all()".to_owned(),
            Some(k) if k.len() <= 5 => format!("Scope({k:?})"),
            Some(k) => format!("Scope([{:?}, … {} keys])", k[0], k.len()),
        }
    }
}

impl Scope {
    fn engine(&self) -> EngineScope {
        self.keys
            .clone()
            .map_or(EngineScope::All, EngineScope::Documents)
    }
}

fn scope_arg(scope: Option<&Bound<'_, PyAny>>) -> PyResult<EngineScope> {
    match scope.filter(|s| !s.is_none()) {
        None => Ok(EngineScope::All),
        Some(s) => s.extract::<Scope>().map(|s| s.engine()).map_err(|_| {
            value_error(
                "scope",
                format!("must be an agrag.Scope, got {}", type_name(s)),
            )
        }),
    }
}

/// Calls `agrag._enums.<name>(value)`: the Python `Enum` member of a status.
fn enum_member<'py>(py: Python<'py>, name: &str, value: &str) -> PyResult<Bound<'py, PyAny>> {
    static ENUMS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = ENUMS.get_or_try_init(py, || py.import("agrag._enums").map(Bound::unbind))?;
    module.bind(py).getattr(name)?.call1((value,))
}

fn serde_str<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A failed leg of a search: `leg` (`embed`, `read`, `timeout`, `vector_store`) and `message`.
#[pyclass(frozen, get_all, module = "agrag")]
#[derive(Clone)]
struct Failure {
    leg: String,
    message: String,
}

#[pymethods]
impl Failure {
    fn __repr__(&self) -> String {
        format!("Failure(leg={:?}, message={:?})", self.leg, self.message)
    }
}

/// Where a passage sits in its document: `position`, 0-based.
#[pyclass(frozen, get_all, module = "agrag")]
#[derive(Clone)]
struct Location {
    position: u32,
}

#[pymethods]
impl Location {
    fn __repr__(&self) -> String {
        format!("Location(position={})", self.position)
    }
}

/// A supporting passage of a theme: `evidence_id` (for `fetch_evidence`), `document_key`,
/// `location`, `num_members` (how many of the theme's members it mentions).
#[pyclass(frozen, get_all, module = "agrag")]
#[derive(Clone)]
struct ThemePassage {
    evidence_id: String,
    document_key: String,
    location: Location,
    num_members: u32,
}

#[pymethods]
impl ThemePassage {
    fn __repr__(&self) -> String {
        format!(
            "ThemePassage(evidence_id={:?}, document_key={:?}, position={})",
            self.evidence_id, self.document_key, self.location.position
        )
    }
}

/// One theme: `theme_id` (the community's public id, kept across runs while its members stay
/// more than half the same), `level`, `score` (cosine of the question to the
/// community's report; orders themes, not a confidence), `entities` (up to five member
/// names), `passages`.
#[pyclass(frozen, get_all, module = "agrag")]
#[derive(Clone)]
struct Theme {
    theme_id: u32,
    level: u32,
    score: f32,
    entities: Vec<String>,
    passages: Vec<ThemePassage>,
}

#[pymethods]
impl Theme {
    fn __repr__(&self) -> String {
        format!(
            "Theme(theme_id={}, level={}, score={:.4}, entities={:?}, passages={})",
            self.theme_id,
            self.level,
            self.score,
            self.entities,
            self.passages.len()
        )
    }
}

/// The answer of `search_themes`: `status` (`agrag.Status`), `truncated`, `index_state`
/// (`ready`, `not_ready` or None), `run_id`, `themes`, `failures`.
#[pyclass(frozen, module = "agrag")]
struct ThemeResult {
    status: String,
    #[pyo3(get)]
    truncated: bool,
    index_state: Option<String>,
    #[pyo3(get)]
    run_id: Option<String>,
    #[pyo3(get)]
    themes: Vec<Theme>,
    #[pyo3(get)]
    failures: Vec<Failure>,
}

#[pymethods]
impl ThemeResult {
    /// The outcome, an `agrag.Status` whose `.value` is `ok`, `no_match`, `empty_scope`,
    /// `index_not_ready` or `failed`.
    #[getter]
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        enum_member(py, "Status", &self.status)
    }

    /// The state of the run's index of community embeddings, an `agrag.IndexState` (`ready`,
    /// `not_ready`), or None when no search ran (`empty_scope`).
    #[getter]
    fn index_state<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.index_state
            .as_deref()
            .map(|s| enum_member(py, "IndexState", s))
            .transpose()
    }

    fn __repr__(&self) -> String {
        format!(
            "ThemeResult(status={:?}, truncated={}, index_state={:?}, run_id={:?}, themes={}, failures={})",
            self.status,
            if self.truncated { "True" } else { "False" },
            self.index_state,
            self.run_id,
            self.themes.len(),
            self.failures.len()
        )
    }
}

fn failures(f: Vec<theme::Failure>) -> Vec<Failure> {
    f.into_iter()
        .map(|f| Failure {
            leg: f.leg,
            message: f.message,
        })
        .collect()
}

impl From<ThemeAnswer> for ThemeResult {
    fn from(a: ThemeAnswer) -> Self {
        Self {
            status: serde_str(&a.status),
            truncated: a.truncated,
            index_state: a.index_state.map(|s| serde_str(&s)),
            run_id: a.run_id,
            themes: a
                .themes
                .into_iter()
                .map(|t| Theme {
                    theme_id: t.theme_id,
                    level: t.level,
                    score: t.score,
                    entities: t.entities,
                    passages: t
                        .passages
                        .into_iter()
                        .map(|p| ThemePassage {
                            evidence_id: p.evidence_id,
                            document_key: p.document_key,
                            location: Location {
                                position: p.location.position,
                            },
                            num_members: p.num_members,
                        })
                        .collect(),
                })
                .collect(),
            failures: failures(a.failures),
        }
    }
}

/// The embedder a call uses: the one given, else the per-call settings' `EMBEDDING_*`, else
/// `None` (the store's own).
fn call_embedder(
    py: Python<'_>,
    embedder: Option<&Bound<'_, PyAny>>,
    settings: Option<&Settings>,
) -> PyResult<Option<Arc<dyn EngineEmbedder>>> {
    if let Some(e) = embedder.filter(|e| !e.is_none()) {
        let e = e.extract::<Embedder>().map_err(|_| {
            value_error(
                "embedder",
                format!("must be an agrag.Embedder or None, got {}", type_name(e)),
            )
        })?;
        return Ok(Some(e.inner));
    }
    match settings {
        Some(s) => py
            .detach(|| s.embedding.build_embedder())
            .map_err(|e| py_error(&e)),
        None => Ok(None),
    }
}

/// Why a query could not be turned into a vector of the served run's space: a complete
/// answer (index not ready, a failed leg), never an exception.
enum Unembedded {
    NotReady,
    Failed(Option<String>, &'static str, String),
}

/// Text embedded for the served run by `embedder` (or the store's own), with the engine's
/// checks of model, dimension and weights; returns the run's model name and the vector.
fn embed_for_run(
    engine: &Engine,
    embedder: Option<Arc<dyn EngineEmbedder>>,
    text: &str,
) -> Result<(String, Vec<f32>), Unembedded> {
    let view = engine
        .view()
        .map_err(|e| Unembedded::Failed(engine.run_id(), "read", e.with_causes()))?;
    let Some(snap) = view.snapshot() else {
        return Err(Unembedded::NotReady);
    };
    let run = &snap.manifest.embedder;
    let run_id = Some(snap.run_id().to_owned());
    let embedder = match embedder {
        Some(e) => e,
        None => match engine.query_embedder() {
            Ok(Some(e)) => e,
            Ok(None) => return Err(Unembedded::NotReady),
            Err(e) => return Err(Unembedded::Failed(run_id, "embed", e.with_causes())),
        },
    };
    QueryEmbedder::new(Some(embedder), None)
        .embed(run, &QueryInput::Text(text.to_owned()))
        .map(|v| (run.model.clone(), v))
        .map_err(|e| Unembedded::Failed(run_id, "embed", e.with_causes()))
}

/// The hits `agrag._vector_store.search` read: `(int, float)` pairs, each id a community of
/// the run's numbering (`u32`).
fn store_hits(answer: &Bound<'_, PyAny>) -> Result<Vec<(u32, f32)>, String> {
    let pairs: Vec<(i64, f64)> = answer.extract().map_err(|e: PyErr| e.to_string())?;
    pairs
        .into_iter()
        .enumerate()
        .map(|(i, (id, score))| {
            let id = u32::try_from(id).map_err(|_| format!("hit {i} names community {id}"))?;
            #[allow(clippy::cast_possible_truncation)]
            Ok((id, score as f32))
        })
        .collect()
}

/// What a caller's vector store answered.
enum StoreAnswer {
    Hits(Vec<(u32, f32)>),
    /// The deadline passed first; the search is left to finish on its own thread.
    DeadlinePassed,
    /// It raised an `Exception` or answered something that is not hits.
    Failed(String),
}

/// Asks `vector_store.search(vector, k)` through `agrag._vector_store.search`, which bounds it
/// by the deadline. An exception that is not an `Exception` (`KeyboardInterrupt`,
/// `SystemExit`) propagates to the caller.
fn ask_vector_store(
    py: Python<'_>,
    vector_store: &Bound<'_, PyAny>,
    vector: &[f32],
    k: usize,
    deadline: Option<Deadline>,
) -> PyResult<StoreAnswer> {
    static HELPER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let helper = HELPER.get_or_try_init(py, || {
        py.import("agrag._vector_store")
            .and_then(|m| m.getattr("search"))
            .map(Bound::unbind)
    })?;
    let array = PyArray1::from_slice(py, vector);
    let seconds = deadline.map(|d| d.remaining().as_secs_f64());
    match helper.bind(py).call1((vector_store, array, k, seconds)) {
        Ok(answer) if answer.is_none() => Ok(StoreAnswer::DeadlinePassed),
        Ok(answer) => Ok(store_hits(&answer).map_or_else(StoreAnswer::Failed, StoreAnswer::Hits)),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyException>(py) => {
            Ok(StoreAnswer::Failed(e.to_string()))
        }
        Err(e) => Err(e),
    }
}

/// A caller's vector as the engine's input: its length checked against the given embedder's
/// dimension, else the served run's (`ValueError` naming `field` when they differ), and
/// labelled with that embedder's model name so the engine checks the vector space. One read
/// of the served run's identity, for both.
fn vector_input(
    field: &str,
    engine: &Engine,
    embedder: Option<&Arc<dyn EngineEmbedder>>,
    vector: Vec<f32>,
) -> PyResult<QueryInput> {
    let identity = match embedder {
        Some(e) => Some((
            e.identity().model.clone(),
            e.identity().dim,
            "the embedder's",
        )),
        None => engine.view().ok().and_then(|v| {
            v.snapshot().map(|s| {
                let id = &s.manifest.embedder;
                (id.model.clone(), id.dim, "the served run's")
            })
        }),
    };
    let model = match identity {
        Some((_, dim, whose)) if dim != vector.len() => {
            return Err(value_error(
                field,
                format!(
                    "has {} components; {whose} vectors have {dim}",
                    vector.len()
                ),
            ));
        }
        Some((model, _, _)) => model,
        // No run served: the engine answers `index_not_ready` whatever the label.
        None => String::new(),
    };
    Ok(QueryInput::Vector { model, vector })
}

/// `search_themes` with the GIL released: see `agrag.evidence.search_themes`.
#[pyfunction]
#[pyo3(signature = (store, embedder, query, scope = None, limit = None, support_limit = None, vector_store = None, settings = None, timeout = None))]
#[allow(clippy::too_many_arguments)]
fn search_themes_sync(
    py: Python<'_>,
    store: &Bound<'_, PyAny>,
    embedder: Option<&Bound<'_, PyAny>>,
    query: &Bound<'_, PyAny>,
    scope: Option<&Bound<'_, PyAny>>,
    limit: Option<&Bound<'_, PyAny>>,
    support_limit: Option<&Bound<'_, PyAny>>,
    vector_store: Option<&Bound<'_, PyAny>>,
    settings: Option<&Bound<'_, PyAny>>,
    timeout: Option<&Bound<'_, PyAny>>,
) -> PyResult<ThemeResult> {
    let store = store_arg(store)?;
    let store = store.get();
    let limit = positive("limit", limit, 5)?;
    let support_limit = positive("support_limit", support_limit, 3)?;
    let query = query_arg("query", query)?;
    let scope = scope_arg(scope)?;
    let timeout = timeout_arg(timeout)?;
    let cs = call_settings(store, settings)?;
    let vector_store = vector_store.filter(|v| !v.is_none());
    if let Some(v) = vector_store
        && !v.hasattr("search")?
    {
        return Err(value_error(
            "vector_store",
            format!(
                "must answer search(vector, k); {} has no search method",
                type_name(v)
            ),
        ));
    }
    let embedder = call_embedder(py, embedder, cs.embedder_given.then_some(&*cs.settings))?;
    let engine = &store.engine;
    // A vector is checked before any status: its length is the caller's error.
    let query = match query {
        Query::Vector(v) => Prepared::Input(vector_input("query", engine, embedder.as_ref(), v)?),
        Query::Text(text) => Prepared::Text(text),
    };
    let scope = effective_scope(&scope, &cs.settings.scope);
    let limit = cs.max_hits.map_or(limit, |m| limit.min(m));
    let deadline = Deadline::after(timeout.or(cs.settings.timeout));
    if let EngineScope::Documents(k) = &scope
        && k.is_empty()
    {
        return Ok(ThemeAnswer::empty(Status::EmptyScope, None).into());
    }
    // The store's own embedder embeds text inside the engine; a given embedder (or a vector
    // store, which needs the vector) embeds here, with the engine's checks.
    let input = match query {
        Prepared::Input(input) => input,
        Prepared::Text(text) if embedder.is_none() && vector_store.is_none() => {
            QueryInput::Text(text)
        }
        Prepared::Text(text) => match py.detach(|| embed_for_run(engine, embedder, &text)) {
            Ok((model, vector)) => QueryInput::Vector { model, vector },
            Err(Unembedded::NotReady) => {
                return Ok(
                    ThemeAnswer::empty(Status::IndexNotReady, Some(IndexState::NotReady)).into(),
                );
            }
            Err(Unembedded::Failed(run_id, leg, message)) => {
                return Ok(ThemeAnswer::failed(run_id, leg, message).into());
            }
        },
    };
    let timed_out = |d: Deadline, stage: &str| {
        let mut a = ThemeAnswer::failed(engine.run_id(), "", String::new());
        a.failures = vec![d.failure(stage)];
        ThemeResult::from(a)
    };
    let expired = |stage: &str| {
        deadline
            .filter(Deadline::expired)
            .map(|d| timed_out(d, stage))
    };
    if let Some(a) = expired("while the query was embedded") {
        return Ok(a);
    }
    let hits = match (vector_store, &input) {
        (Some(vs), QueryInput::Vector { vector, .. }) => {
            let k = theme::window_size(limit);
            match ask_vector_store(py, vs, vector, k, deadline)? {
                StoreAnswer::Hits(h) => Some(h),
                StoreAnswer::DeadlinePassed => {
                    if let Some(d) = deadline {
                        return Ok(timed_out(d, "while the vector store was searched"));
                    }
                    None
                }
                StoreAnswer::Failed(message) => {
                    return Ok(ThemeAnswer::failed(
                        engine.run_id(),
                        "vector_store",
                        format!("vector_store.search failed: {message}"),
                    )
                    .into());
                }
            }
        }
        _ => None,
    };
    if let Some(a) = expired("while the vector store was searched") {
        return Ok(a);
    }
    let req = ThemeRequest {
        query: input,
        scope,
        limit,
        support_limit,
        timeout: deadline.map(|d| d.remaining().max(Duration::from_nanos(1))),
    };
    let answer = py.detach(|| match &hits {
        Some(h) => engine.search_themes_in_window(&req, h),
        None => engine.search_themes(&req),
    });
    answer.map(ThemeResult::from).map_err(|e| py_error(&e))
}

/// A document of a concept search: `document_key`, `title`, `score` (None when ranked by
/// closeness), `matched` (the concepts it matched), `hops` (along the expansion).
#[pyclass(frozen, get_all, module = "agrag")]
#[derive(Clone)]
struct ConceptHit {
    document_key: String,
    title: String,
    score: Option<f32>,
    matched: Vec<String>,
    hops: u32,
}

#[pymethods]
impl ConceptHit {
    fn __repr__(&self) -> String {
        format!(
            "ConceptHit(document_key={:?}, title={:?}, hops={})",
            self.document_key, self.title, self.hops
        )
    }
}

/// The answer of `find_by_meaning`: `status` (`agrag.ConceptStatus`), `run_id`, `resolved`
/// (`(concept_id, preferred_term)` pairs), `num_expanded`, `total` (every matching
/// document), `sample` (at most `sample` of them, ranked), `ranked_by`, `coverage_text`,
/// `text` (all of it as sentences), `failures`; `to_dict()` gives every field.
#[pyclass(frozen, module = "agrag")]
struct ConceptResult {
    status: String,
    #[pyo3(get)]
    run_id: Option<String>,
    #[pyo3(get)]
    resolved: Vec<(String, String)>,
    #[pyo3(get)]
    num_expanded: usize,
    #[pyo3(get)]
    total: u64,
    #[pyo3(get)]
    sample: Vec<ConceptHit>,
    #[pyo3(get)]
    ranked_by: String,
    #[pyo3(get)]
    coverage_text: String,
    #[pyo3(get)]
    text: String,
    #[pyo3(get)]
    failures: Vec<Failure>,
    json: String,
}

#[pymethods]
impl ConceptResult {
    /// The outcome, an `agrag.ConceptStatus` (`ok`, `no_match`, `unknown_term`,
    /// `unknown_concept`, `unknown_node_field`, `empty_scope`, `index_not_ready`, `failed`).
    #[getter]
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        enum_member(py, "ConceptStatus", &self.status)
    }

    /// Every field of the engine's answer as plain Python values.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.json,))
    }

    fn __repr__(&self) -> String {
        format!(
            "ConceptResult(status={:?}, total={}, sample={}, run_id={:?})",
            self.status,
            self.total,
            self.sample.len(),
            self.run_id
        )
    }
}

impl From<ConceptAnswer> for ConceptResult {
    fn from(a: ConceptAnswer) -> Self {
        Self {
            json: serde_json::to_string(&a).unwrap_or_default(),
            status: serde_str(&a.status),
            run_id: a.run_id,
            resolved: a
                .resolved
                .into_iter()
                .map(|r| (r.concept_id, r.preferred_term))
                .collect(),
            num_expanded: a.num_expanded,
            total: a.total,
            sample: a
                .sample
                .into_iter()
                .map(|h| ConceptHit {
                    document_key: h.document_key,
                    title: h.title,
                    score: h.score,
                    matched: h.matched,
                    hops: h.hops,
                })
                .collect(),
            ranked_by: a.ranked_by,
            coverage_text: a.coverage_text,
            text: a.text,
            failures: failures(a.failures),
        }
    }
}

/// `find_by_meaning` with the GIL released: see `agrag.evidence.find_by_meaning`.
#[pyfunction]
#[pyo3(signature = (store, embedder = None, term = None, *, concept = None, scope = None, query = None, keyword = None, vector = None, vector_k = None, combine = None, keyword_weight = None, direction = None, depth = None, node_field = None, relation = None, sample = None, settings = None, timeout = None))]
#[allow(clippy::too_many_arguments)]
fn find_by_meaning_sync(
    py: Python<'_>,
    store: &Bound<'_, PyAny>,
    embedder: Option<&Bound<'_, PyAny>>,
    term: Option<&Bound<'_, PyAny>>,
    concept: Option<&Bound<'_, PyAny>>,
    scope: Option<&Bound<'_, PyAny>>,
    query: Option<&Bound<'_, PyAny>>,
    keyword: Option<&Bound<'_, PyAny>>,
    vector: Option<&Bound<'_, PyAny>>,
    vector_k: Option<&Bound<'_, PyAny>>,
    combine: Option<&Bound<'_, PyAny>>,
    keyword_weight: Option<&Bound<'_, PyAny>>,
    direction: Option<&Bound<'_, PyAny>>,
    depth: Option<&Bound<'_, PyAny>>,
    node_field: Option<&Bound<'_, PyAny>>,
    relation: Option<&Bound<'_, PyAny>>,
    sample: Option<&Bound<'_, PyAny>>,
    settings: Option<&Bound<'_, PyAny>>,
    timeout: Option<&Bound<'_, PyAny>>,
) -> PyResult<ConceptResult> {
    let store = store_arg(store)?;
    let store = store.get();
    let term = opt_str_arg("term", term)?;
    let concept = opt_str_arg("concept", concept)?;
    let query = bounded_text("query", opt_str_arg("query", query)?)?;
    let keyword = bounded_text("keyword", opt_str_arg("keyword", keyword)?)?;
    let combine = opt_str_arg("combine", combine)?;
    let direction = opt_str_arg("direction", direction)?;
    let node_field = opt_str_arg("node_field", node_field)?;
    let relation = opt_str_arg("relation", relation)?;
    let selector = match (term, concept) {
        (Some(t), None) => ConceptSelector::Term(t),
        (None, Some(c)) => ConceptSelector::Concept(c),
        _ => {
            return Err(value_error("term", "give exactly one of term and concept"));
        }
    };
    let mut req = ConceptRequest::new(selector);
    req.sample = positive("sample", sample, 10)?;
    req.depth = depth
        .filter(|d| !d.is_none())
        .map(|d| positive("depth", Some(d), 1))
        .transpose()?;
    let vector_k = positive("vector_k", vector_k, 100)?;
    let keyword_weight = number_in("keyword_weight", keyword_weight, 0.5, 0.0..=1.0)?;
    req.direction = match direction.as_deref().unwrap_or("up") {
        "up" | "forward" => Direction::Forward,
        "down" | "reverse" => Direction::Reverse,
        other => {
            return Err(value_error(
                "direction",
                format!("must be 'up' or 'down', got {other:?}"),
            ));
        }
    };
    req.combine = match combine.as_deref().unwrap_or("bool") {
        "bool" => Combine::Bool,
        "rrf" => Combine::Hybrid(Fusion::Rrf { k: 60.0 }),
        "weighted" => Combine::Hybrid(Fusion::WeightedSum { keyword_weight }),
        other => {
            return Err(value_error(
                "combine",
                format!("must be 'bool', 'rrf' or 'weighted', got {other:?}"),
            ));
        }
    };
    req.node_field = node_field.unwrap_or_else(|| "concept".to_owned());
    req.relation = relation.unwrap_or_else(|| "subclass_of".to_owned());
    req.query = query;
    req.keyword = keyword;
    let cs = call_settings(store, settings)?;
    let embedder = call_embedder(py, embedder, cs.embedder_given.then_some(&*cs.settings))?;
    let scope = scope_arg(scope)?;
    let timeout = timeout_arg(timeout)?;
    req.scope = effective_scope(&scope, &cs.settings.scope);
    req.timeout = timeout.or(cs.settings.timeout);
    // The deadline runs from here, so that embedding the vector clause below counts.
    let deadline = Deadline::after(req.timeout);
    let engine = &store.engine;
    if let Some(v) = vector.filter(|v| !v.is_none()) {
        let k = vector_k;
        let input = match query_arg("vector", v)? {
            Query::Vector(vector) => vector_input("vector", engine, embedder.as_ref(), vector)?,
            Query::Text(text) if embedder.is_none() => QueryInput::Text(text),
            Query::Text(text) => match py.detach(|| embed_for_run(engine, embedder, &text)) {
                Ok((model, vector)) => QueryInput::Vector { model, vector },
                // No run: the engine answers `index_not_ready` itself.
                Err(Unembedded::NotReady) => QueryInput::Text(text),
                Err(Unembedded::Failed(run_id, leg, message)) => {
                    return Ok(ConceptAnswer::failed(run_id, req.direction, leg, message).into());
                }
            },
        };
        req.vector = Some(VectorClause { input, k });
    }
    if let Some(d) = deadline {
        if d.expired() {
            let f = d.failure("while the vector clause was embedded");
            return Ok(
                ConceptAnswer::failed(engine.run_id(), req.direction, &f.leg, f.message).into(),
            );
        }
        req.timeout = Some(d.remaining().max(Duration::from_nanos(1)));
    }
    py.detach(|| engine.find_by_meaning(&req))
        .map(ConceptResult::from)
        .map_err(|e| py_error(&e))
}

/// A passage behind an evidence id: `evidence_id`, `status` (`found`, `not_visible`,
/// `unknown`), `visibility`, `document_key`, `title`, `location`, `text` (None unless found).
#[pyclass(frozen, get_all, module = "agrag")]
struct Evidence {
    evidence_id: String,
    status: String,
    visibility: Option<String>,
    document_key: Option<String>,
    title: Option<String>,
    location: Option<Location>,
    text: Option<String>,
}

#[pymethods]
impl Evidence {
    fn __repr__(&self) -> String {
        format!(
            "Evidence(evidence_id={:?}, status={:?}, document_key={:?})",
            self.evidence_id, self.status, self.document_key
        )
    }
}

impl From<EngineEvidence> for Evidence {
    fn from(e: EngineEvidence) -> Self {
        Self {
            evidence_id: e.evidence_id,
            status: serde_str(&e.status),
            visibility: e.visibility.map(|v| v.as_str().to_owned()),
            document_key: e.document_key,
            title: e.title,
            location: e.location.map(|l| Location {
                position: l.position,
            }),
            text: e.text,
        }
    }
}

/// `fetch_evidence` with the GIL released: the passages behind `ids`, in the order asked.
#[pyfunction]
#[pyo3(signature = (store, ids, scope = None, settings = None))]
fn fetch_evidence_sync(
    py: Python<'_>,
    store: &Bound<'_, PyAny>,
    ids: &Bound<'_, PyAny>,
    scope: Option<&Bound<'_, PyAny>>,
    settings: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Evidence>> {
    let store = store_arg(store)?;
    let store = store.get();
    let ids = str_list_arg("ids", ids)?;
    let scope = scope_arg(scope)?;
    let cs = call_settings(store, settings)?;
    let scope = effective_scope(&scope, &cs.settings.scope);
    py.detach(|| {
        store
            .engine
            .fetch_evidence(&ids)
            .map(|ev| within_scope(ev, &scope))
    })
    .map(|v| v.into_iter().map(Evidence::from).collect())
    .map_err(|e| py_error(&e))
}

/// The agent tools of a store within a scope: `specs` (name, description, JSON Schema of the
/// arguments) and `call(name, arguments)`, which never raises. Records whether any call
/// retrieved partially (`partial_retrieval`), as the contract defines it.
#[pyclass(frozen, module = "agrag")]
struct AgentTools {
    run: Mutex<AgentRun>,
}

fn json_to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (v.to_string(),))
}

fn output_dict<'py>(py: Python<'py>, out: &ToolOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("tool", &out.tool)?;
    d.set_item("text", &out.text)?;
    d.set_item("structured", json_to_py(py, &out.structured)?)?;
    d.set_item("is_error", out.is_error)?;
    d.set_item("rejected", out.rejected)?;
    d.set_item("partial_retrieval", out.partial_retrieval)?;
    Ok(d)
}

#[pymethods]
impl AgentTools {
    /// The tools as a model is given them: a list of dicts with `name`, `description` and
    /// `input_schema` (JSON Schema).
    #[getter]
    fn specs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for t in TOOLS {
            let d = PyDict::new(py);
            d.set_item("name", t.name)?;
            d.set_item("description", t.description)?;
            d.set_item("input_schema", json_to_py(py, &t.input_schema())?)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Calls tool `name` with `arguments` (a dict, or the JSON text a model wrote). Never
    /// raises: bad arguments answer `Invalid arguments.` naming each bad field. Returns a dict
    /// with `tool`, `text`, `structured`, `is_error`, `rejected`, `partial_retrieval`.
    fn call<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        arguments: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        // A name that is not a str is answered as an unknown tool under its `str()`; text
        // Rust cannot hold (lone surrogates) is read with U+FFFD in their place, so it names
        // no tool and no JSON key, and is answered, not raised. An interrupt still raises.
        let name = match name.cast::<PyString>() {
            Ok(s) => s.to_string_lossy().into_owned(),
            Err(_) => match name.str() {
                Ok(s) => s.to_string_lossy().into_owned(),
                Err(e) if is_interrupt(py, &e) => return Err(e),
                Err(_) => type_name(name),
            },
        };
        let name = name.as_str();
        let text = if let Ok(s) = arguments.cast::<PyString>() {
            s.to_string_lossy().into_owned()
        } else {
            // Any mapping, NumPy numbers too (`agrag._json.dumps`); anything else JSON cannot
            // write becomes text that is not JSON, which the tools reject naming `arguments`.
            match py
                .import("agrag._json")?
                .call_method1("dumps", (arguments,))
                .and_then(|s| s.extract::<String>())
            {
                Ok(t) => t,
                Err(e) if is_interrupt(py, &e) => return Err(e),
                Err(e) => format!("<{e}>"),
            }
        };
        let out = py.detach(|| match self.run.lock() {
            Ok(mut run) => Some(run.call_json(name, &text)),
            Err(_) => None,
        });
        match out {
            Some(o) => output_dict(py, &o),
            None => Err(PyRuntimeError::new_err("agent tools lock poisoned")),
        }
    }

    /// Whether any call so far retrieved partially: a theme search that was not `ok`,
    /// `no_match` or `empty_scope`, or truncated, or an engine error.
    #[getter]
    fn partial_retrieval(&self) -> bool {
        self.run.lock().is_ok_and(|r| r.partial_retrieval())
    }

    fn __repr__(&self) -> String {
        let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        format!("AgentTools(tools={names:?})")
    }
}

/// The agent tools of `store` within `scope` (default: every document), under the store's
/// settings overridden by `settings` (`MCP_MAX_HITS`, `MCP_SCOPE`, `MCP_TIMEOUT`).
#[pyfunction]
#[pyo3(signature = (store, scope = None, settings = None))]
fn agent_tools(
    store: &Bound<'_, PyAny>,
    scope: Option<&Bound<'_, PyAny>>,
    settings: Option<&Bound<'_, PyAny>>,
) -> PyResult<AgentTools> {
    let store = store_arg(store)?;
    let store = store.get();
    let scope = scope_arg(scope)?;
    let mut s = call_settings(store, settings)?.settings.into_owned();
    s.scope = effective_scope(&scope, &s.scope);
    let tools = ToolBox::new(store.engine.clone(), s);
    Ok(AgentTools {
        run: Mutex::new(AgentRun::new(tools)),
    })
}

/// For the benchmark script: the seconds each text query of `queries` takes in the engine,
/// measured in Rust around `Engine::search_themes` (the store's own embedder, every document),
/// so that Python's per-call overhead is the difference to the same calls made from Python.
#[pyfunction]
#[pyo3(signature = (store, queries, limit = None, support_limit = None))]
fn _time_search_themes(
    py: Python<'_>,
    store: &Bound<'_, PyAny>,
    queries: Vec<String>,
    limit: Option<&Bound<'_, PyAny>>,
    support_limit: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<f64>> {
    let store = store_arg(store)?;
    let store = store.get();
    let limit = positive("limit", limit, 5)?;
    let support_limit = positive("support_limit", support_limit, 3)?;
    py.detach(|| {
        queries
            .into_iter()
            .map(|q| {
                let req = ThemeRequest {
                    limit,
                    support_limit,
                    ..ThemeRequest::text(q)
                };
                let start = std::time::Instant::now();
                store.engine.search_themes(&req)?;
                Ok(start.elapsed().as_secs_f64())
            })
            .collect::<Result<Vec<f64>, EngineError>>()
    })
    .map_err(|e| py_error(&e))
}

/// The module `agrag._agrag`.
#[pymodule]
fn _agrag(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("IndexCorruptError", m.py().get_type::<IndexCorruptError>())?;
    m.add_class::<Store>()?;
    m.add_class::<Embedder>()?;
    m.add_class::<Scope>()?;
    m.add_class::<ThemeResult>()?;
    m.add_class::<Theme>()?;
    m.add_class::<ThemePassage>()?;
    m.add_class::<Location>()?;
    m.add_class::<Failure>()?;
    m.add_class::<ConceptResult>()?;
    m.add_class::<ConceptHit>()?;
    m.add_class::<Evidence>()?;
    m.add_class::<AgentTools>()?;
    m.add_function(wrap_pyfunction!(open_store, m)?)?;
    m.add_function(wrap_pyfunction!(search_themes_sync, m)?)?;
    m.add_function(wrap_pyfunction!(find_by_meaning_sync, m)?)?;
    m.add_function(wrap_pyfunction!(fetch_evidence_sync, m)?)?;
    m.add_function(wrap_pyfunction!(agent_tools, m)?)?;
    m.add_function(wrap_pyfunction!(_time_search_themes, m)?)?;
    Ok(())
}
