//! The `braintrust` tracker, on Braintrust's REST API (`BRAINTRUST_API_URL`, default
//! `https://api.braintrust.dev`, `Authorization: Bearer BRAINTRUST_API_KEY`): the project
//! (its id from `BRAINTRUST_PROJECT_ID`, else registered by name with `POST /v1/project`,
//! which returns the existing one of that name), an experiment per contender and dataset
//! (`POST /v1/experiment`), a row per case (`POST /v1/experiment/{id}/insert`, in batches:
//! input, expected, output or error, the metrics as scores, diagnostics, outcomes and usage
//! as metadata), and each experiment's page (`GET /v1/experiment/{id}/summarize`) for the
//! CLI to print.

use serde_json::{Map, Value, json};

use super::{RunView, Sent};
use crate::error::Result;
use crate::results::{CaseResult, ExperimentResult, RunResult};

/// Braintrust's API, when `BRAINTRUST_API_URL` names no other.
pub const DEFAULT_API_URL: &str = "https://api.braintrust.dev";

/// Rows per insert request.
const ROWS_PER_REQUEST: usize = 100;

/// Which project the experiments go in.
#[derive(Debug, Clone, PartialEq)]
pub enum Project {
    /// Its id (`BRAINTRUST_PROJECT_ID`), used as is.
    Id(String),
    /// Its name (`--project`, `project:`, the suite's name), registered first.
    Name(String),
}

impl Project {
    /// How `-v` names it.
    pub fn shown(&self) -> String {
        match self {
            Project::Id(id) => format!("id {id}"),
            Project::Name(n) => format!("'{n}'"),
        }
    }
}

/// Braintrust's REST client for one run.
#[derive(Debug)]
pub struct Client {
    api: String,
    key: String,
    project: Project,
    include_replies: bool,
    http: reqwest::Client,
}

