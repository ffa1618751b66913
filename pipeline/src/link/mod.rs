//! Link: find vocabulary concepts in passages by dictionary matching.
//!
//! Every preferred term and synonym (plus a singular/plural variant, and "X cancer" for
//! "X Neoplasms") becomes a pattern of one Aho-Corasick automaton, under its matching key
//! ([`normalize_term`]: NFKC, lower-cased, white space collapsed — the key the engine looks
//! query terms up by). The automaton runs over overlapping matches in the text's matching-key
//! form ([`fold_text`]), and every match is mapped back to a byte span of the text as given, so
//! `Myocardial\n  Infarction`, `ﬁbrosis` and full-width letters match like their plain forms.
//! Text should be in the stored form ([`normalize_text`](agrag_engine::format::normalize::normalize_text),
//! NFC), as ingest leaves it. A match counts only when
//! * it covers whole words (the characters around it are not letters or digits);
//! * for a *case-sensitive* term — an acronym or any short term with an upper-case letter after
//!   its first character, such as `WHO`, `HIV`, `pH` — the text matches it letter for letter
//!   ([`normalize_term_keep_case`]), so `WHO` (World Health Organization) never matches the
//!   word "who";
//! * the term is not on the stoplist, and its concept is not a stoplisted generic heading
//!   ([`DEFAULT_STOPLIST`]: check tags such as *Humans*, *Male*, and headings such as *Patients*,
//!   *Time*, *Risk*, *Therapeutics*);
//! * it is not inside a longer accepted match (longest match wins: "myocardial infarction"
//!   hides "infarction").
//!
//! Finding is linear in the text: one automaton pass, a sort of the candidate spans, and an
//! ordered set of accepted spans for the overlap test.

mod abbreviation;
mod age;
pub mod document;
pub mod evaluate;
mod tags;
mod text;
mod vocabulary;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use agrag_engine::format::normalize::{fold_text, normalize_term, normalize_term_keep_case};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde::Serialize;

pub use abbreviation::{Definition, find_definitions};
pub use document::{
    DOCUMENT_NOISE, DocumentConcept, DocumentConcepts, DocumentLinkConfig, DocumentLinker,
    Evidence, EvidenceWay, Rules,
};
pub use vocabulary::{
    BROADER_FILE, BrokenCycle, CONCEPTS_FILE, Concept, SUBCLASS_OF, TermIndex, Vocabulary,
    load_vocabulary, parse_vocabulary,
};

use crate::error::{PipelineError, Result};

/// Generic headings and terms that are never linked, matched case-insensitively against a
/// concept's preferred term and against each term string. They are MeSH check tags and
/// headings that name the setting of nearly every abstract rather than its subject.
pub const DEFAULT_STOPLIST: &[&str] = &[
    // Check tags and demographic groups.
    "Humans",
    "Animals",
    "Male",
    "Female",
    "Adult",
    "Aged",
    "Aged, 80 and over",
    "Middle Aged",
    "Young Adult",
    "Adolescent",
    "Child",
    "Child, Preschool",
    "Infant",
    "Infant, Newborn",
    "Pregnancy",
    // Generic headings that match everyday words of scientific prose.
    "Patients",
    "Time",
    "Time Factors",
    "Risk",
    "Risk Factors",
    "Therapeutics",
    "General Surgery",
    "Research",
    "Methods",
    "Disease",
    "Syndrome",
    "Treatment Outcome",
    "Data",
    "Role",
    "Population",
    "Report",
    "Publications",
    "Information",
    "Back",
    "Lead",
    "Rest",
    "Play",
    "Light",
    "Set",
    "Length",
    "Weights and Measures",
    "Hand",
    "Face",
    "Pressure",
    "Temperature",
    "Walking",
    "Work",
    "Language",
    "Nature",
    "Hope",
    "Safety",
    "Reading",
    "Sample Size",
    "Probability",
    "Odds Ratio",
    "Confidence Intervals",
    "Statistics as Topic",
    "Hospitals",
    "Research Design",
    "Surveys and Questionnaires",
    "Retrospective Studies",
    "Prospective Studies",
    "Follow-Up Studies",
    "Cohort Studies",
    "Cross-Sectional Studies",
    "Prevalence",
    "Incidence",
    "Diagnosis",
    "Therapy",
    "Treatment",
    "Surgery",
    "Study",
    "Studies",
    "Patient",
    "Group",
    "Groups",
    "Control Groups",
    "Outcome",
    "Purpose",
    "Objective",
    "Background",
    "Results",
    "Conclusion",
    "Age",
    "Mass",
    "Cells",
    "Cell",
    "Mouth",
    "Arm",
    "Persons",
    "White",
    "Black",
    "Guanosine Diphosphate",
    // The modal verb "will" (a term of *Wills* and *Volition*).
    "Will",
];

