use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::settings::Settings;
use crate::cassette::Mode;

/// Tokens and dollars of one call or a sum of calls. `None` means unknown, never zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, as the provider reported them.
    pub input_tokens: Option<u64>,
    /// Completion tokens, as the provider reported them.
    pub output_tokens: Option<u64>,
    /// Dollars, reported by the provider or priced from `pricing:`.
    pub cost_usd: Option<f64>,
    /// Of the prompt tokens, those read from the provider's prompt cache
    /// (`prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`),
    /// priced at `pricing.cached_input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Of the completion tokens, those a reasoning model spent thinking
    /// (`completion_tokens_details.reasoning_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// What the provider billed, only where it differs from `cost_usd`: OpenRouter with
    /// your own key (BYOK) bills its fee (often `cost: 0`) while the upstream provider
    /// charges the inference, which `cost_usd` reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billed_usd: Option<f64>,
}

impl Usage {
    /// Adds another usage; an unknown side stays unknown only if both are unknown.
    pub fn add(&mut self, other: &Usage) {
        fn sum<T: std::ops::Add<Output = T> + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a + b),
                (a, None) => a,
                (None, b) => b,
            }
        }
        self.input_tokens = sum(self.input_tokens, other.input_tokens);
        self.output_tokens = sum(self.output_tokens, other.output_tokens);
        let before = self.cost_usd;
        self.cost_usd = sum(self.cost_usd, other.cost_usd);
        self.cached_tokens = sum(self.cached_tokens, other.cached_tokens);
        self.reasoning_tokens = sum(self.reasoning_tokens, other.reasoning_tokens);
        // Billed differs from the cost only where some call said so; elsewhere the two are
        // one figure, so a sum of billed amounts counts those calls at their cost.
        if self.billed_usd.is_some() || other.billed_usd.is_some() {
            let billed = |u: &Usage, cost: Option<f64>| u.billed_usd.or(cost).unwrap_or(0.0);
            self.billed_usd = Some(billed(self, before) + billed(other, other.cost_usd));
        }
    }
}

/// A metric a scorer declares: a column of every leaderboard, a line of the glossary, a
/// key `minimum_scores:` and `weighted_score:` may name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDef {
    /// The key of [`Score::metrics`] and the column header: `field_accuracy`, `exact`.
    pub name: String,
    /// One line for the glossary under the leaderboard.
    pub description: String,
    /// The primary metric ranks the leaderboard and gates the check.
    #[serde(default)]
    pub primary: bool,
    /// Whether a higher value is better (rates of bad things are not).
    #[serde(default = "yes")]
    pub higher_is_better: bool,
}

fn yes() -> bool {
    true
}

/// One named miss a scorer explains: field (or assertion), want, got, outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// What was judged: a schema field, an assertion, your own metric's name.
    pub field: String,
    /// What the case expected.
    pub want: Value,
    /// What the reply gave.
    pub got: Value,
    /// The verdict: `missed`, `hallucinated`, `incorrect`, `invalid` (fields), `failed`
    /// (assertions; a case with `passed: Some(false)` names each of these).
    pub outcome: Outcome,
}

/// How one judged thing turned out: a field (the field scorer), an assertion (`failed`),
/// or a word of your own scorer's ([`Outcome::Other`]). Written as its lowercase name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// What the text says, as the schema spells it (both null included).
    Correct,
    /// The text answers it (expected non-null) and the reply left it null or absent.
    Missed,
    /// The text never answers it (expected null) and the reply gave a value.
    Hallucinated,
    /// An allowed value of the right type, but not the expected one.
    Incorrect,
    /// A value the schema does not allow: off the list, wrong type, or an unusable reply.
    Invalid,
    /// An assertion that does not hold.
    Failed,
    /// A verdict a scorer of your own names (kept as it is written, so a snapshot it made
    /// reads back unchanged).
    Other(String),
}

