//! The report page: one self-contained HTML file (styles, script and data inline; nothing is
//! fetched), readable without its script and interactive with it.
//!
//! Rendered here, as plain HTML and inline SVG: the header (run id, parent run, input
//! fingerprint, embedder, parameters, timings), the figures per level with a size histogram
//! each, the largest communities, the lineage and the visibility counts. Drawn by the inline
//! script from the embedded data (`<script type="application/json" id="report-data">`): the
//! zoomable treemap of the hierarchy (area = members; each box labelled with its report title
//! and top members; a click shows its summary and findings) and the node-link drawings of the
//! largest communities.
//!
//! The script records what it did on the `<html>` element, for tests and for anyone
//! debugging the page: `data-report-ready="1"` once it has run, `data-treemap-nodes` (the
//! community boxes of the whole-hierarchy view), `data-treemap-view-nodes` (those of the
//! view shown now), `data-treemap-aggregates`, `data-networks-drawn`, and
//! `data-script-errors` (absent unless a script error happened: the messages, separated by
//! ` | `). The address `OUT.html#community=ID` opens the page zoomed on community `ID`.

use std::fmt::Write as _;

use html_escape::encode_text as text;
use serde::Serialize;

use super::{Drawings, FigureSource, LevelFigures, LineageStatus, Report, RunReport, StateCounts};

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// What the script reads: the drawings and the few figures it labels them with.
#[derive(Serialize)]
struct PageData<'a> {
    run_id: &'a str,
    communities: u64,
    levels: u64,
    #[serde(flatten)]
    drawings: &'a Drawings,
}

/// The page of `report`.
pub fn render(report: &Report) -> String {
    let f = &report.figures;
    let data = PageData {
        run_id: &f.run.run_id,
        communities: f.counts.communities,
        levels: f.counts.levels,
        drawings: &report.drawings,
    };
    // `<` only occurs inside JSON strings, where `\u003c` means the same: the data can never
    // close its script element.
    let json = serde_json::to_string(&data)
        .unwrap_or_else(|_| "{}".into())
        .replace('<', "\\u003c");
    let mut h = String::with_capacity(json.len() + 64 * 1024);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>agrag run {}</title><style>{STYLE}</style></head><body>\n",
        text(short_id(&f.run.run_id))
    );
    header(&mut h, f);
    cards(&mut h, f);
    run_section(&mut h, f);
    levels_section(&mut h, f);
    treemap_section(&mut h, f);
    largest_section(&mut h, f);
    lineage_section(&mut h, f);
    visibility_section(&mut h, f);
    let _ = write!(
        h,
        "<footer>Made by <code>agrag-engine report</code> at {} from <code>{}</code>. \
         Report titles, summaries and findings appear on this page because it is for the \
         run's operator; query answers never return report text.</footer>\n\
         <script type=\"application/json\" id=\"report-data\">{json}</script>\n\
         <script>{SCRIPT}</script>\n</body></html>\n",
        text(&f.generated_at),
        text(&f.run_dir)
    );
    h
}

fn short_id(id: &str) -> &str {
    id.get(..13).unwrap_or(id)
}

fn num(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn seconds(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.0} s")
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1000.0)
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "—".to_owned(), |v| v.to_string())
}

fn source_note(s: FigureSource) -> &'static str {
    match s {
        FigureSource::Manifest => "",
        FigureSource::Computed => {
            " <span class=\"src\" title=\"not recorded in the manifest: computed from the run's tables\">computed</span>"
        }
    }
}

fn header(h: &mut String, f: &RunReport) {
    let latest = if f.run.is_latest {
        "<span class=\"chip ok\">LATEST</span>"
    } else {
        "<span class=\"chip\">not LATEST</span>"
    };
    let _ = write!(
        h,
        "<header><div class=\"brand\">agrag · run report</div>\
         <h1><code>{}</code> {latest}</h1>\
         <div class=\"sub\">published {} · {} documents · embedder {} · parent run {}</div>\
         <nav><a href=\"#run\">Run</a><a href=\"#levels\">Levels</a><a href=\"#hierarchy\">Hierarchy</a>\
         <a href=\"#largest\">Largest communities</a><a href=\"#lineage\">Lineage</a><a href=\"#visibility\">Visibility</a></nav>\
         </header>\n<main>\n",
        text(&f.run.run_id),
        text(&f.run.created_at),
        num(f.counts.documents),
        text(&f.run.embedder.model),
        f.run.parent_run_id.as_deref().map_or_else(
            || "none recorded".to_owned(),
            |p| format!("<code>{}</code>", text(p))
        )
    );
}

