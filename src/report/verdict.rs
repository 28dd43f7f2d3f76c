//! The verdict in words: its reasons ([`reason_text`]), the terminal's verdict
//! ([`Terminal`]), and the comparison as the JSON snapshot writes it.
//!
//! The gate returns typed [`Reason`]s; these are the words the terminal, the HTML page and
//! the JSON snapshot give them (the Markdown report escapes the same words). A reason read
//! back from a snapshot is already words and is said as it was written.

use serde::Serialize;

use crate::text::plural;

use super::format::{experiment_label, pct, percent, stopped, unusable_text};
use crate::results::{
    BaselineInfo, CaseDelta, CaseRef, CaseStatus, Comparison, ExperimentDelta, Measure, Measured,
    Reason, RunResult, Stopped,
};

/// The verdict as the terminal says it (on stderr): the line, then for a failed check
/// each reason indented, the cassette misses once per cause rather than once per case.
#[derive(Debug, Clone, PartialEq)]
pub struct Terminal {
    /// `evals check: 2 regressions, 1 error in tax-intake (main → feature-x)`.
    pub line: String,
    /// Nothing when the check passed.
    pub reasons: Vec<String>,
}

impl Terminal {
    /// The terminal's verdict on `run` compared as `c` says, its cases in it.
    pub fn of(run: &RunResult, c: &Comparison) -> Terminal {
        Terminal::of_cases(run, crate::results::CaseSource::Run(run), c).unwrap_or_else(|e| {
            Terminal {
                line: verdict_text(run, Some(c)),
                reasons: vec![format!("  {e}")],
            }
        })
    }