impl Outcome {
    /// The name written in diagnostics, snapshots and reports.
    pub fn as_str(&self) -> &str {
        match self {
            Outcome::Correct => "correct",
            Outcome::Missed => "missed",
            Outcome::Hallucinated => "hallucinated",
            Outcome::Incorrect => "incorrect",
            Outcome::Invalid => "invalid",
            Outcome::Failed => "failed",
            Outcome::Other(s) => s,
        }
    }

    /// The outcome a name stands for; a name none of the built-in scorers writes is
    /// [`Outcome::Other`].
    pub fn parse(s: &str) -> Outcome {
        match s {
            "correct" => Outcome::Correct,
            "missed" => Outcome::Missed,
            "hallucinated" => Outcome::Hallucinated,
            "incorrect" => Outcome::Incorrect,
            "invalid" => Outcome::Invalid,
            "failed" => Outcome::Failed,
            other => Outcome::Other(other.to_string()),
        }
    }
}

/// A scorer of your own may name its verdicts as text: a built-in name is its variant.
impl From<&str> for Outcome {
    fn from(s: &str) -> Outcome {
        Outcome::parse(s)
    }
}

impl From<String> for Outcome {
    fn from(s: String) -> Outcome {
        Outcome::parse(&s)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Outcome, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Outcome::parse(&s))
    }
}

/// What the model (through the adapter) gave back for one case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The parsed output (JSON when the adapter asks for JSON, else a string).
    pub output: Option<Value>,
    /// The raw text the model returned.
    pub raw: Option<String>,
    /// The model's failure (not JSON, refused, empty): scored 0, counted invalid.
    pub error: Option<String>,
    /// What the call cost (summed over an exec adapter's calls).
    pub usage: Usage,
    /// The tool calls the model asked for, as observed in its responses (and, for an exec
    /// adapter, as its worker reported). `None`: nobody could see (an in-process provider,
    /// an adapter that made no call and reported none), which is not `Some([])`, "no calls".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<crate::results::ToolCall>>,
    /// The calls an exec adapter's program made through the gateway, in order (to the
    /// model and to its `adapter.upstreams`), as the gateway saw them. `None`: nobody
    /// could see (the prompt adapter), which is not `Some([])`, "no calls".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<Vec<crate::results::Step>>,
    /// The UI payloads the agent returned beside its text (`components: [{protocol,
    /// version, payload}]`), as it reported them. `None`: not reported, which is not
    /// `Some([])`, "explicitly none".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<crate::results::Component>>,
}

/// A scorer's verdict on one reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The case's score, 0..=1: the value of the scorer's primary metric. It ranks the
    /// leaderboard and is what `minimum_scores: { score: ... }` and the gate compare.
    pub value: f64,
    /// Every declared metric; `None` means "does not apply" (skipped in means, never zeroed).
    pub metrics: BTreeMap<String, Option<f64>>,
    /// What the scorer has to say about each field or assertion it judged (misses, mostly).
    pub diagnostics: Vec<Diagnostic>,
    /// The scorer's own verdict on the case, when it has one (assertions: every assertion
    /// passed); thresholds are applied on top. `None`: thresholds alone decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
}

impl Score {
    /// A score of one metric, `name`, the primary: `value`, with no diagnostics and no
    /// verdict of the scorer's own (thresholds decide whether the case passed).
    pub fn single(name: impl Into<String>, value: f64) -> Score {
        Score {
            value,
            metrics: [(name.into(), Some(value))].into(),
            diagnostics: Vec::new(),
            passed: None,
        }
    }
}

/// The contender as recorded in results: provider section, model and settings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ContenderInfo {
    /// Display id: `openai/gpt-4o-mini`, `fake/echo`, `local/llama3.2`.
    pub id: String,
    /// The config section it came from: `openrouter`, `fake`, `local`.
    pub provider: String,
    /// The model name sent to the provider.
    pub model: String,
    /// The reasoning effort sent (`low`, `high`); `None`: the provider's default.
    pub effort: Option<String>,
    /// Kept as text so the model is `Eq`/`Ord` and prints as written (`0.1`).
    pub temperature: Option<String>,
    /// The reply's token cap sent; `None`: the provider's default.
    pub max_tokens: Option<u32>,
}

