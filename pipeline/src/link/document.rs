//! Document-level linking: one document's title and passages → the passage mentions the graph
//! is built from, and the document's `concept` node-field set, which aims at the concepts an
//! indexer would assign (MeSH indexing).
//!
//! Dictionary matches alone find only about a fifth of what indexers assign (see
//! `data/README.md`), so the document set adds deterministic rules, each one a switch in
//! [`Rules`] so its effect can be measured (`linking-quality` in `agrag-benches`):
//!
//! | rule | what it does |
//! | --- | --- |
//! | `title` | the title (the article's question) is linked like a passage |
//! | `abbreviations` | "programmed cell death (PCD)" makes every later `PCD` a mention of the long form's concept, and stops `PCD` from linking to a dictionary acronym of another meaning ([`find_definitions`], Schwartz & Hearst 2003) |
//! | `noise_filter` | concepts matched only through everyday words ("patients", "time", "treatment", "aged") are never put in the document set ([`DOCUMENT_NOISE`]) |
//! | `hierarchy` | of two text-matched concepts where one is broader than the other, only the narrower is kept (indexers assign the most specific heading) |
//! | `check_tags` | *Humans*, *Animals*, *Female*, *Male*, *Pregnancy* from population words ("patients", "women", "rats", "pregnant") |
//! | `mixed_sex` | a study of people that names neither sex gets both *Female* and *Male* (indexers tag the sexes of the study population, which abstracts rarely spell out) |
//! | `age_groups` | MeSH age groups from stated ages ("aged 35 to 65 years", "mean age 62 ± 8 years") and age words ("children", "elderly") |
//! | `adult_default` | a study of people that states no age and no age word gets *Adult*, *Middle Aged* and *Aged*: the ages of most clinical study populations, which indexers read in the full text |
//! | `study_design` | *Retrospective Studies*, *Cross-Sectional Studies*, *Surveys and Questionnaires*, *Risk Factors*… from the words that signal them |
//!
//! The passage mentions for the graph keep the graph's own stoplist
//! ([`LinkConfig::stoplist`]): no check tag or generic heading ever becomes a graph node. Of
//! the rules above they only gain `abbreviations` (on the shipped corpus, +11 % mention
//! occurrences).
//!
//! Nothing here reads a document's own headings; they are only the reference the quality
//! bench compares with.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use agrag_engine::format::normalize::normalize_term;
use rustc_hash::FxHashSet;
use serde::Serialize;

use super::abbreviation::{ShortForms, find_definitions};
use super::age::{AGE_GROUPS, AGE_WORDS, age_intervals, groups_overlapping};
use super::tags::{
    ANIMAL_WORDS, BOTH_SEXES_WORDS, DESIGN_RULES, FEMALE_WORDS, HUMAN_WORDS, MALE_WORDS,
    PREGNANCY_WORDS,
};
use super::text::{Token, contains_phrase, tokenize, words};
use super::{Candidates, Link, LinkConfig, Linker, TermIndex, Vocabulary};
use crate::error::Result;

/// Concepts left out of the document set when the `noise_filter` rule is on: headings whose
/// terms are everyday words of scientific prose ("patients", "time", "treatment", "aged") and
/// that indexers almost never assign on the strength of those words. Matched
/// case-insensitively against preferred terms and term strings, like [`LinkConfig::stoplist`].
/// Headings that indexers do assign (check tags, study designs, *Risk Factors*…) are not here:
/// the rules decide those.
pub const DOCUMENT_NOISE: &[&str] = &[
    "Patients",
    "Time",
    "Therapeutics",
    "General Surgery",
    "Research",
    "Methods",
    "Disease",
    "Syndrome",
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
    "Reading",
    "Diagnosis",
    "Therapy",
    "Treatment",
    "Surgery",
    "Study",
    "Studies",
    "Patient",
    "Group",
    "Groups",
    "Outcome",
    "Purpose",
    "Objective",
    "Background",
    "Results",
    "Conclusion",
    "Mass",
    "Cells",
    "Cell",
    "Persons",
    "White",
    "Black",
    "Guanosine Diphosphate",
    "Aged",
    "Age",
    // The modal verb "will" (a term of *Wills* and *Volition*).
    "Will",
    // Everyday and methods words measured on the tuning half of the shipped corpus: predicted
    // at least 5 times there and right (an indexer's heading) less than 10 % of the time.
    "Risk",
    "Overall",
    "Women",
    "Association",
    "Hospitals",
    "Confidence Intervals",
    "Index",
    "History",
    "Review",
    "Affect",
    "Control Groups",
    "Database",
    "Dataset",
    "Classification",
    "Literature",
    "Records",
    "Program",
    "Form",
    "Pharmaceutical Preparations",
    "Drug Therapy",
    "Life",
    "Serum",
    "Plasma",
    "Tissues",
    "Observational Study",
    "Clinical Trial",
    "Respect",
    "Interview",
    "Demography",
    "Universities",
    "Knowledge",
    "Paper",
    "Wills",
    "Guideline",
    "Chart",
    "Laboratories",
    "Pathology",
    "Histology",
    "Genetics",
    "Policy",
    "Culture",
    "Observation",
    "Societies",
    "Bias",
    "Statistics",
    "Address",
    "Goals",
    "Gold",
    "Growth",
    "Adoption",
    "Documentation",
    "Electronics",
    "Magnetics",
    "Computers",
    "Power, Psychological",
    "Occupational Groups",
    "Ventilation",
    "Radiation",
    "Alcohols",
    // Outcome words: indexers use the specific heading (Survival Rate, Hospital Mortality…).
    "Death",
    "Survival",
    "Mortality",
    "Morbidity",
    // Population words: indexers name a profession or setting only when it is the subject.
    "Outpatients",
    "Inpatients",
    "Volunteers",
    "Healthy Volunteers",
    "Physicians",
    "Students",
    "Nurses",
    "Surgeons",
    "Radiologists",
    "General Practitioners",
];

