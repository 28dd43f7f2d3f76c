//! `evals drift`: whether the live models still answer as the recordings say.
//!
//! A seeded sample of the cases ([`sample`]) runs twice: replayed from `cassettes/` (the
//! recorded scores) and called live (recorded into a folder of its own, so `cassettes/`
//! is untouched). [`judge`] compares the two with the gate's paired test
//! ([`crate::gate::compare_with`], the statistical gate forced on) and lists the answers
//! that changed; [`Drift::drifted`] is a significant drop of an experiment's mean score, or
//! more changed answers than `--max-changed` allows. [`update_cassettes`] copies the live
//! recordings of the changed cases, and only those, over their cassettes (`--update`).
//! A side that could not be measured (a case with no recording, a live call that failed)
//! is never a drop: [`unmeasured`] names it and the command exits 2.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::gate::Rules;
use crate::results::{
    BaselineInfo, CaseResult, Comparison, ContenderInfo, ExperimentDelta, RunResult,
};
use crate::suite::{Cases, Contender};

/// The seed of the sample when `--seed` is not given: the same cases every night.
pub const DEFAULT_SEED: u64 = 1;

/// The share of changed answers (percent of the compared cases) past which drift is
/// declared when `--max-changed` is not given.
pub const DEFAULT_MAX_CHANGED: f64 = 20.0;

/// How many cases `--sample` takes: all, a count, or a percentage of the selection.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Sample {
    /// Every selected case.
    #[default]
    All,
    /// This many (all of them when there are fewer).
    Count(usize),
    /// This percentage (0 < p ≤ 100), rounded up to a whole case.
    Percent(f64),
}

impl Sample {
    /// `20` (cases) or `10%`; `all`.
    pub fn parse(text: &str) -> std::result::Result<Sample, String> {
        let t = text.trim();
        if t == "all" {
            return Ok(Sample::All);
        }
        if let Some(p) = t.strip_suffix('%') {
            return match p.trim().parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 100.0 => Ok(Sample::Percent(p)),
                _ => Err(format!(
                    "{text}: a percentage is more than 0% and at most 100% (10% is a tenth of the cases)"
                )),
            };
        }
        match t.parse::<usize>() {
            Ok(n) if n > 0 => Ok(Sample::Count(n)),
            _ => Err(format!(
                "{text}: give a number of cases (--sample 20), a percentage (--sample 10%) or all"
            )),
        }
    }

    /// How many of `n` cases the sample holds.
    pub fn size(self, n: usize) -> usize {
        match self {
            Sample::All => n,
            Sample::Count(k) => k.min(n),
            // A hair under, so a share that is a whole number of cases is never rounded
            // up past it by the float's last bit.
            Sample::Percent(p) => ((((n as f64) * p / 100.0) - 1e-9).ceil() as usize)
                .clamp(1, n.max(1))
                .min(n),
        }
    }
}

/// The cases of `cases` a seeded draw keeps, in their order: the same `seed` and cases
/// give the same sample on every machine.
pub fn sample(cases: &Cases, sample: Sample, seed: u64) -> Cases {
    let n = cases.len();
    let k = sample.size(n);
    if k >= n {
        return cases.clone();
    }
    // A partial Fisher–Yates shuffle of the indices: the first k are the sample.
    let mut idx: Vec<usize> = (0..n).collect();
    let mut rng = crate::results::stats::Rng::new(seed);
    for i in 0..k {
        let j = i + (rng.next_u64() % (n - i) as u64) as usize;
        idx.swap(i, j);
    }
    let keep: HashSet<usize> = idx[..k].iter().copied().collect();
    let mut at = 0;
    cases.filter(|_| {
        let kept = keep.contains(&at);
        at += 1;
        kept
    })
}

/// One case whose live answer is not its recorded one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangedAnswer {
    /// The contender that answered.
    pub contender: ContenderInfo,
    /// The case's dataset.
    pub dataset: String,
    /// The case id within its dataset.
    pub case: String,
    /// The recorded score; `None` when it had none.
    pub recorded_score: Option<f64>,
    /// The live score (the mean of its tries under `--repeat`).
    pub live_score: Option<f64>,
    /// The recorded answer (parsed, or the model's text when it did not parse).
    pub recorded: Value,
    /// The live answer (its first try's under `--repeat`).
    pub live: Value,
}