impl ContenderInfo {
    /// A stable key for matching the same contender across runs.
    pub fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.id,
            self.effort.as_deref().unwrap_or("default"),
            self.temperature.as_deref().unwrap_or("default"),
            self.max_tokens.map(|m| m.to_string()).unwrap_or_default()
        )
    }

    /// `openai/gpt-4o-mini [effort high, temp 0.1]`: the contender as reports name it.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(e) = &self.effort {
            parts.push(format!("effort {e}"));
        }
        if let Some(t) = &self.temperature {
            parts.push(format!("temp {t}"));
        }
        if let Some(m) = self.max_tokens {
            parts.push(format!("max {m}"));
        }
        if parts.is_empty() {
            self.id.clone()
        } else {
            format!("{} [{}]", self.id, parts.join(", "))
        }
    }
}

/// The outcome of one case for one contender. Its JSON form is the snapshot's
/// (`results::snapshot`): the error's message as `error`, its kind beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    /// Case id within its dataset: `vague`, `vague/003`, `refund-window`.
    pub case: String,
    /// The case's variant: its folder (`complete`, `vague`) or the JSONL id before `/`.
    pub variant: String,
    /// The case fingerprint (input, expected, metadata, thresholds).
    pub fingerprint: String,
    /// `None` when the case errored: it has no score.
    pub score: Option<f64>,
    /// Each declared metric (0..=1); `None` means "does not apply"; empty when the case
    /// errored.
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Whether it met its `minimum_scores`; `None` when it errored.
    pub passed: Option<bool>,
    /// Thresholds it failed, as `metric value < minimum`.
    pub failed_thresholds: Vec<String>,
    /// A transport failure, a cassette miss or a crashed adapter: no score.
    pub error: Option<CaseError>,
    /// The model's own failure (scored 0): not JSON, refused.
    pub reply_error: Option<String>,
    /// The reply was cut at the token limit (`finish_reason: "length"`).
    pub truncated: bool,
    /// The parsed reply (JSON when the adapter asks for JSON, else a string); `None` when
    /// there was none to parse (an error, an unusable reply).
    pub output: Option<Value>,
    /// The model's text, only where it differs from `output` (prose around the JSON, a
    /// code fence, an answer that did not parse); absent, it is the output (see
    /// [`raw_is_output`]), so a reader wanting the text falls back to `output`.
    pub raw: Option<String>,
    /// What the scorer said about the reply, each field or assertion it judged.
    pub diagnostics: Vec<Diagnostic>,
    /// Tokens and dollars the case's calls cost.
    pub usage: Usage,
    /// Seconds spent in calls (recorded latency on replay).
    pub latency_s: Option<f64>,
    /// Seconds the case took: its calls' latency, 0 when it made none.
    pub duration_s: f64,
    /// The case's tags (`--tag` selects by them).
    pub tags: Vec<String>,
    /// The case's weight in its experiment's means (1 unless the case sets one).
    pub weight: f64,
    /// Each try of a case run `--repeat K` times (K > 1), in order; empty for a case run
    /// once. Its `score` is then the mean of the scored tries, `passed` whether every try
    /// passed (τ-bench's `pass^k`), and its reply, diagnostics and error the first try's.
    pub repeats: Vec<Repeat>,
    /// What a judge's calls for this case used (`kind: judge`): apart from [`Self::usage`],
    /// the contender's, which the contender's cost is summed from.
    pub judge_usage: Usage,
    /// What the case gave the model (its input text, or its variables), so a report can
    /// show it beside the replies; `None` in snapshots written before it was kept.
    pub input: Option<Value>,
    /// The case's expected answer (`expected`, else its `expect:` assertions), as the
    /// report shows it; `None` when the case has none.
    pub expected: Option<Value>,
    /// The calls the adapter's program made through the gateway, in order (model calls
    /// and `adapter.upstreams` requests); empty when none were seen.
    pub trajectory: Vec<crate::results::Step>,
    /// The tool calls the model asked for, as observed in its responses (and as an exec
    /// worker reported them): what the `tool_calls` checks judged. `None`: nobody could see
    /// (an in-process provider, a response of no known shape), which is not `Some([])`, "no
    /// calls".
    pub tool_calls: Option<Vec<crate::results::ToolCall>>,
    /// What the reader should know of how the case ran, though it did not fail it: a
    /// worker that tried to reach another host than the gateway in replay.
    pub warnings: Vec<String>,
    /// The UI payloads the reply carried beside its text, as the agent reported them (what
    /// `kind: components` judged). `None`: not reported, which is not `Some([])`,
    /// "explicitly none".
    pub components: Option<Vec<crate::results::Component>>,
}

