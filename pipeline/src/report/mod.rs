//! Community reports: a [`ReportWriter`] trait (so an LLM writer can plug in) and the built-in
//! deterministic [`ExtractiveReportWriter`].

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;
use crate::ingest::CorpusColumns;

/// One passage as a report sees it.
#[derive(Debug, Clone, Copy)]
pub struct PassageRef<'a> {
    text: PassageText<'a>,
    /// Position in its document.
    pub position: u32,
    /// Title of its document.
    pub document_title: &'a str,
    /// Index of its document.
    pub document: u32,
    /// Row of the passage in the run (0-based, `passages.parquet` order).
    pub row: u32,
}

/// Where a passage's text is: given, or a row of the run's corpus, read when asked for (a
/// community's context lists every supporting passage, and a report reads a few).
#[derive(Debug, Clone, Copy)]
enum PassageText<'a> {
    Given(&'a str),
    Corpus(&'a CorpusColumns),
}

impl<'a> PassageRef<'a> {
    /// A passage whose text is `text`.
    pub fn new(
        text: &'a str,
        position: u32,
        document_title: &'a str,
        document: u32,
        row: u32,
    ) -> Self {
        Self {
            text: PassageText::Given(text),
            position,
            document_title,
            document,
            row,
        }
    }

    /// Passage row `row` of `corpus`, the passage at `position` of document `document`.
    pub(crate) fn in_corpus(
        corpus: &'a CorpusColumns,
        row: u32,
        position: u32,
        document_title: &'a str,
        document: u32,
    ) -> Self {
        Self {
            text: PassageText::Corpus(corpus),
            position,
            document_title,
            document,
            row,
        }
    }

    /// The passage's text.
    pub fn text(&self) -> &'a str {
        match self.text {
            PassageText::Given(t) => t,
            PassageText::Corpus(c) => c.passage(self.row as usize),
        }
    }
}

/// Everything a writer may use about one community.
#[derive(Debug, Clone)]
pub struct CommunityContext<'a> {
    /// Community id.
    pub community_id: u32,
    /// Level (0 = coarsest).
    pub level: u32,
    /// Members as `(entity id, name, internal weighted degree, passages mentioning it)`, most
    /// central first (internal degree desc, then passages desc, then name).
    pub members: Vec<(u32, &'a str, f64, u32)>,
    /// Short entry terms of each member, parallel to `members` (may be empty strings).
    pub aliases: Vec<&'a str>,
    /// Internal edges as `(name a, name b, weight)`, heaviest first.
    pub relationships: Vec<(&'a str, &'a str, f64)>,
    /// Supporting passages as `(passage, distinct members mentioning it)`, ranked by members
    /// desc, then position, then passage index.
    pub passages: Vec<(PassageRef<'a>, u32)>,
    /// Number of distinct documents among the supporting passages.
    pub num_documents: usize,
    /// Sum of internal edge weights.
    pub internal_weight: f64,
}

/// A community report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Community id.
    pub community_id: u32,
    /// Level.
    pub level: u32,
    /// Title.
    pub title: String,
    /// Summary paragraph.
    pub summary: String,
    /// The summary without its counts (size, supporting passages and documents, passages
    /// per link): the centre and the strongest links by name. The report's vector embeds
    /// this instead of [`Report::summary`]: counts move with every passage a night adds,
    /// carry nothing a question asks for, and would make an unchanged community's vector be
    /// computed again. Empty when the writer has none ([`Report::summary`] is embedded then).
    pub gist: String,
    /// Findings (sentences quoted from supporting passages).
    pub findings: Vec<String>,
    /// Rows ([`PassageRef::row`]) of the passages the findings quote, or any other passage
    /// whose words the embedded text carries. They are published as `report_sources`, and
    /// theme search leaves the community out while one of them is hidden: its embedding
    /// would otherwise let the hidden words find it.
    pub quoted_passages: Vec<u32>,
    /// Importance: `ln(1 + supporting passages) + ln(1 + internal edge weight)`.
    pub rank: f64,
    /// The report's full text (title, members, summary, findings, source titles). Which
    /// parts of it are embedded is [`CommunityVectors::report`]'s choice; the run stores the
    /// embedded text in `reports.parquet`'s `full_content`.
    pub full_content: String,
    /// The member names with their short entry terms, as `full_content` lists them (empty
    /// when the writer has none).
    pub concepts: Vec<String>,
    /// The titles of the supporting documents `full_content` lists (empty when none).
    pub sources: Vec<String>,
}

