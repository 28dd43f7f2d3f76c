//! The one result model: a run, its experiments (contender × dataset), their case results.
//!
//! The runner produces it; history stores it; the gate compares two of them; every report
//! renders it. Its JSON form, the snapshot, is kept apart in [`snapshot`]: versioned,
//! checked when read, and the same bytes whichever writer writes it.

pub(crate) mod aggregate;
mod caselog;
mod comparison;
pub mod components;
mod model;
mod settings;
mod shard;
pub mod snapshot;
pub mod stats;
#[cfg(test)]
pub(crate) mod testing;
pub mod time;
mod tools;
pub mod trajectory;

pub use caselog::{CaseLog, CaseReader, CaseSource, Cases, SourceCases, unreadable, write_json};
pub use comparison::*;
pub use components::Component;
pub use model::*;
pub use settings::{CaseKeys, Limits, Selection, Settings};
pub use shard::Shard;
pub use snapshot::{FormatVersion, SNAPSHOT_FORMAT};
pub use time::Timestamp;
pub use tools::ToolCall;
pub use trajectory::{Step, StepKind};
