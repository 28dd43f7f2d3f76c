//! The `otlp` and `logfire` trackers: a run as OTLP traces, POSTed as OTLP/HTTP protobuf
//! (`application/x-protobuf`) to `…/v1/traces`. Each experiment is a trace: its span
//! (suite, project, model, provider, settings, case count, means) with a child span per
//! case (id, dataset, variant, score, each metric, outcome counts, duration, tokens and
//! cost, diagnostics as JSON cut at 4 KB; an error as the span's status and an `exception`
//! event). The model's reply text is sent only with `include_replies: true`.
//!
//! Case spans follow the OpenTelemetry GenAI semantic conventions as well: each carries
//! `gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.provider.name` and the token
//! usage, and a `gen_ai.evaluation.result` event per metric and one for the case's score
//! (`gen_ai.evaluation.name`, `…score.value`, `…score.label`, `…explanation`; `error.type`
//! when the case errored), parented to the span they judge as the conventions ask.
//!
//! The messages are opentelemetry-proto's (the OpenTelemetry project's own generated
//! types), encoded with prost; every string attribute passes through the egress scrubber.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span, Status, span, status,
};
use prost::Message as _;

use super::{Kind, RunView, Sent, Timing};
use crate::error::Result;
use crate::results::{CaseResult, ExperimentResult, RunResult};

/// Logfire's US region; `LOGFIRE_BASE_URL` names another.
pub const LOGFIRE_DEFAULT_URL: &str = "https://logfire-us.pydantic.dev";

/// Diagnostics longer than this (their JSON, in bytes) are cut, and say so.
pub const DIAGNOSTICS_MAX_BYTES: usize = 4096;

/// Spans per request: an experiment of 10,000 cases goes in 20 requests, none huge.
const SPANS_PER_REQUEST: usize = 512;

/// Sends a run's traces to one OTLP/HTTP endpoint.
#[derive(Debug)]
pub struct Exporter {
    kind: Kind,
    url: String,
    headers: Vec<(String, String)>,
    include_replies: bool,
    http: reqwest::Client,
}

impl Exporter {
    /// An exporter to `url` (the whole `…/v1/traces` URL) with these headers.
    pub fn new(
        kind: Kind,
        url: String,
        headers: Vec<(String, String)>,
        include_replies: bool,
    ) -> Result<Exporter> {
        Ok(Exporter {
            kind,
            url,
            headers,
            include_replies,
            http: super::http_client()?,
        })
    }

