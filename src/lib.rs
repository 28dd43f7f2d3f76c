//! `evals`: a record/replay regression gate for LLM evaluation suites.
//!
//! The library owns all logic; the binaries parse arguments and map errors to exit codes.
//! See ARCHITECTURE.md for the module map and the data flow.

pub mod adapter;
pub mod cassette;
pub mod cli;
pub mod error;
pub mod gate;
pub mod harden;
pub mod history;
pub mod provider;
pub mod report;
pub mod results;
pub mod runner;
pub mod score;
pub mod secrets;
pub mod suggest;
pub mod suite;
