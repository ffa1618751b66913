//! Runs that continue the published run: identical input keeps every community and table,
//! an added document keeps the communities it does not touch (id and report), a run whose
//! only change is a deletion succeeds without the document's passages, and the lineage table
//! accounts for every old and new community id exactly once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use agrag_engine::embed::{Embedder, HashEmbedder};
use agrag_engine::format::document_links;
use agrag_engine::format::reader::read_parquet;
use agrag_engine::format::tables::{
    communities, community_lineage, concept_evidence, document_concepts, document_embeddings,
    documents, entities, membership, mentions, passages, relationships, report_embeddings,
    report_sources, reports,
};
use agrag_engine::format::text_embeddings::{self, TextEmbeddings, text_hash};
use agrag_engine::format::{Layout, Manifest};
use agrag_engine::{Engine, EngineConfig, ThemeRequest};
use agrag_pipeline::run::{RunConfig, RunSummary, run};
use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, RecordBatch, StringArray, UInt32Array};

use crate::e2e::fixture_config;

/// The fixture's lines.
fn fixture_lines() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/fixtures/pubmedqa-60.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Runs the pipeline on `lines` (written to `dir/name`) into `root`.
fn run_on(
    root: &Path,
    dir: &Path,
    name: &str,
    lines: &[String],
    edit: impl Fn(&mut RunConfig),
) -> RunSummary {
    let documents = dir.join(name);
    std::fs::write(&documents, lines.join("\n") + "\n").unwrap();
    let mut cfg = RunConfig {
        documents,
        ..fixture_config(root)
    };
    edit(&mut cfg);
    run(&cfg).unwrap()
}

fn table(root: &Path, run_id: &str, file: &str, schema: &arrow_schema::Schema) -> RecordBatch {
    let dir = Layout::new(root).run_dir(run_id);
    read_parquet(&dir.join(file), schema, Some(run_id)).unwrap()
}

/// `b` without its `run_id` column and schema metadata: what two runs of the same input share.
fn strip(b: RecordBatch) -> RecordBatch {
    let keep: Vec<usize> = (0..b.num_columns())
        .filter(|&i| b.schema().field(i).name() != "run_id")
        .collect();
    let b = b.project(&keep).unwrap();
    let schema = b
        .schema()
        .as_ref()
        .clone()
        .with_metadata(std::collections::HashMap::new());
    RecordBatch::try_new(std::sync::Arc::new(schema), b.columns().to_vec()).unwrap()
}

/// The tables linking makes, without run ids, of run `run_id`.
fn link_tables(root: &Path, run_id: &str) -> Vec<RecordBatch> {
    [
        (mentions::FILE, mentions::schema()),
        (document_concepts::FILE, document_concepts::schema()),
        (concept_evidence::FILE, concept_evidence::schema()),
    ]
    .into_iter()
    .map(|(file, schema)| strip(table(root, run_id, file, &schema)))
    .collect()
}

fn u32s(b: &RecordBatch, name: &str) -> Vec<u32> {
    b.column_by_name(name)
        .unwrap()
        .as_primitive::<UInt32Type>()
        .values()
        .to_vec()
}

fn strings(b: &RecordBatch, name: &str) -> Vec<String> {
    let a = b.column_by_name(name).unwrap();
    let a = a.as_any().downcast_ref::<StringArray>().unwrap();
    (0..a.len()).map(|i| a.value(i).to_owned()).collect()
}

/// Each community's member set (concept ids) by public id, with its level.
fn member_sets(root: &Path, run_id: &str) -> BTreeMap<u32, (u32, Vec<String>)> {
    let e = table(root, run_id, entities::FILE, &entities::schema());
    let concepts = strings(&e, entities::CONCEPT_ID);
    let m = table(root, run_id, membership::FILE, &membership::schema());
    let mut out: BTreeMap<u32, (u32, Vec<String>)> = BTreeMap::new();
    for ((l, e), c) in u32s(&m, membership::LEVEL)
        .into_iter()
        .zip(u32s(&m, membership::ENTITY_ID))
        .zip(u32s(&m, membership::COMMUNITY_ID))
    {
        let slot = out.entry(c).or_insert((l, Vec::new()));
        slot.1.push(concepts[e as usize].clone());
    }
    for v in out.values_mut() {
        v.1.sort();
    }
    out
}

