//! The run plan: what the flags and the config decided, checked once before any call.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::suite::{Cases, Lineup, Suite};

/// A validated run: what will be called, how many at a time. Built from flags by the CLI.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The suite's settings, without its cases (the plan holds the selected ones).
    pub suite: Arc<Suite>,
    /// The contenders to run, and those refused (each warned about when the run starts).
    pub lineup: Lineup,
    /// The selected cases (sharing the suite's, each parsed when a worker starts it).
    pub cases: Cases,
    /// Cases in flight per experiment.
    pub parallelism: usize,
    /// Experiments at a time; `None` means all.
    pub concurrency: Option<usize>,
    /// When the cases are one slice of the selection (`check --shard K/N`): which, and
    /// where they stand in it ([`super::shard::slice`]).
    pub shard: Option<crate::results::Shard>,
}

impl RunPlan {
    /// Checks what the flags gave: a lineup entry naming a model its provider does not have
    /// (a `-m`), or `-p 0`, is a usage error. `parallelism` defaults to the config's
    /// `defaults.parallelism`, else 4; `concurrency` to the machine's cores, and `Some(0)`
    /// means all experiments at once.
    pub fn new(
        suite: &Suite,
        lineup: Lineup,
        cases: Cases,
        parallelism: Option<usize>,
        concurrency: Option<usize>,
    ) -> Result<RunPlan> {
        // The config's entries were checked when it loaded: these came from `-m`.
        if let Some(why) = lineup.unknown.first() {
            return Err(Error::Usage(why.clone()));
        }
        if parallelism == Some(0) {
            return Err(Error::Usage("-p 0: parallelism must be at least 1".into()));
        }
        // `defaults.parallelism: 0` is refused when the config loads.
        let parallelism = parallelism
            .or(suite.config.defaults.parallelism)
            .unwrap_or(4)
            .max(1);
        let concurrency = match concurrency {
            Some(0) => None,
            Some(n) => Some(n),
            None => Some(
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(2),
            ),
        };
        Ok(RunPlan {
            // The runner reads settings from the suite and cases from the plan.
            suite: Arc::new(suite.without_cases()),
            lineup,
            cases,
            parallelism,
            concurrency,
            shard: None,
        })
    }

    /// `-j` as the plan shows it: the number, or `all`.
    pub(crate) fn concurrency_label(&self) -> String {
        match self.concurrency {
            Some(n) => n.to_string(),
            None => "all".into(),
        }
    }

    /// The datasets of the selected cases, in order.
    pub fn datasets(&self) -> Vec<String> {
        self.cases.datasets()
    }
}