fn card(h: &mut String, label: &str, value: &str, note: &str, class: &str) {
    let _ = write!(
        h,
        "<div class=\"card {class}\"><div class=\"label\">{label}</div>\
         <div class=\"value\">{value}</div><div class=\"note\">{note}</div></div>"
    );
}

fn cards(h: &mut String, f: &RunReport) {
    let c = &f.counts;
    h.push_str("<section class=\"cards\">");
    card(
        h,
        "Documents",
        &num(c.documents),
        &c.linked_documents
            .map_or(String::new(), |n| format!("{} linked to a concept", num(n))),
        "",
    );
    card(
        h,
        "Passages",
        &num(c.passages),
        &format!("{} mentions", num(c.mentions)),
        "",
    );
    card(
        h,
        "Entities",
        &num(c.entities),
        &format!("{} isolated", num(c.isolated_entities)),
        "",
    );
    card(
        h,
        "Relationships",
        &num(c.relationships),
        &format!("total weight {}", c.total_weight),
        "",
    );
    let per_level: Vec<String> = f.levels.iter().map(|l| num(l.communities)).collect();
    card(
        h,
        "Communities",
        &num(c.communities),
        &format!("{} levels: {}", c.levels, per_level.join(" · ")),
        "",
    );
    let q0 = f.levels.first().and_then(|l| l.modularity);
    card(
        h,
        "Modularity, level 0",
        &q0.map_or_else(|| "—".into(), |q| format!("{q:.4}")),
        "γ = 1",
        "",
    );
    let over = f.detection.oversized_leaves;
    card(
        h,
        "Leaves over max size",
        &opt(over),
        &format!(
            "max_cluster_size {} · largest leaf {}",
            opt(f.detection.max_cluster_size),
            f.detection.largest_leaf
        ),
        if over.unwrap_or(0) > 0 { "warn" } else { "" },
    );
    let hidden = f.visibility.passages.total();
    card(
        h,
        "Passages not visible",
        &num(hidden),
        &format!(
            "{} documents not visible",
            num(f.visibility.documents.total())
        ),
        if hidden > 0 { "warn" } else { "" },
    );
    h.push_str("</section>\n");
}

fn row(h: &mut String, key: &str, value: &str) {
    let _ = write!(h, "<tr><th>{key}</th><td>{value}</td></tr>");
}

fn code(s: &str) -> String {
    format!("<code>{}</code>", text(s))
}