/// Each report's text by public community id.
fn report_texts(root: &Path, run_id: &str) -> HashMap<u32, (String, String)> {
    let r = table(root, run_id, reports::FILE, &reports::schema());
    u32s(&r, reports::COMMUNITY_ID)
        .into_iter()
        .zip(strings(&r, reports::TITLE))
        .zip(strings(&r, reports::FULL_CONTENT))
        .map(|((c, t), f)| (c, (t, f)))
        .collect()
}

/// The lineage rows: `(community_id, event, predecessor)`.
fn lineage(root: &Path, run_id: &str) -> Vec<(u32, String, Option<u32>)> {
    let b = table(
        root,
        run_id,
        community_lineage::FILE,
        &community_lineage::schema(),
    );
    let p = b.column_by_name(community_lineage::PREDECESSOR).unwrap();
    let p = p.as_any().downcast_ref::<UInt32Array>().unwrap();
    u32s(&b, community_lineage::COMMUNITY_ID)
        .into_iter()
        .zip(strings(&b, community_lineage::EVENT))
        .enumerate()
        .map(|(i, (c, e))| (c, e, p.is_valid(i).then(|| p.value(i))))
        .collect()
}

/// Every old and every new id appears exactly once: the new ones as the run's communities,
/// the old ones either inherited (a live row whose predecessor is itself) or `dissolved`.
fn assert_lineage_accounts(
    old: &BTreeMap<u32, (u32, Vec<String>)>,
    new: &BTreeMap<u32, (u32, Vec<String>)>,
    rows: &[(u32, String, Option<u32>)],
) {
    let live: Vec<u32> = rows
        .iter()
        .filter(|r| r.1 != "dissolved")
        .map(|r| r.0)
        .collect();
    let live_set: HashSet<u32> = live.iter().copied().collect();
    assert_eq!(live.len(), live_set.len(), "a community listed twice");
    assert_eq!(live_set, new.keys().copied().collect::<HashSet<_>>());
    let mut old_seen: Vec<u32> = rows
        .iter()
        .filter(|r| r.1 == "dissolved" || r.2 == Some(r.0))
        .map(|r| r.0)
        .collect();
    old_seen.sort_unstable();
    assert_eq!(old_seen, old.keys().copied().collect::<Vec<_>>());
    for r in rows.iter().filter(|r| r.1 != "dissolved") {
        // A new id was never used before; an inherited one continues its predecessor.
        if r.2 != Some(r.0) {
            assert!(!old.contains_key(&r.0), "{r:?} reuses an old id");
        }
    }
}

#[test]
fn identical_input_shuffled_on_other_threads_keeps_every_community_and_table() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lines = fixture_lines();
    let first = run_on(root.path(), dir.path(), "a.jsonl", &lines, |_| {});
    assert!(!first.warm_start && first.parent_run_id.is_none());
    let total: usize = first.communities_per_level.iter().sum();
    assert_eq!(first.lineage["new"], total);

    let mut shuffled = lines.clone();
    shuffled.reverse();
    shuffled.swap(3, 40);
    let second = run_on(root.path(), dir.path(), "b.jsonl", &shuffled, |c| {
        c.threads = Some(1);
    });
    assert!(second.warm_start);
    assert_eq!(second.parent_run_id.as_deref(), Some(first.run_id.as_str()));
    assert_eq!(second.lineage["same"], total, "{:?}", second.lineage);
    assert_eq!(second.lineage.values().sum::<usize>(), total);
    // Every report text is the parent's: its vectors are taken, not embedded again (and the
    // table comparison below shows them equal to the first run's fresh ones, bit for bit).
    assert_eq!(first.reused["report_embeddings"], 0);
    assert_eq!(first.recomputed["report_embeddings"], total);
    assert_eq!(second.reused["report_embeddings"], total);
    assert_eq!(second.recomputed["report_embeddings"], 0);
    // Every title and passage vector is the parent's too, so is every document vector.
    let texts = first.recomputed["text_embeddings"];
    assert!(texts > 60, "{texts} distinct titles and passages");
    assert_eq!(first.reused["text_embeddings"], 0);
    assert_eq!(second.reused["text_embeddings"], texts);
    assert_eq!(second.recomputed["text_embeddings"], 0);
    assert_eq!(second.reused["document_embeddings"], 60);
    assert_eq!(second.recomputed["document_embeddings"], 0);
    // Every document's links are the parent's (the table comparison below shows them equal).
    let linked = first.recomputed["linked_passages"];
    assert_eq!(linked, first.passages);
    assert_eq!(first.reused["linked_passages"], 0);
    assert_eq!(second.reused["linked_passages"], linked);
    assert_eq!(second.recomputed["linked_passages"], 0);
    let manifest_stats = Manifest::read(&Layout::new(root.path()).run_dir(&second.run_id))
        .unwrap()
        .stats;
    assert_eq!(manifest_stats["reused"]["report_embeddings"], total);
    assert_eq!(manifest_stats["lineage"]["same"], total);
    assert_eq!(second.modularity, first.modularity);
    let manifest = Manifest::read(&Layout::new(root.path()).run_dir(&second.run_id)).unwrap();
    assert_eq!(
        manifest.parent_run_id.as_deref(),
        Some(first.run_id.as_str())
    );
    assert_eq!(manifest.next_community_id, Some(total as u32));

    // Every table holds the same rows (run ids aside).
    for (file, schema) in [
        (passages::FILE, passages::schema()),
        (entities::FILE, entities::schema()),
        (mentions::FILE, mentions::schema()),
        (document_concepts::FILE, document_concepts::schema()),
        (concept_evidence::FILE, concept_evidence::schema()),
        (relationships::FILE, relationships::schema()),
        (communities::FILE, communities::schema()),
        (membership::FILE, membership::schema()),
        (reports::FILE, reports::schema()),
        (report_sources::FILE, report_sources::schema()),
        (report_embeddings::FILE, report_embeddings::schema(384)),
        (document_embeddings::FILE, document_embeddings::schema(384)),
    ] {
        let a = strip(table(root.path(), &first.run_id, file, &schema));
        let b = strip(table(root.path(), &second.run_id, file, &schema));
        assert_eq!(a, b, "{file} differs");
    }
}

