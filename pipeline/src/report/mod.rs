//! Community reports: a [`ReportWriter`] trait (so an LLM writer can plug in) and the built-in
//! deterministic [`ExtractiveReportWriter`].

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;

/// One passage as a report sees it.
#[derive(Debug, Clone, Copy)]
pub struct PassageRef<'a> {
    /// Passage text.
    pub text: &'a str,
    /// Position in its document.
    pub position: u32,
    /// Title of its document.
    pub document_title: &'a str,
    /// Index of its document.
    pub document: u32,
    /// Row of the passage in the run (0-based, `passages.parquet` order).
    pub row: u32,
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
    /// Findings (sentences quoted from supporting passages).
    pub findings: Vec<String>,
    /// Rows ([`PassageRef::row`]) of the passages the findings quote, or any other passage
    /// whose words the embedded text carries. They are published as `report_sources`, and
    /// theme search leaves the community out while one of them is hidden: its embedding
    /// would otherwise let the hidden words find it.
    pub quoted_passages: Vec<u32>,
    /// Importance: `ln(1 + supporting passages) + ln(1 + internal edge weight)`.
    pub rank: f64,
    /// The text that is embedded (title, members, summary, findings, source titles).
    pub full_content: String,
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
/// * summary: size, level, centre, support, strongest links;
/// * findings: from each of the best three supporting passages, the sentence naming the most
///   members (at most 300 characters);
/// * embedded text: title, up to 30 member names with their short entry terms (so that
///   "statins" finds *Hydroxymethylglutaryl-CoA Reductase Inhibitors*), summary, findings and
///   the titles of up to five supporting documents.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveReportWriter;

const MAX_FINDING_CHARS: usize = 300;

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
        let links: Vec<String> = ctx
            .relationships
            .iter()
            .take(3)
            .map(|(a, b, w)| format!("{a} – {b} ({w} passages)"))
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
        let lower_names: Vec<String> = ctx.members.iter().map(|m| m.1.to_lowercase()).collect();
        let (findings, quoted_passages): (Vec<String>, Vec<u32>) = ctx
            .passages
            .iter()
            .take(3)
            .map(|(p, _)| (best_sentence(p.text, &lower_names), p.row))
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
            findings,
            quoted_passages,
            rank,
            full_content,
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
/// `entity_passages[e]` lists the passages mentioning entity `e` (ascending).
#[allow(clippy::too_many_arguments)]
pub fn community_context<'a>(
    community_id: u32,
    level: u32,
    members: &[u32],
    names: &'a [String],
    aliases: &'a [String],
    adjacency: &Adjacency,
    entity_passages: &[Vec<u32>],
    passages: &[PassageRef<'a>],
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
    let mut ranked: Vec<(u32, u32)> = per_passage.into_iter().collect();
    ranked.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(
                passages[a.0 as usize]
                    .position
                    .cmp(&passages[b.0 as usize].position),
            )
            .then(a.0.cmp(&b.0))
    });
    let num_documents = ranked
        .iter()
        .map(|(p, _)| passages[*p as usize].document)
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
        passages: ranked
            .into_iter()
            .map(|(p, n)| (passages[p as usize], n))
            .collect(),
        num_documents,
        internal_weight,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extractive_report_is_deterministic_and_grounded() {
        let names: Vec<String> = ["Statins", "Mortality", "Myocardial Infarction"]
            .iter()
            .map(|s| (*s).into())
            .collect();
        let adjacency = Adjacency::new(3, &[(0, 1, 2.0), (0, 2, 1.0), (1, 2, 3.0)]);
        let passages = vec![
            PassageRef {
                text: "Statins lower mortality. Unrelated.",
                position: 1,
                document_title: "Q1?",
                document: 0,
                row: 0,
            },
            PassageRef {
                text: "After myocardial infarction, mortality rises.",
                position: 0,
                document_title: "Q2?",
                document: 1,
                row: 1,
            },
        ];
        let entity_passages = vec![vec![0], vec![0, 1], vec![1]];
        let aliases: Vec<String> = vec!["Statin".into(), String::new(), "Heart Attack".into()];
        let ctx = community_context(
            7,
            1,
            &[0, 1, 2],
            &names,
            &aliases,
            &adjacency,
            &entity_passages,
            &passages,
        );
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
    }
}
