//! `linking-quality`: how close the `concept` node field comes to the corpus's own MeSH
//! indexing, on the shipped PubMedQA corpus, printed as markdown tables.
//!
//! ```text
//! cargo run -p agrag-benches --release --bin linking-quality -- [--data DIR] [--diagnose N]
//! ```
//!
//! For every document the [`DocumentLinker`] links the title and passages (never the `mesh`
//! field); its `concept` set is compared with the document's `mesh` headings resolved to
//! concept ids (preferred term or synonym, ignoring case). Figures are micro-averaged over
//! documents: precision = right predicted concepts / predicted concepts, recall = found
//! reference concepts / reference concepts.
//!
//! * **exact**: a predicted concept is right when it is one of the document's headings.
//! * **with parents**: concept `p` matches heading `g` when `p == g` or `p` is a direct parent
//!   (broader concept) of `g` in the MeSH hierarchy; precision counts predicted concepts that
//!   match some heading, recall counts headings that some predicted concept matches.
//!
//! Rows: the field as it was before document-level linking (passage matches with the graph
//! stoplist), literal matching with no stoplist, then each rule added in turn, then the final
//! configuration without each rule (ablation). The final configuration is also scored on the
//! even- and odd-numbered documents separately: the noise list and the rule tables were tuned
//! by looking at false positives of the even half only, so the odd half shows how much of the
//! gain is tuning. `--diagnose N` prints the N most frequent false positives and misses of the
//! final configuration on the even half, and the precision of each rule's inferred headings.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use agrag_pipeline::ingest::{Document, read_jsonl};
use agrag_pipeline::link::evaluate::{Matching, Scores, score_document};
use agrag_pipeline::link::{
    DEFAULT_STOPLIST, DocumentConcepts, DocumentLinkConfig, DocumentLinker, Evidence, LinkConfig,
    Rules, TermIndex, Vocabulary, load_vocabulary,
};

fn main() {
    if let Err(e) = run() {
        eprintln!("linking-quality: {e:#}");
        std::process::exit(2);
    }
}

/// Command line of `linking-quality` (see the crate-level docs of this binary).
#[derive(Debug, clap::Parser)]
#[command(
    name = "linking-quality",
    about = "How close the concept field comes to the corpus's own MeSH indexing, as markdown tables"
)]
struct Args {
    /// Data folder holding `mesh/` and `pubmedqa/documents.jsonl` [default: the shipped data/].
    #[arg(long, default_value_os_t = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data"))]
    data: PathBuf,
    /// Print the N most frequent false positives and misses of the final configuration (even
    /// half), and the precision of each rule's inferred headings.
    #[arg(long, default_value_t = 0)]
    diagnose: usize,
    /// Print, for the first N even documents, the definitions found, the predicted concepts
    /// (right or wrong) with their evidence, and the missed headings.
    #[arg(long, default_value_t = 0)]
    explain: usize,
    /// Score the final configuration only (no ablation rows).
    #[arg(long)]
    only_final: bool,
}

fn parse_args() -> Result<Args, String> {
    Ok(<Args as clap::Parser>::parse())
}

struct Corpus {
    vocab: Vocabulary,
    documents: Vec<Document>,
    reference: Vec<Vec<u32>>,
    unresolved: usize,
}