#[test]
fn an_added_document_keeps_the_ids_and_reports_of_untouched_communities() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lines = fixture_lines();
    let first = run_on(root.path(), dir.path(), "a.jsonl", &lines[..59], |_| {});
    let second = run_on(root.path(), dir.path(), "b.jsonl", &lines, |_| {});
    assert!(second.warm_start);
    let old = member_sets(root.path(), &first.run_id);
    let new = member_sets(root.path(), &second.run_id);
    let old_reports = report_texts(root.path(), &first.run_id);
    let new_reports = report_texts(root.path(), &second.run_id);
    let old_by_members: HashMap<&(u32, Vec<String>), u32> =
        old.iter().map(|(id, m)| (m, *id)).collect();
    let mut unchanged = 0;
    for (id, m) in &new {
        if let Some(&old_id) = old_by_members.get(m) {
            unchanged += 1;
            assert_eq!(*id, old_id, "an unchanged community changed its id");
            let _ = &old_reports[&old_id];
        }
    }
    // One document of sixty touches a few communities; most stay as they were.
    assert!(
        unchanged * 10 >= new.len() * 7,
        "{unchanged} of {} communities unchanged",
        new.len()
    );
    let rows = lineage(root.path(), &second.run_id);
    assert_lineage_accounts(&old, &new, &rows);

    // The engine answers with public ids, and a caller's vector store names them too.
    let engine = Engine::open(root.path(), EngineConfig::default()).unwrap();
    let fresh: Vec<u32> = rows
        .iter()
        .filter(|r| r.1 != "dissolved" && r.2 != Some(r.0))
        .map(|r| r.0)
        .collect();
    assert!(
        fresh.iter().all(|&id| id as usize >= old.len()),
        "new ids start past the parent's"
    );
    let mut req = ThemeRequest::text("outcome of treatment in patients");
    req.limit = 20;
    let answer = engine.search_themes(&req).unwrap();
    assert!(!answer.themes.is_empty());
    assert!(answer.themes.iter().all(|t| new.contains_key(&t.theme_id)));
    if let Some(&id) = fresh.first() {
        let hits: Vec<(u32, f32)> = new
            .keys()
            .map(|&c| (c, if c == id { 1.0 } else { 0.0 }))
            .collect();
        let answer = engine.search_themes_in_window(&req, &hits).unwrap();
        let ids: Vec<u32> = answer.themes.iter().map(|t| t.theme_id).collect();
        assert!(ids.iter().all(|t| new.contains_key(t)), "{ids:?}");
        let unknown = engine
            .search_themes_in_window(&req, &[(u32::MAX - 1, 1.0)])
            .unwrap();
        assert!(!unknown.failures.is_empty());
    }
    let same: HashSet<u32> = rows.iter().filter(|r| r.1 == "same").map(|r| r.0).collect();
    assert_eq!(same.len(), unchanged);
    // An unchanged community whose supporting passages are unchanged keeps its report: the
    // report of a `same` community differs only when the new document's passages support it.
    let kept_reports = same
        .iter()
        .filter(|c| old_reports[*c] == new_reports[*c])
        .count();
    assert!(
        kept_reports * 10 >= same.len() * 9,
        "{kept_reports} of {}",
        same.len()
    );

    // Report vectors: taken from the parent wherever the text is the parent's, and each one
    // equal bit for bit to embedding that text now.
    assert!(
        second.reused["report_embeddings"] >= kept_reports,
        "{:?}",
        second.reused
    );
    assert_eq!(
        second.reused["report_embeddings"] + second.recomputed["report_embeddings"],
        new.len()
    );
    let vectors = table(
        root.path(),
        &second.run_id,
        report_embeddings::FILE,
        &report_embeddings::schema(384),
    );
    let ids = u32s(&vectors, report_embeddings::COMMUNITY_ID);
    let list = vectors
        .column(1)
        .as_any()
        .downcast_ref::<arrow_array::FixedSizeListArray>()
        .unwrap();
    let embedder = HashEmbedder::default();
    let mut checked = 0;
    for (row, &c) in ids.iter().enumerate() {
        if row > 0 && ids[row - 1] == c {
            continue; // the community's text row is its first
        }
        if old_reports.get(&c) != Some(&new_reports[&c]) {
            continue;
        }
        let fresh = embedder.embed(&new_reports[&c].1).unwrap();
        let stored = list.value(row);
        let stored = stored.as_primitive::<arrow_array::types::Float32Type>();
        assert_eq!(stored.values().to_vec(), fresh, "community {c}");
        checked += 1;
    }
    assert!(checked >= kept_reports, "{checked}");

    // Title and passage vectors: the 59 documents' texts come from the parent (so do the
    // report texts that did not change), the new one's are embedded; every vector of the run's
    // text_embeddings.arrow is bit for bit what embedding its text now gives.
    let first_texts: HashSet<[u8; 32]> = strings(
        &table(
            root.path(),
            &first.run_id,
            documents::FILE,
            &documents::schema(),
        ),
        documents::TITLE,
    )
    .iter()
    .chain(&strings(
        &table(
            root.path(),
            &first.run_id,
            passages::FILE,
            &passages::schema(),
        ),
        passages::TEXT,
    ))
    .map(|t| text_hash(t))
    .collect();
    assert!(
        second.reused["text_embeddings"] >= first_texts.len(),
        "{} < {}",
        second.reused["text_embeddings"],
        first_texts.len()
    );
    assert!(second.recomputed["text_embeddings"] >= 1);
    assert_eq!(second.reused["document_embeddings"], 59);
    assert_eq!(second.recomputed["document_embeddings"], 1);
    let run_dir = Layout::new(root.path()).run_dir(&second.run_id);
    let manifest = Manifest::read(&run_dir).unwrap();
    let stored = TextEmbeddings::read(&run_dir, &manifest.files, 384)
        .unwrap()
        .expect("a new run writes text_embeddings.arrow");
    assert_eq!(
        stored.len(),
        second.reused["text_embeddings"] + second.recomputed["text_embeddings"]
    );
    let titles = strings(
        &table(
            root.path(),
            &second.run_id,
            documents::FILE,
            &documents::schema(),
        ),
        documents::TITLE,
    );
    let passage_texts = strings(
        &table(
            root.path(),
            &second.run_id,
            passages::FILE,
            &passages::schema(),
        ),
        passages::TEXT,
    );
    for t in titles.iter().chain(&passage_texts) {
        let v = stored.get(&text_hash(t)).unwrap_or_else(|| panic!("{t:?}"));
        assert_eq!(v, embedder.embed(t).unwrap().as_slice(), "{t:?}");
    }

    // A full run on the same input embeds everything and gives the same document vectors.
    let third = run_on(root.path(), dir.path(), "c.jsonl", &lines, |c| {
        c.full = true
    });
    assert_eq!(third.reused["text_embeddings"], 0);
    assert_eq!(third.reused["document_embeddings"], 0);
    assert_eq!(third.reused["linked_passages"], 0);
    assert_eq!(third.recomputed["linked_passages"], third.passages);
    // The 59 documents' links came from the parent, the new one was linked; the tables linking
    // makes are those of linking every document afresh, row for row.
    let new_passages = second.passages - first.passages;
    assert!(new_passages >= 1);
    assert_eq!(second.reused["linked_passages"], first.passages);
    assert_eq!(second.recomputed["linked_passages"], new_passages);
    assert_eq!(
        link_tables(root.path(), &second.run_id),
        link_tables(root.path(), &third.run_id)
    );
    let schema = document_embeddings::schema(384);
    let warm = table(
        root.path(),
        &second.run_id,
        document_embeddings::FILE,
        &schema,
    );
    let full = table(
        root.path(),
        &third.run_id,
        document_embeddings::FILE,
        &schema,
    );
    assert_eq!(warm.columns(), full.columns());
}

