//! Suites written from other tools' configs: [`promptfoo`] (`evals import promptfoo`).
//! Each importer reads the foreign files into an [`Imported`] suite in memory, listing
//! what it could not translate with file and line; [`write()`] puts it on disk whole or not
//! at all.

pub mod node;
pub mod promptfoo;

mod write;

pub use promptfoo::{Imported, Untranslated};
pub use write::write;
