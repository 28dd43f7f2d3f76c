//! The suite config: `.llm-evals.config.yml` parsed into typed sections.
//!
//! Parsing is strict: an unknown key is an error naming the file, the line and column,
//! and the closest known key. Provider sections are the top-level keys that are not
//! settings: `openrouter`, `openai`, `fake`, `mock`, `typesafe`, any name with a `base_url`, or
//! any name whose `kind:` names a registered provider.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::bounds;
use super::schema::Schema;
use crate::error::{Error, Result};

/// Top-level keys that are settings rather than provider sections.
pub const SETTING_KEYS: &[&str] = &[
    "suite",
    "description",
    "project",
    "version",
    "request_types",
    "adapter",
    "scorer",
    "minimum_scores",
    "defaults",
    "results",
    "cassettes",
    "pricing",
    "weighted_score",
    "errors",
    "env_files",
    "history",
    "tracker",
    "otlp",
    "logfire",
    "braintrust",
    "notes",
    "gate",
];

/// Providers the tool knows by name.
pub const KNOWN_PROVIDERS: &[&str] = &[
    "openrouter",
    "openai",
    "fake",
    "mock",
    "typesafe",
    "anthropic",
    "gemini",
];

/// The request types providers produce; a suite names the ones its adapter sends.
pub const REQUEST_TYPES: &[&str] = &["prompt", "typesafe"];

/// The parsed config file.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The suite's name (`suite:`), kept with every run; the folder name when absent.
    pub suite: Option<String>,
    /// One line about the suite, shown in reports.
    pub description: Option<String>,
    /// The tracker project name (`project:`), kept with the run.
    pub project: Option<String>,
    /// `version:`: bump it when scoring changes (it is part of the suite fingerprint).
    pub version: Option<Value>,
    /// `request_types:` (required): what the adapter sends (`prompt`, `typesafe`).
    pub request_types: Option<Vec<String>>,
    /// `adapter:`: what the model sees (the prompt adapter when absent).
    pub adapter: Option<AdapterConfig>,
    /// `scorer:`: one scorer or a list of them.
    pub scorer: Option<OneOrMany<ScorerConfig>>,
    /// `minimum_scores:`: metric → the least a contender must reach to pass.
    pub minimum_scores: BTreeMap<String, f64>,
    /// `defaults:`: settings every contender starts from.
    pub defaults: Defaults,
    /// `results:`: where snapshots go and what is shown.
    pub results: ResultsConfig,
    /// `cassettes:`: where recordings live and what the fingerprint leaves out.
    pub cassettes: CassettesConfig,
    /// `pricing:`: dollars per million tokens by model, for providers that report no cost.
    pub pricing: IndexMap<String, Pricing>,
    /// `weighted_score:`: the weights of the weighted-score column.
    pub weighted_score: Option<WeightedScore>,
    /// `errors:`: when a run stops early.
    pub errors: ErrorsConfig,
    /// `env_files:`: `KEY=VALUE` files read for keys (never over the environment).
    pub env_files: Vec<String>,
    /// Provider sections in file order.
    pub providers: IndexMap<String, ProviderSection>,
    /// `history:`: where runs are kept when neither `--history` nor `EVALS_HISTORY` says.
    pub history: HistoryConfig,
    /// `tracker:`: the remote tracker the run's results go to beside the local snapshot
    /// (`--tracker` beats it; without either, the one tracker whose key is set).
    pub tracker: Option<TrackerName>,
    /// `otlp:`, `logfire:`, `braintrust:`: each tracker's own settings.
    pub trackers: TrackersConfig,
    /// `notes:`: what a run of this suite says last, passed or failed (a demo's next step,
    /// a team's page on what to do when the gate fails). Not part of the fingerprint.
    pub notes: Notes,
    /// `gate:`: how far cost, tokens and latency may rise over the baseline's (the
    /// `--max-*-increase` flags beat it). Not part of the fingerprint.
    pub gate: GateConfig,
}

/// `gate: { max_cost_increase: 10, max_tokens_increase: 20, max_latency_increase: 50 }`:
/// the rise (in percent) each may take on the cases a check shares with its baseline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    /// `--max-cost-increase`: dollars on the shared cases.
    #[serde(default, deserialize_with = "max_cost_increase")]
    pub max_cost_increase: Option<f64>,
    /// `--max-tokens-increase`: tokens in and out.
    #[serde(default, deserialize_with = "max_tokens_increase")]
    pub max_tokens_increase: Option<f64>,
    /// `--max-latency-increase`: the p50 of the recorded latency.
    #[serde(default, deserialize_with = "max_latency_increase")]
    pub max_latency_increase: Option<f64>,
}

fn max_cost_increase<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<f64>, D::Error> {
    percentage(d, "gate.max_cost_increase")
}

fn max_tokens_increase<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<f64>, D::Error> {
    percentage(d, "gate.max_tokens_increase")
}

fn max_latency_increase<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<f64>, D::Error> {
    percentage(d, "gate.max_latency_increase")
}

/// A percentage of 0 or more at `key` (`10` is 10%); anything else (a negative, `10%`,
/// `ten`) is an error naming the key and the fix (serde gives it the line and column).
fn percentage<'de, D: Deserializer<'de>>(
    d: D,
    key: &str,
) -> std::result::Result<Option<f64>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    match v.as_f64() {
        Some(p) if p.is_finite() && p >= 0.0 => Ok(Some(p)),
        _ => Err(de::Error::custom(format!(
            "{key} is {v}: give a percentage of 0 or more as a number (`{key}: 10` allows a rise of 10%)"
        ))),
    }
}

/// `notes: { passed: ..., failed: ... }`: a line the suite's author wants printed after a
/// run (`run`, `compare`, `check`), the one for how it ended.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Notes {
    /// Printed last when the run passed: what to try next.
    pub passed: Option<String>,
    /// Printed last when the run failed (a regression, a failed threshold, an error):
    /// whether that was expected, where to look.
    pub failed: Option<String>,
}

/// A tracker's name, as `tracker:` and `--tracker` write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TrackerName {
    /// The JSON snapshot alone (written for every run): no remote tracker.
    Local,
    /// As `local`.
    None,
    /// OTLP/HTTP traces to `OTEL_EXPORTER_OTLP_ENDPOINT`.
    Otlp,
    /// OTLP traces to Logfire (`LOGFIRE_TOKEN`).
    Logfire,
    /// An experiment per contender and dataset in Braintrust (`BRAINTRUST_API_KEY`).
    Braintrust,
}

/// The trackers' own sections (`logfire: { include_replies: true }`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrackersConfig {
    /// `otlp:`.
    pub otlp: TrackerSection,
    /// `logfire:`.
    pub logfire: TrackerSection,
    /// `braintrust:`.
    pub braintrust: TrackerSection,
}

/// One tracker's section.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TrackerSection {
    /// Whether the model's replies are sent: off by default for `otlp` and `logfire`
    /// (traces keep figures, not text), on for `braintrust` (its rows are the outputs).
    pub include_replies: Option<bool>,
}

/// `history: { url: postgres://… }` (or `mysql://…`) — a shared PostgreSQL or MySQL
/// history for every runner of the suite (the default is the project's SQLite file).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryConfig {
    /// A `postgres://` / `postgresql://` / `mysql://` / `mariadb://` URL, or a SQLite file
    /// (relative to the project).
    pub url: Option<String>,
}

