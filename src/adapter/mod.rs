//! Adapters: what the model sees. The built-in prompt adapter renders templates with the
//! case and parses the reply; the exec adapter runs your own program, which calls the model
//! through the loopback gateway. An unparsable reply is the model's failure (scored 0); a
//! crashed adapter is an error of the case.

pub mod exec;
pub mod gateway;
mod prompt;
#[cfg(target_os = "linux")]
mod reap;

pub use exec::ExecAdapter;
pub use prompt::PromptAdapter;

use crate::error::Result;
use crate::suite::config::AdapterConfig;
use crate::suite::{Case, Suite};

/// The suite's adapter.
pub enum Adapter {
    Prompt(PromptAdapter),
    Exec(ExecAdapter),
}

impl Adapter {
    /// Offline problems of a case (a template it cannot fill). An exec adapter's program is
    /// not run offline: nothing to check.
    pub fn verify(&self, case: &Case) -> Vec<String> {
        match self {
            Adapter::Prompt(p) => p.verify(case),
            Adapter::Exec(_) => vec![],
        }
    }

    /// The prompt adapter, whose requests can be predicted (`cassettes status`).
    pub fn prompt(&self) -> Option<&PromptAdapter> {
        match self {
            Adapter::Prompt(p) => Some(p),
            Adapter::Exec(_) => None,
        }
    }
}

/// Builds the suite's adapter.
pub fn build(suite: &Suite) -> Result<Adapter> {
    match &suite.adapter {
        AdapterConfig::Prompt { system, user, json } => Ok(Adapter::Prompt(PromptAdapter::new(
            suite,
            system.as_deref(),
            user.as_deref(),
            *json,
        )?)),
        AdapterConfig::Exec {
            command,
            env,
            pass_env,
        } => Ok(Adapter::Exec(ExecAdapter::new(
            suite, command, env, pass_env,
        )?)),
    }
}
