//! An opened, validated, immutable run: the tables the queries need, read in place.
//!
//! A run of format 2 is opened by mapping its column files ([`crate::format::mapped`]):
//! nothing proportional to the corpus is decoded or copied at open, document keys are found
//! by binary search over the mapped, sorted keys and passage ids by their rule, and a
//! passage's text is read only when an answer returns it. A run of format 1 (without those
//! files) is read from its Parquet tables into the same column types.

pub mod concept_index;
pub mod evidence;
pub mod rows;

pub use rows::{CommunityId, CommunityRow, ConceptRow, DocumentRow, EntityId, PassageRow, Rows};

use std::ops::Range;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, UInt32Type};
use arrow_array::{FixedSizeListArray, RecordBatch};

use crate::error::{EngineError, Result};
use crate::format::mapped::communities::CommunityColumns;
use crate::format::mapped::concepts::ConceptColumns;
use crate::format::mapped::documents::DocumentColumns;
use crate::format::mapped::entities::EntityColumns;
use crate::format::mapped::passages::PassageColumns;
use crate::format::mapped::terms::TermIndex;
use crate::format::mapped::{self, Primitives};
use crate::format::tables::map_embeddings;
use crate::format::tables::{
    communities, concept_edges, concept_evidence, concept_postings, concepts, document_concepts,
    document_embeddings, documents, entities, membership, mentions, passages, report_embeddings,
    report_ivf, report_sources,
};
use crate::format::{Layout, Manifest, Verify, verify_run};
use crate::ivf::IvfIndex;

pub use crate::format::mapped::Csr;

/// The vocabulary of a run, for concept queries.
#[derive(Debug, Clone)]
pub struct VocabularyTables {
    /// Concept ids and preferred terms, in `concepts.parquet` order (ascending ids); a
    /// concept's row is its index everywhere below.
    pub concepts: ConceptColumns,
    /// `(child, parent, relation)` by concept index.
    pub edges: Vec<(u32, u32, String)>,
    /// The rows of `document_concepts` per node field: `(node_field, [(document index, concept
    /// index)])`, in file order. A field may appear more than once only in a file that is not
    /// sorted by node field (tolerated).
    pub document_concepts: Vec<(String, Vec<(u32, u32)>)>,
}

/// One complete run, opened read-only. Immutable; shared between queries behind an `Arc`.
///
/// Documents, passages, entities and communities are named by typed rows ([`DocumentRow`],
/// [`PassageRow`], [`EntityId`], [`CommunityRow`]; see [`rows`]); the row views
/// [`Snapshot::document`], [`Snapshot::passage`], [`Snapshot::entity`] and
/// [`Snapshot::community`] read their fields in place from the mapped run, for example
/// `snap.passage(p).document_key()`. Keys resolve to rows by binary search
/// ([`Snapshot::document_row`], [`Snapshot::passage_row`], [`Snapshot::community_row`]). A
/// row out of range reads as empty fields (see [`crate::format::mapped`] on damage).
///
/// ```no_run
/// # fn show(engine: &agrag_engine::Engine) -> agrag_engine::Result<()> {
/// let view = engine.view()?;
/// let snap = view.snapshot().expect("a run is served");
/// let p = snap.passage_row("pmid:21645374#2").expect("a passage of the run");
/// println!("{} in {}", snap.passage(p).text(), snap.passage(p).document_key());
/// for c in snap.communities() {
///     let theme = snap.community(c);
///     let named: Vec<&str> = theme.members().iter().map(|e| snap.entity(e).name()).collect();
///     println!("theme {} (level {}): {named:?}", theme.id(), theme.level());
/// }
/// # let _ = view.is_hidden(p);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Snapshot {
    /// The run's folder.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    documents: DocumentColumns,
    passages: PassageColumns,
    entities: EntityColumns,
    communities: CommunityColumns,
    /// Inverses built on first use (only when something is hidden): passage → entities it
    /// mentions, entity → its communities, passage → communities quoting it.
    inverses: std::sync::OnceLock<Inverses>,
    /// The vocabulary tables.
    pub(crate) vocabulary: VocabularyTables,
    /// Term lookup, hierarchy and per-field postings for concept queries.
    pub(crate) concept_index: concept_index::ConceptIndex,
    /// The run's full-text index.
    pub(crate) text_index: crate::text::TextIndex,
    embeddings: RecordBatch,
    document_embeddings: RecordBatch,
    ivf: Option<IvfIndex>,
    /// Community `c`'s vectors are rows `report_offsets[c]..report_offsets[c + 1]` of the
    /// report-embedding matrix (`num_communities + 1` values).
    report_offsets: Vec<u32>,
    dim: usize,
}

