//! Adapters: what the model sees. The built-in prompt adapter renders templates with the
//! case and parses the reply; an unparsable reply is the model's failure (scored 0).

mod prompt;

pub use prompt::PromptAdapter;

use crate::error::{Error, Result};
use crate::suite::Suite;
use crate::suite::config::AdapterConfig;

/// Builds the suite's adapter.
pub fn build(suite: &Suite) -> Result<PromptAdapter> {
    match &suite.adapter {
        AdapterConfig::Prompt { system, user, json } => {
            PromptAdapter::new(suite, system.as_deref(), user.as_deref(), *json)
        }
        AdapterConfig::Exec { .. } => Err(Error::Config(format!(
            "{}: adapter kind 'exec' is not available in this version of evals; use `adapter: {{ kind: prompt, ... }}`",
            suite.display_path
        ))),
    }
}
