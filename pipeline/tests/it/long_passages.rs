//! A long passage links in time linear in its length. Checked by scaling, not by a time target:
//! the same real text (the shipped corpus, repeated) at two lengths sixteen times apart must
//! cost well under the square of that factor in thread CPU time, and find sixteen times the
//! mentions.

use std::path::PathBuf;
use std::time::Duration;

use agrag_pipeline::ingest::read_jsonl;
use agrag_pipeline::link::{DocumentLinker, LinkConfig, load_vocabulary};
use cpu_time::ThreadTime;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shipped corpus's passages, joined and repeated to `bytes` bytes (cut at a char boundary).
fn passage_of(base: &str, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + base.len());
    while s.len() < bytes {
        s.push_str(base);
        s.push(' ');
    }
    let mut cut = bytes;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s
}

/// Least thread CPU time of `runs` calls of `f`, and its last result.
fn least_cpu<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t = ThreadTime::now();
        out = Some(f());
        best = best.min(t.elapsed());
    }
    (best, out.unwrap())
}

#[test]
fn linking_time_grows_linearly_with_the_passage_length() {
    let vocab = load_vocabulary(&repo().join("data/mesh")).unwrap();
    let linker = DocumentLinker::new(&vocab, &LinkConfig::default()).unwrap();
    let corpus = read_jsonl(&repo().join("data/pubmedqa/documents.jsonl")).unwrap();
    let base: String = corpus
        .documents
        .iter()
        .flat_map(|d| d.passages.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let small = passage_of(&base, 250_000);
    let large = passage_of(&base, 4_000_000);
    let link = |text: &str| linker.link_document("", &[text]);
    let mentions = |dc: &agrag_pipeline::link::DocumentConcepts| -> u64 {
        dc.passage_mentions[0]
            .iter()
            .map(|&(_, n)| u64::from(n))
            .sum()
    };
    let (t_small, dc_small) = least_cpu(3, || link(&small));
    let (t_large, dc_large) = least_cpu(2, || link(&large));
    let (m_small, m_large) = (mentions(&dc_small), mentions(&dc_large));
    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64().max(1e-9);
    eprintln!(
        "link 0.25 MB: {t_small:?} ({m_small} mentions); 4 MB: {t_large:?} ({m_large} mentions); \
         time ratio {ratio:.1} for 16x the text"
    );
    // The work found grows with the text...
    let found = m_large as f64 / m_small as f64;
    assert!((12.0..=20.0).contains(&found), "mentions grew {found:.1}x");
    // ...and so does the time: 16x for linear work, 256x for quadratic; the bound leaves a 2x
    // margin for noise and cache effects.
    assert!(
        ratio < 32.0,
        "16x the text took {ratio:.1}x the CPU time ({t_small:?} -> {t_large:?}): superlinear"
    );
}