/// One try of a repeated case: its score, whether it passed, and why it errored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeat {
    /// `None` when the try errored.
    pub score: Option<f64>,
    /// Whether it met its thresholds; `None` when it errored.
    pub passed: Option<bool>,
    /// The try's error (a miss past the recorded tries names the repeat), when it errored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CaseResult {
    /// How many times the case ran: 1, or K under `--repeat K`.
    pub fn tries(&self) -> usize {
        self.repeats.len().max(1)
    }

    /// How many tries passed, of [`CaseResult::tries`].
    pub fn passes(&self) -> usize {
        if self.repeats.is_empty() {
            usize::from(self.passed == Some(true))
        } else {
            self.repeats
                .iter()
                .filter(|r| r.passed == Some(true))
                .count()
        }
    }

    /// Some tries passed and some did not (an errored try counts as not passing).
    pub fn flaky(&self) -> bool {
        let p = self.passes();
        self.repeats.len() > 1 && p > 0 && p < self.repeats.len()
    }

    /// Whether most tries fail (more than half); for a case run once, whether it failed.
    pub fn mostly_fails(&self) -> bool {
        2 * self.passes() < self.tries()
    }
}

/// Why a case has no score: what failed, and the message that says so.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseError {
    /// What failed: the reports group by it (misses) and a store may count by it.
    pub kind: CaseErrorKind,
    /// What the user reads (scrubbed of secrets when the case finished).
    pub message: String,
}

impl CaseError {
    /// An error of this kind with this message.
    pub fn new(kind: CaseErrorKind, message: impl Into<String>) -> CaseError {
        CaseError {
            kind,
            message: message.into(),
        }
    }
}

/// A failed call as the case's error: what failed (the kind a report groups by) and its
/// message.
impl From<crate::cassette::CallError> for CaseError {
    fn from(e: crate::cassette::CallError) -> CaseError {
        use crate::cassette::{CallError, CassetteError};
        let kind = match &e {
            CallError::Transport(..) | CallError::NotListening(..) => CaseErrorKind::Transport,
            CallError::Miss(..) => CaseErrorKind::Miss,
            CallError::Cassette(
                CassetteError::SecretRefused { .. } | CassetteError::Unwritable { .. },
            ) => CaseErrorKind::RefusedWrite,
            CallError::Cassette(..) => CaseErrorKind::Cassette,
            CallError::TooLarge(..) => CaseErrorKind::TooLarge,
        };
        CaseError::new(kind, e.to_string())
    }
}

