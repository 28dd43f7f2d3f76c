//! Providers: turn a chat request into an HTTP request for a contender, and read the
//! answer back. They never know about cassettes: the transport below them records and
//! replays (see `cassette`).

mod fake;
mod mock;
mod openai;
mod typesafe;

use crate::cassette::{CallError, HttpRequest, Session};
use crate::results::Usage;
use crate::suite::config::Pricing;
use crate::suite::{Case, Contender, ProviderKind};

pub use openai::{
    accept, accept_forwarded, build_request, forward_request, parse_response, usage_of,
};

/// The models of the offline `fake` provider.
pub const FAKE_MODELS: &[&str] = &["echo", "parrot", "oracle"];
/// The models of the `mock` provider.
pub use mock::MODELS as MOCK_MODELS;
/// TypeSafe's catalog, shipped in the binary.
pub use typesafe::MODELS as TYPESAFE_MODELS;

/// The models a provider has, when the binary knows them (`fake`, `mock`, `typesafe`);
/// `None` for the ones that serve whatever their server has.
pub fn catalog(kind: &ProviderKind) -> Option<&'static [&'static str]> {
    match kind {
        ProviderKind::Fake => Some(FAKE_MODELS),
        ProviderKind::Mock => Some(MOCK_MODELS),
        ProviderKind::TypeSafe => Some(TYPESAFE_MODELS),
        _ => None,
    }
}

/// Why contender `id` (model `model` of `section`) cannot be, naming the models its provider
/// has; `None` when the provider has it or serves any model.
pub fn unknown_model(kind: &ProviderKind, section: &str, id: &str, model: &str) -> Option<String> {
    let known = catalog(kind)?;
    if known.contains(&model) {
        return None;
    }
    let hint = crate::suggest::did_you_mean(model, known)
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_default();
    let list = match known {
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
        [] => "none".to_string(),
    };
    let models = if known.len() == 1 { "model" } else { "models" };
    Some(format!(
        "{id}: the {section} provider has the {models} {list}; there is no '{model}'{hint}"
    ))
}

/// Prices shipped with the binary, for a provider that reports no cost (TypeSafe); the
/// suite's `pricing:` beats them.
pub fn builtin_pricing(kind: &ProviderKind) -> Option<Pricing> {
    match kind {
        ProviderKind::TypeSafe => Some(typesafe::PRICING),
        _ => None,
    }
}

/// What the adapter asks of a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub system: Option<String>,
    pub user: String,
    /// Ask for a JSON object (`response_format: json_object`).
    pub json: bool,
}

/// What a model said, with its usage. `raw` is the provider's whole response body.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    pub usage: Usage,
    /// Seconds the call took (the recorded latency on replay).
    pub latency_s: f64,
}

/// Calls one contender for one case: builds the request, sends it through the cassette
/// session, reads the answer. `key` is the API key value (none in replay, where nothing is
/// sent). The offline providers answer in the process and send nothing to the session.
pub async fn complete(
    contender: &Contender,
    case: &Case,
    req: &ChatRequest,
    key: Option<&str>,
    pricing: Option<&Pricing>,
    session: &Session,
) -> Result<Completion, CallError> {
    match &contender.kind {
        ProviderKind::Fake => Ok(fake::complete(contender, case, req)),
        ProviderKind::Mock => mock::complete(contender, case, req),
        ProviderKind::TypeSafe => Err(typesafe::complete(contender)),
        _ => {
            let http = build_request(contender, req, key);
            let resp = session.send(http, accept).await?;
            parse_response(contender, resp, pricing)
        }
    }
}

/// An offline provider's answer to a chat request for a case (the gateway serves it to exec
/// adapters); `None` for a provider that sends requests.
pub fn offline_complete(
    contender: &Contender,
    case: &Case,
    req: &ChatRequest,
) -> Option<Result<Completion, CallError>> {
    match contender.kind {
        ProviderKind::Fake => Some(Ok(fake::complete(contender, case, req))),
        ProviderKind::Mock => Some(mock::complete(contender, case, req)),
        ProviderKind::TypeSafe => Some(Err(typesafe::complete(contender))),
        _ => None,
    }
}

/// The HTTP request a contender would send for `req` (used by `cassettes status`).
pub fn predict_request(contender: &Contender, req: &ChatRequest) -> Option<HttpRequest> {
    contender
        .kind
        .records()
        .then(|| build_request(contender, req, None))
}

/// Cost from `pricing:` (dollars per million tokens) when the provider reported none.
pub fn price(usage: &Usage, pricing: Option<&Pricing>) -> Option<f64> {
    let p = pricing?;
    let i = usage.input_tokens? as f64;
    let o = usage.output_tokens? as f64;
    Some((i * p.input + o * p.output) / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typesafe_is_priced_by_its_input_tokens_alone() {
        let usage = Usage {
            input_tokens: Some(2_000_000),
            output_tokens: Some(5_000),
            cost_usd: None,
        };
        let cost = price(&usage, builtin_pricing(&ProviderKind::TypeSafe).as_ref());
        assert!((cost.unwrap() - 0.084).abs() < 1e-12, "{cost:?}");
        assert_eq!(builtin_pricing(&ProviderKind::Fake), None);
    }

    #[test]
    fn an_unknown_model_names_the_ones_there_are() {
        assert_eq!(
            unknown_model(&ProviderKind::Fake, "fake", "fake/ech", "ech"),
            Some("fake/ech: the fake provider has the models echo, parrot and oracle; there is no 'ech' (did you mean 'echo'?)".into())
        );
        assert_eq!(
            unknown_model(&ProviderKind::TypeSafe, "typesafe", "typesafe/jev-lates", "jev-lates"),
            Some("typesafe/jev-lates: the typesafe provider has the models jev-latest and jev-preview; there is no 'jev-lates' (did you mean 'jev-latest'?)".into())
        );
        assert_eq!(
            unknown_model(&ProviderKind::Mock, "mock", "mock/mock", "mock"),
            None
        );
        let custom = ProviderKind::Custom {
            base_url: "http://x".into(),
            api_key_env: None,
        };
        assert_eq!(unknown_model(&custom, "local", "local/any", "any"), None);
    }
}
