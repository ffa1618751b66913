//! `corpus-gen N OUT.jsonl --seed S`: a synthetic corpus of `N` documents built from the
//! shipped PubMedQA abstracts and MeSH, in the JSON Lines shape `agrag-pipeline run` reads.
//!
//! ```text
//! cargo run -p agrag-benches --release --bin corpus-gen -- 100000 /tmp/corpus-1e5.jsonl --seed 1
//! ```
//!
//! Each document takes one shipped abstract as its topic, keeps most of its sentences, mixes
//! in sentences of other abstracts and swaps some of the MeSH concepts the pipeline's linker
//! finds in it for a sibling concept's preferred term (a concept with the same parent), so the
//! distinct concepts grow with `N` while co-occurrence stays topical. What this imitates and
//! what it does not is documented on `agrag_benches::common::corpus`. The same inputs, `N` and
//! seed give a byte-identical file. Documents are written one at a time (memory does not grow
//! with `N`); the file is written under a temporary name and renamed when complete.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use agrag_benches::common::corpus::{CorpusGenerator, GenConfig};
use agrag_benches::common::workspace;
use anyhow::Context;
use clap::Parser;

/// Command line of `corpus-gen` (see the crate-level docs of this binary).
#[derive(Debug, Parser)]
#[command(
    name = "corpus-gen",
    about = "A synthetic corpus of N documents from the shipped abstracts and MeSH, as JSON Lines"
)]
struct Cli {
    /// Number of documents (≥ 1).
    #[arg(value_parser = clap::value_parser!(u64).range(1..))]
    num_documents: u64,
    /// Output file (JSON Lines); replaced if it exists.
    out: PathBuf,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Source abstracts (JSON Lines) [default: the shipped PubMedQA documents].
    #[arg(long)]
    documents: Option<PathBuf>,
    /// Vocabulary folder (concepts.tsv, broader.tsv) [default: the shipped MeSH].
    #[arg(long)]
    vocabulary: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let documents = cli
        .documents
        .clone()
        .unwrap_or_else(|| workspace().join("data/pubmedqa/documents.jsonl"));
    let vocabulary = cli
        .vocabulary
        .clone()
        .unwrap_or_else(|| workspace().join("data/mesh"));
    let t = Instant::now();
    let generator = CorpusGenerator::new(&documents, &vocabulary, GenConfig::default())
        .with_context(|| {
            format!(
                "reading the sources {} and {}",
                documents.display(),
                vocabulary.display()
            )
        })?;
    eprintln!(
        "{} source abstracts analysed in {:.1} s",
        generator.num_sources(),
        t.elapsed().as_secs_f64()
    );
    let tmp = cli.out.with_extension("jsonl.partial");
    let file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let n = cli.num_documents;
    let stats = generator
        .write(n, cli.seed, BufWriter::new(file), |done| {
            if done % 100_000 == 0 {
                eprintln!("{done} of {n} documents");
            }
        })
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &cli.out)
        .with_context(|| format!("renaming {} to {}", tmp.display(), cli.out.display()))?;
    eprintln!(
        "{} documents, {} passages, {} mixed-in sentences, {} concept swaps, {} distinct concepts, {:.1} MB in {:.1} s -> {}",
        stats.num_documents,
        stats.num_passages,
        stats.num_mixed_sentences,
        stats.num_swaps,
        stats.num_distinct_concepts,
        stats.num_bytes as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        cli.out.display()
    );
    Ok(())
}
