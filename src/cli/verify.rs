use super::args::SelectArgs;
use super::output::Out;
use crate::error::{Result, exit};
use crate::suite::{Suite, cases, discovery};

/// `evals verify`: offline checks; exit 1 when any case has a problem.
pub fn run(suite: &Suite, sel: &SelectArgs, out: &Out) -> Result<i32> {
    let scorer = crate::score::build(suite)?;
    let picked = cases::select(&suite.cases, &super::cases::selection(sel))?;
    let adapter = crate::adapter::build(suite)?;
    let mut problems: Vec<String> = Vec::new();
    for p in &suite.cases.problems {
        if picked.iter().any(|c| c.key() == p.case)
            || sel.datasets.is_empty() && sel.cases.is_empty()
        {
            problems.push(p.message.clone());
        }
    }
    for c in &picked {
        if suite.cases.problems.iter().any(|p| p.case == c.key()) {
            continue;
        }
        let at = expected_file(c, suite);
        for p in scorer.verify(c) {
            problems.push(format!("{at}: {p}"));
        }
        for p in adapter.verify(c) {
            problems.push(format!("{}: {p}", c.location_in(&suite.cwd)));
        }
    }
    for p in &problems {
        out.line(p);
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

/// The file a scorer problem is about: `expected.json` beside the input, or the JSONL line.
fn expected_file(c: &crate::suite::Case, suite: &Suite) -> String {
    if c.line.is_some() {
        return c.location_in(&suite.cwd);
    }
    let p = c.source.with_file_name("expected.json");
    discovery::display_path(&p, &suite.cwd)
}