impl std::fmt::Display for CaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What failed in an errored case. Written as kebab-case beside the message
/// (`error_kind`); a snapshot written before kinds existed reads as [`CaseErrorKind::of_message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CaseErrorKind {
    /// The call failed: network, timeout, an HTTP error, a reply the provider refused.
    Transport,
    /// Replay found no recording of the request (the message holds the nearest one's diff).
    Miss,
    /// A cassette could not be read (corrupt, a newer format).
    Cassette,
    /// A recording was not written: it would have held a secret, or the file system refused
    /// it. The exchange itself succeeded; the case is not scored on an unkept answer.
    RefusedWrite,
    /// The response is over `cassettes.max_response_bytes`, or a worker's request to the
    /// gateway over `adapter.max_request_bytes`.
    TooLarge,
    /// The case's prompt template could not be filled.
    Template,
    /// The exec adapter failed: it crashed or broke the protocol.
    Adapter,
    /// The exec adapter gave no answer within the case's time and was stopped.
    Timeout,
    /// Anything else (a run that could not set the case up).
    Other,
    /// The scorer could not judge the reply: an exec scorer crashed, broke the protocol or
    /// reported a metric it did not declare; a judge's call failed or its verdict was
    /// unparsable. Never a 0: the case has no score.
    Scorer,
    /// The case's code crashed in the process (a `Provider`, `Scorer` or adapter of yours
    /// that panicked) or its task ended without a result: the message is the panic's.
    /// Never a dropped case: the run still holds every planned case.
    Crashed,
}

impl CaseErrorKind {
    /// The kind of an error stored as text alone (a snapshot from before kinds were
    /// written): a miss by the cassette layer's wording (what the reports of that time
    /// looked for), else [`CaseErrorKind::Other`].
    pub fn of_message(message: &str) -> CaseErrorKind {
        if message.starts_with("no recording matches this request")
            || message.starts_with("no cassette for this case")
        {
            CaseErrorKind::Miss
        } else {
            CaseErrorKind::Other
        }
    }
}

impl CaseResult {
    /// Scrubs every text the reply and the scorer put here (output, raw text, errors,
    /// diagnostics) of known secrets, in place: done once when the case finishes, before any
    /// renderer escapes it for HTML or Markdown (where the escaped form would not match).
    pub fn scrub_secrets(&mut self) {
        use std::borrow::Cow;
        let error = self.error.as_mut().map(|e| &mut e.message);
        for text in [error, self.reply_error.as_mut(), self.raw.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Cow::Owned(clean) = crate::secrets::scrub(text) {
                *text = clean;
            }
        }
        for value in [&mut self.output, &mut self.input, &mut self.expected]
            .into_iter()
            .flatten()
        {
            crate::secrets::scrub_json(value);
        }
        if !self.diagnostics.is_empty() {
            crate::secrets::scrub_model(&mut self.diagnostics);
        }
        if !self.trajectory.is_empty() {
            crate::secrets::scrub_model(&mut self.trajectory);
        }
        if let Some(calls) = &mut self.tool_calls
            && !calls.is_empty()
        {
            crate::secrets::scrub_model(calls);
        }
        if let Some(components) = &mut self.components
            && !components.is_empty()
        {
            crate::secrets::scrub_model(components);
        }
        for text in &mut self.warnings {
            if let Cow::Owned(clean) = crate::secrets::scrub(text) {
                *text = clean;
            }
        }
    }

    /// What the model said when its reply was unusable (not JSON, refused, empty): its raw
    /// text, or the output when the raw text was not kept. `None` for a usable reply or
    /// an errored case (no reply at all).
    pub fn unusable_said(&self) -> Option<String> {
        self.reply_error.as_ref()?;
        self.raw.clone().or_else(|| match &self.output {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => Some(v.to_string()),
        })
    }
}

/// How many characters of a model's text a one-line report shows.
pub const SAID_CHARS: usize = 200;

/// A model's text on one line: whitespace runs as one space, control characters escaped,
/// cut to [`SAID_CHARS`] characters with `…`.
pub fn one_line(s: &str) -> String {
    let mut out = String::new();
    let mut n = 0;
    for word in s.split_whitespace() {
        if n > 0 {
            if n >= SAID_CHARS {
                out.push('…');
                return out;
            }
            out.push(' ');
            n += 1;
        }
        for c in word.chars() {
            if n >= SAID_CHARS {
                out.push('…');
                return out;
            }
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
            n += 1;
        }
    }
    out
}

