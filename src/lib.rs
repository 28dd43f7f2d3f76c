//! `evals`: a record/replay regression gate for LLM evaluation suites.
//!
//! The library owns all logic; the binaries parse arguments and map errors to exit codes.
//! See ARCHITECTURE.md for the module map and the data flow.
//!
//! From Rust: load a [`suite::Suite`], run it with [`runner::evaluate`] (replay by default;
//! your own [`score::Scorer`] in place of the config's or beside them) and render the
//! [`results::RunResult`] with any [`report::Report`]. `examples/own_scorer.rs` shows it.
//! The rest of the public surface is the CLI's and carries no stability promise yet.

#![warn(missing_docs, missing_debug_implementations, unnameable_types)]

pub mod adapter;
mod blocking;
pub mod cassette;
#[cfg(feature = "dashboard")]
pub mod dashboard;
pub mod env;
pub mod error;
pub(crate) mod fingerprint;
pub mod fs;
pub mod gate;
pub mod history;
pub mod provider;
pub mod report;
pub mod results;
pub mod runner;
pub mod score;
pub mod secrets;
pub(crate) mod suggest;
pub mod suite;
pub mod text;
#[cfg(feature = "trackers")]
pub mod tracker;
pub(crate) mod worker;