/// Document row `d` of a [`Snapshot`] (see [`Snapshot::document`]).
#[derive(Debug, Clone, Copy)]
pub struct DocumentView<'a> {
    snap: &'a Snapshot,
    row: DocumentRow,
}

impl<'a> DocumentView<'a> {
    /// The row.
    pub fn row(&self) -> DocumentRow {
        self.row
    }

    /// The unique document key.
    pub fn key(&self) -> &'a str {
        self.snap.documents.keys.get(self.row.index())
    }

    /// The title (may be empty).
    pub fn title(&self) -> &'a str {
        self.snap.documents.titles.get(self.row.index())
    }

    /// The publication year, when known.
    pub fn year(&self) -> Option<i32> {
        self.snap.documents.years.get(self.row.index())
    }

    /// Whether linking found a concept in the document.
    pub fn linked(&self) -> bool {
        self.snap.documents.linked.get(self.row.index())
    }

    /// The rows of its passages, in position order (consecutive rows).
    pub fn passages(
        &self,
    ) -> impl ExactSizeIterator<Item = PassageRow> + DoubleEndedIterator + use<> {
        self.passage_range().map(PassageRow)
    }

    /// Its passages as a range of raw passage rows.
    pub(crate) fn passage_range(&self) -> Range<u32> {
        self.snap
            .documents
            .passages(self.row.index(), self.snap.num_passages())
    }
}

/// Passage row `p` of a [`Snapshot`] (see [`Snapshot::passage`]).
#[derive(Debug, Clone, Copy)]
pub struct PassageView<'a> {
    snap: &'a Snapshot,
    row: PassageRow,
}

impl<'a> PassageView<'a> {
    /// The row.
    pub fn row(&self) -> PassageRow {
        self.row
    }

    /// The row of its document.
    pub fn document(&self) -> DocumentRow {
        DocumentRow(self.snap.passages.document.value(self.row.index()))
    }

    /// Its document's key.
    pub fn document_key(&self) -> &'a str {
        self.snap.document(self.document()).key()
    }

    /// Its position in its document (0-based).
    pub fn position(&self) -> u32 {
        self.snap.passages.position.value(self.row.index())
    }

    /// Its text, read from the run when asked for.
    pub fn text(&self) -> &'a str {
        self.snap.passages.text.get(self.row.index())
    }

    /// Its id, `<document key>#<position>` ([`crate::format::passage_id`]).
    pub fn id(&self) -> String {
        crate::format::passage_id(self.document_key(), self.position())
    }
}

/// Entity `e` of a [`Snapshot`] (see [`Snapshot::entity`]).
#[derive(Debug, Clone, Copy)]
pub struct EntityView<'a> {
    snap: &'a Snapshot,
    row: EntityId,
}

impl<'a> EntityView<'a> {
    /// The entity id.
    pub fn id(&self) -> EntityId {
        self.row
    }

    /// The concept it stands for (its concept id).
    pub fn concept_id(&self) -> &'a str {
        self.snap.entities.concept_ids.get(self.row.index())
    }

    /// Its display name.
    pub fn name(&self) -> &'a str {
        self.snap.entities.names.get(self.row.index())
    }

    /// Its weighted degree in the entity graph.
    pub fn degree(&self) -> f64 {
        self.snap.entities.degrees.value(self.row.index())
    }

    /// The passages mentioning it, ascending.
    pub fn passages(&self) -> Rows<'a, PassageRow> {
        Rows::new(self.snap.entities.passages.row(self.row.index()))
    }
}

/// Community row `c` of a [`Snapshot`] (see [`Snapshot::community`]).
#[derive(Debug, Clone, Copy)]
pub struct CommunityView<'a> {
    snap: &'a Snapshot,
    row: CommunityRow,
}

impl<'a> CommunityView<'a> {
    /// The row.
    pub fn row(&self) -> CommunityRow {
        self.row
    }

    /// The public id (`community_id`, the `theme_id` of answers).
    pub fn id(&self) -> CommunityId {
        CommunityId(self.snap.communities.ids.value(self.row.index()))
    }