#[test]
fn links_are_taken_only_for_the_same_text_vocabulary_and_rules() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lines = fixture_lines();
    let first = run_on(root.path(), dir.path(), "a.jsonl", &lines, |_| {});
    // One passage of one document edited: that document alone is linked again.
    let mut edited = lines.clone();
    let mut doc: serde_json::Value = serde_json::from_str(&edited[5]).unwrap();
    let passages_of = doc["passages"].as_array().unwrap().len();
    let text = doc["passages"][0].as_str().unwrap().to_owned();
    doc["passages"][0] = serde_json::Value::from(format!("{text} Aspirin was not given."));
    edited[5] = doc.to_string();
    let second = run_on(root.path(), dir.path(), "b.jsonl", &edited, |_| {});
    assert_eq!(second.recomputed["linked_passages"], passages_of);
    assert_eq!(
        second.reused["linked_passages"],
        first.passages - passages_of
    );
    // Other linking parameters (plural variants off) or another vocabulary: nothing is taken,
    // and what the run finds is what a run from nothing finds.
    let third = run_on(root.path(), dir.path(), "c.jsonl", &edited, |c| {
        c.link.plural_variants = false;
    });
    assert_eq!(third.reused["linked_passages"], 0);
    assert_eq!(third.recomputed["linked_passages"], third.passages);
    let fresh_root = tempfile::tempdir().unwrap();
    let fresh = run_on(fresh_root.path(), dir.path(), "d.jsonl", &edited, |c| {
        c.link.plural_variants = false;
    });
    assert_eq!(
        link_tables(root.path(), &third.run_id),
        link_tables(fresh_root.path(), &fresh.run_id)
    );
    let vocabulary = tempfile::tempdir().unwrap();
    crate::crash::write_small_vocabulary(vocabulary.path());
    let fourth = run_on(root.path(), dir.path(), "e.jsonl", &edited, |c| {
        c.vocabulary = vocabulary.path().to_owned();
        c.allow_empty = true;
    });
    assert_eq!(fourth.reused["linked_passages"], 0);
}

