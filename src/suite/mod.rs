//! The suite: config (YAML → validated model), discovery, cases (disk + JSONL; links.rs
//! judges the symlinks among them; stored.rs holds them compactly), lineup.

pub mod bounds;
mod builder;
mod case;
pub mod cases;
pub mod config;
pub mod discovery;
pub mod lineup;
mod links;
mod load;
pub(crate) mod schema;
mod stored;
pub mod upgrade;
pub(crate) mod yaml;

pub use builder::SuiteBuilder;
pub use case::{Case, CaseInput};
pub use cases::{CaseProblem, CaseSet, Selection};
pub use config::Config;
pub use discovery::Locate;
pub use lineup::{Contender, Lineup, Overrides, ProviderKind, Refusal};
pub use load::{KEY_VARS, Suite, case_fingerprint};
pub use schema::{FieldSpec, FieldType, Schema};
pub use stored::{CaseHead, Cases, Changed};