/// Which rules build the document set. See the [module docs](self) for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rules {
    /// Link the title like a passage.
    pub title: bool,
    /// Abbreviations defined in the text.
    pub abbreviations: bool,
    /// Leave out [`DOCUMENT_NOISE`] concepts.
    pub noise_filter: bool,
    /// Keep the narrower of an ancestor/descendant pair.
    pub hierarchy: bool,
    /// *Humans*, *Animals*, *Female*, *Male*, *Pregnancy* from population words.
    pub check_tags: bool,
    /// Both sexes for a study of people that names neither.
    pub mixed_sex: bool,
    /// Age groups from ages and age words.
    pub age_groups: bool,
    /// *Adult*, *Middle Aged*, *Aged* for a study of people that states no age at all.
    pub adult_default: bool,
    /// Study-design headings from the words that signal them.
    pub study_design: bool,
}

impl Rules {
    /// Every rule on (the default).
    pub const ALL: Rules = Rules {
        title: true,
        abbreviations: true,
        noise_filter: true,
        hierarchy: true,
        check_tags: true,
        mixed_sex: true,
        age_groups: true,
        adult_default: true,
        study_design: true,
    };
    /// No rule: the passages' dictionary matches, with no stoplist.
    pub const LITERAL: Rules = Rules {
        title: false,
        abbreviations: false,
        noise_filter: false,
        hierarchy: false,
        check_tags: false,
        mixed_sex: false,
        age_groups: false,
        adult_default: false,
        study_design: false,
    };
}

/// Document-linking parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocumentLinkConfig {
    /// Rules in effect.
    pub rules: Rules,
    /// Concepts and terms left out of the document set under `rules.noise_filter`.
    pub noise_stoplist: Vec<String>,
}

impl Default for DocumentLinkConfig {
    fn default() -> Self {
        Self {
            rules: Rules::ALL,
            noise_stoplist: DOCUMENT_NOISE.iter().map(|s| (*s).to_owned()).collect(),
        }
    }
}

/// Why a concept is in a document's set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Evidence {
    /// A dictionary match in the title or a passage.
    Text,
    /// Only through an abbreviation defined in the text.
    Abbreviation,
    /// A check tag inferred from population words.
    CheckTag,
    /// An age group inferred from ages or age words.
    AgeGroup,
    /// A study-design heading inferred from the words that signal it.
    StudyDesign,
}

/// One concept of a document's set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DocumentConcept {
    /// Concept index in the vocabulary.
    pub concept: u32,
    /// The first rule that put it there (text before abbreviation before inferred tags).
    pub evidence: Evidence,
    /// Text mentions (dictionary matches plus abbreviation uses) in title and passages; 0 for
    /// an inferred tag with no mention.
    pub num_mentions: u32,
    /// Whether the title mentions it.
    pub in_title: bool,
}

/// One way the linker reached a concept of the document set: the passages (indices into the
/// `passages` given to [`DocumentLinker::link_document`], ascending) whose text it needed, all
/// of them. The title is not listed: it stands or falls with the document. An empty way means
/// the title alone was enough.
pub type EvidenceWay = Vec<u32>;