    /// `otlp` or `logfire`.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub(crate) async fn send(&self, view: &RunView<'_>) -> Sent {
        let (mut experiments, mut cases) = (0usize, 0usize);
        let stopped = |why: String, experiments: usize, cases: usize| Sent {
            summary: None,
            urls: vec![],
            failure: Some(format!(
                "{why} (sent before it: {}, {})",
                crate::text::plural(experiments, "experiment span", "experiment spans"),
                crate::text::plural(cases, "case span", "case spans")
            )),
        };
        for (i, e) in view.run.experiments.iter().enumerate() {
            let timing = view.timing(e);
            let trace = random_id::<16>();
            let root = random_id::<8>();
            let positions = view.positions(&e.dataset);
            let mut batch = vec![experiment_span(view.run, e, &timing, &trace, &root)];
            let results = match view.results(i) {
                Ok(r) => r,
                Err(err) => return stopped(err.to_string(), experiments, cases),
            };
            let mut in_batch = 0;
            for r in results {
                let r = match r {
                    Ok(r) => r,
                    Err(err) => return stopped(err.to_string(), experiments, cases),
                };
                let end = positions
                    .get(&r.case)
                    .and_then(|&p| timing.ends.get(p).copied())
                    .filter(|&t| t > 0)
                    .unwrap_or(timing.end);
                batch.push(self.case_span(e, &r, &timing, end, &trace, &root));
                in_batch += 1;
                if batch.len() >= SPANS_PER_REQUEST {
                    let spans = std::mem::take(&mut batch);
                    let roots = usize::from(spans.len() > in_batch);
                    if let Err(why) = self.post(spans).await {
                        return stopped(why, experiments, cases);
                    }
                    experiments += roots;
                    cases += in_batch;
                    in_batch = 0;
                }
            }
            if !batch.is_empty() {
                let roots = usize::from(batch.len() > in_batch);
                if let Err(why) = self.post(batch).await {
                    return stopped(why, experiments, cases);
                }
                experiments += roots;
                cases += in_batch;
            }
        }
        Sent {
            summary: Some(format!(
                "tracker {}: sent {experiments} experiment spans and {cases} case spans to {}",
                self.kind.name(),
                self.url
            )),
            urls: vec![],
            failure: None,
        }
    }

    async fn post(&self, spans: Vec<Span>) -> std::result::Result<(), String> {
        let body = request(spans).encode_to_vec();
        let what = format!("POST {}", self.url);
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/x-protobuf");
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let resp = req
            .body(body)
            .send()
            .await
            .map_err(|e| super::transport(&what, &e))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(super::failure(&what, resp).await)
        }
    }

    fn case_span(
        &self,
        e: &ExperimentResult,
        c: &CaseResult,
        timing: &Timing,
        end: u64,
        trace: &[u8],
        parent: &[u8],
    ) -> Span {
        let mut a = vec![
            text("gen_ai.operation.name", GEN_AI_OPERATION),
            text("gen_ai.request.model", &e.contender.model),
            text(
                "gen_ai.provider.name",
                gen_ai_provider(&e.contender.provider),
            ),
            text("evals.case.id", &c.case),
            text("evals.case.dataset", &e.dataset),
            text("evals.case.variant", &c.variant),
            text("evals.contender", &e.contender.id),
            number("evals.case.duration_s", c.duration_s),
        ];
        if let Some(s) = c.score {
            a.push(number("evals.case.score", s));
        }
        if let Some(p) = c.passed {
            a.push(flag("evals.case.passed", p));
        }
        for (m, v) in &c.metrics {
            if let Some(v) = v {
                a.push(number(&format!("evals.metric.{m}"), *v));
            }
        }
        let mut outcomes: std::collections::BTreeMap<&str, i64> = Default::default();
        for d in &c.diagnostics {
            *outcomes.entry(d.outcome.as_str()).or_default() += 1;
        }
        for (o, n) in outcomes {
            a.push(int(&format!("evals.outcome.{o}"), n));
        }
        if let Some(l) = c.latency_s {
            a.push(number("evals.case.latency_s", l));
        }
        if let Some(t) = c.usage.input_tokens {
            a.push(int("gen_ai.usage.input_tokens", t as i64));
        }
        if let Some(t) = c.usage.output_tokens {
            a.push(int("gen_ai.usage.output_tokens", t as i64));
        }
        if let Some(d) = c.usage.cost_usd {
            a.push(number("evals.case.cost_usd", d));
        }
        if c.tries() > 1 {
            a.push(int("evals.case.tries", c.tries() as i64));
            a.push(int("evals.case.passes", c.passes() as i64));
        }
        if c.truncated {
            a.push(flag("evals.case.truncated", true));
        }
        if !c.diagnostics.is_empty() {
            let json = serde_json::to_string(&c.diagnostics).unwrap_or_default();
            let (cut, was_cut) = cut_at(&json, DIAGNOSTICS_MAX_BYTES);
            a.push(text("evals.case.diagnostics", cut));
            if was_cut {
                a.push(flag("evals.case.diagnostics_truncated", true));
            }
        }
        if c.reply_error.is_some() {
            a.push(flag("evals.case.unusable", true));
        }
        // The reply, and what was said of an unusable one (a refusal quotes it), only when
        // asked: a trace backend is often wider open than the suite's results.
        if self.include_replies {
            let reply = c.raw.clone().or_else(|| {
                c.output.as_ref().map(|o| match o {
                    serde_json::Value::String(s) => s.clone(),
                    v => v.to_string(),
                })
            });
            if let Some(r) = reply {
                a.push(text("evals.case.reply", &r));
            }
            if let Some(why) = &c.reply_error {
                a.push(text("evals.case.reply_error", why));
            }
        }
        let duration = (c.duration_s.max(0.0) * 1e9) as u64;
        let start = end.saturating_sub(duration).max(timing.start).min(end);
        let evaluations = evaluation_events(c, end);
        let (status, mut events) = match &c.error {
            Some(err) => {
                let kind = serde_json::to_value(err.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                (
                    Some(Status {
                        code: status::StatusCode::Error as i32,
                        message: scrubbed(&err.message),
                    }),
                    vec![span::Event {
                        time_unix_nano: end,
                        name: "exception".into(),
                        attributes: vec![
                            text("exception.type", &kind),
                            text("exception.message", &err.message),
                        ],
                        dropped_attributes_count: 0,
                    }],
                )
            }
            None => (None, vec![]),
        };
        events.extend(evaluations);
        Span {
            trace_id: trace.to_vec(),
            span_id: random_id::<8>().to_vec(),
            parent_span_id: parent.to_vec(),
            name: scrubbed(&format!("case {}/{}", e.dataset, c.case)),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes: a,
            events,
            status,
            ..Default::default()
        }
    }
}

