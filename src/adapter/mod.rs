//! Adapters: what the model sees. [`Adapter`] is the trait the runner calls, one
//! [`AdapterSession`] per experiment; the built-in prompt adapter renders templates with the
//! case and parses the reply; the exec adapter runs your own program, which calls the model
//! through the loopback gateway. An unparsable reply is the model's failure (scored 0); a
//! crashed adapter is an error of the case.

pub(crate) mod exec;
pub(crate) mod gateway;
pub mod mcp_stdio;
mod prompt;
mod splice;
pub(crate) mod upstreams;

pub use crate::worker::StderrTo;
pub use exec::ExecAdapter;
pub use prompt::PromptAdapter;
pub(crate) use upstreams::fixtures_dir;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::cassette::{CallError, CassetteKey, Session, SessionMeta, Transport};
use crate::error::Result;
use crate::provider::{ChatRequest, Completion, Provider};
use crate::results::{CaseError, Reply, ToolCall};
use crate::suite::config::{AdapterConfig, Pricing};
use crate::suite::{Case, Contender, Suite};

/// A boxed future, as the adapter traits return (async methods of a trait object).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the model sees and how its answer becomes a reply: the built-in [`PromptAdapter`]
/// (templates in, the reply parsed), the [`ExecAdapter`] (your program, calling the model
/// through the gateway), or yours. The runner starts one [`AdapterSession`] per experiment
/// (a contender over a dataset) and asks it each case, without knowing which adapter it is.
pub trait Adapter: Send + Sync {
    /// Offline problems of a case (a template it cannot fill). Default: none.
    fn verify(&self, _case: &Case) -> Vec<String> {
        vec![]
    }

    /// The chat request a case sends, when it can be known without running anything
    /// (`cassettes status` tells a stale recording so). Default: `None`, not predictable.
    fn predict(&self, _case: &Case) -> Option<ChatRequest> {
        None
    }

    /// Whether it runs worker processes, whose stderr [`Adapter::route_stderr`] sends.
    fn runs_workers(&self) -> bool {
        false
    }

    /// Where its workers' stderr goes (the CLI's, while progress bars draw). Default:
    /// ignored.
    fn route_stderr(&mut self, _to: exec::StderrTo) {}

    /// Starts what the whole run shares, before its first case (the exec adapter's
    /// gateway); an error stops the run before anything is called. Default: nothing.
    fn start_run(&self) -> BoxFuture<'_, std::result::Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    /// Starts one experiment: the session that answers its cases, dropped when the
    /// experiment ends (the exec adapter's workers stop then).
    fn start(self: Arc<Self>) -> Arc<dyn AdapterSession>;

    /// Ends what the run left (the exec adapter reaps its workers' descendants and writes
    /// the last of their stderr), once every session is gone. Default: nothing.
    fn finish_run(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// What the run should warn of once it is done, and not of one case alone (the exec
    /// adapter: its workers' attempts to reach other hosts in replay); each taken once.
    /// Default: nothing.
    fn take_warnings(&self) -> Vec<String> {
        vec![]
    }
}

/// One experiment's adapter: answers its cases, several at a time (`-p`).
pub trait AdapterSession: Send + Sync {
    /// Answers a case, reaching the contender's model through `model`. `Err` is an error of
    /// the case (a template it cannot fill, a call that failed, a crashed worker), never
    /// scored; a reply the model got wrong is an `Ok` whose reply says so (scored 0).
    fn answer<'a>(
        &'a self,
        model: CaseModel<'a>,
    ) -> BoxFuture<'a, std::result::Result<Answer, CaseError>>;
}

/// What an adapter made of a case.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The reply to score (its `error` set when the model's answer was unusable).
    pub reply: Reply,
    /// Seconds spent in calls to the model (the recorded figures on replay); `None` when the
    /// case made no call (it has no latency, not a 0 s one).
    pub latency_s: Option<f64>,
    /// A call was cut at the token limit: what to tell the reader ("cut at max_tokens
    /// (512)"); the runner puts it before the reply's error and counts the case truncated.
    pub truncated: Option<String>,
    /// What the reader should know of how the case ran, though it did not fail it (a
    /// worker that tried to reach another host than the gateway in replay): kept on the
    /// case's result.
    pub warnings: Vec<String>,
}

