//! Every report written from a case log is the report of the run held whole, byte for byte.

use super::*;
use crate::results::testing::{case, error, experiment, run};
use crate::results::{
    BaselineInfo, CaseError, CaseErrorKind, CaseLog, CaseResult, Diagnostic, Outcome, Repeat,
};

fn miss(id: &str, change: &str) -> CaseResult {
    let mut c = case(id, None, None);
    c.error = Some(CaseError::new(
        CaseErrorKind::Miss,
        format!(
            "no recording matches this request (cassettes/{id}.json)\n  messages[0].content: \"{change}\" → \"y\"\nrun `evals record -c {id}` to record it"
        ),
    ));
    c
}

fn flaky(id: &str) -> CaseResult {
    let mut c = case(id, Some(2.0 / 3.0), Some(true));
    c.repeats = [1.0, 0.0, 1.0]
        .iter()
        .map(|&s| Repeat {
            score: Some(s),
            passed: Some(s >= 0.5),
            error: (s < 0.5).then(|| "cut short".to_string()),
        })
        .collect();
    c
}

/// A run of two contenders on two datasets: passing, failing (diagnostics, thresholds),
/// errored, missed (two causes), flaky and warned cases, variants, inputs, an output with
/// a control character, and for the second contender a case it did not run.
fn candidate() -> RunResult {
    let tax = |parrot: bool| {
        let mut a = case("a", Some(1.0), Some(true));
        a.variant = "complete".into();
        a.input = Some(serde_json::json!("Case a."));
        a.expected = Some(serde_json::json!({ "answer": "1" }));
        let mut b = case("b", Some(0.4), Some(false));
        b.variant = "vague".into();
        b.failed_thresholds = vec!["accuracy 0.40 < 0.80".into()];
        b.diagnostics = vec![Diagnostic {
            field: "filing_status".into(),
            want: serde_json::json!("single"),
            got: serde_json::json!("married"),
            outcome: Outcome::Other("wrong".into()),
        }];
        b.output = Some(serde_json::json!({ "answer": "\u{1b}[31mred" }));
        let mut e = case("e", None, None);
        e.error = error("transport: connection refused");
        e.warnings = vec!["tried to reach example.com in replay".into()];
        let mut cases = vec![
            a,
            b,
            miss("c", if parrot { "p" } else { "x" }),
            flaky("d"),
            e,
        ];
        if parrot {
            cases.remove(3);
            cases[0].score = Some(0.5);
        }
        cases
    };
    let mut r = run("cand", "feature-x", "2026-01-02T00:00:00Z", tax(false));
    let rent = |score| {
        let mut w = case("w", Some(score), Some(true));
        w.warnings = vec!["slow".into(), "slower".into()];
        vec![w, case("v", Some(0.9), Some(true))]
    };
    let mut echo_rent = experiment(rent(1.0));
    echo_rent.dataset = "rent".into();
    let mut parrot_tax = experiment(tax(true));
    parrot_tax.contender.id = "fake/parrot".into();
    let mut parrot_rent = experiment(rent(0.2));
    parrot_rent.dataset = "rent".into();
    parrot_rent.contender.id = "fake/parrot".into();
    r.experiments.extend([echo_rent, parrot_tax, parrot_rent]);
    r
}

/// The candidate's baseline: every case passing, and cases the candidate no longer has.
fn baseline() -> RunResult {
    let mut b = candidate();
    for e in &mut b.experiments {
        for c in &mut e.cases {
            *c = case(&c.case, Some(0.9), Some(true));
        }
        e.cases.push(case("gone", Some(0.5), Some(true)));
    }
    // The parrot's `d`, which it did not run this time: removed, in the row the echo's `d`
    // makes.
    b.experiments[2]
        .cases
        .push(case("d", Some(0.9), Some(true)));
    b.run.id = "base".into();
    b
}