#[test]
fn a_run_whose_only_change_is_a_deletion_succeeds_without_the_document() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lines = fixture_lines();
    let first = run_on(root.path(), dir.path(), "a.jsonl", &lines, |_| {});
    let gone: serde_json::Value = serde_json::from_str(&lines[17]).unwrap();
    let key = gone["document_key"].as_str().unwrap().to_owned();
    let mut kept = lines.clone();
    kept.remove(17);
    let second = run_on(root.path(), dir.path(), "b.jsonl", &kept, |_| {});
    assert_eq!(second.documents, 59);
    let prefix = format!("{key}#");
    for (file, schema, column) in [
        (passages::FILE, passages::schema(), passages::PASSAGE_ID),
        (mentions::FILE, mentions::schema(), mentions::PASSAGE_ID),
        (
            report_sources::FILE,
            report_sources::schema(),
            report_sources::PASSAGE_ID,
        ),
    ] {
        let b = table(root.path(), &second.run_id, file, &schema);
        assert!(
            strings(&b, column).iter().all(|p| !p.starts_with(&prefix)),
            "{file} still holds a passage of {key}"
        );
    }
    let old = member_sets(root.path(), &first.run_id);
    let new = member_sets(root.path(), &second.run_id);
    assert_lineage_accounts(&old, &new, &lineage(root.path(), &second.run_id));
}

