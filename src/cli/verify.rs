use super::args::SelectArgs;
use super::output::Out;
use crate::adapter::Adapter;
use crate::error::{Result, exit};
use crate::score::Scorer;
use crate::suite::{Case, Suite, cases, discovery};

/// `evals verify`: offline checks; exit 1 when any case has a problem.
pub fn run(suite: &Suite, sel: &SelectArgs, out: &Out) -> Result<i32> {
    let scorer = crate::score::build(suite)?;
    let picked = cases::select(&suite.cases, &super::cases::selection(sel))?;
    let adapter = crate::adapter::build(suite)?;
    let everything = sel.datasets.is_empty() && sel.cases.is_empty() && sel.tags.is_empty();
    let problems = problems(suite, &picked, scorer.as_ref(), Some(&adapter), everything);
    for p in &problems {
        out.line(p);
    }
    for w in large_inputs(suite, &picked) {
        out.warn(&w);
    }
    if problems.is_empty() {
        out.note(&format!("verified {} cases: no problems", picked.len()));
        Ok(exit::OK)
    } else {
        out.note(&format!(
            "{} problems in {} cases",
            problems.len(),
            picked.len()
        ));
        Ok(exit::FAILED)
    }
}

/// Every problem of the `picked` cases, each naming its file: what loading found (empty
/// input, unparsable expected.json), what the scorer finds (values the schema forbids, bad
/// assertions), and, with an adapter, templates a case cannot fill. `all_loaded` adds the
/// loading problems of cases outside the selection too (a case folder with no id).
pub fn problems(
    suite: &Suite,
    picked: &[Case],
    scorer: &dyn Scorer,
    adapter: Option<&Adapter>,
    all_loaded: bool,
) -> Vec<String> {
    let mut problems: Vec<String> = Vec::new();
    for p in &suite.cases.problems {
        if all_loaded || picked.iter().any(|c| c.key() == p.case) {
            problems.push(p.message.clone());
        }
    }
    for c in picked {
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
                problems.push(format!("{at}: {p}"));
            }
        }
        if let Some(adapter) = adapter {
            for p in adapter.verify(c) {
                problems.push(format!("{}: {p}", c.location_in(&suite.cwd)));
            }
        }
    }
    problems
}

/// The file a scorer problem is about: `expected.json` beside the input, or the JSONL line.
fn expected_file(c: &Case, suite: &Suite) -> String {
    if c.line.is_some() {
        return c.location_in(&suite.cwd);
    }
    let p = c.source.with_file_name("expected.json");
    discovery::display_path(&p, &suite.cwd)
}

/// An `input.txt` over this many bytes is a warning: every call sends it, every result and
/// every cassette holds it.
pub const LARGE_INPUT_BYTES: u64 = 1024 * 1024;

/// A warning for each picked case whose `input.txt` is over [`LARGE_INPUT_BYTES`], naming the
/// file and its size. Not a problem: a long document may be the point of the case.
fn large_inputs(suite: &Suite, picked: &[Case]) -> Vec<String> {
    picked
        .iter()
        .filter(|c| c.line.is_none())
        .filter_map(|c| {
            let size = std::fs::metadata(&c.source).ok()?.len();
            (size > LARGE_INPUT_BYTES).then(|| {
                format!(
                    "{}: the input is {}, over {}: every call sends it and every result and \
                     cassette keeps it; trim it if the case does not need it all",
                    discovery::display_path(&c.source, &suite.cwd),
                    crate::cassette::human_bytes(size),
                    crate::cassette::human_bytes(LARGE_INPUT_BYTES)
                )
            })
        })
        .collect()
}
