//! TypeSafe (`typesafe:`, request type `typesafe`): a direct provider shipped with its
//! catalog and its pricing, enough for the lineup, `verify` and the cost column. It cannot
//! send requests yet: the typed request shape (noul, choice, score questions) will be
//! defined by the first suite that declares `request_types: [typesafe]`.

use crate::cassette::CallError;
use crate::suite::Contender;
use crate::suite::config::Pricing;

/// The models TypeSafe serves (its `GET /v1/models`): the moving aliases of Jev.
pub const MODELS: &[&str] = &["jev-latest", "jev-preview"];

/// TypeSafe's list price, dollars per million tokens: input is billed, output is free.
pub const PRICING: Pricing = Pricing {
    input: 0.042,
    output: 0.0,
};

/// What a call comes to: an error of the case, saying why.
pub fn complete(contender: &Contender) -> CallError {
    CallError::Transport(format!(
        "{}: no typesafe consumer yet: the typesafe provider has a catalog and pricing only, and its typed requests will be defined by the first suite that sends them",
        contender.id()
    ))
}
