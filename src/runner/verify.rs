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
    for c in picked.iter() {
        let c = &c;
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