impl ChangedAnswer {
    /// `contender · dataset · case`, as the reports name it.
    pub fn label(&self) -> String {
        format!(
            "{} · {} · {}",
            self.contender.label(),
            self.dataset,
            self.case
        )
    }

    /// The unified diff, recorded to live, of the answers pretty-printed.
    pub fn diff(&self) -> String {
        let a = answer_text(&self.recorded);
        let b = answer_text(&self.live);
        similar::TextDiff::from_lines(&a, &b)
            .unified_diff()
            .context_radius(3)
            .header("recorded", "live")
            .to_string()
    }
}

/// An answer as a diff compares it: JSON pretty-printed, a string as it is.
fn answer_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => format!("{s}\n"),
        v => format!(
            "{}\n",
            serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
        ),
    }
}

/// What a case answered: its parsed output, else the model's text (an unusable reply).
fn answer(c: &CaseResult) -> Value {
    match (&c.output, &c.raw) {
        (Some(v), _) if !v.is_null() => v.clone(),
        (_, Some(raw)) => Value::String(raw.clone()),
        _ => Value::Null,
    }
}

/// The live run against the recorded one.
#[derive(Debug, Clone)]
pub struct Drift {
    /// The gate's comparison, the recorded run as the baseline, the paired test forced on;
    /// its verdict holds only the experiments whose mean fell significantly.
    pub comparison: Comparison,
    /// The cases whose live answer changed, in the run's order.
    pub changed: Vec<ChangedAnswer>,
    /// How many case answers were compared (cases × contenders).
    pub compared: usize,
    /// `--max-changed`, in percent.
    pub max_changed: f64,
}

impl Drift {
    /// The share of compared answers that changed, in percent.
    pub fn changed_percent(&self) -> f64 {
        if self.compared == 0 {
            0.0
        } else {
            self.changed.len() as f64 * 100.0 / self.compared as f64
        }
    }

    /// More answers changed than `--max-changed` allows.
    pub fn too_many_changed(&self) -> bool {
        self.changed_percent() > self.max_changed + 1e-9
    }

    /// The experiments whose mean score fell significantly (the paired test under alpha).
    pub fn fell(&self) -> Vec<&ExperimentDelta> {
        self.comparison
            .experiments
            .iter()
            .filter(|e| e.regressed)
            .collect()
    }

    /// Drift: a significant drop, or too many changed answers.
    pub fn drifted(&self) -> bool {
        self.too_many_changed() || !self.fell().is_empty()
    }

    /// The one line a person reads first.
    pub fn headline(&self, suite: &str) -> String {
        let changed = format!(
            "{} of {} answers changed ({:.0}%, --max-changed {}%)",
            self.changed.len(),
            self.compared,
            self.changed_percent(),
            self.max_changed
        );
        let fell = self.fell().len();
        let fell = match fell {
            0 => "no significant drop".to_string(),
            n => crate::text::plural(
                n,
                "experiment's score fell significantly",
                "experiments' scores fell significantly",
            ),
        };
        if self.drifted() {
            format!("evals drift: drift in {suite}: {changed}; {fell}")
        } else {
            format!("evals drift: no drift in {suite}: {changed}; {fell}")
        }
    }

    /// Each experiment's recorded and live mean, the change and the paired test.
    pub fn experiment_lines(&self) -> Vec<String> {
        self.comparison
            .experiments
            .iter()
            .map(|e| {
                let pct = |v: Option<f64>| v.map_or("–".into(), |v| format!("{:.1}%", v * 100.0));
                let test = e.test.as_ref().map_or(String::new(), |t| {
                    format!(", {} p = {:.3}", t.method, t.p_value)
                });
                format!(
                    "{} · {}: {} → {} over {}{test}{}",
                    e.contender.label(),
                    e.dataset,
                    pct(e.baseline),
                    pct(e.candidate),
                    crate::text::plural(e.matched, "case", "cases"),
                    if e.regressed {
                        ": fell significantly"
                    } else {
                        ""
                    }
                )
            })
            .collect()
    }