    /// The level (0 = coarsest).
    pub fn level(&self) -> u32 {
        self.snap.communities.levels.value(self.row.index())
    }

    /// The row of its parent community (none at level 0).
    pub fn parent(&self) -> Option<CommunityRow> {
        self.snap
            .communities
            .parents
            .get(self.row.index())
            .map(CommunityRow)
    }

    /// Its member entities, ascending.
    pub fn members(&self) -> Rows<'a, EntityId> {
        Rows::new(self.snap.communities.members.row(self.row.index()))
    }

    /// The passages its report quotes, ascending (empty for runs written before
    /// `report_sources.parquet`).
    pub fn report_sources(&self) -> Rows<'a, PassageRow> {
        Rows::new(self.snap.communities.report_sources.row(self.row.index()))
    }

    /// The rows of the report-embedding matrix that are its vectors (one or more; see
    /// [`report_embeddings`]); empty for a row out of range.
    pub fn report_rows(&self) -> std::ops::Range<usize> {
        let o = &self.snap.report_offsets;
        match (o.get(self.row.index()), o.get(self.row.index() + 1)) {
            (Some(&a), Some(&b)) => a as usize..b as usize,
            _ => 0..0,
        }
    }
}

/// Concept row `c` of a [`Snapshot`]'s vocabulary (see [`Snapshot::concept`]).
#[derive(Debug, Clone, Copy)]
pub struct ConceptView<'a> {
    snap: &'a Snapshot,
    row: ConceptRow,
}

impl<'a> ConceptView<'a> {
    /// The row.
    pub fn row(&self) -> ConceptRow {
        self.row
    }

    /// The concept id (a MeSH descriptor UI such as `D002318`).
    pub fn id(&self) -> &'a str {
        self.snap.vocabulary.concepts.ids.get(self.row.index())
    }

    /// The preferred term.
    pub fn preferred_term(&self) -> &'a str {
        self.snap
            .vocabulary
            .concepts
            .preferred_terms
            .get(self.row.index())
    }
}

/// The passage row named by `id` under the passage-id rule `<key>#<position>`: the document
/// by binary search over the sorted keys, the position by binary search over its passages.
fn find_passage(
    documents: &DocumentColumns,
    positions: &Primitives<UInt32Type>,
    num_passages: usize,
    id: &str,
) -> Option<u32> {
    let (key, pos) = id.rsplit_once('#')?;
    let position: u32 = pos.parse().ok()?;
    // The rule writes positions in plain decimal: "#07" or "#+7" name no passage.
    if position.to_string() != pos {
        return None;
    }
    let d = documents.keys.find_sorted(key)? as usize;
    let rows = documents.passages(d, num_passages);
    mapped::binary_search(rows.start as usize..rows.end as usize, |p| {
        positions.value(p).cmp(&position)
    })
    .and_then(|p| u32::try_from(p).ok())
}

/// Rows of the manifest's entry `name` (a table the run must list).
fn manifest_rows(dir: &Path, manifest: &Manifest, name: &str) -> Result<usize> {
    let entry = manifest.file(name).ok_or_else(|| {
        EngineError::corrupt(
            dir.join(crate::format::manifest::MANIFEST_FILE),
            format!("{name} is not listed"),
        )
    })?;
    usize::try_from(entry.rows).map_err(|_| {
        EngineError::corrupt(dir.join(name), format!("{} rows is too many", entry.rows))
    })
}

impl Snapshot {
    /// Opens the run `LATEST` names under `root`.
    ///
    /// # Errors
    /// [`EngineError::NotReady`] when there is no `LATEST`; otherwise as [`Snapshot::open_run`].
    pub fn open_latest(root: &Path) -> Result<Self> {
        let layout = Layout::new(root);
        let run_id = layout.read_latest()?.ok_or_else(|| EngineError::NotReady {
            root: root.to_owned(),
            reason: "no LATEST file: run `agrag-pipeline run` first".into(),
        })?;
        Self::open_run(&layout.run_dir(&run_id))
    }

    /// Opens the run in `dir`: reads and checks the manifest, checks every file's size, maps
    /// the column files and the embedding matrices and reads the vocabulary.
    ///
    /// # Errors
    /// [`EngineError::UnsupportedFormat`] for an unknown format version;
    /// [`EngineError::Corrupt`] for a file that is missing, of the wrong size, unreadable, of the
    /// wrong schema, of another run, or inconsistent with the others; [`EngineError::Io`].
    pub fn open_run(dir: &Path) -> Result<Self> {
        Self::open_run_verified(dir, Verify::Sizes)
    }