/// The error of a reply with no text.
pub const EMPTY_REPLY: &str = "empty reply";

/// The contender's model for one case, as an adapter reaches it: its provider, key and
/// pricing, and the case's cassette session (the runner builds it; the adapter never
/// knows whether the call is recorded, replayed or live).
pub struct CaseModel<'a> {
    /// Who is asked.
    pub contender: &'a Contender,
    /// The case being answered.
    pub case: &'a Case,
    /// The contender's provider, resolved in the run's [`crate::provider::Registry`].
    pub provider: Arc<dyn Provider>,
    /// The API key's value (absent in replay, and for a provider that needs none).
    pub api_key: Option<String>,
    /// The suite's `pricing:` for the contender, else its provider's.
    pub pricing: Option<Pricing>,
    pub(crate) transport: &'a Transport,
    pub(crate) key: CassetteKey,
    pub(crate) meta: SessionMeta,
    /// The tries this answer is one of, under `--repeat K` (K > 1): they share one cassette.
    pub(crate) repeats: Option<Arc<crate::cassette::Repeats>>,
}

impl std::fmt::Debug for CaseModel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaseModel")
            .field("contender", &self.contender)
            .field("api_key", &self.api_key.as_ref().map(|_| "[set]"))
            .field("pricing", &self.pricing)
            .finish_non_exhaustive()
    }
}

impl CaseModel<'_> {
    /// Asks the model once, in a cassette session of its own that is finished with the
    /// answer: a failed call (or a 2xx the provider refused) writes nothing, so the old
    /// cassette stays; a good one is written.
    pub async fn complete(&self, req: &ChatRequest) -> std::result::Result<Completion, CallError> {
        Ok(self.complete_observed(req).await?.0)
    }

    /// [`CaseModel::complete`], and the tool calls its response asked for, observed in the
    /// response itself (`None` for a provider that answers in the process, or a response
    /// of a shape nobody reads).
    pub async fn complete_observed(
        &self,
        req: &ChatRequest,
    ) -> std::result::Result<(Completion, Option<Vec<ToolCall>>), CallError> {
        let (provider, contender) = (self.provider.as_ref(), self.contender);
        let session = self.open()?;
        // `crate::provider::complete`'s steps, with the response looked at on the way.
        let completion: std::result::Result<_, CallError> = async {
            if !provider.sends() {
                return Ok((
                    provider.answer_async(contender, self.case, req).await?,
                    None,
                ));
            }
            let http = provider.build_request(contender, req, self.api_key.as_deref())?;
            let resp = session.send(http, provider.accept()).await?;
            let calls = ToolCall::observed_in(&resp.body);
            Ok((
                provider.read_response(contender, resp, self.pricing.as_ref())?,
                calls,
            ))
        }
        .await;
        let finished = session.finish();
        let completion = completion?;
        finished?;
        Ok(completion)
    }

    /// Opens the case's cassette session, for calls made elsewhere (the exec adapter's
    /// gateway); finish it with [`Session::finish`] once they are done.
    pub fn open(&self) -> std::result::Result<Session, CallError> {
        match &self.repeats {
            Some(r) => self.transport.session_in(&self.key, self.meta.clone(), r),
            None => self.transport.session(&self.key, self.meta.clone()),
        }
    }
}

/// Builds the suite's adapter; an exec adapter's upstream keys are read from `environment`
/// (then `env_files`).
pub fn build(suite: &Suite, environment: &crate::env::Environment) -> Result<Box<dyn Adapter>> {
    match &suite.adapter {
        AdapterConfig::Prompt {
            system,
            user,
            json,
            tools,
            tool_choice,
        } => Ok(Box::new(
            PromptAdapter::new(suite, system.as_deref(), user.as_deref(), *json)?.with_tools(
                suite,
                tools.as_ref(),
                tool_choice.as_ref(),
            )?,
        )),
        AdapterConfig::Exec {
            command,
            env,
            pass_env,
            upstreams,
            max_request_bytes,
        } => Ok(Box::new(
            ExecAdapter::new(suite, command, env, pass_env)?
                .with_upstreams(suite, environment, upstreams)
                .with_max_request_bytes(*max_request_bytes),
        )),
    }
}
