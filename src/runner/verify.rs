//! Offline checks of the selected cases against the scorer (and the adapter's templates),
//! made before any call: `evals verify` lists them, a run refuses to start on one.

use crate::adapter::Adapter;
use crate::score::Scorer;
use crate::suite::{Case, Cases, Suite, discovery};

/// Every problem of the `picked` cases, each naming its file: what loading found (empty
/// input, unparsable expected.json), what the scorer finds (values the schema forbids, bad
/// assertions), and, with an adapter, templates a case cannot fill. `all_loaded` adds the
/// loading problems of cases outside the selection too (a case folder with no id).
pub fn problems(
    suite: &Suite,
    picked: &Cases,
    scorer: &dyn Scorer,
    adapter: Option<&dyn Adapter>,
    all_loaded: bool,
) -> Vec<String> {
    let mut problems: Vec<String> = Vec::new();
    for p in &suite.cases.problems {
        if all_loaded || picked.heads().any(|c| c.key() == p.case) {
            problems.push(p.message.clone());
        }
    }
    // Each case is parsed to be checked (the suite holds JSONL cases as their lines): a
    // large suite is checked on every core, each taking a run of cases, in order.
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(picked.len() / 1000)
        .max(1);
    let per = picked.len().div_ceil(threads);
    let check = |from: usize| {
        let mut out = Vec::new();
        for i in from..(from + per).min(picked.len()) {
            match picked.get(i) {
                Ok(case) => case_problems(suite, &case, scorer, adapter, &mut out),
                Err(changed) => out.push(changed.to_string()),
            }
        }
        out
    };
    if threads == 1 {
        problems.extend(check(0));
    } else {
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..threads)
                .map(|t| s.spawn(move || check(t * per)))
                .collect();
            for r in runs {
                match r.join() {
                    Ok(found) => problems.extend(found),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        });
    }
    problems
}

/// What [`problems`] finds in one case, pushed onto `out`.
fn case_problems(
    suite: &Suite,
    c: &Case,
    scorer: &dyn Scorer,
    adapter: Option<&dyn Adapter>,
    out: &mut Vec<String>,
) {
    // An unreadable expected.json is reported once, by loading; the scorer would only
    // add "expected.json is missing".
    let expected_unreadable = suite
        .cases
        .problems
        .iter()
        .any(|p| p.case == c.key() && p.file.ends_with("expected.json"));
    if !expected_unreadable {
        let at = expected_file(c, suite);
        for p in scorer.verify(c) {
            out.push(format!("{at}: {p}"));
        }
    }
    if let Some(adapter) = adapter {
        for p in adapter.verify(c) {
            out.push(format!("{}: {p}", c.location_in(&suite.cwd)));
        }
    }
}

/// The file a scorer problem is about: `expected.json` beside the input, or the JSONL line.
fn expected_file(c: &Case, suite: &Suite) -> String {
    if c.line.is_some() {
        return c.location_in(&suite.cwd);
    }
    let p = c.source.with_file_name("expected.json");
    discovery::display_path(&p, &suite.cwd)
}

#[cfg(test)]
mod tests {
    use crate::suite::Suite;

    #[test]
    fn a_large_suite_checked_on_every_core_lists_its_problems_in_case_order() {
        let tmp = tempfile::tempdir().unwrap();
        let evals = tmp.path().join("evals");
        std::fs::create_dir_all(evals.join("datasets/d")).unwrap();
        std::fs::write(
            evals.join(".llm-evals.config.yml"),
            "request_types: [prompt]\nscorer: { kind: fields, schema: { a: string } }\n",
        )
        .unwrap();
        // Every 7th case has no expected answer: a problem the scorer names.
        let lines: String = (0..5000)
            .map(|i| {
                let case = if i % 7 == 0 {
                    serde_json::json!({"id": format!("c{i:04}"), "input": "x"})
                } else {
                    serde_json::json!({"id": format!("c{i:04}"), "input": "x", "expected": {"a": "y"}})
                };
                format!("{case}\n")
            })
            .collect();
        std::fs::write(evals.join("datasets/d/cases.jsonl"), lines).unwrap();
        let suite = Suite::load(&evals.join(".llm-evals.config.yml"), tmp.path()).unwrap();
        let scorer = crate::score::build(&suite).unwrap();
        let found = super::problems(&suite, &suite.cases.cases, scorer.as_ref(), None, true);
        let one_by_one: Vec<String> = suite
            .cases
            .cases
            .iter()
            .flat_map(|c| {
                let mut out = Vec::new();
                super::case_problems(&suite, &c.unwrap(), scorer.as_ref(), None, &mut out);
                out
            })
            .collect();
        assert_eq!(found.len(), 5000_usize.div_ceil(7));
        assert_eq!(found, one_by_one);
    }
}