    /// As [`Snapshot::open_run`], checking the files against the manifest at `level` first
    /// ([`Verify::Checksums`] reads every byte once and catches bit flips that keep sizes).
    ///
    /// # Errors
    /// As [`Snapshot::open_run`]; [`EngineError::Corrupt`] naming the first file whose
    /// checksum differs.
    pub fn open_run_verified(dir: &Path, level: Verify) -> Result<Self> {
        let manifest = Manifest::read(dir)?;
        if manifest.run_id != dir.file_name().and_then(|n| n.to_str()).unwrap_or_default() {
            return Err(EngineError::corrupt(
                dir.join(crate::format::manifest::MANIFEST_FILE),
                format!(
                    "run_id {:?} is not the name of its folder {}",
                    manifest.run_id,
                    dir.display()
                ),
            ));
        }
        verify_run(dir, &manifest, level)?;
        let p = |f: &str| dir.join(f);

        let (documents, passages, entities, communities) =
            if manifest.file(mapped::documents::FILE).is_some() {
                let nd = manifest_rows(dir, &manifest, documents::FILE)?;
                let np = manifest_rows(dir, &manifest, passages::FILE)?;
                let ne = manifest_rows(dir, &manifest, entities::FILE)?;
                let nc = manifest_rows(dir, &manifest, communities::FILE)?;
                (
                    mapped::documents::read(dir, nd)?,
                    mapped::passages::read(dir, np)?,
                    mapped::entities::read(dir, ne)?,
                    mapped::communities::read(dir, nc)?,
                )
            } else {
                read_parquet_columns(dir, &manifest)?
            };

        // Report embeddings: mapped zero-copy from the IPC file.
        let community_ids: Vec<u32> = (0..communities.ids.len())
            .map(|c| communities.ids.value(c))
            .collect();
        let dim = manifest.embedder.dim;
        let embeddings = map_embeddings(
            &p(report_embeddings::IPC_FILE),
            &report_embeddings::schema(dim),
            None,
        )?;
        let report_offsets = report_embeddings::offsets(
            &p(report_embeddings::IPC_FILE),
            &embeddings,
            &community_ids,
        )?;
        drop(community_ids);
        let num_documents = documents.keys.len();
        let document_embeddings = map_embeddings(
            &p(document_embeddings::IPC_FILE),
            &document_embeddings::schema(dim),
            num_documents,
        )?;
        let ivf = if manifest.file(report_ivf::LISTS_FILE).is_some() {
            let group_rows: Vec<u32> = report_offsets.windows(2).map(|w| w[1] - w[0]).collect();
            Some(report_ivf::read(dir, dim, &group_rows)?)
        } else {
            None
        };
        // Runs with precomputed postings skip the (document, concept) rows entirely.
        let precomputed = manifest.file(concept_postings::FILE).is_some();
        let keys = &documents.keys;
        let (vocabulary, terms) =
            read_vocabulary(dir, &manifest, &|k: &str| keys.find_sorted(k), !precomputed)?;
        let mut concept_index = concept_index::ConceptIndex::build(&vocabulary, terms);
        if precomputed {
            concept_index.postings = concept_index::Postings::mapped(
                concept_postings::MappedPostings::open(&p(concept_postings::FILE), num_documents)?,
            );
        }
        let text_index = crate::text::TextIndex::open(&p(crate::text::TEXT_INDEX_DIR))?;
        Ok(Self {
            dir: dir.to_owned(),
            manifest,
            documents,
            passages,
            entities,
            communities,
            inverses: std::sync::OnceLock::new(),
            vocabulary,
            concept_index,
            text_index,
            embeddings,
            report_offsets,
            document_embeddings,
            ivf,
            dim,
        })
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.manifest.run_id
    }

