//! Seeded generators of benchmark inputs (never committed: the benches make them on the fly),
//! the scale benches' corpus generator ([`corpus`]), child-process measurement
//! ([`child_watch`]) and the machine's GEMM rate ([`gemm_rate`]).

pub mod child_watch;
pub mod corpus;
pub mod gemm_rate;

use agrag_pipeline::graph::Graph;

/// A xorshift64* stream; good enough for generating inputs.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A stream from `seed` (any value).
    pub fn new(seed: u64) -> Self {
        XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A planted-partition graph: `num_nodes` nodes in `num_blocks` blocks of equal size; every node
/// draws `internal_degree` neighbors inside its block and `external_degree` anywhere (so the
/// mixing is about `external / (internal + external)`), unit weights. Returns the graph and the
/// block of each node.
///
/// # Panics
/// When `num_blocks` is 0 or larger than `num_nodes`.
#[track_caller]
pub fn planted_partition(
    num_nodes: u32,
    num_blocks: u32,
    internal_degree: u32,
    external_degree: u32,
    seed: u64,
) -> (Graph, Vec<u32>) {
    assert!(num_blocks > 0 && num_blocks <= num_nodes, "bad block count");
    let mut rng = XorShift::new(seed);
    let block_size = num_nodes.div_ceil(num_blocks);
    let truth: Vec<u32> = (0..num_nodes).map(|v| v / block_size).collect();
    let mut edges =
        Vec::with_capacity((num_nodes * (internal_degree + external_degree) / 2) as usize);
    for v in 0..num_nodes {
        let start = truth[v as usize] * block_size;
        let end = (start + block_size).min(num_nodes);
        for _ in 0..internal_degree.div_ceil(2) {
            let u = start + rng.below(u64::from(end - start)) as u32;
            if u != v {
                edges.push((v, u, 1.0));
            }
        }
        for _ in 0..external_degree.div_ceil(2) {
            let u = rng.below(u64::from(num_nodes)) as u32;
            if u != v {
                edges.push((v, u, 1.0));
            }
        }
    }
    let graph = Graph::from_edges(num_nodes as usize, &edges).expect("generated edges are valid");
    (graph, truth)
}

/// A synthetic run of `num_documents` documents for open-cost benches: 3 passages per
/// document, one entity per 2 documents (each mentioned by 24 passages, so 8 mentions per
/// passage on average), one level-0 community of 5 entities per 10 documents with its report,
/// 1,000 concepts in a chain, document and report embeddings of `dim` values. About 20 rows
/// per document over all tables.
///
/// # Panics
/// When `num_documents` is not a positive multiple of 10.
#[track_caller]
pub fn synthetic_run(
    num_documents: usize,
    dim: usize,
    rng: &mut XorShift,
) -> agrag_engine::format::RunData {
    synthetic_run_with_passages(num_documents, 3, dim, rng)
}

/// [`synthetic_run`] with `passages_per_document` passages per document instead of 3 (the
/// same run for 3), to reach 10⁷ passages without 3.3 × 10⁶ documents' embeddings.
///
/// # Panics
/// When `num_documents` is not a positive multiple of 10 or `passages_per_document` is 0.
#[track_caller]
pub fn synthetic_run_with_passages(
    num_documents: usize,
    passages_per_document: usize,
    dim: usize,
    rng: &mut XorShift,
) -> agrag_engine::format::RunData {
    use agrag_engine::format::tables::{
        CommunityRecord, ConceptRecord, DocumentRecord, EntityRecord, MembershipRecord,
        PassageRecord, ReportRecord,
    };
    assert!(
        num_documents > 0 && num_documents.is_multiple_of(10),
        "num_documents must be a positive multiple of 10"
    );
    let key = |d: usize| format!("doc{d:09}");
    assert!(
        passages_per_document > 0,
        "passages_per_document must be positive"
    );
    let ppd = passages_per_document;
    let num_passages = ppd * num_documents;
    let num_entities = num_documents / 2;
    let mut unit = |n: usize| -> Vec<f32> {
        (0..n)
            .flat_map(|_| {
                let mut v: Vec<f32> = (0..dim)
                    .map(|_| rng.below(2001) as f32 / 1000.0 - 1.0)
                    .collect();
                agrag_engine::embed::l2_normalize(&mut v);
                v
            })
            .collect()
    };
    let report_embeddings = unit(num_documents / 10);
    let document_embeddings = unit(num_documents);
    let mut data = agrag_engine::format::RunData {
        documents: (0..num_documents)
            .map(|d| DocumentRecord {
                key: key(d),
                title: format!("title of document {d}"),
                year: Some(2000 + (d % 25) as i32),
                num_passages: ppd as u32,
                linked: true,
            })
            .collect(),
        passages: (0..num_passages)
            .map(|p| PassageRecord {
                passage_id: format!("{}#{}", key(p / ppd), p % ppd),
                document_key: key(p / ppd),
                position: (p % ppd) as u32,
                text: format!(
                    "passage {p} of document {} on topic {} with some words of text",
                    p / ppd,
                    p % 97
                ),
            })
            .collect(),
        concepts: (0..1000)
            .map(|c| ConceptRecord {
                concept_id: format!("C{c:05}"),
                preferred_term: format!("term {c}"),
                synonyms: vec![format!("synonym {c}")],
            })
            .collect(),
        concept_edges: (1..1000)
            .map(|c| {
                (
                    format!("C{c:05}"),
                    format!("C{:05}", c - 1),
                    "subclass_of".to_owned(),
                )
            })
            .collect(),
        document_concepts: (0..num_documents)
            .map(|d| ("concept".to_owned(), key(d), format!("C{:05}", d % 1000)))
            .collect(),
        report_embeddings,
        document_embeddings,
        ..Default::default()
    };
    for e in 0..num_entities {
        data.entities.push(EntityRecord {
            concept_id: format!("C{:05}", e % 1000),
            name: format!("entity {e}"),
            num_passages: 24,
            degree: 4.0,
        });
        let mut passages: Vec<String> = (0..24)
            .map(|_| {
                let p = rng.below(num_passages as u64) as usize;
                format!("{}#{}", key(p / ppd), p % ppd)
            })
            .collect();
        passages.sort();
        passages.dedup();
        for p in passages {
            data.mentions.push((e as u32, p, 1));
        }
        data.membership.push(MembershipRecord {
            level: 0,
            entity: e as u32,
            community: (e / 5) as u32,
            parent: None,
            is_leaf: true,
        });
    }
    for c in 0..num_documents / 10 {
        data.communities.push(CommunityRecord {
            level: 0,
            parent: None,
            size: 5,
            is_leaf: true,
        });
        data.reports.push(ReportRecord {
            level: 0,
            title: format!("theme {c}"),
            summary: format!("summary of theme {c}"),
            findings: vec![format!("finding of theme {c}")],
            rank: 1.0,
            full_content: format!("theme {c} full text"),
        });
        data.relationships
            .push(((5 * c) as u32, (5 * c + 1) as u32, 1.0));
    }
    data
}

/// The workspace root (the folder above `benches/`).
pub fn workspace() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}