/// What the report's own vectors embed ([`CommunityVectors::report`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportText {
    /// No vector of the report's text.
    None,
    /// One vector of [`Report::full_content`]: title, members, summary, findings and the
    /// supporting documents' titles (`Sources:`).
    Full,
    /// One vector of the title, members, [gist](Report::gist) (the summary without its
    /// counts) and findings, without the supporting documents' titles: those titles are
    /// other documents' words, which let a query that repeats a title find the report by
    /// word overlap rather than by what it is about.
    NoSources,
    /// One vector of the title and summary only.
    TitleSummary,
    /// One vector of the title and members, and one per finding (a community is then found
    /// by its best finding).
    Findings,
}

/// What a community's vectors (its rows of `report_embeddings`) are made of. Theme search
/// scores a community by its best vector.
///
/// all-MiniLM-L6-v2 reads at most 256 word pieces per window, and an extractive report runs
/// past that; a long report's vector is a blur of everything in it (or, truncated, misses its
/// end). The vectors of the community's own best supporting passages are what the model reads
/// best (each fits one window) and they are the passages the theme shows: a query that finds
/// a community by one of its first `passages` passages gets that passage back whenever
/// `support_limit ≥ passages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CommunityVectors {
    /// The report text's vectors.
    pub report: ReportText,
    /// One vector per supporting passage, for the first `passages` of them in the order theme
    /// search ranks them (distinct members mentioning them, then position): 0 for none.
    pub passages: usize,
    /// One vector that is the normalized mean of the vectors of the first `centroid`
    /// supporting passages (the community's centroid in the embedding space): 0 for none.
    pub centroid: usize,
    /// One vector per supporting passage of the run, each given to the one community that
    /// ranks it best (lowest rank among its passages, then the finer level, then the lower id):
    /// every linked passage's meaning is then one community's vector, that of the community
    /// that shows it highest.
    pub assigned: bool,
}

impl Default for CommunityVectors {
    /// The report without its sources' titles, and every supporting passage assigned to the
    /// community that ranks it best (see `benches/RESULTS.md`, `theme-recall`).
    fn default() -> Self {
        Self {
            report: ReportText::NoSources,
            passages: 0,
            centroid: 0,
            assigned: true,
        }
    }
}

impl CommunityVectors {
    /// Supporting passages whose vectors this recipe needs (the first `n` of the ranking).
    pub fn num_passages(&self) -> usize {
        self.passages.max(self.centroid)
    }

    /// Most vectors of the report's text one community gets: 0, 1, or for
    /// [`ReportText::Findings`] the head and up to three findings.
    pub fn max_report_texts(&self) -> usize {
        match self.report {
            ReportText::None => 0,
            ReportText::Findings => 1 + MAX_FINDINGS,
            _ => 1,
        }
    }

    /// Most vectors one community gets, not counting [assigned](Self::assigned) passages
    /// (about `passages / communities` more on average).
    pub fn max_vectors(&self) -> usize {
        self.max_report_texts() + self.passages + usize::from(self.centroid > 0)
    }

    /// The texts of `report` to embed, one vector each.
    pub fn texts(&self, report: &Report) -> Vec<String> {
        let head = |with_summary: bool| {
            let mut t = report.title.clone();
            if !report.concepts.is_empty() {
                t.push_str("\nConcepts: ");
                t.push_str(&report.concepts.join(", "));
            }
            if with_summary {
                t.push('\n');
                t.push_str(if report.gist.is_empty() {
                    &report.summary
                } else {
                    &report.gist
                });
            }
            t
        };
        match self.report {
            ReportText::None => Vec::new(),
            ReportText::Full => vec![report.full_content.clone()],
            ReportText::NoSources => {
                let mut t = head(true);
                if !report.findings.is_empty() {
                    t.push_str("\nFindings: ");
                    t.push_str(&report.findings.join(" "));
                }
                vec![t]
            }
            ReportText::TitleSummary => vec![format!("{}\n{}", report.title, report.summary)],
            ReportText::Findings => std::iter::once(head(false))
                .chain(report.findings.iter().cloned())
                .collect(),
        }
    }
}