    /// Document row `d` (fields read from the run when asked for; a row out of range reads
    /// as empty fields).
    pub fn document(&self, d: DocumentRow) -> DocumentView<'_> {
        DocumentView { snap: self, row: d }
    }

    /// Passage row `p` (fields read from the run when asked for).
    pub fn passage(&self, p: PassageRow) -> PassageView<'_> {
        PassageView { snap: self, row: p }
    }

    /// Community row `c` (fields read from the run when asked for).
    pub fn community(&self, c: CommunityRow) -> CommunityView<'_> {
        CommunityView { snap: self, row: c }
    }

    /// Entity `e` (fields read from the run when asked for).
    pub fn entity(&self, e: EntityId) -> EntityView<'_> {
        EntityView { snap: self, row: e }
    }

    /// Concept row `c` of the vocabulary (fields read from the run when asked for).
    pub fn concept(&self, c: ConceptRow) -> ConceptView<'_> {
        ConceptView { snap: self, row: c }
    }

    /// The row of the concept whose id is `id` (binary search over the ascending ids).
    pub fn concept_row(&self, id: &str) -> Option<ConceptRow> {
        self.vocabulary.concepts.row(id).map(ConceptRow)
    }

    /// The row of the community whose public id (`community_id`, the `theme_id` of answers)
    /// is `id`, if the run has it (binary search over the ascending ids).
    pub fn community_row(&self, id: CommunityId) -> Option<CommunityRow> {
        let ids = &self.communities.ids;
        mapped::binary_search(0..ids.len(), |c| ids.value(c).cmp(&id.0))
            .and_then(|c| u32::try_from(c).ok())
            .map(CommunityRow)
    }

    /// The row of the document whose key is `key` (binary search over the sorted keys).
    pub fn document_row(&self, key: &str) -> Option<DocumentRow> {
        self.documents.keys.find_sorted(key).map(DocumentRow)
    }

    /// The row of the passage whose id is `id`, by the passage-id rule `<key>#<position>`
    /// (no index is held: the document by its key, the position among its passages).
    pub fn passage_row(&self, id: &str) -> Option<PassageRow> {
        find_passage(
            &self.documents,
            &self.passages.position,
            self.num_passages(),
            id,
        )
        .map(PassageRow)
    }

    /// Every document row, ascending.
    pub fn documents(&self) -> impl ExactSizeIterator<Item = DocumentRow> + use<> {
        (0..self.num_documents() as u32).map(DocumentRow)
    }

    /// Every entity id, ascending.
    pub fn entities(&self) -> impl ExactSizeIterator<Item = EntityId> + use<> {
        (0..self.num_entities() as u32).map(EntityId)
    }

    /// Every community row, ascending.
    pub fn communities(&self) -> impl ExactSizeIterator<Item = CommunityRow> + use<> {
        (0..self.num_communities() as u32).map(CommunityRow)
    }

    /// Number of communities (themes).
    pub fn num_communities(&self) -> usize {
        self.communities.ids.len()
    }

    /// Number of passages.
    pub fn num_passages(&self) -> usize {
        self.passages.text.len()
    }

    /// Number of entities (graph nodes).
    pub fn num_entities(&self) -> usize {
        self.entities.names.len()
    }

    /// The passages mentioning each entity, ascending (rows = entities).
    pub(crate) fn entity_passages(&self) -> &Csr {
        &self.entities.passages
    }

    /// Embedding dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The IVF index of the report embeddings, when the run has one (see [`crate::ivf`]).
    pub fn report_ivf(&self) -> Option<&IvfIndex> {
        self.ivf.as_ref()
    }

    /// The rows of the report-embedding matrix that are community row `c`'s vectors (one or
    /// more; see [`report_embeddings`]). [`CommunityView::report_rows`] is the total form.
    ///
    /// # Panics
    /// When `c` is not a community of the run.
    #[track_caller]
    pub(crate) fn report_rows(&self, c: u32) -> std::ops::Range<usize> {
        self.report_offsets[c as usize] as usize..self.report_offsets[c as usize + 1] as usize
    }

    /// Number of report vectors (rows of [`embedding_matrix`](Self::embedding_matrix)).
    pub fn num_report_vectors(&self) -> usize {
        self.report_offsets.last().map_or(0, |&n| n as usize)
    }

    /// The report-embedding matrix, row-major, `num_report_vectors × dim`; community `c` owns
    /// rows [`CommunityView::report_rows`].
    pub fn embedding_matrix(&self) -> &[f32] {
        let list: &FixedSizeListArray = self.embeddings.column(1).as_fixed_size_list();
        list.values().as_primitive::<Float32Type>().values()
    }

    /// The document-embedding matrix, row-major, `num_documents × dim`.
    pub fn document_embedding_matrix(&self) -> &[f32] {
        let list: &FixedSizeListArray = self.document_embeddings.column(1).as_fixed_size_list();
        list.values().as_primitive::<Float32Type>().values()
    }

    /// Number of documents.
    pub fn num_documents(&self) -> usize {
        self.documents.keys.len()
    }

    /// The entities each passage mentions (rows = passages), built on first use.
    pub(crate) fn passage_entities(&self) -> &Csr {
        &self.inverses().passage_entities
    }

    /// The communities each entity belongs to, one per level (rows = entities), built on
    /// first use.
    pub(crate) fn entity_communities(&self) -> &Csr {
        &self.inverses().entity_communities
    }

    /// The communities whose report quotes each passage (rows = passages), built on first use.
    pub(crate) fn passage_quoted_by(&self) -> &Csr {
        &self.inverses().passage_quoted_by
    }

    fn inverses(&self) -> &Inverses {
        self.inverses.get_or_init(|| Inverses {
            passage_entities: evidence::invert(&self.entities.passages, self.num_passages()),
            entity_communities: evidence::invert(&self.communities.members, self.num_entities()),
            passage_quoted_by: evidence::invert(
                &self.communities.report_sources,
                self.num_passages(),
            ),
        })
    }

    /// Whether the run records why each linked concept is in its document's set
    /// (`concept_evidence.parquet`; runs written before it do not).
    pub fn has_concept_evidence(&self) -> bool {
        self.manifest.file(concept_evidence::FILE).is_some()
    }

    /// The concept evidence of the document rows `documents`, read from the run (only the row
    /// groups that hold them); `None` for a run without evidence.
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] / [`EngineError::Io`] when the table cannot be read.
    pub fn concept_evidence_of(
        &self,
        documents: &roaring::RoaringBitmap,
    ) -> Result<Option<evidence::ConceptEvidence>> {
        if !self.has_concept_evidence() {
            return Ok(None);
        }
        concept_evidence::read(
            &self.dir,
            Some(self.run_id()),
            documents,
            &self.documents.keys,
            &self.vocabulary.concepts,
            &|id: &str| self.passage_row(id).map(|p| p.0),
        )
        .map(Some)
    }
}

