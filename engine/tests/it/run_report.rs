//! `agrag-engine report` through the binary: the page and the JSON of the committed golden run,
//! bad input named with exit 2, a large run drawn within its bounds, and the page rendered by a
//! real headless Chromium (skipped with a `SKIPPED` line when none is installed, unless
//! `AGRAG_REQUIRE_CHROMIUM=1`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use agrag_engine::embed::{Embedder, HashEmbedder};
use agrag_engine::format::Layout;
use agrag_engine::format::tables::{
    CommunityRecord, DocumentRecord, EntityRecord, MembershipRecord, PassageRecord, ReportRecord,
};
use agrag_engine::format::{RunData, new_run_id, write_run};
use serde_json::Value;

use crate::common::describe as show;

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/fixtures/snapshots/v1")
}

fn report(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
        .arg("report")
        .args(args)
        .env_remove("AGRAG_ROOT")
        .output()
        .unwrap()
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The page holds no reference to anything outside itself: no external script, style, image,
/// font or frame, and no URL but the SVG namespace (a name, never fetched).
fn assert_self_contained(page: &str) {
    for needle in [
        "<link",
        "src=",
        "@import",
        "url(http",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(!page.contains(needle), "the page contains {needle:?}");
    }
    let urls = page.matches("http://").count() + page.matches("https://").count();
    let namespaces = page.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(urls, namespaces, "the only URL is the SVG namespace");
}

#[test]
fn report_of_the_golden_run_as_html_and_json() {
    let root = golden_root();
    let out_dir = tempfile::tempdir().unwrap();
    let html = out_dir.path().join("run.html");
    let out = report(&[
        "--root",
        path_str(&root),
        "--html",
        path_str(&html),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let figures: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_id = Layout::new(&root).read_latest().unwrap().unwrap();
    assert_eq!(figures["report_version"], 1);
    assert_eq!(figures["run"]["run_id"], run_id.as_str());
    assert_eq!(figures["run"]["is_latest"], true);
    assert_eq!(figures["run"]["parent_run_id"], Value::Null);
    assert_eq!(figures["run"]["embedder"]["model"], "agrag-hash-v1");
    assert_eq!(figures["counts"]["communities"], 86);
    assert_eq!(figures["counts"]["entities"], 366);
    assert_eq!(figures["counts"]["relationships"], 1103);
    assert_eq!(figures["counts"]["isolated_entities"], 4);
    let levels = figures["levels"].as_array().unwrap();
    let per_level: Vec<u64> = levels
        .iter()
        .map(|l| l["communities"].as_u64().unwrap())
        .collect();
    assert_eq!(per_level, vec![30, 46, 10]);
    assert_eq!(levels[0]["modularity"].as_f64(), Some(0.8196427912590656));
    assert_eq!(levels[0]["modularity_source"], "manifest");
    // The golden run predates the manifest's count of oversized leaves: computed, 0.
    assert_eq!(figures["detection"]["oversized_leaves"], 0);
    assert_eq!(figures["detection"]["oversized_leaves_source"], "computed");
    assert_eq!(figures["lineage"]["status"], "no_parent");
    assert_eq!(figures["visibility"]["store_present"], false);
    assert_eq!(figures["sampling"]["treemap_communities"], 86);
    assert_eq!(figures["largest_communities"][0]["size"], 37);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("wrote "), "{}", show(&out));

    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains(&run_id));
    assert!(page.contains(figures["run"]["input_fingerprint"].as_str().unwrap()));
    assert!(
        page.contains("Mortality, Prognosis and Emergencies"),
        "report titles"
    );
    assert!(page.contains("query answers never return report text"));
    assert_self_contained(&page);
    assert!(page.len() < 1_000_000, "{} bytes", page.len());
    println!("page of the golden run: {} bytes", page.len());
    // Reading wrote nothing into the root (no visibility store, no temporary file).
    assert!(!root.join("visibility.sqlite").exists());
    let left: Vec<_> = std::fs::read_dir(out_dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "only the page: {left:?}");

    // --json alone prints the same figures and writes nothing.
    let out = report(&["--root", path_str(&root), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["levels"], figures["levels"]);
    assert_eq!(again["run"], figures["run"]);

    // --run names the same run explicitly; --html alone says where the page went.
    let other = out_dir.path().join("again.html");
    let out = report(&[
        "--root",
        path_str(&root),
        "--run",
        &run_id,
        "--html",
        path_str(&other),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(path_str(&other)));
}

#[test]
fn bad_input_exits_2_naming_what_is_wrong() {
    let root = golden_root();
    let run_id = Layout::new(&root).read_latest().unwrap().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let expect = |args: &[&str], code: i32, needles: &[&str]| {
        let out = report(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        for n in needles {
            assert!(
                stderr.contains(n),
                "{args:?}: stderr lacks {n:?}: {}",
                show(&out)
            );
        }
        assert!(!html.exists(), "{args:?} wrote a page");
    };

    // No run: an empty root, a missing root.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let latest = empty.join("LATEST");
    expect(
        &["--root", path_str(&empty), "--html", path_str(&html)],
        2,
        &[path_str(&latest), "does not exist"],
    );
    let missing = dir.path().join("missing");
    expect(
        &["--root", path_str(&missing), "--json"],
        2,
        &[path_str(&missing)],
    );
    // An unknown run id names the folder looked for and the runs there.
    let unknown = "01a00000-0000-7000-8000-000000000000";
    let folder = root.join("runs").join(unknown);
    expect(
        &[
            "--root",
            path_str(&root),
            "--run",
            unknown,
            "--html",
            path_str(&html),
        ],
        2,
        &[path_str(&folder), &run_id],
    );
    expect(
        &["--root", path_str(&root), "--run", "yesterday", "--json"],
        2,
        &["invalid run = yesterday"],
    );
    // A page that cannot be written: under a file, or a folder; checked before the run is read.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("r.html");
    expect(
        &["--root", path_str(&root), "--html", path_str(&under_file)],
        2,
        &["cannot write", path_str(&under_file)],
    );
    expect(
        &["--root", path_str(&root), "--html", path_str(dir.path())],
        2,
        &["cannot write", path_str(dir.path()), "is a folder"],
    );
    let no_folder = dir.path().join("no/such/folder/r.html");
    expect(
        &["--root", path_str(&missing), "--html", path_str(&no_folder)],
        2,
        &["cannot write", path_str(&no_folder)],
    );
    // Neither --html nor --json: usage.
    expect(&["--root", path_str(&root)], 2, &["--html"]);

    // A damaged table is a failure of the work (exit 1) naming the file.
    let copy = dir.path().join("copy");
    copy_dir(&root, &copy);
    let table = copy.join("runs").join(&run_id).join("membership.parquet");
    let len = std::fs::metadata(&table).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&table)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    expect(
        &["--root", path_str(&copy), "--html", path_str(&html)],
        1,
        &[path_str(&table)],
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Number of level-0 communities of [`large_run`]; each has 10 children of 2 leaves each.
const LARGE_ROOTS: u32 = 200;

/// A synthetic run too large to draw whole: 40,000 entities, 200 level-0 communities of
/// 60 to 340 members, each split into 10 and then 2, so 6,200 communities in 3 levels, and
/// about 160,000 relationships; reports with full-length summaries and findings.
fn large_run(root: &Path) -> (String, u64) {
    let embedder = HashEmbedder::new(8);
    let dim = embedder.identity().dim;
    // Level-0 sizes vary (60 to 340), multiples of 20 so that each splits in 10, then 2.
    let sizes: Vec<u32> = (0..LARGE_ROOTS).map(|c| 20 * (3 + (c * 37) % 15)).collect();
    let mut level0 = Vec::new();
    for (c, &s) in sizes.iter().enumerate() {
        level0.extend(std::iter::repeat_n(c as u32, s as usize));
    }
    let num_entities = level0.len() as u32;
    let mut communities: Vec<CommunityRecord> = sizes
        .iter()
        .map(|&s| CommunityRecord {
            level: 0,
            parent: None,
            size: s,
            is_leaf: false,
        })
        .collect();
    let mut membership = Vec::new();
    let mut path = vec![[0u32; 3]; num_entities as usize];
    let mut start = 0u32;
    for (c, &s) in sizes.iter().enumerate() {
        for k in 0..10 {
            let child = communities.len() as u32;
            communities.push(CommunityRecord {
                level: 1,
                parent: Some(c as u32),
                size: s / 10,
                is_leaf: false,
            });
            for half in 0..2 {
                let leaf = communities.len() as u32;
                communities.push(CommunityRecord {
                    level: 2,
                    parent: Some(child),
                    size: s / 20,
                    is_leaf: true,
                });
                let first = start + k * (s / 10) + half * (s / 20);
                for e in first..first + s / 20 {
                    path[e as usize] = [c as u32, child, leaf];
                }
            }
        }
        start += s;
    }
    for level in 0..3u32 {
        for e in 0..num_entities {
            let p = path[e as usize];
            membership.push(MembershipRecord {
                level,
                entity: e,
                community: p[level as usize],
                parent: (level > 0).then(|| p[level as usize - 1]),
                is_leaf: level == 2,
            });
        }
    }
    let mut relationships = Vec::new();
    let mut degree = vec![0.0; num_entities as usize];
    for e in 0..num_entities {
        for d in [1, 3, 17, 211] {
            if e + d < num_entities {
                let w = f64::from(1 + e % 3);
                relationships.push((e, e + d, w));
                degree[e as usize] += w;
                degree[(e + d) as usize] += w;
            }
        }
    }
    let docs: Vec<String> = (0..10).map(|d| format!("d{d}")).collect();
    let sentence = "Long finding text that a real extractive report quotes from a passage, \
                    repeated to the length real findings have in the shipped corpus. ";
    let data = RunData {
        documents: docs
            .iter()
            .map(|k| DocumentRecord {
                key: k.clone(),
                title: k.clone(),
                year: None,
                num_passages: 1,
                linked: true,
            })
            .collect(),
        passages: docs
            .iter()
            .map(|k| PassageRecord {
                passage_id: format!("{k}#0"),
                document_key: k.clone(),
                position: 0,
                text: format!("passage of {k}"),
            })
            .collect(),
        entities: (0..num_entities)
            .map(|e| EntityRecord {
                concept_id: format!("C{e:06}"),
                name: format!("Entity number {e}"),
                num_passages: 1,
                degree: degree[e as usize],
            })
            .collect(),
        mentions: (0..num_entities)
            .map(|e| (e, format!("d{}#0", e % 10), 1))
            .collect(),
        relationships,
        reports: communities
            .iter()
            .enumerate()
            .map(|(c, row)| ReportRecord {
                level: row.level,
                title: format!("Theme {c} of level {}", row.level),
                summary: sentence.repeat(6),
                findings: vec![sentence.repeat(4); 6],
                rank: 1.0,
                full_content: String::new(),
            })
            .collect(),
        report_embeddings: vec![0.25; communities.len() * dim],
        document_embeddings: vec![0.25; docs.len() * dim],
        communities,
        membership,
        ..RunData::default()
    };
    let num_communities = data.communities.len() as u64;
    let run_id = new_run_id();
    let layout = Layout::new(root);
    write_run(
        &layout,
        &run_id,
        &data,
        embedder.identity(),
        serde_json::json!({"detection": {"max_cluster_size": 10}}),
        "synthetic".into(),
        serde_json::json!({}),
    )
    .unwrap();
    layout.write_latest(&run_id).unwrap();
    (run_id, num_communities)
}

#[test]
fn a_large_run_is_drawn_within_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let (_, num_communities) = large_run(dir.path());
    assert_eq!(num_communities, u64::from(LARGE_ROOTS) * 31);
    let html = dir.path().join("large.html");
    let start = Instant::now();
    let out = report(&[
        "--root",
        path_str(dir.path()),
        "--html",
        path_str(&html),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let seconds = start.elapsed().as_secs_f64();
    let f: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(f["counts"]["communities"], num_communities);
    let limit = agrag_engine::run_report::MAX_TREEMAP_NODES as u64;
    assert_eq!(f["sampling"]["treemap_communities"], limit);
    assert_eq!(f["sampling"]["treemap_limit"], limit);
    assert!(f["sampling"]["treemap_aggregates"].as_u64().unwrap() > 0);
    assert_eq!(f["sampling"]["drawings"], 6);
    // Leaves of level-0 communities of more than 200 members have more than 10.
    let oversized: u64 = (0..LARGE_ROOTS)
        .filter(|c| 3 + (c * 37) % 15 > 10)
        .map(|_| 20)
        .sum();
    assert_eq!(f["detection"]["oversized_leaves"], oversized);
    assert_eq!(f["levels"][2]["oversized_leaves"], oversized);
    let page = std::fs::read_to_string(&html).unwrap();
    assert_self_contained(&page);
    println!(
        "page of a run of {num_communities} communities: {} bytes, built in {seconds:.2} s",
        page.len()
    );
    assert!(page.len() < 3_000_000, "{} bytes", page.len());
    assert!(page.contains("smaller communities"));
}

/// A Chromium (or Chrome) binary: `AGRAG_CHROMIUM`, else the usual names on `PATH`.
fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("AGRAG_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
        "chrome",
        "headless_shell",
    ];
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// Runs headless Chromium on `page` (with `#fragment` when not empty) with `extra` arguments;
/// its standard output on success.
/// Output goes to files, not pipes: a DOM dump larger than a pipe's buffer would block the
/// browser until it is read.
fn chromium(browser: &Path, profile: &Path, page: &Path, fragment: &str, extra: &[&str]) -> String {
    let stdout = profile.join("stdout.txt");
    let stderr = profile.join("stderr.txt");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1400,3000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.join("profile").display()
        ))
        .args(extra)
        .arg(format!("file://{}{fragment}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not finish within 180 s", browser.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(status.success(), "chromium failed ({status}): {err}");
    std::fs::read_to_string(&stdout).unwrap()
}

/// Number of communities in the subtree of `community` (itself included).
fn subtree_size(root: &Path, run_id: &str, community: u32) -> u64 {
    use agrag_engine::format::tables::communities;
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt32Type;
    let path = Layout::new(root).run_dir(run_id).join(communities::FILE);
    let batch =
        agrag_engine::format::reader::read_parquet(&path, &communities::schema(), Some(run_id))
            .unwrap();
    let parent = batch
        .column_by_name(communities::PARENT)
        .unwrap()
        .as_primitive::<UInt32Type>();
    let parent_of = |c: usize| parent.is_valid(c).then(|| parent.value(c) as usize);
    (0..batch.num_rows())
        .filter(|&c| {
            let mut at = Some(c);
            while let Some(x) = at {
                if x == community as usize {
                    return true;
                }
                at = parent_of(x);
            }
            false
        })
        .count() as u64
}

/// The value of attribute `name` of the `<html>` element in a DOM dump.
fn html_attribute(dom: &str, name: &str) -> Option<String> {
    let start = dom.find("<html")?;
    let tag = &dom[start..start + dom[start..].find('>')?];
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    let end = at + tag[at..].find('"')?;
    Some(html_escape::decode_html_entities(&tag[at..end]).into_owned())
}

/// Loads `page` in Chromium and checks what its script recorded: no error, `communities`
/// community boxes in the treemap, `networks` drawings. Returns the load time in seconds.
fn check_in_browser(browser: &Path, page: &Path, communities: u64, networks: u64) -> f64 {
    let profile = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let dom = chromium(browser, profile.path(), page, "", &["--dump-dom"]);
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(
        html_attribute(&dom, "data-script-errors"),
        None,
        "the page's script failed"
    );
    assert_eq!(
        html_attribute(&dom, "data-report-ready").as_deref(),
        Some("1"),
        "the script did not finish: {}",
        &dom[..dom.len().min(600)]
    );
    assert_eq!(
        html_attribute(&dom, "data-treemap-nodes"),
        Some(communities.to_string())
    );
    assert_eq!(
        html_attribute(&dom, "data-networks-drawn"),
        Some(networks.to_string())
    );
    seconds
}

/// The page of a real run (the committed golden run) loads in headless Chromium without a
/// script error and draws every one of its communities in the treemap; a screenshot is saved
/// (`AGRAG_REPORT_SCREENSHOT`, default `<temp dir>/agrag-report.png`). A large run's page
/// draws its bounded sample and loads in seconds.
#[test]
fn the_page_renders_in_headless_chromium() {
    let Some(browser) = find_chromium() else {
        assert!(
            std::env::var("AGRAG_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
            "AGRAG_REQUIRE_CHROMIUM=1 but no Chromium was found (set AGRAG_CHROMIUM or put chromium on PATH)"
        );
        println!(
            "SKIPPED browser test: no Chromium found (install the `chromium` package, or set AGRAG_CHROMIUM)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("golden.html");
    let out = report(&[
        "--root",
        path_str(&golden_root()),
        "--html",
        path_str(&html),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let f: Value = serde_json::from_slice(&out.stdout).unwrap();
    let communities = f["counts"]["communities"].as_u64().unwrap();
    assert_eq!(f["sampling"]["treemap_communities"], communities);
    let drawings = f["sampling"]["drawings"].as_u64().unwrap();
    let seconds = check_in_browser(&browser, &html, communities, drawings);
    println!("golden run: {communities} communities drawn, page loaded in {seconds:.2} s");

    // Opened at a community, the page zooms on it: the view holds it and its descendants.
    let target = f["largest_communities"][0]["community_id"]
        .as_u64()
        .unwrap() as u32;
    let run_id = f["run"]["run_id"].as_str().unwrap();
    let profile = tempfile::tempdir().unwrap();
    let fragment = format!("#community={target}");
    let dom = chromium(&browser, profile.path(), &html, &fragment, &["--dump-dom"]);
    assert_eq!(html_attribute(&dom, "data-script-errors"), None);
    assert_eq!(
        html_attribute(&dom, "data-treemap-view-nodes"),
        Some(subtree_size(&golden_root(), run_id, target).to_string())
    );

    let shot = std::env::var_os("AGRAG_REPORT_SCREENSHOT").map_or_else(
        || std::env::temp_dir().join("agrag-report.png"),
        PathBuf::from,
    );
    let profile = tempfile::tempdir().unwrap();
    let arg = format!("--screenshot={}", shot.display());
    chromium(&browser, profile.path(), &html, "", &[&arg]);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(
        png.len() > 20_000,
        "a nearly empty screenshot: {} bytes",
        png.len()
    );
    println!("screenshot: {}", shot.display());

    let large = tempfile::tempdir().unwrap();
    let (_, _) = large_run(large.path());
    let html = dir.path().join("large.html");
    let out = report(&[
        "--root",
        path_str(large.path()),
        "--html",
        path_str(&html),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let f: Value = serde_json::from_slice(&out.stdout).unwrap();
    let drawn = f["sampling"]["treemap_communities"].as_u64().unwrap();
    let seconds = check_in_browser(&browser, &html, drawn, 6);
    println!("large run: {drawn} communities drawn, page loaded in {seconds:.2} s");
    assert!(seconds < 60.0, "the large run's page took {seconds:.1} s");
    let shot = shot.with_file_name("agrag-report-large.png");
    let profile = tempfile::tempdir().unwrap();
    let arg = format!("--screenshot={}", shot.display());
    chromium(&browser, profile.path(), &html, "", &[&arg]);
    println!("screenshot of the large run: {}", shot.display());
}