/// `adapter:` — what the model sees.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum AdapterConfig {
    /// Built-in: render `system`/`user` templates (files beside the config or inline text).
    Prompt {
        /// The system template: a file beside the config or inline text.
        #[serde(default)]
        system: Option<String>,
        /// The user template: a file beside the config or inline text.
        #[serde(default)]
        user: Option<String>,
        /// Ask for a JSON object and parse the reply as JSON.
        #[serde(default)]
        json: bool,
        /// The tools offered to the model: OpenAI function definitions, inline (a list) or
        /// a JSON/YAML file beside the config holding that list.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<Value>,
        /// OpenAI's `tool_choice` (`auto`, `required`, `none`, or a function), sent as is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_choice: Option<Value>,
    },
    /// Your own program, speaking JSON lines on stdin/stdout.
    Exec {
        /// The worker's argv (never a shell string).
        command: Vec<String>,
        /// Variables set for the workers (secret-named values are scrubbed from all output).
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Variables copied from evals' environment into the workers' (which otherwise get
        /// only an allow-list: see [`crate::adapter::ExecAdapter`]).
        #[serde(default)]
        pass_env: Vec<String>,
        /// `upstreams:`: the other HTTP APIs the program calls (a tool's order lookup, a
        /// weather service), reached through the gateway and recorded beside the model's
        /// calls.
        #[serde(default, skip_serializing_if = "Upstreams::is_empty")]
        upstreams: Upstreams,
        /// The largest request body the gateway takes from a worker (default 32 MiB, at
        /// most [`bounds::MAX_BODY_BYTES`]): a larger one errors its case, naming this key.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "max_request_bytes"
        )]
        max_request_bytes: Option<u64>,
    },
}

/// Keys only one adapter kind takes: a key of the other kind is named as such.
const ADAPTER_KEYS: &[(&str, &[&str])] = &[
    (
        "prompt",
        &["system", "user", "json", "tools", "tool_choice"],
    ),
    (
        "exec",
        &[
            "command",
            "env",
            "pass_env",
            "upstreams",
            "max_request_bytes",
        ],
    ),
];

/// Variables evals sets for every exec worker itself: `pass_env` cannot name them.
pub const GATEWAY_VARS: &[&str] = &["OPENAI_BASE_URL", "EVALS_BASE_URL", "OPENAI_API_KEY"];

/// `scorer:` — what good means.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum ScorerConfig {
    /// Field-by-field comparison of a JSON reply against the case's `expected`.
    Fields {
        /// Inline, or a path to a JSON/YAML file beside the config.
        schema: SchemaSource,
    },
    /// Assertions (`equals`, `contains`, `regex`, `json_schema`, ...) on the reply.
    Assertions {
        /// Assertions applied to every case (a case's `expect` adds to and overrides them).
        #[serde(default)]
        expect: Option<Value>,
    },
    /// Your own scoring program, speaking JSON lines (see `score/exec.rs`).
    Exec {
        /// The scorer's argv (never a shell string).
        command: Vec<String>,
        /// The metrics it reports, declared so the leaderboard, weights and thresholds
        /// know them before it runs; the first `primary: true` one (else the first) ranks.
        #[serde(default)]
        metrics: Vec<MetricConfig>,
        /// Variables set for its workers.
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Variables copied from evals' environment into its workers' (which otherwise get
        /// only an allow-list, like an exec adapter's).
        #[serde(default)]
        pass_env: Vec<String>,
    },
    /// An LLM judge, asked for a verdict per metric; its calls are recorded and replayed
    /// like the contenders' (see `score/judge.rs`).
    Judge {
        /// The model that judges.
        judge: JudgeModel,
        /// The rubric template (a file beside the config, or inline text); without it the
        /// built-in rubrics of `accuracy` and `relevancy`.
        #[serde(default)]
        rubric: Option<String>,
        /// The verdict's scale, `[low, high]`, normalised to 0..1 (default `[1, 5]`).
        #[serde(default)]
        scale: Option<[f64; 2]>,
        /// The metrics it judges (default: `accuracy`, `relevancy` without a rubric).
        #[serde(default)]
        metrics: Vec<MetricConfig>,
    },
    /// The reply's UI payloads (`components`) of one protocol and version, checked apart
    /// from its text against the case's `expected_components`, or by your program (see
    /// `score/components.rs`).
    Components {
        /// The metric's name, its column (default `components`).
        #[serde(default)]
        name: Option<String>,
        /// The protocol whose components are judged (`a2ui`).
        protocol: String,
        /// The version they must declare (`"0.8"`): another version fails the check.
        #[serde(deserialize_with = "version_text")]
        version: String,
        /// How they compare with `expected_components` (default `exact`); not with
        /// `command`.
        #[serde(default, rename = "match")]
        compare: Option<ComponentMatch>,
        /// Your checking program (an exec scorer's argv), handed the selected components
        /// and the case with its metadata, in place of `match`.
        #[serde(default)]
        command: Option<Vec<String>>,
        /// The metrics your program reports (default: one, `name`).
        #[serde(default)]
        metrics: Vec<MetricConfig>,
        /// Variables set for your program's workers.
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Variables copied from evals' environment into your program's workers.
        #[serde(default)]
        pass_env: Vec<String>,
    },
}

/// How `kind: components` compares the reply's components with the case's expected ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ComponentMatch {
    /// The payloads, in order, equal the expected ones as JSON (numbers by value, key
    /// order aside).
    Exact,
    /// Each expected payload is a subset of the reply's payload in its place (objects'
    /// keys recursively; lists item by item).
    Subset,
    /// The payloads are JSON lines, as A2UI streams them: the messages of every selected
    /// component, in order, equal the expected ones.
    Jsonl,
}

impl ComponentMatch {
    /// Its name, as `match:` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentMatch::Exact => "exact",
            ComponentMatch::Subset => "subset",
            ComponentMatch::Jsonl => "jsonl",
        }
    }
}

/// The model a judge scorer asks: `judge: { provider, model, temperature }`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeModel {
    /// The provider section (`openrouter`, a `base_url` section of `providers:`).
    pub provider: String,
    /// The model as its provider names it.
    pub model: String,
    /// The temperature sent (none when unset).
    #[serde(default)]
    pub temperature: Option<f64>,
}

/// One metric a scorer of your own declares (`scorer.metrics`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricConfig {
    /// The column's name, the key of the scorer's `metrics`.
    pub name: String,
    /// One line for the glossary under the leaderboard.
    #[serde(default)]
    pub description: String,
    /// Whether it ranks the leaderboard and gates the check.
    #[serde(default)]
    pub primary: bool,
    /// Whether a higher value is better (default true).
    #[serde(default = "higher_is_better")]
    pub higher_is_better: bool,
}

fn higher_is_better() -> bool {
    true
}

/// `scorer.schema`: the fields schema, or the file holding it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SchemaSource {
    /// A JSON or YAML file, relative to the config: a loaded [`crate::suite::Suite`]'s
    /// scorers hold it [`SchemaSource::Inline`] instead.
    File(String),
    /// The schema itself.
    Inline(Schema),
}