fn run_section(h: &mut String, f: &RunReport) {
    let r = &f.run;
    let d = &f.detection;
    h.push_str("<section id=\"run\"><h2>Run</h2><div class=\"cols\"><div><table class=\"kv\">");
    row(h, "run id", &code(&r.run_id));
    row(
        h,
        "parent run",
        &r.parent_run_id.as_deref().map_or_else(
            || "none recorded (first run on this root, or computed from nothing)".into(),
            code,
        ),
    );
    row(h, "published", &text(&r.created_at));
    row(h, "format version", &r.format_version.to_string());
    row(h, "input fingerprint", &code(&r.input_fingerprint));
    row(
        h,
        "embedder",
        &format!(
            "{} · dim {} · {}",
            text(&r.embedder.model),
            r.embedder.dim,
            if r.embedder.normalized {
                "L2-normalized"
            } else {
                "not normalized"
            }
        ),
    );
    row(h, "embedder fingerprint", &code(&r.embedder.fingerprint));
    row(h, "run folder", &code(&f.run_dir));
    h.push_str("</table></div><div><table class=\"kv\">");
    row(h, "algorithm", &text(&opt(d.algorithm.as_deref())));
    row(h, "objective", &text(&opt(d.objective.as_deref())));
    row(h, "resolution γ", &opt(d.resolution));
    row(h, "max_cluster_size", &opt(d.max_cluster_size));
    row(h, "max_levels", &opt(d.max_levels));
    row(h, "seed", &opt(d.seed));
    h.push_str("</table>");
    // Timings as bars relative to the slowest phase.
    let max = r.seconds.values().copied().fold(0.0_f64, f64::max);
    let _ = write!(
        h,
        "<h3>Timings <span class=\"muted\">(total {})</span></h3><div class=\"bars\">",
        seconds(r.total_seconds)
    );
    let mut phases: Vec<(&String, &f64)> = r.seconds.iter().collect();
    phases.sort_by(|a, b| b.1.total_cmp(a.1));
    for (phase, &s) in phases {
        let pct = if max > 0.0 { s / max * 100.0 } else { 0.0 };
        let _ = write!(
            h,
            "<div class=\"bar\"><span class=\"k\">{}</span><span class=\"track\"><span class=\"fill\" style=\"width:{pct:.1}%\"></span></span><span class=\"v\">{}</span></div>",
            text(phase),
            seconds(s)
        );
    }
    if r.seconds.is_empty() {
        h.push_str("<p class=\"muted\">The manifest records no timings.</p>");
    }
    let params = serde_json::to_string_pretty(&r.parameters).unwrap_or_default();
    let _ = writeln!(
        h,
        "</div></div></div><details><summary>All parameters (manifest.json)</summary><pre>{}</pre></details></section>",
        text(&params)
    );
}

/// An inline SVG bar chart of one level's size histogram.
fn histogram_svg(l: &LevelFigures) -> String {
    let bins = &l.histogram;
    let max = bins.iter().map(|b| b.communities).max().unwrap_or(0).max(1);
    let (bw, gap, height) = (22.0, 3.0, 44.0);
    let width = bins.len() as f64 * (bw + gap);
    let mut s = format!(
        "<svg class=\"hist\" width=\"{width:.0}\" height=\"{}\" viewBox=\"0 0 {width:.0} {}\" role=\"img\" aria-label=\"size histogram of level {}\">",
        height + 14.0,
        height + 14.0,
        l.level
    );
    for (i, b) in bins.iter().enumerate() {
        let x = i as f64 * (bw + gap);
        let bh = if b.communities == 0 {
            0.0
        } else {
            (b.communities as f64 / max as f64 * (height - 10.0)).max(1.5)
        };
        let range = if b.min_size == b.max_size {
            b.min_size.to_string()
        } else {
            format!("{}–{}", b.min_size, b.max_size)
        };
        let _ = write!(
            s,
            "<g><title>{} communities of {range} members</title>\
             <rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{bw}\" height=\"{bh:.1}\" rx=\"2\"></rect>",
            b.communities,
            height - bh
        );
        if b.communities > 0 {
            let _ = write!(
                s,
                "<text class=\"c\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + bw / 2.0,
                height - bh - 2.0,
                b.communities
            );
        }
        let _ = write!(
            s,
            "<text class=\"b\" x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            x + bw / 2.0,
            height + 11.0,
            b.min_size
        );
    }
    s.push_str("</svg>");
    s
}

