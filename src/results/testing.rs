//! Test fixtures of the result model: a case, a contender, an experiment, a run, each with
//! the few values a test varies as arguments. The history, gate and report tests build on
//! them.

use super::{
    CaseError, CaseErrorKind, CaseResult, Command, ContenderInfo, ExperimentResult, Latency,
    RunInfo, RunResult, RunStatus, Settings, Usage,
};
use crate::cassette::Mode;

pub(crate) fn case(id: &str, score: Option<f64>, passed: Option<bool>) -> CaseResult {
    CaseResult {
        case: id.into(),
        variant: String::new(),
        fingerprint: format!("fp-{id}"),
        score,
        metrics: [("accuracy".to_string(), score)].into_iter().collect(),
        passed,
        failed_thresholds: vec![],
        truncated: false,
        error: None,
        reply_error: None,
        output: score.map(|s| serde_json::json!({ "answer": format!("{s}") })),
        raw: None,
        diagnostics: vec![],
        usage: Usage::default(),
        latency_s: None,
        duration_s: 0.1,
        tags: vec![],
        weight: 1.0,
        repeats: vec![],
        judge_usage: Default::default(),
        input: None,
        expected: None,
        trajectory: vec![],
        tool_calls: None,
        warnings: vec![],
        components: None,
    }
}

pub(crate) fn contender() -> ContenderInfo {
    ContenderInfo {
        id: "fake/echo".into(),
        provider: "fake".into(),
        model: "echo".into(),
        effort: None,
        temperature: Some("0".into()),
        max_tokens: None,
    }
}

pub(crate) fn experiment(cases: Vec<CaseResult>) -> ExperimentResult {
    let scored: Vec<f64> = cases.iter().filter_map(|c| c.score).collect();
    let score = (!scored.is_empty()).then(|| scored.iter().sum::<f64>() / scored.len() as f64);
    ExperimentResult {
        contender: contender(),
        dataset: "tax".into(),
        means: [("accuracy".to_string(), score)].into_iter().collect(),
        score,
        cases_total: cases.len(),
        errors: cases.iter().filter(|c| c.error.is_some()).count(),
        failed: cases.iter().filter(|c| c.passed == Some(false)).count(),
        truncated: 0,
        cost_usd: None,
        billed_usd: None,
        tokens_in: None,
        tokens_out: None,
        latency: Latency::default(),
        time_s: 1.0,
        wscore: None,
        repeat: None,
        cases,
        judge_cost_usd: None,
    }
}

pub(crate) fn run(id: &str, branch: &str, started_at: &str, cases: Vec<CaseResult>) -> RunResult {
    RunResult {
        run: RunInfo {
            id: id.into(),
            suite: "tax-intake".into(),
            description: None,
            project: None,
            suite_fingerprint: "suite-fp".into(),
            branch: Some(branch.into()),
            commit: Some("abc1234".into()),
            command: Command::Check,
            mode: Mode::Replay,
            argv: vec!["evals".into(), "check".into()],
            started_at: started_at.parse().expect("a time"),
            finished_at: Some(started_at.parse().expect("a time")),
            status: RunStatus::Completed,
            settings: Settings::default(),
            metrics: vec![crate::results::MetricDef {
                name: "accuracy".into(),
                description: "fields right".into(),
                primary: true,
                higher_is_better: true,
            }],
            weights: vec![],
            refused: vec![],
        },
        experiments: vec![experiment(cases)],
    }
}

/// A case error with the kind its text implies, as an old snapshot reads back
/// ([`CaseErrorKind::of_message`]): the tests written when errors were text keep meaning
/// what they meant.
pub(crate) fn error(message: impl Into<String>) -> Option<CaseError> {
    let message = message.into();
    Some(CaseError::new(CaseErrorKind::of_message(&message), message))
}
