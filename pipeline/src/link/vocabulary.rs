//! Vocabulary loading: `concepts.tsv` + `broader.tsv` → [`Vocabulary`].

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use agrag_engine::format::normalize::normalize_term;

use crate::error::{PipelineError, Result};

/// File of concepts inside a vocabulary folder.
pub const CONCEPTS_FILE: &str = "concepts.tsv";
/// File of broader edges inside a vocabulary folder.
pub const BROADER_FILE: &str = "broader.tsv";
/// Relation name of broader/narrower edges.
pub const SUBCLASS_OF: &str = "subclass_of";

/// One vocabulary entry (a MeSH descriptor, say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Concept {
    /// Concept id, e.g. `D009203`.
    pub id: String,
    /// Preferred term, e.g. `Myocardial Infarction`.
    pub preferred_term: String,
    /// Entry terms.
    pub synonyms: Vec<String>,
}

/// A cycle found in the broader graph, and the edge dropped to break it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BrokenCycle {
    /// Concept ids on the cycle, starting at the dropped edge's parent and ending at its child.
    pub concepts: Vec<String>,
    /// The dropped edge `(child, parent)`.
    pub dropped_edge: (String, String),
}

/// A controlled vocabulary with a broader/narrower hierarchy (a DAG after cycle breaking).
#[derive(Debug, Clone)]
pub struct Vocabulary {
    /// Concepts in file order; a concept's index is its position here.
    pub concepts: Vec<Concept>,
    /// `(child, parent)` edges by concept index, sorted, deduplicated, acyclic.
    pub broader: Vec<(u32, u32)>,
    /// Cycles that were broken, in the order found.
    pub broken_cycles: Vec<BrokenCycle>,
    /// The folder it was read from.
    pub source: PathBuf,
    /// BLAKE3 digest (hex) of both files' bytes.
    pub fingerprint: String,
    index: HashMap<String, u32>,
}

impl Vocabulary {
    /// Builds a vocabulary from concepts and `(child_id, parent_id)` edges, breaking cycles.
    ///
    /// # Errors
    /// [`PipelineError::Parse`] for an edge naming an unknown concept (line = 1-based edge
    /// index + 1, as in a file with a header); [`PipelineError::DuplicateKey`] for a repeated id.
    pub fn from_parts(
        concepts: Vec<Concept>,
        edges: &[(String, String)],
        source: PathBuf,
    ) -> Result<Self> {
        let mut index = HashMap::with_capacity(concepts.len());
        for (i, c) in concepts.iter().enumerate() {
            let i = u32::try_from(i)
                .map_err(|_| PipelineError::Internal("too many concepts".into()))?;
            if let Some(first) = index.insert(c.id.clone(), i) {
                return Err(PipelineError::DuplicateKey {
                    path: source.join(CONCEPTS_FILE),
                    line: u64::from(i) + 2,
                    first_line: u64::from(first) + 2,
                    field: "concept_id",
                    value: c.id.clone(),
                });
            }
        }
        let mut broader = Vec::with_capacity(edges.len());
        for (k, (child, parent)) in edges.iter().enumerate() {
            let lookup = |id: &str, field: &str| {
                index.get(id).copied().ok_or_else(|| PipelineError::Parse {
                    path: source.join(BROADER_FILE),
                    line: k as u64 + 2,
                    reason: format!("{field} {id:?} is not a concept of {CONCEPTS_FILE}"),
                })
            };
            let c = lookup(child, "child_id")?;
            let p = lookup(parent, "parent_id")?;
            if c != p {
                broader.push((c, p));
            }
        }
        broader.sort_unstable();
        broader.dedup();
        let mut vocab = Self {
            concepts,
            broader,
            broken_cycles: Vec::new(),
            source,
            fingerprint: String::new(),
            index,
        };
        vocab.break_cycles();
        Ok(vocab)
    }

    /// Number of concepts.
    pub fn len(&self) -> usize {
        self.concepts.len()
    }