/// The OpenTelemetry GenAI semantic conventions' operation of a case span: one exchange
/// with a model (an agent's run through the exec adapter is reported the same way).
const GEN_AI_OPERATION: &str = "chat";

/// The event the GenAI semantic conventions name for an evaluation's result.
pub const GEN_AI_EVALUATION_EVENT: &str = "gen_ai.evaluation.result";

/// Explanations longer than this (bytes) are cut: the event says why in a line, the
/// diagnostics attribute holds the detail.
const EXPLANATION_MAX_BYTES: usize = 512;

/// `gen_ai.provider.name` for a provider section: the conventions' well-known values
/// where the section is one of theirs, the section's own name otherwise.
fn gen_ai_provider(section: &str) -> &str {
    match section {
        "gemini" | "google" => "gcp.gemini",
        "vertex" => "gcp.vertex_ai",
        "bedrock" => "aws.bedrock",
        "azure" => "azure.ai.openai",
        "mistral" => "mistral_ai",
        other => other,
    }
}

/// One `gen_ai.evaluation.result` event for the case's score (named `score`, labelled
/// `pass` or `fail` when the case has a verdict, explained by what did not hold) and one for
/// each metric; a case that errored has one event, with `error.type`, and no value.
fn evaluation_events(c: &CaseResult, at: u64) -> Vec<span::Event> {
    let event = |attributes: Vec<KeyValue>| span::Event {
        time_unix_nano: at,
        name: GEN_AI_EVALUATION_EVENT.into(),
        attributes,
        dropped_attributes_count: 0,
    };
    if let Some(err) = &c.error {
        let kind = serde_json::to_value(err.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        return vec![event(vec![
            text("gen_ai.evaluation.name", "score"),
            text("error.type", &kind),
            text(
                "gen_ai.evaluation.explanation",
                cut_at(&err.message, EXPLANATION_MAX_BYTES).0,
            ),
        ])];
    }
    let mut events = Vec::new();
    let mut a = vec![text("gen_ai.evaluation.name", "score")];
    if let Some(s) = c.score {
        a.push(number("gen_ai.evaluation.score.value", s));
    }
    if let Some(p) = c.passed {
        a.push(text(
            "gen_ai.evaluation.score.label",
            if p { "pass" } else { "fail" },
        ));
    }
    let explanation = explanation(c);
    if !explanation.is_empty() {
        let (cut, _) = cut_at(&explanation, EXPLANATION_MAX_BYTES);
        a.push(text("gen_ai.evaluation.explanation", cut));
    }
    events.push(event(a));
    for (m, v) in &c.metrics {
        if let Some(v) = v {
            events.push(event(vec![
                text("gen_ai.evaluation.name", m),
                number("gen_ai.evaluation.score.value", *v),
            ]));
        }
    }
    events
}

/// What did not hold, as one line: `2 of 5 judged wrong: total missed; date incorrect`, or
/// why the reply was unusable; empty when everything held.
fn explanation(c: &CaseResult) -> String {
    if let Some(why) = &c.reply_error {
        return format!("unusable reply: {why}");
    }
    let wrong: Vec<String> = c
        .diagnostics
        .iter()
        .filter(|d| d.outcome.as_str() != "correct")
        .map(|d| format!("{} {}", d.field, d.outcome.as_str()))
        .collect();
    if wrong.is_empty() {
        return String::new();
    }
    format!(
        "{} of {} judged wrong: {}",
        wrong.len(),
        c.diagnostics.len(),
        wrong.join("; ")
    )
}

fn experiment_span(
    run: &RunResult,
    e: &ExperimentResult,
    timing: &Timing,
    trace: &[u8],
    id: &[u8],
) -> Span {
    let info = &run.run;
    let c = &e.contender;
    let mut a = vec![
        text("evals.run.id", &info.id),
        text("evals.suite", &info.suite),
        text("evals.command", info.command.as_str()),
        text("evals.mode", &info.mode.to_string()),
        text("evals.status", info.status.as_str()),
        text("evals.contender", &c.id),
        text("evals.provider", &c.provider),
        text("gen_ai.request.model", &c.model),
        text("gen_ai.provider.name", gen_ai_provider(&c.provider)),
        text("evals.dataset", &e.dataset),
        int("evals.cases", e.cases_total as i64),
        int("evals.errors", e.errors as i64),
        int("evals.failed", e.failed as i64),
        number("evals.time_s", e.time_s),
    ];
    if let Some(p) = &info.project {
        a.push(text("evals.project", p));
    }
    for (k, v) in [
        ("evals.branch", &info.branch),
        ("evals.commit", &info.commit),
    ] {
        if let Some(v) = v {
            a.push(text(k, v));
        }
    }
    let settings = serde_json::json!({
        "effort": c.effort,
        "temperature": c.temperature,
        "max_tokens": c.max_tokens,
        "parallelism": info.settings.parallelism,
        "concurrency": info.settings.concurrency,
    });
    a.push(text("evals.settings", &settings.to_string()));
    if let Some(s) = e.score {
        a.push(number("evals.score", s));
    }
    if let Some(w) = e.wscore {
        a.push(number("evals.wscore", w));
    }
    for (m, v) in &e.means {
        if let Some(v) = v {
            a.push(number(&format!("evals.mean.{m}"), *v));
        }
    }
    if let Some(d) = e.cost_usd {
        a.push(number("evals.cost_usd", d));
    }
    if let Some(t) = e.tokens_in {
        a.push(int("gen_ai.usage.input_tokens", t as i64));
    }
    if let Some(t) = e.tokens_out {
        a.push(int("gen_ai.usage.output_tokens", t as i64));
    }
    let end = timing.end.max(timing.start);
    Span {
        trace_id: trace.to_vec(),
        span_id: id.to_vec(),
        name: scrubbed(&format!("experiment {} on {}", c.id, e.dataset)),
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: timing.start,
        end_time_unix_nano: end,
        attributes: a,
        status: (e.errors > 0).then(|| Status {
            code: status::StatusCode::Error as i32,
            message: crate::text::plural(e.errors, "case errored", "cases errored"),
        }),
        ..Default::default()
    }
}

/// The request holding `spans`, under the `evals` service.
fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    text("service.name", "evals"),
                    text("service.version", env!("CARGO_PKG_VERSION")),
                ],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "llm-evals".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// Random bytes for a trace (16) or span (8) id, from the OS's generator via a v4 UUID.
fn random_id<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..N]);
    out
}

/// `s` cut to at most `max` bytes at a character boundary, and whether it was cut.
fn cut_at(s: &str, max: usize) -> (&str, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], true)
}

fn scrubbed(s: &str) -> String {
    crate::secrets::scrub(s).into_owned()
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(scrubbed(value)))
}

fn number(key: &str, value: f64) -> KeyValue {
    kv(key, any_value::Value::DoubleValue(value))
}

fn int(key: &str, value: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(value))
}

fn flag(key: &str, value: bool) -> KeyValue {
    kv(key, any_value::Value::BoolValue(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_are_cut_at_a_character_boundary() {
        let s = "é".repeat(3000);
        let (cut, was) = cut_at(&s, DIAGNOSTICS_MAX_BYTES);
        assert!(was);
        assert_eq!(cut.len(), DIAGNOSTICS_MAX_BYTES);
        assert_eq!(cut_at("short", 10), ("short", false));
    }

    #[test]
    fn ids_are_random_and_never_zero() {
        let (a, b) = (random_id::<16>(), random_id::<16>());
        assert_ne!(a, b);
        assert_ne!(random_id::<8>(), [0u8; 8]);
    }
}
