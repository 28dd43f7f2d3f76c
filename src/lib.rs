//! `evals`: a record/replay regression gate for LLM evaluation suites.
//!
//! The library owns all logic; the binaries parse arguments and map errors to exit codes.
//! See ARCHITECTURE.md for the module map and the data flow.

pub mod cassette;
pub mod error;
pub mod results;
pub mod score;
pub mod suggest;
pub mod suite;