impl<'de> Deserialize<'de> for SchemaSource {
    // By hand, not `untagged`: a typo inside an inline schema must reach the user as itself
    // (`unknown field valeus`), not as "data did not match any variant".
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SchemaSource;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a schema (field: type, ...) or the path of a schema file")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<SchemaSource, E> {
                Ok(SchemaSource::File(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<SchemaSource, A::Error> {
                Schema::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(SchemaSource::Inline)
            }
        }
        d.deserialize_any(V)
    }
}

/// One value or a list of them (`effort: low` or `effort: [low, high]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneOrMany<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        macro_rules! one {
            ($name:ident, $t:ty, $de:ident) => {
                fn $name<E: de::Error>(self, v: $t) -> std::result::Result<Self::Value, E> {
                    T::deserialize(de::value::$de::<E>::new(v)).map(|x| OneOrMany(vec![x]))
                }
            };
        }
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value or a list of values")
            }
            one!(visit_str, &str, StrDeserializer);
            one!(visit_bool, bool, BoolDeserializer);
            one!(visit_i64, i64, I64Deserializer);
            one!(visit_u64, u64, U64Deserializer);
            one!(visit_f64, f64, F64Deserializer);
            fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Self::Value, E> {
                self.visit_str(&v)
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
                T::deserialize(de::value::UnitDeserializer::<E>::new()).map(|x| OneOrMany(vec![x]))
            }
            fn visit_none<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
                self.visit_unit()
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = seq.next_element()? {
                    out.push(x);
                }
                Ok(OneOrMany(out))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|x| OneOrMany(vec![x]))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A reasoning effort; `default` (or null) sends nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Effort(pub Option<String>);

/// Effort values a provider may take; anything else is a typo.
pub const EFFORTS: &[&str] = &[
    "default", "none", "minimal", "low", "medium", "high", "xhigh",
];

impl<'de> Deserialize<'de> for Effort {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Effort;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an effort (default, none, minimal, low, medium, high, xhigh)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Effort, E> {
                let v = v.trim();
                if !EFFORTS.contains(&v) {
                    let hint = crate::suggest::did_you_mean(v, EFFORTS)
                        .map(|s| format!("did you mean '{s}'?"))
                        .unwrap_or_else(|| format!("one of {}", EFFORTS.join(", ")));
                    return Err(E::custom(format!("unknown effort '{v}' ({hint})")));
                }
                Ok(Effort((v != "default").then(|| v.to_string())))
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Effort, E> {
                Ok(Effort(None))
            }
            fn visit_none<E: de::Error>(self) -> std::result::Result<Effort, E> {
                Ok(Effort(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A temperature; `default` (or null) sends nothing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Temperature(pub Option<f64>);

impl<'de> Deserialize<'de> for Temperature {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Temperature;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number between 0 and 2, or `default`")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Temperature, E> {
                if !(0.0..=2.0).contains(&v) {
                    return Err(E::custom(format!(
                        "temperature {v} is out of range (0 to 2)"
                    )));
                }
                Ok(Temperature(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Temperature, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Temperature, E> {
                self.visit_f64(v as f64)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Temperature, E> {
                match v.trim() {
                    "default" | "" => Ok(Temperature(None)),
                    other => other
                        .parse::<f64>()
                        .map_err(|_| E::custom(format!("temperature `{v}` is not a number; write a number like 0.1 or `default`")))
                        .and_then(|f| self.visit_f64(f)),
                }
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Temperature, E> {
                Ok(Temperature(None))
            }
            fn visit_none<E: de::Error>(self) -> std::result::Result<Temperature, E> {
                Ok(Temperature(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// `defaults:` — settings every contender starts from.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// Reasoning effort(s); a list makes one contender per value.
    pub effort: Option<OneOrMany<Effort>>,
    /// Temperature(s); a list makes one contender per value.
    pub temperature: Option<OneOrMany<Temperature>>,
    /// The most tokens a reply may have.
    pub max_tokens: Option<u32>,
    /// Cases in flight per experiment (`-p`; at most [`bounds::MAX_PARALLELISM`]).
    #[serde(default, deserialize_with = "parallelism")]
    pub parallelism: Option<usize>,
    /// Seconds per call (at most [`bounds::MAX_TIMEOUT_S`]).
    #[serde(default, deserialize_with = "timeout")]
    pub timeout: Option<f64>,
    /// Tries per case per contender (`--repeat K`, default 1; at most
    /// [`bounds::MAX_REPEAT`]): each its own recorded interaction, so `check` replays all K.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "repeat"
    )]
    pub repeat: Option<usize>,
}

/// `defaults.parallelism`, bounded where it is written (the error carries its line).
fn parallelism<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<usize>, D::Error> {
    bounded(
        d,
        "defaults.parallelism",
        bounds::MAX_PARALLELISM as u64,
        "cases in flight per experiment",
    )
    .map(|n| n.map(|n| n as usize))
}

/// `defaults.repeat`, bounded where it is written.
fn repeat<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<usize>, D::Error> {
    bounded(
        d,
        "defaults.repeat",
        bounds::MAX_REPEAT as u64,
        "tries per case",
    )
    .map(|n| n.map(|n| n as usize))
}

/// `cassettes.max_response_bytes`, bounded where it is written.
fn max_response_bytes<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<u64>, D::Error> {
    bounded(
        d,
        "cassettes.max_response_bytes",
        bounds::MAX_BODY_BYTES,
        "bytes (1 GiB)",
    )
}

/// `adapter.max_request_bytes`, bounded where it is written.
fn max_request_bytes<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<u64>, D::Error> {
    bounded(
        d,
        "adapter.max_request_bytes",
        bounds::MAX_BODY_BYTES,
        "bytes (1 GiB)",
    )
}

/// A components scorer's `version`: text, compared exactly. A YAML number (`0.8`) is
/// refused with the fix, never turned into text (`1.10` would read back as `1.1`).
fn version_text<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        other => Err(de::Error::custom(format!(
            "scorer.version is {other}, not text: quote it, version: \"{other}\""
        ))),
    }
}

/// A whole number at `key`, at most `max`: past it, an error naming the key, the value,
/// the bound and the fix (serde gives it the line and column).
fn bounded<'de, D: Deserializer<'de>>(
    d: D,
    key: &str,
    max: u64,
    unit: &str,
) -> std::result::Result<Option<u64>, D::Error> {
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    let too_many = || {
        de::Error::custom(format!(
            "{key} is {n}: at most {max} {unit}: give a smaller number"
        ))
    };
    match (n.as_u64(), n.as_f64()) {
        (Some(v), _) => bounds::at_most(v, max, unit)
            .map(Some)
            .map_err(|_| too_many()),
        // A whole number past what a u64 holds (YAML reads it as a float).
        (None, Some(f)) if f.fract() == 0.0 && f > 0.0 => Err(too_many()),
        _ => Err(de::Error::custom(format!(
            "{key} is {n}: give a whole number, at most {max} {unit}"
        ))),
    }
}

/// `defaults.timeout`, at most [`bounds::MAX_TIMEOUT_S`] (a larger one is no limit, and
/// past what a duration holds it would panic).
fn timeout<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<f64>, D::Error> {
    let Some(t) = Option::<f64>::deserialize(d)? else {
        return Ok(None);
    };
    if t > bounds::MAX_TIMEOUT_S {
        // `1e300`, not its 301 digits.
        let shown = if t < 1e9 {
            t.to_string()
        } else {
            format!("{t:e}")
        };
        return Err(de::Error::custom(format!(
            "defaults.timeout is {shown}: at most {} seconds (a day): give the seconds a call may take, e.g. 120",
            bounds::MAX_TIMEOUT_S
        )));
    }
    Ok(Some(t))
}

/// `results:` — where snapshots go.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsConfig {
    /// Save a JSON snapshot of every run (default yes).
    pub autosave: Option<bool>,
    /// The folder snapshots and stamped reports go to.
    pub destination: Option<String>,
    /// Refused with a clear error: evals writes no temporary JSON.
    pub temp_dir: Option<String>,
    /// What `compare` shows when it ends.
    pub display: Option<Display>,
}

/// `results.display`: whether a run ends with the leaderboard, the browser report, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Display {
    /// No leaderboard (a report asked for with `--format` or `-o` is still written).
    None,
    /// The terminal leaderboard (the default).
    Tui,
    /// The HTML report, written beside the snapshots and opened in the browser (never on
    /// CI; `--no-open` writes it only), instead of the terminal leaderboard.
    Browser,
    /// The terminal leaderboard and the browser report.
    Both,
}

/// `cassettes:` — where recordings live and what the fingerprint leaves out.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CassettesConfig {
    /// The cassette folder, relative to the config (default `cassettes`).
    pub dir: Option<String>,
    /// Request body fields left out of the fingerprint (dotted paths).
    #[serde(default)]
    pub ignore_fields: Vec<String>,
    /// Regexes whose matches are replaced in a cassette before it is written.
    #[serde(default)]
    pub redact: Vec<String>,
    /// Query parameters whose values are credentials, beside the built-in `api_key`,
    /// `access_token`, `key`, `token`, `sig`, `signature`, `password` and `client_secret`:
    /// a request's URL keeps each as `[REDACTED]`, matched by name alone.
    #[serde(default)]
    pub redact_query: Vec<String>,
    /// The largest response body a call may return, live or replayed (default 8 MiB): a
    /// larger one errors its case instead of growing the cassette, the results and the
    /// history by its size. At most [`bounds::MAX_BODY_BYTES`].
    #[serde(default, deserialize_with = "max_response_bytes")]
    pub max_response_bytes: Option<u64>,
    /// Response fields a re-record may change without rewriting the cassette (dotted paths
    /// from the root of a model's response body or stream event), beside the built-in ones
    /// ([`crate::cassette::volatile::DEFAULT_VOLATILE_FIELDS`]: `id`, `created`,
    /// `system_fingerprint`...).
    #[serde(default)]
    pub volatile_fields: Vec<String>,
}

impl CassettesConfig {
    /// The largest response body, and the longest answer line an exec worker (adapter or
    /// scorer) may print: `max_response_bytes`, else 8 MiB.
    pub fn response_limit(&self) -> u64 {
        self.max_response_bytes
            .unwrap_or(crate::cassette::DEFAULT_MAX_RESPONSE_BYTES)
    }
}

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// Dollars per million prompt tokens.
    pub input: f64,
    /// Dollars per million completion tokens.
    pub output: f64,
    /// Dollars per million prompt tokens read from the provider's cache (OpenAI's
    /// `cached_tokens`, Anthropic's cache reads); unset, they cost `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
}

/// `weighted_score:` — the `wscore` column: accuracy, errors, cost and speed folded into
/// one number by the suite's weights (comparable within one table only).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WeightedScore {
    /// Metric (or `latency`, `cost`, `time`, `errors`) → its weight, in config order.
    pub weights: IndexMap<String, f64>,
}

/// `errors:` — when failed calls stop a run.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorsConfig {
    /// Stop starting calls once this many have failed.
    pub abort_after: Option<AbortAfter>,
}

/// `errors.abort_after: { total, percent }`: the failures after which no call starts.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AbortAfter {
    /// Failed calls (an error or an unusable reply) that stop the run.
    pub total: usize,
    /// And, if given, this percentage of the finished calls.
    pub percent: Option<f64>,
}

/// `rate_limit: { burst, per_minute }` on a provider, vendor or model.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Calls that may start at once.
    pub burst: u32,
    /// Calls per minute after the burst, evenly spaced.
    pub per_minute: u32,
}