/// What [`DocumentLinker::link_document`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DocumentConcepts {
    /// Per passage, in input order: `(concept, occurrences)` sorted by concept, with the
    /// graph's stoplist applied — the mentions the co-occurrence graph is built from.
    pub passage_mentions: Vec<Vec<(u32, u32)>>,
    /// The document's `concept` node-field set, sorted by concept.
    pub concepts: Vec<DocumentConcept>,
    /// Parallel to `concepts`: every way the concept was reached, sorted, without duplicates
    /// and without a way that contains another. The concept stays justified while the
    /// passages of at least one way are readable, which is how a query withdraws a concept
    /// whose only evidence is a hidden passage without linking the document again: a
    /// dictionary match in passage `k` is the way `[k]`; an abbreviation used in passage `k`
    /// and defined in passage `j` is `[j, k]`; an inferred heading is reached through each
    /// passage holding its trigger words (`[k]`), or each pair of passages holding both word
    /// lists of a two-list design rule. Rules that fire on the *absence* of words (mixed
    /// sexes, the adult default) list the passages of their positive condition only, since
    /// hiding text can add such a heading on a fresh link but never makes a listed way false.
    pub evidence: Vec<Vec<EvidenceWay>>,
}

impl DocumentConcepts {
    /// The concept indices of the document set, ascending.
    pub fn concept_ids(&self) -> Vec<u32> {
        self.concepts.iter().map(|c| c.concept).collect()
    }
}

/// An abbreviation defined in one document: its short form and the concepts of its long form.
#[derive(Debug, Clone)]
struct Abbreviation {
    short: String,
    concepts: Vec<u32>,
    /// Segment and byte span of the parenthesis that defines it (not a use of it).
    segment: usize,
    paren: (usize, usize),
}

/// Links whole documents. Built once per vocabulary; `link_document` is `&self` and may be
/// called from many threads.
///
/// # Examples
/// ```
/// use agrag_pipeline::link::{Concept, DocumentLinker, LinkConfig, Vocabulary};
///
/// let c = |id: &str, term: &str| Concept {
///     id: id.into(),
///     preferred_term: term.into(),
///     synonyms: vec![],
/// };
/// let vocab = Vocabulary::from_parts(
///     vec![c("D1", "Apoptosis"), c("D2", "Humans"), c("D3", "Retrospective Studies")],
///     &[],
///     "mesh".into(),
/// )?;
/// let linker = DocumentLinker::new(&vocab, &LinkConfig::default())?;
/// let doc = linker.link_document(
///     "Is apoptosis (AP) involved?",
///     &["We retrospectively reviewed 40 patients.", "AP was seen in 12."],
/// );
/// // Apoptosis in the title, and once more through its abbreviation in the second passage;
/// // Humans and the study design are inferred. Graph mentions have no check tag.
/// let ids: Vec<&str> = doc
///     .concepts
///     .iter()
///     .map(|c| vocab.concepts[c.concept as usize].id.as_str())
///     .collect();
/// assert_eq!(ids, ["D1", "D2", "D3"]);
/// assert_eq!(doc.concepts[0].num_mentions, 2);
/// assert_eq!(doc.passage_mentions, vec![vec![], vec![(0, 1)]]);
/// # Ok::<(), agrag_pipeline::PipelineError>(())
/// ```
#[derive(Debug)]
pub struct DocumentLinker {
    /// Linker with the graph's stoplist: passage mentions.
    graph: Linker,
    /// Linker with only the document noise list (or none): the document set.
    open: Linker,
    /// Concepts the graph's stoplist names (never a graph mention).
    graph_stopped: HashSet<u32>,
    rules: Rules,
    /// Heading name → concept, for the headings the rules infer.
    headings: HashMap<&'static str, u32>,
    /// Direct parents per concept.
    parents: Vec<Vec<u32>>,
}

impl DocumentLinker {
    /// Compiles both automata and resolves the headings the rules use. A heading missing from
    /// `vocab` just makes its rule inert.
    ///
    /// The graph automaton uses `link` as given; the document-set automaton uses it with
    /// `link.document.noise_stoplist` (when the `noise_filter` rule is on) in place of
    /// `link.stoplist`.
    ///
    /// # Errors
    /// As [`Linker::new`].
    pub fn new(vocab: &Vocabulary, link: &LinkConfig) -> Result<Self> {
        let cfg = &link.document;
        let open_cfg = LinkConfig {
            stoplist: if cfg.rules.noise_filter {
                cfg.noise_stoplist.clone()
            } else {
                Vec::new()
            },
            ..link.clone()
        };
        // One automaton for both: every passage is scanned once for the two.
        let [graph, open] = Linker::sharing(vocab, [link, &open_cfg])?;
        let stop: HashSet<String> = link.stoplist.iter().map(|s| normalize_term(s)).collect();
        let graph_stopped = vocab
            .concepts
            .iter()
            .enumerate()
            .filter(|(_, c)| stop.contains(&normalize_term(&c.preferred_term)))
            .map(|(i, _)| i as u32)
            .collect();
        let index = TermIndex::new(vocab);
        let names = ["Humans", "Animals", "Female", "Male", "Pregnancy"]
            .into_iter()
            .chain(AGE_GROUPS.iter().map(|(h, _, _)| *h))
            .chain(DESIGN_RULES.iter().map(|r| r.heading));
        let headings = names.filter_map(|h| index.get(h).map(|c| (h, c))).collect();
        let mut parents = vec![Vec::new(); vocab.len()];
        for &(c, p) in &vocab.broader {
            parents[c as usize].push(p);
        }
        Ok(Self {
            graph,
            open,
            graph_stopped,
            rules: cfg.rules,
            headings,
            parents,
        })
    }

