//! Writing a run: Parquet and Arrow IPC files into a staging folder, then the manifest, then an
//! atomic rename into `runs/<run_id>/`. Moving `LATEST` is a separate, last step
//! ([`Layout::write_latest`]).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use super::layout::{Layout, sync_dir};
use super::manifest::{FileEntry, MANIFEST_CHECKSUM_FILE, MANIFEST_FILE, Manifest};
use super::{FORMAT_VERSION, META_FORMAT_VERSION, META_RUN_ID};
use crate::embed::EmbedderIdentity;
use crate::error::{EngineError, Result};

/// Rows per Parquet row group: large enough for scans, small enough for statistics to prune.
pub const ROW_GROUP_ROWS: usize = 128 * 1024;

/// Bytes of a Parquet row group, about (the writer holds a row group encoded in memory until
/// it is full): 128 k rows of 384-dimensional vectors would be 200 MB, so tables of wide rows
/// get shorter row groups.
pub const ROW_GROUP_BYTES: usize = 64 * 1024 * 1024;

/// Writes the files of one run. Created by [`RunWriter::create`], completed by
/// [`RunWriter::finish`]. Dropping it unfinished removes the staging folder, so a failed run
/// leaves nothing behind (a killed process leaves a `.staging-*` folder that is never served).
#[derive(Debug)]
pub struct RunWriter {
    layout: Layout,
    run_id: String,
    staging: PathBuf,
    /// The files written so far (any order: the manifest sorts them by name), and the names
    /// of those being written. Behind locks so that several threads can each write files of
    /// the run at once (the methods that write take `&self`).
    files: Mutex<Vec<FileEntry>>,
    opened: Mutex<Vec<String>>,
    finished: bool,
    /// The manifest's `parent_run_id` and `next_community_id`.
    lineage: Option<(Option<String>, u32)>,
}

/// `m` locked; a lock poisoned by a panicking writer thread is taken as it is (the lists stay
/// consistent: each change is one push).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A `Write` that hashes and counts what goes through it.
struct HashingWriter<W> {
    inner: W,
    hasher: blake3::Hasher,
    bytes: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Most bytes [`RunWriter::write_ipc_releasing`] writes before it releases them.
pub const RELEASE_CHUNK: usize = 16 * 1024 * 1024;

/// A `Write` that hands every range it has written to `release` (see
/// [`RunWriter::write_ipc_releasing`]).
struct ReleasingWriter<'r, W> {
    inner: W,
    release: &'r dyn Fn(&[u8]),
}

