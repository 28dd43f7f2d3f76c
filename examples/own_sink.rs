//! Your own sink: told every event of a run as it happens (a tracker, a live view, a log).
//! This one prints each case as it finishes and counts the failed ones; the run is the toy
//! suite, offline.
//!
//! ```sh
//! cargo run --example own_sink
//! ```

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use llm_evals::runner::Event;
use llm_evals::{RunOptions, Sink, Suite, evaluate};

/// Prints a line a case, and counts the cases that did not pass.
#[derive(Debug, Default)]
struct Live {
    failed: AtomicUsize,
}

impl Sink for Live {
    fn event(&self, event: &Event<'_>) {
        match event {
            Event::RunStarted { experiments, .. } => println!("run of {experiments} experiments"),
            Event::ExperimentStarted {
                contender,
                dataset,
                cases,
                ..
            } => println!("{} on {dataset}: {cases} cases", contender.id),
            Event::CaseFinished { case, .. } => {
                if case.passed != Some(true) {
                    self.failed.fetch_add(1, Ordering::Relaxed);
                }
                let score = case.score.map_or("error".into(), |s| format!("{s:.2}"));
                println!("  {} {score}", case.case);
            }
            Event::RunFinished { run, .. } => println!("done: {:?}", run.run.status),
            // Experiment ends, and any event a later version adds.
            _ => {}
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let toy = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/toy");
    let suite = Suite::locate(&toy, &Default::default())?;
    let live = Arc::new(Live::default());
    evaluate(&suite, RunOptions::default().sink(live.clone()))?;
    println!("{} cases did not pass", live.failed.load(Ordering::Relaxed));
    Ok(())
}
