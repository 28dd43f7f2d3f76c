//! The runner: experiments (contender × dataset) `-j` at a time, cases `-p` at a time
//! inside each, on a tokio runtime the runner owns. It produces the one result model.

mod control;
mod execute;
mod plan;
mod ratelimit;
pub mod retry;
mod stats;
mod upstream;

pub use control::{Control, OnStreak, Quiet, RunStatus};
pub use execute::{
    OnCase, RunContext, RunOutcome, cassette_key, execute, pricing, run_case, score_into,
};
pub use plan::RunPlan;
pub use ratelimit::RateLimits;
pub use stats::{aggregate, makespan};
pub use upstream::Scheduled;
