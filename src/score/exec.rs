//! The exec scorer: your own scoring program, in any language, as long-lived workers
//! started like the exec adapter's (`crate::worker`: an argv, an allow-list environment,
//! scrubbed stderr in `log/scorer.<stamp>.log`, the whole lineage ended when it stops).
//!
//! A worker reads one JSON line per case,
//! `{"id", "case": {"id", "dataset", "variant", "input", "expected", "expected_components",
//! "metadata"}, "reply": {"output", "raw", "error", "usage", "tool_calls", "components"}}`,
//! and prints one line back,
//! `{"id", "value", "metrics": {name: number|null}, "passed"?, "outcomes"?: {name: word},
//! "diagnostics"?: {name: text}}`. `value` may be left out: it is then the primary metric's.
//! A metric it did not declare in `scorer.metrics`, a value outside 0..1, a crash or a line
//! that is not the protocol is an error of that case (kind `scorer`), named, never a 0.
//!
//! `evals verify` (and every run, before its first call) sends `{"id", "verify": case}` per
//! selected case and lists the `problems` it answers (`{"id", "problems": [text, ...]}`).
//!
//! The workers run on a small runtime of the scorer's own, so the synchronous
//! [`Scorer::score`] and [`Scorer::verify`] can use them from anywhere; the runner's
//! [`Scorer::score_checked`] awaits them without blocking.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{ScoreFuture, Scorer};
use crate::results::{CaseError, CaseErrorKind, Diagnostic, MetricDef, Outcome, Reply, Score};
use crate::suite::Case;
use crate::suite::config::MetricConfig;
use crate::worker::{Launch, Pool, StderrTo};

/// The variable holding an exec scorer worker's token: its descendants inherit it, and are
/// found by it when it stops.
const TOKEN_VAR: &str = "EVALS_SCORER_TOKEN";

/// A scorer program's workers and what they may report.
pub struct ExecScorer {
    metrics: Vec<MetricDef>,
    env: BTreeMap<String, String>,
    pass_env: Vec<String>,
    launch: Launch,
    timeout: Duration,
    pool: Arc<Pool>,
    /// Where the workers run; shut down (never dropped in place: a runtime cannot be
    /// dropped inside another's task) when the scorer goes.
    runtime: Option<tokio::runtime::Runtime>,
}

/// Everything the config says about an exec scorer.
pub struct ExecScorerConfig<'a> {
    /// `scorer.command`.
    pub command: &'a [String],
    /// `scorer.metrics`.
    pub metrics: &'a [MetricConfig],
    /// `scorer.env`.
    pub env: &'a BTreeMap<String, String>,
    /// `scorer.pass_env`.
    pub pass_env: &'a [String],
    /// The longest answer line a worker may print (`cassettes.max_response_bytes`).
    pub max_answer: u64,
}

impl ExecScorer {
    /// The scorer of `scorer: { kind: exec }`: checks the command and the metrics (at
    /// least one, unique names, at most one primary; none primary makes the first one
    /// so). Starts nothing yet. `at` names the config in messages; workers run in `cwd`.
    pub fn new(
        config: ExecScorerConfig<'_>,
        at: &str,
        cwd: &std::path::Path,
        timeout: Duration,
    ) -> Result<ExecScorer, String> {
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let log = std::path::PathBuf::from("log").join(format!("scorer.{stamp}.log"));
        let launch = Launch {
            role: "scorer",
            key: "scorer.command",
            command: config.command.to_vec(),
            cwd: cwd.to_path_buf(),
            stderr: StderrTo::File {
                path: cwd.join(&log),
                shown: log.display().to_string(),
            },
            readers: Arc::default(),
            max_answer: config.max_answer,
        };
        launch.check_program(at)?;
        if config.metrics.is_empty() {
            return Err(format!(
                "{at}: scorer.metrics is empty: declare the metrics the scorer reports, e.g. metrics: [{{ name: helpfulness, primary: true }}]"
            ));
        }
        let mut metrics: Vec<MetricDef> = Vec::new();
        for m in config.metrics {
            if m.name.trim().is_empty() {
                return Err(format!("{at}: scorer.metrics: a metric has an empty name"));
            }
            if metrics.iter().any(|d| d.name == m.name) {
                return Err(format!(
                    "{at}: scorer.metrics: '{}' is declared twice; keep one",
                    m.name
                ));
            }
            metrics.push(MetricDef {
                name: m.name.clone(),
                description: if m.description.is_empty() {
                    format!("{} (exec scorer)", m.name)
                } else {
                    m.description.clone()
                },
                primary: m.primary,
                higher_is_better: m.higher_is_better,
            });
        }
        match metrics.iter().filter(|m| m.primary).count() {
            0 => metrics[0].primary = true,
            1 => {}
            n => {
                return Err(format!(
                    "{at}: scorer.metrics: {n} metrics are primary; mark exactly one `primary: true`"
                ));
            }
        }
        // The primary metric first: every report shows the metrics in this order.
        metrics.sort_by_key(|m| !m.primary);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("evals-scorer")
            .enable_all()
            .build()
            .map_err(|e| format!("{at}: cannot start the exec scorer's runtime: {e}"))?;
        Ok(ExecScorer {
            metrics,
            env: config.env.clone(),
            pass_env: config.pass_env.to_vec(),
            launch,
            timeout,
            pool: Arc::default(),
            runtime: Some(runtime),
        })
    }

