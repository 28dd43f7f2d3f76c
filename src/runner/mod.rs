//! The runner: experiments (contender × dataset) `-j` at a time, cases `-p` at a time
//! inside each, on a tokio runtime the runner owns. It produces the one result model:
//! [`evaluate`] (or [`Prepared`]) turns a suite into the assembled [`crate::results::RunResult`].

mod cassettes;
mod control;
pub mod drift;
mod evaluate;
mod events;
mod execute;
mod plan;
mod ratelimit;
pub(crate) mod retry;
pub mod shard;
pub(crate) mod sinks;

pub use sinks::{HistorySink, LeaderboardSink, SnapshotSink};
mod upstream;
mod verify;

pub use crate::results::{CaseLog, RunStatus, Selection};
/// Kills every live worker process (an exec adapter's or an exec scorer's), its process
/// group and what it started, at once and without waiting: for a program about to exit
/// (the CLI's Ctrl-C watchdog), since a worker's own process group never gets the
/// terminal's Ctrl-C.
pub use crate::worker::kill_all as kill_workers;
pub use cassettes::cassette_status;
pub use control::{Cancel, OnStreak, Quiet};
pub use evaluate::{
    CollectedNotices, Hooks, NoNotices, Notice, Notices, Prepared, RunOptions, StderrNotices,
    Streamed, evaluate, evaluate_async,
};
pub use events::{Event, Sink, Sinks};
pub use execute::pricing;
pub(crate) use execute::{cassette_key, execute, execute_async};
pub use plan::RunPlan;
pub(crate) use upstream::Scheduled;
pub use verify::problems;