/// `run`'s cases in a case log, at their places in their dataset (the second contender's
/// `d` not run: a hole), and the run without them.
fn logged(run: &RunResult, planned: bool) -> (RunResult, CaseLog) {
    let order = ["a", "b", "c", "d", "e"];
    let place = |e: &crate::results::ExperimentResult, j: usize| match planned && e.dataset == "tax"
    {
        true => order
            .iter()
            .position(|id| *id == e.cases[j].case)
            .expect("a tax case"),
        false => j,
    };
    let sizes: Vec<usize> = run
        .experiments
        .iter()
        .map(|e| match planned && e.dataset == "tax" {
            true => order.len(),
            false => e.cases.len(),
        })
        .collect();
    let log = CaseLog::new(&sizes).unwrap();
    let mut bare = run.clone();
    for (i, e) in run.experiments.iter().enumerate() {
        // Out of order, as workers finish them.
        for j in (0..e.cases.len()).rev() {
            log.push(i, place(e, j), &e.cases[j]);
        }
        bare.experiments[i].cases.clear();
    }
    (bare, log)
}

fn terminals() -> Vec<Terminal> {
    let plain = Terminal {
        color: false,
        breakdown: false,
        totals: Totals::Overall,
        width: None,
        explain: false,
    };
    vec![
        plain,
        Terminal {
            color: true,
            breakdown: true,
            totals: Totals::Both,
            width: Some(80),
            explain: true,
        },
    ]
}

#[test]
fn every_report_written_from_a_case_log_is_the_report_of_the_run_held_whole() {
    let cand = candidate();
    let info = BaselineInfo {
        id: "base".into(),
        branch: Some("main".into()),
        commit: Some("abc1234def".into()),
        started_at: "2026-01-01T00:00:00Z".parse().expect("a time"),
        reference: "main".into(),
    };
    let c = crate::gate::compare(Some((&baseline(), info)), &cand, 0.02);
    assert!(!c.cases.is_empty() && !c.verdict.passed);
    assert!(
        c.cases
            .iter()
            .any(|d| d.status == crate::results::CaseStatus::Removed)
    );
    // At their places (the parrot's tax cases matched by position), and one after another
    // (the parrot's `e` where the echo's `d` is: read into the run for the HTML matrix).
    for planned in [true, false] {
        let (bare, log) = logged(&cand, planned);
        for comparison in [Some(&c), None] {
            for format in [
                Format::Json,
                Format::Markdown,
                Format::Junit,
                Format::Diff,
                Format::Html,
                Format::Terminal,
            ] {
                for term in terminals() {
                    let whole = render(format, term, &cand, comparison);
                    let mut out = Vec::new();
                    write(
                        format,
                        term,
                        &bare,
                        CaseSource::Log(&log),
                        comparison,
                        &mut out,
                    )
                    .unwrap();
                    let streamed = String::from_utf8(out).unwrap();
                    assert_eq!(
                        streamed,
                        whole,
                        "{format:?}, planned {planned}, compared {}",
                        comparison.is_some()
                    );
                }
            }
            if let Some(c) = comparison {
                assert_eq!(
                    verdict::Terminal::of_cases(&bare, CaseSource::Log(&log), c).unwrap(),
                    verdict::Terminal::of(&cand, c)
                );
            }
        }
    }
    // What the reports show of it: the flaky case, the warnings, the misses by cause, the
    // removed case's row in the matrix.
    let md = render(Format::Markdown, Default::default(), &cand, Some(&c));
    assert!(md.contains("### Flaky cases (1)"), "{md}");
    assert!(md.contains("### Warnings (6)"), "{md}");
    assert!(md.contains("2 causes"), "{md}");
    let html = render(Format::Html, Default::default(), &cand, Some(&c));
    assert!(html.contains("\"o\":\"removed\""), "{html}");
    assert!(
        html.contains("\\\\u001b[31mred") || html.contains("\\u001b[31mred"),
        "{html}"
    );
    let xml = render(Format::Junit, Default::default(), &cand, Some(&c));
    assert!(xml.contains("<flakyFailure"), "{xml}");
    assert!(
        xml.contains("tests=\"15\" failures=\"4\" errors=\"4\""),
        "{xml}"
    );
}
