//! TypeSafe (`typesafe:`, request type `typesafe`): a direct provider shipped with its
//! catalog and its pricing, enough for the lineup, `verify` and the cost column. It cannot
//! send requests yet: the typed request shape (noul, choice, score questions) will be
//! defined by the first suite that declares `request_types: [typesafe]`.

use super::{ChatRequest, Completion, Provider};
use crate::cassette::CallError;
use crate::suite::config::Pricing;
use crate::suite::{Case, Contender};

/// The models TypeSafe serves (its `GET /v1/models`): the moving aliases of Jev.
const MODELS: &[&str] = &["jev-latest", "jev-preview"];

/// TypeSafe's list price, dollars per million tokens: input is billed, output is free.
pub const PRICING: Pricing = Pricing {
    input: 0.042,
    output: 0.0,
    cached_input: None,
};

/// The environment variable holding a TypeSafe key.
pub const KEY_ENV: &str = "TYPESAFE_API_KEY";

/// The `typesafe` provider: a catalog, a price and a key, and no way to send yet.
#[derive(Debug, Clone, Copy, Default)]
pub struct TypeSafe;

impl Provider for TypeSafe {
    fn models(&self) -> Option<Vec<String>> {
        Some(MODELS.iter().map(|m| m.to_string()).collect())
    }

    fn request_type(&self) -> &'static str {
        "typesafe"
    }

    fn pricing(&self) -> Option<Pricing> {
        Some(PRICING)
    }

    fn key_env(&self, _contender: &Contender) -> Option<String> {
        Some(KEY_ENV.into())
    }

    /// Nothing to record: it cannot send, so a call is answered here, with its refusal.
    fn answer(
        &self,
        contender: &Contender,
        _case: &Case,
        _req: &ChatRequest,
    ) -> Result<Completion, CallError> {
        Err(refusal(contender))
    }
}

/// What a call comes to: an error of the case, saying why. The one place it is worded.
fn refusal(contender: &Contender) -> CallError {
    CallError::Transport(format!(
        "{}: no typesafe consumer yet: the typesafe provider has a catalog and pricing only, and its typed requests will be defined by the first suite that sends them",
        contender.id()
    ))
}
