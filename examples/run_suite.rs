//! Run a bundled suite from Rust and print what `evals compare` prints: the tax-intake suite
//! (five contenders, their cassettes committed at the repository's root), replayed offline,
//! with no key and no network, through the same library the CLI uses.
//!
//! ```sh
//! cargo run --example run_suite
//! ```

use std::path::Path;

use llm_evals::report::{Report, Terminal, Totals};
use llm_evals::{RunOptions, Suite, evaluate};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Found as `evals` finds a suite: the config under `fixtures/tax-intake/evals/`.
    let suite = Suite::locate(&root.join("fixtures/tax-intake"), &Default::default())?;
    // Replayed (the default mode): every answer comes from the committed cassettes.
    let run = evaluate(&suite, RunOptions::default())?;
    let leaderboard = Terminal {
        color: false,
        breakdown: false,
        totals: Totals::Overall,
        width: None,
        explain: false,
    }
    .render(&run, None);
    print!("{leaderboard}");
    println!(
        "{} experiments, {} cases each, {} errors",
        run.experiments.len(),
        run.experiments.first().map_or(0, |e| e.cases_total),
        run.total_errors()
    );
    Ok(())
}