impl<W: Write> Write for ReleasingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let chunk = &buf[..buf.len().min(RELEASE_CHUNK)];
        self.inner.write_all(chunk)?;
        (self.release)(chunk);
        Ok(chunk.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl RunWriter {
    /// Starts run `run_id` under `layout`: creates `runs/.staging-<run_id>/`.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] for a malformed run id or one that already exists;
    /// [`EngineError::Io`] when the folder cannot be created.
    pub fn create(layout: &Layout, run_id: &str) -> Result<Self> {
        if !super::layout::is_valid_run_id(run_id) || layout.run_dir(run_id).exists() {
            return Err(EngineError::InvalidArgument {
                field: "run_id",
                value: run_id.to_owned(),
                expected: "a new UUID run id",
            });
        }
        let staging = layout.staging_dir(run_id);
        fs::create_dir_all(&staging).map_err(|e| EngineError::io(&staging, e))?;
        fault_point("staging");
        Ok(Self {
            layout: layout.clone(),
            run_id: run_id.to_owned(),
            staging,
            files: Mutex::new(Vec::new()),
            opened: Mutex::new(Vec::new()),
            finished: false,
            lineage: None,
        })
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// `schema` with the run id and the format version added to its metadata.
    fn with_run_metadata(&self, schema: &arrow_schema::SchemaRef) -> arrow_schema::SchemaRef {
        let mut meta = schema.metadata().clone();
        meta.insert(META_RUN_ID.to_owned(), self.run_id.clone());
        meta.insert(META_FORMAT_VERSION.to_owned(), FORMAT_VERSION.to_string());
        std::sync::Arc::new(schema.as_ref().clone().with_metadata(meta))
    }

    fn open_file(&self, name: &str) -> Result<(PathBuf, HashingWriter<BufWriter<File>>)> {
        {
            let mut opened = lock(&self.opened);
            if opened.iter().any(|n| n == name) || name == MANIFEST_FILE {
                return Err(EngineError::Internal(format!("file {name} written twice")));
            }
            opened.push(name.to_owned());
        }
        let path = self.staging.join(name);
        let file = File::create(&path).map_err(|e| EngineError::io(&path, e))?;
        Ok((
            path,
            HashingWriter {
                inner: BufWriter::new(file),
                hasher: blake3::Hasher::new(),
                bytes: 0,
            },
        ))
    }

    fn close_file(
        &self,
        name: &str,
        path: &Path,
        writer: HashingWriter<BufWriter<File>>,
        rows: usize,
    ) -> Result<()> {
        let HashingWriter {
            inner,
            hasher,
            bytes,
        } = writer;
        let file = inner
            .into_inner()
            .map_err(|e| EngineError::io(path, e.into_error()))?;
        fault_point(&format!("write:{name}"));
        file.sync_all().map_err(|e| EngineError::io(path, e))?;
        lock(&self.files).push(FileEntry {
            name: name.to_owned(),
            rows: rows as u64,
            bytes,
            blake3: hasher.finalize().to_hex().to_string(),
        });
        fault_point(&format!("written:{name}"));
        Ok(())
    }

    /// Writes `batch` as Parquet file `name`, declaring it sorted by `sorted_by` (column names,
    /// ascending; the caller sorts). See [`RunWriter::write_parquet_batches`].
    ///
    /// # Errors
    /// Those of [`RunWriter::write_parquet_batches`].
    pub fn write_parquet(&self, name: &str, batch: &RecordBatch, sorted_by: &[&str]) -> Result<()> {
        self.write_parquet_batches(
            name,
            &batch.schema(),
            sorted_by,
            std::iter::once(Ok(batch.clone())),
        )
    }

    /// Writes the record batches `batches` yields (each of schema `schema`, taken one at a time,
    /// so a table is never whole in memory) as Parquet file `name`, declaring it sorted by
    /// `sorted_by` (column names, ascending; the caller sorts). Snappy-compressed, page
    /// statistics, row groups of at most [`ROW_GROUP_ROWS`] rows and about
    /// [`ROW_GROUP_BYTES`] bytes, `run_id` and `format_version` in the key-value metadata and
    /// in the embedded Arrow schema's metadata. The batches' sizes do not change the file's
    /// rows, only where its row groups end.
    ///
    /// # Errors
    /// The first error `batches` yields; [`EngineError::Io`] / [`EngineError::Parquet`] on
    /// write failures; [`EngineError::Internal`] for an unknown sort column.
    pub fn write_parquet_batches(
        &self,
        name: &str,
        schema: &arrow_schema::SchemaRef,
        sorted_by: &[&str],
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
    ) -> Result<()> {
        let mut sorting = Vec::with_capacity(sorted_by.len());
        for col in sorted_by {
            let idx = schema
                .index_of(col)
                .map_err(|_| EngineError::Internal(format!("{name}: no sort column {col}")))?;
            sorting.push(SortingColumn {
                column_idx: i32::try_from(idx).unwrap_or(i32::MAX),
                descending: false,
                nulls_first: false,
            });
        }
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .set_sorting_columns(Some(sorting))
            .set_created_by(format!("agrag {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new(META_RUN_ID.to_owned(), self.run_id.clone()),
                KeyValue::new(META_FORMAT_VERSION.to_owned(), FORMAT_VERSION.to_string()),
            ]))
            .build();
        let (path, out) = self.open_file(name)?;
        let perr =
            |e: parquet::errors::ParquetError| EngineError::parquet(&path, "Parquet write", e);
        // pyarrow (and so pandas) shows the metadata of the Arrow schema embedded in the file,
        // not the Parquet key-value pairs: the run id goes in both.
        let schema = self.with_run_metadata(schema);
        let mut writer = ArrowWriter::try_new(out, schema.clone(), Some(props)).map_err(perr)?;
        let mut rows = 0usize;
        for batch in batches {
            let batch = batch?
                .with_schema(schema.clone())
                .map_err(|e| EngineError::parquet(&path, "Parquet write", e))?;
            rows += batch.num_rows();
            writer.write(&batch).map_err(perr)?;
        }
        let out = writer.into_inner().map_err(perr)?;
        self.close_file(name, &path, out, rows)
    }

    /// Writes `batch` as an uncompressed Arrow IPC file `name` (for zero-copy mapping), with
    /// `run_id` and `format_version` in the schema metadata.
    ///
    /// # Errors
    /// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
    pub fn write_ipc(&self, name: &str, batch: &RecordBatch) -> Result<()> {
        self.write_ipc_releasing(name, batch, &|_| {})
    }

    /// As [`RunWriter::write_ipc`], calling `release` with each range of bytes once it is
    /// written, at most [`RELEASE_CHUNK`] at a time and in order: a batch over a mapped scratch
    /// file ([`crate::format::staged::RowBuffer::release_bytes`]) is written without the whole
    /// file becoming resident.
    ///
    /// # Errors
    /// As [`RunWriter::write_ipc`].
    pub fn write_ipc_releasing(
        &self,
        name: &str,
        batch: &RecordBatch,
        release: &dyn Fn(&[u8]),
    ) -> Result<()> {
        let (path, out) = self.open_file(name)?;
        let aerr = |e: arrow_schema::ArrowError| EngineError::parquet(&path, "Arrow IPC write", e);
        let schema = self.with_run_metadata(&batch.schema());
        let batch = batch.clone().with_schema(schema.clone()).map_err(aerr)?;
        let out = ReleasingWriter {
            inner: out,
            release,
        };
        let mut writer = arrow_ipc::writer::FileWriter::try_new(out, &schema).map_err(aerr)?;
        writer.write(&batch).map_err(aerr)?;
        writer.finish().map_err(aerr)?;
        let out = writer.into_inner().map_err(aerr)?.inner;
        self.close_file(name, &path, out, batch.num_rows())
    }

    /// Starts the uncompressed Arrow IPC file `name` of schema `schema` (with `run_id` and
    /// `format_version` added to its metadata), to be written a record batch at a time through
    /// [`IpcStream::write`] and completed by [`RunWriter::finish_ipc`], so that a file larger
    /// than memory never is whole in it.
    ///
    /// # Errors
    /// [`EngineError::Io`] when the file cannot be created; [`EngineError::Internal`] when a
    /// file of that name was written already.
    pub fn start_ipc(&self, name: &str, schema: &arrow_schema::SchemaRef) -> Result<IpcStream> {
        let (path, out) = self.open_file(name)?;
        let schema = self.with_run_metadata(schema);
        let writer = arrow_ipc::writer::FileWriter::try_new(out, &schema)
            .map_err(|e| ipc_error(&path, e))?;
        Ok(IpcStream {
            name: name.to_owned(),
            path,
            schema,
            writer,
            rows: 0,
        })
    }

    /// Completes a file started by [`RunWriter::start_ipc`]: its footer, then sync and listing
    /// in the manifest with its rows, size and checksum.
    ///
    /// # Errors
    /// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
    pub fn finish_ipc(&self, stream: IpcStream) -> Result<()> {
        let IpcStream {
            name,
            path,
            mut writer,
            rows,
            ..
        } = stream;
        writer.finish().map_err(|e| ipc_error(&path, e))?;
        let out = writer.into_inner().map_err(|e| ipc_error(&path, e))?;
        self.close_file(&name, &path, out, rows)
    }

    /// The staging folder (for writers of other formats, such as the text index).
    pub fn staging_dir(&self) -> &Path {
        &self.staging
    }

    /// Lists every file under `staging/<rel>` (written by another library) in the manifest
    /// with its size and checksum, after syncing it.
    ///
    /// # Errors
    /// [`EngineError::Io`] when a file cannot be read or synced.
    pub fn register_dir(&self, rel: &str) -> Result<()> {
        fault_point(&format!("write:{rel}"));
        let dir = self.staging.join(rel);
        let mut names: Vec<String> = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| EngineError::io(&dir, e))? {
            let entry = entry.map_err(|e| EngineError::io(&dir, e))?;
            if entry.path().is_file()
                && let Some(n) = entry.file_name().to_str()
            {
                names.push(n.to_owned());
            }
        }
        names.sort();
        for n in names {
            let path = dir.join(&n);
            let file = File::open(&path).map_err(|e| EngineError::io(&path, e))?;
            file.sync_all().map_err(|e| EngineError::io(&path, e))?;
            let mut hasher = blake3::Hasher::new();
            hasher
                .update_reader(&file)
                .map_err(|e| EngineError::io(&path, e))?;
            let bytes = file
                .metadata()
                .map_err(|e| EngineError::io(&path, e))?
                .len();
            lock(&self.files).push(FileEntry {
                name: format!("{rel}/{n}"),
                rows: 0,
                bytes,
                blake3: hasher.finalize().to_hex().to_string(),
            });
        }
        sync_dir(&dir)
    }

    /// Records the run's parent and the smallest community id no run on the root has used
    /// (the manifest's `parent_run_id` and `next_community_id`).
    pub fn set_lineage(&mut self, parent_run_id: Option<String>, next_community_id: u32) {
        self.lineage = Some((parent_run_id, next_community_id));
    }

    /// Writes the manifest, syncs, and renames the staging folder to `runs/<run_id>/`. The run
    /// is then complete but not yet served: call [`Layout::write_latest`] to publish it.
    /// [`Manifest::oversized_leaves`] is taken from `stats["oversized_leaves"]` (an unsigned
    /// integer) when `stats` has it.
    ///
    /// # Errors
    /// [`EngineError::Io`] on any file-system failure (the staging folder is then removed).
    pub fn finish(
        mut self,
        parameters: serde_json::Value,
        embedder: EmbedderIdentity,
        input_fingerprint: String,
        stats: serde_json::Value,
    ) -> Result<Manifest> {
        let mut files = std::mem::take(&mut *lock(&self.files));
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            run_id: self.run_id.clone(),
            created_at: now_rfc3339(),
            parameters,
            embedder,
            input_fingerprint,
            oversized_leaves: stats
                .get("oversized_leaves")
                .and_then(serde_json::Value::as_u64),
            parent_run_id: self.lineage.as_ref().and_then(|l| l.0.clone()),
            next_community_id: self.lineage.as_ref().map(|l| l.1),
            stats,
            files,
        };
        let path = self.staging.join(MANIFEST_FILE);
        let json = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| EngineError::Internal(format!("manifest does not serialize: {e}")))?;
        write_synced(&path, &json)?;
        fault_point("manifest");
        let sum = format!("{}\n", blake3::hash(&json).to_hex());
        write_synced(&self.staging.join(MANIFEST_CHECKSUM_FILE), sum.as_bytes())?;
        sync_dir(&self.staging)?;
        fault_point("rename");
        let dest = self.layout.run_dir(&self.run_id);
        fs::rename(&self.staging, &dest).map_err(|e| EngineError::io(&dest, e))?;
        sync_dir(&self.layout.runs_dir())?;
        self.finished = true;
        fault_point("renamed");
        Ok(manifest)
    }
}