/// The columns of a run of format 1, read from its Parquet tables into the column types a
/// run of format 2 maps: every row decoded and checked (document keys ascending, passage ids
/// following their rule, every id resolving). Each table is decoded by its module of
/// [`crate::format::tables`]; this assembles them.
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row; as [`crate::format::reader::read_parquet`].
pub(crate) fn read_parquet_columns(
    dir: &Path,
    manifest: &Manifest,
) -> Result<(
    DocumentColumns,
    PassageColumns,
    EntityColumns,
    CommunityColumns,
)> {
    let run_id = Some(manifest.run_id.as_str());
    let mut documents = documents::read(dir, run_id)?;
    let (passages, first_passage) = passages::read(dir, run_id, &documents.keys)?;
    documents.first_passage = Primitives::from_vec(first_passage);
    let np = passages.text.len();
    let passage = |id: &str| find_passage(&documents, &passages.position, np, id);

    let mut entities = entities::read(dir, run_id)?;
    let num_entities = entities.names.len();
    entities.passages = mentions::read_entity_passages(dir, run_id, num_entities, &passage)?;

    let mut communities = communities::read(dir, run_id)?;
    let ids: Vec<u32> = (0..communities.ids.len())
        .map(|c| communities.ids.value(c))
        .collect();
    communities.members = membership::read_members(dir, run_id, &ids, num_entities)?;
    communities.report_sources = if manifest.file(report_sources::FILE).is_some() {
        report_sources::read(dir, run_id, &ids, &passage)?
    } else {
        Csr::from_pairs(ids.len(), &[])
    };
    Ok((documents, passages, entities, communities))
}

/// The inverse rows of [`Snapshot`] that only hidden passages need.
#[derive(Debug)]
struct Inverses {
    passage_entities: Csr,
    entity_communities: Csr,
    passage_quoted_by: Csr,
}

