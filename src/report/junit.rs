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
use crate::error::{Error, Result};
use crate::results::{
    CaseDelta, CaseResult, CaseSource, CaseStatus, Comparison, Reason, RunResult,
};

/// JUnit XML for CI test views: a test suite per experiment, a test case per case.
#[derive(Debug)]
pub struct Junit;

impl Report for Junit {
    fn write(
        &self,
        run: &RunResult,
        cases: CaseSource<'_>,
        comparison: Option<&Comparison>,
        out: &mut dyn std::io::Write,
    ) -> Result<()> {
        // The changed cases only (the comparison holds them): bounded by the changes.
        let deltas: HashMap<(String, &str, &str), &CaseDelta> = comparison
            .iter()
            .flat_map(|c| &c.cases)
            .map(|d| ((d.contender.key(), d.dataset.as_str(), d.case.as_str()), d))
            .collect();
        // The frame first: each suite with its counts (read from the cases, as the root's
        // and each suite's attributes come before their test cases) and its other tests,
        // a placeholder where its cases go. Then the frame written, each suite's cases
        // streamed into its placeholder, one test case at a time.
        let mut report = JunitReport::new(format!("evals check: {}", run.run.suite));
        let mut with_cases = Vec::new();
        for (i, exp) in run.experiments.iter().enumerate() {
            let name = format!("{} · {}", contender_label(&exp.contender), exp.dataset);
            // Jenkins reads a dot in a classname as a package (`temp 0.1` would make one).
            let classname = name.replace('.', "_");
            let mut suite = TestSuite::new(name.clone());
            suite.set_time(Duration::from_secs_f64(exp.time_s.max(0.0)));
            let key = exp.contender.key();
            let mut counted = TestSuite::new("");
            for c in cases.cases(i)? {
                let (_, c) = c?;
                let d = deltas.get(&(key.clone(), exp.dataset.as_str(), c.case.as_str()));
                let tc = test_case(&c, d.copied(), &classname);
                counted.add_test_case(TestCase::new("", tc.status));
                counted.test_cases.clear();
            }
            if counted.tests > 0 {
                suite.add_test_case(TestCase::new(PLACEHOLDER, TestCaseStatus::success()));
                suite.tests += counted.tests - 1;
                suite.failures += counted.failures;
                suite.errors += counted.errors;
                suite.skipped += counted.skipped;
                with_cases.push((i, classname.clone()));
            }
            for tc in suite_tests(exp, comparison, &key, &classname) {
                suite.add_test_case(tc);
            }
            report.add_test_suite(suite);
        }
        let frame = xml(&report)?;
        let placeholder = piece(TestCase::new(PLACEHOLDER, TestCaseStatus::success()))?;
        let mut parts = frame.split(placeholder.as_str());
        let mut put = |text: &str| -> Result<()> {
            // XML 1.0 allows no control character but tab, newline and carriage return,
            // and a CI view would show the rest raw: each is shown as text.
            super::put(out, text)
        };
        put(&without_testsuites_skipped(
            parts.next().unwrap_or_default(),
        ))?;
        for (i, classname) in with_cases {
            let exp = &run.experiments[i];
            let key = exp.contender.key();
            for c in cases.cases(i)? {
                let (_, c) = c?;
                let d = deltas.get(&(key.clone(), exp.dataset.as_str(), c.case.as_str()));
                put(&piece(test_case(&c, d.copied(), &classname))?)?;
            }
            put(parts.next().unwrap_or_default())?;
        }
        Ok(())
    }
}

/// The name of the test case standing where a suite's cases go in the frame.
const PLACEHOLDER: &str = "evals: the cases go here";

/// A report as XML.
fn xml(report: &JunitReport) -> Result<String> {
    report
        .to_string()
        .map_err(|e| Error::Failed(format!("could not write JUnit XML: {e}")))
}

/// The text of a test case as it is in a report: a line of its own, indented in its suite.
fn piece(tc: TestCase) -> Result<String> {
    let mut report = JunitReport::new("x");
    let mut suite = TestSuite::new("x");
    suite.add_test_case(tc);
    report.add_test_suite(suite);
    let text = xml(&report)?;
    let open = text
        .find("<testsuite ")
        .and_then(|at| text[at..].find('\n').map(|n| at + n));
    let close = text.rfind("\n    </testsuite>");
    match (open, close) {
        (Some(open), Some(close)) if open <= close => Ok(text[open..close].to_string()),
        _ => Err(Error::Failed(format!(
            "could not write JUnit XML: a test case's text not found in {text}"
        ))),
    }
}

/// Case `c`'s test case: an error, a regression, a failed threshold, else a pass (with its
/// failed tries when it is flaky).
fn test_case(c: &CaseResult, d: Option<&CaseDelta>, classname: &str) -> TestCase {
    let status = if let Some(err) = &c.error {
        // The attribute gets the first line; the whole message (a miss's diff included)
        // goes in the element's text, where newlines survive.
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
        s.set_message(err.message.lines().next().unwrap_or("error").to_string())
            .set_type("error")
            .set_description(err.message.clone());
        s
    } else if d.is_some_and(|d| d.status == CaseStatus::Regressed) {
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
    // A flaky case (`--repeat K`: some tries passed, some failed) that passes on most
    // tries is a pass with a `<flakyFailure>` per failed try, as surefire writes a test
    // that passed on a rerun.
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
    tc.set_classname(classname.to_string())
        .set_time(Duration::from_secs_f64(c.duration_s.max(0.0)));
    tc
}

/// An experiment's tests after its cases: its mean score when it regressed, and each
/// cost, tokens or latency past its allowed rise.
fn suite_tests(
    exp: &crate::results::ExperimentResult,
    comparison: Option<&Comparison>,
    key: &str,
    classname: &str,
) -> Vec<TestCase> {
    let mut tests = Vec::new();
    let exp_delta = comparison.and_then(|c| {
        c.experiments
            .iter()
            .find(|e| e.contender.key() == key && e.dataset == exp.dataset)
    });
    if let Some(e) = exp_delta.filter(|e| e.regressed) {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(format!(
            "mean score {} (tolerance {:.1} points)",
            score_change(e.baseline, e.candidate),
            comparison.map(|c| c.tolerance).unwrap_or(0.0) * 100.0
        ))
        .set_type("regression");
        let mut tc = TestCase::new("mean score", s);
        tc.set_classname(classname.to_string())
            .set_time(Duration::ZERO);
        tests.push(tc);
    }
    // A cost, tokens or latency past its allowed rise: a failed test of its own, named
    // after the measure, in the gate's words.
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
            let label = format!("{}: ", super::format::experiment_label(contender, dataset));
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(words.strip_prefix(&label).unwrap_or(&words).to_string())
                .set_type("regression");
            let mut tc = TestCase::new(measure.as_str(), s);
            tc.set_classname(classname.to_string())
                .set_time(Duration::ZERO);
            tests.push(tc);
        }
    }
    tests
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