    /// A worker's whole environment: the allow-list, `pass_env`, `env`, and its token.
    fn worker_env(&self, token: &str) -> BTreeMap<OsString, OsString> {
        let mut out = crate::worker::basic_env(crate::env::process_vars(), &self.pass_env);
        out.extend(
            self.env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        out.insert(TOKEN_VAR.into(), token.into());
        out
    }

    /// Sends one line to an idle worker (or a new one) on the scorer's runtime and returns
    /// the line it answers; a failure is said in words (the worker was stopped).
    fn exchange(&self, line: String) -> tokio::task::JoinHandle<Result<String, String>> {
        let pool = self.pool.clone();
        let launch = self.launch.clone();
        let token = format!("evals-scorer-{}", uuid::Uuid::now_v7().simple());
        let env = self.worker_env(&token);
        let timeout = self.timeout;
        let runtime = self
            .runtime
            .as_ref()
            .expect("the runtime lives as long as the scorer");
        runtime.spawn(async move {
            let mut worker = pool.take(|| launch.spawn(env, TOKEN_VAR, &token)).await?;
            let answer = worker
                .exchange(&line, timeout)
                .await
                .map_err(|f| f.message)?;
            pool.put(worker).await;
            Ok(answer)
        })
    }

    /// [`ExecScorer::exchange`], waited for from synchronous code (on any thread: the
    /// work happens on the scorer's runtime).
    fn exchange_blocking(&self, line: String) -> Result<String, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = self.exchange(line);
        self.runtime
            .as_ref()
            .expect("the runtime lives as long as the scorer")
            .spawn(async move {
                let _ = tx.send(handle.await);
            });
        match rx.recv() {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => Err(format!("scorer: its task failed: {e}")),
            Err(_) => Err("scorer: its runtime stopped".to_string()),
        }
    }

    /// Makes a worker's answer a score, refusing what the protocol does not allow.
    fn read_answer(&self, case: &Case, text: &str) -> Result<Score, String> {
        let answer: ScoreLine = serde_json::from_str(text).map_err(|e| {
            // Scrubbed before it is cut: a key across the cut would keep its first half.
            let shown: String = crate::secrets::scrub(text).chars().take(120).collect();
            format!("scorer: its answer is not the protocol's JSON line ({e}): {shown}")
        })?;
        let wanted = case.key();
        if answer.id.as_str() != Some(wanted.as_str()) {
            return Err(format!(
                "scorer: answered id {} for case {wanted}",
                answer.id
            ));
        }
        let declared: Vec<&str> = self.metrics.iter().map(|m| m.name.as_str()).collect();
        let in_range = |name: &str, v: f64| {
            if v.is_finite() && (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(format!(
                    "scorer: {name} is {v}, outside 0..1; a scorer reports every value from 0 to 1"
                ))
            }
        };
        let mut metrics: BTreeMap<String, Option<f64>> =
            declared.iter().map(|n| (n.to_string(), None)).collect();
        for (name, v) in answer.metrics {
            if !declared.contains(&name.as_str()) {
                return Err(format!(
                    "scorer: reported the metric '{name}', which scorer.metrics does not declare (declared: {}); declare it or drop it",
                    declared.join(", ")
                ));
            }
            let v = match v {
                Value::Null => None,
                Value::Number(n) => Some(in_range(&name, n.as_f64().unwrap_or(f64::NAN))?),
                other => {
                    return Err(format!(
                        "scorer: the metric '{name}' is {}, not a number or null",
                        super::kind_of(&other)
                    ));
                }
            };
            metrics.insert(name, v);
        }
        let primary = &self.metrics[0].name;
        let value = match (answer.value, metrics.get(primary).copied().flatten()) {
            (Some(v), _) => in_range("value", v)?,
            (None, Some(v)) => v,
            (None, None) => {
                return Err(format!(
                    "scorer: its answer has no value and no number for the primary metric '{primary}'"
                ));
            }
        };
        if metrics.get(primary).copied().flatten().is_none() {
            metrics.insert(primary.clone(), Some(value));
        }
        let mut names: Vec<&String> = answer.outcomes.keys().collect();
        names.extend(answer.diagnostics.keys());
        names.sort();
        names.dedup();
        let diagnostics = names
            .into_iter()
            .map(|name| Diagnostic {
                field: name.clone(),
                want: Value::Null,
                got: answer.diagnostics.get(name).cloned().unwrap_or(Value::Null),
                outcome: answer
                    .outcomes
                    .get(name)
                    .map(|w| Outcome::parse(w))
                    .unwrap_or_else(|| Outcome::Other("note".to_string())),
            })
            .collect();
        Ok(Score {
            value,
            metrics,
            diagnostics,
            passed: answer.passed,
        })
    }