    /// [`Terminal::of`] with `run`'s cases read from `cases` one at a time (the case log of
    /// a run streamed to disk): what is held is the misses and the first flaky cases.
    pub fn of_cases(
        run: &RunResult,
        cases: crate::results::CaseSource<'_>,
        c: &Comparison,
    ) -> crate::error::Result<Terminal> {
        let line = verdict_text(run, Some(c));
        // The cases read once: the misses (said when the check failed) grouped, the first
        // ten flaky cases named, the rest counted.
        let mut misses = super::misses::Grouping::default();
        let mut flaky: Vec<String> = Vec::new();
        let mut flaky_total = 0;
        super::each_case(run, cases, |i, case| {
            if !c.verdict.passed {
                misses.add(&run.experiments[i], case);
            }
            if case.flaky() {
                flaky_total += 1;
                if flaky.len() < 10 {
                    flaky.push(format!("{}/{}", run.experiments[i].dataset, case.case));
                }
            }
            Ok(())
        })?;
        let mut reasons = Vec::new();
        if !c.verdict.passed {
            reasons.extend(
                c.verdict
                    .reasons
                    .iter()
                    .filter(|r| !super::misses::is_miss_reason(r))
                    .map(|r| format!("  {}", reason_text(r))),
            );
            for g in misses.groups() {
                reasons.push(format!(
                    "  {} missed request(s), the same change: {}\n  cases: {}\n{}  record again: {}",
                    g.cases.len(),
                    super::misses::who(&g),
                    super::misses::case_list(&g, 10),
                    g.diff
                        .lines()
                        .map(|l| format!("    {l}\n"))
                        .collect::<String>(),
                    g.hints()
                        .iter()
                        .map(|h| format!("`{h}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        // Undecided drops are listed whether or not they gate (the gating ones are
        // among the reasons already).
        if !c
            .verdict
            .reasons
            .iter()
            .any(|r| matches!(r, Reason::Inconclusive { .. }))
        {
            reasons.extend(inconclusive(c).into_iter().map(|l| format!("  {l}")));
        }
        if flaky_total > 0 {
            let more = flaky_total - flaky.len();
            reasons.push(format!(
                "  {} (some tries passed, some failed): {}{}",
                crate::text::plural(flaky_total, "flaky case", "flaky cases"),
                flaky.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        Ok(Terminal { line, reasons })
    }
}

/// A reason as one line of plain text: `fake/echo [temp 0] · tax · b: fails its
/// thresholds (accuracy 0.1 < 0.8)`.
pub fn reason_text(r: &Reason) -> String {
    match r {
        Reason::Stopped(s) => format!("the run {}; a partial run cannot pass", stopped(s)),
        Reason::ExperimentFell {
            contender,
            dataset,
            baseline,
            candidate,
            tolerance,
        } => format!(
            "{}: mean score fell {:.1} points ({} → {}), more than the {:.1}-point tolerance",
            experiment_label(contender, dataset),
            -(candidate - baseline) * 100.0,
            percent(*baseline),
            percent(*candidate),
            tolerance * 100.0
        ),
        Reason::CaseErrored { at, error, .. } => with_unusable(
            at,
            format!(
                "{}: errored: {}",
                case_label(at),
                error.as_deref().unwrap_or("no score")
            ),
        ),
        Reason::CaseRegressed {
            at,
            baseline,
            failed,
        } => with_unusable(
            at,
            format!(
                "{}: met its thresholds on {baseline}, now fails ({})",
                case_label(at),
                failed.join(", ")
            ),
        ),
        Reason::CaseDeclined {
            at,
            baseline,
            candidate,
        } => with_unusable(
            at,
            format!(
                "{}: score fell {:.1} points ({} → {}); --fail-on-case-regression fails any drop",
                case_label(at),
                -candidate.zip(*baseline).map(|(c, b)| c - b).unwrap_or(0.0) * 100.0,
                pct(*baseline),
                pct(*candidate)
            ),
        ),
        Reason::BelowThreshold { at, failed } => with_unusable(
            at,
            format!(
                "{}: fails its thresholds ({})",
                case_label(at),
                failed.join(", ")
            ),
        ),
        Reason::BelowMinScore {
            contender,
            dataset,
            score,
            min,
        } => format!(
            "{}: mean score {} is below --min-score {}",
            experiment_label(contender, dataset),
            percent(*score),
            percent(*min)
        ),
        Reason::BelowPassRate {
            contender,
            dataset,
            passed,
            cases,
            min,
        } => format!(
            // Said as the share of cases it is, never "pass rate": an assertions suite has a
            // `pass_rate` column, the share of each case's assertions, beside it.
            "{}: {} of cases passed ({passed} of {cases}), below --min-pass-rate {}",
            experiment_label(contender, dataset),
            percent(*passed as f64 / *cases as f64),
            percent(*min)
        ),
        Reason::Inconclusive {
            contender,
            dataset,
            baseline,
            candidate,
            test,
        } => format!(
            "{}: {}; --inconclusive fail gates it",
            experiment_label(contender, dataset),
            inconclusive_words(*baseline, *candidate, test)
        ),
        Reason::Rose {
            contender,
            dataset,
            measure,
            baseline,
            candidate,
            allowed,
        } => format!(
            "{}: {} rose {} ({} → {}), more than the {}% allowed",
            experiment_label(contender, dataset),
            measure.as_str(),
            rise_past(
                Measured {
                    baseline: Some(*baseline),
                    candidate: Some(*candidate),
                    cases: 0,
                },
                *allowed
            ),
            figure(*measure, *baseline),
            figure_with_unit(*measure, *candidate),
            percentage(*allowed)
        ),
        Reason::Recorded(text) => text.clone(),
    }
}

/// A percentage as the reports say it: whole from 10 up (`23`), one decimal under
/// (`4.5`), none where it would be `.0`.
pub fn percentage(p: f64) -> String {
    if p.abs() >= 10.0 || (p - p.round()).abs() < 0.05 {
        format!("{:.0}", p.round())
    } else {
        format!("{p:.1}")
    }
}

/// A rise past `allowed` percent, in words that never read as the allowed figure itself:
/// `23%`, but `10.4%` past 10%.
fn rise_past(m: Measured, allowed: f64) -> String {
    match m.change() {
        Some(c) if c.is_finite() && (c * 100.0).round() <= allowed => {
            format!("{:.1}%", c * 100.0)
        }
        _ => rise(m),
    }
}

/// How far a measure moved, as `23%` (`-8%` for a fall, `from 0` for a rise from nothing);
/// `-` when a side is unknown.
pub fn rise(m: Measured) -> String {
    match m.change() {
        None => "-".into(),
        Some(c) if c.is_infinite() => "from 0".into(),
        Some(c) => format!("{}%", percentage(c * 100.0)),
    }
}

/// How far a measure moved as a signed cell: `+23%`, `-8%`, `0%`; `+∞` from 0; `?` when
/// a side is unknown (never taken for 0).
pub fn signed_rise(m: Measured) -> String {
    match m.change() {
        None => "?".into(),
        Some(c) if c.is_infinite() => "+∞".into(),
        Some(c) if c * 100.0 >= 0.05 => format!("+{}%", percentage(c * 100.0)),
        Some(c) => format!("{}%", percentage(c * 100.0)),
    }
}

/// What moved by more than 5% on the shared cases, gated or not: `cost +23%`,
/// `tokens +30%`, summed over the experiments whose figure both runs know.
pub fn moved(c: &Comparison) -> Vec<String> {
    [Measure::Cost, Measure::Tokens]
        .into_iter()
        .filter_map(|m| {
            let known = c
                .experiments
                .iter()
                .map(|e| e.measured(m))
                .filter(|f| f.baseline.is_some() && f.candidate.is_some());
            let total = known.fold(Measured::default(), |t, f| Measured {
                baseline: Some(t.baseline.unwrap_or(0.0) + f.baseline.unwrap_or(0.0)),
                candidate: Some(t.candidate.unwrap_or(0.0) + f.candidate.unwrap_or(0.0)),
                cases: t.cases + f.cases,
            });
            let change = total.change()?;
            (change.abs() > 0.05).then(|| format!("{} {}", m.as_str(), signed_rise(total)))
        })
        .collect()
}

/// A measure's figure without its unit: `0.0412` (dollars), `1,300` (tokens), `1.20`
/// (seconds).
fn figure(measure: Measure, v: f64) -> String {
    match measure {
        Measure::Cost if v != 0.0 && v.abs() < 0.0001 => format!("{v:.6}"),
        Measure::Cost => format!("{v:.4}"),
        Measure::Tokens => super::format::thousands(v.round().max(0.0) as usize),
        Measure::Latency => format!("{v:.2}"),
    }
}

/// A measure's figure with its unit: `0.0507 USD`, `1,300 tokens`, `1.68 s`.
pub fn figure_with_unit(measure: Measure, v: f64) -> String {
    let unit = match measure {
        Measure::Cost => "USD",
        Measure::Tokens => "tokens",
        Measure::Latency => "s",
    };
    format!("{} {unit}", figure(measure, v))
}

/// An undecided drop in words: how far it fell, the p-value, and the tries that would
/// likely decide it.
fn inconclusive_words(baseline: f64, candidate: f64, t: &crate::results::PairedTest) -> String {
    let decide = match t.repeats_to_decide {
        Some(n) => format!("; about {n} tries per case would decide it (--repeat {n})"),
        None => "; more tries would not decide it (the cases differ, not their tries)".into(),
    };
    format!(
        "inconclusive: mean score fell {:.1} points ({} → {}), past the tolerance but not significant (p = {}, alpha {}){decide}",
        -(candidate - baseline) * 100.0,
        percent(baseline),
        percent(candidate),
        p_value(t.p_value),
        t.alpha
    )
}

/// A p-value as the reports print it: three decimals, `< 0.001` below.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// Each experiment the statistical gate tested, in words: `fake/echo · tax: 90.0% → 87.5%
/// (±2.1), p = 0.012 by sign-flip over 40 cases, 3 tries`, and its call when it was past
/// the tolerance.
pub fn tested(c: &Comparison, run: &RunResult) -> Vec<String> {
    c.experiments
        .iter()
        .filter_map(|e| {
            let t = e.test.as_ref()?;
            let ci = run
                .experiments
                .iter()
                .find(|x| x.contender.key() == e.contender.key() && x.dataset == e.dataset)
                .and_then(|x| x.repeat.as_ref())
                .and_then(|r| r.ci95)
                .map(|h| format!(" (±{:.1})", h * 100.0))
                .unwrap_or_default();
            let call = if t.inconclusive {
                "; inconclusive"
            } else if e.regressed {
                "; regressed"
            } else {
                ""
            };
            Some(format!(
                "{}: {} → {}{ci}, p = {} by {} over {}, {}{call}",
                experiment_label(&e.contender, &e.dataset),
                pct(e.baseline),
                pct(e.candidate),
                p_value(t.p_value),
                t.method,
                crate::text::plural(e.matched, "case", "cases"),
                crate::text::plural(t.k, "try", "tries")
            ))
        })
        .collect()
}

/// Each experiment whose drop the statistical gate left undecided, in words (the terminal
/// and the reports list them whether or not they gate).
pub fn inconclusive(c: &Comparison) -> Vec<String> {
    c.experiments
        .iter()
        .filter_map(|e| {
            let t = e.test.as_ref().filter(|t| t.inconclusive)?;
            Some(format!(
                "{}: {}",
                experiment_label(&e.contender, &e.dataset),
                inconclusive_words(e.baseline?, e.candidate?, t)
            ))
        })
        .collect()
}

/// `contender · dataset · case`.
fn case_label(at: &CaseRef) -> String {
    format!(
        "{} · {}",
        experiment_label(&at.contender, &at.dataset),
        at.case
    )
}

/// A case's reason, followed by what the model said when its reply was unusable.
fn with_unusable(at: &CaseRef, reason: String) -> String {
    match unusable_text(at.reply_error.as_deref(), at.said.as_deref()) {
        Some(u) => format!("{reason}; {u}"),
        None => reason,
    }
}

/// The comparison as the JSON snapshot holds it: the fields in their order, each reason
/// in words.
#[derive(Serialize)]
pub(crate) struct Written<'a> {
    baseline: &'a Option<BaselineInfo>,
    tolerance: f64,
    experiments: &'a [ExperimentDelta],
    cases: &'a [CaseDelta],
    unchanged: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: &'a Option<Stopped>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    first_baseline: bool,
    verdict: WrittenVerdict,
}

#[derive(Serialize)]
struct WrittenVerdict {
    passed: bool,
    reasons: Vec<String>,
}

impl<'a> Written<'a> {
    pub(crate) fn new(c: &'a Comparison) -> Written<'a> {
        Written {
            baseline: &c.baseline,
            tolerance: c.tolerance,
            experiments: &c.experiments,
            cases: &c.cases,
            unchanged: c.unchanged,
            stopped: &c.stopped,
            first_baseline: c.first_baseline,
            verdict: WrittenVerdict {
                passed: c.verdict.passed,
                reasons: c.verdict.reasons.iter().map(reason_text).collect(),
            },
        }
    }
}

/// The verdict line as plain text, for the terminal and the HTML report.
pub fn verdict_text(run: &RunResult, comparison: Option<&Comparison>) -> String {
    let (head, suite, span) = verdict(run, comparison);
    format!("{head} in {suite} ({span})")
}

/// Experiments whose drop the statistical gate left undecided.
fn undecided(c: &Comparison) -> usize {
    c.experiments
        .iter()
        .filter(|e| e.test.as_ref().is_some_and(|t| t.inconclusive))
        .count()
}

/// The verdict, the suite and the branches compared.
pub(crate) fn verdict(
    run: &RunResult,
    comparison: Option<&Comparison>,
) -> (String, String, String) {
    let from = comparison
        .and_then(|c| c.baseline.as_ref())
        .map(|b| b.branch.clone().unwrap_or_else(|| b.reference.clone()));
    let to = run.run.branch.clone().unwrap_or_else(|| "this run".into());
    let first = comparison.is_some_and(|c| c.first_baseline);
    let span = match from {
        Some(from) => format!("{from} → {to}"),
        None if first => format!("{to}, first baseline"),
        None => format!("{to}, no baseline"),
    };
    let head = match comparison {
        None => "evals check: not compared".to_string(),
        Some(c) if c.verdict.passed => match undecided(c) {
            0 => "evals check passed".to_string(),
            n => format!("evals check passed, {n} inconclusive"),
        },
        Some(c) => {
            // A decline is gated only under --fail-on-case-regression: a regression then.
            let dropped = |d: &CaseDelta| {
                d.gated && d.status == CaseStatus::Declined && d.candidate_passed != Some(false)
            };
            // A cost, tokens or latency past its allowed rise is a regression too.
            let rose = c
                .verdict
                .reasons
                .iter()
                .filter(|r| matches!(r, Reason::Rose { .. }))
                .count();
            let regressions = c.experiments.iter().filter(|e| e.regressed).count()
                + rose
                + count(c, |d| d.status == CaseStatus::Regressed || dropped(d));
            let errors = count(c, |d| d.status == CaseStatus::Errored);
            let failed = count(c, |d| {
                d.gated
                    && !dropped(d)
                    && !matches!(d.status, CaseStatus::Regressed | CaseStatus::Errored)
            });
            let regressed_experiments = c.experiments.iter().filter(|e| e.regressed).count();
            // The rest of the reasons are experiments missing the run's limits
            // (`--min-score`, `--min-pass-rate`): failed thresholds too.
            let failed = failed
                + c.verdict.reasons.len().saturating_sub(
                    regressed_experiments
                        + rose
                        + count(c, |d| d.gated)
                        + usize::from(c.stopped.is_some())
                        + c.verdict
                            .reasons
                            .iter()
                            .filter(|r| matches!(r, crate::results::Reason::Inconclusive { .. }))
                            .count(),
                );
            let mut parts = Vec::new();
            if let Some(s) = &c.stopped {
                parts.push(stopped(s));
            }
            if regressions > 0 {
                parts.push(plural(regressions, "regression", "regressions"));
            }
            if undecided(c) > 0 {
                parts.push(format!("{} inconclusive", undecided(c)));
            }
            if errors > 0 {
                parts.push(plural(errors, "error", "errors"));
            }
            if failed > 0 {
                parts.push(plural(failed, "failed threshold", "failed thresholds"));
            }
            format!("evals check: {}", parts.join(", "))
        }
    };
    (head, run.run.suite.clone(), span)
}

pub(crate) fn count(c: &Comparison, f: impl Fn(&CaseDelta) -> bool) -> usize {
    c.cases.iter().filter(|d| f(d)).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::compare;
    use crate::report::{Report, json::Json};
    use crate::results::testing::{case, run};

    #[test]
    fn the_snapshot_writes_each_reason_in_words_and_reads_them_back_as_recorded() {
        let mut failing = case("b", Some(0.1), Some(false));
        failing.failed_thresholds = vec!["accuracy 0.1 < 0.8".into()];
        let r = run("r", "main", "2026-01-01T00:00:00Z", vec![failing]);
        let c = compare(None, &r, 0.02);
        let words = "fake/echo [temp 0] · tax · b: fails its thresholds (accuracy 0.1 < 0.8)";
        assert_eq!(reason_text(&c.verdict.reasons[0]), words);
        let text = Json.render(&r, Some(&c));
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["comparison"]["verdict"]["reasons"][0], words);
        // The keys in the order snapshots have always had, the comparison last.
        let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
        assert_eq!(keys.len(), 4);
        assert!(text.trim_end().ends_with('}'));
        let at = |k: &str| text.find(&format!("\n  \"{k}\":")).expect(k);
        assert!(at("format") < at("run") && at("run") < at("experiments"));
        assert!(at("experiments") < at("comparison"));
        // Without a comparison, `null` as before.
        assert!(Json.render(&r, None).contains("\n  \"comparison\": null\n"));
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("run.json");
        std::fs::write(&file, &text).expect("write");
        let (back, comparison) = crate::results::snapshot::load_checked(&file).expect("load");
        assert_eq!(back, r);
        let comparison = comparison.expect("comparison");
        assert_eq!(
            comparison.verdict.reasons,
            [Reason::Recorded(words.to_string())]
        );
        // Written again, the same bytes.
        assert_eq!(Json.render(&back, Some(&comparison)), text);
    }

    #[test]
    fn the_terminal_says_each_reason_and_each_cause_of_misses_once() {
        let base = run(
            "base",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("a", Some(1.0), Some(true)),
                case("b", Some(1.0), Some(true)),
            ],
        );
        let mut a = case("a", None, None);
        a.error = crate::results::testing::error(
            "no recording matches this request (c/a.json)\n  model: \"x\" → \"y\"",
        );
        let mut b = case("b", None, None);
        b.error = crate::results::testing::error(
            "no recording matches this request (c/b.json)\n  model: \"x\" → \"y\"",
        );
        let cand = run("cand", "f", "2026-01-02T00:00:00Z", vec![a, b]);
        let info = crate::results::BaselineInfo {
            id: "base".into(),
            branch: Some("main".into()),
            commit: None,
            started_at: "2026-01-01T00:00:00Z".parse().expect("a time"),
            reference: "main".into(),
        };
        let c = compare(Some((&base, info)), &cand, 0.02);
        let said = Terminal::of(&cand, &c);
        assert_eq!(said.line, "evals check: 2 errors in tax-intake (main → f)");
        assert_eq!(said.reasons.len(), 1, "{:?}", said.reasons);
        assert!(
            said.reasons[0].starts_with("  2 missed request(s), the same change: fake/echo [temp 0] (2 cases)\n  cases: tax/a, tax/b\n"),
            "{:?}",
            said.reasons
        );
        let passing = compare(None, &base, 0.02);
        assert!(Terminal::of(&base, &passing).reasons.is_empty());
    }
}
