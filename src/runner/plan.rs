//! The run plan: what the flags and the config decided, checked once before any call.

use std::sync::Arc;

use crate::error::{Error, Result, Setting};
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
    /// Tries per case per contender (`--repeat K`, else `defaults.repeat`, else 1).
    pub repeat: usize,
    /// When the cases are one slice of the selection (`check --shard K/N`): which, and
    /// where they stand in it ([`super::shard::slice`]).
    pub shard: Option<crate::results::Shard>,
}

/// Two contenders whose cassettes would be one folder (`a/b` and `a__b` of one provider:
/// a model's `/` is `__` there) would replay each other's recordings: refused, naming both.
fn shared_cassette_folder(suite: &Suite, lineup: &Lineup) -> Result<()> {
    let folders: Vec<_> = lineup
        .contenders
        .iter()
        .map(|c| super::execute::cassette_key_of(c, "", "").contender_folder())
        .collect();
    for (j, b) in lineup.contenders.iter().enumerate() {
        for (i, a) in lineup.contenders[..j].iter().enumerate() {
            if folders[i] == folders[j] && a.info.key() != b.info.key() {
                return Err(Error::Config(format!(
                    "{}: contenders {} and {} share one cassette folder, {}: each would replay \
                     the other's recordings; rename one of the models (a `/` in a model is \
                     `__` in the folder)",
                    suite.display_path,
                    a.id(),
                    b.id(),
                    folders[i].display()
                )));
            }
        }
    }
    Ok(())
}

impl RunPlan {
    /// Checks what the flags gave: a lineup entry naming a model its provider does not have
    /// (a `-m`), `-p 0`, or `-p`/`-j` past [`crate::suite::bounds`], is a usage error. `parallelism` defaults to the config's
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
            return Err(Error::invalid(
                Setting::Parallelism,
                0,
                "parallelism must be at least 1",
            ));
        }
        // The CLI's parser bounds these first; a library caller's are bounded here.
        use crate::suite::bounds;
        if let Some(p) = parallelism.filter(|&p| p > bounds::MAX_PARALLELISM) {
            return Err(Error::invalid(
                Setting::Parallelism,
                p,
                format!(
                    "at most {} cases in flight per experiment: give a smaller number",
                    bounds::MAX_PARALLELISM
                ),
            ));
        }
        if let Some(j) = concurrency.filter(|&j| j > bounds::MAX_CONCURRENCY) {
            return Err(Error::invalid(
                Setting::Concurrency,
                j,
                format!(
                    "at most {} experiments at a time (0: all): give a smaller number",
                    bounds::MAX_CONCURRENCY
                ),
            ));
        }

        shared_cassette_folder(suite, &lineup)?;
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
            repeat: suite.config.defaults.repeat.unwrap_or(1).max(1),
            shard: None,
        })
    }

    /// The plan with `--repeat K` (when given) in place of `defaults.repeat`; `--repeat 0`,
    /// or past [`crate::suite::bounds::MAX_REPEAT`], is a usage error.
    pub fn with_repeat(mut self, repeat: Option<usize>) -> Result<RunPlan> {
        match repeat {
            Some(0) => Err(Error::invalid(
                Setting::Repeat,
                0,
                "give the tries per case, at least 1",
            )),
            Some(k) if k > crate::suite::bounds::MAX_REPEAT => Err(Error::invalid(
                Setting::Repeat,
                k,
                format!(
                    "at most {} tries per case: give a smaller number",
                    crate::suite::bounds::MAX_REPEAT
                ),
            )),
            Some(k) => {
                self.repeat = k;
                Ok(self)
            }
            None => Ok(self),
        }
    }

    /// `-j` as the plan shows it: the number, or `all`.
    pub fn concurrency_label(&self) -> String {
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
