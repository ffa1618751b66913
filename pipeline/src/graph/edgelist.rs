//! Reading edge-list files (`u<TAB>v[<TAB>w]`, optionally gzipped).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use super::csr::{CsrBuilder, Graph};
use crate::error::{PipelineError, Result};

/// Reads an undirected edge list into a [`Graph`].
///
/// # Format
/// One edge per line: `u v` or `u v w`, fields separated by tabs or spaces; `u` and `v` are
/// 0-based `u32` node ids, `w` a weight (default `1.0`). Blank lines and lines starting with `#`
/// are skipped, as is anything after a `#` on an edge line. The file may be gzip-compressed
/// (recognised by its magic bytes, whatever its name). This is the format of
/// `shared/data/graphs/*.edges.tsv.gz`.
///
/// The graph has `max id + 1` nodes, so an isolated node whose id is larger than every id in the
/// file cannot be expressed (build such a graph with [`Graph::from_edges`]). Ids are indices, not
/// labels: a file whose largest id would make more than `2 × edges + 2^20` nodes is refused
/// rather than allocated for. Duplicate, reciprocal,
/// zero-weight and self-loop edges follow the policy of [`Graph::from_edges`].
///
/// # Errors
/// * [`PipelineError::Io`] when the file cannot be opened, read or decompressed.
/// * [`PipelineError::Parse`] naming `path:line` for a line with fewer than two or more than three
///   fields, an id that is not a `u32` below `u32::MAX`, or a weight that does not parse or is NaN,
///   infinite or negative; naming the line of the largest id when ids are too sparse (above).
///
/// # Complexity
/// Time **O(|E| log d_max)**, one streaming pass over the file; memory: the edges are held once
/// while the CSR is built (8 bytes each, 16 when the file has weights other than 1).
///
/// # Examples
/// ```no_run
/// let g = agrag_pipeline::graph::read_edge_list("../shared/data/graphs/karate.edges.tsv.gz".as_ref())?;
/// assert_eq!(g.num_nodes(), 34);
/// # Ok::<(), agrag_pipeline::PipelineError>(())
/// ```
pub fn read_edge_list(path: &Path) -> Result<Graph> {
    let io_err = |source| PipelineError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = BufReader::with_capacity(1 << 16, File::open(path).map_err(io_err)?);
    let is_gzip = file.fill_buf().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
    let reader: Box<dyn BufRead> = if is_gzip {
        Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(file)))
    } else {
        Box::new(file)
    };
    let edges = parse_edges(reader, path)?;
    let num_nodes = edges.max_id.map_or(0, |(m, _)| m as usize + 1);
    // Ids are indices: a file of few edges with a huge id would allocate for every id below it
    // (4 billion nodes for one edge `0 4294967294`) before anything could be said.
    if let Some((max_id, line)) = edges.max_id
        && num_nodes > max_nodes(edges.pairs.len())
    {
        return Err(PipelineError::Parse {
            path: path.to_path_buf(),
            line,
            reason: format!(
                "node id {max_id} would make a graph of {num_nodes} nodes for {} edges: ids are \
                 0-based indices, so renumber the nodes densely (at most {} nodes for this file)",
                edges.pairs.len(),
                max_nodes(edges.pairs.len())
            ),
        });
    }
    let mut builder = CsrBuilder::new(num_nodes);
    for (i, &[u, v]) in edges.pairs.iter().enumerate() {
        builder.count(u, v, edges.weight(i));
    }
    builder.allocate();
    for (i, &[u, v]) in edges.pairs.iter().enumerate() {
        builder.place(u, v, edges.weight(i));
    }
    drop(edges);
    Ok(builder.finish())
}

/// Most nodes a file of `num_edges` edges may make: every edge could bring two new nodes, plus
/// room for up to 2^20 isolated ids in between.
fn max_nodes(num_edges: usize) -> usize {
    2 * num_edges + (1 << 20)
}

/// Parsed edges: 8 bytes per edge, plus 8 for weights only once a weight other than 1 appears.
struct Edges {
    pairs: Vec<[u32; 2]>,
    weights: Option<Vec<f64>>,
    /// The largest id and the line it first appears on.
    max_id: Option<(u32, u64)>,
}

impl Edges {
    #[inline]
    fn weight(&self, i: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[i])
    }
}