    /// The rules in effect.
    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// Number of distinct patterns of the graph automaton.
    pub fn num_patterns(&self) -> usize {
        self.graph.num_patterns()
    }

    /// Links one document: `title` (may be empty) and its `passages` in order.
    ///
    /// # Complexity
    /// * Time: **O(n)** automaton scans of the text (two), plus **O(a · n)** for `a`
    ///   abbreviations defined in it.
    /// # Determinism
    /// The result depends only on the text, the vocabulary and the configuration.
    pub fn link_document(&self, title: &str, passages: &[&str]) -> DocumentConcepts {
        let segments: Vec<&str> = std::iter::once(title)
            .chain(passages.iter().copied())
            .collect();
        let candidates: Vec<Candidates> =
            segments.iter().map(|s| self.open.candidates(s)).collect();
        let mut open: Vec<Vec<Link>> = segments
            .iter()
            .zip(&candidates)
            .map(|(s, c)| self.open.accept(s, c))
            .collect();
        let mut graph: Vec<Vec<Link>> = passages
            .iter()
            .zip(&candidates[1..])
            .map(|(s, c)| self.graph.accept(s, c))
            .collect();
        // Links created by abbreviation uses, per segment, with the segment of the definition.
        let mut via_abbreviation: Vec<Vec<(Link, usize)>> = vec![Vec::new(); segments.len()];
        if self.rules.abbreviations {
            let abbreviations = defined_abbreviations(&segments, &open);
            let shorts: Vec<&str> = abbreviations.iter().map(|a| a.short.as_str()).collect();
            let forms = ShortForms::new(&shorts);
            for (k, text) in segments.iter().enumerate() {
                let uses = abbreviation_uses(text, k, &abbreviations, &forms);
                if uses.is_empty() {
                    continue;
                }
                via_abbreviation[k] = apply_uses(&mut open[k], &uses, |_| true);
                if k > 0 {
                    let stopped = &self.graph_stopped;
                    let _ = apply_uses(&mut graph[k - 1], &uses, |c| !stopped.contains(&c));
                }
            }
        }
        let passage_mentions = graph.iter().map(|links| count(links)).collect();

        // The document set: text first.
        let mut set: BTreeMap<u32, DocumentConcept> = BTreeMap::new();
        // Ways by concept, in segment indices (0 = title); see `DocumentConcepts::evidence`.
        let mut ways: BTreeMap<u32, BTreeSet<Vec<usize>>> = BTreeMap::new();
        let first = usize::from(!self.rules.title);
        for k in first..segments.len() {
            for l in &open[k] {
                // `via_abbreviation[k]` is sorted (see `apply_uses`): a binary search, not a scan.
                let added = &via_abbreviation[k];
                let at = added.partition_point(|(a, _)| {
                    (a.start, a.end, a.concept) < (l.start, l.end, l.concept)
                });
                let defined_in = added.get(at).filter(|(a, _)| a == l).map(|&(_, j)| j);
                let evidence = if defined_in.is_some() {
                    Evidence::Abbreviation
                } else {
                    Evidence::Text
                };
                ways.entry(l.concept)
                    .or_default()
                    .insert(defined_in.map_or_else(|| vec![k], |j| vec![j, k]));
                let e = set.entry(l.concept).or_insert(DocumentConcept {
                    concept: l.concept,
                    evidence,
                    num_mentions: 0,
                    in_title: false,
                });
                e.num_mentions += 1;
                e.in_title |= k == 0;
                e.evidence = e.evidence.min(evidence);
            }
        }
        if self.rules.hierarchy {
            self.keep_narrowest(&mut set);
        }

        // Inferred headings. `segs` gives the segments (0 = title) holding any of the phrases.
        let tokens: Vec<Vec<Token>> = segments[first..].iter().map(|s| tokenize(s)).collect();
        let word_lists: Vec<Vec<&str>> = tokens.iter().map(|t| words(t)).collect();
        // A phrase can occur in a segment only if its first word does: one set lookup spares
        // most of the window scans (the rules hold a few hundred phrases).
        // FxHash, not SipHash: the sets are built for every segment, and hashing their words
        // with SipHash was 3 % of a 10⁵-document run's CPU.
        let word_sets: Vec<FxHashSet<&str>> = word_lists
            .iter()
            .map(|w| w.iter().copied().collect())
            .collect();
        let has_phrase = |i: usize, phrase: &str| {
            let lead = phrase.split(' ').next().unwrap_or(phrase);
            word_sets[i].contains(lead) && contains_phrase(&word_lists[i], phrase)
        };
        let segs = |phrases: &[&str]| -> Vec<usize> {
            (0..word_lists.len())
                .filter(|&i| phrases.iter().any(|p| has_phrase(i, p)))
                .map(|i| first + i)
                .collect()
        };
        let singles = |s: &[usize]| -> Vec<Vec<usize>> { s.iter().map(|&k| vec![k]).collect() };
        let mut add = |heading: &str, evidence: Evidence, reached: Vec<Vec<usize>>| {
            if let Some(&c) = self.headings.get(heading) {
                set.entry(c).or_insert(DocumentConcept {
                    concept: c,
                    evidence,
                    num_mentions: 0,
                    in_title: false,
                });
                ways.entry(c).or_default().extend(reached);
            }
        };
        let human = segs(HUMAN_WORDS);
        if self.rules.check_tags {
            if !human.is_empty() {
                add("Humans", Evidence::CheckTag, singles(&human));
            }
            let animal = segs(ANIMAL_WORDS);
            if !animal.is_empty() {
                add("Animals", Evidence::CheckTag, singles(&animal));
            }
            let both = segs(BOTH_SEXES_WORDS);
            let female = segs(FEMALE_WORDS);
            let male = segs(MALE_WORDS);
            let sex_ways = |named: &[usize], other: &[usize]| -> Vec<Vec<usize>> {
                let mut w = singles(named);
                w.extend(singles(&both));
                if self.rules.mixed_sex && other.is_empty() {
                    w.extend(singles(&human));
                }
                w
            };
            let female_ways = sex_ways(&female, &male);
            if !female_ways.is_empty() {
                add("Female", Evidence::CheckTag, female_ways);
            }
            let male_ways = sex_ways(&male, &female);
            if !male_ways.is_empty() {
                add("Male", Evidence::CheckTag, male_ways);
            }
            let pregnancy = segs(PREGNANCY_WORDS);
            if !pregnancy.is_empty() {
                add("Pregnancy", Evidence::CheckTag, singles(&pregnancy));
            }
        }
        if self.rules.age_groups || self.rules.adult_default {
            // (age group, segment that states it)
            let mut groups: Vec<(&str, usize)> = Vec::new();
            for (i, t) in tokens.iter().enumerate() {
                for (lo, hi) in age_intervals(t) {
                    groups.extend(groups_overlapping(lo, hi).map(|g| (AGE_GROUPS[g].0, first + i)));
                }
            }
            for (phrase, named) in AGE_WORDS {
                for i in 0..word_lists.len() {
                    if has_phrase(i, phrase) {
                        groups.extend(named.iter().map(|g| (*g, first + i)));
                    }
                }
            }
            if self.rules.age_groups {
                for &(g, k) in &groups {
                    add(g, Evidence::AgeGroup, vec![vec![k]]);
                }
            }
            if self.rules.adult_default && !human.is_empty() && groups.is_empty() {
                for g in ["Adult", "Middle Aged", "Aged"] {
                    add(g, Evidence::AgeGroup, singles(&human));
                }
            }
        }
        if self.rules.study_design {
            for r in DESIGN_RULES {
                let any = segs(r.any);
                if any.is_empty() {
                    continue;
                }
                if r.with.is_empty() {
                    add(r.heading, Evidence::StudyDesign, singles(&any));
                    continue;
                }
                let with = segs(r.with);
                let pairs: Vec<Vec<usize>> = any
                    .iter()
                    .flat_map(|&a| with.iter().map(move |&b| vec![a, b]))
                    .collect();
                if !pairs.is_empty() {
                    add(r.heading, Evidence::StudyDesign, pairs);
                }
            }
        }
        let evidence = set
            .keys()
            .map(|c| passage_ways(ways.remove(c).unwrap_or_default()))
            .collect();
        DocumentConcepts {
            passage_mentions,
            concepts: set.into_values().collect(),
            evidence,
        }
    }