/// An Arrow IPC file of a run being written a record batch at a time (see
/// [`RunWriter::start_ipc`]). Dropped without [`RunWriter::finish_ipc`], it leaves an
/// incomplete file in the staging folder, which the unfinished run's writer removes.
pub struct IpcStream {
    name: String,
    path: PathBuf,
    schema: arrow_schema::SchemaRef,
    writer: arrow_ipc::writer::FileWriter<HashingWriter<BufWriter<File>>>,
    rows: usize,
}

impl std::fmt::Debug for IpcStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpcStream")
            .field("name", &self.name)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl IpcStream {
    /// Appends `batch` (of the stream's schema, metadata aside) as one record batch.
    ///
    /// # Errors
    /// [`EngineError::Parquet`] naming the file when the batch's columns do not match the
    /// schema or the write fails.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let batch = batch
            .clone()
            .with_schema(self.schema.clone())
            .map_err(|e| ipc_error(&self.path, e))?;
        self.writer
            .write(&batch)
            .map_err(|e| ipc_error(&self.path, e))?;
        self.rows += batch.num_rows();
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }
}

fn ipc_error(path: &Path, e: arrow_schema::ArrowError) -> EngineError {
    EngineError::parquet(path, "Arrow IPC write", e)
}

impl Drop for RunWriter {
    fn drop(&mut self) {
        if !self.finished {
            // Best effort: a failed run must not leave files behind. A leftover staging folder
            // is harmless anyway (never served, removed by gc).
            let _ = fs::remove_dir_all(&self.staging);
        }
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = File::create(path).map_err(|e| EngineError::io(path, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| EngineError::io(path, e))
}

/// Environment variable naming a publish step at which the process stops, for crash tests.
///
/// When set to a step name (see [`fault_point`]), the process prints
/// `agrag fault point <step>` on stderr on reaching that step and then sleeps until it is
/// killed, so a test can SIGKILL it at exactly that point. Unset (always, in production),
/// it costs one environment lookup per run.
pub const FAULT_ENV: &str = "AGRAG_FAULT_AT";

/// Environment variable that, when set, makes every [`fault_point`] print
/// `agrag fault point <step>` on stderr without stopping (crash tests time random kills with it).
pub const FAULT_TRACE_ENV: &str = "AGRAG_FAULT_TRACE";

/// A named step of publishing at which a crash test may stop the process (see [`FAULT_ENV`]).
/// Steps, in order: `staging` (folder created), `write:<file>` (bytes of a file written, not
/// yet synced), `written:<file>` (file synced and listed), `manifest` (manifest written, not
/// its checksum), `rename` (everything synced, folder not yet renamed), `renamed` (run
/// complete, `LATEST` not yet moved), `latest-tmp` (new `LATEST` written to its temporary
/// file), `latest` (`LATEST` moved).
pub fn fault_point(step: &str) {
    static CONFIG: std::sync::OnceLock<(Option<String>, bool)> = std::sync::OnceLock::new();
    let (target, trace) = CONFIG.get_or_init(|| {
        (
            std::env::var(FAULT_ENV).ok(),
            std::env::var_os(FAULT_TRACE_ENV).is_some(),
        )
    });
    let stop = target.as_deref() == Some(step);
    if stop || *trace {
        eprintln!("agrag fault point {step}");
    }
    if stop {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

/// Current UTC time as RFC 3339 with seconds (`2026-11-29T20:01:02Z`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