    /// Whether there are no concepts.
    pub fn is_empty(&self) -> bool {
        self.concepts.is_empty()
    }

    /// Index of the concept with id `id`.
    pub fn index_of(&self, id: &str) -> Option<u32> {
        self.index.get(id).copied()
    }

    /// The direct broader concepts (parents) of concept `child`, ascending.
    ///
    /// # Complexity
    /// * Time: **O(log |E|)** to find them (binary search in the sorted edge list).
    pub fn parents(&self, child: u32) -> impl Iterator<Item = u32> + '_ {
        let from = self.broader.partition_point(|&(c, _)| c < child);
        self.broader[from..]
            .iter()
            .take_while(move |&&(c, _)| c == child)
            .map(|&(_, p)| p)
    }

    /// Every broader concept of `child` at any distance (not `child` itself), ascending.
    ///
    /// # Complexity
    /// * Time: **O(A · log |E|)** for `A` ancestors.
    pub fn ancestors(&self, child: u32) -> Vec<u32> {
        let mut seen: Vec<u32> = Vec::new();
        let mut stack: Vec<u32> = self.parents(child).collect();
        while let Some(p) = stack.pop() {
            if !seen.contains(&p) {
                seen.push(p);
                stack.extend(self.parents(p));
            }
        }
        seen.sort_unstable();
        seen
    }

    /// Drops, deterministically, one edge of every cycle: a depth-first search from each
    /// concept in index order, following parents in ascending order; an edge that reaches a
    /// concept on the current path closes a cycle and is dropped (and recorded).
    fn break_cycles(&mut self) {
        let n = self.concepts.len();
        let mut parents: Vec<Vec<u32>> = vec![Vec::new(); n];
        for &(c, p) in &self.broader {
            parents[c as usize].push(p);
        }
        // 0 = unvisited, 1 = on the path, 2 = done.
        let mut state = vec![0u8; n];
        let mut dropped = Vec::new();
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            let mut stack: Vec<(u32, usize)> = vec![(start as u32, 0)];
            state[start] = 1;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                let ps = &parents[node as usize];
                if *next < ps.len() {
                    let p = ps[*next];
                    *next += 1;
                    match state[p as usize] {
                        0 => {
                            state[p as usize] = 1;
                            stack.push((p, 0));
                        }
                        1 => {
                            let from = stack.iter().position(|&(x, _)| x == p).unwrap_or(0);
                            let concepts = stack[from..]
                                .iter()
                                .map(|&(x, _)| self.concepts[x as usize].id.clone())
                                .collect();
                            dropped.push((node, p));
                            self.broken_cycles.push(BrokenCycle {
                                concepts,
                                dropped_edge: (
                                    self.concepts[node as usize].id.clone(),
                                    self.concepts[p as usize].id.clone(),
                                ),
                            });
                        }
                        _ => {}
                    }
                } else {
                    state[node as usize] = 2;
                    stack.pop();
                }
            }
        }
        if !dropped.is_empty() {
            dropped.sort_unstable();
            self.broader.retain(|e| dropped.binary_search(e).is_err());
        }
    }
}

/// Term string → concept, for resolving heading names such as a document's own `mesh` field.
///
/// Terms are compared by their [`normalize_term`] key (case, Unicode form and spacing
/// ignored), as the engine looks up query terms. A preferred term wins over a synonym; among
/// synonyms the first concept in file order wins.
#[derive(Debug, Clone)]
pub struct TermIndex {
    map: HashMap<String, u32>,
}

impl TermIndex {
    /// Indexes every preferred term and synonym of `vocab`.
    pub fn new(vocab: &Vocabulary) -> Self {
        let mut map: HashMap<String, u32> = HashMap::new();
        for (i, c) in vocab.concepts.iter().enumerate() {
            for s in &c.synonyms {
                map.entry(normalize_term(s)).or_insert(i as u32);
            }
        }
        for (i, c) in vocab.concepts.iter().enumerate() {
            map.insert(normalize_term(&c.preferred_term), i as u32);
        }
        Self { map }
    }

