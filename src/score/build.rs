use std::sync::Arc;

use super::{Scorer, assertions::AssertionsScorer, fields::FieldsScorer, weighted};
use crate::error::{Error, Result};
use crate::results::{MetricDef, Reply, Score};
use crate::suite::config::{SchemaSource, ScorerConfig};
use crate::suite::{Case, Suite};

/// Which scorers a run uses: the config's (`scorer:`), yours instead, or yours beside them.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum ScorerChoice {
    /// The scorers the config declares.
    #[default]
    Config,
    /// Only this scorer; the config's `scorer:` is not built. Its metrics must name exactly
    /// one primary, and the config's `minimum_scores` and `weighted_score` must name its
    /// metrics.
    Replace(Arc<dyn Scorer>),
    /// The config's scorers, then this one: its metrics join theirs (none may share a
    /// name) as secondary columns; the config's primary metric still ranks and gates.
    Add(Arc<dyn Scorer>),
}

impl std::fmt::Debug for ScorerChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let metrics = |s: &std::sync::Arc<dyn crate::score::Scorer>| {
            s.metrics().into_iter().map(|m| m.name).collect::<Vec<_>>()
        };
        match self {
            ScorerChoice::Config => f.write_str("Config"),
            ScorerChoice::Replace(s) => f.debug_tuple("Replace").field(&metrics(s)).finish(),
            ScorerChoice::Add(s) => f.debug_tuple("Add").field(&metrics(s)).finish(),
        }
    }
}

/// Builds the suite's scorer (several scorers combine; the first one's primary metric
/// stays primary), and checks thresholds and weights against its metrics.
pub fn build(suite: &Suite) -> Result<Arc<dyn Scorer>> {
    build_with(suite, &ScorerChoice::Config)
}

/// Like [`build`], with your scorer instead of the config's or beside them; thresholds and
/// weights are checked against the metrics of the result.
pub fn build_with(suite: &Suite, choice: &ScorerChoice) -> Result<Arc<dyn Scorer>> {
    let at = &suite.display_path;
    let scorer = match choice {
        ScorerChoice::Config => from_config(suite)?,
        ScorerChoice::Replace(own) => {
            let primaries = own.metrics().iter().filter(|m| m.primary).count();
            if primaries != 1 {
                return Err(Error::Config(format!(
                    "the scorer given in place of the scorer of {at} declares {primaries} primary metrics: exactly one must be primary"
                )));
            }
            own.clone()
        }
        ScorerChoice::Add(own) => {
            let config = from_config(suite)?;
            let theirs = config.metrics();
            for m in own.metrics() {
                if theirs.iter().any(|t| t.name == m.name) {
                    return Err(Error::Config(format!(
                        "the scorer added to the scorer of {at} declares the metric '{}', which the config's scorer already reports: give it another name",
                        m.name
                    )));
                }
            }
            Arc::new(Combined {
                parts: vec![config, own.clone()],
            })
        }
    };
    check(suite, scorer)
}

/// The scorers the config declares, as one.
fn from_config(suite: &Suite) -> Result<Arc<dyn Scorer>> {
    let at = &suite.display_path;
    let mut parts: Vec<Arc<dyn Scorer>> = Vec::new();
    for s in &suite.scorers {
        match s {
            ScorerConfig::Fields {
                schema: SchemaSource::Inline(schema),
            } => {
                if schema.is_empty() {
                    return Err(Error::Config(format!(
                        "{at}: scorer.schema is empty: declare the fields to extract"
                    )));
                }
                for (name, f) in schema {
                    let enum_like = matches!(
                        f.kind,
                        crate::suite::FieldType::Enum | crate::suite::FieldType::MultiEnum
                    );
                    if enum_like && f.values.is_empty() {
                        return Err(Error::Config(format!(
                            "{at}: scorer.schema.{name}: a {} field needs `values: [...]`",
                            f.kind.name()
                        )));
                    }
                }
                parts.push(Arc::new(FieldsScorer::new(schema.clone())));
            }
            ScorerConfig::Fields {
                schema: SchemaSource::File(f),
            } => {
                return Err(Error::Config(format!(
                    "{at}: scorer.schema file {f} was not loaded"
                )));
            }
            ScorerConfig::Assertions { expect } => {
                let s = AssertionsScorer::new(expect.clone())
                    .map_err(|e| Error::Config(format!("{at}: scorer.expect: {e}")))?;
                parts.push(Arc::new(s));
            }
            ScorerConfig::Exec {
                command,
                metrics,
                env,
                pass_env,
            } => {
                let config = exec_config(suite, command, metrics, env, pass_env);
                let s =
                    super::exec::ExecScorer::new(config, at, &suite.project_dir, timeout(suite))
                        .map_err(Error::Config)?;
                parts.push(Arc::new(s));
            }
            ScorerConfig::Components {
                name,
                protocol,
                version,
                compare,
                command,
                metrics,
                env,
                pass_env,
            } => {
                let exec = command
                    .as_ref()
                    .map(|command| exec_config(suite, command, metrics, env, pass_env));
                let s = super::components::ComponentsScorer::new(
                    super::components::ComponentsConfig {
                        name: name.as_deref(),
                        protocol,
                        version,
                        compare: *compare,
                        exec,
                    },
                    at,
                    &suite.project_dir,
                    timeout(suite),
                )
                .map_err(Error::Config)?;
                parts.push(Arc::new(s));
            }
            ScorerConfig::Judge {
                judge,
                rubric,
                scale,
                metrics,
            } => {
                let s = super::judge::JudgeScorer::new(
                    suite,
                    judge,
                    rubric.as_deref(),
                    *scale,
                    metrics,
                )?;
                parts.push(Arc::new(s));
            }
        }
    }
    Ok(if parts.len() == 1 {
        parts.remove(0)
    } else {
        Arc::new(Combined { parts })
    })
}