/// `pause:` of a provider section: what a retry after a rate limit (a 429, a 529) holds
/// back, since a limit is per model at most providers and proxies (LiteLLM, vLLM) but
/// per account at some.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Pause {
    /// Every model of the section.
    Section,
    /// The OpenRouter vendor's models (`openrouter/anthropic`); the model in a section
    /// without vendors.
    Vendor,
    /// The model alone.
    Model,
}

/// A provider section: `openrouter:` (with `vendors:`), `fake:`, or a custom one with
/// `base_url:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// The registered provider that serves this section (`kind: canned`, one a Rust caller
    /// registered); without it, the section's name says (`openrouter:`, `fake:`), or
    /// `base_url` makes it an OpenAI-compatible one.
    pub kind: Option<String>,
    /// The OpenAI-compatible endpoint (`https://host/v1`).
    pub base_url: Option<String>,
    /// The variable holding the key (default per provider).
    pub api_key_env: Option<String>,
    /// The section's rate limit, shared by its models.
    pub rate_limit: Option<RateLimit>,
    /// What a retry after a rate limit pauses (default: the OpenRouter vendor, else the
    /// model alone); `section` for a proxy whose limit all its models share.
    pub pause: Option<Pause>,
    /// OpenRouter's vendors (`openai:`, `anthropic:`), each with its models.
    pub vendors: Option<IndexMap<String, VendorSection>>,
    /// The section's models.
    pub models: Option<Vec<ModelEntry>>,
    /// Which OpenAI API an `openai:` or `base_url` section's contenders are asked in:
    /// `chat` (chat completions, the default) or `responses` (the Responses API).
    pub api: Option<OpenAiApi>,
}

/// `api:` of an OpenAI-shaped section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpenAiApi {
    /// `POST /chat/completions`.
    Chat,
    /// `POST /responses`.
    Responses,
}

/// One vendor of an OpenRouter section (`openai:`, `anthropic:`): its models' ids read
/// `vendor/model`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VendorSection {
    /// The vendor's rate limit, shared by its models.
    pub rate_limit: Option<RateLimit>,
    /// The vendor's models.
    #[serde(default)]
    pub models: Vec<ModelEntry>,
}

/// `- gpt-4o-mini` or `- model: gpt-4.1-mini, effort: [low, high]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelEntry {
    /// The model name as the provider knows it.
    pub model: String,
    /// Reasoning effort(s), over `defaults:`.
    pub effort: Option<OneOrMany<Effort>>,
    /// Temperature(s), over `defaults:`.
    pub temperature: Option<OneOrMany<Temperature>>,
    /// The most tokens a reply may have, over `defaults:`.
    pub max_tokens: Option<u32>,
    /// This model's own rate limit.
    pub rate_limit: Option<RateLimit>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelEntryFull {
    model: String,
    effort: Option<OneOrMany<Effort>>,
    temperature: Option<OneOrMany<Temperature>>,
    max_tokens: Option<u32>,
    rate_limit: Option<RateLimit>,
}