impl std::fmt::Display for CommunityVectors {
    /// The form [`FromStr`](std::str::FromStr) reads: `nosources+p3`, `full`, `none+c10`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let report = match self.report {
            ReportText::None => "none",
            ReportText::Full => "full",
            ReportText::NoSources => "nosources",
            ReportText::TitleSummary => "title-summary",
            ReportText::Findings => "findings",
        };
        f.write_str(report)?;
        if self.passages > 0 {
            write!(f, "+p{}", self.passages)?;
        }
        if self.centroid > 0 {
            write!(f, "+c{}", self.centroid)?;
        }
        if self.assigned {
            f.write_str("+a")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for CommunityVectors {
    type Err = crate::error::PipelineError;

    /// `REPORT[+pN][+cN][+a]`: REPORT is `none`, `full`, `nosources`, `title-summary` or
    /// `findings`; `+pN` adds the vectors of the best N supporting passages, `+cN` their
    /// centroid over the best N, `+a` the passages assigned to the community
    /// ([`CommunityVectors::assigned`]).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || crate::error::PipelineError::InvalidConfig {
            field: "community_vectors",
            value: s.to_owned(),
            expected: "REPORT[+pN][+cN], REPORT one of none, full, nosources, title-summary, findings",
        };
        let mut parts = s.trim().split('+');
        let report = match parts.next().unwrap_or_default() {
            "none" => ReportText::None,
            "full" => ReportText::Full,
            "nosources" => ReportText::NoSources,
            "title-summary" => ReportText::TitleSummary,
            "findings" => ReportText::Findings,
            _ => return Err(bad()),
        };
        let mut v = Self {
            report,
            passages: 0,
            centroid: 0,
            assigned: false,
        };
        for part in parts {
            if part == "a" {
                v.assigned = true;
                continue;
            }
            let (slot, n) = match part.split_at_checked(1) {
                Some(("p", n)) => (&mut v.passages, n),
                Some(("c", n)) => (&mut v.centroid, n),
                _ => return Err(bad()),
            };
            *slot = n.parse().map_err(|_| bad())?;
        }
        if v.report == ReportText::None && v.passages == 0 && v.centroid == 0 && !v.assigned {
            return Err(bad());
        }
        Ok(v)
    }
}

/// Writes a report for one community. Implementations must be deterministic for the same
/// context when the run is to be reproducible.
pub trait ReportWriter: Send + Sync {
    /// Name recorded in the manifest's parameters.
    fn name(&self) -> &str;
    /// Writes the report.
    ///
    /// # Errors
    /// Implementation-defined (an LLM call failing, say).
    fn write(&self, ctx: &CommunityContext<'_>) -> Result<Report>;
}

/// The built-in extractive writer: no model, same input → same report.
///
/// * title: the three most central members;
/// * summary: size, level, centre, support, strongest links; its gist: centre and strongest
///   links by name, without counts;
/// * findings: from each of the best three supporting passages, the sentence naming the most
///   members (at most 300 characters);
/// * embedded text: title, up to 30 member names with their short entry terms (so that
///   "statins" finds *Hydroxymethylglutaryl-CoA Reductase Inhibitors*), summary, findings and
///   the titles of up to five supporting documents.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveReportWriter;

const MAX_FINDING_CHARS: usize = 300;
/// Findings per report (from the best supporting passages).
const MAX_FINDINGS: usize = 3;

fn truncate_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(n).collect();
        format!("{}…", cut.trim_end())
    }
}

fn best_sentence(text: &str, names: &[String]) -> String {
    let mut best = ("", 0usize);
    for sentence in text.split_inclusive(['.', '?', '!']) {
        let lower = sentence.to_lowercase();
        let hits = names.iter().filter(|n| lower.contains(n.as_str())).count();
        if hits > best.1 || best.0.is_empty() {
            best = (sentence, hits);
        }
    }
    truncate_chars(best.0.trim(), MAX_FINDING_CHARS)
}

