//! The JUnit XML report: a test suite per experiment, a test case per case.
//!
//! CI systems render JUnit natively, so a failed check shows up where test failures do: a
//! regression or a failed threshold is a `failure` (with the delta in the message), an
//! errored case an `error`. Everything else passes.

use std::collections::HashMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report as JunitReport, TestCase, TestCaseStatus, TestSuite};

use super::Report;
use super::format::contender_label;
use crate::results::{CaseDelta, CaseStatus, Comparison, Reason, RunResult};

/// JUnit XML for CI test views: a test suite per experiment, a test case per case.
#[derive(Debug)]
pub struct Junit;

impl Report for Junit {
    fn render(&self, run: &RunResult, comparison: Option<&Comparison>) -> String {
        let deltas: HashMap<(String, &str, &str), &CaseDelta> = comparison
            .iter()
            .flat_map(|c| &c.cases)
            .map(|d| ((d.contender.key(), d.dataset.as_str(), d.case.as_str()), d))
            .collect();
        let mut report = JunitReport::new(format!("evals check: {}", run.run.suite));
        for exp in &run.experiments {
            let name = format!("{} · {}", contender_label(&exp.contender), exp.dataset);
            // Jenkins reads a dot in a classname as a package (`temp 0.1` would make one).
            let classname = name.replace('.', "_");
            let mut suite = TestSuite::new(name.clone());
            suite.set_time(Duration::from_secs_f64(exp.time_s.max(0.0)));
            let key = exp.contender.key();
            let exp_delta = comparison.and_then(|c| {
                c.experiments
                    .iter()
                    .find(|e| e.contender.key() == key && e.dataset == exp.dataset)
            });
            for c in &exp.cases {
                let d = deltas.get(&(key.clone(), exp.dataset.as_str(), c.case.as_str()));
                let status = if let Some(err) = &c.error {
                    // The attribute gets the first line; the whole message (a miss's diff
                    // included) goes in the element's text, where newlines survive.
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                    s.set_message(err.message.lines().next().unwrap_or("error").to_string())
                        .set_type("error")
                        .set_description(err.message.clone());
                    s
                } else if d.is_some_and(|d| d.status == CaseStatus::Regressed) {
                    let d = d.copied();
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(format!(
                        "regressed: met its thresholds in the baseline, now fails ({}); score {}",
                        c.failed_thresholds.join(", "),
                        score_change(d.and_then(|d| d.baseline_score), c.score)
                    ))
                    .set_type("regression")
                    .set_description(regression_body(d, c));
                    s
                } else if let Some(d) = d.filter(|d| d.gated && d.status == CaseStatus::Declined)
                    && c.passed != Some(false)
                {
                    // Gated only under --fail-on-case-regression.
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(format!(
                        "declined: score {}; --fail-on-case-regression fails any drop",
                        score_change(d.baseline_score, c.score)
                    ))
                    .set_type("regression")
                    .set_description(regression_body(Some(d), c));
                    s
                } else if c.passed == Some(false) {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(format!(
                        "failed thresholds: {}",
                        c.failed_thresholds.join(", ")
                    ))
                    .set_type("threshold");
                    s
                } else {
                    TestCaseStatus::success()
                };
                let mut status = status;
                // A flaky case (`--repeat K`: some tries passed, some failed) that passes on
                // most tries is a pass with a `<flakyFailure>` per failed try, as surefire
                // writes a test that passed on a rerun.
                if c.flaky() && matches!(status, TestCaseStatus::Success { .. }) {
                    for (i, t) in c.repeats.iter().enumerate() {
                        if t.passed != Some(true) {
                            let mut rerun = quick_junit::TestRerun::new(NonSuccessKind::Failure);
                            rerun
                                .set_message(format!(
                                    "try {} of {} failed{}",
                                    i + 1,
                                    c.repeats.len(),
                                    t.error
                                        .as_deref()
                                        .and_then(|e| e.lines().next())
                                        .map(|e| format!(": {e}"))
                                        .unwrap_or_default()
                                ))
                                .set_type("flaky");
                            status.add_rerun(rerun);
                        }
                    }
                }
                let mut tc = TestCase::new(c.case.clone(), status);
                if c.flaky() {
                    tc.add_property((
                        "flaky".to_string(),
                        format!("passed {} of {} tries", c.passes(), c.tries()),
                    ));
                }
                tc.set_classname(classname.clone())
                    .set_time(Duration::from_secs_f64(c.duration_s.max(0.0)));
                suite.add_test_case(tc);
            }
            if let Some(e) = exp_delta.filter(|e| e.regressed) {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(format!(
                    "mean score {} (tolerance {:.1} points)",
                    score_change(e.baseline, e.candidate),
                    comparison.map(|c| c.tolerance).unwrap_or(0.0) * 100.0
                ))
                .set_type("regression");
                let mut tc = TestCase::new("mean score", s);
                tc.set_classname(classname.clone()).set_time(Duration::ZERO);
                suite.add_test_case(tc);
            }
            // A cost, tokens or latency past its allowed rise: a failed test of its own,
            // named after the measure, in the gate's words.
            for r in comparison.iter().flat_map(|c| &c.verdict.reasons) {
                if let Reason::Rose {
                    contender,
                    dataset,
                    measure,
                    ..
                } = r
                    && contender.key() == key
                    && *dataset == exp.dataset
                {
                    let words = super::verdict::reason_text(r);
                    let label =
                        format!("{}: ", super::format::experiment_label(contender, dataset));
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(words.strip_prefix(&label).unwrap_or(&words).to_string())
                        .set_type("regression");
                    let mut tc = TestCase::new(measure.as_str(), s);
                    tc.set_classname(classname.clone()).set_time(Duration::ZERO);
                    suite.add_test_case(tc);
                }
            }
            report.add_test_suite(suite);
        }
        match report.to_string() {
            // XML 1.0 allows no control character but tab, newline and carriage return,
            // and a CI view would show the rest raw: each is shown as text.
            Ok(xml) => crate::text::visible(&without_testsuites_skipped(&xml)).into_owned(),
            Err(e) => format!("<!-- could not write JUnit XML: {e} -->\n"),
        }
    }
}

