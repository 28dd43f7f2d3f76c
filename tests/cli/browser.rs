//! The HTML report in a real browser: Debian's `chromium`, headless (installed by `.ci/run`;
//! `EVALS_TEST_CHROMIUM` names another binary), loading the report from a file and dumping
//! the DOM once its script ran. The page keeps its view in the URL fragment (`#q=…`,
//! `#outcome=failed`, `#case=d/slips`), the same state the search box and the filters
//! write, so a dump of the page opened at a fragment shows what a user sees after typing.
//! No timing is asserted here: `bench/html_load.sh` measures the 10,000-case load.
//!
//! With `EVALS_SCREENSHOTS=DIR` set, each view's screenshot is saved in DIR too (how the
//! book's `docs/src/images/report-*.png` are made:
//! `EVALS_SCREENSHOTS=docs/src/images cargo test --test cli browser`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::gate::Gate;
use crate::harness::{Bounded, Project};

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("EVALS_TEST_CHROMIUM") {
        return p.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "no chromium on PATH: run .ci/run (it installs Debian's chromium), or `apt-get install -y chromium`, or set EVALS_TEST_CHROMIUM"
    );
}

/// Headless Chromium with `profile` as its profile, the flags every test gives it.
pub(crate) fn headless(profile: &Path) -> Command {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-extensions",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Headless Chromium on `file#fragment`, with its own profile, `extra` flags last.
fn chrome(file: &Path, fragment: &str, extra: &[&str]) -> std::process::Output {
    let profile = tempfile::tempdir().expect("a profile dir");
    let url = format!("file://{}#{fragment}", file.display());
    let out = headless(profile.path())
        .args([
            "--hide-scrollbars",
            // Long enough for the page's script to run, in the browser's virtual time.
            "--virtual-time-budget=20000",
        ])
        .args(extra)
        .arg(&url)
        .output_bounded()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium {url}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The DOM of the report at `fragment`, after its script ran.
fn dom(file: &Path, fragment: &str) -> String {
    let out = chrome(file, fragment, &["--dump-dom"]);
    String::from_utf8(out.stdout).expect("the DOM is UTF-8")
}

/// A screenshot of the report at `fragment`, checked to be a PNG, and kept as
/// `$EVALS_SCREENSHOTS/<name>` when that is set.
fn screenshot(file: &Path, fragment: &str, name: &str, size: &str) {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join(name);
    chrome(
        file,
        fragment,
        &[
            &format!("--window-size={size}"),
            &format!("--screenshot={}", png.display()),
        ],
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{name} is no PNG");
    if let Some(keep) = std::env::var_os("EVALS_SCREENSHOTS") {
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).unwrap();
        std::fs::copy(&png, keep.join(name)).unwrap();
    }
}

/// The keys (`dataset/case`) of the matrix rows the page rendered, in order.
fn rows(dom: &str) -> Vec<String> {
    dom.split("<tr data-key=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

/// The `data-<attr>` of the case count line.
fn count(dom: &str, attr: &str) -> String {
    let at = dom.find("id=\"count\"").expect("the count line");
    let line = &dom[at..at + dom[at..].find('>').unwrap()];
    let key = format!("data-{attr}=\"");
    let from = line
        .find(&key)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + key.len();
    line[from..from + line[from..].find('"').unwrap()].to_string()
}

/// The element `<section id="case" …>…</section>`: the case view.
fn case_view(dom: &str) -> &str {
    let at = dom.find("<section id=\"case\"").expect("the case view");
    &dom[at..at + dom[at..].find("</section>").unwrap()]
}

fn has(text: &str, needle: &str) {
    assert!(text.contains(needle), "lacks {needle:?}\n---\n{text}");
}

#[test]
fn a_checks_report_with_a_regression_shows_the_verdict_the_matrix_and_the_case_with_its_diff() {
    let g = Gate::new();
    g.on_main();
    g.feature(2); // slips: 100% → 64%, under its 80% threshold
    g.evals(&["check", "--baseline", "main", "--html", "report.html"])
        .code(1);
    let file = g.path().join("report.html");
    let d = dom(&file, "case=d/slips");
    has(
        &d,
        "<div id=\"verdict\" class=\"verdict bad\">evals check: 2 regressions in gate (main → feature)</div>",
    );
    // The matrix: both cases, the regressed one marked and coloured by its score.
    assert_eq!(rows(&d), ["d/slips", "d/steady"]);
    has(&d, "<th>local/m1</th>");
    has(
        &d,
        "<td class=\"cell fail gated\" title=\"local/m1: fail (regressed)\" data-status=\"regressed\" style=\"background: rgb(",
    );
    has(&d, ">64.0%</td>");
    // The case view, opened by the link: input, expected, output, facts and the diff.
    let case = case_view(&d);
    has(case, "data-key=\"d/slips\"");
    has(case, "<pre class=\"input\">Case slips.</pre>");
    has(case, "<pre class=\"expected\">{\n  \"a\": \"alpha\",");
    has(
        case,
        "<pre class=\"output\">{\n  \"a\": \"zulu\",\n  \"b\": \"zulu\",\n  \"c\": \"charlie\",",
    );
    has(case, "fail</span> · score 64.0%");
    has(case, "regressed (baseline 100.0%)");
    has(case, "tokens in 12</span><span>tokens out 20</span>");
    has(case, "<li>a: want \"alpha\", got \"zulu\"");
    has(case, "<pre class=\"diff\">");
    has(case, "<span class=\"del\">-  \"a\": \"alpha\",\n</span>");
    has(case, "<span class=\"add\">+  \"a\": \"zulu\",\n</span>");
    has(case, "<div class=\"trajectory\"></div>");
    screenshot(&file, "", "report-check.png", "1280,1500");
    screenshot(&file, "case=d/slips", "report-case.png", "1280,2200");
}

/// The toy suite's report: 2 contenders × 2 datasets × 4 cases.
fn toy_report() -> (Project, PathBuf) {
    let p = Project::toy();
    p.evals(&[
        "compare",
        "--no-autosave",
        "--format",
        "html",
        "-o",
        "r.html",
    ])
    .ok();
    let file = p.path().join("r.html");
    (p, file)
}

#[test]
fn search_and_filters_in_the_fragment_leave_only_the_matching_rows() {
    let (_p, file) = toy_report();
    let all = dom(&file, "");
    assert_eq!(rows(&all).len(), 8);
    assert_eq!(count(&all, "matching"), "8");
    has(&all, "cases 1–8 of 8</p>");
    // Search reads inputs too: only the sparrow's case says "sparrow".
    let d = dom(&file, "q=Sparrow");
    assert_eq!(rows(&d), ["animals/clear/002"]);
    has(&d, "cases 1–1 of 1 matching (8 in all)");
    // The search box shows what is searched for.
    has(&d, "id=\"q\"");
    let d = dom(&file, "dataset=colors");
    assert_eq!(
        rows(&d),
        [
            "colors/clear/001",
            "colors/clear/002",
            "colors/vague/001",
            "colors/vague/002"
        ]
    );
    let d = dom(&file, "dataset=animals&variant=vague");
    assert_eq!(rows(&d), ["animals/vague/001", "animals/vague/002"]);
    // One contender: one column; every case passes, so `failed` leaves none.
    let d = dom(&file, "contender=1");
    has(&d, "<th>fake/parrot [temp 0.1, max 1024]</th>");
    assert!(!d.contains("<th>fake/echo"), "one column");
    let d = dom(&file, "outcome=failed");
    assert!(rows(&d).is_empty());
    has(&d, "no case matches (of 8)");
    screenshot(&file, "q=vague", "report-search.png", "1280,1100");

    // On a check's report: the regressed case, by outcome and by search.
    let g = Gate::new();
    g.on_main();
    g.feature(2);
    g.evals(&["check", "--baseline", "main", "--html", "report.html"])
        .code(1);
    let file = g.path().join("report.html");
    assert_eq!(rows(&dom(&file, "outcome=regressed")), ["d/slips"]);
    assert_eq!(rows(&dom(&file, "outcome=failed")), ["d/slips"]);
    assert_eq!(rows(&dom(&file, "q=zulu")), ["d/slips"]);
    assert_eq!(rows(&dom(&file, "q=steady")), ["d/steady"]);
}

#[test]
fn a_10000_case_report_opens_on_its_first_page_with_the_count_right() {
    let p = big_report(10_000);
    let file = p.path().join("big.html");
    let d = dom(&file, "");
    let keys = rows(&d);
    assert_eq!(keys.len(), 100, "one page of rows");
    assert_eq!(keys[0], "animals/case/00000");
    assert_eq!(keys[99], "animals/case/00099");
    assert_eq!(count(&d, "matching"), "10000");
    assert_eq!(count(&d, "shown"), "100");
    has(&d, "cases 1–100 of 10,000</p>");
    has(&d, "<span id=\"page\">page 1 of 100</span>");
    // The last page, and a search across all of them.
    let last = dom(&file, "page=100");
    assert_eq!(
        rows(&last).first().map(String::as_str),
        Some("animals/case/09900")
    );
    has(&last, "cases 9,901–10,000 of 10,000</p>");
    let d = dom(&file, "q=case/0999");
    assert_eq!(rows(&d).len(), 10);
    assert_eq!(count(&d, "matching"), "10");
    screenshot(&file, "", "report-10000.png", "1280,1300");
}

/// A project holding `big.html`: the toy suite's run with its first dataset's cases
/// copied to `n` cases, rendered by `evals render big.json -o big.html`.
pub(crate) fn big_report(n: usize) -> Project {
    let p = Project::toy();
    p.evals(&[
        "compare",
        "--no-autosave",
        "-d",
        "animals",
        "--format",
        "json",
        "-o",
        "run.json",
    ])
    .ok();
    let mut run: Value = serde_json::from_str(&p.read("run.json")).unwrap();
    for e in run["experiments"].as_array_mut().unwrap() {
        let cases = e["cases"].as_array().unwrap().clone();
        e["cases"] = (0..n)
            .map(|i| {
                let mut c = cases[i % cases.len()].clone();
                c["case"] = Value::from(format!("case/{i:05}"));
                c["variant"] = Value::from("case");
                c
            })
            .collect();
    }
    p.write("big.json", &run.to_string());
    p.evals(&["render", "big.json", "-o", "big.html"]).ok();
    p
}
