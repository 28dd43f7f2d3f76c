//! The Markdown report for the pull-request comment and the job summary.
//!
//! The first line is the verdict; a hidden marker lets `evals comment` find and update the
//! same comment. Regressions come first, each with the delta, the diagnostics that changed
//! and the output diff folded in `<details>`; then improvements; then new, changed and
//! removed cases. The text is cut to stay under GitHub's 65,536-character comment limit,
//! with a note of what was left out.

use std::fmt::Write;

use super::Report;
use super::diff::output_diff;
use super::format::{contender_label, unusable_text};
use super::verdict::count;
use crate::error::Result;
use crate::results::{CaseDelta, CaseSource, CaseStatus, Comparison, RunResult};

/// The hidden marker of comments written before markers named their suite; `evals comment`
/// still finds and updates a comment that carries it.
pub const MARKER: &str = "<!-- evals-check-comment -->";

/// The hidden marker that identifies the comment `evals comment` keeps up to date for
/// `suite`: `<!-- evals:tax-intake -->`, so two suites in one repository keep two comments.
/// Characters that could end or confuse the HTML comment become `_`.
pub fn marker(suite: &str) -> String {
    let mut name: String = suite
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '_' | '/' | '+' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // `--` may not stand inside an HTML comment.
    while name.contains("--") {
        name = name.replace("--", "-_");
    }
    format!("<!-- evals:{name} -->")
}

/// The marker a comment's text carries: its suite's, else the old one.
pub fn marker_in(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .find(|l| (l.starts_with("<!-- evals:") && l.ends_with(" -->")) || *l == MARKER)
}

/// The pull-request comment of a Markdown report: the report itself, or for a file written
/// without a marker, the report after the old marker (so the next comment finds it).
pub fn comment_body(markdown: &str) -> String {
    if marker_in(markdown).is_some() {
        markdown.to_string()
    } else {
        format!("{MARKER}\n{markdown}")
    }
}

/// GitHub refuses a comment longer than this.
const LIMIT: usize = 65_536;
/// Room kept for the note saying what was left out.
const RESERVE: usize = 512;

/// The pull-request comment and job summary: the verdict, the leaderboards and the cases
/// worth a reviewer's look.
#[derive(Debug)]
pub struct Markdown {
    /// Cut the text to fit this many characters (GitHub's limit by default).
    pub limit: usize,
}

impl Default for Markdown {
    fn default() -> Self {
        Markdown { limit: LIMIT }
    }
}

/// A score, `–` when there is none (the dash the comment's tables use).
fn pct(v: Option<f64>) -> String {
    super::format::pct_or(v, "–")
}

fn points(v: Option<f64>) -> String {
    v.map(|v| format!("{:+.1}", v * 100.0))
        .unwrap_or_else(|| "–".into())
}

/// A zero-width space: after `@` or `#` it keeps GitHub from reading a mention or an issue
/// reference, and shows nothing.
const ZWSP: &str = "&#8203;";

/// Text we did not write (model answers, errors, names from the suite) as Markdown that
/// renders as that text: HTML as entities, the punctuation of emphasis, links and images
/// escaped, mentions (`@user`) and issue references (`#12`) broken. A code span the text
/// opens and closes on one line is kept as it is: inside one nothing is Markdown, HTML or a
/// mention, and our own hints (``run `evals record -c x` ``) still read as code.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    let mut rest = s;
    while let Some(i) = rest.find('`') {
        out.push_str(&escape(&rest[..i], true));
        let run = rest[i..].len() - rest[i..].trim_start_matches('`').len();
        let body = &rest[i + run..];
        match closing_run(body, run) {
            Some(j) => {
                out.push_str(&rest[i..i + run + j + run]);
                rest = &body[j + run..];
            }
            // No span: the backticks are text.
            None => {
                out.push_str(&"\\`".repeat(run));
                rest = body;
            }
        }
    }
    out.push_str(&escape(rest, true));
    out
}

/// Where in `body`, before its first newline, a run of exactly `n` backticks starts: the
/// end of a code span opened by `n` (CommonMark's rule, kept to one line).
fn closing_run(body: &str, n: usize) -> Option<usize> {
    let line = body.split('\n').next().unwrap_or("");
    let mut from = 0;
    while let Some(k) = line[from..].find('`') {
        let start = from + k;
        let len = line[start..].len() - line[start..].trim_start_matches('`').len();
        if len == n {
            return Some(start);
        }
        from = start + len;
    }
    None
}