    /// Drops every text-matched concept that is an ancestor of another text-matched concept.
    /// The headings the rules infer (check tags, age groups, designs) take no part: indexers
    /// assign every age group a population spans (*Adult* and *Aged*, though *Aged* is under
    /// *Adult*).
    fn keep_narrowest(&self, set: &mut BTreeMap<u32, DocumentConcept>) {
        let is_tag = |c: &u32| self.headings.values().any(|h| h == c);
        let mut broader: HashSet<u32> = HashSet::new();
        for c in set.keys().filter(|c| !is_tag(c)) {
            let mut stack: Vec<u32> = self.parents[*c as usize].clone();
            while let Some(p) = stack.pop() {
                if broader.insert(p) {
                    stack.extend_from_slice(&self.parents[p as usize]);
                }
            }
        }
        set.retain(|c, _| is_tag(c) || !broader.contains(c));
    }
}

/// Ways in segment indices (0 = title) → ways in passage indices: the title dropped, each way
/// sorted and deduplicated, a way that contains another dropped (it adds no justification).
fn passage_ways(ways: BTreeSet<Vec<usize>>) -> Vec<EvidenceWay> {
    let mut out: Vec<EvidenceWay> = ways
        .into_iter()
        .map(|w| {
            let mut p: Vec<u32> = w
                .iter()
                .filter(|&&k| k > 0)
                .map(|&k| k as u32 - 1)
                .collect();
            p.sort_unstable();
            p.dedup();
            p
        })
        .collect();
    out.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    out.dedup();
    let mut kept: Vec<EvidenceWay> = Vec::with_capacity(out.len());
    for w in out {
        if !kept.iter().any(|k| k.iter().all(|p| w.contains(p))) {
            kept.push(w);
        }
    }
    kept.sort();
    kept
}