impl ReportWriter for ExtractiveReportWriter {
    fn name(&self) -> &str {
        "extractive-v1"
    }

    fn write(&self, ctx: &CommunityContext<'_>) -> Result<Report> {
        let central: Vec<&str> = ctx.members.iter().take(3).map(|m| m.1).collect();
        let title = match central.as_slice() {
            [] => format!("Community {}", ctx.community_id),
            [a] => (*a).to_owned(),
            [a, b] => format!("{a} and {b}"),
            [a, b, c, ..] => format!("{a}, {b} and {c}"),
        };
        let strongest = &ctx.relationships[..ctx.relationships.len().min(3)];
        let named: Vec<String> = strongest
            .iter()
            .map(|(a, b, _)| format!("{a} – {b}"))
            .collect();
        let links: Vec<String> = named
            .iter()
            .zip(strongest)
            .map(|(n, (_, _, w))| format!("{n} ({w} passages)"))
            .collect();
        let mut summary = format!(
            "A theme of {} concepts at level {}, centred on {}. It is supported by {} passages from {} documents.",
            ctx.members.len(),
            ctx.level,
            central.join(", "),
            ctx.passages.len(),
            ctx.num_documents
        );
        if !links.is_empty() {
            summary.push_str(&format!(" Strongest links: {}.", links.join("; ")));
        }
        let mut gist = format!("Centred on {}.", central.join(", "));
        if !named.is_empty() {
            gist.push_str(&format!(" Strongest links: {}.", named.join("; ")));
        }
        let lower_names: Vec<String> = ctx.members.iter().map(|m| m.1.to_lowercase()).collect();
        let (findings, quoted_passages): (Vec<String>, Vec<u32>) = ctx
            .passages
            .iter()
            .take(MAX_FINDINGS)
            .map(|(p, _)| (best_sentence(p.text(), &lower_names), p.row))
            .filter(|(s, _)| !s.is_empty())
            .unzip();
        let mut sources: Vec<&str> = Vec::new();
        for (p, _) in &ctx.passages {
            if sources.len() == 5 {
                break;
            }
            if !p.document_title.is_empty() && !sources.contains(&p.document_title) {
                sources.push(p.document_title);
            }
        }
        let member_names: Vec<String> = ctx
            .members
            .iter()
            .zip(&ctx.aliases)
            .take(30)
            .map(|(m, a)| {
                if a.is_empty() {
                    m.1.to_owned()
                } else {
                    format!("{} ({a})", m.1)
                }
            })
            .collect();
        let full_content = format!(
            "{title}\nConcepts: {}\n{summary}\nFindings: {}\nSources: {}",
            member_names.join(", "),
            findings.join(" "),
            sources.join(" ")
        );
        let rank = (ctx.passages.len() as f64).ln_1p() + ctx.internal_weight.ln_1p();
        Ok(Report {
            community_id: ctx.community_id,
            level: ctx.level,
            title,
            summary,
            gist,
            findings,
            quoted_passages,
            rank,
            full_content,
            concepts: member_names,
            sources: sources.into_iter().map(str::to_owned).collect(),
        })
    }
}

/// Adjacency of the entity graph for report building: `neighbors[e]` = `(other, weight)`.
#[derive(Debug, Clone)]
pub struct Adjacency {
    neighbors: Vec<Vec<(u32, f64)>>,
}

impl Adjacency {
    /// From undirected edges `(a, b, w)` over `num_entities` entities.
    pub fn new(num_entities: usize, edges: &[(u32, u32, f64)]) -> Self {
        let mut neighbors = vec![Vec::new(); num_entities];
        for &(a, b, w) in edges {
            neighbors[a as usize].push((b, w));
            if a != b {
                neighbors[b as usize].push((a, w));
            }
        }
        Self { neighbors }
    }

    /// Weighted degree of `e`.
    pub fn degree(&self, e: u32) -> f64 {
        self.neighbors[e as usize].iter().map(|x| x.1).sum()
    }
}

