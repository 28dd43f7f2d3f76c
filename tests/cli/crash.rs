//! A case whose code panics, through the library: a `Provider` and a `Scorer` of the user's
//! own that panic on one case. The case is an error of kind `crashed` carrying the panic's
//! message (scrubbed), counted in `errors`, in every report; the run still holds every
//! planned case, and the gate fails it (rule 3 against a baseline, and errors alone without
//! one).

use std::path::Path;
use std::sync::Arc;

use llm_evals::cassette::CallError;
use llm_evals::gate::{CheckPlan, MissingBaseline, Rules};
use llm_evals::provider::{ChatRequest, Completion, Provider, Registry};
use llm_evals::report::{Format, Terminal, Totals, render};
use llm_evals::results::BaselineInfo;
use llm_evals::results::{CaseErrorKind, MetricDef, Reply, RunResult, RunStatus, Score};
use llm_evals::runner::{RunOptions, evaluate};
use llm_evals::score::{Scorer, ScorerChoice};
use llm_evals::suite::{Case, Contender, Suite};

use crate::harness::Project;

/// A value the panic messages carry, registered with the scrubber: it must never reach a
/// case's error or a report.
const SECRET: &str = "crash-test-secret-7f3a9c2e41";

/// The case both the provider and the scorer trip on.
const DOOMED: &str = "clear/001";

/// The toy suite with one in-process contender of kind `echoing` (below).
fn project() -> Project {
    let p = Project::toy();
    let config = p.read("evals/.llm-evals.config.yml");
    let config = config
        .split("\nfake:")
        .next()
        .expect("the toy config has a fake section")
        .to_string()
        + "\nmine:\n  kind: echoing\n  models: [m]\n";
    p.file("evals/.llm-evals.config.yml", &config)
}

/// Answers each case with its input (the toy inputs carry their answers), and panics on
/// the doomed case when `panics` says so.
struct Echoing {
    panics: bool,
}

impl Provider for Echoing {
    fn answer(
        &self,
        _contender: &Contender,
        case: &Case,
        req: &ChatRequest,
    ) -> Result<Completion, CallError> {
        if self.panics && case.dataset == "animals" && case.id == DOOMED {
            panic!("provider blew up holding {SECRET}");
        }
        Ok(Completion {
            text: req.user.clone(),
            ..Completion::default()
        })
    }
}

/// Scores every reply 1, and panics on the doomed case.
struct Panicky;

impl Scorer for Panicky {
    fn metrics(&self) -> Vec<MetricDef> {
        vec![MetricDef {
            name: "field_accuracy".into(),
            description: "always 1".into(),
            primary: true,
            higher_is_better: true,
        }]
    }

    fn score(&self, case: &Case, _reply: &Reply) -> Score {
        if case.dataset == "animals" && case.id == DOOMED {
            panic!("{}", format!("scorer blew up holding {SECRET}"));
        }
        Score {
            value: 1.0,
            metrics: [("field_accuracy".to_string(), Some(1.0))].into(),
            diagnostics: vec![],
            passed: None,
        }
    }

    fn verify(&self, _case: &Case) -> Vec<String> {
        Vec::new()
    }

    fn summary(&self, _case: &Case) -> String {
        "always 1".into()
    }
}

/// The terminal report with each case's line (where a case's error shows).
fn terminal() -> Terminal {
    Terminal {
        color: false,
        breakdown: true,
        totals: Totals::Overall,
        width: None,
        explain: false,
    }
}

fn run(dir: &Path, provider_panics: bool, scorer: ScorerChoice) -> RunResult {
    llm_evals::secrets::register([SECRET]);
    let suite = Suite::load(&dir.join("evals/.llm-evals.config.yml"), dir).expect("suite");
    let mut providers = Registry::default();
    providers.register(
        "echoing",
        Echoing {
            panics: provider_panics,
        },
    );
    evaluate(
        &suite,
        RunOptions::default()
            .providers(providers)
            .scorer(scorer)
            .branch("feature"),
    )
    .expect("the run")
}

