//! How many of the run's passages and documents are hidden, superseded or deleted now, from
//! the live flags in `<root>/visibility.sqlite`.
//!
//! A passage counts under its effective state, the more restrictive of its own flag and its
//! document's (as queries apply them), so a deleted document's passages count as deleted. A
//! passage's document and position come from its id (`<document_key>#<position>`), and the
//! run's documents and passage counts from `documents.parquet`, which is read only when some
//! flag is set: passages are never read. Flags naming a document or passage this run does not
//! hold (flags outlive runs) are counted apart.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::{StringArray, UInt32Array};

use super::progress::Progress;
use super::read::{Table, projection};
use super::{StateCounts, VisibilityFigures};
use crate::error::Result;
use crate::format::reader::column_no_nulls;
use crate::format::tables::documents;
use crate::visibility::{Target, Visibility, VisibilityStore};

impl StateCounts {
    fn add(&mut self, state: Visibility, n: i64) {
        let slot = match state {
            Visibility::Visible => return,
            Visibility::Hidden => &mut self.hidden,
            Visibility::Superseded => &mut self.superseded,
            Visibility::Deleted => &mut self.deleted,
        };
        *slot = slot.saturating_add_signed(n);
    }
}

/// The visibility figures of the run in `dir` against the store at `store_path` (absent: no
/// flag is set, and nothing is created).
///
/// # Errors
/// [`EngineError::Visibility`](crate::EngineError::Visibility) when the store cannot be read;
/// as [`Table::open`] for `documents.parquet`.
pub(crate) fn count(
    store_path: &Path,
    dir: &Path,
    run_id: &str,
    progress: &Progress,
) -> Result<VisibilityFigures> {
    let mut out = VisibilityFigures {
        store_present: store_path.is_file(),
        ..VisibilityFigures::default()
    };
    if !out.store_present {
        return Ok(out);
    }
    let flags = VisibilityStore::open(store_path)?.list()?;
    if flags.is_empty() {
        return Ok(out);
    }
    // Documents whose passage count is needed: flagged ones, and those of flagged passages.
    let mut document_flag: HashMap<&str, Visibility> = HashMap::new();
    let mut passage_flags: Vec<(&str, u32, Visibility)> = Vec::new();
    let mut needed: HashMap<&str, Option<u32>> = HashMap::new();
    for f in &flags {
        match f.target {
            Target::Document => {
                out.document_flags.add(f.state, 1);
                document_flag.insert(&f.key, f.state);
                needed.insert(&f.key, None);
            }
            Target::Passage => {
                out.passage_flags.add(f.state, 1);
                match f
                    .key
                    .rsplit_once('#')
                    .and_then(|(d, p)| Some((d, p.parse::<u32>().ok()?)))
                {
                    Some((doc, position)) => {
                        passage_flags.push((doc, position, f.state));
                        needed.insert(doc, None);
                    }
                    None => out.flags_outside_run += 1,
                }
            }
        }
    }
    let wanted = projection(
        &documents::schema(),
        &[documents::DOCUMENT_KEY, documents::NUM_PASSAGES],
    );
    Table::open(dir, documents::FILE, &wanted, run_id)?.for_each(progress, |b, path| {
        let keys = column_no_nulls::<StringArray>(b, documents::DOCUMENT_KEY, path)?;
        let counts = column_no_nulls::<UInt32Array>(b, documents::NUM_PASSAGES, path)?;
        for i in 0..b.num_rows() {
            if let Some(slot) = needed.get_mut(keys.value(i)) {
                *slot = Some(counts.value(i));
            }
        }
        Ok(())
    })?;
    for (&doc, &state) in &document_flag {
        match needed.get(doc).copied().flatten() {
            Some(num_passages) => {
                out.documents.add(state, 1);
                out.passages.add(state, i64::from(num_passages));
            }
            None => out.flags_outside_run += 1,
        }
    }
    for &(doc, position, own) in &passage_flags {
        match needed.get(doc).copied().flatten() {
            Some(num_passages) if position < num_passages => {
                let inherited = document_flag
                    .get(doc)
                    .copied()
                    .unwrap_or(Visibility::Visible);
                if own > inherited {
                    out.passages.add(inherited, -1);
                    out.passages.add(own, 1);
                }
            }
            _ => out.flags_outside_run += 1,
        }
    }
    Ok(out)
}