/// Whether a reply's raw text says nothing its output does not: the same string, or JSON
/// that parses to the same value (whitespace aside). Then only the output is kept.
pub fn raw_is_output(raw: &str, output: Option<&Value>) -> bool {
    match output {
        None => false,
        Some(Value::String(s)) => s == raw,
        Some(v) => serde_json::from_str::<Value>(raw).is_ok_and(|parsed| parsed == *v),
    }
}

/// Latency of the calls that worked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Mean seconds per call; `None` when no call worked.
    pub mean_s: Option<f64>,
    /// The 95th percentile, in seconds; `None` when no call worked.
    pub p95_s: Option<f64>,
}

/// One contender over one dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentResult {
    /// Who ran it: provider, model and settings.
    pub contender: ContenderInfo,
    /// The dataset: the folder under `datasets/`.
    pub dataset: String,
    /// Mean of each metric over scored cases (weighted by case weight), `None` if none applied.
    pub means: BTreeMap<String, Option<f64>>,
    /// Mean primary score over scored cases.
    pub score: Option<f64>,
    /// Cases run, errored ones included.
    pub cases_total: usize,
    /// Cases that errored (no score).
    pub errors: usize,
    /// Cases that failed their thresholds (errors excluded).
    pub failed: usize,
    /// Cases whose reply was cut at the token limit (`finish_reason: "length"`), errors
    /// excluded: a column of the leaderboard when any experiment has one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated: usize,
    /// Dollars spent; `None` when no call was made or one call's price is unknown.
    pub cost_usd: Option<f64>,
    /// What the providers billed, only when some call's bill differed from its cost
    /// (OpenRouter with your own key bills its fee; `cost_usd` is the inference's cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billed_usd: Option<f64>,
    /// Input tokens over the calls that reported them; `None` when none did.
    pub tokens_in: Option<u64>,
    /// Output tokens over the calls that reported them; `None` when none did.
    pub tokens_out: Option<u64>,
    /// Mean and p95 latency of the calls.
    pub latency: Latency,
    /// Experiment time in seconds, computed from call latencies (see ARCHITECTURE.md).
    pub time_s: f64,
    /// Weighted score, when the suite sets `weighted_score`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wscore: Option<f64>,
    /// The repeats' figures of a run with `--repeat K` (K > 1): absent otherwise, and in
    /// snapshots from before repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<RepeatStats>,
    /// Its case results, in case order; empty in a run the runner streamed to its sinks
    /// (the cases are in the [`CaseLog`](super::CaseLog) then).
    pub cases: Vec<CaseResult>,
    /// What the judges' calls for its cases cost, apart from [`Self::cost_usd`]; `None`
    /// when no judge reported a cost.
    #[serde(
        default,
        rename = "judge_cost",
        skip_serializing_if = "Option::is_none"
    )]
    pub judge_cost_usd: Option<f64>,
}

/// An experiment's figures over repeats: each case ran `k` times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatStats {
    /// Tries per case.
    pub k: usize,
    /// The half-width of the 95% confidence interval of the mean score over the cases'
    /// means (`score ± ci95`); `None` with fewer than two scored cases.
    pub ci95: Option<f64>,
    /// The share of cases that passed on every try (τ-bench's `pass^k`), errored ones
    /// counted as failing.
    pub pass_hat_k: f64,
    /// The share of cases that passed on at least one try (`pass@k`).
    pub pass_at_k: f64,
    /// Cases that passed on some tries and failed on others.
    pub flaky: usize,
}

