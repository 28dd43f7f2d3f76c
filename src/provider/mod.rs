//! Providers: turn a chat request into an HTTP request for a contender, and read the
//! answer back (or answer it in the process). They never know about cassettes: the
//! transport below them records and replays (see `cassette`). [`Provider`] is the trait;
//! the OpenAI-compatible ones, `fake`, `mock` and `typesafe` are its built-in impls, and
//! the [`Registry`] maps a config section's kind to one.

mod anthropic;
mod fake;
mod gemini;
mod mock;
mod openai;
mod registry;
mod responses;
mod tools;
mod typesafe;
pub mod wire;

use crate::cassette::{Accept, CallError, HttpRequest, HttpResponse, Session, any_2xx};
use crate::results::Usage;
use crate::suite::config::Pricing;
use crate::suite::{Case, Contender};

pub use anthropic::{ANTHROPIC_URL, ANTHROPIC_VERSION, Anthropic, thinking_budget};
pub use fake::Fake;
pub use gemini::{GEMINI_URL, Gemini, gemini_thinking_budget};
pub use mock::Mock;
pub use openai::{Flavour, OPENAI_URL, OPENROUTER_URL, OpenAiCompatible};
pub(crate) use openai::{
    cut_note, priced, refusal_of, status_error, truncation_of, usage_in, usage_of,
};
pub use registry::Registry;
pub use responses::OpenAiResponses;
pub use typesafe::TypeSafe;
use wire::{Api, Call, Forward};

/// What [`Provider::answer_async`] returns: the answer, once awaited.
pub type AnswerFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Completion, CallError>> + Send + 'a>>;

/// A provider: how a contender's chat request becomes an answer. Either it sends HTTP
/// requests ([`Provider::sends`]: build the request, judge a 2xx, read the response), which
/// the cassette layer below it records and replays without the provider knowing, or it
/// answers in the process ([`Provider::answer`]: `fake`, `mock`; or
/// [`Provider::answer_async`], for one whose answer is async code). Register yours in a
/// [`Registry`] under the name a config section gives as its `kind:`.
///
/// Every method has a default, so a provider implements only its shape: an offline one
/// [`answer`](Provider::answer); one that sends, [`sends`](Provider::sends),
/// [`build_request`](Provider::build_request) and
/// [`read_response`](Provider::read_response).
pub trait Provider: Send + Sync {
    /// The models it has, when it knows them (a model outside them is a config error naming
    /// them); `None`: it serves whatever its server has.
    fn models(&self) -> Option<Vec<String>> {
        None
    }

