use super::args::SelectArgs;
use super::exit;
use super::output::Out;
use llm_evals::error::Result;
use llm_evals::suite::{Cases, Suite, cases, discovery};

/// `evals verify`: offline checks; exit 1 when any case has a problem.
pub(crate) fn run(suite: &Suite, sel: &SelectArgs, out: &Out) -> Result<i32> {
    let scorer = llm_evals::score::build(suite)?;
    let picked = cases::select(&suite.cases, &super::cases::selection(sel))?;
    let adapter = llm_evals::adapter::build(suite, &llm_evals::env::Environment::default())?;
    let everything = sel.datasets.is_empty() && sel.cases.is_empty() && sel.tags.is_empty();
    let problems = llm_evals::runner::problems(
        suite,
        &picked,
        scorer.as_ref(),
        Some(adapter.as_ref()),
        everything,
    );
    for p in &problems {
        out.line(p);
    }
    for w in large_inputs(suite, &picked) {
        out.warn(&w);
    }
    if problems.is_empty() {
        out.note(&format!(
            "verified {}: no problems",
            llm_evals::text::plural(picked.len(), "case", "cases")
        ));
        Ok(exit::OK)
    } else {
        out.note(&format!(
            "{} in {}",
            llm_evals::text::plural(problems.len(), "problem", "problems"),
            llm_evals::text::plural(picked.len(), "case", "cases")
        ));
        Ok(exit::FAILED)
    }
}

/// An `input.txt`, or a JSONL case's line, over this many bytes is a warning: every call
/// sends it, every result and every cassette holds it.
pub(crate) const LARGE_INPUT_BYTES: u64 = 1024 * 1024;

/// A warning for each picked case whose `input.txt`, or JSONL line, is over
/// [`LARGE_INPUT_BYTES`], naming the file (and line) and its size. Not a problem: a long
/// document may be the point of the case.
fn large_inputs(suite: &Suite, picked: &Cases) -> Vec<String> {
    picked
        .heads()
        .filter_map(|c| {
            let (size, what) = match c.line {
                Some(_) => (c.line_bytes?, "the case's line"),
                None => (std::fs::metadata(c.source).ok()?.len(), "the input"),
            };
            let at = match c.line {
                Some(line) => format!("{}:{line}", discovery::display_path(c.source, &suite.cwd)),
                None => discovery::display_path(c.source, &suite.cwd),
            };
            (size > LARGE_INPUT_BYTES).then(|| {
                format!(
                    "{at}: {what} is {}, over {}: every call sends it and every result and \
                     cassette keeps it; trim it if the case does not need it all",
                    llm_evals::text::human_bytes(size),
                    llm_evals::text::human_bytes(LARGE_INPUT_BYTES)
                )
            })
        })
        .collect()
}