/// Builds the context of one community from the run's tables.
///
/// `entity_passages[e]` lists the passages mentioning entity `e` (ascending); `passage(row)`
/// is passage row `row`.
#[allow(clippy::too_many_arguments)]
pub fn community_context<'a>(
    community_id: u32,
    level: u32,
    members: &[u32],
    names: &'a [String],
    aliases: &'a [String],
    adjacency: &Adjacency,
    entity_passages: &[Vec<u32>],
    passage: &(dyn Fn(u32) -> PassageRef<'a> + Sync),
) -> CommunityContext<'a> {
    let member_set: std::collections::HashSet<u32> = members.iter().copied().collect();
    let mut internal: HashMap<u32, f64> = HashMap::new();
    let mut relationships = Vec::new();
    let mut internal_weight = 0.0;
    for &e in members {
        for &(o, w) in &adjacency.neighbors[e as usize] {
            if member_set.contains(&o) {
                *internal.entry(e).or_insert(0.0) += w;
                if e < o {
                    relationships.push((names[e as usize].as_str(), names[o as usize].as_str(), w));
                    internal_weight += w;
                }
            }
        }
    }
    relationships.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(b.0)).then(a.1.cmp(b.1)));
    relationships.truncate(20);
    let mut per_passage: HashMap<u32, u32> = HashMap::new();
    let mut member_rows: Vec<(u32, &str, f64, u32)> = members
        .iter()
        .map(|&e| {
            let ps = &entity_passages[e as usize];
            for &p in ps {
                *per_passage.entry(p).or_insert(0) += 1;
            }
            (
                e,
                names[e as usize].as_str(),
                internal.get(&e).copied().unwrap_or(0.0),
                ps.len() as u32,
            )
        })
        .collect();
    member_rows.sort_by(|a, b| b.2.total_cmp(&a.2).then(b.3.cmp(&a.3)).then(a.1.cmp(b.1)));
    // Sorted as 12-byte keys (unique by row, so an unstable sort gives the one order), then
    // made references: a coarse community's supporting passages are most of the corpus.
    let mut keys: Vec<(std::cmp::Reverse<u32>, u32, u32)> = per_passage
        .into_iter()
        .map(|(p, n)| (std::cmp::Reverse(n), passage(p).position, p))
        .collect();
    keys.sort_unstable();
    let ranked: Vec<(PassageRef<'a>, u32)> = keys
        .into_iter()
        .map(|(std::cmp::Reverse(n), _, p)| (passage(p), n))
        .collect();
    let num_documents = ranked
        .iter()
        .map(|(p, _)| p.document)
        .collect::<std::collections::HashSet<_>>()
        .len();
    CommunityContext {
        community_id,
        level,
        aliases: member_rows
            .iter()
            .map(|m| aliases[m.0 as usize].as_str())
            .collect(),
        members: member_rows,
        relationships,
        passages: ranked,
        num_documents,
        internal_weight,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Statins, Mortality and Myocardial Infarction as community 7 of level 1, over `edges`,
    /// `entity_passages` and `passages`.
    fn three_member_context<'a>(
        names: &'a [String],
        aliases: &'a [String],
        adjacency: &'a Adjacency,
        entity_passages: &'a [Vec<u32>],
        passages: &'a [PassageRef<'a>],
    ) -> CommunityContext<'a> {
        community_context(
            7,
            1,
            &[0, 1, 2],
            names,
            aliases,
            adjacency,
            entity_passages,
            &|p| passages[p as usize],
        )
    }

    fn three_names() -> Vec<String> {
        ["Statins", "Mortality", "Myocardial Infarction"]
            .iter()
            .map(|s| (*s).into())
            .collect()
    }

    #[test]
    fn extractive_report_is_deterministic_and_grounded() {
        let names = three_names();
        let adjacency = Adjacency::new(3, &[(0, 1, 2.0), (0, 2, 1.0), (1, 2, 3.0)]);
        let passages = [
            PassageRef::new("Statins lower mortality. Unrelated.", 1, "Q1?", 0, 0),
            PassageRef::new(
                "After myocardial infarction, mortality rises.",
                0,
                "Q2?",
                1,
                1,
            ),
        ];
        let entity_passages = vec![vec![0], vec![0, 1], vec![1]];
        let aliases: Vec<String> = vec!["Statin".into(), String::new(), "Heart Attack".into()];
        let ctx = three_member_context(&names, &aliases, &adjacency, &entity_passages, &passages);
        assert_eq!(ctx.members[0].1, "Mortality");
        assert_eq!(
            ctx.relationships[0],
            ("Mortality", "Myocardial Infarction", 3.0)
        );
        assert_eq!(ctx.num_documents, 2);
        let r = ExtractiveReportWriter.write(&ctx).unwrap();
        assert_eq!(r.title, "Mortality, Myocardial Infarction and Statins");
        assert_eq!(
            r.findings[0],
            "After myocardial infarction, mortality rises."
        );
        assert!(
            r.full_content.contains("Sources: Q2? Q1?"),
            "{}",
            r.full_content
        );
        assert!(
            r.full_content
                .contains("Myocardial Infarction (Heart Attack)"),
            "{}",
            r.full_content
        );
        assert_eq!(r, ExtractiveReportWriter.write(&ctx).unwrap());

        // What each recipe embeds: the shipped one leaves the sources' titles out.
        let texts = CommunityVectors::default().texts(&r);
        assert_eq!(texts.len(), 1);
        assert!(!texts[0].contains("Q1?"), "{}", texts[0]);
        assert!(texts[0].contains("Myocardial Infarction (Heart Attack)"));
        assert!(texts[0].contains(&r.findings[0]));
        let full: CommunityVectors = "full".parse().unwrap();
        assert_eq!(full.texts(&r), vec![r.full_content.clone()]);
        assert_eq!(CommunityVectors::default().to_string(), "nosources+a");
        let findings: CommunityVectors = "findings+p2".parse().unwrap();
        assert_eq!(findings.texts(&r).len(), 1 + r.findings.len());
        assert_eq!(findings.num_passages(), 2);
        assert!("none".parse::<CommunityVectors>().is_err());
    }

    #[test]
    fn counts_change_the_summary_but_not_the_embedded_text() {
        let names = three_names();
        let aliases = vec![String::new(); 3];
        let passages = [
            PassageRef::new("Statins lower mortality after infarction.", 0, "Q1?", 0, 0),
            PassageRef::new("Mortality after myocardial infarction.", 1, "Q2?", 1, 1),
            PassageRef::new("Statins again.", 2, "Q3?", 2, 2),
            PassageRef::new("Statins and mortality, once more.", 3, "Q4?", 3, 3),
            PassageRef::new("Mortality.", 4, "Q5?", 4, 4),
        ];
        let report = |edges: &[(u32, u32, f64)], entity_passages: Vec<Vec<u32>>| {
            let adjacency = Adjacency::new(3, edges);
            let ctx =
                three_member_context(&names, &aliases, &adjacency, &entity_passages, &passages);
            ExtractiveReportWriter.write(&ctx).unwrap()
        };
        let before = report(
            &[(0, 1, 3.0), (1, 2, 2.0)],
            vec![vec![0, 2, 3], vec![0, 1, 3], vec![0, 1]],
        );
        // A night adds a passage that ranks below the findings' and one co-occurrence.
        let after = report(
            &[(0, 1, 4.0), (1, 2, 2.0)],
            vec![vec![0, 2, 3], vec![0, 1, 3, 4], vec![0, 1]],
        );
        assert_ne!(before.summary, after.summary);
        assert_eq!(before.gist, after.gist);
        assert!(
            before.gist.contains("Statins – Mortality"),
            "{}",
            before.gist
        );
        assert!(
            !before.gist.chars().any(|c| c.is_ascii_digit()),
            "{}",
            before.gist
        );
        let recipe = CommunityVectors::default();
        assert_eq!(recipe.texts(&before), recipe.texts(&after));
    }

    #[test]
    fn community_vectors_round_trip_through_their_text_form() {
        for s in [
            "nosources+p3",
            "full",
            "none+c10",
            "title-summary+p1+c5",
            "findings",
            "nosources+a",
            "none+p2+a",
        ] {
            let v: CommunityVectors = s.parse().unwrap();
            assert_eq!(v.to_string(), s);
        }
        for bad in ["", "all", "full+x3", "full+p", "full+pthree"] {
            assert!(bad.parse::<CommunityVectors>().is_err(), "{bad}");
        }
    }
}