    /// The request type it answers (`prompt`; `typesafe` for TypeSafe): a suite whose
    /// `request_types` lack it refuses its contenders.
    fn request_type(&self) -> &'static str {
        "prompt"
    }

    /// Prices shipped with it (dollars per million tokens), for a provider whose responses
    /// carry no cost; the suite's `pricing:` beats them.
    fn pricing(&self) -> Option<Pricing> {
        None
    }

    /// The environment variable holding the contender's API key, when it needs one. The run
    /// reads it before any call (and fails naming it when a live call needs it).
    fn key_env(&self, _contender: &Contender) -> Option<String> {
        None
    }

    /// Whether its calls are HTTP requests through the cassette layer (recorded, replayed);
    /// `false`: it answers in the process ([`Provider::answer`]), and nothing is recorded.
    fn sends(&self) -> bool {
        false
    }

    /// Where its requests go, without a trailing `/`: a cassette's fingerprints are of the
    /// request relative to it, so moving a server keeps its recordings.
    fn base_url(&self, _contender: &Contender) -> Option<String> {
        None
    }

    /// The HTTP request for a chat request. `key` is the API key's value (`None` in replay,
    /// where nothing is sent, and to predict a request for `cassettes status`).
    fn build_request(
        &self,
        contender: &Contender,
        _req: &ChatRequest,
        _key: Option<&str>,
    ) -> Result<HttpRequest, CallError> {
        Err(CallError::Transport(format!(
            "{}: this provider answers in the process; it builds no request",
            contender.id()
        )))
    }

    /// How it judges a 2xx response: only a success is recorded, and a failure the verdict
    /// calls transient is retried. A plain function, since it travels with the request
    /// through the cassette layer and its retries.
    fn accept(&self) -> Accept {
        any_2xx
    }

    /// Reads a response (any status) into a completion; a non-2xx or a 2xx it refuses is
    /// an error of the case, never a 0. `pricing` prices the usage when the response
    /// carries no cost.
    fn read_response(
        &self,
        contender: &Contender,
        _resp: HttpResponse,
        _pricing: Option<&Pricing>,
    ) -> Result<Completion, CallError> {
        Err(CallError::Transport(format!(
            "{}: this provider answers in the process; it reads no response",
            contender.id()
        )))
    }

    /// Its answer in the process, for a provider that does not send: from the request and
    /// the case (`mock` answers with the case's `mock_response`).
    fn answer(
        &self,
        contender: &Contender,
        _case: &Case,
        _req: &ChatRequest,
    ) -> Result<Completion, CallError> {
        Err(CallError::Transport(format!(
            "{}: this provider sends requests; it has no offline answer",
            contender.id()
        )))
    }

    /// Its answer in the process, awaited: for a provider that answers with async code (an
    /// SDK, a local model server's async client, a database). The runner calls this one,
    /// on its runtime; a provider that needs no `await` implements [`Provider::answer`]
    /// instead, which this calls by default.
    fn answer_async<'a>(
        &'a self,
        contender: &'a Contender,
        case: &'a Case,
        req: &'a ChatRequest,
    ) -> AnswerFuture<'a> {
        Box::pin(std::future::ready(self.answer(contender, case, req)))
    }

    /// What a retry after a rate limit pauses: every call with the same vendor. Default:
    /// the model alone (`section/model`: a proxy's rate limit is per model, so one limited
    /// model must not stall the others), or the whole section under `pause: section`.
    fn vendor(&self, contender: &Contender) -> String {
        pause_key(contender, None)
    }

    /// For a provider that speaks the OpenAI chat shape itself: the request an exec
    /// adapter's call through the gateway (`body`, OpenAI-shaped) becomes, made the
    /// contender's. `None` (the default): the gateway reads the call's messages into a
    /// [`ChatRequest`], asks the provider as the prompt adapter would, and answers the
    /// adapter in the OpenAI shape.
    fn forward_request(
        &self,
        _contender: &Contender,
        _body: serde_json::Value,
        _key: Option<&str>,
    ) -> Option<HttpRequest> {
        None
    }

    /// How it judges a 2xx of a forwarded call ([`Provider::forward_request`]), which may
    /// be a stream. Default: [`Provider::accept`].
    fn accept_forwarded(&self) -> Accept {
        self.accept()
    }

    /// The API its contenders speak natively: what the gateway names when a worker calls
    /// another one. Default: OpenAI chat completions.
    fn api(&self) -> Api {
        Api::ChatCompletions
    }

    /// A worker's call through the gateway (in any API the gateway serves), made the
    /// contender's: its model and settings on the worker's body, sent to the contender's
    /// server with the real key. `None`: the provider does not speak the call's API; the
    /// gateway then translates a chat completions call (asking [`Provider::build_request`]
    /// as the prompt adapter would) and refuses any other, naming both APIs. Default: a chat
    /// completions call through [`Provider::forward_request`].
    fn forward_call(
        &self,
        contender: &Contender,
        call: &Call,
        key: Option<&str>,
    ) -> Option<Forward> {
        match call.api {
            Api::ChatCompletions => {
                self.forward_request(contender, call.body.clone(), key)
                    .map(|request| Forward {
                        request,
                        accept: self.accept_forwarded(),
                        usage: usage_in,
                    })
            }
            _ => None,
        }
    }
}

/// What a retry of `contender` pauses, by its section's `pause:`: the section, the vendor
/// (`vendor`, for a provider with vendors; else the model), or the model. Unset: the vendor
/// when there is one, else the model.
pub fn pause_key(contender: &Contender, vendor: Option<&str>) -> String {
    use crate::suite::config::Pause;
    let section = &contender.info.provider;
    let model = || format!("{section}/{}", contender.info.model);
    match (contender.kind.pause, vendor) {
        (Some(Pause::Section), _) => section.clone(),
        (Some(Pause::Model), _) | (Some(Pause::Vendor) | None, None) => model(),
        (Some(Pause::Vendor) | None, Some(v)) => format!("{section}/{v}"),
    }
}