/// The Jenkins xUnit schema has no `skipped` attribute on `<testsuites>` (only on each
/// `<testsuite>`): it is taken off the root element.
fn without_testsuites_skipped(xml: &str) -> String {
    let Some(start) = xml.find("<testsuites") else {
        return xml.to_string();
    };
    let end = xml[start..].find('>').map_or(xml.len(), |e| start + e);
    let head = &xml[start..end];
    let Some(k) = head.find(" skipped=\"") else {
        return xml.to_string();
    };
    let close = head[k + 10..]
        .find('"')
        .map_or(head.len(), |c| k + 10 + c + 1);
    format!("{}{}{}", &xml[..start + k], &head[close..], &xml[end..])
}

/// A regression's body: the score change and the output's diff against the baseline.
fn regression_body(d: Option<&CaseDelta>, c: &crate::results::CaseResult) -> String {
    let mut body = format!(
        "score {}",
        score_change(d.and_then(|d| d.baseline_score), c.score)
    );
    if !c.failed_thresholds.is_empty() {
        body.push_str(&format!("\nfailed: {}", c.failed_thresholds.join(", ")));
    }
    if let Some(diff) = d.and_then(super::diff::output_diff) {
        body.push_str("\n\n");
        body.push_str(&diff);
    }
    body
}

fn score_change(b: Option<f64>, c: Option<f64>) -> String {
    let p = super::format::pct;
    match (b, c) {
        (Some(b), Some(c)) => format!(
            "{} → {} ({:+.1} points)",
            p(Some(b)),
            p(Some(c)),
            (c - b) * 100.0
        ),
        _ => format!("{} → {}", p(b), p(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::compare;
    use crate::results::BaselineInfo;
    use crate::results::testing::{case, run};

    #[test]
    fn junit_report() {
        let base = run(
            "base",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("ok", Some(0.9), Some(true)),
                case("slips", Some(0.9), Some(true)),
                case("breaks", Some(0.9), Some(true)),
            ],
        );
        let mut slips = case("slips", Some(0.5), Some(false));
        slips.failed_thresholds = vec!["accuracy 0.50 < 0.80".into()];
        let mut breaks = case("breaks", None, None);
        breaks.error =
            crate::results::testing::error("cassette miss: no recording of this request");
        let cand = run(
            "cand",
            "feature-x",
            "2026-01-02T00:00:00Z",
            vec![case("ok", Some(0.9), Some(true)), slips, breaks],
        );
        let info = BaselineInfo {
            id: "base".into(),
            branch: Some("main".into()),
            commit: Some("abc1234".into()),
            started_at: "2026-01-01T00:00:00Z".parse().expect("a time"),
            reference: "main".into(),
        };
        let c = compare(Some((&base, info)), &cand, 0.02);
        insta::assert_snapshot!(Junit.render(&cand, Some(&c)));
    }

    #[test]
    fn junit_suits_jenkins_xunit_dotless_classnames_times_and_no_root_skipped() {
        let mut r = run(
            "r",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("ok", Some(0.9), Some(true))],
        );
        r.experiments[0].contender.temperature = Some("0.1".into());
        let c = compare(None, &r, 0.02);
        let xml = Junit.render(&r, Some(&c));
        let root = xml.lines().find(|l| l.starts_with("<testsuites")).unwrap();
        assert!(!root.contains("skipped="), "{root}");
        assert!(
            xml.contains("classname=\"fake/echo [temp 0_1] · tax\""),
            "{xml}"
        );
        for tc in xml
            .lines()
            .filter(|l| l.trim_start().starts_with("<testcase"))
        {
            assert!(tc.contains(" time=\""), "{tc}");
        }
    }
}
