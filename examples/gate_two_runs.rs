//! Store two runs and gate the second against the first, as `evals check --baseline main`
//! does in CI: a run on `main` goes into a SQLite history, a run on a branch whose model
//! got worse is compared with it, and the Markdown a pull request would get is printed.
//!
//! ```sh
//! cargo run --example gate_two_runs
//! ```

use llm_evals::cassette::CallError;
use llm_evals::gate::{CheckPlan, MissingBaseline, Rules};
use llm_evals::provider::{ChatRequest, Completion};
use llm_evals::report::{Format, Terminal};
use llm_evals::suite::{Case, Contender};
use llm_evals::{HistoryStore, Provider, RunOptions, SqliteStore, SuiteBuilder, evaluate};
use serde_json::json;

/// A model that knows the capitals in its list, and says "Lyon" for the rest.
struct Atlas(&'static [(&'static str, &'static str)]);

impl Provider for Atlas {
    fn answer(&self, _: &Contender, case: &Case, _: &ChatRequest) -> Result<Completion, CallError> {
        let city = self
            .0
            .iter()
            .find(|(country, _)| case.id == *country)
            .map_or("Lyon", |(_, city)| city);
        Ok(Completion {
            text: json!({ "city": city }).to_string(),
            ..Completion::default()
        })
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut suite = SuiteBuilder::new("capitals", dir.path())
        .provider("model", json!({ "kind": "atlas", "models": ["v1"] }))
        .adapter(json!({ "kind": "prompt", "user": "The capital of {{ input }}?", "json": true }))
        .scorer(json!({ "kind": "fields", "schema": { "city": "string" } }));
    for (country, city) in [("france", "Paris"), ("italy", "Rome"), ("spain", "Madrid")] {
        suite = suite.case(
            "europe",
            json!({ "id": country, "input": country, "expected": { "city": city } }),
        );
    }
    let suite = suite.build()?;
    let history = dir.path().join(".evals/history.sqlite3");

    // main: every capital right. Stored, it is the baseline of every branch after it.
    let all = &[("france", "Paris"), ("italy", "Rome"), ("spain", "Madrid")];
    let main = evaluate(
        &suite,
        RunOptions::default()
            .branch("main")
            .provider("atlas", Atlas(all)),
    )?;
    SqliteStore::open(&history)?.insert(&main)?;

    // A branch whose model forgot Spain.
    let fewer = &[("france", "Paris"), ("italy", "Rome")];
    let branch = evaluate(
        &suite,
        RunOptions::default()
            .branch("pr-7")
            .provider("atlas", Atlas(fewer)),
    )?;
    let plan = CheckPlan::check(
        Some("main".into()),
        Rules::new(0.02, false)?,
        MissingBaseline::Fail,
    );
    let checked = llm_evals::gate::check(&branch, &plan, &history);

    let markdown = llm_evals::report::render(
        Format::Markdown,
        Terminal::default(),
        &branch,
        Some(&checked.comparison),
    );
    println!("{markdown}");
    println!("passed: {}", checked.passed());
    Ok(())
}