    /// The score of a reply the model got wrong: 0 on every metric, the worker not asked.
    fn unusable(&self) -> Score {
        Score {
            value: 0.0,
            metrics: self
                .metrics
                .iter()
                .map(|m| (m.name.clone(), Some(0.0)))
                .collect(),
            diagnostics: vec![],
            passed: None,
        }
    }
}

impl Drop for ExecScorer {
    /// Stops the workers and lets their stderr readers write the last lines (two seconds
    /// at most), on a thread of its own: the scorer may be dropped inside another runtime,
    /// where its own could not be waited on.
    fn drop(&mut self) {
        let Some(rt) = self.runtime.take() else {
            return;
        };
        let (pool, launch) = (self.pool.clone(), self.launch.clone());
        let done = std::thread::spawn(move || {
            rt.block_on(async {
                pool.clear().await;
                launch.join_readers().await;
            });
            rt.shutdown_background();
        });
        let _ = done.join();
    }
}

/// What a worker prints for a case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreLine {
    id: Value,
    #[serde(default)]
    value: Option<f64>,
    #[serde(default)]
    metrics: BTreeMap<String, Value>,
    #[serde(default)]
    passed: Option<bool>,
    #[serde(default)]
    outcomes: BTreeMap<String, String>,
    #[serde(default)]
    diagnostics: BTreeMap<String, Value>,
}

/// What a worker prints for `verify`.
#[derive(Debug, Deserialize)]
struct VerifyLine {
    id: Value,
    #[serde(default)]
    problems: Vec<String>,
}

/// The case as a scorer sees it (the expected answer included, unlike an adapter).
fn case_json(case: &Case) -> Value {
    json!({
        "id": case.id,
        "dataset": case.dataset,
        "variant": case.variant,
        "input": case.input.to_value(),
        "expected": case.expected,
        "expected_components": case.expected_components,
        "metadata": case.metadata,
    })
}

/// The line a worker reads to score a case's reply.
pub fn request_line(case: &Case, reply: &Reply) -> String {
    json!({
        "id": case.key(),
        "case": case_json(case),
        "reply": {
            "output": reply.output,
            "raw": reply.raw,
            "error": reply.error,
            "usage": reply.usage,
            "tool_calls": reply.tool_calls,
            "components": reply.components,
        },
    })
    .to_string()
}

impl Scorer for ExecScorer {
    fn metrics(&self) -> Vec<MetricDef> {
        self.metrics.clone()
    }

    /// Blocks until the worker answers; an error of the case (which this signature cannot
    /// say) scores 0 with the error as a diagnostic. The runner uses
    /// [`Scorer::score_checked`], which says it.
    fn score(&self, case: &Case, reply: &Reply) -> Score {
        if reply.error.is_some() {
            return self.unusable();
        }
        let line = request_line(case, reply);
        match self
            .exchange_blocking(line)
            .and_then(|t| self.read_answer(case, &t))
        {
            Ok(s) => s,
            Err(e) => {
                let mut s = self.unusable();
                s.diagnostics.push(Diagnostic {
                    field: "scorer".to_string(),
                    want: Value::Null,
                    got: Value::String(e),
                    outcome: Outcome::Invalid,
                });
                s
            }
        }
    }

    fn score_checked<'a>(&'a self, case: &'a Case, reply: &'a Reply) -> ScoreFuture<'a> {
        Box::pin(async move {
            if reply.error.is_some() {
                return Ok(self.unusable());
            }
            let error = |e: String| CaseError::new(CaseErrorKind::Scorer, e);
            let text = self
                .exchange(request_line(case, reply))
                .await
                .map_err(|e| error(format!("scorer: its task failed: {e}")))?
                .map_err(error)?;
            self.read_answer(case, &text).map_err(error)
        })
    }

    fn verify(&self, case: &Case) -> Vec<String> {
        let line = json!({"id": case.key(), "verify": case_json(case)}).to_string();
        let text = match self.exchange_blocking(line) {
            Ok(t) => t,
            Err(e) => return vec![e],
        };
        match serde_json::from_str::<VerifyLine>(&text) {
            Ok(v) if v.id.as_str() == Some(case.key().as_str()) => v.problems,
            Ok(v) => vec![format!(
                "scorer: answered id {} for case {}",
                v.id,
                case.key()
            )],
            Err(e) => {
                let shown: String = crate::secrets::scrub(&text).chars().take(120).collect();
                vec![format!(
                    "scorer: its verify answer is not the protocol's JSON line ({e}): {shown}"
                )]
            }
        }
    }

    fn summary(&self, _case: &Case) -> String {
        let names: Vec<&str> = self.metrics.iter().map(|m| m.name.as_str()).collect();
        format!("exec scorer: {}", names.join(", "))
    }
}