fn levels_section(h: &mut String, f: &RunReport) {
    h.push_str(
        "<section id=\"levels\"><h2>Levels</h2><p class=\"muted\">Level 0 is the coarsest. Modularity (γ = 1) is that \
         of the partition at this depth: the level's communities and the leaves above it. The \
         histogram counts communities by size in members (bins start at the number shown: 1, 2–3, 4–7, …).</p>\
         <table class=\"grid\"><thead><tr><th>level</th><th>communities</th><th>leaves</th>\
         <th>members</th><th>modularity</th><th>singletons</th><th>leaves over max</th>\
         <th>size min · median · p90 · max</th><th>sizes</th></tr></thead><tbody>",
    );
    for l in &f.levels {
        let over = l.oversized_leaves.unwrap_or(0);
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td class=\"{}\">{}</td>\
             <td>{} · {} · {} · {}</td><td>{}</td></tr>",
            l.level,
            num(l.communities),
            num(l.leaves),
            num(l.members),
            l.modularity
                .map_or_else(|| "—".into(), |q| format!("{q:.4}")),
            source_note(l.modularity_source),
            num(l.singletons),
            if over > 0 { "warn" } else { "" },
            opt(l.oversized_leaves),
            l.size_min,
            l.size_median,
            l.size_p90,
            l.size_max,
            histogram_svg(l)
        );
    }
    if f.levels.is_empty() {
        h.push_str("<tr><td colspan=\"9\">This run has no communities.</td></tr>");
    }
    let _ = writeln!(
        h,
        "</tbody></table><p class=\"muted\">Leaves over <code>max_cluster_size</code> ({}) in all: {}{} \
         — communities that Leiden could not split further (no community structure inside at this \
         resolution) or that reached the last level allowed.</p></section>",
        opt(f.detection.max_cluster_size),
        opt(f.detection.oversized_leaves),
        source_note(f.detection.oversized_leaves_source)
    );
}

fn treemap_section(h: &mut String, f: &RunReport) {
    let s = &f.sampling;
    let sampled = if s.treemap_communities < f.counts.communities {
        format!(
            " Drawn: the {} largest of {} communities (largest first from the top of the \
             hierarchy); the rest are grouped as “N smaller communities”.",
            num(s.treemap_communities),
            num(f.counts.communities)
        )
    } else {
        format!(" All {} communities are drawn.", num(f.counts.communities))
    };
    let _ = writeln!(
        h,
        "<section id=\"hierarchy\"><h2>Hierarchy</h2><p class=\"muted\">Area = members; colour = level-0 community, \
         darker = deeper. Click a box for its report; double-click (or “Zoom in”) to zoom.{sampled}</p>\
         <div class=\"tm-wrap\"><div class=\"tm-main\"><div id=\"crumbs\" class=\"crumbs\"></div>\
         <div id=\"treemap\" class=\"treemap\"><noscript>The treemap needs JavaScript.</noscript></div></div>\
         <aside id=\"details\" class=\"details\"><p class=\"muted\">Click a community to see its report.</p></aside></div></section>"
    );
}

fn largest_section(h: &mut String, f: &RunReport) {
    h.push_str(
        "<section id=\"largest\"><h2>Largest communities</h2><table class=\"grid\"><thead><tr><th>id</th><th>level</th>\
         <th>members</th><th>children</th><th>relationships inside</th><th>weight inside</th>\
         <th>title</th><th>top members</th></tr></thead><tbody>",
    );
    for c in &f.largest_communities {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"muted\">{}</td></tr>",
            c.community_id,
            c.level,
            num(u64::from(c.size)),
            c.children,
            num(c.internal_relationships),
            c.internal_share
                .map_or_else(|| "—".into(), |x| format!("{:.0}%", x * 100.0)),
            text(&c.title),
            text(&c.top_members.join(" · "))
        );
    }
    let _ = writeln!(
        h,
        "</tbody></table><h3>Strongest relationships</h3><p class=\"muted\">The {} largest level-0 \
         communities: up to {} members each (most connected inside first) and the {} heaviest \
         relationships among them; edge width = weight (passages mentioning both), colour = \
         level-1 community.</p><div id=\"networks\" class=\"networks\"></div></section>",
        f.sampling.drawings, f.sampling.drawing_node_limit, f.sampling.drawing_edge_limit
    );
}