/// Where the run came from and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The run's id (a UUID v7, so ids sort by time).
    pub id: String,
    /// The suite's name.
    pub suite: String,
    /// The config's `description:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The config's `project:` (the seeds' tracker project name), kept with the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The suite fingerprint (scorer, schema, thresholds, version): runs are compared only
    /// when theirs are equal.
    pub suite_fingerprint: String,
    /// The git branch it ran on; `None` when that was not known.
    pub branch: Option<String>,
    /// The git commit it ran at; `None` when that was not known.
    pub commit: Option<String>,
    /// The command: run, compare, record, check.
    pub command: Command,
    /// The cassette mode: replay, record, auto, live.
    #[serde(with = "super::settings::mode_text")]
    pub mode: Mode,
    /// The command line, as given.
    pub argv: Vec<String>,
    /// When it started (written RFC 3339, UTC).
    #[serde(with = "super::time::as_text")]
    pub started_at: super::Timestamp,
    /// When it finished; `None` when that was not recorded.
    #[serde(with = "super::time::as_opt_text")]
    pub finished_at: Option<super::Timestamp>,
    /// completed, interrupted or aborted.
    pub status: RunStatus,
    /// Effective settings (lineup, flags, concurrency) as given to the runner.
    pub settings: Settings,
    /// The scorer's metrics, primary first.
    pub metrics: Vec<MetricDef>,
    /// Weighted-score weights, in config order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weights: Vec<(String, f64)>,
    /// Contenders the suite refused, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

/// How a run ended. Written lowercase: `completed`, `interrupted`, `aborted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RunStatus {
    /// Every planned case ran.
    Completed,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// Stopped by `errors.abort_after` or after failed calls in a row (the notice said why).
    Aborted,
}

impl RunStatus {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Aborted => "aborted",
        }
    }

    /// Every status, in the order a list offers them.
    pub const ALL: [RunStatus; 3] = [
        RunStatus::Completed,
        RunStatus::Interrupted,
        RunStatus::Aborted,
    ];

    /// The status a stored name stands for; `None` for a name this version does not know.
    pub fn parse(name: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The command a run was made by. Written lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Command {
    /// `evals run`: a look, with the per-case breakdown.
    Run,
    /// `evals compare`: contenders side by side.
    Compare,
    /// `evals record`: refresh the recordings (reports thresholds, never gates on them).
    Record,
    /// `evals check`: the CI gate against a baseline.
    Check,
    /// `evals drift`: the live models against the recordings (stored on branch `drift`).
    Drift,
}

impl Command {
    /// The cassette mode the command runs in when neither `--cassettes` nor
    /// `EVALS_CASSETTES` says: `record` records, `check` replays, `run` and `compare` are
    /// `auto` (CI then turns `auto` into replay: [`crate::cassette::mode::choose`]).
    pub fn default_mode(self) -> crate::cassette::Mode {
        use crate::cassette::Mode;
        match self {
            // Drift records into a folder of its own: `cassettes/` changes only by `--update`.
            Command::Record | Command::Drift => Mode::Record,
            Command::Check => Mode::Replay,
            Command::Run | Command::Compare => Mode::Auto,
        }
    }

    /// The command's name, as typed and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Run => "run",
            Command::Compare => "compare",
            Command::Record => "record",
            Command::Check => "check",
            Command::Drift => "drift",
        }
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A whole run: what every report renders. Its JSON form is the snapshot
/// (`results::snapshot`, versioned there).
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// Where the run came from and how it was made.
    pub run: RunInfo,
    /// Each experiment (contender × dataset), in the run's order.
    pub experiments: Vec<ExperimentResult>,
}

impl RunResult {
    /// The scorer's primary metric, whose value is each case's `score`; `None` when the run
    /// names none.
    pub fn primary_metric(&self) -> Option<&MetricDef> {
        self.run.metrics.iter().find(|m| m.primary)
    }

