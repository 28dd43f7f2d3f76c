//! The regression gate: find the baseline a run is judged against, then judge it.
//!
//! `baseline` turns `--baseline main|RUN_ID|run.json` into a stored run, refusing one from
//! the future or with another suite fingerprint; `compare` applies the rules of DESIGN §8
//! and produces the [`Comparison`](crate::results::Comparison) every report renders;
//! `threshold_failures` is the same rule (4) for `run` and `compare`, which have no
//! baseline; `limits` holds the run-wide floors of `--min-score` and `--min-pass-rate`.

pub mod baseline;
pub mod compare;
pub mod limits;

pub use baseline::{MissingBaseline, resolve};
pub use compare::{Rules, compare, compare_with, stopped, threshold_failures};
pub use limits::Limits;