/// A scoring program's settings from the config (`kind: exec`, or `kind: components` with
/// a `command`).
fn exec_config<'a>(
    suite: &Suite,
    command: &'a [String],
    metrics: &'a [crate::suite::config::MetricConfig],
    env: &'a std::collections::BTreeMap<String, String>,
    pass_env: &'a [String],
) -> super::exec::ExecScorerConfig<'a> {
    super::exec::ExecScorerConfig {
        command,
        metrics,
        env,
        pass_env,
        max_answer: suite.config.cassettes.response_limit(),
    }
}

/// How long a scoring program may take over one case: 5 × `defaults.timeout` (120 s
/// unset), as an exec adapter's worker.
fn timeout(suite: &Suite) -> std::time::Duration {
    std::time::Duration::from_secs_f64(suite.config.defaults.timeout.unwrap_or(120.0) * 5.0)
}

/// Checks the config's thresholds and weights against the scorer's metrics.
fn check(suite: &Suite, scorer: Arc<dyn Scorer>) -> Result<Arc<dyn Scorer>> {
    let at = &suite.display_path;
    let metrics = scorer.metrics();
    for name in suite.config.minimum_scores.keys() {
        if name != "score" && !metrics.iter().any(|m| &m.name == name) {
            let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
            let hint = crate::suggest::did_you_mean(name, &names)
                .map(|s| format!("did you mean '{s}'?"))
                .unwrap_or_else(|| format!("the scorer's metrics: {}", names.join(", ")));
            return Err(Error::Config(format!(
                "{at}: minimum_scores: unknown metric '{name}' ({hint})"
            )));
        }
    }
    if let Some(ws) = &suite.config.weighted_score {
        let weights: Vec<(String, f64)> = ws.weights.iter().map(|(k, v)| (k.clone(), *v)).collect();
        weighted::validate_weights(&weights, &metrics)
            .map_err(|e| Error::Config(format!("{at}: weighted_score: {e}")))?;
    }
    Ok(scorer)
}

/// Several scorers as one: metrics are the union; the first scorer's value is the score.
struct Combined {
    parts: Vec<Arc<dyn Scorer>>,
}

impl Scorer for Combined {
    fn metrics(&self) -> Vec<MetricDef> {
        let mut out: Vec<MetricDef> = Vec::new();
        for (i, p) in self.parts.iter().enumerate() {
            for mut m in p.metrics() {
                if i > 0 {
                    m.primary = false;
                }
                if !out.iter().any(|x| x.name == m.name) {
                    out.push(m);
                }
            }
        }
        out
    }

    fn score(&self, case: &Case, reply: &Reply) -> Score {
        merge(self.parts.iter().map(|p| p.score(case, reply)).collect())
    }

    fn score_checked<'a>(&'a self, case: &'a Case, reply: &'a Reply) -> super::ScoreFuture<'a> {
        Box::pin(async move {
            let mut scores = Vec::with_capacity(self.parts.len());
            for p in &self.parts {
                scores.push(p.score_checked(case, reply).await?);
            }
            Ok(merge(scores))
        })
    }

    fn score_in<'a>(
        &'a self,
        case: &'a Case,
        reply: &'a Reply,
        run: &'a super::ScoreContext<'a>,
    ) -> super::ScoreFuture<'a> {
        Box::pin(async move {
            let mut scores = Vec::with_capacity(self.parts.len());
            for p in &self.parts {
                scores.push(p.score_in(case, reply, run).await?);
            }
            Ok(merge(scores))
        })
    }

    fn verify(&self, case: &Case) -> Vec<String> {
        self.parts.iter().flat_map(|p| p.verify(case)).collect()
    }

    fn summary(&self, case: &Case) -> String {
        self.parts
            .iter()
            .map(|p| p.summary(case))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Several scorers' scores as one: the first one's value, every metric (the first report
/// of a name wins), every diagnostic, and a verdict failed if any part failed.
fn merge(scores: Vec<Score>) -> Score {
    let mut first: Option<Score> = None;
    for s in scores {
        match &mut first {
            None => first = Some(s),
            Some(f) => {
                for (k, v) in s.metrics {
                    f.metrics.entry(k).or_insert(v);
                }
                f.diagnostics.extend(s.diagnostics);
                f.passed = match (f.passed, s.passed) {
                    (Some(a), Some(b)) => Some(a && b),
                    (a, b) => a.or(b),
                };
            }
        }
    }
    first.unwrap_or(Score {
        value: 0.0,
        metrics: Default::default(),
        diagnostics: vec![],
        passed: None,
    })
}