/// Why contender `id` (model `model` of `section`) cannot be, naming the models its provider
/// has; `None` when the provider has it or serves any model.
pub fn unknown_model(
    provider: &dyn Provider,
    section: &str,
    id: &str,
    model: &str,
) -> Option<String> {
    let known = provider.models()?;
    if known.iter().any(|m| m == model) {
        return None;
    }
    let refs: Vec<&str> = known.iter().map(String::as_str).collect();
    let hint = crate::suggest::did_you_mean(model, &refs)
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_default();
    let list = match refs.as_slice() {
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
        [] => "none".to_string(),
    };
    let models = if known.len() == 1 { "model" } else { "models" };
    Some(format!(
        "{id}: the {section} provider has the {models} {list}; there is no '{model}'{hint}"
    ))
}

/// What the adapter asks of a model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The system message, when the adapter has one.
    pub system: Option<String>,
    /// The user message: the rendered prompt.
    pub user: String,
    /// Ask for a JSON object (`response_format: json_object`).
    pub json: bool,
    /// The tools offered (OpenAI function definitions, `[{"type": "function", ...}]`);
    /// `None`: no tools.
    pub tools: Option<serde_json::Value>,
    /// OpenAI's `tool_choice`, sent as is when set.
    pub tool_choice: Option<serde_json::Value>,
    /// A conversation (`[{role, content}, ...]`) sent after the system message in place of
    /// the user message; empty: the user message alone.
    pub messages: Vec<serde_json::Value>,
}

impl ChatRequest {
    /// The conversation after the system message: the case's `messages`, or the user
    /// message alone. Every provider sends this, in its own shape.
    pub fn turns(&self) -> Vec<serde_json::Value> {
        if self.messages.is_empty() {
            vec![serde_json::json!({"role": "user", "content": self.user})]
        } else {
            self.messages.clone()
        }
    }
}

/// What a model said, with its usage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The reply's text, as the adapter parses it.
    pub text: String,
    /// Tokens and cost, as far as the provider reports them (priced by
    /// [`Provider::read_response`] when the response carries no cost).
    pub usage: Usage,
    /// Seconds the call took (the recorded latency on replay).
    pub latency_s: f64,
    /// The model declined (`refusal: "..."` with no content): its words, kept as the
    /// reply's text and diagnostic.
    pub refusal: Option<String>,
    /// The reply was cut at the token limit (`finish_reason: "length"`): what to tell the
    /// reader, e.g. "cut at max_tokens (512)".
    pub truncated: Option<String>,
    /// The UI payloads an in-process provider answers beside its text (a provider of your
    /// own standing in for an agent): the reply's `components`. `None`: not reported,
    /// which is not `Some([])`, "explicitly none". A wire provider reports none.
    pub components: Option<Vec<crate::results::Component>>,
}

/// Calls one contender for one case: builds the request, sends it through the cassette
/// session, reads the answer. `key` is the API key value (none in replay, where nothing is
/// sent). A provider that does not send answers in the process and sends nothing to the
/// session.
pub async fn complete(
    provider: &dyn Provider,
    contender: &Contender,
    case: &Case,
    req: &ChatRequest,
    key: Option<&str>,
    pricing: Option<&Pricing>,
    session: &Session,
) -> Result<Completion, CallError> {
    if !provider.sends() {
        return provider.answer_async(contender, case, req).await;
    }
    let http = provider.build_request(contender, req, key)?;
    let resp = session.send(http, provider.accept()).await?;
    provider.read_response(contender, resp, pricing)
}

/// The HTTP request a contender would send for `req` (used by `cassettes status`); `None`
/// for a provider that does not send.
pub fn predict_request(
    provider: &dyn Provider,
    contender: &Contender,
    req: &ChatRequest,
) -> Option<HttpRequest> {
    if !provider.sends() {
        return None;
    }
    provider.build_request(contender, req, None).ok()
}

