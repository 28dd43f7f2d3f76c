//! What a run tells as it goes, and who listens: the runner emits [`Event`]s, each
//! [`Sink`] consumes them (progress bars, the history store, the JSON snapshot, a tracker of
//! your own), as nextest's reporter does. No sink holds the run's case results: each
//! finished case is appended to the run's [`CaseLog`] (a temporary file), and what needs the
//! cases in order (the snapshot, the history rows, a per-case report) streams them back
//! from it at the end, one at a time, so memory stays flat whatever the suite's size.

use crate::results::{CaseLog, CaseResult, ContenderInfo, ExperimentResult, RunResult};

/// One thing that happened in a run, in the order a sink sees it: the run started, each
/// experiment started, its cases finished (in any order, concurrently), it finished, and
/// the run finished (completed, interrupted or aborted: a stopped run finishes too).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Event<'a> {
    /// Before any case starts.
    RunStarted {
        /// The run's id, as it is stored.
        id: &'a str,
        /// Experiments the plan holds (contender × dataset), numbered from 0 in plan order.
        experiments: usize,
    },
    /// An experiment's first case is about to start.
    ExperimentStarted {
        /// Its number in plan order (contender, then dataset).
        index: usize,
        /// Who runs it.
        contender: &'a ContenderInfo,
        /// Over which dataset.
        dataset: &'a str,
        /// How many cases it plans.
        cases: usize,
    },
    /// One case finished (scored, or an error of the case).
    CaseFinished {
        /// The experiment's number.
        experiment: usize,
        /// The case's position in its experiment (cases finish out of order).
        position: usize,
        /// Its result, secrets already scrubbed.
        case: &'a CaseResult,
    },
    /// Every case of the experiment that was going to run has. Its figures are final except
    /// the weighted score, which needs the whole table (see `RunFinished`).
    ExperimentFinished {
        /// The experiment's number.
        index: usize,
        /// Its figures (`cases` empty).
        result: &'a ExperimentResult,
    },
    /// The run is assembled: its info (status included) and experiments with their figures;
    /// `run.experiments[i].cases` are empty, the cases are in `cases`, in order.
    RunFinished {
        /// The assembled run.
        run: &'a RunResult,
        /// Its case results.
        cases: &'a CaseLog,
    },
}

/// Something that listens to a run. Cases finish on many worker tasks at once, so a sink
/// is shared (`&self`, `Send + Sync`) and keeps its own state behind a lock if it has any.
/// Keep `CaseFinished` cheap: it runs on the worker that finished the case.
pub trait Sink: Send + Sync {
    /// Called for every event of the run.
    fn event(&self, event: &Event<'_>);
}

/// Every sink of a run, told each event in turn.
#[derive(Clone, Default)]
pub struct Sinks(Vec<std::sync::Arc<dyn Sink>>);

impl std::fmt::Debug for Sinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sinks({} sinks)", self.0.len())
    }
}

impl Sinks {
    /// No sink.
    pub fn new() -> Sinks {
        Sinks(Vec::new())
    }

    /// Adds a sink; it hears events after the ones added before it.
    pub fn push(&mut self, sink: std::sync::Arc<dyn Sink>) {
        self.0.push(sink);
    }

    /// Adds every sink of `other`, after these.
    pub fn extend(&mut self, other: Sinks) {
        self.0.extend(other.0);
    }

    /// Tells every sink.
    pub fn emit(&self, event: Event<'_>) {
        for s in &self.0 {
            s.event(&event);
        }
    }
}