/// Linking parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkConfig {
    /// Terms shorter than this many characters are not linked unless case-sensitive (≥ 2).
    pub min_term_chars: usize,
    /// A term of at most this many characters with an upper-case letter after its first is
    /// matched case-sensitively.
    pub exact_case_max_chars: usize,
    /// Also match the singular/plural variant of each term (`Statins` ↔ `Statin`).
    pub plural_variants: bool,
    /// Also match `X Cancer` and `X Tumor`/`X Tumour` for every uninverted term `X Neoplasms`
    /// of two words or more (`Prostate Neoplasms` → "prostate cancer"). The vocabulary keeps
    /// only the terms of each descriptor's preferred concept, which leaves out the "cancer"
    /// forms that abstracts use.
    pub cancer_variants: bool,
    /// Preferred terms or term strings never linked (compared by [`normalize_term`] key).
    pub stoplist: Vec<String>,
    /// Preferred terms of branches never linked: the concept itself and every concept whose
    /// parents are all in such a branch (a concept that also sits in another branch stays).
    /// The default is MeSH's publication characteristics (category V: publication types such
    /// as *Review*, *Overall*, *Index*, *Chart*), which say what kind of document an article
    /// is, never what it is about; their names are everyday words of abstracts.
    pub excluded_branches: Vec<String>,
    /// Document-level rules for the `concept` node field ([`DocumentLinker`]).
    pub document: DocumentLinkConfig,
}

/// The roots of MeSH category V, Publication Characteristics.
pub const PUBLICATION_CHARACTERISTICS: &[&str] = &[
    "Publication Components",
    "Publication Formats",
    "Study Characteristics",
    "Support of Research",
];

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            min_term_chars: 4,
            exact_case_max_chars: 6,
            plural_variants: true,
            cancer_variants: true,
            stoplist: DEFAULT_STOPLIST.iter().map(|s| (*s).to_owned()).collect(),
            excluded_branches: PUBLICATION_CHARACTERISTICS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            document: DocumentLinkConfig::default(),
        }
    }
}

/// Who a pattern links to, and whether case must match exactly.
#[derive(Debug, Clone)]
struct Target {
    concept: u32,
    /// `Some(key)`: the text's [`normalize_term_keep_case`] key must equal `key`.
    exact: Option<String>,
    preferred: bool,
}

/// One accepted match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// Concept index in the vocabulary.
    pub concept: u32,
    /// Byte offset of the match start in the text.
    pub start: usize,
    /// Byte offset one past the match end.
    pub end: usize,
}

/// A compiled dictionary linker over one vocabulary.
///
/// Several linkers over one vocabulary that differ only in their stoplists can share one
/// automaton ([`Linker::sharing`]): a pattern a linker does not link has no targets in it, and
/// a span without targets is never accepted, so each answers as if it had its own automaton,
/// and one scan of a text ([`Linker::candidates`]) serves them all.
#[derive(Debug)]
pub struct Linker {
    automaton: Arc<AhoCorasick>,
    /// Targets per pattern of `automaton` (empty for a pattern this linker does not link).
    targets: Vec<Vec<Target>>,
    /// Patterns with at least one target.
    num_patterns: usize,
}

/// The candidate matches of one text: every whole-word occurrence of a pattern of the shared
/// automaton, as `(start, end, pattern)` with byte offsets of the text as given, in the
/// automaton's report order.
#[derive(Debug, Clone, Default)]
pub struct Candidates(Vec<(usize, usize, usize)>);

fn is_case_sensitive(term: &str, cfg: &LinkConfig) -> bool {
    let n = term.chars().count();
    n <= cfg.exact_case_max_chars && term.chars().skip(1).any(char::is_uppercase)
}

