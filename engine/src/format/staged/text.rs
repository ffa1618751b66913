//! Texts too large to hold while a run is built: a corpus's passages, appended one after
//! another into a scratch file of the run's staging folder as ingest reads them, then mapped
//! and read back by index ([`TextColumn`]).
//!
//! At 10⁶ documents the passages are 1.5 GB of text, and held as `String`s from ingest to
//! publish they were the largest part of the job's peak memory. Mapped, they live in the page
//! cache: a stage that reads them all (linking, embedding, the passage table) holds only the
//! pages it has read since it last called [`TextColumn::release`].

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::store::mmap;

/// Bytes buffered before a write to the scratch file.
const WRITE_BUFFER: usize = 1 << 20;

/// Where one text is: its first byte and its length in bytes.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u64,
    len: u32,
}

/// Where a builder's bytes go.
enum Sink {
    Heap(String),
    Scratch {
        path: PathBuf,
        file: BufWriter<File>,
    },
}

/// Appends texts to a [`TextColumn`]: on the heap ([`TextColumnBuilder::heap`]), or into a
/// scratch file of a run's staging folder ([`TextColumnBuilder::scratch`]) that
/// [`TextColumnBuilder::finish`] maps.
pub struct TextColumnBuilder {
    spans: Vec<Span>,
    sink: Sink,
    len: u64,
}

impl TextColumnBuilder {
    /// A column held on the heap (small columns, and corpora read without a run).
    pub fn heap() -> Self {
        Self {
            spans: Vec::new(),
            sink: Sink::Heap(String::new()),
            len: 0,
        }
    }

    /// A column written into the scratch file `name` (which must not be a table's name) of
    /// `w`'s staging folder.
    ///
    /// # Errors
    /// [`EngineError::Io`] naming the file when it cannot be created (or already exists).
    pub fn scratch(w: &RunWriter, name: &str) -> Result<Self> {
        let path = w.staging_dir().join(name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| EngineError::io(&path, e))?;
        Ok(Self {
            spans: Vec::new(),
            sink: Sink::Scratch {
                path,
                file: BufWriter::with_capacity(WRITE_BUFFER, file),
            },
            len: 0,
        })
    }

    /// Appends `text` as the next entry.
    ///
    /// # Errors
    /// [`EngineError::Io`] naming the scratch file on a write failure;
    /// [`EngineError::InvalidArgument`] for a text of 4 GiB or more.
    pub fn push(&mut self, text: &str) -> Result<()> {
        let len = u32::try_from(text.len()).map_err(|_| EngineError::InvalidArgument {
            field: "text",
            value: format!("{} bytes", text.len()),
            expected: "a text shorter than 4 GiB",
        })?;
        match &mut self.sink {
            Sink::Heap(s) => s.push_str(text),
            Sink::Scratch { path, file } => file
                .write_all(text.as_bytes())
                .map_err(|e| EngineError::io(&*path, e))?,
        }
        self.spans.push(Span {
            start: self.len,
            len,
        });
        self.len += u64::from(len);
        Ok(())
    }

    /// Number of entries so far.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether no entry has been pushed.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The finished column. A scratch file is flushed, mapped and removed (the map keeps its
    /// bytes; no sync: the map reads the page cache the writes went to, and a scratch file
    /// need not survive a crash).
    ///
    /// # Errors
    /// [`EngineError::Io`] naming the scratch file when it cannot be written, mapped or
    /// removed; [`EngineError::Corrupt`] when the mapped file is not the bytes written (it
    /// was changed by someone else).
    pub fn finish(self) -> Result<TextColumn> {
        let bytes = match self.sink {
            Sink::Heap(s) => Bytes::Heap(s),
            Sink::Scratch { path, file } => {
                let file = file
                    .into_inner()
                    .map_err(|e| EngineError::io(&path, e.into_error()))?;
                drop(file);
                let (_, map) = mmap::map_scratch(&path)?;
                if map.len() as u64 != self.len {
                    return Err(EngineError::corrupt(
                        &path,
                        "the scratch file's length is not that of the texts written",
                    ));
                }
                Bytes::Mapped(map)
            }
        };
        Ok(TextColumn {
            spans: self.spans,
            bytes,
        })
    }
}

impl std::fmt::Debug for TextColumnBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextColumnBuilder")
            .field("entries", &self.spans.len())
            .field("bytes", &self.len)
            .field("scratch", &matches!(self.sink, Sink::Scratch { .. }))
            .finish()
    }
}

/// The bytes of a column.
#[derive(Clone)]
enum Bytes {
    Heap(String),
    Mapped(Arc<memmap2::Mmap>),
}

