//! Your own scorer, through the library: evaluates the toy suite (two fake models, offline,
//! nothing recorded or called) with a keyword scorer beside the config's `fields` scorer,
//! and prints the leaderboard the CLI prints.
//!
//! ```sh
//! cargo run --example own_scorer
//! ```

use std::sync::Arc;

use llm_evals::report::Report;
use llm_evals::report::{Terminal, Totals};
use llm_evals::results::{Diagnostic, MetricDef, Reply, Score};
use llm_evals::runner::{RunOptions, evaluate};
use llm_evals::score::{Scorer, ScorerChoice};
use llm_evals::suite::{Case, Suite};

/// Does the reply name the thing the case is about (its expected `name`), and is it brief?
struct NamesIt {
    /// A reply of at most this many characters is brief.
    brief_chars: usize,
}

impl Scorer for NamesIt {
    fn metrics(&self) -> Vec<MetricDef> {
        vec![
            MetricDef {
                name: "names_it".into(),
                description: "the reply names the thing (its expected name)".into(),
                primary: true,
                higher_is_better: true,
            },
            MetricDef {
                name: "brief".into(),
                description: format!("the reply is at most {} characters", self.brief_chars),
                primary: false,
                higher_is_better: true,
            },
        ]
    }

    fn score(&self, case: &Case, reply: &Reply) -> Score {
        let want = expected_name(case);
        let raw = reply.raw.as_deref().unwrap_or("");
        // A reply the model failed to give scores 0, as every scorer does.
        let names_it = reply.error.is_none()
            && want
                .as_deref()
                .is_some_and(|w| raw.to_lowercase().contains(&w.to_lowercase()));
        let value = if names_it { 1.0 } else { 0.0 };
        // No expected name (a color case has one too, but a case might not): "does not
        // apply", skipped in means, never zeroed.
        let names_metric = want.as_ref().map(|_| value);
        let brief = raw.chars().count() <= self.brief_chars;
        let mut diagnostics = Vec::new();
        if let (Some(w), false) = (&want, names_it) {
            diagnostics.push(Diagnostic {
                field: "names_it".into(),
                want: w.clone().into(),
                got: raw.into(),
                outcome: "missed".into(),
            });
        }
        Score {
            value,
            metrics: [
                ("names_it".to_string(), names_metric),
                ("brief".to_string(), Some(if brief { 1.0 } else { 0.0 })),
            ]
            .into(),
            diagnostics,
            passed: None,
        }
    }

    fn verify(&self, _case: &Case) -> Vec<String> {
        Vec::new()
    }

    fn summary(&self, case: &Case) -> String {
        match expected_name(case) {
            Some(name) => format!("names '{name}'"),
            None => "no name".into(),
        }
    }
}

/// The case's expected `name` field, if it has one.
fn expected_name(case: &Case) -> Option<String> {
    case.expected
        .as_ref()?
        .get("name")?
        .as_str()
        .map(str::to_string)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = std::env::current_dir()?;
    // The toy suite ships with the repository: run this from its root.
    let config = cwd.join("fixtures/toy/evals/.llm-evals.config.yml");
    let suite = Suite::load(&config, &cwd)?;
    // Beside the config's `fields` scorer, whose `field_accuracy` still ranks.
    // `ScorerChoice::Replace` would use this scorer alone.
    let names_it = ScorerChoice::Add(Arc::new(NamesIt { brief_chars: 120 }));
    let run = evaluate(&suite, RunOptions::default().scorer(names_it))?;
    let leaderboard = Terminal {
        color: false,
        breakdown: false,
        totals: Totals::Overall,
        width: None,
        explain: true,
    }
    .render(&run, None);
    print!("{leaderboard}");
    Ok(())
}