fn plural_variant(term: &str) -> Option<String> {
    let last = term.rsplit(' ').next().unwrap_or(term);
    if last.len() < 4 || !last.chars().all(|c| c.is_ascii_alphabetic()) || term.contains(',') {
        return None;
    }
    if let Some(stem) = term.strip_suffix("ies") {
        return Some(format!("{stem}y"));
    }
    if term.ends_with("ss") || term.ends_with("us") || term.ends_with("is") {
        return None;
    }
    if let Some(stem) = term.strip_suffix('s') {
        return Some(stem.to_owned());
    }
    if let Some(stem) = term.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'o', 'u'])
    {
        return Some(format!("{stem}ies"));
    }
    Some(format!("{term}s"))
}

/// `X Cancer`, `X Tumor`, `X Tumour` for a term `X Neoplasm(s)` (uninverted, two words or more).
fn cancer_variants(term: &str) -> Vec<String> {
    let Some((stem, last)) = term.rsplit_once(' ') else {
        return Vec::new();
    };
    if term.contains(',') || !matches!(last, "Neoplasms" | "Neoplasm") {
        return Vec::new();
    }
    ["Cancer", "Tumor", "Tumour"]
        .iter()
        .map(|w| format!("{stem} {w}"))
        .collect()
}

/// Per concept: whether it lies only under the branches named by `roots` (preferred terms,
/// compared by [`normalize_term`] key), i.e. it is such a root or all its parents are excluded.
///
/// # Complexity
/// * Time: **O(|V| + |E|)** (each concept is decided once, parents first).
pub fn excluded_by_branch(vocab: &Vocabulary, roots: &[String]) -> Vec<bool> {
    let roots: HashSet<String> = roots.iter().map(|s| normalize_term(s)).collect();
    let n = vocab.len();
    // 0 = undecided, 1 = kept, 2 = excluded.
    let mut state = vec![0u8; n];
    if roots.is_empty() {
        return vec![false; n];
    }
    for start in 0..n as u32 {
        // Depth-first, deciding parents before children (the hierarchy is acyclic).
        let mut stack = vec![start];
        while let Some(&c) = stack.last() {
            if state[c as usize] != 0 {
                stack.pop();
                continue;
            }
            let pending: Vec<u32> = vocab
                .parents(c)
                .filter(|&p| state[p as usize] == 0)
                .collect();
            if pending.is_empty() {
                let is_root =
                    roots.contains(&normalize_term(&vocab.concepts[c as usize].preferred_term));
                let mut parents = vocab.parents(c).peekable();
                let under = parents.peek().is_some() && parents.all(|p| state[p as usize] == 2);
                state[c as usize] = if is_root || under { 2 } else { 1 };
                stack.pop();
            } else {
                stack.extend(pending);
            }
        }
    }
    state.into_iter().map(|s| s == 2).collect()
}

/// Pattern key ([`normalize_term`]) → the concepts a match of it links to under `cfg`.
fn targets_by_key(vocab: &Vocabulary, cfg: &LinkConfig) -> Result<BTreeMap<String, Vec<Target>>> {
    if cfg.min_term_chars < 2 {
        return Err(PipelineError::InvalidConfig {
            field: "min_term_chars",
            value: cfg.min_term_chars.to_string(),
            expected: "at least 2",
        });
    }
    let stop: HashSet<String> = cfg.stoplist.iter().map(|s| normalize_term(s)).collect();
    let excluded = excluded_by_branch(vocab, &cfg.excluded_branches);
    // Pattern key ([`normalize_term`]) → targets.
    let mut by_key: BTreeMap<String, Vec<Target>> = BTreeMap::new();
    for (ci, concept) in vocab.concepts.iter().enumerate() {
        if excluded[ci] || stop.contains(&normalize_term(&concept.preferred_term)) {
            continue;
        }
        let ci = ci as u32;
        let terms = std::iter::once((&concept.preferred_term, true))
            .chain(concept.synonyms.iter().map(|s| (s, false)));
        for (term, preferred) in terms {
            let mut variants = vec![(term.clone(), preferred)];
            if cfg.cancer_variants {
                variants.extend(cancer_variants(term).into_iter().map(|v| (v, false)));
            }
            if cfg.plural_variants {
                let plurals: Vec<(String, bool)> = variants
                    .iter()
                    .filter_map(|(t, p)| plural_variant(t).map(|v| (v, *p)))
                    .collect();
                variants.extend(plurals);
            }
            for (t, preferred) in variants {
                let key = normalize_term(&t);
                if stop.contains(&key) {
                    continue;
                }
                let exact = is_case_sensitive(&t, cfg);
                let n = key.chars().count();
                if n < 2 || (!exact && n < cfg.min_term_chars) {
                    continue;
                }
                by_key.entry(key).or_default().push(Target {
                    concept: ci,
                    exact: exact.then(|| normalize_term_keep_case(&t)),
                    preferred,
                });
            }
        }
    }
    for ts in by_key.values_mut() {
        // A string that is some concept's preferred term links to that concept only.
        if ts.iter().any(|t| t.preferred) {
            ts.retain(|t| t.preferred);
        }
        ts.sort_by(|a, b| (a.concept, &a.exact).cmp(&(b.concept, &b.exact)));
        ts.dedup_by(|a, b| a.concept == b.concept && a.exact == b.exact);
    }
    Ok(by_key)
}