/// Text inside the raw HTML we write (`<summary>`): entities, no mention; one line, since
/// a blank line would end the HTML block.
fn html(s: &str) -> String {
    escape(s, false)
}

/// `s` with HTML as entities and mentions broken; for Markdown (`markdown`), its inline
/// punctuation escaped; for HTML, quotes as entities and newlines as spaces.
fn escape(s: &str, markdown: bool) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '~' | '[' | ']' if markdown => {
                out.push('\\');
                out.push(c);
            }
            '"' if !markdown => out.push_str("&quot;"),
            '\n' | '\r' if !markdown => out.push(' '),
            '@' | '#' => {
                out.push(c);
                if chars.peek().is_some_and(char::is_ascii_alphanumeric) {
                    out.push_str(ZWSP);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The longest run of backticks in `s`.
fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// `s` as a code span: fenced by more backticks than it holds, padded when it starts or
/// ends with one (CommonMark strips one space each side). Inside, nothing is Markdown, HTML
/// or a mention.
fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    let fence = "`".repeat(longest_backtick_run(&s) + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// Markdown made one table cell: a `|` would end it, a newline the row.
fn cell(md: &str) -> String {
    md.replace('|', "\\|").replace(['\n', '\r'], " ")
}

use crate::text::plural;

/// `**evals check: 2 regressions, 1 error** in tax-intake (main → feature-x)`.
/// A cost or token change of more than 5% is said after it, gated or not: `· cost +23%`.
pub fn verdict_line(run: &RunResult, comparison: Option<&Comparison>) -> String {
    let (head, suite, span) = super::verdict::verdict(run, comparison);
    let moved: String = comparison
        .map(super::verdict::moved)
        .unwrap_or_default()
        .iter()
        .map(|m| format!(" · {m}"))
        .collect();
    format!("**{head}** in {} ({}){moved}", text(&suite), text(&span))
}

/// Text added while it fits, counting what did not.
struct Bounded {
    text: String,
    limit: usize,
    left_out: usize,
}

impl Bounded {
    /// Adds `s` with its control characters shown ([`crate::text::visible`]), counted as
    /// shown, so the limit holds for what is written.
    fn push(&mut self, s: &str) -> bool {
        let s = crate::text::visible(s);
        if self.text.len() + s.len() > self.limit.saturating_sub(RESERVE) {
            self.left_out += 1;
            false
        } else {
            self.text.push_str(&s);
            true
        }
    }
}

fn case_row(d: &CaseDelta) -> String {
    let diags: Vec<String> = d
        .diagnostics
        .iter()
        .map(|g| {
            format!(
                "{}: want {} got {} ({})",
                code(&g.field),
                text(&g.want.to_string()),
                text(&g.got.to_string()),
                text(g.outcome.as_str())
            )
        })
        .collect();
    let mut why = diags.join("; ");
    if let Some(e) = &d.error {
        why = format!("error: {}", text(e));
    } else if let Some(u) = unusable_text(d.reply_error.as_deref(), d.said.as_deref()) {
        // Every field of an unusable reply is invalid: what the model said says more.
        why = text(&u);
    } else if !d.failed_thresholds.is_empty() && why.is_empty() {
        why = text(&d.failed_thresholds.join(", "));
    }
    format!(
        "| {} | {} | {} | {} | {} → {} | {} | {} |\n",
        cell(&text(&contender_label(&d.contender))),
        cell(&text(&d.dataset)),
        cell(&code(&d.case)),
        d.status.as_str(),
        pct(d.baseline_score),
        pct(d.candidate_score),
        points(d.delta()),
        cell(&why)
    )
}

/// How many verdict reasons the comment lists before "and N more".
const REASONS: usize = 10;

/// Every experiment, contender × dataset: the baseline and this run's mean, the delta, its
/// errors and failed thresholds, so every contender is named whatever is cut after it.
fn experiments_table(out: &mut Bounded, run: &RunResult, c: &Comparison) {
    if run.experiments.is_empty() {
        return;
    }
    let stats = super::leaderboard::repeated(run) || c.experiments.iter().any(|d| d.test.is_some());
    // The judge's cost, apart from the contender's, as the leaderboard shows it: a column
    // only when some judge reported one.
    let judged = super::leaderboard::shows_judge_cost(run);
    let (judge_head, judge_rule) = if judged {
        (" judge_cost |", "--:|")
    } else {
        ("", "")
    };
    let judge_cell = |e: &crate::results::ExperimentResult| {
        if judged {
            format!(" {} |", super::format::money(e.judge_cost_usd))
        } else {
            String::new()
        }
    };
    // The cost's change on the shared cases (`--max-cost-increase` gates it): a column when
    // some experiment's cost is known on a side; `?` where a side's is unknown.
    let costed = c.experiments.iter().any(|d| !d.cost_usd.is_unknown());
    let (cost_head, cost_rule) = if costed {
        (" cost Δ |", "--:|")
    } else {
        ("", "")
    };
    let cost_cell = |d: Option<&crate::results::ExperimentDelta>| {
        if !costed {
            String::new()
        } else {
            match d.filter(|d| d.cost_usd.cases > 0) {
                Some(d) => format!(" {} |", super::verdict::signed_rise(d.cost_usd)),
                None => " - |".into(),
            }
        }
    };
    let judge_head = format!("{cost_head}{judge_head}");
    let judge_rule = format!("{cost_rule}{judge_rule}");
    // Rule 1, or a cost, tokens or latency past its allowed rise.
    let regressed = |d: Option<&crate::results::ExperimentDelta>| {
        d.is_some_and(|d| {
            d.regressed
                || c.verdict.reasons.iter().any(|r| {
                    matches!(r, crate::results::Reason::Rose { contender, dataset, .. }
                        if contender.key() == d.contender.key() && *dataset == d.dataset)
                })
        })
    };
    if stats {
        out.push(&format!("\n### Experiments\n\n| contender | dataset | baseline | now | ± | Δ points | p | pass^k | flaky | errors | failed thresholds |{judge_head} |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|{judge_rule}---|\n"));
    } else {
        out.push(&format!("\n### Experiments\n\n| contender | dataset | baseline | now | Δ points | errors | failed thresholds |{judge_head} |\n|---|---|--:|--:|--:|--:|--:|{judge_rule}---|\n"));
    }
    for e in &run.experiments {
        if stats {
            let d = c
                .experiments
                .iter()
                .find(|d| d.contender.key() == e.contender.key() && d.dataset == e.dataset);
            let [ci, hat, flaky] = super::leaderboard::repeat_cells(e);
            let test = d.and_then(|d| d.test.as_ref());
            out.push(&format!(
                "| {} | {} | {} | {} | {ci} | {} | {} | {hat} | {flaky} | {} | {} |{}{} {} |\n",
                cell(&text(&contender_label(&e.contender))),
                cell(&text(&e.dataset)),
                pct(d.and_then(|d| d.baseline)),
                pct(d.and_then(|d| d.candidate).or(e.score)),
                points(d.and_then(|d| d.delta)),
                test.map(|t| super::verdict::p_value(t.p_value))
                    .unwrap_or_else(|| "-".into()),
                e.errors,
                e.failed,
                cost_cell(d),
                judge_cell(e),
                if regressed(d) {
                    "**regressed**"
                } else if test.is_some_and(|t| t.inconclusive) {
                    "inconclusive"
                } else {
                    ""
                }
            ));
            continue;
        }
        let d = c
            .experiments
            .iter()
            .find(|d| d.contender.key() == e.contender.key() && d.dataset == e.dataset);
        out.push(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |{}{} {} |\n",
            cell(&text(&contender_label(&e.contender))),
            cell(&text(&e.dataset)),
            pct(d.and_then(|d| d.baseline)),
            pct(d.and_then(|d| d.candidate).or(e.score)),
            points(d.and_then(|d| d.delta)),
            e.errors,
            e.failed,
            cost_cell(d),
            judge_cell(e),
            if regressed(d) { "**regressed**" } else { "" }
        ));
    }
}

/// How many flaky cases the comment names before "and N more".
const FLAKY: usize = 20;

/// What the comment lists of the cases themselves, gathered in one reading of them: the
/// first [`FLAKY`] flaky cases and [`WARNINGS`] warnings (the rest counted) and the misses,
/// grouped by cause.
struct Listed {
    flaky: Vec<String>,
    flaky_total: usize,
    warnings: Vec<String>,
    warnings_total: usize,
    misses: super::misses::Grouping,
}

impl Listed {
    fn read(run: &RunResult, cases: CaseSource<'_>) -> Result<Listed> {
        let mut l = Listed {
            flaky: Vec::new(),
            flaky_total: 0,
            warnings: Vec::new(),
            warnings_total: 0,
            misses: Default::default(),
        };
        super::each_case(run, cases, |i, c| {
            let e = &run.experiments[i];
            l.misses.add(e, c);
            if c.flaky() {
                l.flaky_total += 1;
                if l.flaky.len() < FLAKY {
                    l.flaky.push(format!(
                        "- {} · {} · {}: passed {} of {} tries\n",
                        text(&contender_label(&e.contender)),
                        text(&e.dataset),
                        code(&c.case),
                        c.passes(),
                        c.tries()
                    ));
                }
            }
            l.warnings_total += c.warnings.len();
            for w in c
                .warnings
                .iter()
                .take(WARNINGS.saturating_sub(l.warnings.len()))
            {
                l.warnings.push(format!(
                    "- {} · {} · {}: {}\n",
                    text(&contender_label(&e.contender)),
                    text(&e.dataset),
                    code(&c.case),
                    text(w)
                ));
            }
            Ok(())
        })?;
        Ok(l)
    }
}

/// The cases whose tries disagreed (`--repeat K`), listed apart from the regressions.
fn flaky_section(out: &mut Bounded, l: &Listed) {
    if l.flaky_total == 0 {
        return;
    }
    out.push(&format!(
        "\n### Flaky cases ({})\n\nSome tries passed, some failed; each is gated by what most of its tries did.\n\n",
        l.flaky_total
    ));
    for r in &l.flaky {
        out.push(r);
    }
    if l.flaky_total > FLAKY {
        out.push(&format!(
            "- … and {} more (`evals flaky` lists them across runs)\n",
            l.flaky_total - FLAKY
        ));
    }
}

/// How many warnings of cases [`warnings_section`] lists.
const WARNINGS: usize = 20;

/// What the cases warn of (a worker that tried to reach another host in replay): one line
/// per case and warning, the first [`WARNINGS`].
fn warnings_section(out: &mut Bounded, l: &Listed) {
    if l.warnings_total == 0 {
        return;
    }
    out.push(&format!("\n### Warnings ({})\n\n", l.warnings_total));
    for r in &l.warnings {
        out.push(r);
    }
    if l.warnings_total > WARNINGS {
        out.push(&format!(
            "- … and {} more (the JSON report has them all)\n",
            l.warnings_total - WARNINGS
        ));
    }
}

/// Cassette misses, one block per cause: its diff once, who it hit, a hint per contender.
fn misses_section(out: &mut Bounded, groups: &[super::misses::MissGroup]) {
    if groups.is_empty() {
        return;
    }
    let total: usize = groups.iter().map(|g| g.cases.len()).sum();
    out.push(&format!(
        "\n### Cassette misses ({}, {})\n",
        plural(total, "request", "requests"),
        plural(groups.len(), "cause", "causes")
    ));
    for g in groups {
        let fence = "`".repeat(longest_backtick_run(&g.diff).max(2) + 1);
        out.push(&format!(
            "\n**{}** hit by the same request change: {}\n\nCases: {}\n\n{fence}\n{}{fence}\n\nRecord again: {}\n",
            plural(g.cases.len(), "request", "requests"),
            text(&super::misses::who(g)),
            text(&super::misses::case_list(g, 20)),
            g.diff,
            g.hints()
                .iter()
                .map(|h| code(h))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
}

/// Cases taken in turn from each contender (in the order they first appear), so a cut
/// keeps some of every contender's.
fn round_robin(cases: Vec<&CaseDelta>) -> Vec<&CaseDelta> {
    let mut queues: Vec<(String, std::collections::VecDeque<&CaseDelta>)> = Vec::new();
    for d in cases {
        let k = d.contender.key();
        match queues.iter_mut().find(|(q, _)| *q == k) {
            Some((_, q)) => q.push_back(d),
            None => queues.push((k, std::collections::VecDeque::from([d]))),
        }
    }
    let mut out = Vec::new();
    loop {
        let mut any = false;
        for (_, q) in queues.iter_mut() {
            if let Some(d) = q.pop_front() {
                out.push(d);
                any = true;
            }
        }
        if !any {
            return out;
        }
    }
}

/// A table section with the rows that fit; its title says how many it shows of how many.
/// A section none of whose rows fits is left out whole (and counted).
fn section(out: &mut Bounded, title: &str, rows: Vec<String>) {
    if rows.is_empty() {
        return;
    }
    let room = out
        .limit
        .saturating_sub(RESERVE)
        .saturating_sub(out.text.len());
    // The header's own length, with room for "(k of n shown)".
    let head_len = title.len() + CASE_HEADER.len() + 40;
    let mut used = head_len;
    let mut fit = 0;
    for r in &rows {
        if used + r.len() > room {
            break;
        }
        used += r.len();
        fit += 1;
    }
    if fit == 0 {
        out.left_out += rows.len();
        return;
    }
    let head = if fit == rows.len() {
        format!("\n### {title} ({})\n\n", rows.len())
    } else {
        format!("\n### {title} ({fit} of {} shown)\n\n", rows.len())
    };
    out.text.push_str(&head);
    out.text.push_str(CASE_HEADER);
    for r in &rows[..fit] {
        out.text.push_str(r);
    }
    out.left_out += rows.len() - fit;
}

const CASE_HEADER: &str = "| contender | dataset | case | status | baseline → candidate | Δ points | diagnostics |\n|---|---|---|---|---|--:|---|\n";

impl Report for Markdown {
    fn write(
        &self,
        run: &RunResult,
        cases: CaseSource<'_>,
        comparison: Option<&Comparison>,
        to: &mut dyn std::io::Write,
    ) -> Result<()> {
        // The text is bounded by `limit`: built whole, then written.
        let mut out = Bounded {
            text: String::new(),
            limit: self.limit,
            left_out: 0,
        };
        let _ = writeln!(out.text, "{}", verdict_line(run, comparison));
        let _ = writeln!(out.text, "{}", marker(&run.run.suite));
        let Some(c) = comparison else {
            out.text
                .push_str("\nThis run was not checked; run `evals check`.\n");
            return super::put(to, &out.text);
        };
        // `on `main` @ `abc1234``, or nothing of what git could not tell.
        let place = |branch: &Option<String>, commit: &Option<String>| {
            let mut s = String::new();
            if let Some(b) = branch {
                s.push_str(&format!(" on {}", code(b)));
            }
            if let Some(c) = commit {
                s.push_str(&format!(" @ {}", code(c.get(..7).unwrap_or(c))));
            }
            s
        };
        let _ = write!(
            out.text,
            "\nRun {}{}",
            code(&run.run.id),
            place(&run.run.branch, &run.run.commit)
        );
        match &c.baseline {
            Some(b) => {
                let _ = writeln!(
                    out.text,
                    " against baseline {}{}; tolerance {:.1} points; {} unchanged.",
                    code(&b.id),
                    place(&b.branch, &b.commit),
                    c.tolerance * 100.0,
                    plural(c.unchanged, "case", "cases")
                );
            }
            None if c.first_baseline => out.text.push_str(
                ", the first baseline: nothing earlier to compare with, so gated on thresholds and errors alone; later checks against this branch compare with it.\n",
            ),
            None => out
                .text
                .push_str(", no baseline: gated on thresholds and errors alone.\n"),
        }
        if !c.verdict.passed {
            out.text.push('\n');
            // Misses are said once per cause below; the rest of the reasons, the first few.
            // The plain words of every report, escaped for Markdown.
            let others: Vec<String> = c
                .verdict
                .reasons
                .iter()
                .filter(|r| !super::misses::is_miss_reason(r))
                .map(super::verdict::reason_text)
                .collect();
            for r in others.iter().take(REASONS) {
                // Continuation lines indented, so a multi-line reason stays one list item.
                out.push(&format!("- {}\n", text(r).replace('\n', "\n  ")));
            }
            if others.len() > REASONS {
                out.push(&format!("- … and {} more, below\n", others.len() - REASONS));
            }
            let missed = count(c, super::misses::delta_is_miss);
            if missed > 0 {
                out.push(&format!(
                    "- {} (grouped by cause below)\n",
                    if missed == 1 {
                        "1 case missed its cassette".to_string()
                    } else {
                        format!("{missed} cases missed their cassettes")
                    }
                ));
            }
        }
        experiments_table(&mut out, run, c);
        // The cases read once, for all three lists.
        let mut listed = Listed::read(run, cases)?;
        flaky_section(&mut out, &listed);
        misses_section(&mut out, &std::mem::take(&mut listed.misses).groups());
        warnings_section(&mut out, &listed);
        // Gated cases other than misses, taken round-robin across contenders so that a cut
        // leaves every contender's first regressions.
        let gated = round_robin(
            c.cases
                .iter()
                .filter(|d| d.gated && !super::misses::delta_is_miss(d))
                .collect(),
        );
        section(
            &mut out,
            "Regressions and failures",
            gated.iter().map(|d| case_row(d)).collect(),
        );
        // The UI payloads that changed, under the gated cases' rows.
        for d in gated.iter() {
            if let Some(diff) = &d.components_diff {
                let fence = "`".repeat(longest_backtick_run(diff).max(2) + 1);
                out.push(&format!(
                    "\n<details><summary>{} · {} · <code>{}</code>: components diff</summary>\n\n{fence}diff\n{diff}{fence}\n\n</details>\n",
                    html(&contender_label(&d.contender)),
                    html(&d.dataset),
                    html(&d.case),
                ));
            }
        }
        // An errored case has no output; its diff would only show the baseline's leaving.
        for d in gated
            .iter()
            .filter(|d| d.candidate_output.is_some() || d.said.is_some())
        {
            if let Some(diff) = output_diff(d) {
                // Inside a fence, text is neither Markdown nor HTML; only a line of as
                // many backticks would end it, so the fence is longer than any run.
                let fence = "`".repeat(longest_backtick_run(&diff).max(2) + 1);
                out.push(&format!(
                    "\n<details><summary>{} · {} · <code>{}</code>: output diff</summary>\n\n{fence}diff\n{diff}{fence}\n\n</details>\n",
                    html(&contender_label(&d.contender)),
                    html(&d.dataset),
                    html(&d.case),
                ));
            }
        }
        let sections: [(&str, &[CaseStatus]); 2] = [
            ("Improvements", &[CaseStatus::Improved]),
            (
                "Declined, new, changed and removed: not gated",
                &[
                    CaseStatus::Declined,
                    CaseStatus::New,
                    CaseStatus::Changed,
                    CaseStatus::Removed,
                ],
            ),
        ];
        for (title, statuses) in sections {
            let rows: Vec<&CaseDelta> = c
                .cases
                .iter()
                .filter(|d| !d.gated && statuses.contains(&d.status))
                .collect();
            section(
                &mut out,
                title,
                round_robin(rows).iter().map(|d| case_row(d)).collect(),
            );
        }
        if out.left_out > 0 {
            let _ = writeln!(
                out.text,
                "\n_{} left out to stay under GitHub's {}-character limit; the JSON report (`--json FILE`) has everything._",
                plural(out.left_out, "row or diff was", "rows or diffs were"),
                LIMIT
            );
        }
        // What was written around the bounded parts (the verdict, names) is shown too.
        super::put(to, &out.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::compare;
    use crate::results::testing::{case, run};
    use crate::results::{BaselineInfo, Diagnostic};

    fn checked() -> (RunResult, Comparison) {
        let base = run(
            "base",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("ok", Some(0.9), Some(true)),
                case("slips", Some(0.9), Some(true)),
                case("breaks", Some(0.9), Some(true)),
                case("better", Some(0.5), Some(true)),
                case("gone", Some(0.5), Some(true)),
            ],
        );
        let mut slips = case("slips", Some(0.5), Some(false));
        slips.failed_thresholds = vec!["accuracy 0.50 < 0.80".into()];
        slips.diagnostics = vec![Diagnostic {
            field: "filing_status".into(),
            want: serde_json::json!("single"),
            got: serde_json::json!("married"),
            outcome: crate::results::Outcome::Other("wrong".into()),
        }];
        let mut breaks = case("breaks", None, None);
        breaks.error =
            crate::results::testing::error("cassette miss: no recording of this request");
        let cand = run(
            "cand",
            "feature-x",
            "2026-01-02T00:00:00Z",
            vec![
                case("ok", Some(0.9), Some(true)),
                slips,
                breaks,
                case("better", Some(0.7), Some(true)),
                case("fresh", Some(1.0), Some(true)),
            ],
        );
        let info = BaselineInfo {
            id: "base".into(),
            branch: Some("main".into()),
            commit: Some("abc1234def".into()),
            started_at: "2026-01-01T00:00:00Z".parse().expect("a time"),
            reference: "main".into(),
        };
        let c = compare(Some((&base, info)), &cand, 0.02);
        (cand, c)
    }

    #[test]
    fn markdown_report() {
        let (run, c) = checked();
        insta::assert_snapshot!(Markdown::default().render(&run, Some(&c)));
    }

    #[test]
    fn a_passing_check_says_so_on_the_first_line() {
        let r = run(
            "r",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("ok", Some(1.0), Some(true))],
        );
        let c = compare(None, &r, 0.02);
        let md = Markdown::default().render(&r, Some(&c));
        assert_eq!(
            md.lines().next(),
            Some("**evals check passed** in tax-intake (main, no baseline)")
        );
        assert_eq!(md.lines().nth(1), Some("<!-- evals:tax-intake -->"));
    }

    #[test]
    fn the_judges_cost_is_a_column_apart_only_when_a_judge_reported_one() {
        let (mut run, c) = checked();
        let md = Markdown::default().render(&run, Some(&c));
        assert!(!md.contains("judge_cost"), "{md}");
        run.experiments[0].judge_cost_usd = Some(0.5);
        let md = Markdown::default().render(&run, Some(&c));
        assert!(
            md.contains("| Δ points | errors | failed thresholds | judge_cost | |\n|---|---|--:|--:|--:|--:|--:|--:|---|\n"),
            "{md}"
        );
        let row = md
            .lines()
            .find(|l| l.contains("| $0.5000 |"))
            .unwrap_or_else(|| panic!("no judge_cost cell: {md}"));
        // As many cells as the header: the status column still last.
        assert_eq!(row.matches('|').count(), 10, "{row}");
    }

    /// Model text that would break out of the comment: raw HTML, a comment, the end of our
    /// `<details>`, a fence closer (alone on a line, indented like a diff's context line), a
    /// code span, a link, an image, a mention, an issue reference, a table cell.
    const EVIL: &str = "<img src=x onerror=alert(1)> </details> <!-- hidden --> @octocat and #1\n```\n`<b>code</b>` [click](https://evil.test) ![i](https://evil.test/i.png) a|b *em* it`s";

    /// A check whose regressed case answered [`EVIL`] (in its output and its diagnostics)
    /// and whose errored case's error is [`EVIL`] too.
    fn hostile() -> (RunResult, Comparison) {
        let mut before = case("evil", Some(0.9), Some(true));
        before.output = Some(serde_json::json!(format!("fine\n```\n{EVIL}")));
        let base = run(
            "base",
            "main",
            "2026-01-01T00:00:00Z",
            vec![before, case("crash", Some(0.9), Some(true))],
        );
        let mut evil = case("evil", Some(0.5), Some(false));
        evil.failed_thresholds = vec!["accuracy 0.50 < 0.80".into()];
        evil.output = Some(serde_json::json!(format!("worse\n```\n{EVIL} {EVIL}")));
        evil.diagnostics = vec![Diagnostic {
            field: "answer`s".into(),
            want: serde_json::json!("fine"),
            got: serde_json::json!(EVIL),
            outcome: crate::results::Outcome::Other("wrong".into()),
        }];
        let mut crash = case("crash", None, None);
        crash.error = crate::results::testing::error(format!("adapter crashed: {EVIL}"));
        let cand = run("cand", "feature", "2026-01-02T00:00:00Z", vec![evil, crash]);
        let info = BaselineInfo {
            id: "base".into(),
            branch: Some("main".into()),
            commit: None,
            started_at: "2026-01-01T00:00:00Z".parse().expect("a time"),
            reference: "main".into(),
        };
        let c = compare(Some((&base, info)), &cand, 0.02);
        (cand, c)
    }

    /// The lines outside fenced code blocks, and the fenced blocks' lines, read the way
    /// CommonMark does: a fence closes at a line of at least as many backticks, indented
    /// up to three spaces.
    fn outside_and_inside_fences(md: &str) -> (Vec<&str>, Vec<Vec<&str>>) {
        let (mut outside, mut blocks) = (Vec::new(), Vec::new());
        let mut fence: Option<(usize, Vec<&str>)> = None;
        for line in md.lines() {
            let indent = line.len() - line.trim_start_matches(' ').len();
            let t = line.trim_start_matches(' ');
            let ticks = t.len() - t.trim_start_matches('`').len();
            match &mut fence {
                None if indent <= 3 && ticks >= 3 => fence = Some((ticks, Vec::new())),
                None => outside.push(line),
                Some((n, _)) if indent <= 3 && ticks >= *n && t[ticks..].trim().is_empty() => {
                    blocks.push(fence.take().unwrap().1);
                }
                Some((_, body)) => body.push(line),
            }
        }
        assert!(fence.is_none(), "a fence is never closed:\n{md}");
        (outside, blocks)
    }

    /// `line` with each code span (a backtick run, not backslash-escaped, up to the next
    /// run of as many) replaced by `CODE`, as CommonMark reads it.
    fn without_code_spans(line: &str) -> String {
        let mut out = String::new();
        let mut chars = line.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    out.push(c);
                    if let Some((_, n)) = chars.next() {
                        out.push(n);
                    }
                }
                '`' => {
                    let run = line[i..].len() - line[i..].trim_start_matches('`').len();
                    for _ in 1..run {
                        chars.next();
                    }
                    match closing_run(&line[i + run..], run) {
                        Some(j) => {
                            out.push_str("CODE");
                            while chars.peek().is_some_and(|&(k, _)| k < i + run + j + run) {
                                chars.next();
                            }
                        }
                        None => out.push_str(&line[i..i + run]),
                    }
                }
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn model_text_never_reaches_the_comment_as_markdown_or_html() {
        let (run, c) = hostile();
        let md = Markdown::default().render(&run, Some(&c));
        let (outside, blocks) = outside_and_inside_fences(&md);
        // Our one diff stays one block, holding the whole answer, closed where we close it.
        assert_eq!(blocks.len(), 1, "{md}");
        assert!(blocks[0].iter().any(|l| l.contains("+worse")), "{md}");
        assert!(blocks[0].contains(&" ```"), "{md}");
        assert!(blocks[0].iter().any(|l| l.contains("</details>")), "{md}");
        // Inside a code span nothing renders as Markdown, HTML or a mention.
        let text = outside
            .iter()
            .map(|l| without_code_spans(l))
            .collect::<Vec<_>>()
            .join("\n");
        // Every `<` outside the fences opens one of our own tags or the marker.
        let ours = [
            "<details>",
            "<summary>",
            "</summary>",
            "<code>",
            "</code>",
            "</details>",
            "<!-- evals:tax-intake -->",
        ];
        for (i, _) in text.match_indices('<') {
            assert!(
                ours.iter().any(|t| text[i..].starts_with(t)),
                "raw HTML from the model at {:?}\n{md}",
                &text[i..text.len().min(i + 30)]
            );
        }
        assert_eq!(text.matches("<details>").count(), 1, "{md}");
        assert_eq!(text.matches("</details>").count(), 1, "{md}");
        assert_eq!(text.matches("<!--").count(), 1, "only the marker: {md}");
        // No mention, issue reference, link or image is left to render (`&#` opens an
        // entity: every `&` of the model's is `&amp;`).
        for (i, c) in text.char_indices() {
            let next = text[i + c.len_utf8()..].chars().next();
            if c == '@' || (c == '#' && !text[..i].ends_with('&')) {
                assert!(
                    !next.is_some_and(|n| n.is_ascii_alphanumeric()),
                    "a live {c} at {:?}\n{md}",
                    &text[i..text.len().min(i + 20)]
                );
            }
        }
        let unescaped = text.replace("\\[", "").replace("\\]", "");
        assert!(
            !unescaped.contains("](") && !unescaped.contains("!["),
            "{md}"
        );
        assert!(!text.contains("*em*"), "{md}");
        // The row of the regressed case keeps its seven cells.
        let row = outside
            .iter()
            .find(|l| l.contains("| regressed |"))
            .unwrap_or_else(|| panic!("{md}"));
        let bars = row
            .char_indices()
            .filter(|&(i, c)| c == '|' && !row[..i].ends_with('\\'))
            .count();
        assert_eq!(bars, 8, "{row}");
    }

    #[test]
    fn a_long_report_is_cut_under_the_limit_with_a_note() {
        let (run, c) = checked();
        let md = Markdown { limit: 1500 }.render(&run, Some(&c));
        assert!(md.len() <= 1500, "{} chars", md.len());
        assert!(
            md.contains("left out to stay under GitHub's 65536-character limit"),
            "{md}"
        );
        assert!(
            md.starts_with(
                "**evals check: 2 regressions, 1 error** in tax-intake (main → feature-x)"
            ),
            "{md}"
        );
    }
}