/// `(concept, occurrences)` of `links`, sorted by concept.
fn count(links: &[Link]) -> Vec<(u32, u32)> {
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    for l in links {
        *counts.entry(l.concept).or_insert(0) += 1;
    }
    counts.into_iter().collect()
}

/// The first definition of each short form in the document, with the concepts of its long
/// form: the dictionary matches that end exactly where the long form ends (its head). A
/// definition whose long form links to nothing is kept too: its uses then link to nothing,
/// rather than to a dictionary acronym of another meaning.
///
/// `links[k]` are sorted by start (as [`Linker::find`] returns them), so the matches inside a
/// long form are one binary search away: linear in the text overall.
fn defined_abbreviations(segments: &[&str], links: &[Vec<Link>]) -> Vec<Abbreviation> {
    let mut out: Vec<Abbreviation> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (k, text) in segments.iter().enumerate() {
        for d in find_definitions(text) {
            if seen.contains(&d.short) {
                continue;
            }
            seen.insert(d.short.clone());
            let from = links[k].partition_point(|l| l.start < d.long_start);
            let mut concepts: Vec<u32> = links[k][from..]
                .iter()
                .take_while(|l| l.start < d.long_end)
                .filter(|l| l.end == d.long_end)
                .map(|l| l.concept)
                .collect();
            concepts.sort_unstable();
            concepts.dedup();
            out.push(Abbreviation {
                short: d.short,
                concepts,
                segment: k,
                paren: (d.paren_start, d.paren_end),
            });
        }
    }
    out
}

/// Uses of the abbreviations in segment `k`: `(start, end, concepts, defining segment)`. The short form inside
/// its own defining parentheses gets no concept (the long form before it already counts),
/// but still hides any dictionary match there.
///
/// One scan of the text finds the uses of every abbreviation: `forms` are the short forms of
/// `abbreviations`, in their order ([`ShortForms::occurrences_in`]).
fn abbreviation_uses(
    text: &str,
    k: usize,
    abbreviations: &[Abbreviation],
    forms: &ShortForms<'_>,
) -> Vec<Use> {
    let mut uses = Vec::new();
    for (a, found) in abbreviations.iter().zip(forms.occurrences_in(text)) {
        for (s, e) in found {
            let defining = a.segment == k && a.paren.0 <= s && e <= a.paren.1;
            let concepts = if defining {
                Vec::new()
            } else {
                a.concepts.clone()
            };
            uses.push((s, e, concepts, a.segment));
        }
    }
    uses
}

/// An abbreviation use: `(start, end, concepts, segment of the definition)`.
type Use = (usize, usize, Vec<u32>, usize);

/// Rewrites `links` for abbreviation uses: a dictionary match inside (or across) a use is
/// dropped and the use links to its long form's concepts (those `keep` accepts). A longer
/// match that contains the use ("HIV Infections" around "HIV") stays, and the use adds
/// nothing. Uses are applied in order: a match dropped by one use no longer contains a later
/// one. Returns the links added with the segment of their definition, sorted by
/// `(start, end, concept)` (in use order among equal links), for binary search.
///
/// `links` are as [`Linker::find`] returns them: sorted by start, and spans never overlap
/// (several concepts may share one span), so their ends are sorted too and the links a use
/// overlaps are one run of them, found by binary search.
///
/// # Complexity
/// * Time: **O((u + l) log l)** for `u` uses and `l` links (uses overlap few links each).
fn apply_uses(
    links: &mut Vec<Link>,
    uses: &[Use],
    keep: impl Fn(u32) -> bool,
) -> Vec<(Link, usize)> {
    debug_assert!(
        links
            .windows(2)
            .all(|w| w[0].end <= w[1].start || (w[0].start, w[0].end) == (w[1].start, w[1].end)),
        "links overlap"
    );
    let mut added: Vec<(Link, usize)> = Vec::new();
    let mut dropped = vec![false; links.len()];
    for (s, e, concepts, defined_in) in uses {
        let (s, e, defined_in) = (*s, *e, *defined_in);
        // The links overlapping `s..e`: those ending after `s` and starting before `e`.
        let from = links.partition_point(|l| l.end <= s);
        let to = from + links[from..].partition_point(|l| l.start < e);
        let contained = (from..to).any(|i| {
            let l = &links[i];
            !dropped[i] && l.start <= s && e <= l.end && l.end - l.start > e - s
        });
        if contained {
            continue;
        }
        dropped[from..to].fill(true);
        for &c in concepts {
            if keep(c) {
                added.push((
                    Link {
                        concept: c,
                        start: s,
                        end: e,
                    },
                    defined_in,
                ));
            }
        }
    }
    let mut i = 0;
    links.retain(|_| {
        i += 1;
        !dropped[i - 1]
    });
    links.extend(added.iter().map(|(l, _)| *l));
    links.sort_by_key(|l| (l.start, l.concept));
    added.sort_by_key(|(l, _)| (l.start, l.end, l.concept));
    added
}

