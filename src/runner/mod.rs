//! The runner: experiments (contender × dataset) `-j` at a time, cases `-p` at a time
//! inside each, on a tokio runtime the runner owns. It produces the one result model:
//! [`evaluate`] (or [`Prepared`]) turns a suite into the assembled [`crate::results::RunResult`].

mod cassettes;
mod control;
mod evaluate;
mod execute;
mod plan;
mod ratelimit;
pub mod retry;
mod stats;
mod upstream;
mod verify;

pub use crate::results::RunStatus;
pub use crate::results::Selection;
pub use cassettes::cassette_status;
pub use control::{Control, OnStreak, Quiet};
pub use evaluate::{Hooks, Notices, Prepared, RunOptions, StderrNotices, evaluate};
pub use execute::{
    OnCase, RunContext, RunOutcome, cassette_key, execute, pricing, run_case, score_into,
};
pub use plan::RunPlan;
pub use ratelimit::RateLimits;
pub use stats::{aggregate, makespan};
pub use upstream::Scheduled;
pub use verify::problems;
