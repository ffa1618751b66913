//! Stage 5, report: one report per community from its members, internal relationships and
//! supporting passages ([`ReportWriter`], extractive by default), and what each community's
//! vectors are made of ([`CommunityVectors`]): the texts to embed and the passages whose own
//! vectors join them.

use rayon::prelude::*;

use crate::error::Result;
use crate::leiden::hierarchy::{Community, Hierarchy};
use crate::link::Vocabulary;
use crate::report::{Adjacency, CommunityVectors, Report, ReportText, community_context};
use crate::run::RunConfig;
use crate::stages::Phases;
use crate::stages::graph::EntityGraph;
use crate::stages::visibility::PassageTable;

/// The report stage's output, in community order.
#[derive(Debug)]
pub(crate) struct Reported {
    /// One report per community; `full_content` is what its text vectors embed, and
    /// `quoted_passages` includes the passages whose own vectors are its vectors.
    pub(crate) reports: Vec<Report>,
    /// The texts whose vectors are the community's (at least one when it has no passage
    /// vector).
    pub(crate) texts: Vec<Vec<String>>,
    /// The passages whose own vectors are the community's: its best `passages`, then those
    /// assigned to it.
    pub(crate) best_passages: Vec<Vec<u32>>,
    /// The supporting passages whose mean is the community's centroid vector (the first
    /// `centroid` of its ranking; empty without a centroid).
    pub(crate) centroid_passages: Vec<Vec<u32>>,
}

/// Stage 5: writes every community's report with [`RunConfig::report_writer`] (in parallel;
/// the writer is deterministic per community) and chooses its vectors' sources by
/// [`RunConfig::community_vectors`].
///
/// # Errors
/// The report writer's.
pub(crate) fn report(
    cfg: &RunConfig,
    hierarchy: &Hierarchy,
    graph: &EntityGraph,
    vocabulary: &Vocabulary,
    passages: &PassageTable<'_>,
    phases: &mut Phases,
) -> Result<Reported> {
    let phase = phases.start("report", Some(hierarchy.communities.len() as u64));
    let concepts = &graph.co.entity_concepts;
    let names: Vec<String> = concepts
        .iter()
        .map(|&c| vocabulary.concepts[c as usize].preferred_term.clone())
        .collect();
    // Up to three short entry terms per entity (no inverted "X, Y" forms), for the embedded text.
    let aliases: Vec<String> = concepts
        .iter()
        .map(|&c| {
            let mut syn: Vec<&String> = vocabulary.concepts[c as usize]
                .synonyms
                .iter()
                .filter(|s| !s.contains(',') && s.len() <= 40)
                .collect();
            syn.sort_by_key(|s| (s.len(), s.as_str()));
            syn.iter()
                .take(3)
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        })
        .collect();
    let adjacency = Adjacency::new(concepts.len(), &graph.co.edges);
    let recipe = cfg.community_vectors;
    let keep = if recipe.assigned {
        usize::MAX
    } else {
        recipe.num_passages()
    };
    let (mut reports, ranked): (Vec<Report>, Vec<Vec<u32>>) = hierarchy
        .communities
        .par_iter()
        .map(|c| {
            let ctx = community_context(
                c.id,
                c.level,
                &c.members,
                &names,
                &aliases,
                &adjacency,
                &graph.entity_passages,
                &|p| passages.reference(p),
            );
            let r = cfg.report_writer.write(&ctx);
            phase.bar.inc(1);
            let ranked: Vec<u32> = ctx.passages.iter().take(keep).map(|(p, _)| p.row).collect();
            r.map(|r| (r, ranked))
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    drop((names, aliases, adjacency));
    // The quoted passages' text is read.
    passages.corpus().release_passages();
    phases.finish(phase, &format!("{} reports", reports.len()));

    let assigned = if recipe.assigned {
        assign_passages(&ranked, &hierarchy.communities, passages.len())
    } else {
        vec![Vec::new(); ranked.len()]
    };
    let best_passages: Vec<Vec<u32>> = ranked
        .iter()
        .zip(&assigned)
        .map(|(r, a)| {
            let mut v: Vec<u32> = r.iter().take(recipe.passages).copied().collect();
            // `v` is the short ranked prefix (`recipe.passages` rows), so `contains` is cheap.
            v.extend(a.iter().filter(|p| !v.contains(p)).collect::<Vec<_>>());
            v
        })
        .collect();
    drop(assigned);
    let centroid_passages: Vec<Vec<u32>> = ranked
        .into_iter()
        .map(|mut r| {
            r.truncate(recipe.centroid);
            r.shrink_to_fit();
            r
        })
        .collect();

    // A community with no vector could never be found: without supporting passages its report
    // text stands in.
    let fallback = CommunityVectors {
        report: ReportText::NoSources,
        passages: 0,
        centroid: 0,
        assigned: false,
    };
    let texts: Vec<Vec<String>> = reports
        .iter()
        .zip(&best_passages)
        .map(|(r, best)| match recipe.texts(r) {
            t if t.is_empty() && (best.is_empty() || recipe.num_passages() == 0) => {
                fallback.texts(r)
            }
            t => t,
        })
        .collect();
    for ((r, texts), best) in reports.iter_mut().zip(&texts).zip(&best_passages) {
        // `reports.parquet` stores what was embedded; a passage whose vector is one of the
        // community's is a source of its embedding, like a quoted one (`report_sources`).
        r.full_content = texts.join("\n\n");
        // A set, not `Vec::contains`: a large community's assigned passages run to thousands.
        let mut quoted: std::collections::HashSet<u32> =
            r.quoted_passages.iter().copied().collect();
        for &p in best {
            if quoted.insert(p) {
                r.quoted_passages.push(p);
            }
        }
    }
    Ok(Reported {
        reports,
        texts,
        best_passages,
        centroid_passages,
    })
}

/// Assigns every supporting passage to the one community that ranks it best among its
/// supporting passages (`ranked[c]`, best first): lowest rank, then the finer level, then the
/// lower community id. Returns each community's assigned passages in its own rank order. A
/// query that matches a passage's vector then finds the community that shows that passage
/// highest, so every linked passage can be found through a theme that returns it.
fn assign_passages(
    ranked: &[Vec<u32>],
    communities: &[Community],
    num_passages: usize,
) -> Vec<Vec<u32>> {
    // passage → (rank, finer level first, community)
    let mut best: Vec<Option<(usize, std::cmp::Reverse<u32>, u32)>> = vec![None; num_passages];
    for (c, rows) in ranked.iter().enumerate() {
        let level = communities[c].level;
        for (rank, &p) in rows.iter().enumerate() {
            let key = (rank, std::cmp::Reverse(level), c as u32);
            let slot = &mut best[p as usize];
            if slot.is_none_or(|b| key < b) {
                *slot = Some(key);
            }
        }
    }
    let mut out = vec![Vec::new(); ranked.len()];
    for (c, rows) in ranked.iter().enumerate() {
        out[c] = rows
            .iter()
            .copied()
            .filter(|&p| best[p as usize].is_some_and(|b| b.2 == c as u32))
            .collect();
    }
    out
}
