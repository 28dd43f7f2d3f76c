//! The `evals` command line, end to end: one test binary, a small builder harness
//! (`harness.rs`), fixture suites written into temp dirs, the fake provider, and wiremock
//! for every HTTP peer. No test touches the network.

mod harness;
mod mock;

mod cases;
mod cassettes;
mod comment;
mod config_errors;
mod discovery;
mod exec;
mod faults;
mod forge;
mod gate;
mod lineup;
mod providers;
mod run;
mod secrets;
mod snapshots;
mod tags;
mod thresholds;
mod typesafe;
mod verify;
