//! The one result model: a run, its experiments (contender × dataset), their case results.
//!
//! The runner produces it; history stores it; the gate compares two of them; every report
//! renders it. The JSON snapshot is this model serialized as it is (`format` versioned).

pub mod aggregate;
mod caselog;
mod comparison;
mod model;

pub use caselog::{CaseLog, Cases, write_json};
pub use comparison::*;
pub use model::*;