impl Client {
    /// A client of the API at `api` with this key.
    pub fn new(
        api: String,
        key: String,
        project: Project,
        include_replies: bool,
    ) -> Result<Client> {
        Ok(Client {
            api: api.trim_end_matches('/').to_string(),
            key,
            project,
            include_replies,
            http: super::http_client()?,
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> std::result::Result<Value, String> {
        let url = format!("{}{path}", self.api);
        let what = format!("{method} {url}");
        let mut req = self.http.request(method, &url).bearer_auth(&self.key);
        if let Some(mut body) = body {
            crate::secrets::scrub_json(&mut body);
            req = req.json(&body);
        }
        let resp = req.send().await.map_err(|e| super::transport(&what, &e))?;
        if !resp.status().is_success() {
            return Err(super::failure(&what, resp).await);
        }
        let text = resp.text().await.map_err(|e| super::transport(&what, &e))?;
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| format!("{what}: the reply is not JSON: {e}"))
    }

    async fn post(&self, path: &str, body: Value) -> std::result::Result<Value, String> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn project_id(&self) -> std::result::Result<String, String> {
        match &self.project {
            Project::Id(id) => Ok(id.clone()),
            Project::Name(name) => {
                let reply = self.post("/v1/project", json!({ "name": name })).await?;
                id_of(&reply).ok_or_else(|| {
                    format!("POST {}/v1/project: the reply has no project id", self.api)
                })
            }
        }
    }

    pub(crate) async fn send(&self, view: &RunView<'_>) -> Sent {
        let mut sent = Sent::default();
        let (mut experiments, mut rows) = (0usize, 0usize);
        let stop = |mut sent: Sent, why: String, experiments: usize, rows: usize| {
            sent.failure = Some(format!(
                "{why} (sent before it: {}, {})",
                crate::text::plural(experiments, "experiment", "experiments"),
                crate::text::plural(rows, "row", "rows")
            ));
            sent
        };
        let project = match self.project_id().await {
            Ok(id) => id,
            Err(why) => return stop(sent, why, 0, 0),
        };
        for (i, e) in view.run.experiments.iter().enumerate() {
            let created = self
                .post("/v1/experiment", experiment_body(view.run, e, &project))
                .await;
            let id = match created.as_ref().map(id_of) {
                Ok(Some(id)) => id,
                Ok(None) => {
                    let why = format!(
                        "POST {}/v1/experiment: the reply has no experiment id",
                        self.api
                    );
                    return stop(sent, why, experiments, rows);
                }
                Err(why) => return stop(sent, why.clone(), experiments, rows),
            };
            experiments += 1;
            let positions = view.positions(&e.dataset);
            let results = match view.results(i) {
                Ok(r) => r,
                Err(err) => return stop(sent, err.to_string(), experiments, rows),
            };
            let insert = format!("/v1/experiment/{id}/insert");
            let mut batch = Vec::new();
            for r in results {
                let r = match r {
                    Ok(r) => r,
                    Err(err) => return stop(sent, err.to_string(), experiments, rows),
                };
                let case = positions
                    .get(&r.case)
                    .and_then(|&p| view.case(&e.dataset, p));
                batch.push(self.row(view.run, e, &r, case.as_ref()));
                if batch.len() >= ROWS_PER_REQUEST {
                    let n = batch.len();
                    let events = std::mem::take(&mut batch);
                    if let Err(why) = self.post(&insert, json!({ "events": events })).await {
                        return stop(sent, why, experiments, rows);
                    }
                    rows += n;
                }
            }
            if !batch.is_empty() {
                let n = batch.len();
                if let Err(why) = self.post(&insert, json!({ "events": batch })).await {
                    return stop(sent, why, experiments, rows);
                }
                rows += n;
            }
            // The page's address: a server without the summary (an older self-hosted one)
            // leaves the experiment without a link, nothing worse.
            let summary = self
                .call(
                    reqwest::Method::GET,
                    &format!("/v1/experiment/{id}/summarize?summarize_scores=false"),
                    None,
                )
                .await;
            if let Ok(s) = summary
                && let Some(url) = s.get("experiment_url").and_then(Value::as_str)
            {
                sent.urls.push(format!(
                    "{} on {}: {url}",
                    crate::report::format::contender_label(&e.contender),
                    e.dataset
                ));
            }
        }
        sent.summary = Some(format!(
            "tracker braintrust: {}, {} sent to {}",
            crate::text::plural(experiments, "experiment", "experiments"),
            crate::text::plural(rows, "row", "rows"),
            self.api
        ));
        sent
    }

    /// One case as a row: input, expected, output (or error), scores, metadata.
    fn row(
        &self,
        run: &RunResult,
        e: &ExperimentResult,
        c: &CaseResult,
        case: Option<&crate::suite::Case>,
    ) -> Value {
        let mut row = Map::new();
        row.insert(
            "id".into(),
            json!(format!("{}:{}:{}", run.run.id, e.dataset, c.case)),
        );
        if let Some(case) = case {
            row.insert("input".into(), case.input.to_value());
            if let Some(x) = &case.expected {
                row.insert("expected".into(), x.clone());
            } else if let Some(x) = &case.expect {
                row.insert("expected".into(), x.clone());
            }
        }
        match &c.error {
            Some(err) => {
                row.insert("error".into(), json!(err.message));
            }
            None if self.include_replies => {
                let output = c
                    .output
                    .clone()
                    .or_else(|| c.raw.clone().map(Value::String))
                    .unwrap_or(Value::Null);
                row.insert("output".into(), output);
            }
            None => {}
        }
        let scores: Map<String, Value> = c
            .metrics
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        row.insert("scores".into(), Value::Object(scores));
        let mut outcomes: std::collections::BTreeMap<&str, u64> = Default::default();
        for d in &c.diagnostics {
            *outcomes.entry(d.outcome.as_str()).or_default() += 1;
        }
        let mut meta = json!({
            "case": c.case,
            "dataset": e.dataset,
            "variant": c.variant,
            "contender": e.contender.id,
            "score": c.score,
            "passed": c.passed,
            "failed_thresholds": c.failed_thresholds,
            "diagnostics": c.diagnostics,
            "outcomes": outcomes,
            "usage": c.usage,
            "latency_s": c.latency_s,
            "duration_s": c.duration_s,
            "tags": c.tags,
        });
        if let Some(err) = &c.error {
            meta["error_kind"] = json!(err.kind);
        }
        if let Some(why) = &c.reply_error {
            meta["unusable"] = json!(true);
            if self.include_replies {
                meta["reply_error"] = json!(why);
            }
        }
        if c.tries() > 1 {
            meta["tries"] = json!(c.tries());
            meta["passes"] = json!(c.passes());
        }
        row.insert("metadata".into(), meta);
        let mut metrics = Map::new();
        if let Some(t) = c.usage.input_tokens {
            metrics.insert("prompt_tokens".into(), json!(t));
        }
        if let Some(t) = c.usage.output_tokens {
            metrics.insert("completion_tokens".into(), json!(t));
        }
        if let (Some(a), Some(b)) = (c.usage.input_tokens, c.usage.output_tokens) {
            metrics.insert("tokens".into(), json!(a + b));
        }
        if !metrics.is_empty() {
            row.insert("metrics".into(), Value::Object(metrics));
        }
        Value::Object(row)
    }
}

/// The experiment of one contender on one dataset, named so runs of it sort by time.
fn experiment_body(run: &RunResult, e: &ExperimentResult, project: &str) -> Value {
    let info = &run.run;
    let c = &e.contender;
    json!({
        "project_id": project,
        "name": format!("{} · {} · {} · {}", info.suite, c.id, e.dataset, info.started_at),
        "description": info.description,
        "ensure_new": true,
        "metadata": {
            "run_id": info.id,
            "suite": info.suite,
            "command": info.command.as_str(),
            "mode": info.mode.to_string(),
            "branch": info.branch,
            "commit": info.commit,
            "contender": c.id,
            "provider": c.provider,
            "model": c.model,
            "effort": c.effort,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
            "dataset": e.dataset,
            "cases": e.cases_total,
            "errors": e.errors,
            "means": e.means,
            "score": e.score,
            "cost_usd": e.cost_usd,
        },
    })
}

fn id_of(v: &Value) -> Option<String> {
    v.get("id").and_then(Value::as_str).map(str::to_string)
}