    /// The Markdown report: the verdict, each experiment, the changed answers with their
    /// diffs, recorded to live. It carries the marker `<!-- evals:SUITE/drift -->`, so
    /// `evals comment --issue` keeps it apart from the suite's check reports; the diffs
    /// stop short of GitHub's limit on an issue's body, saying how many were left out.
    pub fn markdown(&self, suite: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "## {}", md(&self.headline(suite)));
        let _ = writeln!(
            s,
            "{}\n",
            crate::report::markdown::marker(&format!("{suite}/drift"))
        );
        let _ = writeln!(s, "| experiment | recorded | live | cases | paired test |");
        let _ = writeln!(s, "|---|---:|---:|---:|---|");
        for e in &self.comparison.experiments {
            let pct = |v: Option<f64>| v.map_or("–".into(), |v| format!("{:.1}%", v * 100.0));
            let test = e.test.as_ref().map_or("–".to_string(), |t| {
                format!(
                    "{} p = {:.3}{}",
                    t.method,
                    t.p_value,
                    if e.regressed { " **fell**" } else { "" }
                )
            });
            let _ = writeln!(
                s,
                "| {} · {} | {} | {} | {} | {test} |",
                md(&e.contender.label()),
                md(&e.dataset),
                pct(e.baseline),
                pct(e.candidate),
                e.matched
            );
        }
        if self.changed.is_empty() {
            let _ = writeln!(s, "\nEvery live answer is the recorded one.");
            return s;
        }
        let _ = writeln!(s, "\n### Changed answers\n");
        let _ = writeln!(s, "| case | recorded score | live score |");
        let _ = writeln!(s, "|---|---:|---:|");
        for c in &self.changed {
            let score = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.2}"));
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                md(&c.label()),
                score(c.recorded_score),
                score(c.live_score)
            );
        }
        let _ = writeln!(s);
        for (i, c) in self.changed.iter().enumerate() {
            let diff = c.diff();
            let fence = "`".repeat(longest_backtick_run(&diff).max(2) + 1);
            let block = format!(
                "<details><summary>{}</summary>\n\n{fence}diff\n{diff}{fence}\n\n</details>\n\n",
                html(&c.label())
            );
            if s.len() + block.len() > MARKDOWN_LIMIT {
                let _ = writeln!(
                    s,
                    "_{} more diffs left out to fit an issue's body: `evals drift --diff FILE` writes them all._",
                    self.changed.len() - i
                );
                break;
            }
            s.push_str(&block);
        }
        s
    }

    /// What the JSON report adds under `drift`: the verdict, the counts, the experiments
    /// that fell, each changed answer with its diff.
    pub fn json(&self) -> Value {
        serde_json::json!({
            "drifted": self.drifted(),
            "compared": self.compared,
            "changed_percent": self.changed_percent(),
            "max_changed": self.max_changed,
            "fell": self.fell().iter().map(|e| format!("{} · {}", e.contender.label(), e.dataset)).collect::<Vec<_>>(),
            "changed": self.changed.iter().map(|c| {
                let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
                v["diff"] = Value::String(c.diff());
                v
            }).collect::<Vec<_>>(),
        })
    }

    /// The diffs alone (`--diff FILE`), each headed by its case.
    pub fn diff(&self) -> String {
        let mut s = String::new();
        for c in &self.changed {
            let _ = writeln!(s, "# {}", c.label());
            s.push_str(&c.diff());
        }
        s
    }
}

/// Room for the Markdown under GitHub's 65,536 characters of an issue's body.
const MARKDOWN_LIMIT: usize = 60_000;

fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// Text for a Markdown table cell or heading: pipes and markup escaped, one line.
fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in crate::text::visible(s).chars() {
        match ch {
            '|' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn html(s: &str) -> String {
    crate::text::visible(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// What keeps drift from being measured: each case that errored on either side (`live`:
/// `None` before the live run), named with its side and error. Empty: every case measured.
pub fn unmeasured(recorded: &RunResult, live: Option<&RunResult>) -> Vec<String> {
    let mut out = Vec::new();
    let sides = std::iter::once(("recorded", recorded)).chain(live.map(|l| ("live", l)));
    for (side, run) in sides {
        for e in &run.experiments {
            for c in &e.cases {
                if let Some(err) = &c.error {
                    out.push(format!(
                        "{side} · {} · {} · {}: {}",
                        e.contender.label(),
                        e.dataset,
                        c.case,
                        err.message.lines().next().unwrap_or("")
                    ));
                }
            }
        }
    }
    out
}

/// Compares the live run with the recorded one: the paired test (forced on: `rules.stat`
/// gives alpha), and the answers that changed.
pub fn judge(recorded: &RunResult, live: &RunResult, rules: Rules, max_changed: f64) -> Drift {
    let mut stat = rules.stat;
    stat.force = true;
    let rules = Rules { stat, ..rules };
    let info = BaselineInfo {
        id: recorded.run.id.clone(),
        branch: Some("cassettes".into()),
        commit: recorded.run.commit.clone(),
        started_at: recorded.run.started_at,
        reference: "the recorded cassettes".into(),
    };
    let mut comparison = crate::gate::compare_with(Some((recorded, info)), live, rules);
    // Drift is an experiment's significant fall; a case that crossed its threshold is
    // listed among the changed answers, not gated on its own.
    comparison
        .verdict
        .reasons
        .retain(|r| matches!(r, crate::results::Reason::ExperimentFell { .. }));
    comparison.verdict.passed = comparison.verdict.reasons.is_empty();

    let recorded_cases: BTreeMap<(String, &str, &str), &CaseResult> = recorded
        .experiments
        .iter()
        .flat_map(|e| {
            e.cases
                .iter()
                .map(move |c| ((e.contender.key(), e.dataset.as_str(), c.case.as_str()), c))
        })
        .collect();
    let mut changed = Vec::new();
    let mut compared = 0;
    for e in &live.experiments {
        for c in &e.cases {
            let Some(r) =
                recorded_cases.get(&(e.contender.key(), e.dataset.as_str(), c.case.as_str()))
            else {
                continue;
            };
            if r.error.is_some() || c.error.is_some() {
                continue;
            }
            compared += 1;
            let (was, now) = (answer(r), answer(c));
            if was != now {
                changed.push(ChangedAnswer {
                    contender: e.contender.clone(),
                    dataset: e.dataset.clone(),
                    case: c.case.clone(),
                    recorded_score: r.score,
                    live_score: c.score,
                    recorded: was,
                    live: now,
                });
            }
        }
    }
    Drift {
        comparison,
        changed,
        compared,
        max_changed,
    }
}

/// Copies the live recording of each changed case from `from` (the folder the live run
/// recorded into) over its cassette in `to` (the suite's `cassettes/`); no other file is
/// written. Returns the cassettes rewritten.
pub fn update_cassettes(
    contenders: &[Contender],
    changed: &[ChangedAnswer],
    from: &Path,
    to: &Path,
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for c in changed {
        let Some(k) = contenders
            .iter()
            .find(|k| k.info.key() == c.contender.key())
        else {
            continue;
        };
        let key = super::execute::cassette_key_of(k, &c.dataset, &c.case);
        let (src, dst) = (key.path_in(from), key.path_in(to));
        let bytes = std::fs::read(&src).map_err(|e| Error::io(&src, e))?;
        crate::fs::write_atomic_verbatim(&dst, &bytes)?;
        written.push(dst);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{case, run};

    const T0: &str = "2026-01-01T00:00:00Z";

    /// `n` cases scored 1, the first `dropped` of them 0 in the live run.
    fn pair(n: usize, dropped: usize) -> (RunResult, RunResult) {
        let recorded = run(
            "rec",
            "main",
            T0,
            (0..n)
                .map(|i| case(&format!("c{i}"), Some(1.0), Some(true)))
                .collect(),
        );
        let live = run(
            "live",
            "drift",
            T0,
            (0..n)
                .map(|i| {
                    let s = if i < dropped { 0.0 } else { 1.0 };
                    case(&format!("c{i}"), Some(s), Some(s == 1.0))
                })
                .collect(),
        );
        (recorded, live)
    }

    fn rules() -> Rules {
        Rules::new(0.02, false).unwrap()
    }

    #[test]
    fn a_significant_drop_is_drift_even_under_the_changed_share() {
        // 6 of 40 cases lost (15% changed, under 20%): McNemar p = 1/64 < 0.05.
        let (recorded, live) = pair(40, 6);
        let d = judge(&recorded, &live, rules(), 20.0);
        assert_eq!(d.changed.len(), 6);
        assert_eq!(d.compared, 40);
        assert!(!d.too_many_changed());
        let fell = d.fell();
        assert_eq!(fell.len(), 1);
        let t = fell[0].test.as_ref().unwrap();
        assert_eq!(t.method, "mcnemar");
        assert!((t.p_value - 1.0 / 64.0).abs() < 1e-12, "{}", t.p_value);
        assert!(d.drifted());
        assert!(!d.comparison.verdict.passed);
    }

    #[test]
    fn a_drop_that_is_not_significant_is_not_drift_and_a_changed_share_past_the_limit_is() {
        // 4 of 10 lost: p = 1/16, not significant; 40% changed, past 20%.
        let (recorded, live) = pair(10, 4);
        let d = judge(&recorded, &live, rules(), 20.0);
        assert!(d.fell().is_empty());
        assert!(d.too_many_changed());
        assert!(d.drifted());
        // ... and under a limit of 50%, no drift.
        let d = judge(&recorded, &live, rules(), 50.0);
        assert!(!d.drifted());
        assert!(d.headline("tax-intake").starts_with(
            "evals drift: no drift in tax-intake: 4 of 10 answers changed (40%, --max-changed 50%)"
        ));
    }

    #[test]
    fn the_same_answers_are_no_drift_and_an_errored_case_is_unmeasured_not_changed() {
        let (recorded, mut live) = pair(5, 0);
        let d = judge(&recorded, &live, rules(), 0.0);
        assert!(d.changed.is_empty() && !d.drifted());
        assert!(unmeasured(&recorded, Some(&live)).is_empty());
        live.experiments[0].cases[2].error = crate::results::testing::error("HTTP 500");
        live.experiments[0].cases[2].score = None;
        let said = unmeasured(&recorded, Some(&live));
        assert_eq!(said.len(), 1);
        assert!(said[0].starts_with("live · fake/echo"), "{}", said[0]);
        assert!(said[0].ends_with("· tax · c2: HTTP 500"), "{}", said[0]);
        assert_eq!(judge(&recorded, &live, rules(), 0.0).compared, 4);
    }

    #[test]
    fn the_markdown_lists_each_changed_answer_with_its_diff_and_the_marker() {
        let (recorded, live) = pair(3, 1);
        let md = judge(&recorded, &live, rules(), 20.0).markdown("tax-intake");
        assert!(md.contains("<!-- evals:tax-intake/drift -->"), "{md}");
        assert!(md.contains("### Changed answers"), "{md}");
        assert!(
            md.contains("-  \"answer\": \"1\"\n+  \"answer\": \"0\""),
            "{md}"
        );
        assert!(!md.contains("· c1"), "{md}");
    }

    #[test]
    fn a_sample_is_a_count_a_percentage_or_all() {
        assert_eq!(Sample::parse("20"), Ok(Sample::Count(20)));
        assert_eq!(Sample::parse("10%"), Ok(Sample::Percent(10.0)));
        assert_eq!(Sample::parse("all"), Ok(Sample::All));
        assert!(Sample::parse("0").unwrap_err().contains("--sample 10%"));
        assert!(Sample::parse("150%").unwrap_err().contains("at most 100%"));
        assert_eq!(Sample::Count(20).size(5), 5);
        assert_eq!(Sample::Percent(10.0).size(25), 3);
        assert_eq!(Sample::Percent(1.0).size(10), 1);
        assert_eq!(Sample::Percent(30.0).size(10), 3);
        assert_eq!(Sample::Percent(7.0).size(100), 7);
        assert_eq!(Sample::Percent(100.0).size(0), 0);
        assert_eq!(Sample::All.size(7), 7);
    }
}
