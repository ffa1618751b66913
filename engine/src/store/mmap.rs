//! Zero-copy access to Arrow IPC files through memory maps, and scratch files mapped while a
//! run is written (see [`crate::format::staged`]). The only `unsafe` of the crate.
#![allow(unsafe_code)]

use std::fs::File;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::convert::try_fb_to_schema;
use arrow_ipc::reader::{FileDecoder, read_footer_length};
use arrow_ipc::root_as_footer;
use arrow_schema::SchemaRef;

use crate::error::{EngineError, Result};

/// Maps `path` read-only and returns it as an Arrow buffer that keeps the map alive.
///
/// # Errors
/// [`EngineError::Io`] when the file cannot be opened or mapped.
pub fn map_file(path: &Path) -> Result<Buffer> {
    let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
    // SAFETY: snapshot files are write-once; we never truncate or rewrite them, and a run is
    // only removed by `gc` as a whole folder (unlinking keeps an existing map valid).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| EngineError::io(path, e))?;
    let len = map.len();
    if len == 0 {
        return Ok(Buffer::from_vec(Vec::<u8>::new()));
    }
    let map = Arc::new(map);
    let ptr = NonNull::new(map.as_ptr().cast_mut())
        .ok_or_else(|| EngineError::Internal("memory map returned a null pointer".into()))?;
    // SAFETY: `ptr` points to `len` readable bytes owned by `map`, which the buffer keeps alive
    // through the `Arc` until the last slice of it is dropped; the bytes are never written.
    Ok(unsafe { Buffer::from_custom_allocation(ptr, len, map) })
}

/// Granularity of [`release`]: 64 KiB, a multiple of every page size Linux uses (4, 16 and
/// 64 KiB), so a released range is always page-aligned.
const RELEASE_ALIGN: usize = 64 * 1024;

/// Maps the scratch file `path` read-only, then removes it: the map keeps its bytes until the
/// last clone of the returned map (and of the buffer, which holds one) is dropped, and a run
/// folder never holds the file, even if the process dies. Returns the file's bytes as an
/// Arrow buffer and the map, for [`release`].
///
/// # Errors
/// [`EngineError::Io`] when the file cannot be opened, mapped or removed.
pub fn map_scratch(path: &Path) -> Result<(Buffer, Arc<memmap2::Mmap>)> {
    let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
    // SAFETY: the scratch file is written by this process before it is mapped and never
    // after; it is removed right here, so no one else can write or truncate it.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| EngineError::io(path, e))?;
    std::fs::remove_file(path).map_err(|e| EngineError::io(path, e))?;
    let map = Arc::new(map);
    let len = map.len();
    if len == 0 {
        return Ok((Buffer::from_vec(Vec::<u8>::new()), map));
    }
    let ptr = NonNull::new(map.as_ptr().cast_mut())
        .ok_or_else(|| EngineError::Internal("memory map returned a null pointer".into()))?;
    // SAFETY: as in `map_file`: `len` readable bytes owned by `map`, kept alive by the `Arc`
    // the buffer holds, never written.
    let buffer = unsafe { Buffer::from_custom_allocation(ptr, len, map.clone()) };
    Ok((buffer, map))
}

/// Drops the pages of `map` from the 64 KiB block holding the start of `bytes` to the last
/// block that ends inside them from this process's resident set (`madvise(MADV_DONTNEED)`),
/// so that a writer streaming a mapped scratch file in order, releasing each range once it
/// has read it, holds only what it reads next. Nothing is lost: a later read of a dropped
/// page faults it in again from the page cache or the file. Does nothing for bytes outside
/// the map, and ignores the kernel's refusal (the pages then stay resident).
pub fn release(map: &memmap2::Mmap, bytes: &[u8]) {
    let base = map.as_ptr() as usize;
    let (start, end) = (
        bytes.as_ptr() as usize,
        bytes.as_ptr() as usize + bytes.len(),
    );
    if start < base || end > base + map.len() {
        return;
    }
    let first = (start - base) / RELEASE_ALIGN * RELEASE_ALIGN;
    let last = (end - base) / RELEASE_ALIGN * RELEASE_ALIGN;
    if last <= first {
        return;
    }
    // SAFETY: the map is a read-only, shared map of a file no one writes: dropping its pages
    // loses nothing, and every later access reads the same bytes back from the file.
    let _ = unsafe {
        map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, first, last - first)
    };
}

/// Decodes every record batch of the Arrow IPC file in `buffer` without copying its data.
///
/// # Errors
/// [`EngineError::Corrupt`] naming `path` when the bytes are not a complete IPC file.
pub fn decode_ipc_file(path: &Path, buffer: &Buffer) -> Result<Vec<RecordBatch>> {
    decode_ipc_file_with_schema(path, buffer).map(|(_, batches)| batches)
}

/// [`decode_ipc_file`], also returning the file's schema as its footer gives it (with its
/// metadata), which a file without record batches has too.
///
/// # Errors
/// As [`decode_ipc_file`].
pub fn decode_ipc_file_with_schema(
    path: &Path,
    buffer: &Buffer,
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let corrupt = |reason: String| EngineError::corrupt(path, reason);
    let undecodable =
        |what: &str, e: arrow_schema::ArrowError| EngineError::corrupt_because(path, what, e);
    if buffer.len() < 10 + 8 {
        return Err(corrupt(format!(
            "{} bytes is too short for an Arrow IPC file",
            buffer.len()
        )));
    }
    let trailer_start = buffer.len() - 10;
    let trailer: [u8; 10] = buffer[trailer_start..]
        .try_into()
        .map_err(|_| corrupt("cannot read the IPC trailer".into()))?;
    let footer_len = read_footer_length(trailer).map_err(|e| undecodable("IPC trailer", e))?;
    if footer_len > trailer_start {
        return Err(corrupt("IPC footer length exceeds the file".into()));
    }
    let footer = root_as_footer(&buffer[trailer_start - footer_len..trailer_start])
        .map_err(|e| corrupt(format!("IPC footer: {e}")))?;
    let schema = footer
        .schema()
        .ok_or_else(|| corrupt("IPC footer has no schema".into()))?;
    let schema = Arc::new(try_fb_to_schema(schema).map_err(|e| undecodable("IPC schema", e))?);
    let mut decoder = FileDecoder::new(schema.clone(), footer.version());
    for block in footer.dictionaries().iter().flatten() {
        let len = block.bodyLength() as usize + block.metaDataLength() as usize;
        let start =
            usize::try_from(block.offset()).map_err(|_| corrupt("negative block offset".into()))?;
        if start.checked_add(len).is_none_or(|end| end > buffer.len()) {
            return Err(corrupt("dictionary block exceeds the file".into()));
        }
        decoder
            .read_dictionary(block, &buffer.slice_with_length(start, len))
            .map_err(|e| undecodable("IPC dictionary", e))?;
    }
    let mut batches = Vec::new();
    for block in footer.recordBatches().iter().flatten() {
        let len = block.bodyLength() as usize + block.metaDataLength() as usize;
        let start =
            usize::try_from(block.offset()).map_err(|_| corrupt("negative block offset".into()))?;
        if start.checked_add(len).is_none_or(|end| end > buffer.len()) {
            return Err(corrupt("record batch block exceeds the file".into()));
        }
        if let Some(batch) = decoder
            .read_record_batch(block, &buffer.slice_with_length(start, len))
            .map_err(|e| undecodable("IPC record batch", e))?
        {
            batches.push(batch);
        }
    }
    Ok((schema, batches))
}
