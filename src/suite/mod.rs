//! The suite: config (YAML → validated model), discovery, cases (disk + JSONL), lineup.

mod case;
pub mod schema;

pub use case::{Case, CaseInput};
pub use schema::{FieldSpec, FieldType, Schema};