/// What a crashed case must look like in `run`: the run completed with all 8 planned
/// cases, the doomed one an error of kind crashed naming the panic's message (scrubbed),
/// every report showing it, and the gate failing the run with and without a baseline.
fn assert_crashed(run: &RunResult, baseline: &RunResult, said: &str) {
    assert_eq!(run.run.status, RunStatus::Completed);
    let planned: usize = run.experiments.iter().map(|e| e.cases_total).sum();
    assert_eq!(planned, 8, "every planned case is in the run");
    assert_eq!(run.total_errors(), 1);
    let animals = run
        .experiments
        .iter()
        .find(|e| e.dataset == "animals")
        .expect("animals");
    assert_eq!(animals.cases.len(), 4);
    let doomed = animals
        .cases
        .iter()
        .find(|c| c.case == DOOMED)
        .expect("the doomed case is in the run");
    let error = doomed.error.as_ref().expect("an error");
    assert_eq!(error.kind, CaseErrorKind::Crashed);
    assert!(
        error.message.contains(said) && error.message.contains("[REDACTED]"),
        "{}",
        error.message
    );
    assert!(!error.message.contains(SECRET), "{}", error.message);
    assert_eq!(doomed.score, None);

    // Rule (3) against a baseline where the case passed.
    let info = BaselineInfo {
        id: baseline.run.id.clone(),
        branch: Some("main".into()),
        commit: None,
        started_at: baseline.run.started_at,
        reference: "main".into(),
    };
    let compared = llm_evals::gate::compare(Some((baseline, info)), run, 0.5);
    assert!(!compared.verdict.passed, "{compared:?}");
    for format in [
        Format::Terminal,
        Format::Json,
        Format::Markdown,
        Format::Junit,
        Format::Html,
        Format::Diff,
    ] {
        let text = render(format, terminal(), run, Some(&compared));
        assert!(text.contains(said), "{format:?} shows the crash:\n{text}");
        assert!(!text.contains(SECRET), "{format:?} leaks the secret");
    }

    // And without one: errors alone fail the check.
    let plan = CheckPlan::check(None, Rules::tolerance(0.02), MissingBaseline::Fail);
    let history = tempfile::tempdir().expect("temp dir");
    let store = llm_evals::history::SqliteStore::open(&history.path().join("h.sqlite3"))
        .expect("open the history");
    let checked = llm_evals::gate::check(run, &plan, &store);
    assert!(!checked.passed());
    assert!(
        checked.refused.is_none(),
        "refused for no baseline, not failed"
    );
}

#[test]
fn a_panicking_provider_was_a_dropped_case_and_a_passing_gate() {
    let p = project();
    let baseline = run(p.path(), false, ScorerChoice::Replace(Arc::new(Panicky0)));
    assert_eq!(baseline.total_errors(), 0);
    let crashed = run(p.path(), true, ScorerChoice::Replace(Arc::new(Panicky0)));
    assert_crashed(&crashed, &baseline, "provider blew up holding");
}

#[test]
fn a_panicking_scorer_was_a_dropped_case_and_a_passing_gate() {
    let p = project();
    let baseline = run(p.path(), false, ScorerChoice::Replace(Arc::new(Panicky0)));
    let crashed = run(p.path(), false, ScorerChoice::Replace(Arc::new(Panicky)));
    assert_crashed(&crashed, &baseline, "scorer blew up holding");
}

/// [`Panicky`] that never panics: the baseline's scorer.
struct Panicky0;

impl Scorer for Panicky0 {
    fn metrics(&self) -> Vec<MetricDef> {
        Panicky.metrics()
    }

    fn score(&self, _case: &Case, _reply: &Reply) -> Score {
        Score {
            value: 1.0,
            metrics: [("field_accuracy".to_string(), Some(1.0))].into(),
            diagnostics: vec![],
            passed: None,
        }
    }

    fn verify(&self, _case: &Case) -> Vec<String> {
        Vec::new()
    }

    fn summary(&self, _case: &Case) -> String {
        "always 1".into()
    }
}