/// UTF-8 texts read by index: on the heap, or a mapped scratch file whose pages a reader
/// drops from the resident set with [`TextColumn::release`] once it has read them.
///
/// Entries are in the order they were pushed until [`TextColumn::reorder`] permutes them
/// (only the index moves, never the bytes).
#[derive(Clone)]
pub struct TextColumn {
    spans: Vec<Span>,
    bytes: Bytes,
}

impl TextColumn {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Total bytes of the texts.
    pub fn num_bytes(&self) -> u64 {
        match &self.bytes {
            Bytes::Heap(s) => s.len() as u64,
            Bytes::Mapped(m) => m.len() as u64,
        }
    }

    /// Whether the texts are a mapped scratch file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.bytes, Bytes::Mapped(_))
    }

    /// Entry `i`.
    ///
    /// A mapped entry is checked to be UTF-8 as it is read (at memory speed, on bytes about to
    /// be read anyway), so that taking an entry touches no page of the map.
    ///
    /// # Panics
    /// When `i` is out of range, or when the mapped bytes of the entry are no longer the
    /// UTF-8 written (the scratch file was changed by another process, which the map's
    /// contract excludes).
    pub fn get(&self, i: usize) -> &str {
        let Span { start, len } = self.spans[i];
        let range = start as usize..start as usize + len as usize;
        match &self.bytes {
            Bytes::Heap(s) => &s[range],
            Bytes::Mapped(m) => std::str::from_utf8(&m[range]).unwrap_or_else(|e| {
                panic!("a mapped text scratch file was changed under the run: {e}")
            }),
        }
    }

    /// Permutes the entries: entry `i` becomes the former entry `order[i]`. Entries left out
    /// are dropped from the index (their bytes stay).
    ///
    /// # Panics
    /// When an index of `order` is out of range.
    pub fn reorder(&mut self, order: impl IntoIterator<Item = usize>) {
        self.spans = order.into_iter().map(|i| self.spans[i]).collect();
    }

    /// Drops every page of a mapped column from this process's resident set (nothing for a
    /// heap column): a reader calls it between batches of what it reads, so that reading all
    /// texts holds only a batch's pages. Nothing is lost; a later read faults its pages in
    /// again from the page cache or the file.
    pub fn release(&self) {
        if let Bytes::Mapped(m) = &self.bytes {
            mmap::release(m, &m[..]);
        }
    }
}

impl std::fmt::Debug for TextColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextColumn")
            .field("entries", &self.spans.len())
            .field("bytes", &self.num_bytes())
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Layout;

    fn texts() -> Vec<String> {
        (0..20_000)
            .map(|i| match i % 4 {
                0 => String::new(),
                1 => format!("passage {i}: naïve Bayes über Ærø"),
                2 => "x".repeat(i % 300),
                _ => format!("{i} 心肌梗死"),
            })
            .collect()
    }

    #[test]
    fn heap_and_scratch_columns_read_back_what_was_pushed() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let w = RunWriter::create(&layout, &crate::format::new_run_id()).unwrap();
        let texts = texts();
        for mut b in [
            TextColumnBuilder::heap(),
            TextColumnBuilder::scratch(&w, "scratch-texts").unwrap(),
        ] {
            for t in &texts {
                b.push(t).unwrap();
            }
            assert_eq!(b.len(), texts.len());
            let mapped = matches!(b.sink, Sink::Scratch { .. });
            let mut c = b.finish().unwrap();
            assert_eq!(c.is_mapped(), mapped);
            if mapped {
                assert!(
                    !w.staging_dir().join("scratch-texts").exists(),
                    "the scratch file is gone once mapped"
                );
            }
            assert_eq!(c.len(), texts.len());
            for (i, t) in texts.iter().enumerate() {
                assert_eq!(c.get(i), t);
            }
            c.release();
            assert_eq!(c.get(1), texts[1], "a released page reads back the same");
            // Reversed, every other entry.
            c.reorder((0..texts.len()).rev().step_by(2));
            assert_eq!(c.len(), texts.len() / 2);
            for (i, j) in (0..texts.len()).rev().step_by(2).enumerate() {
                assert_eq!(c.get(i), texts[j]);
            }
        }
        let empty = TextColumnBuilder::scratch(&w, "empty").unwrap();
        let empty = empty.finish().unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.num_bytes(), 0);
    }

    #[test]
    fn a_second_scratch_column_of_one_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let w = RunWriter::create(&layout, &crate::format::new_run_id()).unwrap();
        let _first = TextColumnBuilder::scratch(&w, "scratch-texts").unwrap();
        let err = TextColumnBuilder::scratch(&w, "scratch-texts").unwrap_err();
        assert!(
            matches!(err, EngineError::Io { .. }),
            "an existing file is an I/O error: {err:?}"
        );
    }
}
