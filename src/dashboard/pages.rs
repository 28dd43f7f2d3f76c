//! The dashboard's pages as HTML text: the runs list with its filter form, a case across
//! runs, the trend chart (inline SVG), and the frame the run page's report is shown in.
//! Every value from the history passes through [`esc`] (text and attributes) or [`enc`]
//! (a link's query); the pages load nothing from elsewhere.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::history::{CaseRun, RunSummary, ScorePoint};
use crate::report::format::pct;
use crate::results::RunStatus;

/// `s` escaped for HTML text and double- or single-quoted attribute values.
pub use crate::report::format::html_escape as esc;

/// `s` percent-encoded for a URL's query value or path segment (all but the unreserved).
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// A query string of the non-empty pairs: `?a=1&b=x%20y`, or empty.
pub fn query(pairs: &[(&str, Option<&str>)]) -> String {
    let kept: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| {
            v.filter(|v| !v.is_empty())
                .map(|v| format!("{k}={}", enc(v)))
        })
        .collect();
    if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&amp;"))
    }
}

const STYLE: &str =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fafbfc}
header{background:#24292f;color:#fff;padding:.6em 1.2em;display:flex;gap:1.2em;align-items:center}
header a{color:#fff;text-decoration:none}header b{margin-right:1em}
main{padding:1em 1.2em}table{border-collapse:collapse;background:#fff}
th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f4f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:600}.error{color:#9a6700;font-weight:600}
form{margin:0 0 1em;display:flex;gap:.6em;flex-wrap:wrap;align-items:end}
label{display:flex;flex-direction:column;font-size:12px;color:#57606a}
.note{background:#fff8c5;border:1px solid #d4a72c;padding:.5em .8em;margin:0 0 1em}
code{font:12px ui-monospace,monospace}";

/// The header's and the notes' look on the run page, beside the report's own style.
const FRAME_STYLE: &str = "header.evals-nav{font:14px system-ui,sans-serif;background:#24292f;color:#fff;padding:.6em 1.2em;display:flex;gap:1.2em;align-items:center}
header.evals-nav a{color:#fff;text-decoration:none}header.evals-nav b{margin-right:1em}
.evals-note{font:14px system-ui,sans-serif;background:#fff8c5;border:1px solid #d4a72c;padding:.5em .8em;margin:1em}";

/// The whole page around `body`: the header's links, the title, the style; nothing
/// loaded from elsewhere.
pub fn layout(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t} · evals dashboard</title><style>{STYLE}</style></head><body>{nav}<main><h1>{t}</h1>{body}</main></body></html>",
        t = esc(title),
        nav = nav(),
    )
}

/// The header every page has, the run page's report included.
pub fn nav() -> String {
    "<header class=\"evals-nav\"><b>evals dashboard</b><a href=\"/\">Runs</a><a href=\"/trend\">Trend on main</a><a href=\"/runs.json\">runs.json</a></header>".into()
}

/// The run page: the run's HTML report with the dashboard's header (and the gate's notes
/// on its baseline) at the top of its body.
pub fn framed_report(report: &str, notes: &[String]) -> String {
    let mut top = nav();
    if !notes.is_empty() {
        top.push_str("<div class=\"evals-note\">");
        for n in notes {
            let _ = write!(top, "<div>{}</div>", esc(n));
        }
        top.push_str("</div>");
    }
    // The report keeps its own look: only the header and the notes are styled here.
    let style = format!("<style>{FRAME_STYLE}</style>");
    let at = report
        .find("<body")
        .and_then(|i| report[i..].find('>').map(|j| i + j + 1));
    match at {
        Some(i) => format!("{}{style}{top}{}", &report[..i], &report[i..]),
        None => format!("{style}{top}{report}"),
    }
}

/// A contender key (`id|effort|temperature|max_tokens`, `ContenderInfo::key`) as every
/// report names it (`report::format::contender_label`).
pub fn contender(key: &str) -> String {
    let mut parts = key.split('|');
    let id = parts.next().unwrap_or_default();
    let mut said = || {
        parts
            .next()
            .filter(|v| !v.is_empty() && *v != "default")
            .map(str::to_string)
    };
    let (effort, temperature, max) = (said(), said(), said());
    crate::report::format::contender_label(&crate::results::ContenderInfo {
        id: id.to_string(),
        provider: String::new(),
        model: String::new(),
        effort,
        temperature,
        max_tokens: max.and_then(|m| m.parse().ok()),
    })
}

fn short(commit: Option<&str>) -> &str {
    commit.map(|c| c.get(..7).unwrap_or(c)).unwrap_or("")
}

/// The runs list's filters, as the query string gave them.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Filters {
    /// Only this suite.
    pub suite: Option<String>,
    /// Only this branch.
    pub branch: Option<String>,
    /// Only this status.
    pub status: Option<String>,
    /// From this day (YYYY-MM-DD), inclusive.
    pub since: Option<String>,
    /// To this day (YYYY-MM-DD), inclusive.
    pub until: Option<String>,
    /// At most this many runs.
    pub limit: Option<usize>,
}

fn input(name: &str, value: Option<&str>, kind: &str) -> String {
    format!(
        "<label>{name}<input type=\"{kind}\" name=\"{name}\" value=\"{}\"></label>",
        esc(value.unwrap_or_default())
    )
}

/// The runs list: the filter form, then a row per run with links to its page, its JSON
/// and its cases.
pub fn runs(runs: &[RunSummary], f: &Filters) -> String {
    let mut b = String::from("<form method=\"get\" action=\"/\">");
    b.push_str(&input("suite", f.suite.as_deref(), "text"));
    b.push_str(&input("branch", f.branch.as_deref(), "text"));
    b.push_str("<label>status<select name=\"status\">");
    let statuses = std::iter::once("").chain(RunStatus::ALL.map(RunStatus::as_str));
    for s in statuses {
        let sel = if f.status.as_deref().unwrap_or_default() == s {
            " selected"
        } else {
            ""
        };
        let shown = if s.is_empty() { "any" } else { s };
        let _ = write!(b, "<option value=\"{s}\"{sel}>{shown}</option>");
    }
    b.push_str("</select></label>");
    b.push_str(&input("since", f.since.as_deref(), "date"));
    b.push_str(&input("until", f.until.as_deref(), "date"));
    b.push_str("<button type=\"submit\">Filter</button></form>");
    b.push_str("<form method=\"get\" action=\"/case\">");
    b.push_str(&input("case", None, "text"));
    b.push_str(&input("dataset", None, "text"));
    b.push_str("<button type=\"submit\">A case across runs</button></form>");
    let json = query(&[
        ("suite", f.suite.as_deref()),
        ("branch", f.branch.as_deref()),
        ("status", f.status.as_deref()),
        ("since", f.since.as_deref()),
        ("until", f.until.as_deref()),
    ]);
    let _ = write!(
        b,
        "<p>{} · <a href=\"/runs.json{json}\">as JSON</a></p>",
        esc(&crate::text::plural(runs.len(), "run", "runs"))
    );
    if runs.is_empty() {
        b.push_str("<p>No run matches.</p>");
        return b;
    }
    b.push_str("<table id=\"runs\"><thead><tr><th>#</th><th>started</th><th>suite</th><th>branch</th><th>commit</th><th>command</th><th>mode</th><th>status</th><th>cases</th><th>score</th><th>errors</th><th>JSON</th></tr></thead><tbody>");
    for r in runs {
        let branch = r.branch.as_deref().unwrap_or_default();
        let _ = write!(
            b,
            "<tr class=\"run\" data-branch=\"{be}\"><td class=\"n\"><a href=\"/runs/{n}\">#{n}</a></td><td>{started}</td><td>{suite}</td><td><a href=\"/{bq}\">{be}</a></td><td><code>{commit}</code></td><td>{command}</td><td>{mode}</td><td class=\"{sc}\">{status}</td><td class=\"n\">{cases}</td><td class=\"n\">{score}</td><td class=\"n\">{errors}</td><td><a href=\"/runs/{n}.json\">snapshot</a></td></tr>",
            n = r.number,
            started = esc(&crate::results::time::text(&r.started_at)),
            suite = esc(&r.suite),
            be = esc(branch),
            bq = query(&[("branch", Some(branch))]),
            commit = esc(short(r.commit.as_deref())),
            command = esc(&r.command),
            mode = esc(&r.mode),
            sc = if r.status == RunStatus::Completed {
                ""
            } else {
                "error"
            },
            status = r.status,
            cases = r.cases,
            score = esc(&pct(r.score)),
            errors = r.errors,
        );
    }
    b.push_str("</tbody></table>");
    b
}

/// A run that a case's history points at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct At {
    /// The run's number.
    pub number: i64,
    /// The run's id.
    pub run_id: String,
    /// Its commit, when known.
    pub commit: Option<String>,
    /// Its branch, when known.
    pub branch: Option<String>,
    /// When it started.
    #[serde(serialize_with = "crate::results::time::as_text::serialize")]
    pub started_at: crate::results::Timestamp,
}

impl At {
    fn of(c: &CaseRun) -> At {
        At {
            number: c.number,
            run_id: c.run_id.clone(),
            commit: c.commit.clone(),
            branch: c.branch.clone(),
            started_at: c.started_at,
        }
    }

    fn said(&self) -> String {
        let mut s = format!("run #{}", self.number);
        if let Some(c) = &self.commit {
            let _ = write!(s, ", commit {}", short(Some(c)));
        }
        if let Some(b) = &self.branch {
            let _ = write!(s, " on {b}");
        }
        s
    }
}

/// One case under one contender across runs, oldest first, and where it started failing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseSeries {
    /// The contender (`ContenderInfo::key`).
    pub contender: String,
    /// The dataset.
    pub dataset: String,
    /// The case's id.
    pub case: String,
    /// The first run it failed (or errored) in.
    pub first_failed: Option<At>,
    /// When it fails in its newest run: the first run of that unbroken run of failures.
    pub failing_since: Option<At>,
    /// Its result in each run, oldest first.
    pub runs: Vec<CaseRun>,
}

/// The rows of one case grouped by contender and dataset, each group oldest first.
pub fn series(rows: Vec<CaseRun>) -> Vec<CaseSeries> {
    let mut groups: BTreeMap<(String, String), Vec<CaseRun>> = BTreeMap::new();
    let mut case = String::new();
    for r in rows {
        case = r.case.clone();
        groups
            .entry((r.contender.clone(), r.dataset.clone()))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|((contender, dataset), runs)| {
            let first_failed = runs.iter().find(|r| r.failed()).map(At::of);
            let streak = runs.iter().rev().take_while(|r| r.failed()).last();
            CaseSeries {
                contender,
                dataset,
                case: case.clone(),
                first_failed,
                failing_since: streak.map(At::of),
                runs,
            }
        })
        .collect()
}

/// A case's page: per contender and dataset, where it started failing, then its result
/// in every run.
pub fn case(case: &str, all: &[CaseSeries]) -> String {
    let mut b = String::new();
    if all.is_empty() {
        let _ = write!(b, "<p>No run has a case {}.</p>", esc(case));
        return b;
    }
    for s in all {
        let _ = write!(
            b,
            "<section class=\"series\"><h2>{} · {}</h2>",
            esc(&contender(&s.contender)),
            esc(&s.dataset)
        );
        let verdict = match (&s.failing_since, &s.first_failed) {
            (Some(since), Some(first)) if since == first => {
                format!("first failed at {}, and fails since", since.said())
            }
            (Some(since), Some(first)) => format!(
                "failing since {} (first failed at {})",
                since.said(),
                first.said()
            ),
            (None, Some(first)) => format!("first failed at {}; passes now", first.said()),
            _ => format!(
                "passed in every one of its {}",
                crate::text::plural(s.runs.len(), "run", "runs")
            ),
        };
        let _ = write!(b, "<p class=\"verdict\">{}</p>", esc(&verdict));
        b.push_str("<table><thead><tr><th>run</th><th>started</th><th>branch</th><th>commit</th><th>verdict</th><th>score</th><th>error</th></tr></thead><tbody>");
        for r in &s.runs {
            let v = r.verdict();
            let _ = write!(
                b,
                "<tr><td class=\"n\"><a href=\"/runs/{n}\">#{n}</a></td><td>{started}</td><td>{branch}</td><td><code>{commit}</code></td><td class=\"{v}\">{v}</td><td class=\"n\">{score}</td><td>{error}</td></tr>",
                n = r.number,
                started = esc(&crate::results::time::text(&r.started_at)),
                branch = esc(r.branch.as_deref().unwrap_or_default()),
                commit = esc(short(r.commit.as_deref())),
                score = esc(&pct(r.score)),
                error = esc(r.error.as_deref().unwrap_or_default()),
            );
        }
        b.push_str("</tbody></table></section>");
    }
    b
}

/// A run's cases with links to each one's history (below the run page's report).
pub fn case_links(suite: &str, cases: &[(String, String)]) -> String {
    let mut b = String::from(
        "<section style=\"margin:1em\"><h2>Each case across runs</h2><ul class=\"case-links\">",
    );
    for (dataset, case) in cases {
        let q = query(&[
            ("case", Some(case)),
            ("dataset", Some(dataset)),
            ("suite", Some(suite)),
        ]);
        let _ = write!(
            b,
            "<li><a href=\"/case{q}\">{} / {}</a></li>",
            esc(dataset),
            esc(case)
        );
    }
    b.push_str("</ul></section>");
    b
}

const COLORS: [&str; 8] = [
    "#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#1b7c83", "#e16f24", "#57606a",
];

/// The trend page: per suite, one chart of each experiment's primary score over the
/// branch's last runs (inline SVG, a line per contender and dataset, a dot per run).
pub fn trend(branch: &str, points: &[ScorePoint]) -> String {
    let mut suites: BTreeMap<&str, Vec<&ScorePoint>> = BTreeMap::new();
    for p in points {
        suites.entry(&p.suite).or_default().push(p);
    }
    let mut b = String::new();
    if suites.is_empty() {
        let _ = write!(b, "<p>No completed run on {} yet.</p>", esc(branch));
        return b;
    }
    for (suite, points) in suites {
        let _ = write!(b, "<section class=\"trend\"><h2>{}</h2>", esc(suite));
        b.push_str(&chart(&points));
        b.push_str("</section>");
    }
    b
}

fn chart(points: &[&ScorePoint]) -> String {
    let mut runs: Vec<i64> = points.iter().map(|p| p.number).collect();
    runs.dedup();
    let mut lines: BTreeMap<(&str, &str), Vec<&ScorePoint>> = BTreeMap::new();
    for p in points {
        lines
            .entry((p.contender.as_str(), p.dataset.as_str()))
            .or_default()
            .push(p);
    }
    let (w, h, left, top, bottom) = (720.0, 260.0, 48.0, 12.0, 28.0);
    let right = 12.0;
    let x_of = |number: i64| {
        let i = runs.iter().position(|n| *n == number).unwrap_or(0) as f64;
        let span = (runs.len().max(2) - 1) as f64;
        left + (w - left - right) * if runs.len() < 2 { 0.5 } else { i / span }
    };
    let y_of = |score: f64| top + (h - top - bottom) * (1.0 - score.clamp(0.0, 1.0));
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" style=\"background:#fff;border:1px solid #d0d7de\">"
    );
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let y = y_of(tick);
        let _ = write!(
            s,
            "<line x1=\"{left}\" x2=\"{x2}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eaeef2\"/><text x=\"{tx}\" y=\"{ty:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#57606a\">{p}%</text>",
            x2 = w - right,
            tx = left - 4.0,
            ty = y + 3.0,
            p = tick * 100.0
        );
    }
    for n in &runs {
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{y}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#57606a\">#{n}</text>",
            x = x_of(*n),
            y = h - 10.0
        );
    }
    let mut legend = String::from("<ul class=\"legend\">");
    for (i, ((contender_key, dataset), line)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let name = format!("{} · {dataset}", contender(contender_key));
        let path: Vec<String> = line
            .iter()
            .filter_map(|p| {
                p.score
                    .map(|v| format!("{:.1},{:.1}", x_of(p.number), y_of(v)))
            })
            .collect();
        let _ = write!(
            s,
            "<g class=\"series\"><title>{}</title><polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            esc(&name),
            path.join(" ")
        );
        for p in line {
            let Some(v) = p.score else { continue };
            let _ = write!(
                s,
                "<a href=\"/runs/{n}\"><circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{color}\"><title>{t}</title></circle></a>",
                n = p.number,
                x = x_of(p.number),
                y = y_of(v),
                t = esc(&format!(
                    "{name}: {} in run #{} ({})",
                    pct(Some(v)),
                    p.number,
                    short(p.commit.as_deref())
                ))
            );
        }
        s.push_str("</g>");
        let _ = write!(
            legend,
            "<li><span style=\"color:{color}\">&#9632;</span> {}</li>",
            esc(&name)
        );
    }
    s.push_str("</svg>");
    legend.push_str("</ul>");
    s + &legend
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(number: i64, passed: bool, commit: &str) -> CaseRun {
        CaseRun {
            number,
            run_id: format!("r{number}"),
            started_at: format!("2026-01-0{number}T00:00:00Z")
                .parse()
                .expect("a time"),
            branch: Some("main".into()),
            commit: Some(commit.into()),
            suite: "s".into(),
            status: RunStatus::Completed,
            contender: "m|default|default|".into(),
            dataset: "d".into(),
            case: "c".into(),
            fingerprint: "fp".into(),
            score: Some(if passed { 1.0 } else { 0.0 }),
            passed: Some(passed),
            error: None,
        }
    }

    #[test]
    fn a_case_that_failed_passed_and_failed_again_fails_since_its_last_streak() {
        let got = series(vec![
            row(1, true, "aaaaaaaaa"),
            row(2, false, "bbbbbbbbb"),
            row(3, true, "ccccccccc"),
            row(4, false, "ddddddddd"),
            row(5, false, "eeeeeeeee"),
        ]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].first_failed.as_ref().map(|a| a.number), Some(2));
        assert_eq!(got[0].failing_since.as_ref().map(|a| a.number), Some(4));
        let page = case("c", &got);
        assert!(
            page.contains("failing since run #4, commit ddddddd on main (first failed at run #2, commit bbbbbbb on main)"),
            "{page}"
        );
    }

    #[test]
    fn every_value_is_escaped_and_every_link_encoded() {
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(enc("a b/c&d"), "a%20b%2Fc%26d");
        let mut r = row(1, false, "<script>");
        r.error = Some("<img src=x onerror=alert(1)>".into());
        r.branch = Some("\"><script>alert(1)</script>".into());
        let page = case("<c>", &series(vec![r]));
        assert!(
            !page.contains("<script>") && !page.contains("<img"),
            "{page}"
        );
        assert!(
            page.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{page}"
        );
        assert_eq!(contender("m|high|0.1|"), "m [effort high, temp 0.1]");
        assert_eq!(
            contender("local/gpt-4o-mini|default|0.1|1024"),
            "local/gpt-4o-mini [temp 0.1, max 1024]"
        );
    }

    #[test]
    fn the_run_page_puts_the_header_at_the_top_of_the_reports_body() {
        let page = framed_report(
            "<!doctype html><html><head></head><body class=\"r\"><h1>report</h1></body></html>",
            &["no baseline <yet>".into()],
        );
        let body = page.find("<body class=\"r\">").expect("body");
        let header = page.find("<header").expect("header");
        assert!(
            header > body && header < page.find("<h1>report").unwrap(),
            "{page}"
        );
        assert!(page.contains("no baseline &lt;yet&gt;"), "{page}");
    }
}