    /// The concept named `term`, if any.
    pub fn get(&self, term: &str) -> Option<u32> {
        self.map.get(&normalize_term(term)).copied()
    }
}

/// Reads a vocabulary folder: `concepts.tsv` (`concept_id`, `preferred_term`, `synonyms`
/// separated by `|`) and `broader.tsv` (`child_id`, `parent_id`), each with a header row;
/// columns are found by name.
///
/// # Errors
/// [`PipelineError::Io`] for a missing file; [`PipelineError::Parse`] for a missing column, a
/// short row or an edge to an unknown concept (naming file and line);
/// [`PipelineError::DuplicateKey`] for a repeated concept id; [`PipelineError::EmptyInput`]
/// when there is no concept.
pub fn load_vocabulary(dir: &Path) -> Result<Vocabulary> {
    let open = |name: &str| {
        let path = dir.join(name);
        std::fs::File::open(&path)
            .map(BufReader::new)
            .map_err(|e| PipelineError::Io { path, source: e })
    };
    parse_vocabulary(open(CONCEPTS_FILE)?, open(BROADER_FILE)?, dir)
}

/// Reads a vocabulary from the contents of its two files; `dir` names the folder in errors.
/// Same format and errors as [`load_vocabulary`]. Never panics, whatever the bytes (fuzzed).
///
/// # Errors
/// As [`load_vocabulary`].
pub fn parse_vocabulary(
    concepts: impl BufRead,
    broader: impl BufRead,
    dir: &Path,
) -> Result<Vocabulary> {
    let mut hasher = blake3::Hasher::new();
    let concepts_path = dir.join(CONCEPTS_FILE);
    let rows = read_tsv(
        concepts,
        &concepts_path,
        &["concept_id", "preferred_term", "synonyms"],
        &mut hasher,
    )?;
    let mut concepts = Vec::with_capacity(rows.len());
    for (line, row) in rows {
        let [id, term, syn] = <[String; 3]>::try_from(row)
            .map_err(|_| PipelineError::Internal("read_tsv returned a short row".into()))?;
        if id.is_empty() || term.is_empty() {
            return Err(PipelineError::Parse {
                path: concepts_path.clone(),
                line,
                reason: "concept_id and preferred_term must not be empty".into(),
            });
        }
        let synonyms = syn
            .split('|')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        concepts.push(Concept {
            id,
            preferred_term: term,
            synonyms,
        });
    }
    if concepts.is_empty() {
        return Err(PipelineError::EmptyInput {
            path: concepts_path,
            reason: "the vocabulary holds no concept".into(),
        });
    }
    let broader_path = dir.join(BROADER_FILE);
    let edges: Vec<(String, String)> = read_tsv(
        broader,
        &broader_path,
        &["child_id", "parent_id"],
        &mut hasher,
    )?
    .into_iter()
    .map(|(_, mut r)| {
        let p = r.pop().unwrap_or_default();
        let c = r.pop().unwrap_or_default();
        (c, p)
    })
    .collect();
    let mut vocab = Vocabulary::from_parts(concepts, &edges, dir.to_owned())?;
    vocab.fingerprint = hasher.finalize().to_hex().to_string();
    Ok(vocab)
}