#[cfg(test)]
mod tests {
    use super::super::Concept;
    use super::*;

    fn vocab() -> Vocabulary {
        let c = |id: &str, t: &str, s: &[&str]| Concept {
            id: id.into(),
            preferred_term: t.into(),
            synonyms: s.iter().map(|x| (*x).into()).collect(),
        };
        Vocabulary::from_parts(
            vec![
                c("APO", "Apoptosis", &["Programmed Cell Death"]),
                c("HUM", "Humans", &["Human"]),
                c("FEM", "Female", &[]),
                c("MAL", "Male", &[]),
                c("ADU", "Adult", &[]),
                c("MID", "Middle Aged", &[]),
                c("AGE", "Aged", &[]),
                c("RET", "Retrospective Studies", &[]),
                c("NEO", "Neoplasms", &[]),
                c("BRN", "Breast Neoplasms", &[]),
                c("PTP", "Protein Tyrosine Phosphatases", &["PTP"]),
                c("PAT", "Patients", &[]),
                c("ANI", "Animals", &[]),
                c("RAT", "Rats", &["Rat"]),
                c("MIT", "Mitochondria", &[]),
            ],
            &[("BRN".into(), "NEO".into())],
            "v".into(),
        )
        .unwrap()
    }

    fn linker(v: &Vocabulary, rules: Rules) -> DocumentLinker {
        let link = LinkConfig {
            document: DocumentLinkConfig {
                rules,
                ..DocumentLinkConfig::default()
            },
            ..LinkConfig::default()
        };
        DocumentLinker::new(v, &link).unwrap()
    }