#[test]
fn another_stickiness_still_continues_the_parent_and_zero_is_plain_df_leiden() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lines = fixture_lines();
    let first = run_on(root.path(), dir.path(), "a.jsonl", &lines[..59], |_| {});
    // Two continuations of the same parent, with and without the history cost.
    let copy = tempfile::tempdir().unwrap();
    let copy_root = copy.path().join("root");
    crate::parquet::copy_dir(root.path(), &copy_root);
    let held = run_on(root.path(), dir.path(), "b.jsonl", &lines, |_| {});
    let plain = run_on(&copy_root, dir.path(), "b.jsonl", &lines, |c| {
        c.leiden.stickiness = 0.0
    });
    assert!(
        held.warm_start && plain.warm_start,
        "the stickiness does not change what is asked for"
    );
    let old = member_sets(root.path(), &first.run_id);
    for (r, summary) in [(root.path(), &held), (copy_root.as_path(), &plain)] {
        let new = member_sets(r, &summary.run_id);
        assert_lineage_accounts(&old, &new, &lineage(r, &summary.run_id));
    }
    // The history cost trades a little quality for stability.
    assert!(
        held.modularity >= plain.modularity - 0.01,
        "{} vs {}",
        held.modularity,
        plain.modularity
    );
}

#[test]
fn full_detects_from_nothing_but_still_carries_ids_over() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lines = fixture_lines();
    let first = run_on(root.path(), dir.path(), "a.jsonl", &lines, |_| {});
    let second = run_on(root.path(), dir.path(), "b.jsonl", &lines, |c| {
        c.full = true
    });
    assert!(!second.warm_start);
    // Detection from nothing with the same seed finds the same communities, and ids follow.
    assert_eq!(
        member_sets(root.path(), &first.run_id),
        member_sets(root.path(), &second.run_id)
    );
    // A third run on a new vocabulary-free change: new ids start past every id used.
    let third = run_on(root.path(), dir.path(), "c.jsonl", &lines[..30], |_| {});
    let used = first.communities_per_level.iter().sum::<usize>() as u32;
    let rows = lineage(root.path(), &third.run_id);
    for r in rows
        .iter()
        .filter(|r| r.1 != "dissolved" && r.2 != Some(r.0))
    {
        assert!(r.0 >= used, "{r:?} reuses an id below {used}");
    }
}

#[test]
fn a_damaged_parent_is_not_trusted_and_its_ids_are_not_reused() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lines = fixture_lines();
    let layout = Layout::new(root.path());
    let first = run_on(root.path(), dir.path(), "a.jsonl", &lines, |_| {});
    // Same size, other bytes: only the checksum tells.
    for file in [
        report_embeddings::IPC_FILE,
        text_embeddings::FILE,
        document_links::FILE,
    ] {
        let arrow = layout.run_dir(&first.run_id).join(file);
        let mut bytes = std::fs::read(&arrow).unwrap();
        let at = bytes.len() / 2;
        for b in &mut bytes[at..at + 64] {
            *b ^= 0x5a;
        }
        std::fs::write(&arrow, &bytes).unwrap();
    }
    let second = run_on(root.path(), dir.path(), "b.jsonl", &lines, |_| {});
    assert!(second.warm_start, "detection does not need the vectors");
    assert_eq!(
        second.reused["report_embeddings"], 0,
        "damaged vectors are not taken"
    );
    assert_eq!(second.reused["text_embeddings"], 0);
    assert_eq!(
        second.recomputed["text_embeddings"],
        first.recomputed["text_embeddings"]
    );
    // Damaged links are not taken: every document is linked again, to the same tables.
    assert_eq!(second.reused["linked_passages"], 0);
    assert_eq!(second.recomputed["linked_passages"], second.passages);
    assert_eq!(
        link_tables(root.path(), &first.run_id),
        link_tables(root.path(), &second.run_id)
    );
    let total = second.communities_per_level.iter().sum::<usize>();
    assert_eq!(second.lineage["same"], total);

    // A parent whose manifest no longer matches its checksum: a cold start, and new ids past
    // every id on disk.
    let manifest = layout.run_dir(&second.run_id).join("manifest.json");
    let mut text = std::fs::read(&manifest).unwrap();
    text.push(b' ');
    std::fs::write(&manifest, text).unwrap();
    let third = run_on(root.path(), dir.path(), "c.jsonl", &lines[..40], |_| {});
    assert!(!third.warm_start && third.parent_run_id.is_none());
    let used = member_sets(root.path(), &second.run_id)
        .keys()
        .max()
        .copied()
        .unwrap();
    let ids = member_sets(root.path(), &third.run_id);
    assert!(
        ids.keys().all(|&c| c > used),
        "an id of the damaged run is used again"
    );
}
