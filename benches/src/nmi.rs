//! Normalised mutual information between two partitions, and ground-truth files.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Normalised mutual information `2·I(A;B) / (H(A) + H(B))` (arithmetic normalisation, the
/// default of scikit-learn's `normalized_mutual_info_score`), in `[0, 1]`. Two single-community
/// partitions give 1.
///
/// # Panics
/// When the partitions have different lengths.
#[track_caller]
pub fn nmi(a: &[u32], b: &[u32]) -> f64 {
    assert_eq!(a.len(), b.len(), "partitions of different sizes");
    let n = a.len() as f64;
    if a.is_empty() {
        return 1.0;
    }
    let mut joint: HashMap<(u32, u32), f64> = HashMap::new();
    let mut ca: HashMap<u32, f64> = HashMap::new();
    let mut cb: HashMap<u32, f64> = HashMap::new();
    for (&x, &y) in a.iter().zip(b) {
        *joint.entry((x, y)).or_default() += 1.0;
        *ca.entry(x).or_default() += 1.0;
        *cb.entry(y).or_default() += 1.0;
    }
    let entropy =
        |c: &HashMap<u32, f64>| -> f64 { c.values().map(|&k| -(k / n) * (k / n).ln()).sum() };
    let (ha, hb) = (entropy(&ca), entropy(&cb));
    if ha + hb == 0.0 {
        return 1.0;
    }
    let mut mi = 0.0;
    for (&(x, y), &k) in &joint {
        mi += (k / n) * ((k * n) / (ca[&x] * cb[&y])).ln();
    }
    (2.0 * mi / (ha + hb)).clamp(0.0, 1.0)
}

/// Reads a `node<TAB>community` file (optionally gzipped, `#` comments) into a label per node of
/// `0..num_nodes`; nodes missing from the file get a fresh singleton label each.
///
/// # Errors
/// A message naming the file and line.
pub fn read_ground_truth(path: &Path, num_nodes: usize) -> Result<Vec<u32>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut labels = vec![u32::MAX; num_nodes];
    for (i, line) in BufReader::new(reader).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        let (Some(node), Some(label)) = (fields.next(), fields.next()) else {
            continue;
        };
        let bad = || format!("{}:{}: expected `node community`", path.display(), i + 1);
        let node: usize = node.parse().map_err(|_| bad())?;
        let label: u32 = label.parse().map_err(|_| bad())?;
        if node < num_nodes {
            labels[node] = label;
        }
    }
    let mut next = labels
        .iter()
        .filter(|&&l| l != u32::MAX)
        .max()
        .map_or(0, |m| m + 1);
    for l in &mut labels {
        if *l == u32::MAX {
            *l = next;
            next += 1;
        }
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nmi_extremes() {
        assert!((nmi(&[0, 0, 1, 1], &[5, 5, 7, 7]) - 1.0).abs() < 1e-12);
        assert!(nmi(&[0, 0, 1, 1], &[0, 1, 0, 1]).abs() < 1e-12);
        let x = nmi(&[0, 0, 0, 1, 1, 1], &[0, 0, 1, 1, 1, 1]);
        assert!(x > 0.2 && x < 0.9);
    }
}
