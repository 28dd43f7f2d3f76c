//! The runner: experiments (contender × dataset) `-j` at a time, cases `-p` at a time
//! inside each, on a tokio runtime the runner owns. It produces the one result model:
//! [`evaluate`] (or [`Prepared`]) turns a suite into the assembled [`crate::results::RunResult`].

mod cassettes;
mod control;
mod evaluate;
pub mod events;
mod execute;
mod plan;
mod ratelimit;
pub mod retry;
pub mod sinks;
mod upstream;
mod verify;

pub use crate::results::aggregate::{aggregate, makespan};
pub use crate::results::{CaseLog, RunStatus, Selection};
pub use cassettes::cassette_status;
pub use control::{Control, OnStreak, Quiet};
pub use evaluate::{Hooks, Notices, Prepared, RunOptions, StderrNotices, Streamed, evaluate};
pub use events::{Event, Sink, Sinks};
pub use execute::{RunContext, RunOutcome, cassette_key, execute, pricing, run_case, score_into};
pub use plan::RunPlan;
pub use ratelimit::RateLimits;
pub use upstream::Scheduled;
pub use verify::problems;