/// The vocabulary of the run in `dir`: concepts and term index mapped from `concepts.arrow`
/// and `terms.arrow` when the manifest lists them, else read from `concepts.parquet` and
/// indexed here (format 1); hierarchy edges from `concept_edges.parquet`; and, when
/// `with_document_concepts`, the rows of `document_concepts.parquet` (runs without
/// precomputed postings).
fn read_vocabulary(
    dir: &Path,
    manifest: &Manifest,
    document_index: &dyn Fn(&str) -> Option<u32>,
    with_document_concepts: bool,
) -> Result<(VocabularyTables, TermIndex)> {
    let run_id = Some(manifest.run_id.as_str());
    let (concepts, terms) = if manifest.file(mapped::concepts::FILE).is_some()
        && manifest.file(mapped::terms::FILE).is_some()
    {
        (
            mapped::concepts::read(dir, manifest_rows(dir, manifest, mapped::concepts::FILE)?)?,
            mapped::terms::read(dir, manifest_rows(dir, manifest, mapped::terms::FILE)?)?,
        )
    } else {
        concepts::read(dir, run_id)?
    };
    let edges = if manifest.file(mapped::concept_edges::FILE).is_some() {
        mapped::concept_edges::read(
            dir,
            manifest_rows(dir, manifest, mapped::concept_edges::FILE)?,
            concepts.len(),
        )?
    } else {
        concept_edges::read(dir, run_id, &concepts)?
    };
    let document_concepts = if with_document_concepts {
        document_concepts::read(dir, run_id, document_index, &concepts)?
    } else {
        Vec::new()
    };
    Ok((
        VocabularyTables {
            concepts,
            edges,
            document_concepts,
        },
        terms,
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::embed::{Embedder, HashEmbedder};
    use crate::format::tables::{
        ConceptRecord, for_test_one_passage_documents, for_test_write_run,
    };
    use crate::format::{RunData, new_run_id};

    /// The precomputed postings equal the postings built from `document_concepts` rows, so
    /// runs without the file (older runs) answer the same.
    #[test]
    fn precomputed_postings_equal_the_built_ones() {
        let dir = tempfile::tempdir().unwrap();
        let keys = ["a", "b", "c", "d"];
        let embedder = HashEmbedder::new(8);
        let rows = [
            ("concept", "a", "C1"),
            ("concept", "a", "C2"),
            ("concept", "c", "C1"),
            ("mesh", "b", "C3"),
            ("mesh", "d", "C1"),
            ("mesh", "d", "C3"),
        ];
        let data = RunData {
            concepts: ["C1", "C2", "C3"]
                .iter()
                .map(|c| ConceptRecord {
                    concept_id: (*c).into(),
                    preferred_term: format!("term {c}"),
                    // Shared and case-varied synonyms, so keys name several concepts.
                    synonyms: vec!["Shared  TERM".into(), format!("TERM {c}"), c.to_lowercase()],
                })
                .collect(),
            document_concepts: rows
                .iter()
                .map(|(f, d, c)| ((*f).into(), (*d).into(), (*c).into()))
                .collect(),
            concept_edges: [("C3", "C1", "subclass_of"), ("C2", "C1", "part_of")]
                .iter()
                .map(|(c, p, r)| ((*c).into(), (*p).into(), (*r).into()))
                .collect(),
            ..for_test_one_passage_documents(&keys, true, &embedder)
        };
        let layout = Layout::new(dir.path());
        let run_id = new_run_id();
        for_test_write_run(&layout, &run_id, &data, embedder.identity());
        let run = layout.run_dir(&run_id);
        let snap = Snapshot::open_run(&run).unwrap();
        let docs: HashMap<String, u32> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| ((*k).to_owned(), i as u32))
            .collect();
        let (vocabulary, terms) =
            read_vocabulary(&run, &snap.manifest, &|k: &str| docs.get(k).copied(), true).unwrap();
        // The term index and concept rows mapped from the run are those read from
        // concepts.parquet and indexed at open (the way of runs without the mapped files).
        let mut parquet_only = snap.manifest.clone();
        parquet_only
            .files
            .retain(|f| !f.name.ends_with(".arrow") || f.name == concept_postings::FILE);
        let (from_parquet, built_terms) =
            read_vocabulary(&run, &parquet_only, &|k: &str| docs.get(k).copied(), false).unwrap();
        assert_eq!(terms.len(), 7, "3 preferred terms, 3 ids, 1 shared synonym");
        assert_eq!(snap.concept_index.resolve_term("shared term"), &[0, 1, 2]);
        assert_eq!(snap.concept_index.resolve_term("Term C2"), &[1]);
        assert_eq!(terms.len(), built_terms.len());
        for k in 0..terms.len() {
            assert_eq!(terms.keys.get(k), built_terms.keys.get(k));
            assert_eq!(terms.concepts.row(k), built_terms.concepts.row(k));
        }
        assert_eq!(vocabulary.concepts.len(), from_parquet.concepts.len());
        for c in 0..vocabulary.concepts.len() {
            assert_eq!(
                vocabulary.concepts.ids.get(c),
                from_parquet.concepts.ids.get(c)
            );
            assert_eq!(
                vocabulary.concepts.preferred_terms.get(c),
                from_parquet.concepts.preferred_terms.get(c)
            );
        }
        assert_eq!(vocabulary.edges.len(), 2);
        assert_eq!(vocabulary.edges, from_parquet.edges);
        let built = concept_index::ConceptIndex::build(&vocabulary, terms);
        let (mapped, built) = (&snap.concept_index.postings, &built.postings);
        let names: Vec<&str> = mapped.field_names().collect();
        assert_eq!(names, built.field_names().collect::<Vec<_>>());
        assert_eq!(names, ["concept", "mesh"]);
        let concepts = &vocabulary.concepts;
        for name in names {
            let (m, b) = (
                mapped.field(name, concepts).unwrap(),
                built.field(name, concepts).unwrap(),
            );
            assert_eq!(m.linked().unwrap(), b.linked().unwrap(), "{name}");
            for c in 0..concepts.len() as u32 + 1 {
                assert_eq!(m.get(c).unwrap(), b.get(c).unwrap(), "{name} {c}");
            }
        }
        let c1 = vocabulary.concepts.row("C1").unwrap();
        let field = mapped.field("concept", concepts).unwrap();
        let set: Vec<u32> = field.get(c1).unwrap().unwrap().iter().collect();
        assert_eq!(set, vec![0, 2]);
        let mesh = mapped.field("mesh", concepts).unwrap();
        let linked: Vec<u32> = mesh.linked().unwrap().unwrap().iter().collect();
        assert_eq!(linked, vec![1, 3]);
        assert!(mapped.field("nope", concepts).is_none());

        // A document row out of range is refused, naming the file and row.
        let bad = dir.path().join("bad.arrow");
        let mut big = roaring::RoaringBitmap::new();
        big.insert(99);
        let mut blob = Vec::new();
        big.serialize_into(&mut blob).unwrap();
        let b = RecordBatch::try_new(
            concept_postings::schema(),
            vec![
                std::sync::Arc::new(arrow_array::StringArray::from(vec!["concept"])),
                std::sync::Arc::new(arrow_array::StringArray::from(vec![Some("C1")])),
                std::sync::Arc::new(arrow_array::UInt64Array::from(vec![1u64])),
                std::sync::Arc::new(arrow_array::BinaryArray::from_vec(vec![&blob[..]])),
            ],
        )
        .unwrap();
        let mut w = arrow_ipc::writer::FileWriter::try_new(
            std::fs::File::create(&bad).unwrap(),
            &b.schema(),
        )
        .unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        // Opening maps it; the set is checked when first read, and the error stays.
        let file = concept_postings::MappedPostings::open(&bad, 4).unwrap();
        let postings = concept_index::Postings::mapped(file);
        let field = postings.field("concept", concepts).unwrap();
        for _ in 0..2 {
            let err = field.get(c1).unwrap_err();
            assert!(
                err.to_string().contains("row 0") && err.to_string().contains("out of range"),
                "{err}"
            );
        }
        // Rows out of order are refused at open, naming the row.
        let unsorted = dir.path().join("unsorted.arrow");
        let b = RecordBatch::try_new(
            concept_postings::schema(),
            vec![
                std::sync::Arc::new(arrow_array::StringArray::from(vec!["concept", "concept"])),
                std::sync::Arc::new(arrow_array::StringArray::from(vec![Some("C2"), Some("C1")])),
                std::sync::Arc::new(arrow_array::UInt64Array::from(vec![1u64, 1])),
                std::sync::Arc::new(arrow_array::BinaryArray::from_vec(vec![
                    &blob[..],
                    &blob[..],
                ])),
            ],
        )
        .unwrap();
        let mut w = arrow_ipc::writer::FileWriter::try_new(
            std::fs::File::create(&unsorted).unwrap(),
            &b.schema(),
        )
        .unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        let err = concept_postings::MappedPostings::open(&unsorted, 4).unwrap_err();
        assert!(err.to_string().contains("row 1"), "{err}");
    }
}
