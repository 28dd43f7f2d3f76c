//! `llm_evals`: a record/replay regression gate for LLM evaluation suites, as a library.
//!
//! The `evals` command line is built on it and calls nothing else: a suite of cases runs
//! against a lineup of models, every provider exchange is recorded into a cassette and
//! replayed from it (no network, no key), each reply is scored, and the gate compares the
//! run with a baseline from the history. Everything the CLI does, a Rust program can do.
//!
//! # Run a suite
//!
//! Load a suite from its config ([`Suite::locate`] searches as `evals` does; [`Suite::load`]
//! takes the file) and [`evaluate`] it: replayed by default, nothing printed, nothing
//! stored. The [`RunResult`] is what `evals run` stores and reports.
//!
//! ```
//! use llm_evals::{RunOptions, Suite, evaluate};
//!
//! let toy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/toy");
//! let suite = Suite::locate(&toy, &Default::default())?;
//! let run = evaluate(&suite, RunOptions::default())?;
//! for e in &run.experiments {
//!     println!("{} on {}: {:?}", e.contender.id, e.dataset, e.means.get("field_accuracy"));
//! }
//! assert_eq!(run.total_errors(), 0);
//! # Ok::<(), llm_evals::Error>(())
//! ```
//!
//! [`evaluate`] blocks, and is safe to call from any context (inside a tokio runtime it runs
//! on a thread of its own); in async code, [`evaluate_async`] runs on the caller's runtime.
//! [`RunOptions`] chooses the cassette mode, your scorer, providers and adapter, the sinks,
//! where warnings go ([`runner::Notices`]: nowhere by default), the cancel token
//! ([`runner::Cancel`]: the library installs no signal handler) and the environment it may
//! read ([`env::Env`]: nothing by default).
//!
//! # A suite built in Rust
//!
//! [`SuiteBuilder`] takes what a config file and a JSONL dataset would hold, with no YAML:
//!
//! ```
//! use llm_evals::{RunOptions, SuiteBuilder, evaluate};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let suite = SuiteBuilder::new("capitals", dir.path())
//!     .provider("fake", json!({ "models": ["echo"] }))
//!     .scorer(json!({ "kind": "fields", "schema": { "city": "string" } }))
//!     .case("europe", json!({
//!         "id": "france",
//!         "input": "{\"city\": \"Paris\"}",
//!         "expected": { "city": "Paris" }
//!     }))
//!     .build()?;
//! let run = evaluate(&suite, RunOptions::default())?;
//! assert_eq!(run.experiments[0].means["field_accuracy"], Some(1.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Your own scorer
//!
//! Implement [`Scorer`] (its metrics, one primary, and a score per reply) and pass it
//! beside the config's scorers or in their place ([`score::ScorerChoice`]):
//!
//! ```
//! use std::sync::Arc;
//! use llm_evals::results::{MetricDef, Reply, Score};
//! use llm_evals::score::ScorerChoice;
//! use llm_evals::suite::Case;
//! use llm_evals::{RunOptions, Scorer, Suite, evaluate};
//!
//! /// 1 when the reply is short.
//! struct Brief;
//!
//! impl Scorer for Brief {
//!     fn metrics(&self) -> Vec<MetricDef> {
//!         vec![MetricDef {
//!             name: "brief".into(),
//!             description: "the reply is at most 200 characters".into(),
//!             primary: true,
//!             higher_is_better: true,
//!         }]
//!     }
//!
//!     fn score(&self, _case: &Case, reply: &Reply) -> Score {
//!         let raw = reply.raw.as_deref().unwrap_or("");
//!         let v = if raw.chars().count() <= 200 { 1.0 } else { 0.0 };
//!         Score::single("brief", v)
//!     }
//! }
//!
//! let toy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/toy");
//! let suite = Suite::locate(&toy, &Default::default())?;
//! let run = evaluate(&suite, RunOptions::default().scorer(ScorerChoice::Add(Arc::new(Brief))))?;
//! assert!(run.experiments.iter().all(|e| e.means.contains_key("brief")));
//! # Ok::<(), llm_evals::Error>(())
//! ```
//!
//! A panic in your scorer (or provider, or adapter) makes that case an error of kind
//! `crashed`; the run goes on, and the gate fails on it.
//!
//! # Your own provider, async or not
//!
//! A [`Provider`] either answers in the process ([`Provider::answer`], or
//! [`Provider::answer_async`] when the answer is async code) or sends HTTP requests that the
//! cassette layer records and replays ([`Provider::sends`], `build_request`,
//! `read_response`). Register it under the `kind:` a config section names:
//!
//! ```
//! use llm_evals::cassette::CallError;
//! use llm_evals::provider::{AnswerFuture, ChatRequest, Completion};
//! use llm_evals::suite::{Case, Contender};
//! use llm_evals::{Provider, RunOptions, SuiteBuilder, evaluate};
//! use serde_json::json;
//!
//! struct Shouty;
//!
//! impl Provider for Shouty {
//!     fn answer_async<'a>(
//!         &'a self,
//!         _contender: &'a Contender,
//!         _case: &'a Case,
//!         req: &'a ChatRequest,
//!     ) -> AnswerFuture<'a> {
//!         Box::pin(async move {
//!             tokio::task::yield_now().await; // any async code: an SDK, a database
//!             Ok(Completion { text: req.user.to_uppercase(), ..Completion::default() })
//!         })
//!     }
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let suite = SuiteBuilder::new("shout", dir.path())
//!     .provider("loud", json!({ "kind": "shouty", "models": ["v1"] }))
//!     .scorer(json!({ "kind": "assertions" }))
//!     .case("d", json!({ "id": "hi", "input": "hello", "expect": { "equals": "HELLO" } }))
//!     .build()?;
//! let run = evaluate(&suite, RunOptions::default().provider("shouty", Shouty))?;
//! assert_eq!(run.experiments[0].means["pass_rate"], Some(1.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Sinks, the history and the gate
//!
//! The runner tells each [`runner::Sink`] every event of the run as it happens (a tracker,
//! a live view; the history and the JSON snapshot are sinks too). A run stored in a
//! [`history::RunStore`] becomes a baseline, and [`gate::check`] is `evals check`
//! after the run:
//!
//! ```
//! use llm_evals::cassette::CallError;
//! use llm_evals::gate::{Baseline, CheckPlan, MissingBaseline, Rules};
//! use llm_evals::history::{RunStore, SqliteStore};
//! use llm_evals::provider::{ChatRequest, Completion};
//! use llm_evals::suite::{Case, Contender};
//! use llm_evals::{Provider, RunOptions, SuiteBuilder, evaluate};
//! use serde_json::json;
//!
//! /// A model that names one city, whatever it is asked.
//! struct Says(&'static str);
//!
//! impl Provider for Says {
//!     fn answer(&self, _: &Contender, _: &Case, _: &ChatRequest) -> Result<Completion, CallError> {
//!         Ok(Completion { text: format!("{{\"city\": \"{}\"}}", self.0), ..Completion::default() })
//!     }
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let suite = SuiteBuilder::new("capitals", dir.path())
//!     .provider("model", json!({ "kind": "says", "models": ["v1"] }))
//!     .adapter(json!({ "kind": "prompt", "user": "Which city is the capital? {{ input }}", "json": true }))
//!     .scorer(json!({ "kind": "fields", "schema": { "city": "string" } }))
//!     .case("europe", json!({ "id": "france", "input": "France", "expected": { "city": "Paris" } }))
//!     .build()?;
//! let history = dir.path().join(".evals/history.sqlite3");
//!
//! // main: the model names Paris; stored, it is the baseline.
//! let main = evaluate(&suite, RunOptions::default().branch("main").provider("says", Says("Paris")))?;
//! let mut store = SqliteStore::open(&history)?;
//! store.insert(&main)?;
//!
//! // A branch whose model now says Lyon: the gate against main fails.
//! let branch = evaluate(&suite, RunOptions::default().branch("pr").provider("says", Says("Lyon")))?;
//! let plan = CheckPlan::check(Some(Baseline::Branch("main".into())), Rules::new(0.02, false)?, MissingBaseline::Fail);
//! let checked = llm_evals::gate::check(&branch, &plan, &store);
//! assert!(!checked.passed(), "Paris became Lyon");
//! assert!(checked.refused.is_none(), "main's run is the baseline");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`report::render`] turns a run (and its comparison) into any format the CLI writes:
//! terminal, JSON, Markdown (the pull-request comment), JUnit, diff, HTML;
//! [`report::write`] writes it to an `io::Write` from a run whose cases stayed on disk
//! ([`results::CaseSource`]), a piece at a time.
//!
//! # Errors
//!
//! Every fallible call returns [`Error`]: match its variant, or its family
//! ([`Error::kind`]); [`Error::is_bad_input`] tells a problem with what was given from a
//! failure while running, and [`Error::message`] words it for a Rust caller or the command
//! line.
//!
//! ```
//! use llm_evals::error::{ErrorKind, Setting};
//! use llm_evals::{Error, gate::Rules};
//!
//! match Rules::new(1.5, false) {
//!     Err(Error::Invalid { setting: Setting::Tolerance, value, .. }) => assert_eq!(value, "1.5"),
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(Rules::new(1.5, false).unwrap_err().kind(), ErrorKind::Usage);
//! ```
//!
//! # Features
//!
//! `cli` (the `evals` binaries), `postgres` (a PostgreSQL history), `mysql` (a MySQL or
//! MariaDB history), `dashboard` and `trackers` are on by default; `default-features = false` keeps the run, the cassettes,
//! the scorers, the reports, the gate and the SQLite history.
//!
//! The examples (`cargo run --example NAME`): `run_suite`, `own_scorer`,
//! `own_async_provider`, `own_provider` (a wire format of its own, recorded and replayed),
//! `own_sink`, `gate_two_runs`. ARCHITECTURE.md has the module map and the data flow.

#![warn(missing_docs, missing_debug_implementations, unnameable_types)]

pub mod adapter;
mod blocking;
pub mod cassette;
#[cfg(feature = "dashboard")]
pub mod dashboard;
pub mod env;
pub mod error;
pub(crate) mod fingerprint;
pub mod fs;
pub mod gate;
pub mod history;
pub mod import;
pub mod provider;
pub mod report;
pub mod results;
pub mod runner;
pub mod score;
pub mod secrets;
pub(crate) mod suggest;
pub mod suite;
pub mod text;
#[cfg(feature = "trackers")]
pub mod tracker;
pub(crate) mod worker;

pub use adapter::Adapter;
pub use cassette::Mode;
pub use error::{Error, ErrorKind, Result};
pub use gate::{CheckPlan, Checked};
pub use history::{HistoryStore, RunStore, SqliteStore};
pub use provider::{Provider, Registry};
pub use report::{Format, Report};
pub use results::{CaseResult, ExperimentResult, RunResult};
pub use runner::{Cancel, Notices, Prepared, RunOptions, Sink, evaluate, evaluate_async};
pub use score::Scorer;
pub use suite::{Locate, Suite, SuiteBuilder};
