//! Run history: where a run came from (git) and, in the SQLite store, every run kept.

pub mod git;