fn lineage_section(h: &mut String, f: &RunReport) {
    let l = &f.lineage;
    h.push_str("<section id=\"lineage\"><h2>Lineage</h2>");
    match &l.parent_run_id {
        Some(p) => {
            let _ = write!(
                h,
                "<p>Parent run <code>{}</code>{}.</p>",
                text(p),
                match l.parent_in_root {
                    Some(true) => " (still under this root)",
                    Some(false) => " (no longer under this root)",
                    None => "",
                }
            );
        }
        None => h.push_str("<p>No parent run recorded: this is the first run on this root, or it was computed from nothing.</p>"),
    }
    if l.status == LineageStatus::Lineage {
        h.push_str("<div class=\"events\">");
        for event in [
            "same",
            "grew",
            "shrank",
            "split",
            "merged",
            "new",
            "dissolved",
        ] {
            let n = l.events.get(event).copied().unwrap_or(0);
            let _ = write!(
                h,
                "<div class=\"event {event}\"><div class=\"value\">{}</div><div class=\"label\">{event}</div></div>",
                num(n)
            );
        }
        for (event, n) in l.events.iter().filter(|(e, _)| {
            ![
                "same",
                "grew",
                "shrank",
                "split",
                "merged",
                "new",
                "dissolved",
            ]
            .contains(&e.as_str())
        }) {
            let _ = write!(
                h,
                "<div class=\"event\"><div class=\"value\">{}</div><div class=\"label\">{}</div></div>",
                num(*n),
                text(event)
            );
        }
        let _ = write!(
            h,
            "</div><p class=\"muted\">From {}.</p>",
            text(l.events_source.as_deref().unwrap_or("?"))
        );
        if !l.biggest_changes.is_empty() {
            h.push_str(
                "<h3>Biggest changes</h3><table class=\"grid\"><thead><tr><th>event</th><th>community</th>\
                 <th>predecessor</th><th>members</th><th>before</th><th>Jaccard</th><th>title</th></tr></thead><tbody>",
            );
            for c in &l.biggest_changes {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    text(&c.event),
                    opt(c.community_id),
                    opt(c.predecessor),
                    opt(c.size),
                    opt(c.previous_size),
                    c.jaccard.map_or_else(|| "—".into(), |j| format!("{j:.2}")),
                    text(c.title.as_deref().unwrap_or(""))
                );
            }
            h.push_str("</tbody></table>");
        }
    }
    // Without a parent the sentence above says it all.
    if !l.note.is_empty() && l.status != LineageStatus::NoParent {
        let _ = write!(h, "<p class=\"muted\">{}</p>", text(&l.note));
    }
    h.push_str("</section>\n");
}

fn visibility_section(h: &mut String, f: &RunReport) {
    let v = &f.visibility;
    h.push_str("<section id=\"visibility\"><h2>Visibility now</h2>");
    if !v.store_present {
        h.push_str(
            "<p>No visibility store (<code>visibility.sqlite</code>) under this root: every passage and document is visible.</p></section>\n",
        );
        return;
    }
    let cell = |c: &StateCounts, pick: fn(&StateCounts) -> u64| num(pick(c));
    type Pick = fn(&StateCounts) -> u64;
    let kinds: [(&str, Pick); 3] = [
        ("hidden", |c| c.hidden),
        ("superseded", |c| c.superseded),
        ("deleted", |c| c.deleted),
    ];
    let _ = write!(
        h,
        "<table class=\"grid narrow\"><thead><tr><th>state</th><th>passages (of {})</th><th>documents (of {})</th>\
         <th>passage flags</th><th>document flags</th></tr></thead><tbody>",
        num(f.counts.passages),
        num(f.counts.documents)
    );
    for (name, pick) in kinds {
        let _ = write!(
            h,
            "<tr><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            cell(&v.passages, pick),
            cell(&v.documents, pick),
            cell(&v.passage_flags, pick),
            cell(&v.document_flags, pick)
        );
    }
    let _ = writeln!(
        h,
        "</tbody></table><p class=\"muted\">A passage counts as restricted as the more restrictive of its \
         own flag and its document's, as queries apply them. Hidden text is kept and filtered at query \
         time; superseded and deleted text leaves the next run. Flags naming nothing in this run: {}.</p></section>",
        num(v.flags_outside_run)
    );
}

#[cfg(test)]
mod tests {
    use super::num;

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(num(0), "0");
        assert_eq!(num(999), "999");
        assert_eq!(num(1000), "1,000");
        assert_eq!(num(1_234_567), "1,234,567");
    }
}
