//! Zero-copy access to Arrow IPC files through memory maps. The only `unsafe` of the crate.
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

/// Decodes every record batch of the Arrow IPC file in `buffer` without copying its data.
///
/// # Errors
/// [`EngineError::Corrupt`] naming `path` when the bytes are not a complete IPC file.
pub fn decode_ipc_file(path: &Path, buffer: &Buffer) -> Result<Vec<RecordBatch>> {
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
    let schema = try_fb_to_schema(schema).map_err(|e| undecodable("IPC schema", e))?;
    let mut decoder = FileDecoder::new(Arc::new(schema), footer.version());
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
    Ok(batches)
}