impl Linker {
    /// Compiles the linker.
    ///
    /// # Errors
    /// [`PipelineError::InvalidConfig`] for `min_term_chars` < 2;
    /// [`PipelineError::Library`] when the automaton cannot be built.
    pub fn new(vocab: &Vocabulary, cfg: &LinkConfig) -> Result<Self> {
        let [linker] = Self::sharing(vocab, [cfg])?;
        Ok(linker)
    }

    /// Compiles one linker per configuration, all over one automaton of the union of their
    /// patterns. Each answers [`find`](Self::find) exactly as [`Linker::new`] with its
    /// configuration would; [`candidates`](Self::candidates) of any of them feeds
    /// [`accept`](Self::accept) of every other.
    ///
    /// # Errors
    /// As [`Linker::new`], for any of the configurations.
    pub fn sharing<const N: usize>(
        vocab: &Vocabulary,
        cfgs: [&LinkConfig; N],
    ) -> Result<[Self; N]> {
        let by_key: Vec<BTreeMap<String, Vec<Target>>> = cfgs
            .iter()
            .map(|cfg| targets_by_key(vocab, cfg))
            .collect::<Result<_>>()?;
        let mut keys: Vec<&String> = by_key.iter().flat_map(BTreeMap::keys).collect();
        keys.sort_unstable();
        keys.dedup();
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::Standard)
            .build(&keys)
            .map_err(|e| PipelineError::library("building the term automaton", e))?;
        let automaton = Arc::new(automaton);
        let linkers: Vec<Self> = by_key
            .iter()
            .map(|mine| Self {
                automaton: Arc::clone(&automaton),
                targets: keys
                    .iter()
                    .map(|k| mine.get(*k).cloned().unwrap_or_default())
                    .collect(),
                num_patterns: mine.len(),
            })
            .collect();
        Ok(linkers
            .try_into()
            .unwrap_or_else(|_| unreachable!("one linker per configuration")))
    }

    /// Number of distinct patterns.
    pub fn num_patterns(&self) -> usize {
        self.num_patterns
    }

    /// Every accepted match in `text`, ordered by start offset. Offsets are bytes of `text`
    /// (char boundaries).
    ///
    /// # Complexity
    /// * Time: **O(n + m log m)** for `n` bytes of text and `m` candidate matches (the
    ///   automaton's overlapping matches); space **O(n + m)**.
    pub fn find(&self, text: &str) -> Vec<Link> {
        self.accept(text, &self.candidates(text))
    }

    /// The whole-word occurrences in `text` of every pattern of the automaton this linker
    /// shares, for [`accept`](Self::accept) of any linker that shares it.
    ///
    /// # Complexity
    /// * Time: **O(n + m)** for `n` bytes of text and `m` overlapping matches.
    pub fn candidates(&self, text: &str) -> Candidates {
        let alnum_before = |i: usize| {
            text[..i]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
        };
        let alnum_at = |i: usize| text[i..].chars().next().is_some_and(char::is_alphanumeric);
        // The automaton runs over the matching-key form of the text; spans map back to `text`.
        let folded = fold_text(text);
        let mut spans: Vec<(usize, usize, usize)> = Vec::new(); // (start, end, pattern)
        for m in self.automaton.find_overlapping_iter(folded.as_str()) {
            let Some((s, e)) = folded.source_span(m.start(), m.end()) else {
                continue;
            };
            if alnum_before(s) || alnum_at(e) {
                continue;
            }
            spans.push((s, e, m.pattern().as_usize()));
        }
        Candidates(spans)
    }

    /// The accepted matches among `candidates` of `text` (from [`candidates`](Self::candidates)
    /// of a linker sharing this one's automaton), ordered by start offset, as
    /// [`find`](Self::find) gives them.
    ///
    /// # Complexity
    /// * Time: **O(m log m)** for `m` candidates.
    ///
    /// # Panics
    /// When `candidates` name a pattern this linker's automaton does not have (they came from
    /// a linker that does not share it).
    pub fn accept(&self, text: &str, candidates: &Candidates) -> Vec<Link> {
        // Patterns this linker does not link are never accepted; drop them before the sort.
        let mut spans: Vec<(usize, usize, usize)> = candidates
            .0
            .iter()
            .copied()
            .filter(|&(_, _, p)| !self.targets[p].is_empty())
            .collect();
        // Longest first, then leftmost; accept spans that do not overlap an accepted one.
        spans.sort_by(|a, b| (b.1 - b.0, a.0).cmp(&(a.1 - a.0, b.0)));
        // Accepted spans, start → end. They never overlap, so the one starting last before
        // `e` is the only one that can overlap `s..e`.
        let mut taken: BTreeMap<usize, usize> = BTreeMap::new();
        let mut links = Vec::new();
        for (s, e, p) in spans {
            if taken.range(..e).next_back().is_some_and(|(_, &te)| te > s) {
                continue;
            }
            let mut exact_key: Option<String> = None;
            let concepts: Vec<u32> = self.targets[p]
                .iter()
                .filter(|t| {
                    t.exact.as_ref().is_none_or(|x| {
                        x == exact_key.get_or_insert_with(|| normalize_term_keep_case(&text[s..e]))
                    })
                })
                .map(|t| t.concept)
                .collect();
            if concepts.is_empty() {
                continue;
            }
            taken.insert(s, e);
            for concept in concepts {
                links.push(Link {
                    concept,
                    start: s,
                    end: e,
                });
            }
        }
        links.sort_by_key(|l| (l.start, l.concept));
        links.dedup();
        links
    }

    /// The concepts found in `text` with how often each occurs, sorted by concept index.
    pub fn concepts_in(&self, text: &str) -> Vec<(u32, u32)> {
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for l in self.find(text) {
            *counts.entry(l.concept).or_insert(0) += 1;
        }
        let mut v: Vec<(u32, u32)> = counts.into_iter().collect();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocabulary {
        let c = |id: &str, t: &str, s: &[&str]| Concept {
            id: id.into(),
            preferred_term: t.into(),
            synonyms: s.iter().map(|x| (*x).into()).collect(),
        };
        Vocabulary::from_parts(
            vec![
                c("D1", "Myocardial Infarction", &["Heart Attack"]),
                c("D2", "Infarction", &[]),
                c("D3", "World Health Organization", &["WHO"]),
                c("D4", "Humans", &["Human"]),
                c(
                    "D5",
                    "Hydroxymethylglutaryl-CoA Reductase Inhibitors",
                    &["Statins"],
                ),
                c("D6", "Mortality", &[]),
            ],
            &[],
            "v".into(),
        )
        .unwrap()
    }

    fn ids(l: &Linker, v: &Vocabulary, text: &str) -> Vec<String> {
        l.concepts_in(text)
            .into_iter()
            .map(|(c, n)| format!("{}x{n}", v.concepts[c as usize].id))
            .collect()
    }

    #[test]
    fn longest_match_whole_words_and_plurals() {
        let v = vocab();
        let l = Linker::new(&v, &LinkConfig::default()).unwrap();
        assert_eq!(
            ids(
                &l,
                &v,
                "Does a statin reduce mortality after myocardial infarction? Infarction."
            ),
            vec!["D1x1", "D2x1", "D5x1", "D6x1"]
        );
        assert_eq!(ids(&l, &v, "heart attacks"), vec!["D1x1"]);
        // Not inside another word.
        assert!(ids(&l, &v, "Infarctional mortalityx").is_empty());
    }

    #[test]
    fn acronyms_are_case_sensitive_and_stoplist_applies() {
        let v = vocab();
        let l = Linker::new(&v, &LinkConfig::default()).unwrap();
        assert!(ids(&l, &v, "Patients who were human").is_empty());
        assert_eq!(ids(&l, &v, "guidelines of the WHO"), vec!["D3x1"]);
    }

    #[test]
    fn cancer_variants_of_neoplasm_terms() {
        assert_eq!(
            cancer_variants("Prostate Neoplasms"),
            vec!["Prostate Cancer", "Prostate Tumor", "Prostate Tumour"]
        );
        assert!(cancer_variants("Neoplasms").is_empty());
        assert!(cancer_variants("Neoplasms, Prostate").is_empty());
        let c = |id: &str, t: &str, s: &[&str]| Concept {
            id: id.into(),
            preferred_term: t.into(),
            synonyms: s.iter().map(|x| (*x).into()).collect(),
        };
        let v = Vocabulary::from_parts(
            vec![
                c("D1", "Prostatic Neoplasms", &["Prostate Neoplasms"]),
                c("D2", "Prostate", &[]),
            ],
            &[],
            "v".into(),
        )
        .unwrap();
        let l = Linker::new(&v, &LinkConfig::default()).unwrap();
        assert_eq!(ids(&l, &v, "Men with prostate cancers."), vec!["D1x1"]);
    }

    #[test]
    fn publication_types_are_excluded_with_their_branch() {
        let c = |id: &str, t: &str| Concept {
            id: id.into(),
            preferred_term: t.into(),
            synonyms: vec![],
        };
        // V: Publication Formats ← Review ← Systematic Review; Meta-Analysis sits under V and
        // under a subject branch (Statistics), so it stays.
        let v = Vocabulary::from_parts(
            vec![
                c("V", "Publication Formats"),
                c("R", "Review"),
                c("S", "Systematic Review"),
                c("T", "Statistics as Topic"),
                c("M", "Meta-Analysis"),
            ],
            &[
                ("R".into(), "V".into()),
                ("S".into(), "R".into()),
                ("M".into(), "V".into()),
                ("M".into(), "T".into()),
            ],
            "v".into(),
        )
        .unwrap();
        let cfg = LinkConfig::default();
        assert_eq!(
            excluded_by_branch(&v, &cfg.excluded_branches),
            vec![true, true, true, false, false]
        );
        let l = Linker::new(&v, &cfg).unwrap();
        assert_eq!(
            ids(&l, &v, "A review and a systematic review of meta-analysis."),
            vec!["Mx1"]
        );
    }

    #[test]
    fn unicode_forms_spacing_and_case_match_like_queries() {
        let c = |id: &str, t: &str| Concept {
            id: id.into(),
            preferred_term: t.into(),
            synonyms: vec![],
        };
        let v = Vocabulary::from_parts(
            vec![
                c("M", "Ménière Disease"),
                c("F", "Fibrosis"),
                c("I", "Myocardial Infarction"),
                c("W", "WHO"),
            ],
            &[],
            "v".into(),
        )
        .unwrap();
        let l = Linker::new(&v, &LinkConfig::default()).unwrap();
        // Stored text is NFC (ingest); the ligature, the full-width letters, the upper case
        // of a non-ASCII term and the line break fold to the terms' keys.
        let text = "MÉNIÈRE disease, ﬁbrosis and a Myocardial\n  infarction; ＷＨＯ but not who.";
        let found: Vec<(&str, &str)> = l
            .find(text)
            .iter()
            .map(|k| {
                (
                    v.concepts[k.concept as usize].id.as_str(),
                    &text[k.start..k.end],
                )
            })
            .collect();
        assert_eq!(
            found,
            vec![
                ("M", "MÉNIÈRE disease"),
                ("F", "ﬁbrosis"),
                ("I", "Myocardial\n  infarction"),
                ("W", "ＷＨＯ"),
            ]
        );
        // Not the tail of a folded character, nor inside a word.
        assert!(l.find("ﬃbrosis").is_empty());
    }

    #[test]
    fn plural_variants() {
        assert_eq!(plural_variant("Statins").as_deref(), Some("Statin"));
        assert_eq!(plural_variant("Therapy").as_deref(), Some("Therapies"));
        assert_eq!(plural_variant("Arteries").as_deref(), Some("Artery"));
        assert_eq!(plural_variant("Virus"), None);
        assert_eq!(plural_variant("Infarction, Myocardial"), None);
    }
}
