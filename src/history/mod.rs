//! Run history: where a run came from (git) and, in the SQLite store, every run kept.

pub mod git;
pub mod store;

pub use store::{History, RunFilter, RunSummary};
