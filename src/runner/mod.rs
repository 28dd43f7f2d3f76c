//! The runner: experiments (contender × dataset) `-j` at a time, cases `-p` at a time
//! inside each, on a tokio runtime the runner owns. It produces the one result model:
//! [`evaluate`] (or [`Prepared`]) turns a suite into the assembled [`crate::results::RunResult`].

mod cassettes;
mod control;
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
pub(crate) use cassettes::cassette_status;
pub use control::{Cancel, OnStreak, Quiet};
pub use evaluate::{Hooks, Notices, Prepared, RunOptions, StderrNotices, Streamed, evaluate};
pub use events::{Event, Sink, Sinks};
pub(crate) use execute::{cassette_key, execute, pricing};
pub use plan::RunPlan;
pub(crate) use upstream::Scheduled;
pub(crate) use verify::problems;