/// Parses edge lines from `reader`; weights are validated here so errors carry the line.
fn parse_edges(mut reader: impl BufRead, path: &Path) -> Result<Edges> {
    let mut edges = Edges {
        pairs: Vec::new(),
        weights: None,
        max_id: None,
    };
    let mut line = Vec::with_capacity(128);
    let mut line_no = 0u64;
    loop {
        line.clear();
        let read = reader
            .by_ref()
            .read_until(b'\n', &mut line)
            .map_err(|source| PipelineError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if read == 0 {
            break;
        }
        line_no += 1;
        let content = match line.iter().position(|&b| b == b'#') {
            Some(i) => &line[..i],
            None => &line[..],
        };
        let mut fields = content
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let Some(first) = fields.next() else { continue };
        let parse_error = |reason: String| PipelineError::Parse {
            path: path.to_path_buf(),
            line: line_no,
            reason,
        };
        let Some(second) = fields.next() else {
            return Err(parse_error("expected `u v [w]`, found one field".into()));
        };
        let u = parse_id(first).ok_or_else(|| parse_error(bad_id(first)))?;
        let v = parse_id(second).ok_or_else(|| parse_error(bad_id(second)))?;
        let w = match fields.next() {
            None => 1.0,
            Some(f) => {
                let text = String::from_utf8_lossy(f);
                let w: f64 = text
                    .parse()
                    .map_err(|_| parse_error(format!("weight {text:?} is not a number")))?;
                if !w.is_finite() || w < 0.0 {
                    return Err(parse_error(format!(
                        "weight {w} of edge {u} -- {v} is not a finite non-negative number"
                    )));
                }
                w
            }
        };
        if fields.next().is_some() {
            return Err(parse_error(
                "expected `u v [w]`, found more than three fields".into(),
            ));
        }
        if w != 1.0 && edges.weights.is_none() {
            edges.weights = Some(vec![1.0; edges.pairs.len()]);
        }
        if edges.max_id.is_none_or(|(m, _)| u.max(v) > m) {
            edges.max_id = Some((u.max(v), line_no));
        }
        edges.pairs.push([u, v]);
        if let Some(ws) = &mut edges.weights {
            ws.push(w);
        }
    }
    Ok(edges)
}

fn bad_id(field: &[u8]) -> String {
    format!(
        "node id {:?} is not an integer from 0 to 4294967294",
        String::from_utf8_lossy(field)
    )
}

/// Parses a decimal `u32` below `u32::MAX` (so that `id + 1` nodes fit in `u32`).
fn parse_id(field: &[u8]) -> Option<u32> {
    if field.is_empty() || field.len() > 10 {
        return None;
    }
    let mut x: u64 = 0;
    for &b in field {
        if !b.is_ascii_digit() {
            return None;
        }
        x = x * 10 + u64::from(b - b'0');
    }
    u32::try_from(x).ok().filter(|&x| x < u32::MAX)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str, gzip: bool) -> std::path::PathBuf {
        let path = dir.path().join(name);
        let mut file = File::create(&path).unwrap();
        if gzip {
            let mut enc = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
            enc.write_all(text.as_bytes()).unwrap();
            enc.finish().unwrap();
        } else {
            file.write_all(text.as_bytes()).unwrap();
        }
        path
    }

    #[test]
    fn plain_and_gzip_give_the_same_graph() {
        let dir = tempfile::tempdir().unwrap();
        let text = "# header\n0\t1\n1 2 2.5\n\n  2\t0\t1 # trailing comment\n3 3 1\n";
        let a = read_edge_list(&write(&dir, "a.tsv", text, false)).unwrap();
        let b = read_edge_list(&write(&dir, "b.tsv", text, true)).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.num_nodes(), 4);
        assert_eq!(a.num_edges(), 4);
        assert_eq!(a.total_weight(), 5.5);
    }

    #[test]
    fn errors_name_path_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("0 1\n7\n", 2, "one field"),
            ("0 1\n0 x\n", 2, "node id \"x\""),
            ("# c\n0 1 nan\n", 2, "weight NaN"),
            ("0 1 -2\n", 1, "weight -2"),
            ("0 1 inf\n", 1, "weight inf"),
            ("0 1 1 1\n", 1, "more than three"),
            ("0 4294967295\n", 1, "node id"),
            // Sparse ids: refused (naming the line of the largest) before any allocation.
            (
                "0 1\n# c\n5 4294967294\n2 3\n",
                3,
                "renumber the nodes densely",
            ),
        ];
        for (text, line, needle) in cases {
            let path = write(&dir, "e.tsv", text, false);
            let err = read_edge_list(&path).unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("{}:{line}: ", path.display())) && msg.contains(needle),
                "{text:?} gave {msg}"
            );
        }
        let missing = dir.path().join("missing.tsv");
        assert!(matches!(
            read_edge_list(&missing),
            Err(PipelineError::Io { .. })
        ));
    }

    #[test]
    fn empty_file_is_an_empty_graph() {
        let dir = tempfile::tempdir().unwrap();
        let g = read_edge_list(&write(&dir, "e.tsv", "# nothing\n", false)).unwrap();
        assert_eq!(g.num_nodes(), 0);
    }
}