    fn set<'v>(v: &'v Vocabulary, dc: &DocumentConcepts) -> Vec<&'v str> {
        let mut ids: Vec<&str> = dc
            .concepts
            .iter()
            .map(|c| v.concepts[c.concept as usize].id.as_str())
            .collect();
        ids.sort_unstable();
        ids
    }

    fn mentions(v: &Vocabulary, dc: &DocumentConcepts, passage: usize) -> Vec<String> {
        dc.passage_mentions[passage]
            .iter()
            .map(|&(c, n)| format!("{}x{n}", v.concepts[c as usize].id))
            .collect()
    }

    #[test]
    fn abbreviation_uses_link_to_the_long_form_concept() {
        let v = vocab();
        let l = linker(&v, Rules::ALL);
        let dc = l.link_document(
            "",
            &[
                "Programmed cell death (PCD) is regulated. The mitochondrial permeability \
                 transition pore (PTP) opens.",
                "PCD occurs in leaves; PTP formation precedes PCD.",
            ],
        );
        // "PCD" in the second passage mentions Apoptosis twice; "PTP" there means the pore
        // (which the dictionary does not know), not Protein Tyrosine Phosphatases.
        assert_eq!(mentions(&v, &dc, 1), vec!["APOx2"]);
        assert_eq!(mentions(&v, &dc, 0), vec!["APOx1"]);
        let apo = dc.concepts.iter().find(|c| c.concept == 0).unwrap();
        assert_eq!((apo.num_mentions, apo.evidence), (3, Evidence::Text));
        assert!(!set(&v, &dc).contains(&"PTP"));
        // Without the rule, "PTP" links by the dictionary and "PCD" links nothing.
        let off = linker(
            &v,
            Rules {
                abbreviations: false,
                ..Rules::ALL
            },
        )
        .link_document(
            "",
            &["Programmed cell death (PCD) is regulated.", "PCD; PTP."],
        );
        assert_eq!(mentions(&v, &off, 1), vec!["PTPx1"]);
    }

    /// Each concept's evidence names the passages it needs: a dictionary match its passage,
    /// an abbreviation its use and its definition, a heading its trigger passages; the title
    /// needs none.
    #[test]
    fn evidence_names_the_passages_each_concept_needs() {
        let v = vocab();
        let l = linker(&v, Rules::ALL);
        let dc = l.link_document(
            "Do mitochondria matter?",
            &[
                "Programmed cell death (PCD) was measured in 40 patients.",
                "Breast neoplasms grew.",
                "PCD rose in rats.",
            ],
        );
        let ways = |id: &str| -> Vec<Vec<u32>> {
            let i = dc
                .concepts
                .iter()
                .position(|c| v.concepts[c.concept as usize].id == id)
                .unwrap_or_else(|| panic!("{id} not in the set"));
            dc.evidence[i].clone()
        };
        assert_eq!(dc.evidence.len(), dc.concepts.len());
        // Mitochondria: the title alone.
        assert_eq!(ways("MIT"), vec![Vec::<u32>::new()]);
        // Apoptosis: its long form in passage 0. Its use "PCD" in passage 2 needs passages 0
        // and 2, a way that contains the first, so it is dropped.
        assert_eq!(ways("APO"), vec![vec![0]]);
        assert_eq!(ways("BRN"), vec![vec![1]]);
        // Humans from "patients" (passage 0); Animals from "rats" (passage 2).
        assert_eq!(ways("HUM"), vec![vec![0]]);
        assert_eq!(ways("ANI"), vec![vec![2]]);
    }

    #[test]
    fn check_tags_from_population_words() {
        let v = vocab();
        let l = linker(&v, Rules::ALL);
        let women = l.link_document("", &["Forty women with breast cancer were treated."]);
        let s = set(&v, &women);
        assert!(s.contains(&"HUM") && s.contains(&"FEM") && !s.contains(&"MAL"));
        assert!(s.contains(&"BRN"), "cancer variant of Breast Neoplasms");
        let both = set(&v, &l.link_document("", &["We studied 120 patients."]));
        assert!(both.contains(&"FEM") && both.contains(&"MAL") && both.contains(&"HUM"));
        let no_mixed = linker(
            &v,
            Rules {
                mixed_sex: false,
                ..Rules::ALL
            },
        );
        let s = set(
            &v,
            &no_mixed.link_document("", &["We studied 120 patients."]),
        );
        assert!(!s.contains(&"FEM") && !s.contains(&"MAL"));
        let rats = set(
            &v,
            &l.link_document("", &["Mitochondria of rats were isolated."]),
        );
        assert_eq!(rats, vec!["ANI", "MIT", "RAT"]);
    }

    #[test]
    fn age_groups_and_study_design() {
        let v = vocab();
        let l = linker(&v, Rules::ALL);
        let s = set(
            &v,
            &l.link_document(
                "",
                &["A retrospective review of patients aged 50 to 70 years."],
            ),
        );
        assert!(s.contains(&"MID") && s.contains(&"AGE") && !s.contains(&"ADU"));
        assert!(s.contains(&"RET"));
        // No age stated: the adult default.
        let s = set(&v, &l.link_document("", &["Patients were treated."]));
        assert!(s.contains(&"ADU") && s.contains(&"MID") && s.contains(&"AGE"));
        let off = linker(
            &v,
            Rules {
                adult_default: false,
                ..Rules::ALL
            },
        );
        let s = set(&v, &off.link_document("", &["Patients were treated."]));
        assert!(!s.contains(&"ADU"));
    }

    #[test]
    fn hierarchy_keeps_the_narrower_concept() {
        let v = vocab();
        let text = ["Neoplasms, breast neoplasms in particular, in 12 rats."];
        let s = set(&v, &linker(&v, Rules::ALL).link_document("", &text));
        assert!(s.contains(&"BRN") && !s.contains(&"NEO"));
        let off = linker(
            &v,
            Rules {
                hierarchy: false,
                ..Rules::ALL
            },
        );
        let s = set(&v, &off.link_document("", &text));
        assert!(s.contains(&"BRN") && s.contains(&"NEO"));
    }

    #[test]
    fn graph_mentions_keep_the_graph_stoplist_and_title_only_feeds_the_set() {
        let v = vocab();
        let l = linker(&v, Rules::ALL);
        let dc = l.link_document(
            "Do mitochondria matter?",
            &["Human patients, male and female, and their neoplasms."],
        );
        // Check tags and generic headings never become graph mentions.
        assert_eq!(mentions(&v, &dc, 0), vec!["NEOx1"]);
        let s = set(&v, &dc);
        assert!(s.contains(&"MIT") && s.contains(&"HUM") && !s.contains(&"PAT"));
        let no_title = linker(
            &v,
            Rules {
                title: false,
                ..Rules::ALL
            },
        );
        assert!(
            !set(
                &v,
                &no_title.link_document("Do mitochondria matter?", &["Text."])
            )
            .contains(&"MIT")
        );
    }
}