    /// Cases that errored, over every experiment.
    pub fn total_errors(&self) -> usize {
        self.experiments.iter().map(|e| e.errors).sum()
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_failed_call_keeps_what_failed_as_the_case_errors_kind() {
        use crate::cassette::CallError;
        let kind = |e: CallError| CaseError::from(e).kind;
        assert_eq!(
            kind(CallError::Transport("HTTP 500".into())),
            CaseErrorKind::Transport
        );
        // A local server that is not running: a transport error of the case, never a 0.
        assert_eq!(
            kind(CallError::NotListening(
                "nothing listens on 127.0.0.1:8000: is the server running?".into()
            )),
            CaseErrorKind::Transport
        );
        use crate::cassette::CassetteError;
        let at = std::path::PathBuf::from("a.json");
        assert_eq!(
            kind(CallError::Cassette(CassetteError::NotACassette {
                path: at.clone(),
                why: "corrupt".into()
            })),
            CaseErrorKind::Cassette
        );
        assert_eq!(
            kind(CallError::Cassette(CassetteError::Unwritable {
                path: at.clone(),
                why: "read-only".into()
            })),
            CaseErrorKind::RefusedWrite
        );
        assert_eq!(
            kind(CallError::TooLarge("9 MiB".into())),
            CaseErrorKind::TooLarge
        );
        let miss = crate::cassette::Miss {
            path: at,
            reason: crate::cassette::MissReason::NoCassette,
            hint: "run `evals record` to record it".into(),
        };
        let text = miss.to_string();
        let miss = CaseError::from(CallError::Miss(Box::new(miss)));
        assert_eq!(miss.kind, CaseErrorKind::Miss);
        assert_eq!(miss.message, text);
    }

    #[test]
    fn outcomes_are_written_as_their_names_and_any_other_name_is_kept() {
        let names = [
            "correct",
            "missed",
            "hallucinated",
            "incorrect",
            "invalid",
            "failed",
            "wrong",
        ];
        for name in names {
            let o: Outcome = serde_json::from_value(json!(name)).expect("reads");
            assert_eq!(serde_json::to_value(&o).expect("writes"), json!(name));
        }
        assert_eq!(Outcome::from("failed"), Outcome::Failed);
        assert_eq!(Outcome::from("wrong"), Outcome::Other("wrong".into()));
    }

    #[test]
    fn status_and_command_are_written_lowercase() {
        assert_eq!(
            serde_json::to_value(RunStatus::Interrupted).unwrap(),
            json!("interrupted")
        );
        assert_eq!(
            serde_json::to_value(RunStatus::Aborted).unwrap(),
            json!("aborted")
        );
        assert_eq!(
            serde_json::to_value(Command::Compare).unwrap(),
            json!("compare")
        );
        assert_eq!(RunStatus::Completed.to_string(), "completed");
        assert_eq!(Command::Record.to_string(), "record");
    }

    #[test]
    fn a_stored_status_reads_back_as_its_enum_and_an_unknown_one_as_none() {
        for s in RunStatus::ALL {
            assert_eq!(RunStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        }
        assert_eq!(RunStatus::parse("paused"), None);
        assert_eq!(RunStatus::parse("Completed"), None);
    }

    #[test]
    fn raw_is_output_when_it_adds_nothing() {
        assert!(raw_is_output("blue", Some(&json!("blue"))));
        assert!(raw_is_output("{\"a\": 1}", Some(&json!({"a": 1}))));
        assert!(raw_is_output(" {\n  \"a\": 1\n}\n", Some(&json!({"a": 1}))));
        assert!(!raw_is_output(
            "```json\n{\"a\": 1}\n```",
            Some(&json!({"a": 1}))
        ));
        assert!(!raw_is_output("Sure! {\"a\": 1}", Some(&json!({"a": 1}))));
        assert!(!raw_is_output("not json", None));
        assert!(!raw_is_output("blue ", Some(&json!("blue"))));
    }

    #[test]
    fn one_line_joins_lines_escapes_controls_and_cuts_at_200_characters() {
        assert_eq!(one_line("  Sure!\n\n It is\tblue. "), "Sure! It is blue.");
        assert_eq!(one_line("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        let long = "é".repeat(250);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), SAID_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(one_line(&"x".repeat(SAID_CHARS)), "x".repeat(SAID_CHARS));
    }
}