fn load(data: &std::path::Path) -> Result<Corpus, String> {
    let vocab = load_vocabulary(&data.join("mesh")).map_err(|e| format!("{e:#}"))?;
    let corpus =
        read_jsonl(&data.join("pubmedqa/documents.jsonl")).map_err(|e| format!("{e:#}"))?;
    let index = TermIndex::new(&vocab);
    let mut unresolved = 0;
    let reference = corpus
        .documents
        .iter()
        .map(|d| {
            let mut v: Vec<u32> = d
                .headings
                .iter()
                .filter_map(|h| {
                    let c = index.get(h);
                    unresolved += usize::from(c.is_none());
                    c
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    Ok(Corpus {
        vocab,
        documents: corpus.documents,
        reference,
        unresolved,
    })
}

fn link_all(linker: &DocumentLinker, docs: &[Document]) -> Vec<DocumentConcepts> {
    docs.iter()
        .map(|d| {
            let ps: Vec<&str> = d.passages.iter().map(String::as_str).collect();
            linker.link_document(&d.title, &ps)
        })
        .collect()
}

/// Exact and with-parents scores of `predicted` over the documents `keep` accepts.
fn scores(c: &Corpus, predicted: &[Vec<u32>], keep: impl Fn(usize) -> bool) -> (Scores, Scores) {
    let mut exact = Scores::default();
    let mut parents = Scores::default();
    for (d, p) in predicted.iter().enumerate() {
        if keep(d) {
            exact.add(&score_document(
                &c.vocab,
                p,
                &c.reference[d],
                Matching::Exact,
            ));
            parents.add(&score_document(
                &c.vocab,
                p,
                &c.reference[d],
                Matching::WithParents,
            ));
        }
    }
    (exact, parents)
}

fn row(name: &str, (e, p): (Scores, Scores), per_doc: f64) -> String {
    format!(
        "| {name} | {:.1} | {:.3} | {:.3} | **{:.3}** | {:.3} | {:.3} | {:.3} |",
        per_doc,
        e.precision(),
        e.recall(),
        e.f1(),
        p.precision(),
        p.recall(),
        p.f1()
    )
}

/// Switches one rule on or off.
type Toggle = fn(&mut Rules, bool);

/// Every rule, in the order the table adds them.
const RULES: [(&str, Toggle); 9] = [
    ("title", |r, on| r.title = on),
    ("noise filter", |r, on| r.noise_filter = on),
    ("abbreviations", |r, on| r.abbreviations = on),
    ("hierarchy", |r, on| r.hierarchy = on),
    ("check tags", |r, on| r.check_tags = on),
    ("mixed sex", |r, on| r.mixed_sex = on),
    ("age groups", |r, on| r.age_groups = on),
    ("adult default", |r, on| r.adult_default = on),
    ("study design", |r, on| r.study_design = on),
];

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let c = load(&args.data)?;
    let n = c.documents.len();
    let num_ref: usize = c.reference.iter().map(Vec::len).sum();
    println!(
        "# Linking quality on {} ({} documents, {} reference headings resolved, {} unresolved)\n",
        args.data.join("pubmedqa/documents.jsonl").display(),
        n,
        num_ref,
        c.unresolved
    );
    let build = |rules: Rules| -> Result<DocumentLinker, String> {
        let link = LinkConfig {
            document: DocumentLinkConfig {
                rules,
                ..DocumentLinkConfig::default()
            },
            ..LinkConfig::default()
        };
        DocumentLinker::new(&c.vocab, &link).map_err(|e| format!("{e:#}"))
    };

    // Before: the union of passage mentions with the graph stoplist, with the linker as it
    // was before document-level linking (no cancer variants, publication types linked, no
    // "will" stop) and with this branch's graph linker.
    let legacy = LinkConfig {
        cancer_variants: false,
        excluded_branches: Vec::new(),
        stoplist: DEFAULT_STOPLIST
            .iter()
            .filter(|s| **s != "Will")
            .map(|s| (*s).to_owned())
            .collect(),
        ..LinkConfig::default()
    };
    let legacy = DocumentLinker::new(&c.vocab, &legacy).map_err(|e| format!("{e:#}"))?;
    let union = |linked: &[DocumentConcepts]| -> Vec<Vec<u32>> {
        linked
            .iter()
            .map(|d| {
                let mut v: Vec<u32> = d
                    .passage_mentions
                    .iter()
                    .flatten()
                    .map(|&(c, _)| c)
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect()
    };
    let before = union(&link_all(&legacy, &c.documents));
    let graph_linker = build(Rules::LITERAL)?;
    let graph_only = union(&link_all(&graph_linker, &c.documents));

    let mut configs: Vec<(String, Rules)> = vec![("literal, no stoplist".into(), Rules::LITERAL)];
    let mut acc = Rules::LITERAL;
    for (name, toggle) in RULES {
        toggle(&mut acc, true);
        configs.push((format!("+ {name}"), acc));
    }
    for (name, toggle) in RULES {
        let mut r = Rules::ALL;
        toggle(&mut r, false);
        configs.push((format!("all − {name}"), r));
    }

    println!(
        "| configuration | concepts/doc | P exact | R exact | F1 exact | P parents | R parents | F1 parents |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let per_doc = |p: &[Vec<u32>]| p.iter().map(Vec::len).sum::<usize>() as f64 / n as f64;
    println!(
        "{}",
        row(
            "before: passage matches, graph stoplist (main's linker)",
            scores(&c, &before, |_| true),
            per_doc(&before)
        )
    );
    println!(
        "{}",
        row(
            "passage matches, graph stoplist (this branch's graph linker)",
            scores(&c, &graph_only, |_| true),
            per_doc(&graph_only)
        )
    );
    for (name, rules) in &configs {
        if args.only_final && *rules != Rules::ALL {
            continue;
        }
        let linker = build(*rules)?;
        let pred: Vec<Vec<u32>> = link_all(&linker, &c.documents)
            .iter()
            .map(DocumentConcepts::concept_ids)
            .collect();
        let label = if *rules == Rules::ALL {
            format!("{name} (= final)")
        } else {
            name.clone()
        };
        println!(
            "{}",
            row(&label, scores(&c, &pred, |_| true), per_doc(&pred))
        );
    }

    // Final, by half, and timing.
    let t = Instant::now();
    let final_linker = build(Rules::ALL)?;
    let build_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let linked = link_all(&final_linker, &c.documents);
    let link_s = t.elapsed().as_secs_f64();
    let pred: Vec<Vec<u32>> = linked.iter().map(DocumentConcepts::concept_ids).collect();
    println!("\n| final configuration on | documents | F1 exact | F1 parents |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, parity) in [
        ("even documents (tuning half)", 0),
        ("odd documents (held out)", 1),
    ] {
        let (e, p) = scores(&c, &pred, |d| d % 2 == parity);
        println!(
            "| {name} | {} | {:.3} | {:.3} |",
            (n + 1 - parity) / 2,
            e.f1(),
            p.f1()
        );
    }
    let bytes: usize = c
        .documents
        .iter()
        .map(|d| d.title.len() + d.passages.iter().map(String::len).sum::<usize>())
        .sum();
    println!(
        "\nThroughput (one thread, final configuration): {:.0} documents/s ({:.2} MB/s of text); \
         {n} documents in {:.3} s; building the linker (two automata): {:.2} s.",
        n as f64 / link_s,
        bytes as f64 / link_s / 1e6,
        link_s,
        build_s
    );

    // What abbreviations change in the graph's passage mentions.
    let no_abbr = link_all(
        &build(Rules {
            abbreviations: false,
            ..Rules::ALL
        })?,
        &c.documents,
    );
    let total = |l: &[DocumentConcepts]| -> u64 {
        l.iter()
            .flat_map(|d| d.passage_mentions.iter().flatten())
            .map(|&(_, k)| u64::from(k))
            .sum()
    };
    let num_definitions: usize = c
        .documents
        .iter()
        .flat_map(|d| std::iter::once(&d.title).chain(&d.passages))
        .map(|t| agrag_pipeline::link::find_definitions(t).len())
        .sum();
    println!(
        "\nAbbreviations: {num_definitions} definitions found; graph passage mentions (occurrences) \
         {} with the rule, {} without.",
        total(&linked),
        total(&no_abbr)
    );

    // Precision by evidence.
    let mut by_evidence: BTreeMap<Evidence, (u64, u64)> = BTreeMap::new();
    for (d, dc) in linked.iter().enumerate() {
        for x in &dc.concepts {
            let e = by_evidence.entry(x.evidence).or_default();
            e.0 += 1;
            e.1 += u64::from(c.reference[d].binary_search(&x.concept).is_ok());
        }
    }
    println!("\n| evidence (final) | concepts | right (exact) | precision |");
    println!("| --- | ---: | ---: | ---: |");
    for (e, (k, r)) in &by_evidence {
        println!(
            "| {e:?} | {k} | {r} | {:.3} |",
            *r as f64 / (*k).max(1) as f64
        );
    }

    if args.diagnose > 0 {
        diagnose(&c, &linked, args.diagnose);
    }
    if args.explain > 0 {
        explain(&c, &linked, args.explain);
    }
    Ok(())
}

/// Most frequent false positives and misses on the even half; precision of inferred headings.
fn diagnose(c: &Corpus, linked: &[DocumentConcepts], top: usize) {
    let name = |x: u32| c.vocab.concepts[x as usize].preferred_term.as_str();
    let mut fp: BTreeMap<u32, (u32, u32)> = BTreeMap::new(); // concept → (wrong, predicted)
    let mut fnc: BTreeMap<u32, u32> = BTreeMap::new();
    let mut inferred: BTreeMap<(Evidence, u32), (u32, u32, u32)> = BTreeMap::new(); // (pred, right, reference)
    for (d, dc) in linked.iter().enumerate() {
        if d % 2 != 0 {
            continue;
        }
        let pred = dc.concept_ids();
        for x in &dc.concepts {
            let right = c.reference[d].binary_search(&x.concept).is_ok();
            let e = fp.entry(x.concept).or_default();
            e.1 += 1;
            e.0 += u32::from(!right);
            if x.evidence >= Evidence::CheckTag {
                let e = inferred.entry((x.evidence, x.concept)).or_default();
                e.0 += 1;
                e.1 += u32::from(right);
            }
        }
        for &g in &c.reference[d] {
            if pred.binary_search(&g).is_err() {
                *fnc.entry(g).or_default() += 1;
            }
        }
    }
    // Text concepts by title / number of mentions.
    let mut buckets: BTreeMap<(bool, u32), (u32, u32)> = BTreeMap::new();
    for (d, dc) in linked.iter().enumerate().filter(|(d, _)| d % 2 == 0) {
        for x in dc
            .concepts
            .iter()
            .filter(|x| x.evidence <= Evidence::Abbreviation)
        {
            let b = buckets
                .entry((x.in_title, x.num_mentions.min(4)))
                .or_default();
            b.0 += 1;
            b.1 += u32::from(c.reference[d].binary_search(&x.concept).is_ok());
        }
    }
    println!(
        "\n## Even half: text concepts by title and mentions\n\n| in title | mentions | concepts | precision |"
    );
    println!("| --- | ---: | ---: | ---: |");
    for ((t, m), (k, r)) in &buckets {
        println!(
            "| {t} | {m}{} | {k} | {:.2} |",
            if *m == 4 { "+" } else { "" },
            f64::from(*r) / f64::from(*k)
        );
    }
    let mut fpv: Vec<(u32, u32, u32)> = fp.into_iter().map(|(k, (w, p))| (w, p, k)).collect();
    fpv.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
    println!("\n## Even half: most frequent false positives\n\n| concept | wrong | predicted |");
    println!("| --- | ---: | ---: |");
    for (w, p, k) in fpv.iter().take(top) {
        println!("| {} | {w} | {p} |", name(*k));
    }
    let mut fnv: Vec<(u32, u32)> = fnc.into_iter().map(|(k, n)| (n, k)).collect();
    fnv.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    println!("\n## Even half: most frequent misses\n\n| concept | missed |\n| --- | ---: |");
    for (n, k) in fnv.iter().take(top) {
        println!("| {} | {n} |", name(*k));
    }
    println!(
        "\n## Even half: inferred headings\n\n| evidence | heading | predicted | right | precision |"
    );
    println!("| --- | --- | ---: | ---: | ---: |");
    for ((e, k), (p, r, _)) in &inferred {
        println!(
            "| {e:?} | {} | {p} | {r} | {:.2} |",
            name(*k),
            f64::from(*r) / f64::from((*p).max(1))
        );
    }
}

/// The first `top` even documents: definitions found, predicted concepts (✓ right, ✗ wrong)
/// with their evidence, and missed headings.
fn explain(c: &Corpus, linked: &[DocumentConcepts], top: usize) {
    let name = |x: u32| c.vocab.concepts[x as usize].preferred_term.as_str();
    for (d, dc) in linked
        .iter()
        .enumerate()
        .filter(|(d, _)| d % 2 == 0)
        .take(top)
    {
        let doc = &c.documents[d];
        println!("\n### {} {}", doc.key, doc.title);
        for t in std::iter::once(&doc.title).chain(&doc.passages) {
            for def in agrag_pipeline::link::find_definitions(t) {
                println!(
                    "- abbreviation {} = {:?}",
                    def.short,
                    &t[def.long_start..def.long_end]
                );
            }
        }
        let pred = dc.concept_ids();
        for x in &dc.concepts {
            let ok = c.reference[d].binary_search(&x.concept).is_ok();
            println!(
                "- {} {} ({:?}, {})",
                if ok { "✓" } else { "✗" },
                name(x.concept),
                x.evidence,
                x.num_mentions
            );
        }
        let missed: Vec<&str> = c.reference[d]
            .iter()
            .filter(|g| pred.binary_search(g).is_err())
            .map(|&g| name(g))
            .collect();
        println!("- missed: {}", missed.join("; "));
    }
}
