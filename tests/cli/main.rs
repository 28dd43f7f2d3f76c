//! The `evals` command line, end to end: one test binary, a small builder harness
//! (`harness.rs`), fixture suites written into temp dirs, the fake provider, and wiremock
//! for every HTTP peer. No test touches the network.

mod harness;
mod mock;

mod action;
mod apis;
mod bad_input;
mod bench;
mod book;
mod browser;
mod cases;
mod cassettes;
mod comment;
mod components;
mod config_errors;
mod control_chars;
mod cost_gate;

mod crash;
mod dashboard;
mod discovery;
mod drift;
mod environment;
mod exec;
mod exit_codes;
mod faults;
mod fidelity;
mod five_minutes;
mod forge;
mod frameworks;
mod gate;
mod gateway_edges;
mod help;
mod history;
mod import;
mod interrupts;
mod judge;
mod layers;
mod leaderboard;
mod lineup;
mod mcp;
mod my;
mod mysql;
mod native_tools;
mod payloads;
mod pg;
mod postgres;
mod protocol;
mod providers;
mod repeats;
mod report;
mod reports;
mod run;
mod scoring;
mod sdk;
mod secrets;
mod seed_keys;
mod settings;
mod shards;
mod snapshots;
#[cfg(unix)]
mod symlinks;
mod tags;
mod terminal;
mod thresholds;
mod trackers;
mod truth;
mod typesafe;
mod upgrade;
mod upstreams;
mod verbose;
mod verify;
mod walkthrough;
mod yaml_booleans;