/// Cost from `pricing:` (dollars per million tokens) when the provider reported none. The
/// prompt tokens read from cache cost `cached_input` where it is set.
pub fn price(usage: &Usage, pricing: Option<&Pricing>) -> Option<f64> {
    let p = pricing?;
    let i = usage.input_tokens?;
    let o = usage.output_tokens? as f64;
    let cached = match p.cached_input {
        Some(rate) => usage.cached_tokens.unwrap_or(0).min(i) as f64 * rate,
        None => 0.0,
    };
    let uncached = match p.cached_input {
        Some(_) => i.saturating_sub(usage.cached_tokens.unwrap_or(0)),
        None => i,
    } as f64;
    Some((uncached * p.input + cached + o * p.output) / 1_000_000.0)
}

/// A response no completion can be read from: a non-2xx (its error's message, or an
/// excerpt of its body), or a 2xx the API's `accept` refuses (an error object, no answer).
/// An error of the case, never a 0.
pub(crate) fn refuse_failure(
    c: &Contender,
    resp: &HttpResponse,
    accept: Accept,
    key_env: Option<&str>,
) -> Result<(), CallError> {
    if !(200..300).contains(&resp.status) {
        return Err(CallError::Transport(status_error(c, resp, key_env)));
    }
    if let crate::cassette::Verdict::Failure { reason, .. } = accept(resp) {
        return Err(CallError::Transport(format!("{}: {reason}", c.id())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::ProviderKind;

    fn builtin(name: &str) -> std::sync::Arc<dyn Provider> {
        Registry::default().get(name).unwrap().clone()
    }

    /// The reply of the issue: 1,152 of 1,220 prompt tokens read from cache (the shape of
    /// openai-python's recorded `prompt_tokens_details`). Priced as if none were cached it
    /// comes out 55% high.
    #[test]
    fn cached_prompt_tokens_are_priced_at_cached_input() {
        let usage = Usage {
            input_tokens: Some(1220),
            output_tokens: Some(100),
            cached_tokens: Some(1152),
            ..Usage::default()
        };
        let pricing = Pricing {
            input: 2.5,
            output: 10.0,
            cached_input: Some(1.25),
        };
        let cost = price(&usage, Some(&pricing)).unwrap();
        let want = (68.0 * 2.5 + 1152.0 * 1.25 + 100.0 * 10.0) / 1e6;
        assert!((cost - want).abs() < 1e-15, "{cost} != {want}");
        let flat = price(
            &usage,
            Some(&Pricing {
                cached_input: None,
                ..pricing
            }),
        )
        .unwrap();
        assert!(flat / cost > 1.5, "{flat} vs {cost}");
    }

    #[test]
    fn typesafe_is_priced_by_its_input_tokens_alone() {
        let usage = Usage {
            input_tokens: Some(2_000_000),
            output_tokens: Some(5_000),
            ..Usage::default()
        };
        let cost = price(&usage, builtin("typesafe").pricing().as_ref());
        assert!((cost.unwrap() - 0.084).abs() < 1e-12, "{cost:?}");
        assert_eq!(builtin("fake").pricing(), None);
    }

    #[test]
    fn an_unknown_model_names_the_ones_there_are() {
        assert_eq!(
            unknown_model(builtin("fake").as_ref(), "fake", "fake/ech", "ech"),
            Some("fake/ech: the fake provider has the models echo, parrot and oracle; there is no 'ech' (did you mean 'echo'?)".into())
        );
        assert_eq!(
            unknown_model(builtin("typesafe").as_ref(), "typesafe", "typesafe/jev-lates", "jev-lates"),
            Some("typesafe/jev-lates: the typesafe provider has the models jev-latest and jev-preview; there is no 'jev-lates' (did you mean 'jev-latest'?)".into())
        );
        assert_eq!(
            unknown_model(builtin("mock").as_ref(), "mock", "mock/mock", "mock"),
            None
        );
        let custom = ProviderKind::for_section("local", None, Some("http://x"), None);
        let provider = Registry::default().resolve(&custom, "local").unwrap();
        assert_eq!(
            unknown_model(provider.as_ref(), "local", "local/any", "any"),
            None
        );
    }
}