/// Reads a TSV with a header, returning `(line, [columns in the order asked])` per data row.
fn read_tsv(
    reader: impl BufRead,
    path: &Path,
    columns: &[&str],
    hasher: &mut blake3::Hasher,
) -> Result<Vec<(u64, Vec<String>)>> {
    let mut lines = reader.lines();
    let parse = |line: u64, reason: String| PipelineError::Parse {
        path: path.to_owned(),
        line,
        reason,
    };
    let header = match lines.next() {
        Some(h) => h.map_err(|e| parse(1, e.to_string()))?,
        None => return Err(parse(1, "empty file: expected a header row".into())),
    };
    hasher.update(header.as_bytes());
    let names: Vec<&str> = header.split('\t').map(str::trim).collect();
    let mut idx = Vec::with_capacity(columns.len());
    for col in columns {
        idx.push(
            names.iter().position(|n| n == col).ok_or_else(|| {
                parse(1, format!("missing column {col:?} (header has {names:?})"))
            })?,
        );
    }
    let mut rows = Vec::new();
    for (i, line) in lines.enumerate() {
        let line_no = i as u64 + 2;
        let line = line.map_err(|e| parse(line_no, e.to_string()))?;
        hasher.update(b"\n");
        hasher.update(line.as_bytes());
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let mut row = Vec::with_capacity(idx.len());
        for (&j, col) in idx.iter().zip(columns) {
            match fields.get(j) {
                Some(v) => row.push(v.trim().to_owned()),
                None if *col == "synonyms" => row.push(String::new()),
                None => return Err(parse(line_no, format!("row has no {col:?} column"))),
            }
        }
        rows.push((line_no, row));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str) -> Concept {
        Concept {
            id: id.into(),
            preferred_term: id.into(),
            synonyms: vec![],
        }
    }

    #[test]
    fn cycle_is_broken_and_reported() {
        let edges: Vec<(String, String)> = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
            .iter()
            .map(|(x, y)| ((*x).into(), (*y).into()))
            .collect();
        let v = Vocabulary::from_parts(vec![c("a"), c("b"), c("c"), c("d")], &edges, "v".into())
            .unwrap();
        assert_eq!(v.broken_cycles.len(), 1);
        assert_eq!(v.broken_cycles[0].concepts, vec!["a", "b", "c"]);
        assert_eq!(v.broken_cycles[0].dropped_edge, ("c".into(), "a".into()));
        assert_eq!(v.broader, vec![(0, 1), (1, 2), (2, 3)]);
    }

    /// petgraph as the oracle of the hand-written cycle breaking: the DFS stays ours because
    /// it must record each cycle's path and drop the back edge found when parents are visited
    /// in ascending order (the documented, deterministic choice); petgraph's
    /// `depth_first_search` keeps no path and visits neighbours in reverse insertion order.
    #[test]
    fn broken_graphs_are_acyclic_by_petgraph() {
        use rand_pcg::rand_core::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        for _ in 0..50 {
            let n = 12usize;
            let concepts: Vec<Concept> = (0..n).map(|i| c(&format!("c{i}"))).collect();
            let edges: Vec<(String, String)> = (0..30)
                .map(|_| (rng.next_u64() as usize % n, rng.next_u64() as usize % n))
                .filter(|(a, b)| a != b)
                .map(|(a, b)| (format!("c{a}"), format!("c{b}")))
                .collect();
            let v = Vocabulary::from_parts(concepts, &edges, "v".into()).unwrap();
            let g = petgraph::graph::DiGraph::<(), ()>::from_edges(v.broader.iter().copied());
            assert!(!petgraph::algo::is_cyclic_directed(&g), "{:?}", v.broader);
            let dropped = v.broken_cycles.len();
            let distinct: std::collections::HashSet<_> = edges.iter().collect();
            assert_eq!(v.broader.len() + dropped, distinct.len());
        }
    }

    #[test]
    fn unknown_parent_and_duplicate_id() {
        let e = Vocabulary::from_parts(vec![c("a")], &[("a".into(), "zz".into())], "v".into())
            .unwrap_err()
            .to_string();
        assert!(e.contains("broader.tsv:2: parent_id \"zz\""), "{e}");
        let e = Vocabulary::from_parts(vec![c("a"), c("a")], &[], "v".into())
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate concept_id \"a\""), "{e}");
    }

    #[test]
    fn missing_column_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONCEPTS_FILE),
            "id\tpreferred_term\tsynonyms\nD1\tX\t\n",
        )
        .unwrap();
        std::fs::write(dir.path().join(BROADER_FILE), "child_id\tparent_id\n").unwrap();
        let e = load_vocabulary(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("concepts.tsv:1: missing column \"concept_id\""),
            "{e}"
        );
    }
}