impl<'de> Deserialize<'de> for ModelEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ModelEntry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a model name or { model: NAME, effort: ..., temperature: ... }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<ModelEntry, E> {
                Ok(ModelEntry {
                    model: v.to_string(),
                    effort: None,
                    temperature: None,
                    max_tokens: None,
                    rate_limit: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<ModelEntry, A::Error> {
                let f = ModelEntryFull::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ModelEntry {
                    model: f.model,
                    effort: f.effort,
                    temperature: f.temperature,
                    max_tokens: f.max_tokens,
                    rate_limit: f.rate_limit,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// Marker error for a top-level key that is neither a setting nor a provider; its
/// location is found afterwards by scanning the file (the custom error has none).
const UNKNOWN_TOP: &str = "\u{1}unknown-top-level-key:";

/// Marker error for a known provider's key whose value is not a section (`openai: 3`),
/// located like [`UNKNOWN_TOP`].
const NOT_A_SECTION: &str = "\u{1}provider-not-a-section:";

/// The keys of the settings' sections, by section: a key of one written at the top level
/// (`temprature: 0.1` for `defaults: { temperature: 0.1 }`) is named with its section.
const SECTION_KEYS: &[(&str, &[&str])] = &[
    (
        "defaults",
        &[
            "effort",
            "temperature",
            "max_tokens",
            "parallelism",
            "timeout",
            "repeat",
        ],
    ),
    ("results", &["autosave", "destination", "display"]),
    (
        "cassettes",
        &[
            "dir",
            "ignore_fields",
            "redact",
            "redact_query",
            "max_response_bytes",
            "volatile_fields",
        ],
    ),
    ("errors", &["abort_after"]),
    ("history", &["url"]),
    (
        "gate",
        &[
            "max_cost_increase",
            "max_tokens_increase",
            "max_latency_increase",
        ],
    ),
];

/// A top-level key's value when it is not a mapping: a provider section is one, so a
/// scalar or a list there is a misplaced or misspelt setting, never a provider.
enum TopValue {
    Section(Box<ProviderSection>),
    NotAMapping,
}

impl<'de> Deserialize<'de> for TopValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TopValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a provider section (a mapping)")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<TopValue, A::Error> {
                ProviderSection::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|s| TopValue::Section(Box::new(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<TopValue, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(TopValue::NotAMapping)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<TopValue, E> {
                Ok(TopValue::NotAMapping)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<TopValue, E> {
                Ok(TopValue::NotAMapping)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<TopValue, E> {
                Ok(TopValue::NotAMapping)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<TopValue, E> {
                Ok(TopValue::NotAMapping)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<TopValue, E> {
                Ok(TopValue::NotAMapping)
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<TopValue, E> {
                Ok(TopValue::NotAMapping)
            }
            fn visit_none<E: de::Error>(self) -> std::result::Result<TopValue, E> {
                Ok(TopValue::NotAMapping)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Config {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Config;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of settings and provider sections")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Config, A::Error> {
                let mut c = Config::default();
                while let Some(key) = m.next_key::<String>()? {
                    match key.as_str() {
                        "suite" => c.suite = m.next_value()?,
                        "description" => c.description = m.next_value()?,
                        "project" => c.project = m.next_value()?,
                        "version" => c.version = m.next_value()?,
                        "request_types" => c.request_types = m.next_value()?,
                        "adapter" => c.adapter = m.next_value()?,
                        "scorer" => c.scorer = m.next_value()?,
                        "minimum_scores" => c.minimum_scores = m.next_value()?,
                        "defaults" => c.defaults = m.next_value()?,
                        "results" => c.results = m.next_value()?,
                        "cassettes" => c.cassettes = m.next_value()?,
                        "pricing" => c.pricing = m.next_value()?,
                        "weighted_score" => c.weighted_score = m.next_value()?,
                        "errors" => c.errors = m.next_value()?,
                        "history" => c.history = m.next_value()?,
                        "tracker" => c.tracker = m.next_value()?,
                        "otlp" => c.trackers.otlp = m.next_value()?,
                        "logfire" => c.trackers.logfire = m.next_value()?,
                        "braintrust" => c.trackers.braintrust = m.next_value()?,
                        "notes" => c.notes = m.next_value()?,
                        "gate" => c.gate = m.next_value()?,
                        "env_files" => {
                            let v: OneOrMany<String> = m.next_value()?;
                            c.env_files = v.0;
                        }
                        _ => {
                            // A misspelt setting (`defualts:`) is named as such before its
                            // body is read as a provider section and fails on its keys.
                            if !KNOWN_PROVIDERS.contains(&key.as_str())
                                && crate::suggest::did_you_mean(&key, SETTING_KEYS).is_some()
                            {
                                return Err(de::Error::custom(format!("{UNKNOWN_TOP}{key}")));
                            }
                            // A provider section: known by name, custom with base_url, or
                            // naming its provider with `kind:` (checked against the
                            // registered providers when the run starts).
                            let section = match m.next_value::<TopValue>()? {
                                TopValue::Section(s) => *s,
                                // `temprature: 0.1`: a setting's key, not a provider.
                                TopValue::NotAMapping
                                    if !KNOWN_PROVIDERS.contains(&key.as_str()) =>
                                {
                                    return Err(de::Error::custom(format!("{UNKNOWN_TOP}{key}")));
                                }
                                // `openai: 3`: the provider's section must be a mapping.
                                TopValue::NotAMapping => {
                                    return Err(de::Error::custom(format!("{NOT_A_SECTION}{key}")));
                                }
                            };
                            if !KNOWN_PROVIDERS.contains(&key.as_str())
                                && section.base_url.is_none()
                                && section.kind.is_none()
                            {
                                return Err(de::Error::custom(format!("{UNKNOWN_TOP}{key}")));
                            }
                            // `api:` picks between OpenAI's two APIs: on another provider it
                            // would be ignored, so it is an error instead.
                            let openai_shaped = section.kind.is_none()
                                && (key == "openai" || !KNOWN_PROVIDERS.contains(&key.as_str()));
                            if section.api.is_some() && !openai_shaped {
                                return Err(de::Error::custom(format!(
                                    "{key}: `api:` chooses between OpenAI's chat and Responses APIs; it is for an `openai:` or a `base_url` section: remove it here"
                                )));
                            }
                            c.providers.insert(key, section);
                        }
                    }
                }
                Ok(c)
            }
        }
        d.deserialize_map(V)
    }
}

impl Config {
    /// Parses a config file's text; `path` is used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let config = serde_saphyr::from_str_with_options::<Config>(text, super::yaml::options())
            .map_err(|e| {
                // The agent-evals / old llm-evals lineup fails on its first vendor: say what
                // it is and how to rewrite it, not which key serde stumbled on.
                Error::Config(match super::upgrade::legacy_key(text) {
                    Some((line, key)) => {
                        super::upgrade::legacy_message(&path.display().to_string(), line, key)
                    }
                    None => yaml_error(text, path, &e),
                })
            })?;
        config.check_pass_env(text, path)?;
        config.check_results(text, path)?;
        config.check_upstreams(text, path)?;
        Ok(config)
    }

    /// `results.temp_dir` (the seed's "temporary JSON when autosave is false") would do
    /// nothing here: reports render from the run itself, never from a temporary file.
    fn check_results(&self, text: &str, path: &Path) -> Result<()> {
        if self.results.temp_dir.is_none() {
            return Ok(());
        }
        let (line, col) = find_top_level_key(text, "results")
            .and_then(|(l, _)| find_key_below(text, l, "temp_dir"))
            .unwrap_or((1, 1));
        Err(Error::Config(format!(
            "{}:{line}:{col}: results.temp_dir does nothing in evals: no temporary JSON is written \
             (reports are rendered from the run itself, and with `autosave: false` nothing is \
             saved); remove the key (keep snapshots with `autosave: true` and `destination:`)",
            path.display()
        )))
    }

    /// `adapter.pass_env` names variables, never one holding the suite's API keys (workers
    /// call the model through the gateway with a token of their own) nor one evals sets.
    fn check_pass_env(&self, text: &str, path: &Path) -> Result<()> {
        let Some(AdapterConfig::Exec {
            pass_env,
            upstreams,
            ..
        }) = &self.adapter
        else {
            return Ok(());
        };
        let key_vars: Vec<&str> = crate::suite::KEY_VARS
            .iter()
            .copied()
            .chain(
                self.providers
                    .values()
                    .filter_map(|p| p.api_key_env.as_deref()),
            )
            .chain(upstreams.key_vars())
            .collect();
        for name in pass_env {
            let problem = if !is_env_name(name) {
                format!(
                    "'{name}' is not a variable name (letters, digits and _, not starting with a digit); list each variable by its full name"
                )
            } else if key_vars.contains(&name.as_str()) {
                format!(
                    "'{name}' holds the suite's API key, which workers never get (they call the model through the gateway with a token of their own); remove it"
                )
            } else if GATEWAY_VARS.contains(&name.as_str()) {
                format!("'{name}' is set by evals for every worker (the gateway); remove it")
            } else {
                continue;
            };
            let (line, col) = find_list_item(text, "pass_env", name).unwrap_or((1, 1));
            return Err(Error::Config(format!(
                "{}:{line}:{col}: adapter.pass_env: {problem}",
                path.display()
            )));
        }
        Ok(())
    }

    /// Reads and parses a config file.
    pub fn load(path: &Path) -> Result<Config> {
        let text = crate::fs::read_text(path, &path.display().to_string())?;
        Config::parse(&text, path)
    }
}

/// Turns a serde-saphyr error into `file:line:col: message (did you mean ...?)`.
pub(crate) fn yaml_error(text: &str, path: &Path, e: &serde_saphyr::Error) -> String {
    let loc = e
        .location()
        .map(|l| (l.line() as usize, l.column() as usize));
    let at = match loc {
        Some((l, c)) => format!("{}:{l}:{c}", path.display()),
        None => path.display().to_string(),
    };
    let inner = super::yaml::innermost(e);
    if let serde_saphyr::Error::Budget { breach, .. } = inner {
        return format!("{at}: {}", super::yaml::budget_message(breach));
    }
    // A syntax error (not a value of the wrong shape) inside a `[` or `{` the file never
    // closes is about that bracket: name where it opened.
    if !matches!(inner, serde_saphyr::Error::Message { .. })
        && let Some(u) = super::yaml::unclosed_flow(text)
    {
        let gave_up = match loc {
            Some((l, c)) if l != u.line => {
                format!(" (the YAML parser gave up at line {l}, column {c})")
            }
            _ => String::new(),
        };
        return format!(
            "{}:{}:{}: this '{}' is not closed: add the '{}' that ends it{gave_up}",
            path.display(),
            u.line,
            u.column,
            u.open,
            u.close()
        );
    }
    let raw = match e {
        serde_saphyr::Error::Message { msg, .. } => msg.clone(),
        other => {
            // The Display has a snippet; its first line is the message.
            let s = other.to_string();
            let first = s.lines().next().unwrap_or("").to_string();
            // "error: line 3 column 3: message" → "message"
            match first
                .split_once(": ")
                .and_then(|(_, rest)| rest.split_once(": "))
            {
                Some((_, msg)) => msg.to_string(),
                None => first,
            }
        }
    };
    if let Some(key) = raw.strip_prefix(NOT_A_SECTION) {
        let (line, col) = find_top_level_key(text, key).unwrap_or((1, 1));
        return format!(
            "{}:{line}:{col}: {key}: a provider section is a mapping (`{key}: {{ models: [...] }}`); write its keys under it",
            path.display()
        );
    }
    if let Some(key) = raw.strip_prefix(UNKNOWN_TOP) {
        let (line, col) = find_top_level_key(text, key).unwrap_or((1, 1));
        let mut known: Vec<&str> = SETTING_KEYS.to_vec();
        known.extend_from_slice(KNOWN_PROVIDERS);
        // A section's own key (or a near miss of one) written at the top level.
        let nested = || {
            SECTION_KEYS.iter().find_map(|(section, keys)| {
                crate::suggest::did_you_mean(key, keys).map(|k| (*section, k))
            })
        };
        let hint = match crate::suggest::did_you_mean(key, &known) {
            Some(s) => format!(" (did you mean '{s}'?)"),
            None if let Some((section, k)) = nested() => {
                let under = format!("write it under {section}: (`{section}: {{ {k}: ... }}`)");
                if k == key {
                    format!(" ('{k}' is a key of {section}: {under})")
                } else {
                    format!(" (did you mean '{k}'? a key of {section}: {under})")
                }
            }
            None => format!(
                " (a custom provider section needs base_url, or kind: naming a provider registered from Rust; known keys: settings like defaults, scorer, adapter, and providers {})",
                KNOWN_PROVIDERS.join(", ")
            ),
        };
        return format!("{}:{line}:{col}: unknown key '{key}'{hint}", path.display());
    }

    // serde: "unknown field `temprature`, expected one of `effort`, `temperature`", and
    // "unknown variant `integr`, expected one of `boolean`, `integer`, ...".
    for (prefix, what) in [("unknown field `", "key"), ("unknown variant `", "value")] {
        if let Some(rest) = raw.strip_prefix(prefix)
            && let Some((word, tail)) = rest.split_once('`')
        {
            let expected = expected_names(tail);
            let refs: Vec<&str> = expected.iter().map(String::as_str).collect();
            // A tagged section (`adapter:`) is reported at its own line: a key nested deeper
            // in it (`adapter.upstreams.shipping`) is in the section found where it is written.
            let key_at = match loc {
                Some((l, 1)) if what == "key" => find_key_below(text, l, word).or(loc),
                _ => loc,
            };
            let section = match what {
                "key" => key_at
                    .and_then(|(l, c)| enclosing_key(text, l, c))
                    .map(|s| format!(" in {s}"))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            // `pass_env` under `kind: prompt` is a key of the other kind, not a typo.
            let other_kind = match what {
                "key" if section == " in adapter" => ADAPTER_KEYS
                    .iter()
                    .find(|(_, keys)| keys.contains(&word))
                    .map(|(kind, _)| *kind),
                _ => None,
            };
            let hint = match (other_kind, crate::suggest::did_you_mean(word, &refs)) {
                (Some(kind), _) => format!(
                    " ('{word}' is a key of `kind: {kind}` adapters; remove it, or change the kind)"
                ),
                (None, Some(s)) => format!(" (did you mean '{s}'?)"),
                (None, None) if !refs.is_empty() => {
                    format!(" (expected one of: {})", refs.join(", "))
                }
                (None, None) => String::new(),
            };
            // A tagged section (`adapter:`, `scorer:`) is reported at its own line: point
            // at the key itself when it can be found below.
            let at = match loc {
                Some((l, 1)) if what == "key" => find_key_below(text, l, word)
                    .map(|(l, c)| format!("{}:{l}:{c}", path.display()))
                    .unwrap_or(at),
                _ => at,
            };
            return format!("{at}: unknown {what} '{word}'{section}{hint}");
        }
    }
    if raw.starts_with("invalid type: boolean")
        && let Some(msg) = super::yaml::yaml11_boolean(text, loc.map_or(1, |(l, _)| l))
    {
        return format!("{}:{msg}", path.display());
    }
    if let Some(rest) = raw.strip_prefix("duplicate mapping key: ") {
        let key = rest.split(',').next().unwrap_or(rest).trim();
        return format!("{at}: key '{key}' appears twice; merge the two into one");
    }
    if let Some(rest) = raw.strip_prefix("missing field `")
        && let Some((key, _)) = rest.split_once('`')
    {
        {
            let section = loc
                .and_then(|(l, c)| enclosing_key(text, l, c))
                .map(|s| format!(" in {s}"))
                .unwrap_or_default();
            return format!("{at}: missing key '{key}'{section}: add it");
        }
    }
    format!("{at}: {raw}")
}

/// `key:` written in the section that starts on `line` (1-based): its position, if found.
fn find_key_below(text: &str, line: usize, key: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.get(line.checked_sub(1)?)?;
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for (i, l) in lines.iter().enumerate().skip(line - 1) {
        // The section ends where the next top-level key starts.
        if i + 1 > line && !l.starts_with([' ', '\t', '#', '}', ']']) && !l.trim().is_empty() {
            break;
        }
        let skip = if i + 1 == line {
            first.find(':')? + 1
        } else {
            0
        };
        for (at, _) in l.match_indices(key).filter(|(at, _)| *at >= skip) {
            let before = l[..at].chars().next_back();
            let after = l[at + key.len()..].trim_start();
            if before.is_none_or(|c| !is_word(c)) && after.starts_with(':') {
                return Some((i + 1, at + 1));
            }
        }
    }
    None
}

/// A POSIX-style environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where `item` is written in the list under `key:` (1-based), the first time after the
/// key; the key itself when the item cannot be found.
fn find_list_item(text: &str, key: &str, item: &str) -> Option<(usize, usize)> {
    let pos = |offset: usize| {
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (line, col)
    };
    let start = text
        .match_indices(key)
        .find(|(i, _)| text[i + key.len()..].trim_start().starts_with(':'))?
        .0;
    let rest = &text[start..];
    let found = rest
        .match_indices(item)
        .find(|(i, _)| {
            let ok = |c: Option<char>| c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
            ok(rest[..*i].chars().next_back()) && ok(rest[i + item.len()..].chars().next())
        })
        .map(|(i, _)| start + i);
    Some(pos(found.unwrap_or(start)))
}

/// The names after serde's "expected one of": `` `a`, `b` `` → `[a, b]`.
fn expected_names(tail: &str) -> Vec<String> {
    tail.split_once("expected ")
        .map(|(_, list)| {
            list.trim_start_matches("one of ")
                .split(',')
                .map(|s| s.trim().trim_matches('`').to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Finds `key:` at the start of a line (a top-level key) and returns its 1-based position.
fn find_top_level_key(text: &str, key: &str) -> Option<(usize, usize)> {
    text.lines().enumerate().find_map(|(i, line)| {
        let rest = line.strip_prefix(key)?;
        rest.trim_start().starts_with(':').then_some((i + 1, 1))
    })
}

/// The key of the mapping that holds position `line`:`col` (1-based): an unclosed flow
/// mapping on that line (`defaults: { temprature: 0.1 }`), else the nearest line above with
/// less indentation that ends a `key:`.
fn enclosing_key(text: &str, line: usize, col: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let target = lines.get(line.checked_sub(1)?)?;
    let mut open: Vec<String> = Vec::new();
    let mut seen = String::new();
    for ch in target.chars().take(col.saturating_sub(1)) {
        match ch {
            '{' => {
                let before = seen.trim_end().trim_end_matches(':');
                let key = before
                    .rsplit(|c: char| c == '{' || c == ',' || c.is_whitespace())
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("- ");
                open.push(key.to_string());
            }
            '}' => {
                open.pop();
            }
            _ => {}
        }
        seen.push(ch);
    }
    if let Some(key) = open.pop().filter(|k| !k.is_empty()) {
        return Some(key);
    }
    // An error placed on a section's own line (`adapter:` at column 1: serde reports a
    // tagged section's unknown key there) is about that section.
    if col <= 1
        && !target.starts_with(' ')
        && !target.starts_with('#')
        && let Some((key, _)) = target.split_once(':')
    {
        return Some(key.trim().to_string());
    }
    let indent = target.len() - target.trim_start().len();
    if indent == 0 {
        return None;
    }
    lines[..line - 1].iter().rev().find_map(|l| {
        let t = l.trim_start();
        let ind = l.len() - t.len();
        if ind < indent && !t.is_empty() && !t.starts_with('#') {
            let key = t.trim_start_matches("- ").split(':').next()?.trim();
            Some(key.to_string())
        } else {
            None
        }
    })
}

/// Resolves a path written in the config relative to the config's folder, folding `..`
/// so messages show `cassettes/x`, not `fixtures/s/evals/../../../cassettes/x`.
pub fn resolve_path(config_dir: &Path, p: &str) -> PathBuf {
    use std::path::Component;
    let path = Path::new(p);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        config_dir.join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `adapter.upstreams:` — the other HTTP APIs an exec adapter's program calls, by name:
/// `shipping: { base_url, key_env, header }`, and `strict:` (default true) for all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstreams {
    /// Replay errors a case whose program no longer makes a recorded request (`strict:
    /// false`: only unexpected and exhausted requests error it). Default true.
    pub strict: bool,
    /// Each API by its name (`shipping`), in file order.
    pub apis: IndexMap<String, UpstreamConfig>,
    /// A `strict:` that is not a boolean, as written: reported with its place once the
    /// file is read (an error inside the tagged `adapter:` has none).
    bad_strict: Option<String>,
}

impl Default for Upstreams {
    fn default() -> Self {
        Upstreams {
            strict: true,
            apis: IndexMap::new(),
            bad_strict: None,
        }
    }
}

impl Upstreams {
    /// No API named.
    pub fn is_empty(&self) -> bool {
        self.apis.is_empty() && self.strict
    }

    /// The variables holding the APIs' credentials (`key_env`): secrets, never a worker's.
    pub fn key_vars(&self) -> impl Iterator<Item = &str> {
        self.apis.values().filter_map(|u| u.key_env.as_deref())
    }

    /// Whether a recording of `name` the program no longer makes errors its case.
    pub fn strict_for(&self, name: &str) -> bool {
        self.apis
            .get(name)
            .and_then(|u| u.strict)
            .unwrap_or(self.strict)
    }
}

/// One upstream API: where it really is and how its credential is sent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// The real API's base URL (`https://shipping.example/api`); requests are fingerprinted
    /// relative to it. Empty for a stdio MCP server (`command:`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_url: String,
    /// A stdio MCP server (`kind: mcp`): the command line evals starts it with in record
    /// mode (in the project folder), in place of a `base_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The variable holding its credential, sent by the gateway (never given to a worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_env: Option<String>,
    /// The header the credential goes in (default `authorization`, as `Bearer KEY`; any
    /// other header gets the key as it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// This API's own `strict:`, over the upstreams' one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// What it speaks: `http` (the default, any HTTP API) or `mcp` (an MCP server over
    /// streamable HTTP: JSON-RPC requests fingerprinted without their `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<UpstreamKind>,
}

/// What an upstream API speaks (`adapter.upstreams.<name>.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamKind {
    /// Any HTTP API: requests fingerprinted by method, path, query and body.
    Http,
    /// An MCP server, over streamable HTTP (`base_url`) or stdio (`command`): a JSON-RPC
    /// request is fingerprinted by its method and params (not its `id`); the response
    /// answers the request's own `id`; the optional server-to-client stream (`GET`) is
    /// answered 405 by the gateway.
    Mcp,
}

impl UpstreamConfig {
    /// The header the credential goes in, lowercase.
    pub fn header_name(&self) -> String {
        self.header
            .as_deref()
            .unwrap_or("authorization")
            .to_ascii_lowercase()
    }
}

/// `EVALS_UPSTREAM_<NAME>_URL`: the variable a worker reads an upstream's gateway URL from.
pub fn upstream_url_var(name: &str) -> String {
    format!(
        "EVALS_UPSTREAM_{}_URL",
        name.to_ascii_uppercase().replace('-', "_")
    )
}

impl Serialize for Upstreams {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if !self.strict {
            m.serialize_entry("strict", &false)?;
        }
        for (name, api) in &self.apis {
            m.serialize_entry(name, api)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Upstreams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Upstreams;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of API names to { base_url, key_env, header }, and strict")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Upstreams, A::Error> {
                let mut out = Upstreams::default();
                while let Some(key) = m.next_key::<String>()? {
                    if key == "strict" {
                        match m.next_value::<Value>()? {
                            Value::Bool(b) => out.strict = b,
                            other => {
                                out.bad_strict = Some(match other {
                                    Value::String(s) => s,
                                    v => v.to_string(),
                                })
                            }
                        }
                    } else {
                        let api: UpstreamConfig = m.next_value()?;
                        out.apis.insert(key, api);
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

impl Config {
    /// `adapter.upstreams`: names that make variable names, `http(s)://` base URLs, a
    /// `key_env` that names a variable and a `header` that needs one.
    fn check_upstreams(&self, text: &str, path: &Path) -> Result<()> {
        let Some(AdapterConfig::Exec { upstreams, .. }) = &self.adapter else {
            return Ok(());
        };
        let at = |keys: &[&str], problem: String| {
            let (line, col) = find_in_order(text, keys).unwrap_or((1, 1));
            Err(Error::Config(format!(
                "{}:{line}:{col}: adapter.upstreams.{problem}",
                path.display()
            )))
        };
        if let Some(bad) = &upstreams.bad_strict {
            return at(
                &["adapter", "upstreams", "strict"],
                format!(
                    "strict: '{bad}' is not true or false: write `strict: true` (the default) or `strict: false`"
                ),
            );
        }
        let mut vars: BTreeMap<String, &str> = BTreeMap::new();
        for (name, api) in &upstreams.apis {
            let base = ["adapter", "upstreams", name.as_str()];
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return at(
                    &base,
                    format!(
                        "{name}: an upstream's name is letters, digits, _ and - (it names the variable EVALS_UPSTREAM_<NAME>_URL): rename it"
                    ),
                );
            }
            let var = upstream_url_var(name);
            if let Some(other) = vars.insert(var.clone(), name) {
                return at(
                    &base,
                    format!(
                        "{name}: it and '{other}' both make the variable {var}: rename one of them"
                    ),
                );
            }
            let field = |f: &'static str| [base[0], base[1], base[2], f];
            if let Some(command) = &api.command {
                let problem = if api.kind != Some(UpstreamKind::Mcp) {
                    Some(format!(
                        "{name}.command: starts a stdio MCP server, and this upstream is not `kind: mcp`: add `kind: mcp`, or give a base_url instead"
                    ))
                } else if !api.base_url.is_empty() {
                    Some(format!(
                        "{name}: has both command and base_url: keep command for a stdio MCP server, or base_url for one over HTTP"
                    ))
                } else if command.first().is_none_or(|c| c.trim().is_empty()) {
                    Some(format!(
                        "{name}.command: is empty: write the server's command line, e.g. [python, server.py]"
                    ))
                } else if api.key_env.is_some() || api.header.is_some() {
                    Some(format!(
                        "{name}: key_env and header are for an API over HTTP; a stdio MCP server gets no credential from evals: remove them (pass what it needs with adapter.pass_env)"
                    ))
                } else {
                    None
                };
                if let Some(problem) = problem {
                    return at(&field("command"), problem);
                }
                continue;
            }
            let url = api.base_url.as_str();
            if url.is_empty() {
                return at(
                    &base,
                    format!(
                        "{name}: has no base_url: write the API's base URL (e.g. https://shipping.example/api), or for an MCP server over stdio `kind: mcp` and its `command: [...]`"
                    ),
                );
            }
            let rest = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"));
            if rest.is_none_or(|r| r.is_empty() || r.starts_with('/')) || url.contains(['?', '#']) {
                return at(
                    &field("base_url"),
                    format!(
                        "{name}.base_url: '{url}' is not an http:// or https:// URL (with no query): write the API's base URL, e.g. https://shipping.example/api"
                    ),
                );
            }
            if let Some(key) = &api.key_env
                && !is_env_name(key)
            {
                return at(
                    &field("key_env"),
                    format!(
                        "{name}.key_env: '{key}' is not a variable name (letters, digits and _, not starting with a digit): name the variable that holds the API's key"
                    ),
                );
            }
            if let Some(header) = &api.header {
                let token = !header.is_empty()
                    && header
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c));
                if !token {
                    return at(
                        &field("header"),
                        format!(
                            "{name}.header: '{header}' is not an HTTP header name: write one such as authorization or x-api-key"
                        ),
                    );
                }
                if api.key_env.is_none() {
                    return at(
                        &field("header"),
                        format!(
                            "{name}.header: says where the key goes, but no key_env says which variable holds it: add key_env, or remove header"
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

/// Where the last of `keys` is written, each `key:` found after the one before (1-based).
fn find_in_order(text: &str, keys: &[&str]) -> Option<(usize, usize)> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut from = 0;
    let mut found = None;
    for key in keys {
        let (i, _) = text[from..].match_indices(key).find(|(i, _)| {
            let at = from + i;
            text[..at].chars().next_back().is_none_or(|c| !is_word(c))
                && text[at + key.len()..].trim_start().starts_with(':')
        })?;
        found = Some(from + i);
        from += i + key.len();
    }
    let offset = found?;
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    Some((line, col))
}
